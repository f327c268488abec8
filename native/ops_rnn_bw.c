/* Backpropagation through time for pg_rnn (ops_rnn.c): steps walked last to first, each step's
 * gate gradients D into a [GH, T*N] buffer laid out as the forward's gates; then x's and the
 * weights' gradients are one GEMM each over all steps. The GRU's n gate splits: its input part
 * takes dn, its recurrent part (W_hn h + b_hn) dn * r, so it keeps a second buffer Dh. */
#include "pg_fp.h" /* first: no FMA contraction, one vectoriser model (R = Python bits) */
#include <string.h>
#include "pg.h"
#include "ops_rnn_internal.h"

/* the buffers: D, Dh (GRU), P (each step's previous state [H, T*N]), dh, dc, the GRU's direct
 * dh' * z term [H, N] each, th [H] zeros, Ds [GH, N] one step's D (or Dh) contiguous, WT [H, GH]
 * W_hh^T (or NULL) */
typedef struct {
    void *D, *Dh, *P, *dh, *dc, *dd, *th, *Ds, *WT;
} bufs;

/* one LSTM column's gate gradients from dh_t = dh + gt (the next step's part plus the output's):
 * restrict lets the compiler vectorise it; the AVX2 and AVX-512 copies do the same IEEE
 * operations per lane (no contraction: pg_fp.h) */
#define LSTM_COL(name, T, ATTR)                                                                    \
    static ATTR void name(const T *restrict a, const T *restrict th, const T *restrict cp,         \
                          const T *restrict dhp, const T *restrict gt, T *restrict dc,             \
                          T *restrict D, int64_t H)                                                \
    {                                                                                              \
        for (int64_t j = 0; j < H; j++) {                                                          \
            const T i = a[j], f = a[H + j], gg = a[2 * H + j], o = a[3 * H + j];                   \
            const T dh = dhp[j] + gt[j], tc = th[j], dct = dc[j] + dh * o * (1 - tc * tc);         \
            const T d0 = dct * gg * i * (1 - i), d1 = dct * cp[j] * f * (1 - f);                   \
            const T d2 = dct * i * (1 - gg * gg), d3 = dh * tc * o * (1 - o);                      \
            D[j] = d0, D[H + j] = d1, D[2 * H + j] = d2, D[3 * H + j] = d3;                        \
            dc[j] = dct * f;                                                                       \
        }                                                                                          \
    }
LSTM_COL(lstm_col_f, float, )
LSTM_COL(lstm_col_d, double, )
#if PG_X86_SIMD
#define PG_TARGET_AVX512_WIDE __attribute__((target("avx512f,avx2,fma,prefer-vector-width=512")))
LSTM_COL(lstm_col_f_avx2, float, PG_TARGET_AVX2)
LSTM_COL(lstm_col_d_avx2, double, PG_TARGET_AVX2)
LSTM_COL(lstm_col_f_avx512, float, PG_TARGET_AVX512_WIDE)
LSTM_COL(lstm_col_d_avx512, double, PG_TARGET_AVX512_WIDE)
#else
#define lstm_col_f_avx2   lstm_col_f
#define lstm_col_d_avx2   lstm_col_d
#define lstm_col_f_avx512 lstm_col_f
#define lstm_col_d_avx512 lstm_col_d
#endif

/* one GRU column's gate gradients D (the input side) and Dh (the recurrent side, whose n row
 * is dn * r) from dh_t = dh + gt, and the direct term dd = dh_t * z; hp: the previous state
 * (zeros before step 1 without h0); the same IEEE operations per lane at every level */
#define GRU_COL(name, T, ATTR)                                                                     \
    static ATTR void name(const T *restrict a, const T *restrict hn, const T *restrict hp,         \
                          const T *restrict dhp, const T *restrict gt, T *restrict D,              \
                          T *restrict Dh, T *restrict dd, int64_t H)                               \
    {                                                                                              \
        for (int64_t j = 0; j < H; j++) {                                                          \
            const T r = a[j], z = a[H + j], nn = a[2 * H + j], dy = dhp[j] + gt[j];                \
            const T dan = dy * (1 - z) * (1 - nn * nn);                                            \
            const T dr = dan * hn[j] * r * (1 - r), dz = dy * (hp[j] - nn) * z * (1 - z);          \
            D[j] = Dh[j] = dr, D[H + j] = Dh[H + j] = dz;                                          \
            D[2 * H + j] = dan, Dh[2 * H + j] = dan * r;                                           \
            dd[j] = dy * z;                                                                        \
        }                                                                                          \
    }
GRU_COL(gru_col_f, float, )
GRU_COL(gru_col_d, double, )
#if PG_X86_SIMD
GRU_COL(gru_col_f_avx2, float, PG_TARGET_AVX2)
GRU_COL(gru_col_d_avx2, double, PG_TARGET_AVX2)
GRU_COL(gru_col_f_avx512, float, PG_TARGET_AVX512_WIDE)
GRU_COL(gru_col_d_avx512, double, PG_TARGET_AVX512_WIDE)
#else
#define gru_col_f_avx2   gru_col_f
#define gru_col_d_avx2   gru_col_d
#define gru_col_f_avx512 gru_col_f
#define gru_col_d_avx512 gru_col_d
#endif

/* lstm_col's or gru_col's copy for the SIMD level (s: f or d), called with the arguments */
#define COL_CALL(k, s, ...)                                                                        \
    (wide > 1 ? k##_col_##s##_avx512 : wide ? k##_col_##s##_avx2 : k##_col_##s)(__VA_ARGS__)

static int bw_steps(pg_node *nd, pg_tensor *g, const pg_rnn_dims *d, bufs *w)
{
    const int64_t H = d->H, GH = d->GH, L = d->L, N = d->N;
    pg_tensor *s0 = nd->in[4];
    const int mode = d->mode, dt = g->dtype, wide = pg_simd_level();
    const size_t es = pg_dtype_size(dt);
    PG_DISPATCH(dt, {
        const T *gp = pg_data(g), *o0 = pg_data(nd->out);
        const T *a0 = d->rnn ? NULL : pg_data(nd->saved[0]);
        const T *e0 = d->rnn ? NULL : pg_data(nd->saved[1]);
        const T *tc0 = mode == PG_RNN_LSTM ? pg_data(nd->saved[2]) : NULL, *zero = w->th;
        const T *sp = s0 ? pg_data(s0) : NULL;
        const int64_t sld = s0 ? s0->ne[0] : 0;
        T *D = w->D, *Dh = w->Dh, *P = w->P, *dh = w->dh, *dc = w->dc, *dd = w->dd;
        memset(dh, 0, (size_t)(H * N) * es);
        memset(w->th, 0, (size_t)H * es); /* zeros: the LSTM's c0, the GRU's h0 when absent */
        if (dc) memset(dc, 0, (size_t)(H * N) * es);
        if (d->cell) /* the last cell state's own gradient starts the cells' chain */
            for (int64_t n = 0; n < N; n++)
                memcpy(dc + H * n, gp + H * L + d->OS * n, (size_t)H * es);
        for (int64_t s = L - 1; s >= 0; s--) {
            const int64_t t = d->rev ? L - 1 - s : s, tp = d->rev ? t + 1 : t - 1;
            const T *hp = s ? o0 + H * tp : sp;
            const int64_t ld = s ? d->OS : sld;
            for (int64_t n = 0; n < N; n++) {
                const int64_t col = t + L * n;
                const T *gt = gp + H * t + d->OS * n, *h = o0 + H * t + d->OS * n;
                const T *hpn = hp ? hp + ld * n : NULL;
                T *dhn = dh + H * n, *Dc = D + GH * col, *p = P + H * col;
                if (hpn) memcpy(p, hpn, (size_t)H * es);
                else memset(p, 0, (size_t)H * es);
                if (mode == PG_RNN_LSTM) { /* dh_t inside lstm_col */
                    const T *a = a0 + GH * col, *th = tc0 + H * col;
                    const T *cp = s ? e0 + H * (tp + L * n) : sp ? sp + sld * n + H : zero;
                    if (dt == PG_DTYPE_F32)
                        COL_CALL(lstm, f, (const float *)a, (const float *)th, (const float *)cp,
                                 (const float *)dhn, (const float *)gt, (float *)(dc + H * n),
                                 (float *)Dc, H);
                    else
                        COL_CALL(lstm, d, (const double *)a, (const double *)th, (const double *)cp,
                                 (const double *)dhn, (const double *)gt, (double *)(dc + H * n),
                                 (double *)Dc, H);
                } else if (mode == PG_RNN_GRU) { /* dh_t inside gru_col; dh becomes dd below */
                    const T *a = a0 + GH * col, *hn = e0 + H * col, *hq = hpn ? hpn : zero;
                    T *Dhc = Dh + GH * col, *ddn = dd + H * n;
                    if (dt == PG_DTYPE_F32)
                        COL_CALL(gru, f, (const float *)a, (const float *)hn, (const float *)hq,
                                 (const float *)dhn, (const float *)gt, (float *)Dc, (float *)Dhc,
                                 (float *)ddn, H);
                    else
                        COL_CALL(gru, d, (const double *)a, (const double *)hn, (const double *)hq,
                                 (const double *)dhn, (const double *)gt, (double *)Dc,
                                 (double *)Dhc, (double *)ddn, H);
                } else {
                    for (int64_t j = 0; j < H; j++) {
                        dhn[j] += gt[j]; /* dh_t: the output's gradient plus the next step's */
                        Dc[j] = mode == PG_RNN_TANH ? dhn[j] * (1 - h[j] * h[j])
                                                    : (h[j] > 0 ? dhn[j] : 0);
                    }
                }
            }
            /* dh_{t-1} = W_hh^T D_t (+ the GRU's z * dh_t); not needed before step 0 without s0 */
            if (s == 0 && !s0) break;
            /* the step's gate gradients, contiguous: read in place at the stride GH * L (a
             * multiple of 4 KiB) the GEMM's columns fight over a few cache sets, 1.7x slower */
            const T *Dr = (mode == PG_RNN_GRU ? Dh : D) + GH * t;
            T *Ds = w->Ds;
            for (int64_t n = 0; n < N; n++) memcpy(Ds + GH * n, Dr + GH * L * n, (size_t)GH * es);
            if (mode == PG_RNN_GRU) memcpy(dh, dd, (size_t)(H * N) * es);
            if (w->WT) /* W_hh^T transposed once, not packed again at every step */
                pg_gemm(dt, 0, 0, H, N, GH, 1.0, w->WT, H, Ds, GH, mode == PG_RNN_GRU ? 1.0 : 0.0,
                        dh, H);
            else
                pg_gemm(dt, 1, 0, H, N, GH, 1.0, pg_data(nd->in[2]), GH, Ds, GH,
                        mode == PG_RNN_GRU ? 1.0 : 0.0, dh, H);
        }
    });
    return 0;
}

/* o[k] += the sum of row k of m [R, C], column after column: 64 rows at a time held in
 * registers over all the columns (each row's additions in the same order) */
#define ROW_SUMS(name, T, ATTR)                                                                    \
    static ATTR void name(const T *restrict m, int64_t R, int64_t C, T *restrict o)                \
    {                                                                                              \
        int64_t k0 = 0;                                                                            \
        for (; k0 + 64 <= R; k0 += 64) {                                                           \
            T a[64];                                                                               \
            memcpy(a, o + k0, sizeof a);                                                           \
            for (int64_t c = 0; c < C; c++)                                                        \
                for (int k = 0; k < 64; k++) a[k] += m[k0 + k + R * c];                            \
            memcpy(o + k0, a, sizeof a);                                                           \
        }                                                                                          \
        for (int64_t c = 0; k0 < R && c < C; c++)                                                  \
            for (int64_t k = k0; k < R; k++) o[k] += m[k + R * c];                                 \
    }
ROW_SUMS(row_sums_f, float, )
ROW_SUMS(row_sums_d, double, )
#if PG_X86_SIMD
ROW_SUMS(row_sums_f_avx512, float, PG_TARGET_AVX512_WIDE)
ROW_SUMS(row_sums_d_avx512, double, PG_TARGET_AVX512_WIDE)
#else
#define row_sums_f_avx512 row_sums_f
#define row_sums_d_avx512 row_sums_d
#endif

/* the sums of each row of M [R, C] into s (+= when acc) */
static void row_sums(int dt, const void *M, int64_t R, int64_t C, void *s, int acc)
{
    const int wide = pg_simd_level() > 1;
    if (!acc) memset(s, 0, (size_t)R * pg_dtype_size(dt));
    if (dt == PG_DTYPE_F32) (wide ? row_sums_f_avx512 : row_sums_f)(M, R, C, s);
    else (wide ? row_sums_d_avx512 : row_sums_d)(M, R, C, s);
}

int pg_rnn_bw(pg_node *nd, pg_tensor *g)
{
    pg_rnn_dims d;
    pg_rnn_dims_of(nd, &d);
    const int64_t H = d.H, GH = d.GH, TN = d.L * d.N, N = d.N;
    pg_tensor *x = nd->in[0], *Wi = nd->in[1], *Wh = nd->in[2], *b = nd->in[3], *s0 = nd->in[4];
    const int dt = g->dtype, gru = d.mode == PG_RNN_GRU, lstm = d.mode == PG_RNN_LSTM;
    const size_t es = pg_dtype_size(dt);
    /* W_hh^T by hand where the built-in GEMM sums op(A) = A^T and A alike (its direct and
     * packed paths: every k in the same order; n = 1 takes the plain loops, which do not) */
    const int wt = N > 1 && d.L > 1 && pg_gemm_builtin(dt);
    const int64_t nD = GH * TN * (gru ? 2 : 1), nP = H * TN;
    const int64_t nS = H * N * 3 + H + GH * N + (wt ? GH * H : 0);
    char *mem = malloc((size_t)(nD + nP + nS) * es);
    if (!mem) return pg_fail(PG_STATUS_ERR_NOMEM, "%s backward: out of memory", d.fn);
    bufs w = {mem, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    w.Dh = gru ? mem + (size_t)(GH * TN) * es : w.D;
    w.P = mem + (size_t)nD * es;
    w.dh = (char *)w.P + (size_t)nP * es;
    w.dc = lstm ? (char *)w.dh + (size_t)(H * N) * es : NULL;
    w.dd = gru ? (char *)w.dh + (size_t)(2 * H * N) * es : NULL;
    w.th = (char *)w.dh + (size_t)(3 * H * N) * es;
    w.Ds = (char *)w.th + (size_t)H * es;
    w.WT = wt ? (char *)w.Ds + (size_t)(GH * N) * es : NULL;
    if (wt)
        PG_DISPATCH(dt, {
            const T *W = pg_data(Wh);
            T *o = w.WT;
            for (int64_t k = 0; k < GH; k++)
                for (int64_t j = 0; j < H; j++) o[j + H * k] = W[k + GH * j];
        });
    bw_steps(nd, g, &d, &w);
    int rc = 0, acc;
    void *slot;
    int wx = pg_grad_slot_for(x, &slot, &acc);
    if (wx > 0)
        pg_gemm(dt, 1, 0, d.F, TN, GH, 1.0, pg_data(Wi), GH, w.D, GH, acc ? 1.0 : 0.0, slot, d.F);
    int wi = wx < 0 ? -1 : pg_grad_slot_for(Wi, &slot, &acc);
    if (wi > 0)
        pg_gemm(dt, 0, 1, GH, d.F, TN, 1.0, w.D, GH, pg_data(x), d.F, acc ? 1.0 : 0.0, slot, GH);
    int wh = wi < 0 ? -1 : pg_grad_slot_for(Wh, &slot, &acc);
    if (wh > 0) pg_gemm(dt, 0, 1, GH, H, TN, 1.0, w.Dh, GH, w.P, H, acc ? 1.0 : 0.0, slot, GH);
    int wb = wh < 0 ? -1 : pg_grad_slot_for(b, &slot, &acc);
    if (wb > 0) {
        row_sums(dt, w.D, GH, TN, slot, acc);
        if (gru) row_sums(dt, w.Dh, GH, TN, (char *)slot + (size_t)GH * es, acc);
        else if (!acc) /* b_hh's gradient is b_ih's (one buffer D): summed once */
            memcpy((char *)slot + (size_t)GH * es, slot, (size_t)GH * es);
        else row_sums(dt, w.D, GH, TN, (char *)slot + (size_t)GH * es, acc);
    }
    int ws = wb < 0 ? -1 : pg_grad_slot_for(s0, &slot, &acc);
    if (ws > 0) {
        const int64_t ld = s0->ne[0];
        PG_DISPATCH(dt, {
            T *o = slot;
            const T *dh = w.dh, *dc = w.dc;
            for (int64_t n = 0; n < N; n++) {
                PG_STORE_LOOP(acc, H, (o + ld * n), dh[H * n + i]);
                if (dc) PG_STORE_LOOP(acc, H, (o + ld * n + H), dc[H * n + i]);
            }
        });
    }
    if (ws < 0) rc = -1;
    free(mem);
    return rc;
}
