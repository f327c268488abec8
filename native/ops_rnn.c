/* Recurrent layers' core (pg_api_rnn.h): the whole-sequence LSTM, GRU and tanh/relu RNN op with
 * its checks and forward, and the per-step join of two sequence batches (bidirectional). The
 * backward (backpropagation through time) is in ops_rnn_bw.c.
 *
 * A sequence batch [F*T, N] is, as a matrix, [F, T*N] with column t + T*n: so the input
 * projection of every step is one GEMM, and step t of all sequences is the strided matrix at
 * column t with leading dimension F*T: each step's h GEMM reads the previous states in place. */
#include "pg_fp.h" /* first: no FMA contraction, one vectoriser model (R = Python bits) */
#include <string.h>
#include "pg.h"
#include "ops_rnn_internal.h"

const char *pg_rnn_fn(int mode)
{
    return mode == PG_RNN_LSTM ? "ag_lstm" : mode == PG_RNN_GRU ? "ag_gru" : "ag_rnn";
}

/* in: x, W_ih, W_hh, b ([2GH, 1]: b_ih over b_hh, or NULL), s0 ([H, N], the LSTM's [2H, N]: h0
 * over c0, or NULL); ip: mode, F, reverse, H. saved[0] A [GH, T*N]: the gates' activations (the
 * LSTM's i, f, g, o; the GRU's r, z, n), saved[1] E [H, T*N]: the LSTM's cells, the GRU's
 * W_hn h + b_hn. The plain RNN saves nothing: its output is all backward needs. */
static int rnn_fw(pg_node *nd)
{
    pg_rnn_dims d;
    pg_rnn_dims_of(nd, &d);
    const int64_t H = d.H, GH = d.GH, L = d.L, N = d.N, TN = L * N;
    pg_tensor *x = nd->in[0], *b = nd->in[3], *s0 = nd->in[4];
    const int mode = d.mode, dt = x->dtype;
    void *A = d.rnn ? pg_data(nd->out) : pg_data(nd->saved[0]);
    const size_t es = pg_dtype_size(dt);
    /* a step's W_hh h (the GRU's), the biases, the last states contiguous (the GEMM reads them
     * faster than at the output's stride, a multiple of 4 KiB) */
    void *tmp = malloc((size_t)(GH * N + GH + H * N) * es);
    if (!tmp) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory (a step's gates)", d.fn);
    /* every step's input projection at once */
    pg_gemm(dt, 0, 0, GH, TN, d.F, 1.0, pg_data(nd->in[1]), GH, pg_data(x), d.F, 0.0, A, GH);
    PG_DISPATCH(dt, {
        T *a0 = A, *q0 = tmp, *o0 = pg_data(nd->out), *hb = q0 + GH * N + GH;
        T *e0 = nd->n_saved > 1 ? pg_data(nd->saved[1]) : NULL;
        T *tc0 = nd->n_saved > 2 ? pg_data(nd->saved[2]) : NULL;
        const T *bi = b ? pg_data(b) : NULL, *bh = bi ? bi + GH : NULL;
        const T *sp = s0 ? pg_data(s0) : NULL;
        const int64_t sld = s0 ? s0->ne[0] : 0;
        T *bb = bi ? q0 + GH * N : NULL; /* b_ih + b_hh; the GRU's b_hn sits inside r * (.) */
        for (int64_t k = 0; bb && k < GH; k++)
            bb[k] = bi[k] + (mode == PG_RNN_GRU && k >= 2 * H ? 0 : bh[k]);
        /* the LSTM in one pass per column (vmath.c), its W_hh h apart and contiguous (at the
         * gates' stride, a multiple of 4 KiB, the GEMM's columns share a few cache sets):
         * (a + bb) + q is the sum the GEMM's beta 1 forms, where the built-in kernel sums all
         * of k in one block (H <= its KC, 256) and n > 1 (n = 1 takes the plain loops) */
        const int fuse = mode == PG_RNN_LSTM && N > 1 && H <= 256 && pg_gemm_builtin(dt);
        for (int64_t s = 0; s < L; s++) {
            const int64_t t = d.rev ? L - 1 - s : s, tp = d.rev ? t + 1 : t - 1;
            const T *hp = s ? o0 + H * tp : sp; /* the previous states, column n at ld * n */
            const int64_t ld = s ? d.OS : sld;
            const T *hg = s ? hb : sp; /* the same, for the GEMM */
            const int64_t ldg = s ? H : sld;
            /* the LSTM's and the plain RNN's W_hh h adds straight onto the gates (beta 1: the
             * same sum a + q); the GRU keeps its n part apart */
            const void *Wh = pg_data(nd->in[2]);
            if (fuse) {
                if (hp) pg_gemm(dt, 0, 0, GH, N, H, 1.0, Wh, GH, hg, ldg, 0.0, q0, GH);
                else memset(q0, 0, (size_t)(GH * N) * es);
                for (int64_t n = 0; n < N; n++) {
                    T *c = e0 + H * (t + L * n);
                    const T *cp = s ? e0 + H * (tp + L * n) : sp ? sp + sld * n + H : NULL;
                    pg_vlstm_cell(dt, a0 + GH * (t + L * n), bb, q0 + GH * n, cp, c,
                                  tc0 + H * (t + L * n), o0 + H * t + d.OS * n, hb + H * n, H);
                    if (d.cell && s == L - 1) memcpy(o0 + H * L + d.OS * n, c, (size_t)H * es);
                }
                continue;
            }
            for (int64_t n = 0; bb && n < N; n++) { /* the biases, while the step's gates are hot */
                T *a = a0 + GH * (t + L * n);
                for (int64_t k = 0; k < GH; k++) a[k] += bb[k];
            }
            if (hp && mode != PG_RNN_GRU)
                pg_gemm(dt, 0, 0, GH, N, H, 1.0, Wh, GH, hg, ldg, 1.0, a0 + GH * t, GH * L);
            else if (hp) pg_gemm(dt, 0, 0, GH, N, H, 1.0, Wh, GH, hg, ldg, 0.0, q0, GH);
            else memset(q0, 0, (size_t)(GH * N) * es);
            for (int64_t n = 0; n < N; n++) {
                T *a = a0 + GH * (t + L * n), *q = q0 + GH * n, *h = o0 + H * t + d.OS * n;
                const T *hpn = hp ? hp + ld * n : NULL;
                if (mode == PG_RNN_LSTM) {
                    if (!hp)
                        for (int64_t k = 0; k < GH; k++) a[k] += q[k];
                    pg_vsigmoid(dt, a, a, 2 * H);
                    pg_vtanh(dt, a + 2 * H, a + 2 * H, H);
                    pg_vsigmoid(dt, a + 3 * H, a + 3 * H, H);
                    T *c = e0 + H * (t + L * n);
                    const T *cp = s ? e0 + H * (tp + L * n) : sp ? sp + sld * n + H : NULL;
                    for (int64_t j = 0; j < H; j++)
                        c[j] = (cp ? a[H + j] * cp[j] : 0) + a[j] * a[2 * H + j];
                    T *tc = tc0 + H * (t + L * n); /* tanh(c), kept for backward */
                    pg_vtanh(dt, c, tc, H);
                    for (int64_t j = 0; j < H; j++) h[j] = a[3 * H + j] * tc[j];
                    if (d.cell && s == L - 1) memcpy(o0 + H * L + d.OS * n, c, (size_t)H * es);
                } else if (mode == PG_RNN_GRU) {
                    T *hn = e0 + H * (t + L * n);
                    for (int64_t j = 0; j < H; j++) hn[j] = q[2 * H + j] + (bh ? bh[2 * H + j] : 0);
                    for (int64_t k = 0; k < 2 * H; k++) a[k] += q[k];
                    pg_vsigmoid(dt, a, a, 2 * H);
                    for (int64_t j = 0; j < H; j++) a[2 * H + j] += a[j] * hn[j];
                    pg_vtanh(dt, a + 2 * H, a + 2 * H, H);
                    for (int64_t j = 0; j < H; j++) {
                        const T z = a[H + j], nn = a[2 * H + j];
                        h[j] = (1 - z) * nn + (hpn ? z * hpn[j] : 0);
                    }
                } else { /* a is h itself */
                    if (!hp)
                        for (int64_t j = 0; j < H; j++) a[j] += q[j];
                    if (mode == PG_RNN_TANH) pg_vtanh(dt, a, a, H);
                    else
                        for (int64_t j = 0; j < H; j++) a[j] = a[j] > 0 ? a[j] : 0;
                }
                memcpy(hb + H * n, h, (size_t)H * es);
            }
        }
    });
    free(tmp);
    return 0;
}

/* 0 when t is absent or [r, c]; else the shape error naming fn, arg and what it should be */
static int want_shape(const char *fn, const char *arg, const pg_tensor *t, int64_t r, int64_t c,
                      const char *what)
{
    if (!t || (t->ne[0] == r && t->ne[1] == c)) return 0;
    return pg_fail(PG_STATUS_ERR_SHAPE, "%s: %s is %s but must be [%lld, %lld] (%s)", fn, arg,
                   pg_desc(t), (long long)r, (long long)c, what);
}

static int check_args(int mode, pg_tensor *x, pg_tensor *W_ih, pg_tensor *W_hh, pg_tensor *b_ih,
                      pg_tensor *b_hh, pg_tensor *h0, pg_tensor *c0)
{
    const char *fn = pg_rnn_fn(mode);
    if (mode < PG_RNN_TANH || mode > PG_RNN_GRU)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_rnn: unknown mode %d", mode);
    if (pg_not_live(x, fn, "x") || pg_not_live(W_ih, fn, "W_ih") || pg_not_live(W_hh, fn, "W_hh"))
        return -1;
    pg_tensor *opt[4] = {b_ih, b_hh, h0, c0};
    const char *on[4] = {"b_ih", "b_hh", "h0", "c0"};
    if (pg_same_dtype(fn, "x", x, "W_ih", W_ih) || pg_same_dtype(fn, "x", x, "W_hh", W_hh))
        return -1;
    for (int i = 0; i < 4; i++)
        if (opt[i] && (pg_not_live(opt[i], fn, on[i]) || pg_same_dtype(fn, "x", x, on[i], opt[i])))
            return -1;
    const int64_t G = pg_rnn_gates(mode), H = W_hh->ne[1], F = W_ih->ne[1];
    const char *gates = mode == PG_RNN_LSTM ? "the gates i, f, g, o stacked"
        : mode == PG_RNN_GRU                ? "the gates r, z, n stacked"
                                            : "hidden_size rows";
    if (H < 1 || W_hh->ne[0] != G * H)
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: W_hh is %s but must be [%s%s, hidden_size] (%s)",
                       fn, pg_desc(W_hh), G > 1 ? (G == 4 ? "4*" : "3*") : "", "hidden_size",
                       gates);
    if (want_shape(fn, "W_ih", W_ih, G * H, W_ih->ne[1], gates) || F < 1)
        return F < 1 ? pg_fail(PG_STATUS_ERR_SHAPE, "%s: W_ih is %s, input_size must be >= 1", fn,
                               pg_desc(W_ih))
                     : -1;
    if (x->ne[0] < F || x->ne[0] % F)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: x is %s, its rows are not a multiple of input_size = %lld; x is "
                       "[input_size*T, batch], each column one sequence with the time steps' "
                       "features stacked (numpy (N, T, F) as x.reshape(N, -1).T)",
                       fn, pg_desc(x), (long long)F);
    if ((b_ih == NULL) != (b_hh == NULL))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: give both b_ih and b_hh, or neither (no bias)", fn);
    const int64_t N = x->ne[1];
    if (want_shape(fn, "b_ih", b_ih, G * H, 1, gates) ||
        want_shape(fn, "b_hh", b_hh, G * H, 1, gates) ||
        want_shape(fn, "h0", h0, H, N, "hidden_size x batch") ||
        want_shape(fn, "c0", c0, H, N, "hidden_size x batch"))
        return -1;
    if (c0 && mode != PG_RNN_LSTM)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: c0 (an initial cell state) is for ag_lstm only", fn);
    if (mode == PG_RNN_LSTM && (h0 == NULL) != (c0 == NULL))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: give both h0 and c0, or neither (zeros)", fn);
    return 0;
}

pg_tensor *pg_rnn(int mode, pg_tensor *x, pg_tensor *W_ih, pg_tensor *W_hh, pg_tensor *b_ih,
                  pg_tensor *b_hh, pg_tensor *h0, pg_tensor *c0, int flags)
{
    if (check_args(mode, x, W_ih, W_hh, b_ih, b_hh, h0, c0)) return NULL;
    if (flags & ~(PG_RNN_REVERSE | PG_RNN_CELL) || (flags & PG_RNN_CELL && mode != PG_RNN_LSTM))
        return pg_fail_null(PG_STATUS_ERR_ARG,
                            "%s: flags %d: the cell state (PG_RNN_CELL) is ag_lstm's only",
                            pg_rnn_fn(mode), flags);
    const int cell = (flags & PG_RNN_CELL) != 0;
    const int64_t G = pg_rnn_gates(mode), H = W_hh->ne[1], F = W_ih->ne[1];
    const int64_t L = x->ne[0] / F, N = x->ne[1];
    /* biases and the LSTM's states travel as one input each (a node has 5 inputs) */
    pg_tensor *b = b_ih ? pg_concat_rows(b_ih, b_hh) : NULL;
    pg_tensor *s0 = c0 ? pg_concat_rows(h0, c0) : h0;
    if (s0 == h0 && h0) pg_tensor_retain(h0);
    pg_tensor *out = NULL, *sv[3] = {NULL, NULL, NULL}, *r = NULL;
    int ns = mode == PG_RNN_LSTM ? 3 : mode == PG_RNN_GRU ? 2 : 0;
    if ((b_ih && !b) || (c0 && !s0)) goto done;
    out = pg_new(x->dtype, H * L + (cell ? H : 0), N, PG_MEM_CATEGORY_OTHER);
    if (ns) {
        sv[0] = pg_new(x->dtype, G * H, L * N, PG_MEM_CATEGORY_SAVED);
        sv[1] = pg_new(x->dtype, H, L * N, PG_MEM_CATEGORY_SAVED);
    }
    if (ns == 3) sv[2] = pg_new(x->dtype, H, L * N, PG_MEM_CATEGORY_SAVED);
    if (!out || (ns && (!sv[0] || !sv[1])) || (ns == 3 && !sv[2])) {
        pg_tensor_release(out);
        for (int i = 0; i < 3; i++) pg_tensor_release(sv[i]);
        goto done;
    }
    pg_tensor *in[5] = {x, W_ih, W_hh, b, s0};
    int64_t ip[4] = {mode, F, flags, H}; /* ip[2]: PG_RNN_REVERSE | PG_RNN_CELL */
    r = pg_op_run(mode == PG_RNN_LSTM      ? "lstm"
                      : mode == PG_RNN_GRU ? "gru"
                                           : "rnn",
                  rnn_fw, pg_rnn_bw, out, 5, in, NULL, ip, ns, sv);
done:
    pg_tensor_release(b);
    pg_tensor_release(s0);
    return r;
}

void pg_rnn_dims_of(const pg_node *nd, pg_rnn_dims *d)
{
    d->mode = (int)nd->ip[0];
    d->F = nd->ip[1];
    d->rev = (nd->ip[2] & PG_RNN_REVERSE) != 0;
    d->cell = (nd->ip[2] & PG_RNN_CELL) != 0;
    d->H = nd->ip[3];
    d->GH = pg_rnn_gates(d->mode) * d->H;
    d->L = nd->in[0]->ne[0] / d->F;
    d->N = nd->in[0]->ne[1];
    d->OS = d->H * d->L + (d->cell ? d->H : 0);
    d->rnn = d->mode == PG_RNN_TANH || d->mode == PG_RNN_RELU;
    d->fn = pg_rnn_fn(d->mode);
}

/* ---- the per-step join ---- */

/* ip: steps; copies (or, backward, splits) block t of each column */
static void seq_join(int dt, void *o, const void *a, const void *b, int64_t Fa, int64_t Fb,
                     int64_t L, int64_t N)
{
    const size_t es = pg_dtype_size(dt);
    const int64_t Fo = Fa + Fb;
    for (int64_t c = 0; c < L * N; c++) {
        memcpy((char *)o + (size_t)(Fo * c) * es, (const char *)a + (size_t)(Fa * c) * es,
               (size_t)Fa * es);
        memcpy((char *)o + (size_t)(Fo * c + Fa) * es, (const char *)b + (size_t)(Fb * c) * es,
               (size_t)Fb * es);
    }
}

static int seq_concat_fw(pg_node *nd)
{
    pg_tensor *a = nd->in[0], *b = nd->in[1];
    const int64_t L = nd->ip[0];
    seq_join(a->dtype, pg_data(nd->out), pg_data(a), pg_data(b), a->ne[0] / L, b->ne[0] / L, L,
             a->ne[1]);
    return 0;
}

static int seq_concat_bw(pg_node *nd, pg_tensor *g)
{
    const int64_t L = nd->ip[0], N = g->ne[1];
    for (int side = 0; side < 2; side++) {
        pg_tensor *t = nd->in[side];
        void *slot;
        int acc, w = pg_grad_slot_for(t, &slot, &acc);
        if (w < 0) return -1;
        if (!w) continue;
        const int64_t Fa = nd->in[0]->ne[0] / L, Fb = nd->in[1]->ne[0] / L, F = side ? Fb : Fa;
        const int64_t off = side ? Fa : 0, Fo = Fa + Fb;
        PG_DISPATCH(g->dtype, {
            const T *gp = pg_data(g);
            T *s = slot;
            for (int64_t c = 0; c < L * N; c++)
                PG_STORE_LOOP(acc, F, (s + F * c), gp[Fo * c + off + i]);
        });
    }
    return 0;
}

pg_tensor *pg_seq_concat(pg_tensor *a, pg_tensor *b, int64_t steps, const char *fn)
{
    if (!fn) fn = "pg_seq_concat";
    if (pg_not_live(a, fn, "a") || pg_not_live(b, fn, "b") || pg_same_dtype(fn, "a", a, "b", b))
        return NULL;
    if (steps < 1 || a->ne[1] != b->ne[1] || a->ne[0] % steps || b->ne[0] % steps)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: cannot join %s and %s per time step over %lld steps (rows must "
                            "be multiples of the steps, the columns equal)",
                            fn, pg_desc(a), pg_desc(b), (long long)steps);
    pg_tensor *out = pg_new(a->dtype, a->ne[0] + b->ne[0], a->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {a, b};
    int64_t ip[4] = {steps, 0, 0, 0};
    return pg_op_run("seq_concat", seq_concat_fw, seq_concat_bw, out, 2, in, NULL, ip, 0, NULL);
}
