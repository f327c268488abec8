/* Classification's data rules for ag_fit and ag_accuracy, one text for R and Python: the class
 * count against the model's outputs, and binary accuracy (keras' binary_accuracy): each element
 * of the output is a prediction (1 when above the threshold: 0.5 on probabilities, 0 on logits),
 * each target is 1 when above 0.5, and a multi-label output [k, n] counts its k * n elements
 * (keras averages over all of them). */
#include <math.h>
#include <stdio.h>
#include "pg.h"

/* element i of [rows, n] targets is refused; columns from n_main on are validation_data's */
static int target_fail(const char *fn, const char *what, double v, int64_t i, int64_t rows,
                       int64_t n_main)
{
    char b[40];
    const int64_t c = i / rows + 1;
    const int val = c > n_main;
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: %s targets must be in [0, 1] (0/1 labels), got %s at row %lld, column "
                   "%lld%s",
                   fn, what, pg_fmt_num(b, sizeof b, v), (long long)(i % rows + 1),
                   (long long)(val ? c - n_main : c), val ? " of validation_data" : "");
}

int pg_binary_count(const char *fn, const double *out, int64_t rows, int64_t n, const double *y,
                    int64_t yrows, double threshold, int64_t *ncorrect, int64_t *ndata)
{
    const char *F = fn ? fn : "ag_accuracy";
    if (!ncorrect || !ndata || (n > 0 && (!out || !y)))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL output, targets or count", F);
    if (!isfinite(threshold))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: threshold must be a finite number, got %s", F,
                       pg_num(threshold));
    if (rows < 1 || n < 0 || yrows != rows)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: the model's output is [%lldx%lld] but y has %lld rows: give 0/1 "
                       "targets of the output's shape",
                       F, (long long)rows, (long long)n, (long long)yrows);
    int64_t hit = 0;
    for (int64_t i = 0; i < rows * n; i++) {
        if (!(y[i] >= 0 && y[i] <= 1)) return target_fail(F, "binary", y[i], i, rows, n);
        hit += (out[i] > threshold) == (y[i] > 0.5);
    }
    *ncorrect = hit;
    *ndata = rows * n;
    return 0;
}

int pg_fit_binary_targets(const pg_tensor *y, int classify, int64_t n_main)
{
    const char *what =
        classify == PG_FIT_CLASSIFY_LOGITS ? "bce_with_logits" : "binary_cross_entropy";
    const int64_t m = y->ne[0] * y->ne[1];
    PG_DISPATCH(y->dtype, {
        const T *v = pg_data(y);
        for (int64_t i = 0; i < m; i++)
            if (!(v[i] >= 0 && v[i] <= 1))
                return target_fail("ag_fit", what, v[i], i, y->ne[0], n_main);
    });
    return 0;
}

/* an element of an f32 or f64 tensor (the output's dtype may differ from the targets') */
static double at(const pg_tensor *t, int64_t i)
{
    return t->dtype == PG_DTYPE_F32 ? (double)((const float *)pg_data(t))[i]
                                    : ((const double *)pg_data(t))[i];
}

int pg_fit_binary_hits(const pg_tensor *out, const pg_tensor *y, const int64_t *idx, int64_t w,
                       int classify, int64_t *hit)
{
    const int64_t k = y->ne[0];
    if (out->ne[0] != k || out->ne[1] != w)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ag_fit: the model's output is %s for a batch of %lld samples with %lld "
                       "target rows",
                       pg_desc(out), (long long)w, (long long)k);
    const double thr = classify == PG_FIT_CLASSIFY_LOGITS ? 0.0 : 0.5;
    int64_t h = 0;
    for (int64_t j = 0; j < w; j++)
        for (int64_t i = 0; i < k; i++)
            h += (at(out, j * k + i) > thr) == (at(y, idx[j] * k + i) > 0.5);
    *hit = h;
    return 0;
}

int pg_fit_check_classes(int64_t nclass, int64_t outputs, int levels)
{
    if (outputs < 1 || nclass < 1) return 0; /* unknown before training: the loss checks ids */
    if (levels) /* one text for R's factor and Python's Categorical / strings (both count unused) */
        return nclass == outputs
            ? 0
            : pg_fail(PG_STATUS_ERR_VALUE,
                      "ag_fit: y's labels have %lld classes (a factor's levels, a Categorical's "
                      "categories) but the model has %lld outputs; give the model one output "
                      "per class%s",
                      (long long)nclass, (long long)outputs,
                      nclass < outputs ? " (or keep every class: factor(y, levels = ...), "
                                         "pd.Categorical(y, categories=...))"
                                       : " (unused ones count: droplevels(y), "
                                         "y.cat.remove_unused_categories())");
    if (nclass > outputs)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: y holds class ids up to %lld (%lld classes) but the model has "
                       "%lld outputs; ids are 0-based, in [0, %lld)",
                       (long long)(nclass - 1), (long long)nclass, (long long)outputs,
                       (long long)outputs);
    return 0;
}

const char *pg_fit_one_based_hint(const double *ids, int64_t n, int64_t k)
{
    if (!ids || n < 1 || k < 1) return NULL;
    double lo = ids[0], hi = ids[0];
    for (int64_t j = 0; j < n; j++) {
        if (!isfinite(ids[j])) return NULL;
        lo = ids[j] < lo ? ids[j] : lo;
        hi = ids[j] > hi ? ids[j] : hi;
    }
    return lo == 1 && hi == (double)k
        ? "class ids are 0-based: pass as.integer(f) - 1L, or the factor itself"
        : NULL;
}

int pg_fit_check_ids(const double *y, int64_t n, int64_t outputs, int64_t nlevels, int one_based)
{
    if (n < 0 || (n > 0 && !y)) return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL class ids");
    /* labels' ids are 0-based by construction: R's hint is for plain ids only */
    const char *hint = one_based && nlevels < 0 ? pg_fit_one_based_hint(y, n, outputs) : NULL;
    if (hint)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: y holds class ids 1..%lld but the model has %lld outputs; %s",
                       (long long)outputs, (long long)outputs, hint);
    if (nlevels >= 0) return pg_fit_check_classes(nlevels, outputs, 1);
    double hi = -1;
    for (int64_t j = 0; j < n; j++) { /* not ids: the plan's checks name the sample (pg_fit_new) */
        if (!(y[j] >= 0) || !isfinite(y[j]) || y[j] != floor(y[j])) return 0;
        hi = y[j] > hi ? y[j] : hi;
    }
    if (n > 0 && outputs >= 1 && hi >= 9e18) { /* past int64: the value, not a saturated count */
        char b[40];
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: y holds class ids up to %s but the model has %lld outputs; ids "
                       "are 0-based, in [0, %lld)",
                       pg_fmt_num(b, sizeof b, hi), (long long)outputs, (long long)outputs);
    }
    return n > 0 ? pg_fit_check_classes((int64_t)hi + 1, outputs, 0) : 0;
}
