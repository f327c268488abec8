/* Losses beyond ggmlR's three (pg_api_loss.h): binary cross-entropy on probabilities and on
 * logits, Huber, mean absolute error, weighted MSE, with PyTorch's definitions. Each is one tape
 * node with a forward rule (ag_compile replays it) and the exact derivative of its forward. The
 * target (and weight) are kept by reference and read again by backward and every replay. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <string.h>
#include "pg.h"

int pg_loss_check_target(const char *op, pg_tensor *pred, pg_tensor *target); /* ops_loss.c */

#define BCE_LOG_MIN (-100.0) /* torch's BCELoss clamps each log to >= -100 */

/* Every value of t in [0, 1] (NaN fails), else an error naming the first one outside. Run by the
 * forward rule, before anything is written, so a replay with bad data changes nothing. */
static int check_unit(const char *op, const char *arg, const pg_tensor *t, const char *hint)
{
    int64_t R = t->ne[0], N = pg_numel(t);
    PG_DISPATCH(t->dtype, {
        const T *v = pg_data(t);
        for (int64_t i = 0; i < N; i++)
            if (!(v[i] >= 0 && v[i] <= 1))
                return pg_fail(
                    PG_STATUS_ERR_VALUE,
                    "%s: %s must lie in [0, 1], got %s at [%lld, %lld] (0-based) of %s%s", op, arg,
                    pg_num((double)v[i]), (long long)(i % R), (long long)(i / R), pg_desc(t), hint);
    });
    return 0;
}

/* the usual op: out 1x1, pred the one input, target (+ weight) kept; takes no refs from caller */
static pg_tensor *run_loss(const char *label, pg_fw_fn fw, pg_bw_fn bw, pg_tensor *pred,
                           pg_tensor *target, pg_tensor *weight, double p0, double p1)
{
    pg_tensor *out = pg_new(pred->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *saved[2] = {target, weight};
    pg_tensor_retain(target);
    if (weight) pg_tensor_retain(weight);
    double p[4] = {p0, p1, 0, 0};
    return pg_op_run(label, fw, bw, out, 1, &pred, p, NULL, weight ? 2 : 1, saved);
}

/* ---- the elementwise losses: mean over i of l(pred[i], target[i]) ----
 * One forward and one backward loop per kind (the same per-element expressions, in the same
 * order, as separate rules would have); the kind rides in the node's ip[0]. */

enum { EL_BCE, EL_BCE_LOGITS, EL_HUBER, EL_MAE };

/* ---- pos_weight for the two BCE losses (torch's binary_cross_entropy_with_logits(pos_weight)):
 * the positive term of row i weighted by pw[i] (one value per row, or one for all), saved[1]. ---- */

/* Every value of w finite and >= 0, else the error naming the first that is not. Run by the
 * forward rule (a replay with a bad weight changes nothing). Shared with ops_loss_ce.c. */
int pg_loss_check_weights(const char *op, const char *arg, const pg_tensor *w)
{
    PG_DISPATCH(w->dtype, {
        const T *wv = pg_data(w);
        for (int64_t i = 0; i < pg_numel(w); i++)
            if (!(wv[i] >= 0 && isfinite(wv[i]))) {
                char num[32];
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: %s must be finite and >= 0, got %s at position %lld of %s", op,
                               arg, pg_fmt_num(num, sizeof num, (double)wv[i]),
                               (long long)(i + pg_index_base()), pg_desc(w));
            }
    });
    return 0;
}

/* w: k values (a [k, 1] column or a [1, k] row; one value too where scalar_ok) of x's dtype, a
 * constant; else the error naming op, arg and both shapes. Shared with ops_loss_ce.c. */
int pg_loss_check_vec(const char *op, const char *arg, const pg_tensor *w, const pg_tensor *x,
                      const char *xw, int64_t k, const char *per, int scalar_ok)
{
    if (pg_not_live(w, op, arg)) return -1;
    if (w->dtype != x->dtype)
        return pg_fail(PG_STATUS_ERR_DTYPE, "%s: dtype mismatch: %s is %s, %s is %s", op, xw,
                       pg_desc(x), arg, pg_desc(w));
    const int vec = pg_numel(w) == k && (w->ne[0] == 1 || w->ne[1] == 1);
    if (!vec && !(scalar_ok && pg_numel(w) == 1))
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: %s %s %s but %s is %s; give one value per %s (%lld)%s", op, xw,
                       strcmp(xw, "logits") ? "is" : "are", pg_desc(x), arg, pg_desc(w), per,
                       (long long)k, scalar_ok ? " or a single value" : "");
    if (w->requires_grad)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: %s must not require grad (it is a constant: no gradient flows into it)",
                       op, arg);
    return 0;
}

static int bce_pw_fw(pg_node *n)
{
    pg_tensor *pred = n->in[0], *target = n->saved[0], *pw = n->saved[1];
    const int kind = (int)n->ip[0];
    const char *op = kind == EL_BCE ? "ag_binary_cross_entropy_loss" : "ag_bce_with_logits_loss";
    if (pg_loss_check_weights(op, "pos_weight", pw)) return -1;
    const int64_t R = pred->ne[0], N = pg_numel(pred), sw = pg_numel(pw) == 1 ? 0 : 1;
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target), *w = pg_data(pw);
        const T lo = (T)BCE_LOG_MIN, one = 1;
        if (kind == EL_BCE) {
            for (int64_t i = 0; i < N; i++) { /* -(pw t log p + (1 - t) log(1 - p)), clamped */
                T l1 = log(p[i]), l0 = log(one - p[i]);
                l1 = l1 > lo ? l1 : lo;
                l0 = l0 > lo ? l0 : lo;
                s -= (double)(w[(i % R) * sw] * t[i]) * (double)l1 +
                    (double)(one - t[i]) * (double)l0;
            }
        } else { /* torch's form: (1 - t) x + (1 + (pw - 1) t) (log1p(exp(-|x|)) + max(-x, 0)) */
            for (int64_t i = 0; i < N; i++) {
                T lw = one + (w[(i % R) * sw] - one) * t[i], m = p[i] < 0 ? -p[i] : (T)0;
                s += (double)((one - t[i]) * p[i] + lw * (log1p(exp(-fabs(p[i]))) + m));
            }
        }
    });
    pg_scalar_set(n->out, s / (double)N);
    return 0;
}

static int bce_pw_bw(pg_node *n, pg_tensor *g, void *slot, int acc)
{
    pg_tensor *x = n->in[0], *target = n->saved[0], *pw = n->saved[1];
    const int64_t R = x->ne[0], N = pg_numel(x), sw = pg_numel(pw) == 1 ? 0 : 1;
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *p = pg_data(x), *t = pg_data(target), *w = pg_data(pw);
        const T s = (T)n->p[0] * *(const T *)pg_data(g), lo = (T)BCE_LOG_MIN, one = 1;
        for (int64_t i = 0; i < N; i++) {
            T wi = w[(i % R) * sw], v;
            if ((int)n->ip[0] == EL_BCE) { /* a clamped log's term contributes nothing */
                v = (log(p[i]) > lo ? -wi * t[i] / p[i] : (T)0) +
                    (log(one - p[i]) > lo ? (one - t[i]) / (one - p[i]) : (T)0);
            } else { /* (1 - t) sigmoid(x) - pw t sigmoid(-x), each sigmoid without overflow */
                T e = exp(-fabs(p[i])), sp = p[i] >= 0 ? one / (one + e) : e / (one + e);
                T sn = p[i] >= 0 ? e / (one + e) : one / (one + e);
                v = (one - t[i]) * sp - wi * t[i] * sn;
            }
            v *= s;
            if (acc) d[i] += v;
            else d[i] = v;
        }
    });
    return 0;
}

static int elem_fw(pg_node *n)
{
    pg_tensor *pred = n->in[0], *target = n->saved[0];
    const int kind = (int)n->ip[0];
    if (kind == EL_BCE) {
        const char *op = "ag_binary_cross_entropy_loss";
        if (check_unit(op, "pred", pred,
                       "; pred are probabilities (for logits use ag_bce_with_logits_loss)") ||
            check_unit(op, "target", target, ""))
            return -1;
    } else if (kind == EL_BCE_LOGITS &&
               check_unit("ag_bce_with_logits_loss", "target", target, "")) {
        return -1;
    }
    if (n->n_saved > 1) return bce_pw_fw(n);
    int64_t N = pg_numel(pred);
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target);
        const T lo = (T)BCE_LOG_MIN, dl = (T)n->p[1], half = (T)0.5;
        switch (kind) {
        case EL_BCE:
            for (int64_t i = 0; i < N; i++) {
                T l1 = log(p[i]), l0 = log((T)1 - p[i]);
                l1 = l1 > lo ? l1 : lo;
                l0 = l0 > lo ? l0 : lo;
                s -= (double)t[i] * (double)l1 + (double)((T)1 - t[i]) * (double)l0;
            }
            break;
        case EL_BCE_LOGITS: /* p holds the logits z */
            for (int64_t i = 0; i < N; i++) {
                T m = p[i] > 0 ? p[i] : (T)0;
                s += (double)(m - p[i] * t[i] + log1p(exp(-fabs(p[i]))));
            }
            break;
        case EL_HUBER:
            for (int64_t i = 0; i < N; i++) {
                T d = p[i] - t[i], a = fabs(d);
                s += (double)(a < dl ? half * d * d : dl * (a - half * dl));
            }
            break;
        default: /* EL_MAE */
            for (int64_t i = 0; i < N; i++) s += (double)fabs(p[i] - t[i]);
            break;
        }
    });
    pg_scalar_set(n->out, s / (double)N); /* as mse: one division of the double sum */
    return 0;
}

static int elem_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *target = n->saved[0];
    void *slot;
    int acc, r = pg_grad_slot_for(x, &slot, &acc);
    if (r <= 0) return r;
    int64_t N = pg_numel(x);
    const int kind = (int)n->ip[0];
    if (n->n_saved > 1) return bce_pw_bw(n, g, slot, acc);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *p = pg_data(x), *t = pg_data(target);
        const T s = (T)n->p[0] * *(const T *)pg_data(g), lo = (T)BCE_LOG_MIN, dl = (T)n->p[1];
        switch (kind) {
        case EL_BCE: /* a clamped log is constant in p: its term contributes nothing */
            PG_STORE_LOOP(acc, N, d,
                          ((log(p[i]) > lo ? -t[i] / p[i] : (T)0) +
                           (log((T)1 - p[i]) > lo ? ((T)1 - t[i]) / ((T)1 - p[i]) : (T)0)) *
                              s);
            break;
        case EL_BCE_LOGITS:
            for (int64_t i = 0; i < N; i++) {
                T e = exp(-fabs(p[i]));
                T sig =
                    p[i] >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e); /* no overflow either side */
                T v = (sig - t[i]) * s;
                if (acc) d[i] += v;
                else d[i] = v;
            }
            break;
        case EL_HUBER:
            PG_STORE_LOOP(acc, N, d,
                          (p[i] - t[i] > dl ? dl : (p[i] - t[i] < -dl ? -dl : p[i] - t[i])) * s);
            break;
        default: /* EL_MAE: sign(d), 0 at d == 0 (torch's L1Loss subgradient); NaN stays NaN */
            PG_STORE_LOOP(acc, N, d, (p[i] > t[i] ? s : (p[i] < t[i] ? -s : (p[i] - t[i]) * (T)0)));
            break;
        }
    });
    return 0;
}

/* pw: the BCE losses' pos_weight (saved[1]) or NULL */
static pg_tensor *run_elem_pw(const char *op, const char *label, int kind, pg_tensor *pred,
                              pg_tensor *target, double p1, pg_tensor *pw)
{
    if (pg_loss_check_target(op, pred, target)) return NULL;
    if (pw &&
        pg_loss_check_vec(op, "pos_weight", pw, pred, kind == EL_BCE ? "pred" : "logits",
                          pred->ne[0], "row", 1))
        return NULL;
    pg_tensor *out = pg_new(pred->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *saved[2] = {target, pw};
    pg_tensor_retain(target);
    if (pw) pg_tensor_retain(pw);
    double p[4] = {1.0 / (double)pg_numel(pred), p1, 0, 0};
    int64_t ip[4] = {kind, 0, 0, 0};
    return pg_op_run(label, elem_fw, elem_bw, out, 1, &pred, p, ip, pw ? 2 : 1, saved);
}

static pg_tensor *run_elem(const char *op, const char *label, int kind, pg_tensor *pred,
                           pg_tensor *target, double p1)
{
    return run_elem_pw(op, label, kind, pred, target, p1, NULL);
}

pg_tensor *pg_bce_loss(pg_tensor *pred, pg_tensor *target)
{
    return pg_bce_loss_pw(pred, target, NULL);
}

pg_tensor *pg_bce_logits_loss(pg_tensor *logits, pg_tensor *target)
{
    return pg_bce_logits_loss_pw(logits, target, NULL);
}

pg_tensor *pg_bce_loss_pw(pg_tensor *pred, pg_tensor *target, pg_tensor *pos_weight)
{
    return run_elem_pw("ag_binary_cross_entropy_loss", "bce_loss", EL_BCE, pred, target, 0,
                       pos_weight);
}

pg_tensor *pg_bce_logits_loss_pw(pg_tensor *logits, pg_tensor *target, pg_tensor *pos_weight)
{
    return run_elem_pw("ag_bce_with_logits_loss", "bce_logits_loss", EL_BCE_LOGITS, logits, target,
                       0, pos_weight);
}

pg_tensor *pg_huber_loss(pg_tensor *pred, pg_tensor *target, double delta)
{
    if (!(isfinite(delta) && delta > 0))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: delta must be a finite number > 0, got %s",
                            "ag_huber_loss", pg_num(delta));
    return run_elem("ag_huber_loss", "huber_loss", EL_HUBER, pred, target, delta);
}

pg_tensor *pg_mae_loss(pg_tensor *pred, pg_tensor *target)
{
    return run_elem("ag_mae_loss", "mae_loss", EL_MAE, pred, target, 0);
}

/* ---- weighted MSE ---- */

/* element strides of weight against pred's (i, j): 0 along a broadcast (size-1) dim */
static void w_strides(const pg_tensor *w, int64_t *sr, int64_t *sc)
{
    *sr = w->ne[0] == 1 ? 0 : 1;
    *sc = w->ne[1] == 1 ? 0 : w->ne[0];
}

static int wmse_fw(pg_node *n)
{
    const char *op = "ag_weighted_mse_loss";
    pg_tensor *pred = n->in[0], *target = n->saved[0], *w = n->saved[1];
    int64_t R = pred->ne[0], C = pred->ne[1], sr, sc;
    w_strides(w, &sr, &sc);
    PG_DISPATCH(w->dtype, {
        const T *wv = pg_data(w);
        for (int64_t i = 0; i < pg_numel(w); i++)
            if (!(wv[i] >= 0 && isfinite(wv[i])))
                return pg_fail(
                    PG_STATUS_ERR_VALUE,
                    "%s: weight must be finite and >= 0, got %s at [%lld, %lld] (0-based) of %s",
                    op, pg_num((double)wv[i]), (long long)(i % w->ne[0]), (long long)(i / w->ne[0]),
                    pg_desc(w));
    });
    double s = 0;
    PG_DISPATCH(pred->dtype, {
        const T *p = pg_data(pred), *t = pg_data(target), *wv = pg_data(w);
        for (int64_t j = 0; j < C; j++)
            for (int64_t i = 0; i < R; i++) {
                T d = p[i + j * R] - t[i + j * R];
                s += (double)wv[i * sr + j * sc] *
                    ((double)d * (double)d); /* weight 1: mse's terms */
            }
    });
    pg_scalar_set(n->out, s / (double)pg_numel(pred));
    return 0;
}

static int wmse_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *target = n->saved[0], *w = n->saved[1];
    void *slot;
    int acc, r = pg_grad_slot_for(x, &slot, &acc);
    if (r <= 0) return r;
    int64_t R = x->ne[0], C = x->ne[1], sr, sc;
    w_strides(w, &sr, &sc);
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *p = pg_data(x), *t = pg_data(target), *wv = pg_data(w);
        const T s = (T)n->p[0] * *(const T *)pg_data(g);
        for (int64_t j = 0; j < C; j++) {
            T *dc = d + j * R;
            const T *pc = p + j * R, *tc = t + j * R, *wc = wv + j * sc;
            PG_STORE_LOOP(acc, R, dc, s * (wc[i * sr] * (pc[i] - tc[i])));
        }
    });
    return 0;
}

pg_tensor *pg_weighted_mse_loss(pg_tensor *pred, pg_tensor *target, pg_tensor *weight)
{
    const char *op = "ag_weighted_mse_loss";
    if (pg_loss_check_target(op, pred, target) || pg_not_live(weight, op, "weight")) return NULL;
    if (weight->dtype != pred->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE, "%s: dtype mismatch: pred is %s, weight is %s", op,
                            pg_desc(pred), pg_desc(weight));
    if ((weight->ne[0] != 1 && weight->ne[0] != pred->ne[0]) ||
        (weight->ne[1] != 1 && weight->ne[1] != pred->ne[1]))
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: pred is %s but weight is %s; weight must have pred's shape, or be "
                            "a [%lld, 1] column, a [1, %lld] row or [1, 1], broadcast over pred",
                            op, pg_desc(pred), pg_desc(weight), (long long)pred->ne[0],
                            (long long)pred->ne[1]);
    if (weight->requires_grad)
        return pg_fail_null(
            PG_STATUS_ERR_VALUE,
            "%s: weight must not require grad (it is a constant: no gradient flows into it)", op);
    return run_loss("weighted_mse_loss", wmse_fw, wmse_bw, pred, target, weight,
                    2.0 / (double)pg_numel(pred), 0);
}
