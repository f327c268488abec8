/* ag_fit's built-in losses with per-sample weights (pg_fit_loss_weighted, pg_api_train_weight.h):
 * one tape node per loss with a forward rule (ag_compile replays it, reading the plan's reused
 * target and weight rows again) and the exact derivative. Each term is the unweighted op's
 * (ops_loss.c, ops_loss2.c) times its column's weight, so weights of 1 give those ops' bits. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include "pg.h"

int pg_loss_check_target(const char *op, pg_tensor *pred, pg_tensor *target); /* ops_loss.c */

#define BCE_LOG_MIN (-100.0) /* torch's BCELoss clamps each log to >= -100 (as ops_loss2.c) */

enum { WL_CE_HOT, WL_CE_IDS, WL_MSE, WL_BCE, WL_BCE_LOGITS, WL_HUBER, WL_MAE, WL_MEAN, WL_SUM };

/* the unweighted op's name, for messages */
static const char *op_name(int kind)
{
    static const char *const N[] = {"ag_softmax_cross_entropy_loss",
                                    "ag_softmax_cross_entropy_loss",
                                    "ag_mse_loss",
                                    "ag_binary_cross_entropy_loss",
                                    "ag_bce_with_logits_loss",
                                    "ag_huber_loss",
                                    "ag_mae_loss",
                                    "ag_fit",
                                    "ag_fit"};
    return N[kind];
}

/* every value of t in [0, 1] (as ops_loss2.c's check, run by the forward rule) */
static int check_unit(int kind, const char *arg, const pg_tensor *t)
{
    int64_t R = t->ne[0], N = pg_numel(t);
    PG_DISPATCH(t->dtype, {
        const T *v = pg_data(t);
        for (int64_t i = 0; i < N; i++)
            if (!(v[i] >= 0 && v[i] <= 1))
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: %s must lie in [0, 1], got %s at [%lld, %lld] (0-based) of %s",
                               op_name(kind), arg, pg_num((double)v[i]), (long long)(i % R),
                               (long long)(i / R), pg_desc(t));
    });
    return 0;
}

/* saved: [0] the weight row, [1] the target (not for mean / sum), [2] cross-entropy's softmax */
static int wl_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *w = n->saved[0], *t = n->n_saved > 1 ? n->saved[1] : NULL;
    const int kind = (int)n->ip[0];
    const int64_t R = x->ne[0], C = x->ne[1];
    if ((kind == WL_BCE && (check_unit(kind, "pred", x) || check_unit(kind, "target", t))) ||
        (kind == WL_BCE_LOGITS && check_unit(kind, "target", t)) ||
        (kind == WL_CE_IDS && pg_ids_check(t, C, R, op_name(kind), "class id", x, "logits", "")))
        return -1;
    double s = 0, *mx = NULL, *ls = NULL;
    if (kind == WL_CE_HOT || kind == WL_CE_IDS) {
        mx = pg_scratch((size_t)(2 * C + 1) * sizeof(double));
        if (!mx)
            return pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory for %lld columns",
                           (long long)C);
        ls = mx + C;
        pg_softmax_cols_lse(x->dtype, pg_data(x), pg_data(n->saved[2]), R, C, mx, ls);
    }
    PG_DISPATCH(x->dtype, {
        const T *p = pg_data(x), *wv = pg_data(w), *tv = t ? pg_data(t) : NULL;
        const T lo = (T)BCE_LOG_MIN, half = (T)0.5, dl = (T)1;
        for (int64_t j = 0; j < C; j++) {
            const double wj = (double)wv[j];
            const T *pc = p + j * R, *tc = tv ? tv + j * R : NULL;
            switch (kind) {
            case WL_CE_HOT: /* a class of weight 0 costs nothing, even at -Inf */
                for (int64_t i = 0; i < R; i++)
                    if (tc[i] != 0) s += wj * ((double)tc[i] * (ls[j] - ((double)pc[i] - mx[j])));
                break;
            case WL_CE_IDS: {
                const int64_t c = (int64_t)tv[j];
                s += wj * (ls[j] - ((double)pc[c] - mx[j]));
                break;
            }
            case WL_MSE:
                for (int64_t i = 0; i < R; i++) {
                    T d = pc[i] - tc[i];
                    s += wj * ((double)d * (double)d);
                }
                break;
            case WL_BCE:
                for (int64_t i = 0; i < R; i++) {
                    T l1 = log(pc[i]), l0 = log((T)1 - pc[i]);
                    l1 = l1 > lo ? l1 : lo;
                    l0 = l0 > lo ? l0 : lo;
                    s -= wj * ((double)tc[i] * (double)l1 + (double)((T)1 - tc[i]) * (double)l0);
                }
                break;
            case WL_BCE_LOGITS:
                for (int64_t i = 0; i < R; i++) {
                    T m = pc[i] > 0 ? pc[i] : (T)0;
                    s += wj * (double)(m - pc[i] * tc[i] + log1p(exp(-fabs(pc[i]))));
                }
                break;
            case WL_HUBER:
                for (int64_t i = 0; i < R; i++) {
                    T d = pc[i] - tc[i], a = fabs(d);
                    s += wj * (double)(a < dl ? half * d * d : dl * (a - half * dl));
                }
                break;
            case WL_MAE:
                for (int64_t i = 0; i < R; i++) s += wj * (double)fabs(pc[i] - tc[i]);
                break;
            default: /* WL_MEAN, WL_SUM */
                for (int64_t i = 0; i < R; i++) s += wj * (double)pc[i];
                break;
            }
        }
    });
    pg_scalar_set(n->out, s / n->p[1]); /* p[1]: the unweighted op's divisor */
    return 0;
}

static int wl_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *w = n->saved[0], *t = n->n_saved > 1 ? n->saved[1] : NULL;
    void *slot;
    int acc, r = pg_grad_slot_for(x, &slot, &acc);
    if (r <= 0) return r;
    const int kind = (int)n->ip[0];
    const int64_t R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *p = pg_data(x), *wv = pg_data(w), *tv = t ? pg_data(t) : NULL;
        const T *sm = kind <= WL_CE_IDS ? pg_data(n->saved[2]) : NULL;
        const T s = (T)n->p[0] * *(const T *)pg_data(g), lo = (T)BCE_LOG_MIN, dl = (T)1;
        for (int64_t j = 0; j < C; j++) {
            const T sj = s * wv[j]; /* the column's seed: weight 1 leaves s as it is */
            const T *pc = p + j * R, *tc = tv ? tv + j * R : NULL;
            T *dc = d + j * R;
            switch (kind) {
            case WL_CE_HOT: {
                const T *qc = sm + j * R, st = (T)pg_vsum(x->dtype, tc, R);
                if (st == 1) PG_STORE_LOOP(acc, R, dc, (qc[i] - tc[i]) * sj);
                else PG_STORE_LOOP(acc, R, dc, (st * qc[i] - tc[i]) * sj);
                break;
            }
            case WL_CE_IDS: {
                const T *qc = sm + j * R;
                const int64_t c = (int64_t)tv[j];
                PG_STORE_LOOP(acc, R, dc, (qc[i] - (i == c ? (T)1 : (T)0)) * sj);
                break;
            }
            case WL_MSE: PG_STORE_LOOP(acc, R, dc, sj * (pc[i] - tc[i])); break;
            case WL_BCE:
                PG_STORE_LOOP(acc, R, dc,
                              ((log(pc[i]) > lo ? -tc[i] / pc[i] : (T)0) +
                               (log((T)1 - pc[i]) > lo ? ((T)1 - tc[i]) / ((T)1 - pc[i]) : (T)0)) *
                                  sj);
                break;
            case WL_BCE_LOGITS:
                for (int64_t i = 0; i < R; i++) {
                    T e = exp(-fabs(pc[i]));
                    T sig = pc[i] >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
                    T v = (sig - tc[i]) * sj;
                    if (acc) dc[i] += v;
                    else dc[i] = v;
                }
                break;
            case WL_HUBER:
                PG_STORE_LOOP(
                    acc, R, dc,
                    (pc[i] - tc[i] > dl ? dl : (pc[i] - tc[i] < -dl ? -dl : pc[i] - tc[i])) * sj);
                break;
            case WL_MAE:
                PG_STORE_LOOP(
                    acc, R, dc,
                    (pc[i] > tc[i] ? sj : (pc[i] < tc[i] ? -sj : (pc[i] - tc[i]) * (T)0)));
                break;
            default: PG_STORE_LOOP(acc, R, dc, sj); break; /* WL_MEAN, WL_SUM */
            }
        }
    });
    return 0;
}

pg_tensor *pg_fit_loss_weighted(int loss, pg_tensor *out, pg_tensor *y, pg_tensor *w)
{
    if (!w) return pg_fit_loss(loss, out, y);
    const char *op = "ag_fit";
    if (loss < 0 || loss >= PG_FIT_LOSS_COUNT)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: loss code %d is out of range", op, loss);
    const int targets = loss != PG_FIT_LOSS_MEAN && loss != PG_FIT_LOSS_SUM;
    if (pg_not_live(out, op, "the model's output") || pg_not_live(w, op, "the weight row") ||
        (targets && pg_not_live(y, op, "the targets")))
        return NULL;
    if (pg_numel(out) == 0)
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: the model's output %s is empty", op,
                            pg_desc(out));
    if (w->dtype != out->dtype || w->ne[0] != 1 || w->ne[1] != out->ne[1] || w->requires_grad)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: the sample weights are %s for the model's output %s; they must "
                            "be a [1, %lld] row of its dtype without grad",
                            op, pg_desc(w), pg_desc(out), (long long)out->ne[1]);
    if (targets && y->dtype != out->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE, "%s: the model's output is %s but y is %s", op,
                            pg_desc(out), pg_desc(y));
    static const int KIND[PG_FIT_LOSS_COUNT] = {WL_CE_HOT, WL_MSE,        WL_MEAN,  WL_SUM,
                                                WL_BCE,    WL_BCE_LOGITS, WL_HUBER, WL_MAE};
    int kind = KIND[loss];
    const double B = (double)out->ne[1], N = (double)pg_numel(out);
    if (kind == WL_CE_HOT) {
        const int form = pg_softmax_ce_target_kind(out, y);
        if (form < 0)
            return pg_fail_null(PG_STATUS_ERR_SHAPE,
                                "%s: logits are %s but target is %s; give a one-hot matrix of the "
                                "logits' shape or one class id per column",
                                op_name(kind), pg_desc(out), pg_desc(y));
        if (form == 1) kind = WL_CE_IDS;
    } else if (targets && pg_loss_check_target(op_name(kind), out, y)) {
        return NULL;
    }
    /* p[0]: the backward seed's scale, p[1]: the forward's divisor (the unweighted ops') */
    const double div = kind <= WL_CE_IDS ? B : (kind == WL_SUM ? 1.0 : N);
    double p[4] = {kind == WL_MSE ? 2.0 / N : 1.0 / div, div, 0, 0};
    int64_t ip[4] = {kind, 0, 0, 0};
    pg_tensor *res = pg_new(out->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    pg_tensor *sm = kind <= WL_CE_IDS ? pg_new_like(out, PG_MEM_CATEGORY_SAVED) : NULL;
    if (!res || (kind <= WL_CE_IDS && !sm)) {
        pg_tensor_release(res);
        pg_tensor_release(sm);
        return NULL;
    }
    pg_tensor *saved[3] = {w, y, sm};
    pg_tensor_retain(w);
    if (targets) pg_tensor_retain(y);
    return pg_op_run("weighted_fit_loss", wl_fw, wl_bw, res, 1, &out, p, ip,
                     kind <= WL_CE_IDS ? 3 : (targets ? 2 : 1), saved);
}
