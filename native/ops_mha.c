/* ag_multihead_attention's heads as one op (pg_api_attention.h, pg_mha_heads): the per-head
 * loop the layers composed (row slices, transposed matmul, causal mask, column softmax, dropout
 * drawn transposed, matmul, row concat) with the same kernels, calls and order, so forward and
 * backward give the composed path's bits; one tape node instead of ~8 per head. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <string.h>
#include "pg.h"
#include "rng_internal.h"

static const char *const MHA = "ag_multihead_attention";

typedef struct {
    int dt;
    size_t es;
    int64_t D, dk, H, Sq, Skv;
    double scale, rate;
    int causal, drop;
} mha;

static mha mha_of(const pg_node *n)
{
    mha a;
    a.dt = n->in[0]->dtype;
    a.es = pg_dtype_size(a.dt);
    a.D = n->in[0]->ne[0];
    a.H = n->ip[0];
    a.dk = a.D / a.H;
    a.Sq = n->in[0]->ne[1];
    a.Skv = n->in[1]->ne[1];
    a.scale = n->p[0];
    a.rate = n->p[1];
    a.causal = (int)n->ip[1];
    a.drop = (int)n->ip[2];
    return a;
}

/* x [R, C] masked in place: ag_causal_mask's forward (-Inf) and backward (0) for key i > query j */
static void causal_fill(int dt, void *x, int64_t R, int64_t C, int backward)
{
    PG_DISPATCH(dt, {
        T *p = x;
        const T v = backward ? (T)0 : (T)-INFINITY;
        for (int64_t j = 0; j < C; j++)
            for (int64_t i = j + 1; i < R; i++) p[i + j * R] = v;
    });
}

/* o = p * m elementwise: the dropout node's product (forward and backward alike) */
static void times(int dt, void *o, const void *p, const void *m, int64_t n)
{
    PG_DISPATCH(dt, {
        T *op = o;
        const T *pp = p, *mp = m;
        for (int64_t i = 0; i < n; i++) op[i] = pp[i] * mp[i];
    });
}

/* per head h: St = scale k_h^T q_h [Skv, Sq], causal mask, P = column softmax (saved[0]),
 * dropout mask drawn transposed (saved[1]), out_h = v_h (P m) */
static int mha_fw(pg_node *n)
{
    mha a = mha_of(n);
    pg_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const int64_t nkq = a.Skv * a.Sq, one = a.H == 1;
    /* scratch: q_h, k_h, v_h, the dropped weights and the head's output */
    char *w = one ? NULL : pg_scratch((size_t)(a.dk * (a.Sq + 2 * a.Skv + a.Sq) + nkq) * a.es);
    if (!one && !w) return -1;
    char *qh = w, *kh = qh + (size_t)(a.dk * a.Sq) * a.es, *vh = kh + (size_t)(a.dk * a.Skv) * a.es;
    char *hd = vh + (size_t)(a.dk * a.Skv) * a.es, *pd = hd + (size_t)(a.dk * a.Sq) * a.es;
    if (one) qh = pg_data(Q), kh = pg_data(K), vh = pg_data(V), hd = pg_data(n->out);
    for (int64_t h = 0; h < a.H; h++) {
        char *P = (char *)pg_data(n->saved[0]) + (size_t)(h * nkq) * a.es;
        if (!one) {
            pg_rows_get(a.dt, qh, pg_data(Q), a.D, h * a.dk, a.dk, a.Sq, 0);
            pg_rows_get(a.dt, kh, pg_data(K), a.D, h * a.dk, a.dk, a.Skv, 0);
            pg_rows_get(a.dt, vh, pg_data(V), a.D, h * a.dk, a.dk, a.Skv, 0);
        }
        pg_gemm(a.dt, 1, 0, a.Skv, a.Sq, a.dk, a.scale, kh, a.dk, qh, a.dk, 0.0, P, a.Skv);
        if (a.causal) causal_fill(a.dt, P, a.Skv, a.Sq, 0);
        pg_softmax_cols(a.dt, P, P, a.Skv, a.Sq);
        const char *pw = P;
        if (a.drop) {
            char *m = (char *)pg_data(n->saved[1]) + (size_t)(h * nkq) * a.es;
            if (pg_rng_dropout_fill_raw(NULL, a.dt, m, a.Skv, a.Sq, a.rate, 1)) return -1;
            char *o = one ? pg_scratch((size_t)nkq * a.es) : pd;
            if (!o) return -1;
            times(a.dt, o, P, m, nkq);
            pw = o;
        }
        pg_gemm(a.dt, 0, 0, a.dk, a.Sq, a.Skv, 1.0, vh, a.dk, pw, a.Skv, 0.0, hd, a.dk);
        if (!one) pg_rows_add(a.dt, pg_data(n->out), a.D, h * a.dk, hd, a.dk, a.Sq, 0);
    }
    return 0;
}

/* head h's gradient d [dk, C] into x's rows: a single head writes its GEMM straight into the slot
 * (beta 1 when it holds a sum, as the layer's unsliced path did), else ag_slice_rows's rule */
static void *head_slot(pg_tensor *x, int one, int *acc)
{
    void *s = pg_grad_slot(x, acc);
    if (s && !one && !*acc) memset(s, 0, (size_t)pg_numel(x) * pg_dtype_size(x->dtype));
    return s;
}

/* per head, last to first, in the composed nodes' backward order: dV_h = G_h Pd^T,
 * dPd = v_h^T G_h, dP = dPd m, dSt = softmax's rule, causal zeros, dK_h = scale q_h dSt^T,
 * dQ_h = scale k_h dSt; each added into its input's rows after its own fresh GEMM */
static int mha_bw(pg_node *n, pg_tensor *g)
{
    mha a = mha_of(n);
    pg_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const int64_t nkq = a.Skv * a.Sq, one = a.H == 1;
    const int wq = pg_wants_grad(Q), wk = pg_wants_grad(K), wv = pg_wants_grad(V);
    const size_t nq = (size_t)(a.dk * a.Sq) * a.es, nk = (size_t)(a.dk * a.Skv) * a.es;
    /* scratch: q_h, k_h, v_h, G_h, dQ_h, dK_h, dV_h (not for one head), Pd, dPd, dSt */
    char *w = pg_scratch((one ? 0 : 3 * nq + 4 * nk) + (size_t)(3 * nkq) * a.es);
    if (!w) return -1;
    char *qh = w, *kh = qh + (one ? 0 : nq), *vh = kh + (one ? 0 : nk), *G = vh + (one ? 0 : nk);
    char *dq = G + (one ? 0 : nq), *dkb = dq + (one ? 0 : nq), *dv = dkb + (one ? 0 : nk);
    char *pd = dv + (one ? 0 : nk), *dpd = pd + (size_t)nkq * a.es, *ds = dpd + (size_t)nkq * a.es;
    if (one) qh = pg_data(Q), kh = pg_data(K), vh = pg_data(V), G = pg_data(g);
    int acc;
    for (int64_t h = a.H - 1; h >= 0; h--) {
        const char *P = (const char *)pg_data(n->saved[0]) + (size_t)(h * nkq) * a.es;
        const char *m =
            a.drop ? (const char *)pg_data(n->saved[1]) + (size_t)(h * nkq) * a.es : NULL;
        if (!one) {
            pg_rows_get(a.dt, qh, pg_data(Q), a.D, h * a.dk, a.dk, a.Sq, 0);
            pg_rows_get(a.dt, kh, pg_data(K), a.D, h * a.dk, a.dk, a.Skv, 0);
            pg_rows_get(a.dt, vh, pg_data(V), a.D, h * a.dk, a.dk, a.Skv, 0);
            pg_rows_get(a.dt, G, pg_data(g), a.D, h * a.dk, a.dk, a.Sq, 0);
        }
        const char *pw = P;
        if (m) {
            times(a.dt, pd, P, m, nkq);
            pw = pd;
        }
        if (wv) { /* ag_matmul(v_h, Pd)'s rule for A */
            void *d = one ? head_slot(V, 1, &acc) : dv;
            if (!d) return -1;
            pg_gemm(a.dt, 0, 1, a.dk, a.Skv, a.Sq, 1.0, G, a.dk, pw, a.Skv, one && acc ? 1.0 : 0.0,
                    d, a.dk);
        }
        if (wq || wk) {
            pg_gemm(a.dt, 1, 0, a.Skv, a.Sq, a.dk, 1.0, vh, a.dk, G, a.dk, 0.0, dpd, a.Skv);
            if (m) times(a.dt, dpd, dpd, m, nkq);
            pg_softmax_cols_bw(a.dt, P, dpd, ds, a.Skv, a.Sq, 0);
            if (a.causal) causal_fill(a.dt, ds, a.Skv, a.Sq, 1);
            if (wk) { /* ag_matmul_t(k_h, q_h, ta) for A: scale op(B) G^T */
                void *d = one ? head_slot(K, 1, &acc) : dkb;
                if (!d) return -1;
                pg_gemm(a.dt, 0, 1, a.dk, a.Skv, a.Sq, a.scale, qh, a.dk, ds, a.Skv,
                        one && acc ? 1.0 : 0.0, d, a.dk);
            }
            if (wq) { /* ... for B: scale op(A)^T G */
                void *d = one ? head_slot(Q, 1, &acc) : dq;
                if (!d) return -1;
                pg_gemm(a.dt, 0, 0, a.dk, a.Sq, a.Skv, a.scale, kh, a.dk, ds, a.Skv,
                        one && acc ? 1.0 : 0.0, d, a.dk);
            }
        }
        if (one) continue;
        /* the slices' backward, as their nodes ran: v, k, q */
        pg_tensor *x[3] = {V, K, Q};
        const char *src[3] = {dv, dkb, dq};
        const int want[3] = {wv, wk, wq};
        for (int i = 0; i < 3; i++) {
            if (!want[i]) continue;
            void *s = head_slot(x[i], 0, &acc);
            if (!s) return -1;
            pg_rows_add(a.dt, s, a.D, h * a.dk, src[i], a.dk, x[i]->ne[1], 1);
        }
    }
    return 0;
}

pg_tensor *pg_mha_heads(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads, double scale,
                        int causal, double dropout_rate)
{
    if (pg_not_live(q, MHA, "Q") || pg_not_live(k, MHA, "K") || pg_not_live(v, MHA, "V") ||
        pg_same_dtype(MHA, "Q", q, "K", k) || pg_same_dtype(MHA, "Q", q, "V", v))
        return NULL;
    if (n_heads < 1 || q->ne[0] % n_heads)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: n_heads = %lld must be >= 1 and divide d_model = %lld", MHA,
                            (long long)n_heads, (long long)q->ne[0]);
    if (pg_mha_check_inputs(q->ne[0], q, k, v)) return NULL;
    if (!(dropout_rate >= 0.0 && dropout_rate < 1.0))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: dropout must be in [0, 1), got %g", MHA,
                            dropout_rate);
    if (!isfinite(scale))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: scale must be finite, got %g", MHA, scale);
    const int drop = dropout_rate > 0.0;
    pg_tensor *out = pg_new(q->dtype, q->ne[0], q->ne[1], PG_MEM_CATEGORY_OTHER);
    pg_tensor *saved[2] = {NULL, NULL};
    saved[0] = out ? pg_new(q->dtype, k->ne[1], q->ne[1] * n_heads, PG_MEM_CATEGORY_SAVED) : NULL;
    if (drop && saved[0])
        saved[1] = pg_new(q->dtype, k->ne[1], q->ne[1] * n_heads, PG_MEM_CATEGORY_SAVED);
    if (!out || !saved[0] || (drop && !saved[1])) {
        if (out) pg_tensor_release(out);
        if (saved[0]) pg_tensor_release(saved[0]);
        return NULL;
    }
    pg_tensor *in[3] = {q, k, v};
    double p[4] = {scale, dropout_rate, 0, 0};
    int64_t ip[4] = {n_heads, causal != 0, drop, 0};
    return pg_op_run("mha_heads", mha_fw, mha_bw, out, 3, in, p, ip, 1 + drop, saved);
}
