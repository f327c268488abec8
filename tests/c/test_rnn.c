/* The recurrent op (native/ops_rnn.c, ops_rnn_bw.c): gradcheck of LSTM, GRU and the tanh / relu
 * RNN, forwards and reversed, with biases or initial states; a hand-computed step; the texts;
 * the same bits at every SIMD level. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

typedef struct {
    int mode, rev, states; /* states: inputs 3, 4 are h0 (and c0) instead of the biases */
} rnn_ctx;                 /* rev: pg_rnn's flags (PG_RNN_REVERSE, PG_RNN_CELL) */

static pg_tensor *f_rnn(pg_tensor **in, const void *ctx)
{
    const rnn_ctx *c = ctx;
    if (c->states)
        return pg_rnn(c->mode, in[0], in[1], in[2], NULL, NULL, in[3],
                      c->mode == PG_RNN_LSTM ? in[4] : NULL, c->rev);
    return pg_rnn(c->mode, in[0], in[1], in[2], in[3], in[4], NULL, NULL, c->rev);
}

static pg_tensor *f_seqcat(pg_tensor **in, const void *ctx)
{
    (void)ctx;
    return pg_seq_concat(in[0], in[1], 3, "test");
}

static pg_tensor *mat(int64_t r, int64_t c, const double *v)
{
    return pg_tensor_new(PG_DTYPE_F64, r, c, v, PG_DTYPE_F64, 1, r);
}

/* the bytes of the output and of every input's gradient of sum(y * w), appended to buf at *n */
static void rnn_bytes(int mode, int dt, int flags, int64_t H, int64_t N, char *buf, size_t *n)
{
    const int64_t F = 3, L = 5, G = mode == PG_RNN_LSTM ? 4 : mode == PG_RNN_GRU ? 3 : 1;
    lcg = 77;
    pg_tensor *in[7] = {rnd(dt, F * L, N, 0),
                        rnd(dt, G * H, F, 0),
                        rnd(dt, G * H, H, 0),
                        rnd(dt, G * H, 1, 0),
                        rnd(dt, G * H, 1, 0),
                        rnd(dt, H, N, 0),
                        mode == PG_RNN_LSTM ? rnd(dt, H, N, 0) : NULL};
    for (int i = 0; i < 7; i++)
        if (in[i]) pg_tensor_set_requires_grad(in[i], 1);
    pg_tape_begin();
    pg_tensor *y = pg_rnn(mode, in[0], in[1], in[2], in[3], in[4], in[5], in[6], flags);
    pg_tensor *w = y ? rnd(dt, y->ne[0], y->ne[1], 0) : NULL, *yw = y ? pg_mul(y, w) : NULL;
    pg_tensor *s = yw ? pg_sum(yw, 0) : NULL;
    pg_gradmap *g = s ? pg_backward(s) : NULL;
    CHECK(g != NULL);
    for (int i = -1; g && i < 7; i++) {
        pg_tensor *t = i < 0 ? y : in[i] ? pg_gradmap_get(g, in[i]) : NULL;
        if (!t) continue;
        const size_t k = (size_t)(t->ne[0] * t->ne[1]) * pg_dtype_size(dt);
        memcpy(buf + *n, pg_tensor_data(t), k);
        *n += k;
    }
    if (g) pg_gradmap_free(g);
    REL(s), REL(yw), REL(w), REL(y);
    pg_tape_clear();
    pg_tape_end();
    for (int i = 0; i < 7; i++) REL(in[i]);
}

/* the column kernels' SSE2, AVX2 and AVX-512 copies (forward and backward through time): the
 * same bytes; hidden sizes ragged against every width, forwards, reversed, the LSTM's cell */
static void rnn_simd_levels(void)
{
    const int modes[4] = {PG_RNN_TANH, PG_RNN_RELU, PG_RNN_LSTM, PG_RNN_GRU};
    const size_t cap = 1 << 20;
    char *ref = malloc(cap), *got = malloc(cap);
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int m = 0; m < 4; m++) {
            size_t nr = 0;
            for (int level = 0; level <= 2; level++) {
                if (pg_simd_select(level) != level) continue;
                size_t n = 0;
                const int64_t Hs[3] = {5, 17, 33}, Ns[3] = {3, 1, 4};
                for (int k = 0; k < 3; k++) {
                    const int fl = k == 1                   ? PG_RNN_REVERSE
                        : k == 2 && modes[m] == PG_RNN_LSTM ? PG_RNN_CELL
                                                            : 0;
                    rnn_bytes(modes[m], dt, fl, Hs[k], Ns[k], level ? got : ref, level ? &n : &nr);
                }
                if (level) CHECK(n == nr && memcmp(ref, got, nr) == 0);
            }
            CHECK(nr > 0);
        }
    pg_simd_select(-1);
    free(ref), free(got);
}

void test_rnn(void)
{
    const int modes[4] = {PG_RNN_TANH, PG_RNN_RELU, PG_RNN_LSTM, PG_RNN_GRU};
    const int64_t F = 2, H = 3, L = 4, N = 2;
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int m = 0; m < 4; m++) {
            const int64_t G = modes[m] == PG_RNN_LSTM ? 4 : modes[m] == PG_RNN_GRU ? 3 : 1;
            for (int v = 0; v < (modes[m] == PG_RNN_LSTM ? 5 : 3); v++) {
                /* the LSTM's last cell state as an output: forwards from c0, reversed with biases */
                rnn_ctx c = {modes[m],
                             v == 1       ? PG_RNN_REVERSE
                                 : v == 3 ? PG_RNN_CELL
                                 : v == 4 ? PG_RNN_CELL | PG_RNN_REVERSE
                                          : 0,
                             v == 2 || v == 3};
                int64_t sh[10] = {F * L, N, G * H, F, G * H, H, G * H, 1, G * H, 1};
                if (c.states) sh[6] = H, sh[7] = N, sh[8] = H, sh[9] = N;
                int n_in = c.states && modes[m] != PG_RNN_LSTM ? 4 : 5;
                char name[64];
                snprintf(name, sizeof name, "%s mode %d variant %d", pg_dtype_name(dt), modes[m],
                         v);
                gradcheck(name, f_rnn, &c, n_in, sh, 0, (1u << n_in) - 1, dt);
            }
        }
    const int64_t sc[4] = {6, 2, 9, 2};
    gradcheck("seq_concat", f_seqcat, NULL, 2, sc, 0, 3, PG_DTYPE_F64);

    /* one step by hand: tanh RNN, F = H = 1, x = (1, 2) over two steps */
    const double xv[] = {1, 2}, wi[] = {0.5}, wh[] = {-0.25}, bi[] = {0.1}, bh[] = {0.2};
    pg_tensor *x = mat(2, 1, xv), *Wi = mat(1, 1, wi), *Wh = mat(1, 1, wh), *Bi = mat(1, 1, bi),
              *Bh = mat(1, 1, bh);
    pg_tensor *y = pg_rnn(PG_RNN_TANH, x, Wi, Wh, Bi, Bh, NULL, NULL, 0);
    double yv[2] = {0};
    CHECK(y != NULL);
    if (y) pg_tensor_read(y, yv, PG_DTYPE_F64);
    double h1 = tanh(0.5 + 0.3), h2 = tanh(1.0 + 0.3 - 0.25 * h1);
    CHECK(fabs(yv[0] - h1) < 1e-15 && fabs(yv[1] - h2) < 1e-15);
    REL(y);
    y = pg_rnn(PG_RNN_TANH, x, Wi, Wh, Bi, Bh, NULL, NULL, 1); /* reversed: step 2 first */
    if (y) pg_tensor_read(y, yv, PG_DTYPE_F64);
    double r2 = tanh(1.0 + 0.3), r1 = tanh(0.5 + 0.3 - 0.25 * r2);
    CHECK(y && fabs(yv[0] - r1) < 1e-15 && fabs(yv[1] - r2) < 1e-15);
    REL(y);

    /* the texts name the layer, the argument and the shapes */
    const double three[] = {1, 2, 3};
    pg_tensor *x3 = mat(3, 1, three), *W2 = mat(1, 2, three);
    CHECK_ERR(pg_rnn(PG_RNN_TANH, x3, W2, Wh, NULL, NULL, NULL, NULL, 0) == NULL,
              PG_STATUS_ERR_SHAPE,
              "ag_rnn: x is [3x1] f64, its rows are not a multiple of input_size = 2");
    CHECK_ERR(pg_rnn(PG_RNN_LSTM, x, Wi, Wh, NULL, NULL, NULL, NULL, 0) == NULL,
              PG_STATUS_ERR_SHAPE,
              "ag_lstm: W_hh is [1x1] f64 but must be [4*hidden_size, "
              "hidden_size] (the gates i, f, g, o stacked)");
    CHECK_ERR(pg_rnn(PG_RNN_TANH, x, Wi, Wh, Bi, NULL, NULL, NULL, 0) == NULL, PG_STATUS_ERR_ARG,
              "ag_rnn: give both b_ih and b_hh, or neither");
    CHECK_ERR(pg_rnn(PG_RNN_TANH, x, Wi, Wh, NULL, NULL, NULL, NULL, PG_RNN_CELL) == NULL,
              PG_STATUS_ERR_ARG, "ag_rnn: flags 2: the cell state (PG_RNN_CELL) is ag_lstm's only");
    CHECK_ERR(pg_rnn(PG_RNN_GRU, x, Wi, Wh, NULL, NULL, NULL, NULL, 0) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_gru: W_hh is [1x1] f64 but must be [3*hidden_size");
    CHECK_ERR(pg_rnn(PG_RNN_TANH, x, Wi, Wh, NULL, NULL, x3, NULL, 0) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_rnn: h0 is [3x1] f64 but must be [1, 1] (hidden_size x batch)");
    pg_tensor *x32 = pg_tensor_new(PG_DTYPE_F32, 2, 1, xv, PG_DTYPE_F64, 1, 2);
    CHECK_ERR(pg_rnn(PG_RNN_TANH, x32, Wi, Wh, NULL, NULL, NULL, NULL, 0) == NULL,
              PG_STATUS_ERR_DTYPE, "ag_rnn");
    REL(x32);
    REL(x3);
    REL(W2);
    REL(x);
    REL(Wi);
    REL(Wh);
    REL(Bi);
    REL(Bh);
    rnn_simd_levels();
}
