/* Softmax cross-entropy with PyTorch's options (pg_softmax_ce_loss_opt, pg_api_loss.h): per-class
 * weight, ignore_index, label_smoothing, as torch.nn.functional.cross_entropy(reduction="mean").
 * One node for both target forms; without options the plain ops of ops_loss.c run (their bits).
 * Node: in = {logits} (matrix target, saved[1]) or {logits, ids}; saved[0] the softmax, the weight
 * last; ip = {form, has ignore, ignore id, has weight}; p = {label smoothing, 1 / normaliser}: the
 * forward writes p[1] (the kept columns' weight sum changes with the ids of each replay). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include "pg.h"

/* ops_loss.c / ops_loss2.c */
int pg_loss_check_target(const char *op, pg_tensor *pred, pg_tensor *target);
int pg_loss_check_weights(const char *op, const char *arg, const pg_tensor *w);
int pg_loss_check_vec(const char *op, const char *arg, const pg_tensor *w, const pg_tensor *x,
                      const char *xw, int64_t k, const char *per, int scalar_ok);

#define OP "ag_softmax_cross_entropy_loss"

enum { CEO_MATRIX, CEO_IDS };

static pg_tensor *ceo_weight(const pg_node *n)
{
    return n->ip[3] ? n->saved[n->n_saved - 1] : NULL;
}

/* column j's class id (already checked whole) */
static int64_t ceo_id(const pg_tensor *ids, int64_t j)
{
    return ids->dtype == PG_DTYPE_F32 ? (int64_t)((const float *)pg_data(ids))[j]
                                      : (int64_t)((const double *)pg_data(ids))[j];
}

/* ids whole numbers in [0, K) or equal to ignore_index; run by every forward */
static int ceo_ids_check(const pg_node *n)
{
    const pg_tensor *x = n->in[0], *ids = n->in[1];
    const int64_t K = x->ne[0], B = x->ne[1];
    if (!n->ip[1]) return pg_ids_check(ids, B, K, OP, "class id", x, "logits", "");
    PG_DISPATCH(ids->dtype, {
        const T *id = pg_data(ids);
        for (int64_t j = 0; j < B; j++) {
            T v = id[j];
            char num[32];
            if ((double)v == (double)n->ip[2]) continue;
            if (!(v >= 0 && v < (T)K) || v != (T)(int64_t)v)
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: class id %s at position %lld is %s [0, %lld) for logits %s "
                               "(and not ignore_index %lld)",
                               OP, pg_fmt_num(num, sizeof num, (double)v),
                               (long long)(j + pg_index_base()),
                               pg_is_whole((double)v) ? "out of range" : "not a whole number in",
                               (long long)K, pg_desc(x), (long long)n->ip[2]);
        }
    });
    return 0;
}

/* a[c]: the weight of -log p[c] in column j's loss; *A their sum; 0 for an ignored column */
#define CEO_COEFS(T, j, a, A)                                                                      \
    do {                                                                                           \
        (A) = 0;                                                                                   \
        if (ids) {                                                                                 \
            int64_t y = ceo_id(ids, j);                                                            \
            int kept = !(n->ip[1] && y == n->ip[2]);                                               \
            T wy = kept ? (wv ? wv[y] : (T)1) : (T)0;                                              \
            for (int64_t c = 0; c < K; c++) {                                                      \
                (a)[c] =                                                                           \
                    kept ? lsk * (wv ? wv[c] : (T)1) + (c == y ? (one - lsm) * wy : (T)0) : (T)0;  \
                (A) += (a)[c];                                                                     \
            }                                                                                      \
            den += (double)wy;                                                                     \
        } else {                                                                                   \
            for (int64_t c = 0; c < K; c++) {                                                      \
                (a)[c] = (wv ? wv[c] : (T)1) * (tm[c + j * K] * (one - lsm) + lsk);                \
                (A) += (a)[c];                                                                     \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* scratch: mx, lse (B each) and K coefficients (as double, wide enough for either dtype) */
static double *ceo_scratch(int64_t K, int64_t B)
{
    double *s = pg_scratch((size_t)(2 * B + K + 1) * sizeof(double));
    if (!s) pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for %lld columns", OP, (long long)B);
    return s;
}

static int ceo_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *pb = n->saved[0], *w = ceo_weight(n);
    const pg_tensor *ids = n->ip[0] == CEO_IDS ? n->in[1] : NULL;
    const int64_t K = x->ne[0], B = x->ne[1];
    if ((w && pg_loss_check_weights(OP, "weight", w)) || (ids && ceo_ids_check(n))) return -1;
    double *mx = ceo_scratch(K, B), s = 0, den = 0;
    if (!mx) return -1;
    double *ls = mx + B;
    pg_softmax_cols_lse(x->dtype, pg_data(x), pg_data(pb), K, B, mx, ls);
    PG_DISPATCH(x->dtype, {
        const T *xv = pg_data(x), *wv = w ? pg_data(w) : NULL;
        const T *tm = ids ? NULL : pg_data(n->saved[1]);
        const T one = 1, lsm = (T)n->p[0], lsk = lsm / (T)K;
        T *a = (T *)(ls + B), A;
        for (int64_t j = 0; j < B; j++) {
            CEO_COEFS(T, j, a, A);
            (void)A;
            for (int64_t c = 0; c < K; c++) /* a class of coefficient 0 costs nothing at -Inf */
                if (a[c] != 0) s += (double)a[c] * (ls[j] - ((double)xv[c + j * K] - mx[j]));
        }
    });
    if (!ids) den = (double)B;
    n->p[1] = 1.0 / den; /* all ignored: 0 / 0, NaN as torch */
    pg_scalar_set(n->out, s / den);
    return 0;
}

static int ceo_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *pb = n->saved[0], *w = ceo_weight(n);
    const pg_tensor *ids = n->ip[0] == CEO_IDS ? n->in[1] : NULL;
    void *slot;
    int acc, r = pg_grad_slot_for(x, &slot, &acc);
    if (r <= 0) return r;
    const int64_t K = x->ne[0], B = x->ne[1];
    double *sc = ceo_scratch(K, B), den = 0;
    if (!sc) return -1;
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *pp = pg_data(pb), *wv = w ? pg_data(w) : NULL;
        const T *tm = ids ? NULL : pg_data(n->saved[1]);
        const T one = 1, lsm = (T)n->p[0], lsk = lsm / (T)K;
        const T s = (T)n->p[1] * *(const T *)pg_data(g);
        T *a = (T *)sc, A;
        for (int64_t j = 0; j < B; j++) { /* d/dx of sum_c a[c] (lse - x[c]): A p - a */
            CEO_COEFS(T, j, a, A);
            T *dc = d + j * K;
            const T *pc = pp + j * K;
            if (A == 0) /* nothing weighs on the column (ignored): 0, even when s is Inf */
                PG_STORE_LOOP(acc, K, dc, (T)0);
            else PG_STORE_LOOP(acc, K, dc, (A * pc[i] - a[i]) * s);
        }
    });
    (void)den;
    return 0;
}

static pg_tensor *ceo_run(pg_tensor *logits, pg_tensor *target, int form, pg_tensor *weight,
                          int has_ignore, double ignore_index, double ls)
{
    pg_tensor *pb = pg_new_like(logits, PG_MEM_CATEGORY_SAVED);
    pg_tensor *out = pg_new(logits->dtype, 1, 1, PG_MEM_CATEGORY_OTHER);
    if (!pb || !out) {
        pg_tensor_release(pb);
        pg_tensor_release(out);
        return NULL;
    }
    pg_tensor *in[2] = {logits, target}, *saved[3] = {pb, NULL, NULL};
    int ns = 1;
    if (form == CEO_MATRIX) {
        pg_tensor_retain(target);
        saved[ns++] = target;
    }
    if (weight) {
        pg_tensor_retain(weight);
        saved[ns++] = weight;
    }
    double p[4] = {ls, 0, 0, 0};
    int64_t ip[4] = {form, has_ignore, has_ignore ? (int64_t)ignore_index : 0, weight != NULL};
    return pg_op_run("softmax_ce_loss", ceo_fw, ceo_bw, out, form == CEO_IDS ? 2 : 1, in, p, ip, ns,
                     saved);
}

pg_tensor *pg_softmax_ce_loss_opt(pg_tensor *logits, pg_tensor *target, int target_ids,
                                  pg_tensor *weight, int has_ignore, double ignore_index,
                                  double label_smoothing)
{
    char num[32];
    if (pg_not_live(logits, OP, "logits") || pg_not_live(target, OP, "target")) return NULL;
    if (!(label_smoothing >= 0 && label_smoothing < 1))
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: label_smoothing must be a number in [0, 1), got %s", OP,
                            pg_fmt_num(num, sizeof num, label_smoothing));
    if (has_ignore &&
        !(isfinite(ignore_index) && ignore_index == trunc(ignore_index) &&
          fabs(ignore_index) < 9e15))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: ignore_index must be a whole number, got %s",
                            OP, pg_fmt_num(num, sizeof num, ignore_index));
    if (!weight && !has_ignore && label_smoothing == 0) /* no option: the plain ops' bits */
        return target_ids ? pg_softmax_ce_loss_ids(logits, target)
                          : pg_softmax_ce_loss_any(logits, target);
    const int64_t K = logits->ne[0], B = logits->ne[1];
    if (pg_numel(logits) == 0)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: input %s is empty; a loss needs at least one element", OP,
                            pg_desc(logits));
    const int kind = target_ids ? 1 : pg_softmax_ce_target_kind(logits, target);
    if (kind < 0) return pg_softmax_ce_loss_any(logits, target); /* its shape error */
    if (weight && pg_loss_check_vec(OP, "weight", weight, logits, "logits", K, "class", 0))
        return NULL;
    if (kind == 0) {
        if (has_ignore)
            return pg_fail_null(PG_STATUS_ERR_VALUE,
                                "%s: ignore_index applies to class ids, but target is %s, a matrix "
                                "of the logits' shape (one-hot / probabilities; torch refuses it "
                                "there too); give one class id per column",
                                OP, pg_desc(target));
        if (pg_loss_check_target(OP, logits, target)) return NULL;
        return ceo_run(logits, target, CEO_MATRIX, weight, 0, 0, label_smoothing);
    }
    if (pg_numel(target) != B || (target->ne[0] != 1 && target->ne[1] != 1))
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: logits are %s (%lld columns) but the class ids are %s; give one "
                            "0-based id per column",
                            OP, pg_desc(logits), (long long)B, pg_desc(target));
    if (!target->requires_grad)
        return ceo_run(logits, target, CEO_IDS, weight, has_ignore, ignore_index, label_smoothing);
    /* ids carry no gradient: those of a tensor that requires grad are read as values */
    pg_tensor *ids = pg_tensor_clone(target);
    if (!ids) return NULL;
    pg_tensor *out =
        ceo_run(logits, ids, CEO_IDS, weight, has_ignore, ignore_index, label_smoothing);
    pg_tensor_release(ids);
    return out;
}
