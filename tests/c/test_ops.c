/* Every op forward and backward in f32 and f64, with a finite-difference gradient check in
 * f64 (broadcast shapes, empty tensors, 1x1, every loss and layer op, flash attention). */
#include <math.h>
#include <stdlib.h>
#include "check.h"

/* ---- the ops as op_fn ---- */
/* f_NAME: an op_fn that ignores its constant and returns `call` of in[] */
#define OP_FN(name, call)                                                                          \
    static pg_tensor *f_##name(pg_tensor **in, const void *c)                                      \
    {                                                                                              \
        (void)c;                                                                                   \
        return call;                                                                               \
    }
OP_FN(matmul, pg_matmul(in[0], in[1]))
OP_FN(add, pg_add(in[0], in[1]))
OP_FN(sub, pg_sub(in[0], in[1]))
OP_FN(mul, pg_mul(in[0], in[1]))
OP_FN(div, pg_div(in[0], in[1]))
OP_FN(scale, pg_scale(in[0], -1.5))
static pg_tensor *f_unary(pg_tensor **in, const void *c)
{
    return pg_unary(*(const int *)c, in[0]);
}
static pg_tensor *f_pow(pg_tensor **in, const void *c) { return pg_pow(in[0], *(const double *)c); }
OP_FN(clamp, pg_clamp(in[0], -0.5, 0.55))
static pg_tensor *f_sum(pg_tensor **in, const void *c) { return pg_sum(in[0], *(const int *)c); }
static pg_tensor *f_mean(pg_tensor **in, const void *c) { return pg_mean(in[0], *(const int *)c); }
OP_FN(transpose, pg_transpose(in[0]))
OP_FN(reshape, pg_reshape(in[0], -1, 2))
OP_FN(mse, pg_mse_loss(in[0], in[1]))
/* loss(in[0], act(in[1])): a loss of logits against targets made by an activation */
static pg_tensor *loss_vs(pg_tensor *(*loss)(pg_tensor *, pg_tensor *), int act, pg_tensor **in)
{
    pg_tensor *t = pg_unary(act, in[1]);
    pg_tensor *o = loss(in[0], t);
    REL(t);
    return o;
}
/* probabilities strictly inside (0, 1) (the loss clamps at 1e-7) and targets whose columns sum
 * to 1 (the fused gradient p - t assumes it) */
static pg_tensor *f_ce(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *p = pg_unary(PG_UNARY_OP_SIGMOID, in[0]);
    pg_tensor *o = pg_cross_entropy_loss(p, in[1]);
    REL(p);
    return o;
}
OP_FN(sce, loss_vs(pg_softmax_ce_loss, PG_UNARY_OP_SOFTMAX, in))
/* the losses of ops_loss2.c: probabilities and [0, 1] targets through a sigmoid (constants) */
static pg_tensor *f_bce(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *p = pg_unary(PG_UNARY_OP_SIGMOID, in[0]), *t = pg_unary(PG_UNARY_OP_SIGMOID, in[1]);
    pg_tensor *o = pg_bce_loss(p, t);
    REL(p);
    REL(t);
    return o;
}
OP_FN(bcel, loss_vs(pg_bce_logits_loss, PG_UNARY_OP_SIGMOID, in))
OP_FN(huber, pg_huber_loss(in[0], in[1], 0.3))
OP_FN(mae, pg_mae_loss(in[0], in[1]))
OP_FN(wmse, pg_weighted_mse_loss(in[0], in[1], in[2]))
static pg_tensor *f_sce_idx(pg_tensor **in, const void *c)
{
    (void)c;
    int64_t ids[4] = {0, 2, 1, 2};
    return pg_softmax_ce_loss_idx(in[0], ids, pg_tensor_ncol(in[0]));
}
OP_FN(bn_train, pg_batch_norm(in[0], in[1], in[2], NULL, NULL, 1e-5, 0.1, 1))
static pg_tensor *f_bn_eval(pg_tensor **in, const void *c)
{
    (void)c;
    int dt = pg_tensor_dtype(in[0]);
    pg_tensor *rv = pg_tensor_full(dt, pg_tensor_nrow(in[0]), 1, 0.7);
    pg_tensor *rm = pg_tensor_full(dt, pg_tensor_nrow(in[0]), 1, -0.2);
    pg_tensor *o = pg_batch_norm(in[0], in[1], in[2], rm, rv, 1e-5, 0.1, 0);
    REL(rv);
    REL(rm);
    return o;
}
OP_FN(ln, pg_layer_norm(in[0], in[1], in[2], 1e-5))
static pg_tensor *f_emb(pg_tensor **in, const void *c)
{
    (void)c;
    const double ids[5] = {0, 3, 3, 1, 0};
    return pg_embedding(in[0], ids, 5);
}
OP_FN(slice, pg_slice_rows(in[0], 1, 2))
OP_FN(concat, pg_concat_rows(in[0], in[1]))
static pg_tensor *f_matmul_t(pg_tensor **in, const void *c)
{
    const int *t = c;
    return pg_matmul_t(in[0], in[1], t[0], t[1], 0.7);
}
static pg_tensor *f_causal(pg_tensor **in, const void *c)
{
    (void)c;
    /* -inf entries times a weight would give NaN in the loss: mask, then clamp them away */
    pg_tensor *m = pg_causal_mask(in[0]);
    if (!m) return NULL;
    pg_tensor *s = pg_unary(PG_UNARY_OP_SOFTMAX, m);
    REL(m);
    return s;
}

/* ag_flash_attention: ctx = {n_heads, mode}: mode 0 plain, 1 causal, 2 a mask blocking key
 * (i + j) % 3 == 2 (key 0 always kept) and the whole of query 1 */
static pg_tensor *f_flash(pg_tensor **in, const void *c)
{
    const int *m = c;
    pg_tensor *mask = NULL;
    if (m[1] == 2) {
        int64_t R = pg_tensor_ncol(in[1]), C = pg_tensor_ncol(in[0]);
        mask = pg_tensor_full(pg_tensor_dtype(in[0]), R, C, 0.0);
        if (!mask) return NULL;
        double *md = malloc((size_t)(R * C) * sizeof *md);
        for (int64_t j = 0; j < C; j++)
            for (int64_t i = 0; i < R; i++)
                md[i + j * R] = (j == 1 || (i > 0 && (i + j) % 3 == 2)) ? -INFINITY : 0.0;
        pg_tensor_write(mask, md, PG_DTYPE_F64, R, C, 1, R);
        free(md);
    }
    pg_tensor *out = pg_flash_attention(in[0], in[1], in[2], m[0], NAN, mask, m[1] == 1);
    REL(mask);
    return out;
}

/* ag_multihead_attention's heads: ctx = {n_heads, causal, dropout in percent}; with dropout
 * the current stream is reseeded first, so every evaluation draws the same masks */
static pg_tensor *f_mha(pg_tensor **in, const void *c)
{
    const int *m = c;
    if (m[2]) pg_rng_seed(NULL, 7);
    int64_t dk = pg_tensor_nrow(in[0]) / m[0];
    return pg_mha_heads(in[0], in[1], in[2], m[0], 1.0 / sqrt((double)dk), m[1], m[2] / 100.0);
}

void test_ops(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        int64_t s23_34[] = {2, 3, 3, 4};
        gradcheck("matmul", f_matmul, NULL, 2, s23_34, 0, 3, dt);
        int64_t s30_04[] = {3, 0, 0, 4}; /* k = 0: a zero [3x4] result */
        gradcheck("matmul k=0", f_matmul, NULL, 2, s30_04, 0, 3, dt);
        /* broadcasting: same shape, column vector, row vector, scalar, on either side */
        int64_t bshapes[][4] = {{3, 4, 3, 4}, {3, 4, 3, 1}, {3, 1, 3, 4},
                                {3, 4, 1, 4}, {1, 4, 3, 4}, {3, 4, 1, 1},
                                {1, 1, 3, 4}, {3, 1, 1, 4}, {0, 4, 1, 4}};
        op_fn bins[] = {f_add, f_sub, f_mul, f_div};
        const char *bn[] = {"add", "sub", "mul", "div"};
        for (int k = 0; k < 4; k++)
            for (size_t s = 0; s < sizeof bshapes / sizeof *bshapes; s++)
                gradcheck(bn[k], bins[k], NULL, 2, bshapes[s], k == 3 ? 2 : 0, 3, dt);
        int64_t s34[] = {3, 4}, s11[] = {1, 1}, s04[] = {0, 4};
        gradcheck("scale", f_scale, NULL, 1, s34, 0, 1, dt);
        for (int u = PG_UNARY_OP_RELU; u <= PG_UNARY_OP_NEG; u++) {
            gradcheck("unary", f_unary, &u, 1, s34, u == PG_UNARY_OP_LOG ? 1 : 0, 1, dt);
            gradcheck("unary 1x1", f_unary, &u, 1, s11, u == PG_UNARY_OP_LOG ? 1 : 0, 1, dt);
            gradcheck("unary empty", f_unary, &u, 1, s04, 0, 1, dt);
        }
        double pw[] = {2.0, 0.5, -1.0, 3.0};
        for (int k = 0; k < 4; k++) gradcheck("pow", f_pow, &pw[k], 1, s34, 1, 1, dt);
        gradcheck("clamp", f_clamp, NULL, 1, s34, 0, 1, dt);
        for (int d = 0; d <= 2; d++) {
            gradcheck("sum", f_sum, &d, 1, s34, 0, 1, dt);
            gradcheck("mean", f_mean, &d, 1, s34, 0, 1, dt);
        }
        gradcheck("transpose", f_transpose, NULL, 1, s34, 0, 1, dt);
        gradcheck("reshape", f_reshape, NULL, 1, s34, 0, 1, dt);
        int64_t ss[] = {3, 4, 3, 4};
        gradcheck("mse", f_mse, NULL, 2, ss, 0, 1, dt); /* the target is a constant */
        gradcheck("cross_entropy", f_ce, NULL, 2, ss, 1, 1, dt);
        gradcheck("softmax_ce", f_sce, NULL, 2, ss, 2, 1, dt);
        gradcheck("softmax_ce_idx", f_sce_idx, NULL, 1, s34, 0, 1, dt);
        gradcheck("bce", f_bce, NULL, 2, ss, 0, 1, dt);
        gradcheck("bce_with_logits", f_bcel, NULL, 2, ss, 0, 1, dt);
        gradcheck("huber", f_huber, NULL, 2, ss, 0, 1, dt);
        gradcheck("mae", f_mae, NULL, 2, ss, 0, 1, dt);
        int64_t wsh[][6] = {
            {3, 4, 3, 4, 3, 4}, {3, 4, 3, 4, 3, 1}, {3, 4, 3, 4, 1, 4}, {3, 4, 3, 4, 1, 1}};
        for (int k = 0; k < 4; k++)
            gradcheck("weighted_mse", f_wmse, NULL, 3, wsh[k], 4, 1, dt); /* weight > 0 */
        int64_t bnsh[] = {3, 5, 3, 1, 3, 1};
        gradcheck("batch_norm train", f_bn_train, NULL, 3, bnsh, 0, 7, dt);
        gradcheck("batch_norm eval", f_bn_eval, NULL, 3, bnsh, 0, 7, dt);
        gradcheck("layer_norm", f_ln, NULL, 3, bnsh, 0, 7, dt);
        int64_t emb[] = {3, 4};
        gradcheck("embedding", f_emb, NULL, 1, emb, 0, 1, dt);
        int64_t sl[] = {4, 3};
        gradcheck("slice_rows", f_slice, NULL, 1, sl, 0, 1, dt);
        int64_t cc[] = {2, 3, 4, 3};
        gradcheck("concat_rows", f_concat, NULL, 2, cc, 0, 3, dt);
        int tt[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
        int64_t mts[4][4] = {{2, 3, 3, 4}, {3, 2, 3, 4}, {2, 3, 4, 3}, {3, 2, 4, 3}};
        for (int k = 0; k < 4; k++) gradcheck("matmul_t", f_matmul_t, tt[k], 2, mts[k], 0, 3, dt);
        int64_t sq[] = {4, 4};
        gradcheck("causal_mask", f_causal, NULL, 1, sq, 0, 1, dt);
        int64_t fa[] = {8, 5, 8, 7, 8, 7}, fb[] = {4, 40, 4, 35, 4, 35}, fs[] = {6, 4, 6, 4, 6, 4};
        int fm[][2] = {{1, 0}, {2, 0}, {2, 1}, {4, 2}};
        for (int k = 0; k < 4; k++) gradcheck("flash_attention", f_flash, fm[k], 3, fa, 0, 7, dt);
        int fc[] = {2, 1}, fq[] = {3, 0};
        gradcheck("flash_attention blocks", f_flash, fc, 3, fb, 0, 7, dt);
        gradcheck("flash_attention q only", f_flash, fq, 3, fs, 0, 1, dt);
        int64_t ms[] = {8, 5, 8, 5, 8, 5}, mx[] = {8, 4, 8, 7, 8, 7};
        int mm[][3] = {{1, 0, 0}, {2, 1, 0}, {4, 0, 30}, {2, 1, 30}};
        for (int k = 0; k < 4; k++) gradcheck("mha_heads", f_mha, mm[k], 3, ms, 0, 7, dt);
        for (int k = 0; k < 4; k++) gradcheck("mha_heads cross", f_mha, mm[k], 3, mx, 0, 7, dt);
    }
}
