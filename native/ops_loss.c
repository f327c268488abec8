/* Losses: mse, cross-entropy on probabilities, fused softmax + cross-entropy. Each returns 1x1;
 * only the prediction receives a gradient, targets are constants kept for backward. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <string.h>
#include "pg.h"

#define CE_CLAMP 1e-7

/* A loss is a mean over elements or columns: empty input has none, so it is an error. */
static int check_nonempty(const char *op, pg_tensor *pred)
{
    if (pg_numel(pred) == 0)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: input %s is empty; a loss needs at least one element", op,
                       pg_desc(pred));
    return 0;
}

static int check_target(const char *op, pg_tensor *pred, pg_tensor *target)
{
    if (pg_not_live(pred, op, "pred") || pg_not_live(target, op, "target") ||
        check_nonempty(op, pred))
        return -1;
    if (pred->dtype != target->dtype)
        return pg_fail(PG_STATUS_ERR_DTYPE, "%s: dtype mismatch: pred is %s, target is %s", op,
                       pg_desc(pred), pg_desc(target));
    if (pred->ne[0] != target->ne[0] || pred->ne[1] != target->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: pred is %s but target is %s; they must have the same shape "
                       "[classes/features, batch]",
                       op, pg_desc(pred), pg_desc(target));
    return 0;
}

/* A loss's new tensors: a saved buffer shaped like x (*buf) and the 1x1 output, returned; NULL
 * when out of memory (neither kept) */
static pg_tensor *loss_out(pg_tensor *x, pg_tensor **buf)
{
    *buf = pg_new_like(x, PG_MEM_CATEGORY_SAVED);
    pg_tensor *out = pg_new(x->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    if (*buf && out) return out;
    pg_tensor_release(*buf);
    pg_tensor_release(out);
    return NULL;
}

/* The three losses' backward, one rule: pred's gradient (+)= s * (the loss's term), where
 * s = p[0] * g is the 1x1 seed scaled as the forward recorded it. */
enum { LOSS_MSE, LOSS_CE, LOSS_SCE };
static int loss_bw(pg_node *n, pg_tensor *g, int kind)
{
    pg_tensor *x = n->in[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        if (kind == LOSS_MSE) { /* saved: diff */
            const T *df = pg_data(n->saved[0]);
            PG_STORE_LOOP(acc, N, d, s * df[i]);
        } else if (kind == LOSS_CE) { /* saved: target; a clamped p is a constant (gradient 0),
                                       * as the derivative of the clamped loss (and PyTorch's) */
            const T *p = pg_data(x), *t = pg_data(n->saved[0]);
            const T lo = (T)CE_CLAMP, hi = (T)(1 - CE_CLAMP);
            PG_STORE_LOOP(acc, N, d, (p[i] >= lo && p[i] <= hi) ? -t[i] / p[i] * s : (T)0);
        } else { /* saved: softmax, target. d/dx of sum t (lse - x) is st * p - t, st the column's
                  * target sum: p - t exactly when st is 1 (one-hot, proper soft labels) */
            const T *pp = pg_data(n->saved[0]), *t = pg_data(n->saved[1]);
            const int64_t K = x->ne[0], B = x->ne[1];
            for (int64_t j = 0; j < B; j++) {
                const T *pc = pp + j * K, *tc = t + j * K, st = (T)pg_vsum(x->dtype, tc, K);
                T *dc = d + j * K;
                if (st == 1) PG_STORE_LOOP(acc, K, dc, (pc[i] - tc[i]) * s);
                else PG_STORE_LOOP(acc, K, dc, (st * pc[i] - tc[i]) * s);
            }
        }
    });
    return 0;
}

/* ---- mse: sum((pred - target)^2) / numel ---- */

static int mse_bw(pg_node *n, pg_tensor *g) { return loss_bw(n, g, LOSS_MSE); }

static int mse_fw(pg_node *n)
{
    pg_tensor *pred = n->in[0], *diff = n->saved[0], *target = n->saved[1];
    int64_t N = pg_numel(pred);
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target);
        T *df = pg_data(diff);
        for (int64_t i = 0; i < N; i++) {
            df[i] = p[i] - t[i];
            s += (double)df[i] * (double)df[i];
        }
    });
    pg_scalar_set(n->out, s / (double)N);
    return 0;
}

pg_tensor *pg_mse_loss(pg_tensor *pred, pg_tensor *target)
{
    if (check_target("ag_mse_loss", pred, target)) return NULL;
    pg_tensor *diff, *out = loss_out(pred, &diff);
    if (!out) return NULL;
    pg_tensor_retain(target);
    pg_tensor *saved[2] = {diff, target};
    double p[4] = {2.0 / (double)pg_numel(pred), 0, 0, 0};
    out = pg_op_run("mse_loss", mse_fw, mse_bw, out, 1, &pred, p, NULL, 2, saved);
    if (out && out->node && !pg_tape_record_all(-1)) {
        /* backward needs only diff: eager tapes do not keep the target alive */
        pg_node *n = out->node;
        pg_tensor_release(n->saved[1]);
        n->saved[1] = NULL;
        n->n_saved = 1;
        n->fw = NULL;
    }
    return out;
}

/* ---- cross-entropy on probabilities: -sum(t * log(clamp(p))) / ncol ---- */

static int ce_bw(pg_node *n, pg_tensor *g) { return loss_bw(n, g, LOSS_CE); }

static int ce_fw(pg_node *n)
{
    pg_tensor *pred = n->in[0], *target = n->saved[0];
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
    pg_scalar_set(n->out, s / (double)B);
    return 0;
}

pg_tensor *pg_cross_entropy_loss(pg_tensor *pred, pg_tensor *target)
{
    if (check_target("ag_cross_entropy_loss", pred, target)) return NULL;
    pg_tensor *out = pg_new(pred->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor_retain(target);
    double p[4] = {1.0 / (double)pred->ne[1], 0, 0, 0};
    return pg_op_run("cross_entropy_loss", ce_fw, ce_bw, out, 1, &pred, p, NULL, 1, &target);
}

/* ---- fused softmax + cross-entropy on logits: grad (sum(t) p - t) / ncol ---- */

static int sce_bw(pg_node *n, pg_tensor *g) { return loss_bw(n, g, LOSS_SCE); }

/* The softmax of the logits into p, and in *mx, *ls (scratch, B each) the column max and the
 * log of the column's sum of exps: -log p[i] = ls - (x[i] - mx), exact, with no clamp (ggmlR caps
 * each term at -log(1e-7) = 16.1; a logit gap of 50 costs 50 here). */
static int sce_softmax(pg_tensor *logits, pg_tensor *p, double **mx, double **ls)
{
    int64_t B = logits->ne[1];
    *mx = pg_scratch((size_t)(2 * B + 1) * sizeof(double));
    if (!*mx)
        return pg_fail(PG_STATUS_ERR_NOMEM,
                       "ag_softmax_cross_entropy_loss: out of memory for %lld columns",
                       (long long)B);
    *ls = *mx + B;
    pg_softmax_cols_lse(logits->dtype, pg_data(logits), pg_data(p), logits->ne[0], B, *mx, *ls);
    return 0;
}

static int sce_fw(pg_node *n)
{
    pg_tensor *logits = n->in[0], *p = n->saved[0], *target = n->saved[1];
    int64_t K = logits->ne[0], B = logits->ne[1];
    double *mx = NULL, *ls = NULL, s = 0;
    if (sce_softmax(logits, p, &mx, &ls)) return -1;
    PG_DISPATCH(logits->dtype, {
        const T *x = pg_data(logits), *t = pg_data(target);
        for (int64_t j = 0; j < B; j++) /* a class of weight 0 costs nothing, even at -Inf */
            for (int64_t i = j * K; i < (j + 1) * K; i++)
                if (t[i] != 0) s += (double)t[i] * (ls[j] - ((double)x[i] - mx[j]));
    });
    pg_scalar_set(n->out, s / (double)B);
    return 0;
}

/* takes over the ref to target */
static pg_tensor *sce(pg_tensor *logits, pg_tensor *target)
{
    pg_tensor *p, *out = loss_out(logits, &p);
    if (!out) {
        pg_tensor_release(target);
        return NULL;
    }
    pg_tensor *saved[2] = {p, target};
    double sc[4] = {1.0 / (double)logits->ne[1], 0, 0, 0};
    return pg_op_run("softmax_ce_loss", sce_fw, sce_bw, out, 1, &logits, sc, NULL, 2, saved);
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
    if (pg_not_live(logits, op, "logits") || check_nonempty(op, logits)) return NULL;
    int64_t K = logits->ne[0], B = logits->ne[1];
    if (n != B)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: logits are %s (%lld columns) but %lld class ids were given; give "
                            "one 0-based id per column",
                            op, pg_desc(logits), (long long)B, (long long)n);
    if (n && !idx) return pg_fail_null(PG_STATUS_ERR_ARG, "%s: NULL class ids", op);
    for (int64_t j = 0; j < n; j++)
        if (idx[j] < 0 || idx[j] >= K)
            return pg_fail_null(
                PG_STATUS_ERR_VALUE,
                "%s: class id %lld at position %lld is out of range [0, %lld) for logits %s", op,
                (long long)idx[j], (long long)(j + pg_index_base()), (long long)K, pg_desc(logits));
    pg_tensor *t = pg_new_zeros(logits->dtype, K, B, PG_MEM_CATEGORY_SAVED);
    if (!t) return NULL;
    PG_DISPATCH(logits->dtype, {
        T *tp = pg_data(t);
        for (int64_t j = 0; j < n; j++) tp[idx[j] + j * K] = 1;
    });
    /* the one-hot target built from the caller's ids is a constant of a compiled graph (like a
     * one-hot matrix given as an array); ids that change per step go in a tensor (_ids path) */
    return sce(logits, t);
}

/* ---- softmax + cross-entropy on class ids held in a tensor ---- */

/* Checks the ids of node n (in[1]) against its logits; 0 or an error. */
static int ids_check(pg_tensor *logits, pg_tensor *ids)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    int64_t K = logits->ne[0], B = logits->ne[1];
    return pg_ids_check(ids, B, K, op, "class id", logits, "logits", "");
}

static int sce_ids_fw(pg_node *n)
{
    pg_tensor *logits = n->in[0], *ids = n->in[1], *p = n->saved[0];
    if (ids_check(logits, ids)) return -1;
    int64_t K = logits->ne[0], B = logits->ne[1];
    double *mx = NULL, *ls = NULL, s = 0;
    if (sce_softmax(logits, p, &mx, &ls)) return -1;
    PG_DISPATCH(logits->dtype, {
        const T *x = pg_data(logits);
        for (int64_t j = 0; j < B; j++) { /* the one-hot rule's terms, in its order */
            int64_t c = ids->dtype == PG_DTYPE_F32 ? (int64_t)((const float *)pg_data(ids))[j]
                                                   : (int64_t)((const double *)pg_data(ids))[j];
            s += ls[j] - ((double)x[c + j * K] - mx[j]);
        }
    });
    pg_scalar_set(n->out, s / (double)B);
    return 0;
}

static int sce_ids_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *ids = n->in[1], *p = n->saved[0];
    void *slot;
    int acc, r = pg_grad_slot_for(x, &slot, &acc);
    if (r <= 0) return r;
    int64_t K = x->ne[0], B = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *pp = pg_data(p);
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        for (int64_t j = 0; j < B; j++) {
            int64_t c = ids->dtype == PG_DTYPE_F32 ? (int64_t)((const float *)pg_data(ids))[j]
                                                   : (int64_t)((const double *)pg_data(ids))[j];
            T *dc = d + j * K;
            const T *pc = pp + j * K;
            /* (p - t) * s with t one-hot: the same values as the one-hot rule */
            PG_STORE_LOOP(acc, K, dc, (pc[i] - (i == c ? (T)1 : (T)0)) * s);
        }
    });
    return 0;
}

pg_tensor *pg_softmax_ce_loss_ids(pg_tensor *logits, pg_tensor *ids)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    if (pg_not_live(logits, op, "logits") || pg_not_live(ids, op, "ids") ||
        check_nonempty(op, logits))
        return NULL;
    int64_t B = logits->ne[1];
    if (pg_numel(ids) != B || (ids->ne[0] != 1 && ids->ne[1] != 1))
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: logits are %s (%lld columns) but the class ids are %s; give one "
                            "0-based id per column",
                            op, pg_desc(logits), (long long)B, pg_desc(ids));
    if (ids->requires_grad)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: class ids must not require grad", op);
    pg_tensor *p, *out = loss_out(logits, &p);
    if (!out) return NULL;
    pg_tensor *in[2] = {logits, ids};
    double sc[4] = {1.0 / (double)B, 0, 0, 0};
    return pg_op_run("softmax_ce_loss", sce_ids_fw, sce_ids_bw, out, 2, in, sc, NULL, 1, &p);
}

/* the shared pred/target checks, for the losses of ops_loss2.c (same messages) */
int pg_loss_check_target(const char *op, pg_tensor *pred, pg_tensor *target)
{
    return check_target(op, pred, target);
}

int pg_softmax_ce_target_kind(const pg_tensor *logits, const pg_tensor *target)
{
    if (!logits || !target) return -1;
    const int64_t K = logits->ne[0], B = logits->ne[1], tr = target->ne[0], tc = target->ne[1];
    if (tr == K && tc == B && !(K == 1 && B > 1)) return 0;
    if ((tr == 1 || tc == 1) && tr * tc == B) return 1;
    return -1;
}

pg_tensor *pg_softmax_ce_loss_any(pg_tensor *logits, pg_tensor *target)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    if (pg_not_live(logits, op, "logits") || pg_not_live(target, op, "target")) return NULL;
    switch (pg_softmax_ce_target_kind(logits, target)) {
    case 0: return pg_softmax_ce_loss(logits, target);
    case 1:
        if (!target->requires_grad) return pg_softmax_ce_loss_ids(logits, target);
        { /* ids carry no gradient: those of a tensor that requires grad are read as values */
            pg_tensor *ids = pg_tensor_clone(target), *out;
            if (!ids) return NULL;
            out = pg_softmax_ce_loss_ids(logits, ids);
            pg_tensor_release(ids);
            return out;
        }
    default:
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: logits are [%lldx%lld] but target is [%lldx%lld]; give a one-hot "
                            "matrix of the logits' shape or one class id per column",
                            op, (long long)logits->ne[0], (long long)logits->ne[1],
                            (long long)target->ne[0], (long long)target->ne[1]);
    }
}
