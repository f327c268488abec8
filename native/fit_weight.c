/* ag_fit(sample_weight =, class_weight =) (pg_api_train_weight.h): the checks and the per-sample
 * weight row of the plan, one rule for R and Python. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "pg.h"

static const char *OP = "ag_fit";

static int binary_loss(int loss)
{
    return loss == PG_FIT_LOSS_BINARY_CROSS_ENTROPY || loss == PG_FIT_LOSS_BCE_WITH_LOGITS;
}

/* sample j's class: an id (one row) or the first maximum of a one-hot column; -1 on error */
static int64_t class_of(const pg_tensor *y, int loss, int64_t j)
{
    const int64_t K = y->ne[0];
    const char *name = pg_fit_loss_name(loss);
    if (K > 1 && binary_loss(loss))
        return -pg_fail(PG_STATUS_ERR_SHAPE,
                        "%s: class_weight with loss \"%s\" needs one 0/1 target per sample (y "
                        "with 1 row); y has %lld rows (a multi-label y: use sample_weight)",
                        OP, name, (long long)K);
    double v = 0;
    int64_t best = 0;
    PG_DISPATCH(y->dtype, {
        const T *c = (const T *)pg_data(y) + j * K;
        v = (double)c[0];
        for (int64_t i = 1; i < K; i++)
            if (c[i] > c[best]) best = i;
    });
    if (K > 1) return best;
    if (binary_loss(loss) && !(v == 0 || v == 1))
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "%s: class_weight with loss \"%s\" needs 0/1 targets; sample %lld has %s",
                        OP, name, (long long)(j + pg_index_base()), pg_num(v));
    return (int64_t)v; /* cross_entropy's ids: whole numbers >= 0, checked by pg_fit_new */
}

/* class_weight's (id, weight) pairs as a table by class id (NaN: not given, weighs 1), checked:
 * ids whole numbers in [0, 2^24] (a bound on the table's size), each once; weights finite, >= 0 */
static double *class_table(const double *ids, const double *cw, int64_t ncw, int64_t *len,
                           const char *const *labels, int64_t nlabels)
{
    const double max_id = 16777216; /* 2^24 */
    int64_t n = ids ? 0 : ncw;
    for (int64_t i = 0; ids && i < ncw; i++) {
        if (!(isfinite(ids[i]) && ids[i] >= 0 && ids[i] == floor(ids[i])))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: class_weight's keys must be 0-based class ids (whole numbers >= "
                           "0); got %s",
                           OP, pg_num(ids[i])),
                   NULL;
        char id[40]; /* %.15g: 1000000000, not 1e+09; past it (2^70) its digits */
        if (ids[i] > max_id)
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: class_weight's class id %s is above %.0f", OP,
                           pg_fmt_num15(id, sizeof id, ids[i]), max_id),
                   NULL;
        if ((int64_t)ids[i] + 1 > n) n = (int64_t)ids[i] + 1;
    }
    double *t = malloc((size_t)(n ? n : 1) * sizeof *t);
    if (!t) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for class_weight", OP), NULL;
    for (int64_t c = 0; c < n; c++) t[c] = NAN;
    for (int64_t i = 0; i < ncw; i++) {
        const int64_t c = ids ? (int64_t)ids[i] : i;
        const char *why = !isnan(t[c])         ? "names a class twice"
            : !(isfinite(cw[i]) && cw[i] >= 0) ? "must be finite and >= 0"
                                               : NULL;
        if (why) {
            free(t);
            if (c < nlabels && labels[c]) /* labels y: the class by its label, as the keys */
                return pg_fail(PG_STATUS_ERR_VALUE, "%s: class_weight %s; class '%.*s' has %s", OP,
                               why, (int)pg_utf8_prefix(labels[c], 40), labels[c], pg_num(cw[i])),
                       NULL;
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: class_weight %s; class %lld has %s", OP, why,
                           (long long)c, pg_num(cw[i])),
                   NULL;
        }
        t[c] = cw[i];
    }
    *len = n;
    return t;
}

static int set_weights(pg_fit *f, int loss, const double *sw, int64_t nsw, const double *cw,
                       int64_t ncw, int64_t nclass);

int pg_fit_weight_shape(const int64_t *dims, int ndim)
{
    if (ndim < 0 || (ndim && !dims))
        return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL sample_weight shape");
    if (ndim == 1 || (ndim == 2 && (dims[0] == 1 || dims[1] == 1))) return 0;
    char s[96] = "scalar"; /* Python's 0-d array; R's vectors are 1-d */
    for (int i = 0, len = 0; i < ndim && len < (int)sizeof s; i++)
        len +=
            snprintf(s + len, sizeof s - (size_t)len, "%s%lld", i ? "x" : "", (long long)dims[i]);
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "ag_fit: sample_weight must be a vector of one weight per sample, got a %s%s", s,
                   ndim ? " array" : "");
}

int pg_fit_set_weights(pg_fit *f, int loss, const double *sw, int64_t nsw, const double *cw_id,
                       const double *cw, int64_t ncw, int64_t nclass, const char *const *labels,
                       int64_t nlabels)
{
    if (!cw || !ncw) /* an empty class_weight is none (keras) */
        return set_weights(f, loss, sw, nsw, NULL, 0, nclass);
    if (ncw < 0)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: class_weight has %lld values", OP, (long long)ncw);
    int64_t len = 0;
    double *t = class_table(cw_id, cw, ncw, &len, labels, labels ? nlabels : 0);
    if (!t) return pg_last_status();
    const int rc = set_weights(f, loss, sw, nsw, t, len, nclass);
    free(t);
    return rc;
}

/* the run's number of classes (pg_api_train_weight.h): the binary losses' 2, else the host's
 * (the model's outputs or the labels' count), else one-hot y's rows or the largest id + 1 */
static int64_t class_count(const pg_tensor *y, int loss, int64_t nclass)
{
    if (binary_loss(loss)) return 2;
    if (nclass >= 1) return nclass;
    if (y->ne[0] > 1) return y->ne[0];
    double hi = -1;
    PG_DISPATCH(y->dtype, {
        const T *c = (const T *)pg_data(y);
        for (int64_t j = 0; j < y->ne[1]; j++)
            if ((double)c[j] > hi) hi = (double)c[j];
    });
    return (int64_t)hi + 1; /* ids: whole numbers >= 0 (pg_fit_new), so hi is one */
}

static int set_weights(pg_fit *f, int loss, const double *sw, int64_t nsw, const double *cw,
                       int64_t ncw, int64_t nclass)
{
    if (!f) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    if (!sw && !cw) return 0;
    const char *arg =
        sw && cw ? "sample_weight / class_weight" : (sw ? "sample_weight" : "class_weight");
    if (loss < 0)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: %s needs a built-in loss (a name such as \"mse\"); a loss function "
                       "gets no per-sample weights: weight the terms inside it instead (e.g. "
                       "ag_weighted_mse_loss)",
                       OP, arg);
    if (loss >= PG_FIT_LOSS_COUNT)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: loss code %d is out of range", OP, loss);
    if (cw && loss != PG_FIT_LOSS_CROSS_ENTROPY && !binary_loss(loss))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: class_weight needs class-id targets (loss \"cross_entropy\", "
                       "\"binary_cross_entropy\" or \"bce_with_logits\"), not loss \"%s\"; weight "
                       "samples with sample_weight",
                       OP, pg_fit_loss_name(loss));
    pg_tensor *x, *y, **slot;
    int64_t n_given;
    slot = pg_fit_weight_slot(f, &x, &y, &n_given);
    if (*slot) return pg_fail(PG_STATUS_ERR_STATE, "%s: the plan's weights are already set", OP);
    if (cw && !y) return pg_fail(PG_STATUS_ERR_VALUE, "%s: class_weight needs targets y", OP);
    const int64_t k = cw ? class_count(y, loss, nclass) : 0;
    for (int64_t c = k; c < ncw; c++) /* keras refuses a key that is not a class */
        if (!isnan(cw[c]))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: class_weight's class id %lld is not a class of this run (%lld "
                           "class%s: ids 0 to %lld)",
                           OP, (long long)c, (long long)k, k == 1 ? "" : "es", (long long)(k - 1));
    if (sw && nsw != n_given)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: sample_weight has %lld values but x has %lld samples (columns); give "
                       "one weight per sample",
                       OP, (long long)nsw, (long long)n_given);
    for (int64_t j = 0; sw && j < nsw; j++)
        if (!(isfinite(sw[j]) && sw[j] >= 0))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: sample_weight must be finite and >= 0; position %lld has %s", OP,
                           (long long)(j + pg_index_base()), pg_num(sw[j]));
    const int64_t n = x->ne[1];
    double *wv = malloc((size_t)(n ? n : 1) * sizeof *wv);
    if (!wv)
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for %lld weights", OP, (long long)n);
    int any = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = (sw && j < n_given) ? sw[j] : 1; /* validation_data's columns: unweighted */
        if (cw && j < n_given) {
            const int64_t c = class_of(y, loss, j);
            if (c < 0) {
                free(wv);
                return pg_last_status();
            }
            if (c < ncw && !isnan(cw[c])) v *= cw[c]; /* a class not given weighs 1 (keras) */
        }
        any |= j < n_given && v > 0;
        wv[j] = v;
    }
    if (!any) {
        free(wv);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: every sample's weight (%s) is 0: there is nothing to train on", OP,
                       sw && cw ? "sample_weight times class_weight" : arg);
    }
    pg_tensor *t = pg_new(x->dtype, 1, n, PG_MEM_CATEGORY_OTHER);
    if (t)
        PG_DISPATCH(t->dtype, {
            T *d = pg_data(t);
            for (int64_t j = 0; j < n; j++) d[j] = (T)wv[j];
        });
    free(wv);
    if (!t) return pg_last_status();
    *slot = t;
    return 0;
}
