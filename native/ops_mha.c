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

/* Heads over threads (ag_set_threads), as flash attention's: each head reads its slices and
 * writes only its own rows of the output and of the gradients, and its own block of the saved
 * weights and masks, so splitting the heads gives the one thread's bits for any thread count;
 * the products and softmax inside a head run on its thread alone (the pool refuses nested
 * jobs). The masks are drawn beforehand, head by head: the random stream's order of old. Each
 * head gets its own slot of the scratch (H slots when split, one when not); split when a head
 * has Sq Skv dk >= 2^19 (flash attention's threshold: about 30 us a head). */
typedef struct {
    const mha *a;
    pg_node *n;
    const char *g;        /* bw: the output's gradient */
    char *sv, *sk, *sq;   /* bw: the gradient slots (NULL: not wanted) */
    int accv, acck, accq; /* bw, one head: whether they hold a sum */
    size_t slot;          /* bytes of scratch per head */
    char *buf;
    int one_slot;
} mha_job;
static int mha_heads_run(mha_job *J, void (*fn)(void *, int64_t, int64_t))
{
    const mha *a = J->a;
    double per = (double)a->Sq * (double)a->Skv * (double)a->dk;
    int split = pg_get_threads() > 1 && a->H > 1 && per * 2 >= 1048576.0;
    J->one_slot = !split;
    J->buf = pg_scratch(J->slot * (size_t)(split ? a->H : 1) + 1); /* + 1: never NULL */
    if (!J->buf) return -1;
    if (split) pg_par_for(a->H, 1, fn, J);
    else fn(J, 0, a->H);
    return 0;
}
static char *mha_slot(const mha_job *J, int64_t h)
{
    return J->buf + (J->one_slot ? 0 : h) * J->slot;
}

/* per head h: St = scale k_h^T q_h [Skv, Sq], causal mask, P = column softmax (saved[0]),
 * times the dropout mask (saved[1], drawn transposed), out_h = v_h (P m) */
static void fw_heads(void *ctx, int64_t h0, int64_t h1)
{
    const mha_job *J = ctx;
    const mha *a = J->a;
    pg_node *n = J->n;
    pg_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const int64_t nkq = a->Skv * a->Sq, one = a->H == 1;
    const size_t es = a->es;
    for (int64_t h = h0; h < h1; h++) {
        /* scratch: q_h, k_h, v_h, the head's output, the dropped weights */
        char *qh = mha_slot(J, h), *kh, *vh, *hd, *pd = qh;
        if (one) qh = pg_data(Q), kh = pg_data(K), vh = pg_data(V), hd = pg_data(n->out);
        else {
            kh = qh + (size_t)(a->dk * a->Sq) * es, vh = kh + (size_t)(a->dk * a->Skv) * es;
            hd = vh + (size_t)(a->dk * a->Skv) * es, pd = hd + (size_t)(a->dk * a->Sq) * es;
        }
        char *P = (char *)pg_data(n->saved[0]) + (size_t)(h * nkq) * es;
        if (!one) {
            pg_rows_get(a->dt, qh, pg_data(Q), a->D, h * a->dk, a->dk, a->Sq, 0);
            pg_rows_get(a->dt, kh, pg_data(K), a->D, h * a->dk, a->dk, a->Skv, 0);
            pg_rows_get(a->dt, vh, pg_data(V), a->D, h * a->dk, a->dk, a->Skv, 0);
        }
        pg_gemm(a->dt, 1, 0, a->Skv, a->Sq, a->dk, a->scale, kh, a->dk, qh, a->dk, 0.0, P, a->Skv);
        if (a->causal) causal_fill(a->dt, P, a->Skv, a->Sq, 0);
        pg_softmax_cols(a->dt, P, P, a->Skv, a->Sq);
        const char *pw = P;
        if (a->drop) {
            times(a->dt, pd, P, (char *)pg_data(n->saved[1]) + (size_t)(h * nkq) * es, nkq);
            pw = pd;
        }
        pg_gemm(a->dt, 0, 0, a->dk, a->Sq, a->Skv, 1.0, vh, a->dk, pw, a->Skv, 0.0, hd, a->dk);
        if (!one) pg_rows_add(a->dt, pg_data(n->out), a->D, h * a->dk, hd, a->dk, a->Sq, 0);
    }
}

static int mha_fw(pg_node *n)
{
    mha a = mha_of(n);
    const int64_t nkq = a.Skv * a.Sq;
    /* every head's mask first, in head order: the stream's draws of the head loop */
    for (int64_t h = 0; a.drop && h < a.H; h++) {
        char *m = (char *)pg_data(n->saved[1]) + (size_t)(h * nkq) * a.es;
        if (pg_rng_dropout_fill_raw(NULL, a.dt, m, a.Skv, a.Sq, a.rate, 1)) return -1;
    }
    mha_job J = {&a, n, NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL, 0};
    J.slot = (size_t)((a.H == 1 ? 0 : a.dk * (2 * a.Sq + 2 * a.Skv)) + (a.drop ? nkq : 0)) * a.es;
    return mha_heads_run(&J, fw_heads);
}

/* head h's gradient d [dk, C] into x's rows: a single head writes its GEMM straight into the slot
 * (beta 1 when it holds a sum, as the layer's unsliced path did), else ag_slice_rows's rule */
static void *head_slot(pg_tensor *x, int one, int *acc)
{
    void *s = pg_grad_slot(x, acc);
    if (s && !one && !*acc) memset(s, 0, (size_t)pg_numel(x) * pg_dtype_size(x->dtype));
    return s;
}

/* per head, in the composed nodes' backward order: dV_h = G_h Pd^T, dPd = v_h^T G_h,
 * dP = dPd m, dSt = softmax's rule, causal zeros, dK_h = scale q_h dSt^T, dQ_h = scale k_h dSt;
 * each added into its input's rows after its own fresh GEMM (v, k, q: q, k, v may be one
 * tensor, whose rows of head h then take the three in that order whatever the split) */
static void bw_heads(void *ctx, int64_t h0, int64_t h1)
{
    const mha_job *J = ctx;
    const mha *a = J->a;
    pg_node *n = J->n;
    pg_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const int64_t nkq = a->Skv * a->Sq, one = a->H == 1;
    const size_t es = a->es, nq = (size_t)(a->dk * a->Sq) * es, nk = (size_t)(a->dk * a->Skv) * es;
    for (int64_t h = h1 - 1; h >= h0; h--) {
        /* scratch: q_h, k_h, v_h, G_h, dQ_h, dK_h, dV_h (not for one head), Pd, dPd, dSt */
        char *qh = mha_slot(J, h), *kh = qh + (one ? 0 : nq), *vh = kh + (one ? 0 : nk);
        char *G = vh + (one ? 0 : nk), *dq = G + (one ? 0 : nq), *dkb = dq + (one ? 0 : nq);
        char *dv = dkb + (one ? 0 : nk), *pd = dv + (one ? 0 : nk);
        char *dpd = pd + (size_t)nkq * es, *ds = dpd + (size_t)nkq * es;
        if (one) qh = pg_data(Q), kh = pg_data(K), vh = pg_data(V), G = (char *)J->g;
        if (one) dq = J->sq, dkb = J->sk, dv = J->sv;
        const char *P = (const char *)pg_data(n->saved[0]) + (size_t)(h * nkq) * es;
        const char *m =
            a->drop ? (const char *)pg_data(n->saved[1]) + (size_t)(h * nkq) * es : NULL;
        if (!one) {
            pg_rows_get(a->dt, qh, pg_data(Q), a->D, h * a->dk, a->dk, a->Sq, 0);
            pg_rows_get(a->dt, kh, pg_data(K), a->D, h * a->dk, a->dk, a->Skv, 0);
            pg_rows_get(a->dt, vh, pg_data(V), a->D, h * a->dk, a->dk, a->Skv, 0);
            pg_rows_get(a->dt, G, J->g, a->D, h * a->dk, a->dk, a->Sq, 0);
        }
        const char *pw = P;
        if (m) {
            times(a->dt, pd, P, m, nkq);
            pw = pd;
        }
        if (J->sv) /* ag_matmul(v_h, Pd)'s rule for A */
            pg_gemm(a->dt, 0, 1, a->dk, a->Skv, a->Sq, 1.0, G, a->dk, pw, a->Skv,
                    one && J->accv ? 1.0 : 0.0, dv, a->dk);
        if (J->sq || J->sk) {
            pg_gemm(a->dt, 1, 0, a->Skv, a->Sq, a->dk, 1.0, vh, a->dk, G, a->dk, 0.0, dpd, a->Skv);
            if (m) times(a->dt, dpd, dpd, m, nkq);
            pg_softmax_cols_bw(a->dt, P, dpd, ds, a->Skv, a->Sq, 0);
            if (a->causal) causal_fill(a->dt, ds, a->Skv, a->Sq, 1);
            if (J->sk) /* ag_matmul_t(k_h, q_h, ta) for A: scale op(B) G^T */
                pg_gemm(a->dt, 0, 1, a->dk, a->Skv, a->Sq, a->scale, qh, a->dk, ds, a->Skv,
                        one && J->acck ? 1.0 : 0.0, dkb, a->dk);
            if (J->sq) /* ... for B: scale op(A)^T G */
                pg_gemm(a->dt, 0, 0, a->dk, a->Sq, a->Skv, a->scale, kh, a->dk, ds, a->Skv,
                        one && J->accq ? 1.0 : 0.0, dq, a->dk);
        }
        if (one) continue;
        /* the slices' backward, as their nodes ran: v, k, q */
        char *s[3] = {J->sv, J->sk, J->sq};
        const char *src[3] = {dv, dkb, dq};
        const int64_t C[3] = {V->ne[1], K->ne[1], Q->ne[1]};
        for (int i = 0; i < 3; i++)
            if (s[i]) pg_rows_add(a->dt, s[i], a->D, h * a->dk, src[i], a->dk, C[i], 1);
    }
}

static int mha_bw(pg_node *n, pg_tensor *g)
{
    mha a = mha_of(n);
    pg_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const int one = a.H == 1;
    mha_job J = {&a, n, pg_data(g), NULL, NULL, NULL, 0, 0, 0, 0, NULL, 0};
    /* the slots before the heads, in the order the head loop first asked for them (v, k, q):
     * the same fresh / summing states (q, k, v may be one tensor) */
    if (pg_wants_grad(V) && !(J.sv = head_slot(V, one, &J.accv))) return -1;
    if (pg_wants_grad(K) && !(J.sk = head_slot(K, one, &J.acck))) return -1;
    if (pg_wants_grad(Q) && !(J.sq = head_slot(Q, one, &J.accq))) return -1;
    const size_t nq = (size_t)(a.dk * a.Sq), nk = (size_t)(a.dk * a.Skv);
    J.slot = ((one ? 0 : 3 * nq + 4 * nk) + (size_t)(3 * a.Skv * a.Sq)) * a.es;
    return mha_heads_run(&J, bw_heads);
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
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: dropout must be in [0, 1), got %s", MHA,
                            pg_num(dropout_rate));
    if (!isfinite(scale))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: scale must be finite, got %s", MHA,
                            pg_num(scale));
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
