/* ag_fit(metrics =)'s epoch store (pg_api_train_metrics.h): each recorded batch's outputs and
 * targets kept as doubles per part, so metrics that are not batch means (AUC, F1, R^2) are
 * computed over the whole epoch by metrics.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

struct pg_fit_keep {
    int *codes;
    int64_t ncode;
    int classify;
    int64_t k, yrows;      /* the output's and the targets' rows (set by the first batch) */
    double *out[2], *y[2]; /* [k, n[part]] and [yrows, n[part]], column-major */
    int64_t n[2], cap[2];
};

pg_fit_keep *pg_fit_keep_new(int64_t n, const int *codes, int classify)
{
    for (int64_t i = 0; i < n; i++)
        if (codes[i] < 1 || codes[i] == PG_METRIC_CONFUSION_MATRIX || !*pg_metric_name(codes[i]))
            return pg_fail_null(PG_STATUS_ERR_VALUE,
                                "ag_fit: metric code %d has no History "
                                "column",
                                codes[i]);
    pg_fit_keep *k = calloc(1, sizeof *k);
    if (k) k->codes = malloc((size_t)(n ? n : 1) * sizeof *k->codes);
    if (!k || !k->codes) {
        free(k);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory for metrics");
    }
    memcpy(k->codes, codes, (size_t)n * sizeof *codes);
    k->ncode = n;
    k->classify = classify;
    return k;
}

void pg_fit_keep_free(pg_fit_keep *k)
{
    if (!k) return;
    for (int p = 0; p < 2; p++) free(k->out[p]), free(k->y[p]);
    free(k->codes);
    free(k);
}

void pg_fit_keep_clear(pg_fit_keep *k)
{
    if (k) k->n[0] = k->n[1] = 0;
}

static double elem(const pg_tensor *t, int64_t i)
{
    return t->dtype == PG_DTYPE_F32 ? (double)((const float *)pg_data(t))[i]
                                    : ((const double *)pg_data(t))[i];
}

int pg_fit_keep_add(pg_fit_keep *k, int val, const pg_tensor *out, const pg_tensor *y,
                    const int64_t *idx, int64_t w)
{
    const int p = val ? 1 : 0;
    if (!y) return pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: metrics need targets y");
    if (out->ne[1] != w)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ag_fit: the model's output is %s for a batch of %lld "
                       "samples",
                       pg_desc(out), (long long)w);
    if (k->n[0] + k->n[1] == 0) k->k = out->ne[0], k->yrows = y->ne[0];
    if (out->ne[0] != k->k)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ag_fit: the model's output changed from %lld to %lld "
                       "rows within an epoch",
                       (long long)k->k, (long long)out->ne[0]);
    if (k->n[p] + w > k->cap[p]) {
        int64_t cap = k->cap[p] ? 2 * k->cap[p] : 256;
        while (cap < k->n[p] + w) cap *= 2;
        double *o = realloc(k->out[p], (size_t)(cap * k->k) * sizeof *o);
        if (o) k->out[p] = o;
        double *t = o ? realloc(k->y[p], (size_t)(cap * k->yrows) * sizeof *t) : NULL;
        if (!o || !t) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory for metrics");
        k->y[p] = t;
        k->cap[p] = cap;
    }
    double *o = k->out[p] + k->n[p] * k->k, *t = k->y[p] + k->n[p] * k->yrows;
    for (int64_t i = 0; i < w * k->k; i++) o[i] = elem(out, i);
    for (int64_t j = 0; j < w; j++)
        for (int64_t r = 0; r < k->yrows; r++) t[j * k->yrows + r] = elem(y, idx[j] * k->yrows + r);
    k->n[p] += w;
    return 0;
}

int pg_fit_keep_values(const pg_fit_keep *k, int val, double *values)
{
    const int p = val ? 1 : 0;
    for (int64_t i = 0; i < k->ncode; i++) {
        values[i] = NAN;
        if (k->n[p] < 1) continue;
        if (pg_metric_value("ag_fit", k->codes[i], k->classify, NAN, k->out[p], k->k, k->n[p],
                            k->y[p], k->yrows, &values[i]))
            return -1;
    }
    return 0;
}

int64_t pg_fit_keep_codes(const pg_fit_keep *k, const int **codes)
{
    *codes = k ? k->codes : NULL;
    return k ? k->ncode : 0;
}

int pg_fit_keep_mask(const pg_fit_keep *k)
{
    int m = 0;
    for (int64_t i = 0; k && i < k->ncode; i++) m |= 1 << k->codes[i];
    return m;
}

/* append to out (at most cap bytes) at *at, counting the whole length */
static void put(char *out, int64_t cap, int64_t *at, const char *fmt, const char *s, double v)
{
    char b[64];
    const int w = s ? snprintf(b, sizeof b, fmt, s) : snprintf(b, sizeof b, fmt, v);
    if (out && *at + w < cap) memcpy(out + *at, b, (size_t)w + 1);
    *at += w;
}

int64_t pg_fit_metrics_format(int64_t ncol, const char *const *names, const double *values,
                              const double *epoch, int64_t n, char *out, int64_t cap)
{
    if (ncol < 0 || n < 0 || (ncol > 0 && (!names || !values || (n > 0 && !epoch))))
        return -pg_fail(PG_STATUS_ERR_ARG, "ag_fit: bad History metric columns");
    int64_t at = 0;
    if (out && cap > 0) out[0] = 0;
    if (ncol == 0) return 0;
    put(out, cap, &at, "%s", "epoch", 0);
    char fs[16], fv[16]; /* each column as wide as its name, at least 8 */
    for (int64_t c = 0; c < ncol; c++) {
        const int w = strlen(names[c]) > 8 ? (int)strlen(names[c]) : 8;
        snprintf(fs, sizeof fs, "  %%%ds", w);
        put(out, cap, &at, fs, names[c], 0);
    }
    for (int64_t i = 0; i < n; i++) {
        put(out, cap, &at, "\n%5.0f", NULL, isfinite(epoch[i]) ? epoch[i] : 0);
        for (int64_t c = 0; c < ncol; c++) {
            const int w = strlen(names[c]) > 8 ? (int)strlen(names[c]) : 8;
            const double v = values[c * n + i];
            snprintf(fs, sizeof fs, "  %%%ds", w);
            snprintf(fv, sizeof fv, "  %%%d.4f", w);
            if (isnan(v)) put(out, cap, &at, fs, "-", 0);
            else put(out, cap, &at, fv, NULL, v);
        }
    }
    return at;
}
