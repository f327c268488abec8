/* Fused multi-head attention (ag_flash_attention, ggmlR 0.8.6 §3; see pg_api_attention.h).
 * Per head and per block of queries: the scores by one GEMM on the heads' rows in place (no
 * head copies), a column softmax, the values by a second GEMM. The node keeps the inputs, the
 * mask and each query's max and sum of exp per head; the backward recomputes P from them with
 * the same operations, so it sees the forward's P bit for bit. Every loop runs in a fixed order:
 * the same bits on every run, in R and in Python. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <string.h>
#include "pg.h"

static const char *const OP = "ag_flash_attention";

int pg_flash_attention_check(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads, int mask_nd,
                             int64_t mask_nrow, int64_t mask_ncol, int causal)
{
    if (pg_not_live(q, OP, "q") || pg_not_live(k, OP, "k") || pg_not_live(v, OP, "v")) return -1;
    const long long d = (long long)q->ne[0], sq = (long long)q->ne[1];
    if (n_heads < 1 || q->ne[0] % n_heads)
        return pg_fail(
            PG_STATUS_ERR_VALUE,
            "ggmlR: ag_flash_attention() needs n_heads to divide d_model (%lld %%%% %lld != 0).", d,
            (long long)n_heads);
    if (k->ne[0] != q->ne[0] || v->ne[0] != q->ne[0])
        return pg_fail(
            PG_STATUS_ERR_SHAPE,
            "ggmlR: ag_flash_attention() needs q, k and v to share d_model (got %lld, %lld, %lld).",
            d, (long long)k->ne[0], (long long)v->ne[0]);
    if (k->ne[1] != v->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ggmlR: ag_flash_attention() needs k and v to share a sequence length (got "
                       "%lld and %lld).",
                       (long long)k->ne[1], (long long)v->ne[1]);
    if (mask_nd == 0) return 0;
    if (causal)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ggmlR: ag_flash_attention() takes either `mask` or `causal`, not both.");
    if (mask_nd != 2)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ggmlR: ag_flash_attention() needs `mask` to be a matrix.");
    if (mask_nrow != k->ne[1] || mask_ncol != q->ne[1])
        return pg_fail(
            PG_STATUS_ERR_SHAPE,
            "ggmlR: ag_flash_attention() needs `mask` to be [seq_kv, seq_q] = [%lld, %lld], got "
            "[%lld, %lld]. Note the orientation: keys index the ROWS, queries the columns.",
            (long long)k->ne[1], sq, (long long)mask_nrow, (long long)mask_ncol);
    return 0;
}

/* ag_multihead_attention's forward: every input has d_model rows, k and v one column count */
int pg_mha_check_sizes(int64_t d_model, int64_t n_heads)
{
    if (d_model < 1 || n_heads < 1)
        return pg_fail(
            PG_STATUS_ERR_VALUE,
            "ag_multihead_attention: d_model and n_heads must be >= 1, got %lld and %lld",
            (long long)d_model, (long long)n_heads);
    if (d_model % n_heads)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_multihead_attention: d_model (%lld) must be divisible by n_heads (%lld)",
                       (long long)d_model, (long long)n_heads);
    return 0;
}

int pg_mha_check_inputs(int64_t d_model, pg_tensor *q, pg_tensor *k, pg_tensor *v)
{
    static const char *const MHA = "ag_multihead_attention";
    if (pg_not_live(q, MHA, "q") || pg_not_live(k, MHA, "k") || pg_not_live(v, MHA, "v")) return -1;
    const pg_tensor *in[3] = {q, k, v};
    const char *name[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        if (in[i]->ne[0] != d_model)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: %s is %s but d_model = %lld; inputs are [d_model, seq] (one "
                           "column per token)",
                           MHA, name[i], pg_desc(in[i]), (long long)d_model);
    if (k->ne[1] != v->ne[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: k is %s and v is %s; they need the same number of columns (tokens)",
                       MHA, pg_desc(k), pg_desc(v));
    return 0;
}

typedef struct {
    int dt;
    int64_t D, dh, H, Sq, Skv, nb;
    double scale;
    int causal;
    const void *mask; /* [Skv, Sq] or NULL */
} att;

/* Queries per block: about 16384 scores per block (64-128 KiB, cache-sized), at least 32 queries;
 * under causal 32, so the keys no query of a block sees are skipped (measured best). A function
 * of the shapes only: every run blocks alike. */
static att att_of(const pg_node *n)
{
    att a;
    const pg_tensor *q = n->in[0], *k = n->in[1];
    a.dt = q->dtype;
    a.D = q->ne[0];
    a.H = n->ip[0];
    a.dh = a.D / a.H;
    a.Sq = q->ne[1];
    a.Skv = k->ne[1];
    a.scale = n->p[0];
    a.causal = (int)n->ip[1];
    a.mask = n->n_saved > 1 ? pg_data(n->saved[1]) : NULL;
    int64_t nb = a.Skv > 0 ? 16384 / a.Skv : 64;
    if (nb < 32 || a.causal) nb = 32;
    if (nb > a.Sq) nb = a.Sq;
    a.nb = nb < 1 ? 1 : nb;
    return a;
}

/* Column max over 16 lanes (exact in any order; NaN never wins), as pg_softmax_cols. */
#define COLMAX(T, c, R, mx)                                                                        \
    do {                                                                                           \
        mx = (T)-INFINITY;                                                                         \
        if ((R) < 16) {                                                                            \
            for (int64_t i_ = 0; i_ < (R); i_++) mx = (c)[i_] > mx ? (c)[i_] : mx;                 \
        } else {                                                                                   \
            T lm_[16];                                                                             \
            for (int l_ = 0; l_ < 16; l_++) lm_[l_] = (T)-INFINITY;                                \
            int64_t i0_ = 0;                                                                       \
            for (; i0_ + 16 <= (R); i0_ += 16)                                                     \
                for (int l_ = 0; l_ < 16; l_++)                                                    \
                    lm_[l_] = (c)[i0_ + l_] > lm_[l_] ? (c)[i0_ + l_] : lm_[l_];                   \
            for (int l_ = 0; i0_ + l_ < (R); l_++)                                                 \
                lm_[l_] = (c)[i0_ + l_] > lm_[l_] ? (c)[i0_ + l_] : lm_[l_];                       \
            for (int l_ = 0; l_ < 16; l_++) mx = lm_[l_] > mx ? lm_[l_] : mx;                      \
        }                                                                                          \
    } while (0)

/* Keys a block of queries j0 .. j0 + bn - 1 can see: all of them, or under causal only the first
 * j0 + bn (the rest would be exact zeros in P: skipped by every product). */
static int64_t keys_of(const att *a, int64_t j0, int64_t bn)
{
    return a->causal && j0 + bn < a->Skv ? j0 + bn : a->Skv;
}

/* P[Skv, bn] of head h for queries j0 .. j0 + bn - 1: St = scale k_h^T q_h + mask (causal: -Inf
 * past the query), then exp(St - max) / sum per column. The forward (fw) stores each column's
 * max and sum in st ([2H, Sq]: rows 2h, 2h + 1); the backward reads them back, so it repeats the
 * forward's operations exactly. A column with every key blocked (max -Inf) becomes 0. */
static void block_probs(const att *a, int64_t h, int64_t j0, int64_t bn, const void *q,
                        const void *k, void *P, void *st, int fw)
{
    const int64_t D = a->D, dh = a->dh, R = keys_of(a, j0, bn), H2 = 2 * a->H;
    PG_DISPATCH(a->dt, {
        T *S = P, *sv = st;
        pg_gemm(a->dt, 1, 0, R, bn, dh, a->scale, (const T *)k + h * dh, D,
                (const T *)q + h * dh + j0 * D, D, 0.0, S, R);
        for (int64_t jj = 0; jj < bn; jj++) {
            T *c = S + jj * R;
            const int64_t j = j0 + jj;
            if (a->mask) {
                const T *mc = (const T *)a->mask + j * a->Skv; /* R = Skv: a mask excludes causal */
                for (int64_t i = 0; i < R; i++) c[i] += mc[i];
            }
            if (a->causal)
                for (int64_t i = j + 1; i < R; i++) c[i] = (T)-INFINITY;
            T mx;
            if (fw) {
                COLMAX(T, c, R, mx);
                sv[2 * h + j * H2] = mx;
            } else mx = sv[2 * h + j * H2];
            if (mx == (T)-INFINITY) {
                for (int64_t i = 0; i < R; i++) c[i] = (T)-INFINITY;
            } else {
                for (int64_t i = 0; i < R; i++) c[i] -= mx;
            }
        }
        pg_vexp(a->dt, S, S, R * bn);
        for (int64_t jj = 0; jj < bn; jj++) {
            T *c = S + jj * R;
            const int64_t j = j0 + jj;
            T s;
            if (fw) {
                s = (T)pg_vsum(a->dt, c, R);
                sv[2 * h + 1 + j * H2] = s;
            } else s = sv[2 * h + 1 + j * H2];
            if (sv[2 * h + j * H2] == (T)-INFINITY) continue; /* all zeros already */
            for (int64_t i = 0; i < R; i++) c[i] /= s;
        }
    });
}

/* Heads over threads (ag_set_threads): each head writes only its own rows of the output, the
 * statistics and the gradients, in the one order of its query blocks, so splitting the heads
 * gives the same bits for any thread count (the products inside run on their thread alone).
 * Each head gets its own slot of the scratch (H slots when split, one when not). Split when a
 * head has about 2^20 multiply-adds or more. */
typedef struct {
    const att *a;
    const void *q, *k, *v, *g, *o;
    void *dq, *dk, *dv, *st; /* fw: dv is the output */
    size_t slot;             /* bytes of scratch per head */
    char *buf;
    int one_slot;
} att_job;
static int att_heads(att_job *J, void (*fn)(void *, int64_t, int64_t))
{
    const att *a = J->a;
    double per = (double)a->Sq * (double)a->Skv * (double)a->dh;
    int split = pg_get_threads() > 1 && a->H > 1 && per * 2 >= 1048576.0;
    J->one_slot = !split;
    J->buf = pg_scratch(J->slot * (size_t)(split ? a->H : 1));
    if (!J->buf) return -1;
    if (split) pg_par_for(a->H, 1, fn, J);
    else fn(J, 0, a->H);
    return 0;
}
static char *att_slot(const att_job *J, int64_t h)
{
    return J->buf + (J->one_slot ? 0 : h) * J->slot;
}

static void fw_heads(void *ctx, int64_t h0, int64_t h1)
{
    const att_job *J = ctx;
    const att *a = J->a;
    for (int64_t h = h0; h < h1; h++) {
        void *P = att_slot(J, h);
        for (int64_t j0 = 0; j0 < a->Sq; j0 += a->nb) {
            const int64_t bn = a->Sq - j0 < a->nb ? a->Sq - j0 : a->nb;
            const int64_t Re = keys_of(a, j0, bn);
            block_probs(a, h, j0, bn, J->q, J->k, P, J->st, 1);
            PG_DISPATCH(a->dt, {
                pg_gemm(a->dt, 0, 0, a->dh, bn, Re, 1.0, (const T *)J->v + h * a->dh, a->D, P, Re,
                        0.0, (T *)J->dv + h * a->dh + j0 * a->D, a->D);
            });
        }
    }
}

/* in: q, k, v; saved: stats [2H, Sq], mask (optional); p[0] scale; ip: n_heads, causal */
static int flash_fw(pg_node *n)
{
    const att a = att_of(n);
    void *out = pg_data(n->out), *st = pg_data(n->saved[0]);
    const void *q = pg_data(n->in[0]), *k = pg_data(n->in[1]), *v = pg_data(n->in[2]);
    const size_t esz = pg_dtype_size(a.dt);
    if (a.Skv == 0 || a.dh == 0) { /* no keys: every query blocked */
        memset(out, 0, (size_t)(a.D * a.Sq) * esz);
        PG_DISPATCH(a.dt, {
            T *sv = st;
            for (int64_t i = 0; i < 2 * a.H * a.Sq; i++) sv[i] = (i % 2) ? (T)0 : (T)-INFINITY;
        });
        return 0;
    }
    att_job J = {&a, q, k, v, NULL, NULL, NULL, NULL, out, st, (size_t)(a.Skv * a.nb) * esz};
    if (att_heads(&J, fw_heads)) return -1;
    return 0;
}

/* the gradient slot of t zeroed when fresh, so every product below adds into it (q, k, v may be
 * one tensor); NULL when t needs no gradient, *fail on allocation failure */
static void *zeroed_slot(pg_tensor *t, int *fail)
{
    if (!pg_wants_grad(t)) return NULL;
    int acc;
    void *d = pg_grad_slot(t, &acc);
    if (!d) {
        *fail = 1;
        return NULL;
    }
    if (!acc) memset(d, 0, (size_t)pg_numel(t) * pg_dtype_size(t->dtype));
    return d;
}

static void bw_heads(void *ctx, int64_t h0, int64_t h1)
{
    const att_job *J = ctx;
    const att *a = J->a;
    const int64_t D = a->D, dh = a->dh;
    const void *q = J->q, *k = J->k, *v = J->v, *st = J->st;
    void *dq = J->dq, *dk = J->dk, *dv = J->dv;
    PG_DISPATCH(a->dt, {
        const T *gp = J->g, *op = J->o;
        for (int64_t h = h0; h < h1; h++) {
            char *buf = att_slot(J, h);
            void *P = buf;
            T *ds = (T *)(buf + J->slot / 2);
            const T *pp = P;
            for (int64_t j0 = 0; j0 < a->Sq; j0 += a->nb) {
                const int64_t bn = a->Sq - j0 < a->nb ? a->Sq - j0 : a->nb;
                const T *G = gp + h * dh + j0 * D;
                const int64_t R = keys_of(a, j0, bn);
                block_probs(a, h, j0, bn, q, k, P, (void *)st, 0);
                if (dv) /* dV_h += G P^T */
                    pg_gemm(a->dt, 0, 1, dh, R, bn, 1.0, G, D, P, R, 1.0, (T *)dv + h * dh, D);
                if (!dq && !dk) continue;
                /* dPt = v_h^T G, then dSt = P (dPt - G . out) column by column */
                pg_gemm(a->dt, 1, 0, R, bn, dh, 1.0, (const T *)v + h * dh, D, G, D, 0.0, ds, R);
                for (int64_t jj = 0; jj < bn; jj++) {
                    const T *gc = G + jj * D, *oc = op + h * dh + (j0 + jj) * D, *pc = pp + jj * R;
                    T *dc = ds + jj * R;
                    double dot = 0;
                    for (int64_t i = 0; i < dh; i++) dot += (double)gc[i] * (double)oc[i];
                    const T dj = (T)dot;
                    for (int64_t i = 0; i < R; i++) dc[i] = pc[i] * (dc[i] - dj);
                }
                if (dq) /* dQ_h[, block] += scale k_h dSt */
                    pg_gemm(a->dt, 0, 0, dh, bn, R, a->scale, (const T *)k + h * dh, D, ds, R, 1.0,
                            (T *)dq + h * dh + j0 * D, D);
                if (dk) /* dK_h += scale q_h[, block] dSt^T */
                    pg_gemm(a->dt, 0, 1, dh, R, bn, a->scale, (const T *)q + h * dh + j0 * D, D, ds,
                            R, 1.0, (T *)dk + h * dh, D);
            }
        }
    });
}

static int flash_bw(pg_node *n, pg_tensor *g)
{
    const att a = att_of(n);
    int fail = 0;
    void *dq = zeroed_slot(n->in[0], &fail);
    void *dk = fail ? NULL : zeroed_slot(n->in[1], &fail);
    void *dv = fail ? NULL : zeroed_slot(n->in[2], &fail);
    if (fail) return -1;
    if (a.Skv == 0 || a.dh == 0 || a.Sq == 0) return 0; /* every gradient is 0 */
    const void *q = pg_data(n->in[0]), *k = pg_data(n->in[1]), *v = pg_data(n->in[2]);
    void *st = pg_data(n->saved[0]);
    const size_t esz = pg_dtype_size(a.dt);
    att_job J = {
        &a, q, k, v, pg_data(g), pg_data(n->out), dq, dk, dv, st, (size_t)(2 * a.Skv * a.nb) * esz};
    if (att_heads(&J, bw_heads)) return -1;
    return 0;
}

pg_tensor *pg_flash_attention(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads,
                              double scale, pg_tensor *mask, int causal)
{
    if (mask && pg_not_live(mask, OP, "mask")) return NULL;
    if (pg_flash_attention_check(q, k, v, n_heads, mask ? 2 : 0, mask ? mask->ne[0] : 0,
                                 mask ? mask->ne[1] : 0, causal))
        return NULL;
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "%s: q is %s, k is %s and v is %s; they need one dtype", OP, pg_desc(q),
                            pg_desc(k), pg_desc(v));
    if (mask && mask->dtype != q->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE, "%s: mask is %s but q is %s; it needs q's dtype",
                            OP, pg_desc(mask), pg_desc(q));
    const int64_t H = n_heads, dh = q->ne[0] / H;
    if (isnan(scale)) scale = 1.0 / sqrt((double)dh);
    pg_tensor *out = pg_new(q->dtype, q->ne[0], q->ne[1], PG_MEM_CATEGORY_OTHER);
    pg_tensor *st = pg_new(q->dtype, 2 * H, q->ne[1], PG_MEM_CATEGORY_SAVED);
    if (!out || !st) {
        pg_tensor_release(out);
        pg_tensor_release(st);
        return NULL;
    }
    if (mask) pg_tensor_retain(mask); /* saved, not an input: it gets no gradient */
    pg_tensor *in[3] = {q, k, v}, *saved[2] = {st, mask};
    double p[4] = {scale, 0, 0, 0};
    int64_t ip[4] = {H, causal != 0, 0, 0};
    /* no label: ggmlR's CPU flash-attention node has none (ag_tape_memory: "<closure only>") */
    return pg_op_run("", flash_fw, flash_bw, out, 3, in, p, ip, mask ? 2 : 1, saved);
}
