/* Layer ops: batch norm, layer norm and embedding, with their backward rules (row slice /
 * concat, the transposed matmul and the causal mask: ops_rows.c). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

/* Optional per-feature vector: NULL, or a live [F, 1] tensor of x's dtype. */
static int check_vec(const char *op, const char *name, const pg_tensor *v, const pg_tensor *x)
{
    if (!v) return 0;
    if (pg_not_live(v, op, name) || pg_same_dtype(op, "x", x, name, v)) return -1;
    if (v->ne[0] != x->ne[0] || v->ne[1] != 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: %s is %s but x is %s; it must be [%lldx1] (one value per feature row)",
                       op, name, pg_desc(v), pg_desc(x), (long long)x->ne[0]);
    return 0;
}

/* ---- shared by batch norm (per row) and layer norm (per column) ----
 * xhat [F, B] and invstd (one value per normalised group) are saved. The gradients of gamma and
 * beta are per feature row in both cases. */

static int affine_param_grads(pg_node *n, pg_tensor *g, pg_tensor *xhat)
{
    pg_tensor *gamma = n->in[1], *beta = n->in[2];
    int wg = pg_wants_grad(gamma), wb = pg_wants_grad(beta);
    if (!wg && !wb) return 0;
    int64_t F = g->ne[0], B = g->ne[1];
    double *sg = calloc((size_t)(2 * F + 1), sizeof *sg), *sb = sg + F;
    if (!sg) return pg_fail(PG_STATUS_ERR_NOMEM, "%s backward: out of memory", n->op);
    PG_DISPATCH(g->dtype, {
        const T *gp = pg_data(g), *xh = pg_data(xhat);
        for (int64_t j = 0; j < B; j++) /* column by column: contiguous reads */
            for (int64_t i = 0; i < F; i++) {
                sg[i] += (double)gp[i + j * F] * (double)xh[i + j * F];
                sb[i] += gp[i + j * F];
            }
    });
    int acc, rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        pg_tensor *t = k ? beta : gamma;
        const double *src = k ? sb : sg;
        if (!(k ? wb : wg)) continue;
        void *slot = pg_grad_slot(t, &acc);
        if (!slot) {
            rc = -1;
            break;
        }
        PG_DISPATCH(g->dtype, {
            T *d = slot;
            PG_STORE_LOOP(acc, F, d, (T)src[i]);
        });
    }
    free(sg);
    return rc;
}

/* ---- batch norm ---- */

static int batch_norm_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *gamma = n->in[1];
    pg_tensor *xhat = n->saved[0], *invstd = n->saved[1];
    int training = (int)n->ip[0];
    int64_t F = x->ne[0], B = x->ne[1];
    if (pg_wants_grad(x)) {
        int acc;
        void *slot = pg_grad_slot(x, &acc);
        if (!slot) return -1;
        /* per row: k[i] = gamma * invstd, m1 = mean(dxh), m2 = mean(dxh * xhat), dxh = g * gamma */
        double *k = calloc((size_t)(3 * F + 1), sizeof *k), *m1 = k + F, *m2 = k + 2 * F;
        if (!k) return pg_fail(PG_STATUS_ERR_NOMEM, "batch_norm backward: out of memory");
        PG_DISPATCH(x->dtype, {
            T *d = slot;
            const T *gp = pg_data(g), *xh = pg_data(xhat), *is = pg_data(invstd);
            const T *ga = gamma ? (const T *)pg_data(gamma) : NULL;
            for (int64_t i = 0; i < F; i++) k[i] = (ga ? (double)ga[i] : 1.0) * (double)is[i];
            if (training) {
                for (int64_t j = 0; j < B; j++)
                    for (int64_t i = 0; i < F; i++) {
                        double gv = gp[i + j * F];
                        m1[i] += gv;
                        m2[i] += gv * (double)xh[i + j * F];
                    }
                for (int64_t i = 0; i < F; i++) {
                    m1[i] /= (double)B;
                    m2[i] /= (double)B;
                }
            }
            /* dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)); eval: m1 = m2 = 0 */
            for (int64_t j = 0; j < B; j++) {
                const T *gc = gp + j * F, *hc = xh + j * F;
                T *dc = d + j * F;
                PG_STORE_LOOP(acc, F, dc,
                              (T)(k[i] * ((double)gc[i] - m1[i] - (double)hc[i] * m2[i])));
            }
        });
        free(k);
    }
    return affine_param_grads(n, g, xhat);
}

/* in: x, gamma, beta, running_mean, running_var (NULL allowed except x); p: eps, momentum;
 * ip[0]: training. Training mode updates the running buffers in place on every run (eager
 * forward or compiled replay), one update per forward. */
static int batch_norm_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *gamma = n->in[1], *beta = n->in[2], *running_mean = n->in[3],
              *running_var = n->in[4];
    pg_tensor *out = n->out, *xhat = n->saved[0], *invstd = n->saved[1];
    const double eps = n->p[0], momentum = n->p[1];
    const int training = (int)n->ip[0];
    int64_t F = x->ne[0], B = x->ne[1];
    if (training && running_mean) pg_bump(running_mean);
    if (training && running_var) pg_bump(running_var);
    double *mu = pg_scratch((size_t)(2 * F + 1) * sizeof *mu), *var = mu + F;
    if (!mu) return -1;
    memset(mu, 0, (size_t)(2 * F + 1) * sizeof *mu);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        const T *ga = gamma ? (const T *)pg_data(gamma) : NULL,
                *be = beta ? (const T *)pg_data(beta) : NULL;
        T *rm = running_mean ? (T *)pg_data(running_mean) : NULL;
        T *rv = running_var ? (T *)pg_data(running_var) : NULL;
        T *o = pg_data(out), *xh = pg_data(xhat), *is = pg_data(invstd);
        if (training) { /* two passes, column by column (contiguous), accumulated in double */
            for (int64_t j = 0; j < B; j++)
                for (int64_t i = 0; i < F; i++) mu[i] += xp[i + j * F];
            for (int64_t i = 0; i < F; i++) mu[i] /= (double)B;
            for (int64_t j = 0; j < B; j++)
                for (int64_t i = 0; i < F; i++) {
                    double dv = (double)xp[i + j * F] - mu[i];
                    var[i] += dv * dv;
                }
            for (int64_t i = 0; i < F; i++) {
                var[i] /= (double)B;
                if (rm) rm[i] = (T)((1 - momentum) * (double)rm[i] + momentum * mu[i]);
                if (rv) rv[i] = (T)((1 - momentum) * (double)rv[i] + momentum * var[i]);
            }
        } else {
            for (int64_t i = 0; i < F; i++) {
                mu[i] = rm[i];
                var[i] = rv[i];
            }
        }
        for (int64_t i = 0; i < F; i++) {
            var[i] = 1.0 / sqrt(var[i] + eps);
            is[i] = (T)var[i];
        }
        for (int64_t j = 0; j < B; j++)
            for (int64_t i = 0; i < F; i++) {
                T h = (T)(((double)xp[i + j * F] - mu[i]) * var[i]);
                xh[i + j * F] = h;
                o[i + j * F] = (ga ? ga[i] : (T)1) * h + (be ? be[i] : (T)0);
            }
    });
    return 0;
}

pg_tensor *pg_batch_norm(pg_tensor *x, pg_tensor *gamma, pg_tensor *beta, pg_tensor *running_mean,
                         pg_tensor *running_var, double eps, double momentum, int training)
{
    const char *op = "ag_batch_norm";
    if (pg_not_live(x, op, "x")) return NULL;
    if (check_vec(op, "gamma", gamma, x) || check_vec(op, "beta", beta, x) ||
        check_vec(op, "running_mean", running_mean, x) ||
        check_vec(op, "running_var", running_var, x))
        return NULL;
    if (!(eps >= 0))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: eps must be >= 0, got %s", op, pg_num(eps));
    if (training && !(momentum >= 0 && momentum <= 1))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: momentum must be in [0, 1], got %s", op,
                            pg_num(momentum));
    if (!training && (!running_mean || !running_var))
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: eval mode needs running_mean and running_var",
                            op);
    if ((running_mean && pg_wants_grad(running_mean)) ||
        (running_var && pg_wants_grad(running_var)))
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: running_mean / running_var are buffers and must not require grad",
                            op);
    int64_t F = x->ne[0], B = x->ne[1];
    if (training && B < 1)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: training mode needs at least one column (sample), x is %s", op,
                            pg_desc(x));
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    pg_tensor *xhat = pg_new_like(x, PG_MEM_CATEGORY_SAVED);
    pg_tensor *invstd = pg_new(x->dtype, F, 1, PG_MEM_CATEGORY_SAVED);
    if (!out || !xhat || !invstd) {
        pg_tensor_release(out);
        pg_tensor_release(xhat);
        pg_tensor_release(invstd);
        return NULL;
    }
    /* the running buffers are inputs (no gradient) so that a compiled graph updates them */
    pg_tensor *in[5] = {x, gamma, beta, running_mean, running_var}, *saved[2] = {xhat, invstd};
    double p[4] = {eps, momentum, 0, 0};
    int64_t ip[4] = {training != 0, 0, 0, 0};
    pg_tensor *r =
        pg_op_run("batch_norm", batch_norm_fw, batch_norm_bw, out, 5, in, p, ip, 2, saved);
    /* backward reads xhat and invstd, never the running buffers: a later use of the same layer
     * updating them (a shared layer, a checkpoint replay) must not fail the check */
    if (r && r->node && r->node->out == r) r->node->ver_skip = (1u << 3) | (1u << 4);
    return r;
}

/* ---- layer norm ---- */

/* Layer norm works column by column (each column's sums in one fixed order): the columns are
 * split over threads (ag_set_threads) with the same bits for every count; at least 16384
 * elements a thread. The parameters' gradients sum over columns and stay on one thread. */
#define LN_MIN_ELEMS 16384
typedef struct {
    int64_t F;
    int acc;
    const void *x, *ga, *be, *g;
    void *o, *xh, *is, *d;
    double eps;
} ln_job;
static int64_t ln_min_cols(int64_t F) { return F >= LN_MIN_ELEMS ? 1 : LN_MIN_ELEMS / F; }

static void ln_bw_cols(void *ctx, int64_t j0, int64_t j1, int dtype)
{
    const ln_job *L = ctx;
    const int64_t F = L->F;
    const int acc = L->acc;
    PG_DISPATCH(dtype, {
        T *d = L->d;
        const T *gp = L->g, *xh = L->xh, *is = L->is, *ga = L->ga;
        for (int64_t j = j0; j < j1; j++) {
            const T *gc = gp + j * F, *hc = xh + j * F;
            T *dc = d + j * F;
            double s1 = 0, s2 = 0;
            for (int64_t i = 0; i < F; i++) {
                double dxh = (double)gc[i] * (ga ? (double)ga[i] : 1.0);
                s1 += dxh;
                s2 += dxh * (double)hc[i];
            }
            const double m1 = s1 / (double)F, m2 = s2 / (double)F, sc = (double)is[j];
            for (int64_t i = 0; i < F; i++) {
                double dxh = (double)gc[i] * (ga ? (double)ga[i] : 1.0);
                T v = (T)(sc * (dxh - m1 - (double)hc[i] * m2));
                dc[i] = acc ? dc[i] + v : v;
            }
        }
    });
}
static void ln_bw_f32(void *ctx, int64_t j0, int64_t j1) { ln_bw_cols(ctx, j0, j1, PG_DTYPE_F32); }
static void ln_bw_f64(void *ctx, int64_t j0, int64_t j1) { ln_bw_cols(ctx, j0, j1, PG_DTYPE_F64); }

static int layer_norm_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *gamma = n->in[1];
    pg_tensor *xhat = n->saved[0], *invstd = n->saved[1];
    int64_t F = x->ne[0], B = x->ne[1];
    if (pg_wants_grad(x)) {
        int acc;
        void *slot = pg_grad_slot(x, &acc);
        if (!slot) return -1;
        ln_job L = {F,
                    acc,
                    NULL,
                    gamma ? pg_data(gamma) : NULL,
                    NULL,
                    pg_data(g),
                    NULL,
                    (void *)pg_data(xhat),
                    pg_data(invstd),
                    slot,
                    0};
        pg_par_for(B, ln_min_cols(F), x->dtype == PG_DTYPE_F32 ? ln_bw_f32 : ln_bw_f64, &L);
    }
    return affine_param_grads(n, g, xhat);
}

static void ln_fw_cols(void *ctx, int64_t j0, int64_t j1, int dtype)
{
    const ln_job *L = ctx;
    const int64_t F = L->F;
    const double eps = L->eps;
    PG_DISPATCH(dtype, {
        const T *xp = L->x, *ga = L->ga, *be = L->be;
        T *o = L->o, *xh = L->xh, *is = L->is;
        for (int64_t j = j0; j < j1; j++) {
            const T *xc = xp + j * F;
            double s = 0;
            for (int64_t i = 0; i < F; i++) s += xc[i];
            const double mu = s / (double)F;
            double v = 0;
            for (int64_t i = 0; i < F; i++) {
                double dv = (double)xc[i] - mu;
                v += dv * dv;
            }
            const double sd = 1.0 / sqrt(v / (double)F + eps);
            is[j] = (T)sd;
            for (int64_t i = 0; i < F; i++) {
                T h = (T)(((double)xc[i] - mu) * sd);
                xh[i + j * F] = h;
                o[i + j * F] = (ga ? ga[i] : (T)1) * h + (be ? be[i] : (T)0);
            }
        }
    });
}
static void ln_fw_f32(void *ctx, int64_t j0, int64_t j1) { ln_fw_cols(ctx, j0, j1, PG_DTYPE_F32); }
static void ln_fw_f64(void *ctx, int64_t j0, int64_t j1) { ln_fw_cols(ctx, j0, j1, PG_DTYPE_F64); }

static int layer_norm_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *gamma = n->in[1], *beta = n->in[2];
    pg_tensor *out = n->out, *xhat = n->saved[0], *invstd = n->saved[1];
    int64_t F = x->ne[0], B = x->ne[1];
    ln_job L = {F,
                0,
                pg_data(x),
                gamma ? pg_data(gamma) : NULL,
                beta ? pg_data(beta) : NULL,
                NULL,
                pg_data(out),
                pg_data(xhat),
                pg_data(invstd),
                NULL,
                n->p[0]};
    pg_par_for(B, ln_min_cols(F), x->dtype == PG_DTYPE_F32 ? ln_fw_f32 : ln_fw_f64, &L);
    return 0;
}

pg_tensor *pg_layer_norm(pg_tensor *x, pg_tensor *gamma, pg_tensor *beta, double eps)
{
    const char *op = "ag_layer_norm";
    if (pg_not_live(x, op, "x")) return NULL;
    if (check_vec(op, "gamma", gamma, x) || check_vec(op, "beta", beta, x)) return NULL;
    if (!(eps >= 0))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: eps must be >= 0, got %s", op, pg_num(eps));
    int64_t F = x->ne[0], B = x->ne[1];
    if (F < 1)
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: x is %s; it needs at least one feature row",
                            op, pg_desc(x));
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    pg_tensor *xhat = pg_new_like(x, PG_MEM_CATEGORY_SAVED);
    pg_tensor *invstd = pg_new(x->dtype, 1, B, PG_MEM_CATEGORY_SAVED);
    if (!out || !xhat || !invstd) {
        pg_tensor_release(out);
        pg_tensor_release(xhat);
        pg_tensor_release(invstd);
        return NULL;
    }
    pg_tensor *in[3] = {x, gamma, beta}, *saved[2] = {xhat, invstd};
    double p[4] = {eps, 0, 0, 0};
    return pg_op_run("layer_norm", layer_norm_fw, layer_norm_bw, out, 3, in, p, NULL, 2, saved);
}

/* ---- embedding ---- */

/* id k of an ids tensor (f32 or f64; an array's ids come as f64) */
static int64_t emb_id(const pg_tensor *ids, int64_t k)
{
    return ids->dtype == PG_DTYPE_F32 ? (int64_t)((const float *)pg_data(ids))[k]
                                      : (int64_t)((const double *)pg_data(ids))[k];
}

static int embedding_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *w = n->in[0], *ids = n->in[1];
    void *slot;
    int acc, r = pg_grad_slot_for(w, &slot, &acc);
    if (r <= 0) return r;
    int64_t D = w->ne[0], N = g->ne[1];
    PG_DISPATCH(w->dtype, {
        T *d = slot;
        const T *gp = pg_data(g);
        if (!acc) memset(d, 0, (size_t)pg_numel(w) * sizeof(T));
        for (int64_t k = 0; k < N; k++) {
            T *dc = d + emb_id(ids, k) * D;
            const T *gc = gp + k * D;
            for (int64_t i = 0; i < D; i++) dc[i] += gc[i];
        }
    });
    return 0;
}

pg_tensor *pg_embedding(pg_tensor *weight, const double *idx, int64_t n)
{
    const char *op = "ag_embedding";
    if (pg_not_live(weight, op, "weight")) return NULL;
    if (n < 0)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: number of ids must be >= 0, got %lld", op,
                            (long long)n);
    if (n > 0 && !idx) return pg_fail_null(PG_STATUS_ERR_ARG, "%s: ids pointer is NULL", op);
    /* the ids become a tensor the node reads on every run: a compiled graph keeps it as a
     * constant and replays the op (exact in f64 for ids < 2^53). Doubles, so that an id past
     * any integer type is named as given; the range check and its text are the tensor path's
     * (pg_ids_check, before the op records anything). */
    pg_tensor *ids = pg_new(PG_DTYPE_F64, 1, n, PG_MEM_CATEGORY_SAVED);
    if (!ids) return NULL;
    if (n > 0) memcpy(pg_data(ids), idx, (size_t)n * sizeof(double));
    pg_tensor *out = pg_embedding_ids(weight, ids);
    pg_tensor_release(ids);
    return out;
}

/* in: weight, ids (a tensor, read on every run: a compiled graph refills it) */
static int embedding_ids_fw(pg_node *n)
{
    pg_tensor *weight = n->in[0], *ids = n->in[1], *out = n->out;
    int64_t D = weight->ne[0], V = weight->ne[1], N = pg_numel(ids);
    int rc = pg_ids_check(ids, N, V, "ag_embedding", "id", weight, "weight", " (ids are 0-based)");
    if (rc) return rc;
    PG_DISPATCH(weight->dtype, {
        const T *w = pg_data(weight);
        T *o = pg_data(out);
        for (int64_t k = 0; k < N; k++)
            memcpy(o + k * D, w + emb_id(ids, k) * D, (size_t)D * sizeof(T));
    });
    return 0;
}

pg_tensor *pg_embedding_ids(pg_tensor *weight, pg_tensor *ids)
{
    const char *op = "ag_embedding";
    if (pg_not_live(weight, op, "weight") || pg_not_live(ids, op, "ids")) return NULL;
    if (ids->requires_grad)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: ids %s must not require grad", op,
                            pg_desc(ids));
    pg_tensor *out = pg_new(weight->dtype, weight->ne[0], pg_numel(ids), PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {weight, ids};
    return pg_op_run("embedding", embedding_ids_fw, embedding_bw, out, 2, in, NULL, NULL, 0, NULL);
}
