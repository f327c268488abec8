/* ag_fit(metrics =) and ag_evaluate's metrics (pg_api_metrics.h): classification metrics from a
 * confusion matrix, ROC AUC from average ranks, regression metrics per output, as scikit-learn
 * 1.9 defines them, once for R and Python. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

static const char *NAMES[] = {"",
                              "accuracy",
                              "binary_accuracy",
                              "auc",
                              "precision",
                              "precision_macro",
                              "precision_micro",
                              "recall",
                              "recall_macro",
                              "recall_micro",
                              "f1",
                              "f1_macro",
                              "f1_micro",
                              "confusion_matrix",
                              "mae",
                              "mse",
                              "rmse",
                              "r2"};
#define NMETRIC ((int)(sizeof NAMES / sizeof NAMES[0]))

const char *pg_metric_name(int code) { return code > 0 && code < NMETRIC ? NAMES[code] : ""; }

int pg_metric_regression(int code) { return code >= PG_METRIC_MAE && code < NMETRIC; }

int pg_metric_mode(const char *name)
{
    if (!name) return 0;
    if (!strncmp(name, "val_", 4)) name += 4;
    for (int c = 1; c < NMETRIC; c++)
        if (c != PG_METRIC_CONFUSION_MATRIX && !strcmp(name, NAMES[c]))
            return c == PG_METRIC_MAE || c == PG_METRIC_MSE || c == PG_METRIC_RMSE ? -1 : 1;
    return 0;
}

int pg_metric_code(const char *fn, const char *name, int classify, int in_fit)
{
    if (!fn) fn = "ag_evaluate";
    if (!name) return -pg_fail(PG_STATUS_ERR_ARG, "%s: metrics holds a missing name", fn);
    int code = 0;
    for (int c = 1; c < NMETRIC && !code; c++)
        if (!strcmp(name, NAMES[c])) code = c;
    if (!code) {
        char list[400] = "";
        for (int c = 1; c < NMETRIC; c++) {
            if (in_fit && c == PG_METRIC_CONFUSION_MATRIX) continue;
            strncat(list, *list ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, NAMES[c], sizeof list - strlen(list) - 1);
        }
        return -pg_fail(PG_STATUS_ERR_VALUE, "%s: metrics has an unknown name \"%s\"; valid: %s",
                        fn, name, list);
    }
    if (in_fit && code == PG_METRIC_CONFUSION_MATRIX)
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "%s: metrics: confusion_matrix is not a History column (a matrix per "
                        "epoch); ag_evaluate(model, x, y, metrics = \"confusion_matrix\") "
                        "returns it",
                        fn);
    if (classify < PG_FIT_CLASSIFY_NONE || classify > PG_FIT_CLASSIFY_LOGITS)
        return -pg_fail(PG_STATUS_ERR_VALUE, "%s: classify code %d is out of range", fn, classify);
    if (classify == PG_FIT_CLASSIFY_NONE && !pg_metric_regression(code))
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "%s: metrics: \"%s\" needs a classification loss (cross_entropy, "
                        "binary_cross_entropy, bce_with_logits); a regression takes mae, mse, "
                        "rmse, r2",
                        fn, name);
    if (classify == PG_FIT_CLASSIFY_ARGMAX && code == PG_METRIC_BINARY_ACCURACY)
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "%s: metrics: \"binary_accuracy\" needs a binary model "
                        "(binary_cross_entropy or bce_with_logits); use \"accuracy\" for "
                        "cross_entropy",
                        fn);
    return code;
}

int64_t pg_metric_nclass(int classify, int64_t k)
{
    if (classify == PG_FIT_CLASSIFY_ARGMAX) return k;
    if (classify == PG_FIT_CLASSIFY_PROBS || classify == PG_FIT_CLASSIFY_LOGITS) return 2;
    return -1;
}

static int64_t first_max(const double *c, int64_t k)
{
    int64_t b = 0;
    for (int64_t i = 1; i < k; i++)
        if (c[i] > c[b]) b = i;
    return b;
}

/* true and predicted classes of each sample (binary: k == 1 required) */
static int classes(const char *fn, int classify, double thr, const double *out, int64_t k,
                   int64_t n, const double *y, int64_t yrows, int64_t *t, int64_t *p)
{
    if (classify == PG_FIT_CLASSIFY_ARGMAX) {
        if (yrows != 1 && yrows != k)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: the model's output is [%lldx%lld] but y has %lld rows: give "
                           "0-based class ids [1, n] or a one-hot [%lld, n] matrix",
                           fn, (long long)k, (long long)n, (long long)yrows, (long long)k);
        for (int64_t j = 0; j < n; j++) {
            p[j] = first_max(out + j * k, k);
            if (yrows == k && k > 1) {
                t[j] = first_max(y + j * k, k);
                continue;
            }
            const double v = y[j];
            if (!(v >= 0 && v < (double)k) || v != floor(v)) {
                char nb[40];
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: y must be 0-based class ids in [0, %lld), sample %lld has %s",
                               fn, (long long)k, (long long)j + 1, pg_fmt_num(nb, sizeof nb, v));
            }
            t[j] = (int64_t)v;
        }
        return 0;
    }
    if (k != 1 || yrows != 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: this metric needs a 1-output binary model and 0/1 targets [1, n]; the "
                       "output is [%lldx%lld], y has %lld rows",
                       fn, (long long)k, (long long)n, (long long)yrows);
    for (int64_t j = 0; j < n; j++) {
        if (!(y[j] >= 0 && y[j] <= 1))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: binary targets must be in [0, 1] (0/1 labels), got %s at column "
                           "%lld",
                           fn, pg_num(y[j]), (long long)j + 1);
        t[j] = y[j] > 0.5;
        p[j] = out[j] > thr;
    }
    return 0;
}

static double thr_of(int classify, double threshold)
{
    if (!isnan(threshold)) return threshold;
    return classify == PG_FIT_CLASSIFY_LOGITS ? 0.0 : 0.5;
}

int pg_confusion_matrix(const char *fn, int classify, double threshold, const double *out,
                        int64_t k, int64_t n, const double *y, int64_t yrows, int64_t *counts)
{
    if (!fn) fn = "ag_evaluate";
    const int64_t c = pg_metric_nclass(classify, k);
    if (c < 1) return pg_fail(PG_STATUS_ERR_VALUE, "%s: confusion_matrix needs a classifier", fn);
    if (!counts || n < 0 || (n > 0 && (!out || !y)))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL output, targets or counts", fn);
    int64_t *t = malloc((size_t)(n ? n : 1) * 2 * sizeof *t);
    if (!t)
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for %lld samples", fn, (long long)n);
    int rc = classes(fn, classify, thr_of(classify, threshold), out, k, n, y, yrows, t, t + n);
    if (!rc) {
        memset(counts, 0, (size_t)(c * c) * sizeof *counts);
        for (int64_t j = 0; j < n; j++) counts[t[j] + c * t[n + j]]++;
    }
    free(t);
    return rc;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; } /* zero_division=0 */

/* precision (0), recall (1) or f1 (2) from the confusion matrix cm [c, c]; avg 0 the positive
 * class 1, 1 macro over the classes seen, 2 micro */
static double prf(const int64_t *cm, int64_t c, int what, int avg)
{
    double tp = 0, fp = 0, fn = 0, sum = 0;
    int64_t seen = 0;
    for (int64_t i = 0; i < c; i++) {
        double rows = 0, cols = 0;
        for (int64_t j = 0; j < c; j++)
            rows += (double)cm[i + c * j], cols += (double)cm[j + c * i];
        const double ti = (double)cm[i + c * i], fpi = cols - ti, fni = rows - ti;
        if (avg == 0 && i != 1) continue;
        if (avg == 1 && rows + cols == 0) continue; /* a class in neither y nor the predictions */
        tp += ti, fp += fpi, fn += fni;
        const double v = what == 0 ? ratio(ti, ti + fpi)
            : what == 1            ? ratio(ti, ti + fni)
                                   : ratio(2 * ti, 2 * ti + fpi + fni);
        sum += v, seen++;
    }
    if (avg == 1) return seen ? sum / (double)seen : 0.0;
    return what == 0 ? ratio(tp, tp + fp)
        : what == 1  ? ratio(tp, tp + fn)
                     : ratio(2 * tp, 2 * tp + fp + fn);
}

typedef struct {
    double s;
    int pos;
} scored;

static int by_score(const void *a, const void *b)
{
    const double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x > y) - (x < y);
}

/* ROC AUC of scores s against 0/1 positives (the Mann-Whitney statistic with average ranks for
 * ties, what roc_auc_score's trapezoids give); NaN without both classes or with a NaN score */
static double auc_binary(scored *v, int64_t n)
{
    double np = 0, rank_sum = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i].s)) return NAN;
        np += v[i].pos;
    }
    const double nn = (double)n - np;
    if (np == 0 || nn == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, by_score);
    for (int64_t i = 0; i < n;) {
        int64_t j = i, pos = 0;
        while (j < n && v[j].s == v[i].s) pos += v[j++].pos;
        rank_sum += (double)pos * ((double)(i + 1 + j) / 2.0); /* ranks i+1 .. j averaged */
        i = j;
    }
    return (rank_sum - np * (np + 1) / 2.0) / (np * nn);
}

static int auc(const char *fn, int classify, const double *out, int64_t k, int64_t n,
               const double *y, int64_t yrows, double *value)
{
    scored *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    int64_t *t = malloc((size_t)(n ? n : 1) * 2 * sizeof *t);
    int rc = v && t ? 0 : pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for auc", fn);
    if (!rc) rc = classes(fn, classify, 0.0, out, k, n, y, yrows, t, t + n);
    if (!rc && classify != PG_FIT_CLASSIFY_ARGMAX) {
        for (int64_t j = 0; j < n; j++) v[j].s = out[j], v[j].pos = (int)t[j];
        *value = auc_binary(v, n);
    } else if (!rc) { /* one-vs-rest macro over the softmax of the outputs (sklearn's 'ovr') */
        double sum = 0;
        int64_t used = 0;
        for (int64_t c = 0; c < k; c++) {
            for (int64_t j = 0; j < n; j++) {
                const double *col = out + j * k, m = col[first_max(col, k)];
                double z = 0;
                for (int64_t i = 0; i < k; i++) z += exp(col[i] - m);
                v[j].s = exp(col[c] - m) / z;
                v[j].pos = t[j] == c;
            }
            const double a = auc_binary(v, n);
            if (!isnan(a)) sum += a, used++;
        }
        *value = used ? sum / (double)used : NAN;
    }
    free(v);
    free(t);
    return rc;
}

/* mae (0), mse (1), rmse (2), r2 (3), each output's then their uniform mean */
static double regression(int what, const double *out, int64_t k, int64_t n, const double *y)
{
    double total = 0;
    for (int64_t i = 0; i < k; i++) {
        double ae = 0, se = 0, mean = 0, ss = 0;
        for (int64_t j = 0; j < n; j++) {
            const double d = out[j * k + i] - y[j * k + i];
            ae += fabs(d), se += d * d, mean += y[j * k + i];
        }
        mean /= (double)n;
        for (int64_t j = 0; j < n; j++) ss += (y[j * k + i] - mean) * (y[j * k + i] - mean);
        const double v = what == 0 ? ae / (double)n
            : what == 1            ? se / (double)n
            : what == 2            ? sqrt(se / (double)n)
            : ss > 0               ? 1.0 - se / ss
            : se == 0              ? 1.0
                                   : 0.0;
        total += v;
    }
    return total / (double)k;
}

int pg_metric_value(const char *fn, int code, int classify, double threshold, const double *out,
                    int64_t k, int64_t n, const double *y, int64_t yrows, double *value)
{
    if (!fn) fn = "ag_evaluate";
    if (!value || k < 1 || n < 0 || (n > 0 && (!out || !y)))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL output, targets or value", fn);
    if (code < 1 || code >= NMETRIC || code == PG_METRIC_CONFUSION_MATRIX)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: metric code %d has no single value", fn, code);
    if (n == 0) return pg_fail(PG_STATUS_ERR_SHAPE, "%s: metrics need at least one sample", fn);
    if (!isnan(threshold) && !isfinite(threshold))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: threshold must be a finite number", fn);
    if (pg_metric_regression(code)) {
        if (yrows != k)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: metrics: %s compares outputs [%lldx%lld] with targets of the same "
                           "shape, but y has %lld rows",
                           fn, NAMES[code], (long long)k, (long long)n, (long long)yrows);
        *value = regression(code - PG_METRIC_MAE, out, k, n, y);
        return 0;
    }
    const double thr = thr_of(classify, threshold);
    if (code == PG_METRIC_AUC) return auc(fn, classify, out, k, n, y, yrows, value);
    if (classify != PG_FIT_CLASSIFY_ARGMAX &&
        (code == PG_METRIC_ACCURACY || code == PG_METRIC_BINARY_ACCURACY)) {
        int64_t hit = 0, nd = 0; /* keras' binary_accuracy, multi-label elements included */
        int rc = pg_binary_count(fn, out, k, n, y, yrows, thr, &hit, &nd);
        if (rc) return rc;
        *value = (double)hit / (double)nd;
        return 0;
    }
    const int64_t c = pg_metric_nclass(classify, k);
    int64_t *cm = calloc((size_t)(c * c), sizeof *cm);
    if (!cm)
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for %lld classes", fn, (long long)c);
    int rc = pg_confusion_matrix(fn, classify, threshold, out, k, n, y, yrows, cm);
    if (!rc && code == PG_METRIC_ACCURACY) {
        double d = 0;
        for (int64_t i = 0; i < c; i++) d += (double)cm[i + c * i];
        *value = d / (double)n;
    } else if (!rc) {
        const int what = (code - PG_METRIC_PRECISION) / 3, kind = (code - PG_METRIC_PRECISION) % 3;
        /* plain names: the positive class on a binary model, macro on a multi-class one */
        const int avg = kind == 0 ? (classify == PG_FIT_CLASSIFY_ARGMAX ? 1 : 0) : kind;
        *value = prf(cm, c, what, avg);
    }
    free(cm);
    return rc;
}

int pg_metric_loss(const char *fn, const char *name, int *loss, int *classify)
{
    if (!fn) fn = "ag_evaluate";
    int pd = 0, rc = pg_fit_loss_parse(name, loss);
    if (!rc) rc = pg_fit_loss_rules(*loss, 1, classify, &pd);
    if (rc && !strncmp(pg_last_error(), "ag_fit: ", 8)) { /* the table's text, fn's name */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", pg_last_error() + 8);
        return pg_fail(rc, "%s: %s", fn, msg);
    }
    return rc;
}

int pg_metric_asked(const char *fn, int has_loss, int has_metrics)
{
    if (has_loss || has_metrics) return 0;
    return pg_fail(PG_STATUS_ERR_ARG, "%s: give loss, metrics or both", fn ? fn : "ag_evaluate");
}

int pg_metric_read(const char *fn, const char *name, int has_threshold, int64_t rows, int64_t n,
                   int64_t yn, int *loss, int *classify)
{
    if (!fn || !loss || !classify) return pg_fail(PG_STATUS_ERR_ARG, "pg_metric_read(): NULL");
    if (yn != n)
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples but y has %lld", fn,
                       (long long)n, (long long)yn);
    if (name) return pg_metric_loss(fn, name, loss, classify);
    *loss = -1; /* no loss: probabilities for one output or a threshold, else arg-max */
    *classify = has_threshold || rows == 1 ? PG_FIT_CLASSIFY_PROBS : PG_FIT_CLASSIFY_ARGMAX;
    return 0;
}

int pg_metric_loss_value(const char *fn, int loss, const double *out, int64_t k, int64_t n,
                         const double *y, int64_t yrows, double *value)
{
    if (!fn) fn = "ag_evaluate";
    if (!value || !out || !y || k < 1 || n < 1 || yrows < 1)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL or empty output, targets or value", fn);
    const int D = PG_DTYPE_F64, alone = loss == PG_FIT_LOSS_MEAN || loss == PG_FIT_LOSS_SUM;
    if (loss == PG_FIT_LOSS_CROSS_ENTROPY && yrows == 1) /* class ids: the metrics' own text */
        for (int64_t j = 0; j < n; j++)
            if (!(y[j] >= 0 && y[j] < (double)k) || y[j] != floor(y[j])) {
                char nb[40];
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: y must be 0-based class ids in [0, %lld), sample %lld has %s",
                               fn, (long long)k, (long long)j + 1, pg_fmt_num(nb, sizeof nb, y[j]));
            }
    pg_tensor *o = pg_tensor_new(D, k, n, out, D, 1, k);
    pg_tensor *t = alone ? NULL : pg_tensor_new(D, yrows, n, y, D, 1, yrows);
    pg_tensor *l = o && (alone || t) ? pg_fit_loss(loss, o, t) : NULL;
    int rc = l ? 0 : pg_last_status() ? pg_last_status() : PG_STATUS_ERR_NOMEM;
    const char *e = pg_last_error(), *colon = e ? strstr(e, ": ") : NULL;
    if (rc && colon && strncmp(e, fn, strlen(fn))) { /* the loss op's text, fn's name */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", colon + 2);
        rc = pg_fail(rc, "%s: %s", fn, msg);
    }
    if (l) *value = ((const double *)pg_tensor_data(l))[0];
    pg_tensor_release(l);
    pg_tensor_release(t);
    pg_tensor_release(o);
    return rc;
}
