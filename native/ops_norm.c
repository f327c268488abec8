/* ag_normalization (keras3's layer_normalization() + adapt()): per-feature mean and variance
 * buffers, computed here from data or checked when given, and the op
 * (x - mean) / max(sqrt(variance), eps) with its exact backward. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#define FN "ag_normalization"

/* the buffers: live [F, 1] tensors of one dtype, F = features when features > 0 */
static int check_bufs(const pg_tensor *mean, const pg_tensor *variance, int64_t features)
{
    if (pg_not_live(mean, FN, "mean") || pg_not_live(variance, FN, "variance") ||
        pg_same_dtype(FN, "mean", mean, "variance", variance))
        return -1;
    if (mean->ne[1] != 1 || variance->ne[1] != 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       FN ": mean and variance must be vectors (one value per feature), got "
                          "mean %s and variance %s",
                       pg_desc(mean), pg_desc(variance));
    if (mean->ne[0] != variance->ne[0])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       FN ": mean has %lld values but variance has %lld; give one of each per "
                          "feature",
                       (long long)mean->ne[0], (long long)variance->ne[0]);
    if (features > 0 && mean->ne[0] != features)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       FN ": mean and variance have %lld values but x has %lld "
                          "features (rows)",
                       (long long)mean->ne[0], (long long)features);
    return 0;
}

int pg_normalization_check(const pg_tensor *mean, const pg_tensor *variance, int64_t features)
{
    if (check_bufs(mean, variance, features)) return -1;
    const int64_t F = mean->ne[0];
    int rc = 0;
    PG_DISPATCH(mean->dtype, {
        const T *m = pg_data(mean), *v = pg_data(variance);
        for (int64_t i = 0; i < F && !rc; i++) {
            if (!isfinite(m[i]) || !isfinite(v[i]))
                rc = pg_fail(PG_STATUS_ERR_VALUE, FN ": %s must be finite, got %s at feature %lld",
                             isfinite(m[i]) ? "variance" : "mean",
                             pg_num((double)(isfinite(m[i]) ? v[i] : m[i])), (long long)(i + 1));
            else if (v[i] < 0)
                rc = pg_fail(PG_STATUS_ERR_VALUE,
                             FN ": variance must be >= 0, got %s at feature %lld (of %lld)",
                             pg_num((double)v[i]), (long long)(i + 1), (long long)F);
        }
    });
    return rc;
}

int pg_normalization_adapt(const pg_tensor *x, pg_tensor *mean, pg_tensor *variance)
{
    if (pg_not_live(x, FN, "x") || check_bufs(mean, variance, 0) ||
        pg_same_dtype(FN, "x", x, "mean", mean))
        return -1;
    const int64_t F = x->ne[0], B = x->ne[1];
    if (F != mean->ne[0])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       FN ": x is %s but the layer has %lld features; x is [features, samples]",
                       pg_desc(x), (long long)mean->ne[0]);
    if (B < 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       FN ": x must have at least one column (sample), x is %s", pg_desc(x));
    int64_t bad = 0, first = -1;
    PG_DISPATCH(x->dtype, {
        const T *v = pg_data(x);
        for (int64_t i = 0; i < F * B; i++)
            if (!isfinite(v[i]) && bad++ == 0) first = i;
    });
    if (bad)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       FN ": x %s has %lld non-finite value%s (NaN or Inf), the first at row %lld, "
                          "column %lld; give finite data (remove or impute those samples)",
                       pg_desc(x), (long long)bad, bad > 1 ? "s" : "", (long long)(first % F + 1),
                       (long long)(first / F + 1));
    double *mu = calloc((size_t)(2 * F + 1), sizeof *mu), *var = mu + F;
    if (!mu) return pg_fail(PG_STATUS_ERR_NOMEM, FN ": out of memory computing the statistics");
    /* two passes in double; the population variance (divided by n), as keras's adapt() */
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *m = pg_data(mean), *v = pg_data(variance);
        for (int64_t j = 0; j < B; j++)
            for (int64_t i = 0; i < F; i++) mu[i] += (double)xp[i + j * F];
        for (int64_t i = 0; i < F; i++) mu[i] /= (double)B;
        for (int64_t j = 0; j < B; j++)
            for (int64_t i = 0; i < F; i++) {
                double d = (double)xp[i + j * F] - mu[i];
                var[i] += d * d;
            }
        for (int64_t i = 0; i < F; i++) {
            m[i] = (T)mu[i];
            v[i] = (T)(var[i] / (double)B);
        }
    });
    free(mu);
    pg_bump(mean);
    pg_bump(variance);
    return 0;
}

/* saved[0]: the divisor max(sqrt(variance), eps) [F, 1] the forward used */
static int norm_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *den = n->saved[0];
    void *slot;
    int acc, w = pg_grad_slot_for(x, &slot, &acc);
    if (w <= 0) return w;
    const int64_t F = x->ne[0], B = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g), *dn = pg_data(den);
        for (int64_t j = 0; j < B; j++) {
            const T *gc = gp + j * F;
            T *dc = d + j * F;
            PG_STORE_LOOP(acc, F, dc, gc[i] / dn[i]);
        }
    });
    return 0;
}

/* in: x, mean, variance (read on every run: a compiled replay sees new buffers); p[0]: eps */
static int norm_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *mean = n->in[1], *variance = n->in[2];
    pg_tensor *out = n->out, *den = n->saved[0];
    const double eps = n->p[0];
    const int64_t F = x->ne[0], B = x->ne[1];
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x), *m = pg_data(mean), *v = pg_data(variance);
        T *o = pg_data(out), *dn = pg_data(den);
        for (int64_t i = 0; i < F; i++) {
            T s = sqrt(v[i]);
            dn[i] = s > (T)eps ? s : (T)eps;
        }
        for (int64_t j = 0; j < B; j++)
            for (int64_t i = 0; i < F; i++) o[i + j * F] = (xp[i + j * F] - m[i]) / dn[i];
    });
    return 0;
}

pg_tensor *pg_normalization(pg_tensor *x, pg_tensor *mean, pg_tensor *variance, double eps)
{
    if (pg_not_live(x, FN, "x") || check_bufs(mean, variance, 0) ||
        pg_same_dtype(FN, "x", x, "mean", mean))
        return NULL;
    if (x->ne[0] != mean->ne[0])
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            FN ": expected %lld features (rows), x is %s; x is [features, batch]",
                            (long long)mean->ne[0], pg_desc(x));
    if (!(eps >= 0) || !isfinite(eps))
        return pg_fail_null(PG_STATUS_ERR_VALUE, FN ": eps must be a finite number >= 0, got %s",
                            pg_num(eps));
    if (pg_wants_grad(mean) || pg_wants_grad(variance))
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            FN ": mean / variance are buffers and must not require grad");
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    pg_tensor *den = pg_new(x->dtype, x->ne[0], 1, PG_MEM_CATEGORY_SAVED);
    if (!out || !den) {
        pg_tensor_release(out);
        pg_tensor_release(den);
        return NULL;
    }
    pg_tensor *in[3] = {x, mean, variance}, *saved[1] = {den};
    double p[4] = {eps, 0, 0, 0};
    pg_tensor *r = pg_op_run("normalization", norm_fw, norm_bw, out, 3, in, p, NULL, 1, saved);
    /* backward reads the saved divisor, never the buffers: a later adapt() must not fail it */
    if (r && r->node && r->node->out == r) r->node->ver_skip = (1u << 1) | (1u << 2);
    return r;
}
