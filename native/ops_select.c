/* Selection and sampling down each column (pg_api_select.h): argmax, log-softmax, gather, column
 * max, categorical and normal sampling as ggmlR 0.8.6 defines them, with their draws from the
 * core's R-compatible stream. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdlib.h>
#include "pg.h"
#include "rng_internal.h"

/* first index of the largest value of v[0..n) (NaN as -Inf; 0 when nothing beats -Inf) */
#define ARGMAX_BODY(v, n, out)                                                                     \
    do {                                                                                           \
        int64_t best = 0;                                                                          \
        double bv = -INFINITY;                                                                     \
        for (int64_t i = 0; i < (n); i++) {                                                        \
            double e = (double)(v)[i];                                                             \
            if (e > bv) {                                                                          \
                bv = e;                                                                            \
                best = i;                                                                          \
            }                                                                                      \
        }                                                                                          \
        (out) = best;                                                                              \
    } while (0)

int pg_argmax(pg_tensor *x, int64_t *out)
{
    if (pg_not_live(x, "ag_argmax", "x")) return pg_last_status();
    int64_t R = x->ne[0], C = x->ne[1];
    if (C && !out) return pg_fail(PG_STATUS_ERR_ARG, "ag_argmax: out is NULL");
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        for (int64_t j = 0; j < C; j++) ARGMAX_BODY(xp + j * R, R, out[j]);
    });
    return 0;
}

/* ---- log-softmax ---- */

static int log_softmax_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *y = n->out;
    int64_t R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *yp = pg_data(y);
        T *e = pg_scratch((size_t)(R ? R : 1) * sizeof(T));
        if (!e)
            return pg_fail(PG_STATUS_ERR_NOMEM,
                           "ag_log_softmax: out of memory for a column of %lld", (long long)R);
        for (int64_t j = 0; j < C; j++) {
            const T *xc = xp + j * R;
            T *yc = yp + j * R, mx = -INFINITY;
            for (int64_t i = 0; i < R; i++) mx = xc[i] > mx ? xc[i] : mx;
            for (int64_t i = 0; i < R; i++) yc[i] = xc[i] - mx;
            pg_vexp(x->dtype, yc, e, R);
            const T ls = (T)log(pg_vsum(x->dtype, e, R));
            for (int64_t i = 0; i < R; i++) yc[i] -= ls;
        }
    });
    return 0;
}

static int log_softmax_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *y = n->out;
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g), *yp = pg_data(y);
        T *e = pg_scratch((size_t)(R ? R : 1) * sizeof(T));
        if (!e)
            return pg_fail(PG_STATUS_ERR_NOMEM,
                           "ag_log_softmax: out of memory for a column of %lld", (long long)R);
        for (int64_t j = 0; j < C; j++) {
            const T *gc = gp + j * R, *yc = yp + j * R;
            T *dc = d + j * R;
            const T s = (T)pg_vsum(x->dtype, gc, R);
            pg_vexp(x->dtype, yc, e, R);
            PG_STORE_LOOP(acc, R, dc, gc[i] - e[i] * s);
        }
    });
    return 0;
}

pg_tensor *pg_log_softmax(pg_tensor *x)
{
    if (pg_not_live(x, "ag_log_softmax", "x")) return NULL;
    pg_tensor *y = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    if (!y) return NULL;
    pg_tensor *in[1] = {x};
    return pg_op_run("log_softmax", log_softmax_fw, log_softmax_bw, y, 1, in, NULL, NULL, 0, NULL);
}

/* ---- gather: the ids live in a saved [1, C] f64 buffer, so a replay reads the same ones ---- */

static int gather_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *ids = n->saved[0], *out = n->out;
    int64_t R = x->ne[0], C = x->ne[1];
    const double *ip = pg_data(ids);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *op = pg_data(out);
        for (int64_t j = 0; j < C; j++) op[j] = xp[j * R + (int64_t)ip[j]];
    });
    return 0;
}

/* g's column j goes to x's column j at row ids[j] */
static int gather_bw(pg_node *n, pg_tensor *g) { return pg_take_bw_strided(n, g, n->in[0]->ne[0]); }

pg_tensor *pg_gather(pg_tensor *x, const int64_t *idx, int64_t n)
{
    if (pg_not_live(x, "ag_gather", "x")) return NULL;
    int64_t R = x->ne[0], C = x->ne[1];
    if (n != C)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "ag_gather: index has length %lld, x has %lld columns", (long long)n,
                            (long long)C);
    if (C && !idx) return pg_fail_null(PG_STATUS_ERR_ARG, "ag_gather: index is NULL");
    for (int64_t j = 0; j < C; j++)
        if (idx[j] < 0 || idx[j] >= R)
            return pg_fail_null(PG_STATUS_ERR_VALUE,
                                "ag_gather: index out of range 0..%lld (indices are 0-based)",
                                (long long)R - 1);
    return pg_positions_op("gather", gather_fw, gather_bw, x, idx, C, 1, C, C);
}

pg_tensor *pg_gather_f64(pg_tensor *x, const double *v, int64_t n)
{
    if (pg_not_live(x, "ag_gather", "x")) return NULL;
    int64_t R = x->ne[0], C = x->ne[1];
    if (n != C) return pg_gather(x, NULL, n); /* its length text */
    if (C && !v) return pg_fail_null(PG_STATUS_ERR_ARG, "ag_gather: index is NULL");
    /* ggmlR's order, each over the whole index: NA, then whole numbers (+/-Inf are whole, out of
     * range), then the range (pg_gather's) */
    for (int64_t j = 0; j < C; j++)
        if (isnan(v[j])) return pg_fail_null(PG_STATUS_ERR_VALUE, "ag_gather: index contains NA");
    for (int64_t j = 0; j < C; j++)
        if (isfinite(v[j]) && v[j] != floor(v[j]))
            return pg_fail_null(PG_STATUS_ERR_VALUE,
                                "ag_gather: index must be whole numbers (0-based)");
    int64_t *idx = malloc((size_t)(C ? C : 1) * sizeof *idx);
    if (!idx) return pg_fail_null(PG_STATUS_ERR_NOMEM, "ag_gather: out of memory for the index");
    for (int64_t j = 0; j < C; j++) idx[j] = v[j] >= 0 && v[j] < (double)R ? (int64_t)v[j] : -1;
    pg_tensor *out = pg_gather(x, idx, C);
    free(idx);
    return out;
}

/* ag_max: the argmax is taken again by every run (a replay sees new values) into the saved ids,
 * which the gather backward then uses */
static int colmax_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *ids = n->saved[0];
    int64_t R = x->ne[0], C = x->ne[1];
    double *ip = pg_data(ids);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        for (int64_t j = 0; j < C; j++) {
            int64_t k;
            ARGMAX_BODY(xp + j * R, R, k);
            ip[j] = (double)k;
        }
    });
    return gather_fw(n);
}

pg_tensor *pg_colmax(pg_tensor *x)
{
    if (pg_not_live(x, "ag_max", "x")) return NULL;
    int64_t C = x->ne[1];
    if (x->ne[0] < 1)
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "ag_max: x %s has no rows", pg_desc(x));
    pg_tensor *out = pg_new(x->dtype, 1, C, PG_MEM_CATEGORY_OTHER),
              *ids = pg_new(PG_DTYPE_F64, 1, C, PG_MEM_CATEGORY_SAVED);
    if (!out || !ids) {
        if (out) pg_tensor_release(out);
        if (ids) pg_tensor_release(ids);
        return NULL;
    }
    pg_tensor *in[1] = {x};
    return pg_op_run("max", colmax_fw, gather_bw, out, 1, in, NULL, NULL, 1, &ids);
}

/* ---- sampling ---- */

int pg_sample_categorical(pg_rng *r, pg_tensor *x, int64_t *out)
{
    if (pg_not_live(x, "ag_sample_categorical", "x")) return pg_last_status();
    int64_t R = x->ne[0], C = x->ne[1], N = R * C;
    if (C && !out) return pg_fail(PG_STATUS_ERR_ARG, "ag_sample_categorical: out is NULL");
    double *z = malloc((size_t)(N ? N : 1) * sizeof *z);
    if (!z)
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_sample_categorical: out of memory for %s",
                       pg_desc(x));
    if (!(r = pg_rng_lock(r, "ag_sample_categorical"))) {
        free(z);
        return pg_last_status();
    }
    for (int64_t i = 0; i < N; i++) z[i] = pg_rng_runif1(r, 0.0, 1.0); /* one runif(n * batch) */
    pg_rng_unlock(r);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        for (int64_t i = 0; i < N; i++) z[i] = (double)xp[i] + -log(-log(z[i])); /* x + Gumbel */
    });
    for (int64_t j = 0; j < C; j++) ARGMAX_BODY(z + j * R, R, out[j]);
    free(z);
    return 0;
}

static int randn_fw(pg_node *n)
{
    pg_tensor *eps = n->out;
    int64_t N = pg_numel(eps);
    pg_rng *r = pg_rng_lock(NULL, "ag_sample_normal");
    if (!r) return -1;
    PG_DISPATCH(eps->dtype, {
        T *ep = pg_data(eps);
        for (int64_t i = 0; i < N; i++)
            ep[i] = (T)pg_rng_rnorm1(r, 0.0, 1.0); /* one rnorm(n * batch) */
    });
    pg_rng_unlock(r);
    return 0;
}

static int randn_bw(pg_node *n, pg_tensor *g)
{
    (void)n;
    (void)g;
    return 0;
} /* eps is a constant */

pg_tensor *pg_sample_normal(pg_tensor *mu, pg_tensor *log_std)
{
    if (pg_not_live(mu, "ag_sample_normal", "mu") ||
        pg_not_live(log_std, "ag_sample_normal", "log_std"))
        return NULL;
    int64_t R = mu->ne[0], C = mu->ne[1];
    if (log_std->ne[0] != R || (log_std->ne[1] != C && log_std->ne[1] != 1))
        return pg_fail_null(
            PG_STATUS_ERR_SHAPE,
            "ag_sample_normal: log_std is [%lld, %lld], expected [%lld, %lld] or [%lld, 1]",
            (long long)log_std->ne[0], (long long)log_std->ne[1], (long long)R, (long long)C,
            (long long)R);
    if (mu->dtype != log_std->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "ag_sample_normal: mu is %s and log_std is %s; they need one dtype",
                            pg_desc(mu), pg_desc(log_std));
    pg_tensor *eps = pg_new_like(mu, PG_MEM_CATEGORY_OTHER);
    if (!eps) return NULL;
    pg_tensor *in[1] = {mu}; /* a shape source only: the node replays its draw */
    eps = pg_op_run("randn", randn_fw, randn_bw, eps, 1, in, NULL, NULL, 0, NULL);
    if (!eps) return NULL;
    eps->requires_grad = 0; /* a constant: no gradient is worth computing for it */
    pg_tensor *s = pg_unary(PG_UNARY_OP_EXP, log_std), *p = s ? pg_mul(eps, s) : NULL,
              *out = p ? pg_add(mu, p) : NULL;
    pg_tensor_release(eps);
    if (s) pg_tensor_release(s);
    if (p) pg_tensor_release(p);
    return out;
}
