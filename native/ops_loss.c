/* Losses: mse, cross-entropy on probabilities, fused softmax + cross-entropy. Each returns 1x1;
 * only the prediction receives a gradient, targets are constants kept for backward. */
#include <tgmath.h>
#include <string.h>
#include "pg.h"

void pg_softmax_cols(int dtype, const void *x, void *p, int64_t R, int64_t C);

#define CE_CLAMP 1e-7

/* A loss is a mean over elements or columns: empty input has none, so it is an error. */
static int check_nonempty(const char *op, pg_tensor *pred)
{
    if (pg_numel(pred) == 0)
        return pg_fail(PG_ERR_SHAPE, "%s: input %s is empty; a loss needs at least one element", op, pg_desc(pred));
    return 0;
}

static int check_target(const char *op, pg_tensor *pred, pg_tensor *target)
{
    if (pg_ok(pred, op, "pred") || pg_ok(target, op, "target") || check_nonempty(op, pred)) return -1;
    if (pred->dtype != target->dtype)
        return pg_fail(PG_ERR_DTYPE, "%s: dtype mismatch: pred is %s, target is %s", op, pg_desc(pred), pg_desc(target));
    if (pred->ne[0] != target->ne[0] || pred->ne[1] != target->ne[1])
        return pg_fail(PG_ERR_SHAPE, "%s: pred is %s but target is %s; they must have the same shape [classes/features, batch]",
                       op, pg_desc(pred), pg_desc(target));
    return 0;
}

static pg_tensor *loss_out(pg_tensor *pred, double value)
{
    pg_tensor *out = pg_new(pred->dtype, 1, 1, PG_MEM_OTHER);
    if (out) PG_DISPATCH(pred->dtype, { *(T *)pg_data(out) = (T)value; });
    return out;
}

/* Records the node (input: pred only) and attaches saved tensors; releases them either way. */
static pg_tensor *loss_finish(const char *label, pg_bw_fn bw, pg_tensor *out, pg_tensor *pred,
                              pg_tensor *s0, pg_tensor *s1, double scale)
{
    int err;
    pg_node *nd = pg_record(label, bw, out, 1, &pred, &err);
    if (!err && nd) {
        nd->p[0] = scale;
        if (s0) pg_node_save(nd, s0);
        if (s1) pg_node_save(nd, s1);
    }
    pg_tensor_release(s0);
    pg_tensor_release(s1);
    if (err) { pg_tensor_release(out); return NULL; }
    return out;
}

/* ---- mse: sum((pred - target)^2) / numel ---- */

static int mse_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *diff = n->saved[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *df = pg_data(diff);
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        PG_STORE_LOOP(acc, N, d, s * df[i]);
    });
    return 0;
}

pg_tensor *pg_mse_loss(pg_tensor *pred, pg_tensor *target)
{
    if (check_target("ag_mse_loss", pred, target)) return NULL;
    int64_t N = pg_numel(pred);
    pg_tensor *diff = pg_new_like(pred, PG_MEM_SAVED);
    if (!diff) return NULL;
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target);
        T *df = pg_data(diff);
        for (int64_t i = 0; i < N; i++) { df[i] = p[i] - t[i]; s += (double)df[i] * (double)df[i]; }
    });
    pg_tensor *out = loss_out(pred, s / (double)N);
    if (!out) { pg_tensor_release(diff); return NULL; }
    return loss_finish("mse_loss", mse_bw, out, pred, diff, NULL, 2.0 / (double)N);
}

/* ---- cross-entropy on probabilities: -sum(t * log(clamp(p))) / ncol ---- */

static int ce_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *target = n->saved[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *p = pg_data(x), *t = pg_data(target);
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        const T lo = (T)CE_CLAMP, hi = (T)(1 - CE_CLAMP);
        PG_STORE_LOOP(acc, N, d, -t[i] / (p[i] < lo ? lo : (p[i] > hi ? hi : p[i])) * s);
    });
    return 0;
}

pg_tensor *pg_cross_entropy_loss(pg_tensor *pred, pg_tensor *target)
{
    if (check_target("ag_cross_entropy_loss", pred, target)) return NULL;
    int64_t N = pg_numel(pred), B = pred->ne[1];
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target);
        const T lo = (T)CE_CLAMP, hi = (T)(1 - CE_CLAMP);
        for (int64_t i = 0; i < N; i++) {
            T pc = p[i] < lo ? lo : (p[i] > hi ? hi : p[i]);
            s -= (double)t[i] * (double)log(pc);
        }
    });
    pg_tensor *out = loss_out(pred, s / (double)B);
    if (!out) return NULL;
    pg_tensor_retain(target);
    return loss_finish("cross_entropy_loss", ce_bw, out, pred, target, NULL, 1.0 / (double)B);
}

/* ---- fused softmax + cross-entropy on logits: grad (p - t) / ncol ---- */

static int sce_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *p = n->saved[0], *target = n->saved[1];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *pp = pg_data(p), *t = pg_data(target);
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        PG_STORE_LOOP(acc, N, d, (pp[i] - t[i]) * s);
    });
    return 0;
}

static pg_tensor *sce(pg_tensor *logits, pg_tensor *target)
{
    int64_t N = pg_numel(logits), B = logits->ne[1];
    pg_tensor *p = pg_new_like(logits, PG_MEM_SAVED);
    if (!p) { pg_tensor_release(target); return NULL; }
    pg_softmax_cols(logits->dtype, pg_data(logits), pg_data(p), logits->ne[0], B);
    double s = 0;
    PG_DISPATCH(logits->dtype, {
        const T *pp = pg_data(p), *t = pg_data(target);
        const T lo = (T)CE_CLAMP;
        for (int64_t i = 0; i < N; i++)
            if (t[i] != 0) s -= (double)t[i] * (double)log(pp[i] < lo ? lo : pp[i]);
    });
    pg_tensor *out = loss_out(logits, s / (double)B);
    if (!out) { pg_tensor_release(p); pg_tensor_release(target); return NULL; }
    return loss_finish("softmax_ce_loss", sce_bw, out, logits, p, target, 1.0 / (double)B);
}

pg_tensor *pg_softmax_ce_loss(pg_tensor *logits, pg_tensor *target)
{
    if (check_target("ag_softmax_cross_entropy_loss", logits, target)) return NULL;
    pg_tensor_retain(target);
    return sce(logits, target);
}

pg_tensor *pg_softmax_ce_loss_idx(pg_tensor *logits, const int64_t *idx, int64_t n)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    if (pg_ok(logits, op, "logits") || check_nonempty(op, logits)) return NULL;
    int64_t K = logits->ne[0], B = logits->ne[1];
    if (n != B)
        return pg_fail_null(PG_ERR_SHAPE, "%s: logits are %s (%lld columns) but %lld class ids were given; give one 0-based id per column",
                            op, pg_desc(logits), (long long)B, (long long)n);
    if (n && !idx) return pg_fail_null(PG_ERR_ARG, "%s: NULL class ids", op);
    for (int64_t j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= K)
            return pg_fail_null(PG_ERR_VALUE, "%s: class id %lld at position %lld is out of range [0, %lld) for logits %s",
                                op, (long long)idx[j], (long long)j, (long long)K, pg_desc(logits));
    pg_tensor *t = pg_new_zeros(logits->dtype, K, B, PG_MEM_SAVED);
    if (!t) return NULL;
    PG_DISPATCH(logits->dtype, {
        T *tp = pg_data(t);
        for (int64_t j = 0; j < n; j++) tp[idx[j] + j * K] = 1;
    });
    return sce(logits, t);
}
