/* ag_predict(type =) (pg_api_predict.h): probabilities and classes from a model's outputs, read
 * as ag_fit's loss reads them (softmax / sigmoid / as they are; arg-max / the threshold), so R
 * and Python turn the same outputs into the same bits. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

static const char *const TYPES[PG_PREDICT_COUNT] = {"response", "prob", "class"};
static const char *const KINDS[] = {"none", "argmax", "probs", "logits"};
#define N_KINDS ((int)(sizeof KINDS / sizeof KINDS[0]))

int pg_predict_type_parse(const char *fn, const char *type, const char *shown, int *out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_predict_type_parse(): out is NULL");
    if (!fn) fn = "ag_predict";
    for (int i = 0; type && i < PG_PREDICT_COUNT; i++)
        if (!strcmp(type, TYPES[i])) return *out = i, 0;
    char q[80];
    if (type) pj_qname(type, q, sizeof q);
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: type must be \"response\", \"prob\" or \"class\", got %s", fn,
                   type ? q : (shown ? shown : "(none)"));
}

const char *pg_fit_classify_name(int classify)
{
    return classify >= 0 && classify < N_KINDS ? KINDS[classify] : NULL;
}

int pg_fit_classify_parse(const char *name)
{
    for (int i = 0; name && i < N_KINDS; i++)
        if (!strcmp(name, KINDS[i])) return i;
    return -1;
}

int pg_predict_classify(const char *fn, const char *loss, int *classify)
{
    if (!classify) return pg_fail(PG_STATUS_ERR_ARG, "pg_predict_classify(): classify is NULL");
    if (!fn) fn = "ag_predict";
    *classify = PG_FIT_CLASSIFY_NONE;
    if (!loss) return 0;
    for (int i = 0; i < PG_FIT_LOSS_COUNT; i++)
        if (!strcmp(loss, pg_fit_loss_name(i))) {
            int per;
            return pg_fit_loss_rules(i, 1, classify, &per);
        }
    char q[80];
    pj_qname(loss, q, sizeof q);
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: unknown loss %s; use one of ag_fit's loss names (\"cross_entropy\", "
                   "\"bce_with_logits\", \"binary_cross_entropy\", \"mse\", ...)",
                   fn, q);
}

/* why type needs a classifier's loss, and how to say it */
static int need_loss(const char *fn, int type, const char *loss)
{
    static const char *HOW =
        "give loss = \"cross_entropy\" (softmax, arg-max), \"bce_with_logits\" (sigmoid, "
        "threshold 0) or \"binary_cross_entropy\" (probabilities, threshold 0.5) to say how its "
        "outputs are read";
    char q[80];
    if (loss) {
        pj_qname(loss, q, sizeof q);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: type = \"%s\" needs a classifier, but the model was trained with "
                       "loss %s; use type = \"response\", or %s",
                       fn, TYPES[type], q, HOW);
    }
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: type = \"%s\" needs to know how the model's outputs are read, and the "
                   "model was not trained by ag_fit with a built-in loss (nor loaded from a file "
                   "that says it); %s",
                   fn, TYPES[type], HOW);
}

static double sigmoid(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* softmax of one column (max subtracted: no overflow); NaN anywhere gives NaN throughout */
static void softmax_col(const double *x, int64_t rows, double *r)
{
    double m = -INFINITY, s = 0;
    int nan = 0;
    for (int64_t i = 0; i < rows; i++) {
        if (isnan(x[i])) nan = 1;
        else if (x[i] > m) m = x[i];
    }
    for (int64_t i = 0; i < rows; i++) s += r[i] = exp(x[i] - m);
    for (int64_t i = 0; i < rows; i++) r[i] = nan ? NAN : r[i] / s;
}

int pg_predict_transform(const char *fn, const double *out, int64_t rows, int64_t n, int type,
                         int classify, const char *loss, int64_t n_classes, double *res,
                         int64_t *res_rows)
{
    if (!fn) fn = "ag_predict";
    if (rows < 1 || n < 0 || (n && (!out || !res)) || !res_rows)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: internal: bad outputs [%lldx%lld]", fn,
                       (long long)rows, (long long)n);
    if (type < 0 || type >= PG_PREDICT_COUNT || classify < 0 || classify >= N_KINDS)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: internal: type %d or classify %d out of range", fn,
                       type, classify);
    *res_rows = rows;
    if (type == PG_PREDICT_RESPONSE) {
        if (n) memcpy(res, out, sizeof(double) * (size_t)(rows * n));
        return 0;
    }
    if (classify == PG_FIT_CLASSIFY_NONE) return need_loss(fn, type, loss);
    const int binary = classify != PG_FIT_CLASSIFY_ARGMAX;
    if (n_classes >= 0 && (binary ? rows != 1 || n_classes != 2 : n_classes != rows))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: the model has %lld output%s but %lld class label%s (a %s model needs "
                       "%s); set the labels to match or remove them",
                       fn, (long long)rows, rows == 1 ? "" : "s", (long long)n_classes,
                       n_classes == 1 ? "" : "s", binary ? "binary" : "cross_entropy",
                       binary ? "1 output and 2 labels" : "one label per output");
    const double thr = classify == PG_FIT_CLASSIFY_LOGITS ? 0.0 : 0.5;
    if (type == PG_PREDICT_PROB) {
        for (int64_t j = 0; j < n; j++) {
            const double *x = out + j * rows;
            double *r = res + j * rows;
            if (classify == PG_FIT_CLASSIFY_ARGMAX) softmax_col(x, rows, r);
            else
                for (int64_t i = 0; i < rows; i++)
                    r[i] = classify == PG_FIT_CLASSIFY_LOGITS ? sigmoid(x[i]) : x[i];
        }
        return 0;
    }
    if (binary) { /* the side of the threshold, per element (keras' binary_accuracy) */
        for (int64_t i = 0; i < rows * n; i++)
            res[i] = isnan(out[i]) ? NAN : out[i] > thr ? 1.0 : 0.0;
        return 0;
    }
    *res_rows = 1;
    for (int64_t j = 0; j < n; j++) { /* the first maximum, as ag_accuracy counts it */
        const double *x = out + j * rows;
        int64_t best = 0;
        int nan = 0;
        for (int64_t i = 0; i < rows; i++) {
            if (isnan(x[i])) nan = 1;
            else if (x[i] > x[best] || isnan(x[best])) best = i;
        }
        res[j] = nan ? NAN : (double)best;
    }
    return 0;
}

int pg_predict_batch_rows(const char *fn, int64_t rows0, int64_t rows, int64_t batch_size)
{
    if (rows == rows0) return 0;
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "%s: the model returned %lld rows for the first batch but %lld for a later one "
                   "(batch_size %lld); its outputs must have the same rows for every batch",
                   fn ? fn : "ag_predict", (long long)rows0, (long long)rows,
                   (long long)batch_size);
}

int pg_predict_batch_cols(const char *fn, int64_t rows, int64_t cols, int64_t n, int64_t batch_size)
{
    if (cols == n) return 0;
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "%s: the model returned [%lldx%lld] for a batch of %lld sample%s (batch_size "
                   "%lld); it must return one column per sample ([outputs x %lld]); reshape "
                   "per-step or per-token outputs to one column per sample first",
                   fn ? fn : "ag_predict", (long long)rows, (long long)cols, (long long)n,
                   n == 1 ? "" : "s", (long long)batch_size, (long long)n);
}
