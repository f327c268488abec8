/* C test driver for the pyggmlr core, built by scripts/sanitize.sh with AddressSanitizer,
 * LeakSanitizer and UndefinedBehaviorSanitizer (it also runs without them).
 *
 * It walks the whole C API: tensors (every source dtype, strided and empty copies), every op
 * forward and backward in f32 and f64 (with a finite-difference gradient check in f64), the tape
 * (nesting, no-grad, clear, stash), gradient maps, optimizers (SGD, momentum, Nesterov, Adam,
 * accumulation, state get/set, clipping), layer ops, memory reports, the data-parallel helpers,
 * two threads with their own tapes, and the error paths (NULL, foreign pointers, bad shapes,
 * dtypes and values, huge sizes). At the end every object must be gone: live objects 0 and
 * current bytes 0. Exit status 0 = all checks passed; the failures are printed. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

static int n_checks, n_failed;

#define CHECK(cond) check_((cond) != 0, #cond, __FILE__, __LINE__)
static void check_(int ok, const char *what, const char *file, int line)
{
    n_checks++;
    if (!ok) {
        n_failed++;
        fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", file, line, what, pg_last_error());
    }
}

/* The call failed with `status` and a message containing `needle`. */
#define CHECK_ERR(expr_is_failure, status, needle)                                                   \
    do {                                                                                             \
        pg_clear_error();                                                                            \
        int failed_ = (expr_is_failure);                                                             \
        CHECK(failed_);                                                                              \
        CHECK(pg_last_status() == (status));                                                         \
        CHECK(strstr(pg_last_error(), (needle)) != NULL);                                            \
        pg_clear_error();                                                                            \
    } while (0)

#define REL(t) pg_tensor_release(t)

/* deterministic values in [-1, 1] */
static uint64_t lcg = 42;
static double urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static pg_tensor *rnd(int dtype, int64_t r, int64_t c, double lo_abs)
{
    int64_t n = r * c;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        double x = urand();
        v[i] = x >= 0 ? x + lo_abs : x - lo_abs; /* keep away from 0 when asked (div, log, pow) */
    }
    pg_tensor *t = pg_tensor_new(dtype, r, c, v, PG_DTYPE_F64, 1, r);
    free(v);
    return t;
}

static pg_tensor *rnd_pos(int dtype, int64_t r, int64_t c)
{
    pg_tensor *t = rnd(PG_DTYPE_F64, r, c, 0.2);
    double *d = pg_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) d[i] = fabs(d[i]) + 0.1;
    pg_tensor *o = pg_tensor_cast(t, dtype);
    REL(t);
    return o;
}

static double read1(pg_tensor *t)
{
    double v = NAN;
    pg_tensor_read(t, &v, PG_DTYPE_F64);
    return v;
}

/* ---- a generic op under test: builds the output from inputs ---- */
typedef pg_tensor *(*op_fn)(pg_tensor **in, const void *ctx);

static pg_tensor *weighted_loss(op_fn f, pg_tensor **in, const void *ctx, pg_tensor *w)
{
    pg_tensor *out = f(in, ctx);
    if (!out) return NULL;
    pg_tensor *prod = pg_mul(out, w);
    REL(out);
    if (!prod) return NULL;
    pg_tensor *loss = pg_sum(prod, 0);
    REL(prod);
    return loss;
}

/* Forward + backward in the given dtype; in f64 also compare the gradient of every input
 * that requires grad with central differences. shapes: n_in pairs (rows, cols); pos: inputs
 * drawn positive (log, pow, div). */
static void gradcheck(const char *name, op_fn f, const void *ctx, int n_in, const int64_t *shapes,
                      unsigned pos_mask, unsigned grad_mask, int dtype)
{
    pg_tensor *in[PG_MAX_IN] = {0};
    for (int i = 0; i < n_in; i++) {
        in[i] = (pos_mask >> i & 1) ? rnd_pos(dtype, shapes[2 * i], shapes[2 * i + 1])
                                    : rnd(dtype, shapes[2 * i], shapes[2 * i + 1], 0.05);
        if (grad_mask >> i & 1) pg_tensor_set_requires_grad(in[i], 1);
    }
    pg_tensor *probe = f(in, ctx);
    if (!probe) { fprintf(stderr, "%s: forward failed: %s\n", name, pg_last_error()); CHECK(0); goto done; }
    pg_tensor *w = rnd(dtype, pg_tensor_nrow(probe), pg_tensor_ncol(probe), 0.0);
    REL(probe);

    CHECK(pg_tape_begin() == 0);
    pg_tensor *loss = weighted_loss(f, in, ctx, w);
    CHECK(pg_tape_end() == 0);
    CHECK(loss != NULL);
    pg_gradmap *gm = loss ? pg_backward(loss) : NULL;
    CHECK(gm != NULL);
    if (gm && dtype == PG_DTYPE_F64) {
        int old = pg_tape_set_enabled(0);
        for (int i = 0; i < n_in; i++) {
            if (!(grad_mask >> i & 1)) continue;
            pg_tensor *g = pg_gradmap_get(gm, in[i]);
            int64_t n = pg_tensor_numel(in[i]);
            if (n == 0) continue;
            if (!g) fprintf(stderr, "%s: no gradient for input %d\n", name, i);
            CHECK(g != NULL);
            if (!g) continue;
            CHECK(pg_gradmap_get_id(gm, pg_tensor_id(in[i])) == g);
            double *x = pg_tensor_data(in[i]);
            const double *ga = pg_tensor_data(g);
            double worst = 0;
            for (int64_t k = 0; k < n; k++) {
                double h = 1e-6, x0 = x[k];
                x[k] = x0 + h;
                pg_tensor *lp = weighted_loss(f, in, ctx, w);
                x[k] = x0 - h;
                pg_tensor *lm = weighted_loss(f, in, ctx, w);
                x[k] = x0;
                double num = (read1(lp) - read1(lm)) / (2 * h);
                REL(lp); REL(lm);
                double err = fabs(num - ga[k]) / (1.0 + fabs(num));
                if (err > worst) worst = err;
            }
            if (!(worst < 1e-5)) fprintf(stderr, "%s: input %d gradient error %g\n", name, i, worst);
            CHECK(worst < 1e-5);
        }
        pg_tape_set_enabled(old);
    }
    /* backward twice on the same tape: the same gradients again, .grad accumulates */
    if (gm) {
        pg_gradmap *gm2 = pg_backward(loss);
        CHECK(gm2 != NULL);
        CHECK(pg_gradmap_size(gm2) == pg_gradmap_size(gm));
        pg_gradmap_free(gm2);
    }
    pg_gradmap_free(gm);
    REL(loss);
    REL(w);
    pg_tape_clear();
done:
    for (int i = 0; i < n_in; i++) REL(in[i]);
}

/* ---- the ops as op_fn ---- */
static pg_tensor *f_matmul(pg_tensor **in, const void *c) { (void)c; return pg_matmul(in[0], in[1]); }
static pg_tensor *f_add(pg_tensor **in, const void *c) { (void)c; return pg_add(in[0], in[1]); }
static pg_tensor *f_sub(pg_tensor **in, const void *c) { (void)c; return pg_sub(in[0], in[1]); }
static pg_tensor *f_mul(pg_tensor **in, const void *c) { (void)c; return pg_mul(in[0], in[1]); }
static pg_tensor *f_div(pg_tensor **in, const void *c) { (void)c; return pg_div(in[0], in[1]); }
static pg_tensor *f_scale(pg_tensor **in, const void *c) { (void)c; return pg_scale(in[0], -1.5); }
static pg_tensor *f_unary(pg_tensor **in, const void *c) { return pg_unary(*(const int *)c, in[0]); }
static pg_tensor *f_pow(pg_tensor **in, const void *c) { return pg_pow(in[0], *(const double *)c); }
static pg_tensor *f_clamp(pg_tensor **in, const void *c) { (void)c; return pg_clamp(in[0], -0.5, 0.55); }
static pg_tensor *f_sum(pg_tensor **in, const void *c) { return pg_sum(in[0], *(const int *)c); }
static pg_tensor *f_mean(pg_tensor **in, const void *c) { return pg_mean(in[0], *(const int *)c); }
static pg_tensor *f_transpose(pg_tensor **in, const void *c) { (void)c; return pg_transpose(in[0]); }
static pg_tensor *f_reshape(pg_tensor **in, const void *c) { (void)c; return pg_reshape(in[0], -1, 2); }
static pg_tensor *f_mse(pg_tensor **in, const void *c) { (void)c; return pg_mse_loss(in[0], in[1]); }
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
static pg_tensor *f_sce(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *t = pg_unary(PG_UNARY_OP_SOFTMAX, in[1]);
    pg_tensor *o = pg_softmax_ce_loss(in[0], t);
    REL(t);
    return o;
}
/* the losses of ops_loss2.c: probabilities and [0, 1] targets through a sigmoid (constants) */
static pg_tensor *f_bce(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *p = pg_unary(PG_UNARY_OP_SIGMOID, in[0]), *t = pg_unary(PG_UNARY_OP_SIGMOID, in[1]);
    pg_tensor *o = pg_bce_loss(p, t);
    REL(p); REL(t);
    return o;
}
static pg_tensor *f_bcel(pg_tensor **in, const void *c)
{
    (void)c;
    pg_tensor *t = pg_unary(PG_UNARY_OP_SIGMOID, in[1]);
    pg_tensor *o = pg_bce_logits_loss(in[0], t);
    REL(t);
    return o;
}
static pg_tensor *f_huber(pg_tensor **in, const void *c) { (void)c; return pg_huber_loss(in[0], in[1], 0.3); }
static pg_tensor *f_mae(pg_tensor **in, const void *c) { (void)c; return pg_mae_loss(in[0], in[1]); }
static pg_tensor *f_wmse(pg_tensor **in, const void *c) { (void)c; return pg_weighted_mse_loss(in[0], in[1], in[2]); }
static pg_tensor *f_sce_idx(pg_tensor **in, const void *c)
{
    (void)c;
    int64_t ids[4] = {0, 2, 1, 2};
    return pg_softmax_ce_loss_idx(in[0], ids, pg_tensor_ncol(in[0]));
}
static pg_tensor *f_bn_train(pg_tensor **in, const void *c)
{
    (void)c;
    return pg_batch_norm(in[0], in[1], in[2], NULL, NULL, 1e-5, 0.1, 1);
}
static pg_tensor *f_bn_eval(pg_tensor **in, const void *c)
{
    (void)c;
    int dt = pg_tensor_dtype(in[0]);
    pg_tensor *rv = pg_tensor_full(dt, pg_tensor_nrow(in[0]), 1, 0.7);
    pg_tensor *rm = pg_tensor_full(dt, pg_tensor_nrow(in[0]), 1, -0.2);
    pg_tensor *o = pg_batch_norm(in[0], in[1], in[2], rm, rv, 1e-5, 0.1, 0);
    REL(rv); REL(rm);
    return o;
}
static pg_tensor *f_ln(pg_tensor **in, const void *c) { (void)c; return pg_layer_norm(in[0], in[1], in[2], 1e-5); }
static pg_tensor *f_emb(pg_tensor **in, const void *c)
{
    (void)c;
    int64_t ids[5] = {0, 3, 3, 1, 0};
    return pg_embedding(in[0], ids, 5);
}
static pg_tensor *f_slice(pg_tensor **in, const void *c) { (void)c; return pg_slice_rows(in[0], 1, 2); }
static pg_tensor *f_concat(pg_tensor **in, const void *c) { (void)c; return pg_concat_rows(in[0], in[1]); }
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
            for (int64_t i = 0; i < R; i++) md[i + j * R] = (j == 1 || (i > 0 && (i + j) % 3 == 2)) ? -INFINITY : 0.0;
        pg_tensor_write(mask, md, PG_DTYPE_F64, R, C, 1, R);
        free(md);
    }
    pg_tensor *out = pg_flash_attention(in[0], in[1], in[2], m[0], NAN, mask, m[1] == 1);
    REL(mask);
    return out;
}

static void test_ops(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        int64_t s23_34[] = {2, 3, 3, 4};
        gradcheck("matmul", f_matmul, NULL, 2, s23_34, 0, 3, dt);
        int64_t s30_04[] = {3, 0, 0, 4}; /* k = 0: a zero [3x4] result */
        gradcheck("matmul k=0", f_matmul, NULL, 2, s30_04, 0, 3, dt);
        /* broadcasting: same shape, column vector, row vector, scalar, on either side */
        int64_t bshapes[][4] = {{3, 4, 3, 4}, {3, 4, 3, 1}, {3, 1, 3, 4}, {3, 4, 1, 4}, {1, 4, 3, 4},
                                {3, 4, 1, 1}, {1, 1, 3, 4}, {3, 1, 1, 4}, {0, 4, 1, 4}};
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
        int64_t wsh[][6] = {{3, 4, 3, 4, 3, 4}, {3, 4, 3, 4, 3, 1}, {3, 4, 3, 4, 1, 4}, {3, 4, 3, 4, 1, 1}};
        for (int k = 0; k < 4; k++) gradcheck("weighted_mse", f_wmse, NULL, 3, wsh[k], 4, 1, dt); /* weight > 0 */
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
    }
}

/* ---- tensors: construction, copies, accessors ---- */
static void test_tensors(void)
{
    /* every source dtype, C order (row stride ncol) into column-major */
    float f[6] = {1, 2, 3, 4, 5, 6};
    double d[6] = {1, 2, 3, 4, 5, 6};
    int32_t i32[6] = {1, 2, 3, 4, 5, 6};
    int64_t i64[6] = {1, 2, 3, 4, 5, 6};
    uint8_t u8[6] = {1, 2, 3, 4, 5, 6};
    const void *srcs[] = {f, d, i32, i64, u8};
    for (int s = PG_DTYPE_F32; s <= PG_DTYPE_U8; s++)
        for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
            pg_tensor *t = pg_tensor_new(dt, 2, 3, srcs[s], s, 3, 1);
            CHECK(t != NULL);
            double out[6];
            CHECK(pg_tensor_read(t, out, PG_DTYPE_F64) == 0);
            CHECK(out[0] == 1 && out[1] == 4 && out[2] == 2 && out[5] == 6);
            REL(t);
        }
    /* negative strides (a reversed view) */
    pg_tensor *rv = pg_tensor_new(PG_DTYPE_F64, 6, 1, d + 5, PG_DTYPE_F64, -1, 6);
    double o6[6];
    pg_tensor_read(rv, o6, PG_DTYPE_F64);
    CHECK(o6[0] == 6 && o6[5] == 1);
    /* write, clone, cast, full, grad set / clear */
    CHECK(pg_tensor_write(rv, d, PG_DTYPE_F64, 6, 1, 1, 6) == 0);
    pg_tensor *cl = pg_tensor_clone(rv), *ca = pg_tensor_cast(rv, PG_DTYPE_F32), *fu = pg_tensor_full(PG_DTYPE_F32, 6, 1, 2.5);
    CHECK(cl && ca && fu && pg_tensor_id(cl) != pg_tensor_id(rv));
    CHECK(pg_tensor_dtype(ca) == PG_DTYPE_F32 && pg_tensor_numel(fu) == 6 && pg_tensor_is_leaf(fu) == 1);
    CHECK(pg_tensor_set_grad(rv, cl) == 0 && pg_tensor_grad(rv) == cl);
    CHECK(pg_tensor_set_grad(rv, NULL) == 0 && pg_tensor_grad(rv) == NULL);
    CHECK_ERR(pg_tensor_set_grad(rv, ca) != 0, PG_STATUS_ERR_SHAPE, "does not match");
    CHECK_ERR(pg_tensor_write(rv, d, PG_DTYPE_F64, 2, 3, 1, 2) != 0, PG_STATUS_ERR_SHAPE, "assigning data");
    CHECK_ERR(pg_tensor_write(rv, d, 99, 6, 1, 1, 6) != 0, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_tensor_read(rv, o6, PG_DTYPE_I32) != 0, PG_STATUS_ERR_DTYPE, "read");
    CHECK(pg_tensor_set_requires_grad(rv, 1) == 0 && pg_tensor_requires_grad(rv) == 1);
    CHECK(pg_tensor_set_requires_grad(rv, 0) == 0 && pg_tensor_requires_grad(rv) == 0);
    CHECK(strcmp(pg_tensor_op(rv), "") == 0);
    REL(rv); REL(cl); REL(ca); REL(fu);
    /* empty tensors in every position */
    pg_tensor *e = pg_tensor_new(PG_DTYPE_F32, 0, 5, NULL, PG_DTYPE_F32, 1, 0), *e2 = pg_tensor_full(PG_DTYPE_F64, 4, 0, 1.0);
    CHECK(e && e2 && pg_tensor_numel(e) == 0 && pg_tensor_numel(e2) == 0);
    pg_tensor *es = pg_sum(e, 0), *et = pg_transpose(e2);
    CHECK(es && read1(es) == 0 && et && pg_tensor_nrow(et) == 0);
    REL(e); REL(e2); REL(es); REL(et);
    /* defaults */
    CHECK(pg_set_default_dtype(PG_DTYPE_F64) == PG_DTYPE_F32 && pg_default_dtype() == PG_DTYPE_F64);
    CHECK(pg_set_default_dtype(PG_DTYPE_F32) == PG_DTYPE_F64);
    CHECK_ERR(pg_set_default_dtype(PG_DTYPE_I32) != 0 && pg_default_dtype() == PG_DTYPE_F32, PG_STATUS_ERR_DTYPE, "ag_dtype");
    CHECK(strcmp(pg_version(), "") != 0 && strcmp(pg_blas_name(), "builtin") == 0);
    CHECK(pg_set_threads(2) == 0 && pg_get_threads() == 2 && pg_set_threads(1) == 0);
    CHECK_ERR(pg_set_threads(0) != 0, PG_STATUS_ERR_VALUE, "ag_set_threads");
}

/* ---- error paths: NULL, foreign pointers, bad shapes / dtypes / values, huge sizes ---- */
static void test_errors(void)
{
    pg_tensor *a = rnd(PG_DTYPE_F32, 2, 3, 0), *b = rnd(PG_DTYPE_F32, 4, 5, 0), *c = rnd(PG_DTYPE_F64, 2, 3, 0);
    /* a foreign object: zeroed memory the size of a tensor (wrong magic), never dereferenced further */
    static uint64_t junk[64];
    pg_tensor *fo = (pg_tensor *)junk;
    pg_tensor *bad[] = {NULL, fo};
    const char *badmsg[] = {"is NULL", "not a live tensor"};
    for (int k = 0; k < 2; k++) {
        pg_tensor *x = bad[k];
        CHECK_ERR(pg_matmul(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_add(a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_sub(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_mul(a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_div(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_scale(x, 2) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        for (int u = PG_UNARY_OP_RELU; u <= PG_UNARY_OP_NEG; u++) CHECK_ERR(pg_unary(u, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_pow(x, 2) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_clamp(x, 0, 1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_sum(x, 0) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_mean(x, 1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_transpose(x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_reshape(x, 1, -1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_mse_loss(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_cross_entropy_loss(a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_softmax_ce_loss(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_bce_loss(x, a) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_bce_logits_loss(a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_huber_loss(x, a, 1.0) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_weighted_mse_loss(a, a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        int64_t ids[3] = {0, 0, 0};
        CHECK_ERR(pg_softmax_ce_loss_idx(x, ids, 3) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_batch_norm(x, NULL, NULL, NULL, NULL, 1e-5, 0.1, 1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_layer_norm(x, NULL, NULL, 1e-5) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_embedding(x, ids, 3) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_slice_rows(x, 0, 1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_concat_rows(a, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_matmul_t(x, a, 0, 1, 1) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_causal_mask(x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_backward(x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_clone(x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_cast(x, PG_DTYPE_F64) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_check(x) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_numel(x) == -1, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_data(x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_read(x, junk, PG_DTYPE_F64) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_set_grad(x, NULL) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        CHECK_ERR(pg_tensor_set_grad(a, x) != 0 || x == NULL, x ? PG_STATUS_ERR_ARG : 0, x ? badmsg[k] : "");
        CHECK_ERR(pg_tensor_set_requires_grad(x, 1) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        pg_tensor *pl[2] = {a, x};
        CHECK_ERR(pg_optim_new(1, pl, 2, NULL) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        double nrm;
        CHECK_ERR(pg_clip_grad_norm(pl, 2, NULL, 1.0, &nrm) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        pg_tensor_retain(x);  /* both ignore what is not a live tensor */
        pg_tensor_release(x);
        CHECK(pg_gradmap_get(NULL, x) == NULL);
    }
    /* shapes, dtypes, values */
    CHECK_ERR(pg_matmul(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_matmul");
    CHECK_ERR(pg_add(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_add");
    CHECK_ERR(pg_div(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_div");
    CHECK_ERR(pg_add(a, c) == NULL, PG_STATUS_ERR_DTYPE, "dtype mismatch");
    CHECK_ERR(pg_matmul(a, c) == NULL, PG_STATUS_ERR_DTYPE, "dtype mismatch");
    CHECK_ERR(pg_mse_loss(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_mse_loss");
    CHECK_ERR(pg_bce_loss(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_binary_cross_entropy_loss");
    CHECK_ERR(pg_bce_logits_loss(a, c) == NULL, PG_STATUS_ERR_DTYPE, "ag_bce_with_logits_loss: dtype mismatch");
    CHECK_ERR(pg_huber_loss(a, a, 0.0) == NULL, PG_STATUS_ERR_VALUE, "ag_huber_loss: delta must be");
    CHECK_ERR(pg_huber_loss(a, a, NAN) == NULL, PG_STATUS_ERR_VALUE, "ag_huber_loss: delta must be");
    CHECK_ERR(pg_mae_loss(a, NULL) == NULL, PG_STATUS_ERR_ARG, "ag_mae_loss");
    CHECK_ERR(pg_weighted_mse_loss(a, a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_weighted_mse_loss");
    CHECK_ERR(pg_weighted_mse_loss(a, a, NULL) == NULL, PG_STATUS_ERR_ARG, "ag_weighted_mse_loss");
    CHECK_ERR(pg_unary(99, a) == NULL, PG_STATUS_ERR_VALUE, "op code");
    CHECK_ERR(pg_unary(-1, a) == NULL, PG_STATUS_ERR_VALUE, "op code");
    CHECK_ERR(pg_sum(a, 3) == NULL, PG_STATUS_ERR_VALUE, "ag_sum");
    CHECK_ERR(pg_reshape(a, -1, -1) == NULL, PG_STATUS_ERR_VALUE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, 4, 2) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, -3, -2) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    /* products that overflow int64 must not wrap around to the element count */
    CHECK_ERR(pg_reshape(a, INT64_C(3074457345618258603), 2) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, (INT64_C(1) << 62) + 3, 4) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, INT64_MAX, INT64_MAX) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, -1, 0) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    int64_t ids[3] = {0, 5, -1};
    CHECK_ERR(pg_softmax_ce_loss_idx(a, ids, 3) == NULL, PG_STATUS_ERR_VALUE, "out of range");
    CHECK_ERR(pg_softmax_ce_loss_idx(a, ids, 2) == NULL, PG_STATUS_ERR_SHAPE, "class ids");
    CHECK_ERR(pg_softmax_ce_loss_idx(a, NULL, 3) == NULL, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_embedding(a, ids, 3) == NULL, PG_STATUS_ERR_VALUE, "ag_embedding");
    CHECK_ERR(pg_embedding(a, NULL, 2) == NULL, PG_STATUS_ERR_ARG, "ag_embedding");
    CHECK_ERR(pg_embedding(a, ids, -1) == NULL, PG_STATUS_ERR_VALUE, "ag_embedding");
    CHECK_ERR(pg_slice_rows(a, 1, 2) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, -1, 1) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, INT64_MAX, INT64_MAX) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, 1, INT64_MAX) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_concat_rows(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_concat_rows");
    CHECK_ERR(pg_matmul_t(a, a, 0, 0, 1) == NULL, PG_STATUS_ERR_SHAPE, "");
    CHECK_ERR(pg_batch_norm(a, b, NULL, NULL, NULL, 1e-5, 0.1, 1) == NULL, PG_STATUS_ERR_SHAPE, "gamma");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, -1, 0.1, 1) == NULL, PG_STATUS_ERR_VALUE, "eps");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, NAN, 0.1, 1) == NULL, PG_STATUS_ERR_VALUE, "eps");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, 1e-5, 2, 1) == NULL, PG_STATUS_ERR_VALUE, "momentum");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, 1e-5, 0.1, 0) == NULL, PG_STATUS_ERR_ARG, "running");
    CHECK_ERR(pg_layer_norm(a, c, NULL, 1e-5) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_backward(a) == NULL, PG_STATUS_ERR_SHAPE, "1x1");
    /* sizes */
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, -1, 3, NULL, PG_DTYPE_F32, 1, 1) == NULL, PG_STATUS_ERR_VALUE, ">= 0");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, 3, -1, NULL, PG_DTYPE_F32, 1, 1) == NULL, PG_STATUS_ERR_VALUE, ">= 0");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, INT64_MAX, INT64_MAX, NULL, PG_DTYPE_F32, 1, 1) == NULL, PG_STATUS_ERR_VALUE, "too large");
    CHECK_ERR(pg_tensor_full(PG_DTYPE_F64, INT64_C(1) << 40, INT64_C(1) << 40, 0) == NULL, PG_STATUS_ERR_VALUE, "too large");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_I32, 2, 2, NULL, PG_DTYPE_F32, 1, 1) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, 2, 2, junk, 42, 1, 2) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_tensor_cast(a, 7) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    /* tape misuse */
    CHECK_ERR(pg_tape_end() != 0, PG_STATUS_ERR_STATE, "without a matching begin");
    CHECK_ERR(pg_tape_unstash() != 0, PG_STATUS_ERR_STATE, "no tape");
    /* NULL handles of the other object kinds */
    CHECK(pg_gradmap_size(NULL) == 0 && pg_gradmap_key_id(NULL, 0) == -1 && pg_gradmap_value(NULL, 0) == NULL);
    CHECK(pg_gradmap_get_id(NULL, 1) == NULL);
    pg_gradmap_free(NULL);
    pg_optim_free(NULL);
    CHECK(pg_optim_kind(NULL) == -1 && pg_optim_nparams(NULL) == -1 && pg_optim_param(NULL, 0) == NULL);
    CHECK_ERR(pg_optim_set(NULL, "lr", 1) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(isnan(pg_optim_get(NULL, "lr")), PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_step(NULL, NULL) < 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_step_sum(NULL, NULL) < 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_load(NULL, NULL, 0, 0, 0) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_zero_grad(NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK(pg_optim_state(NULL, 0, 0) == NULL);
    CHECK_ERR(pg_optim_set_state(NULL, 0, 0, a) != 0, PG_STATUS_ERR_VALUE, "no slot");
    CHECK_ERR(pg_optim_new(9, NULL, 0, NULL) == NULL, PG_STATUS_ERR_VALUE, "kind");
    CHECK_ERR(pg_optim_new(0, NULL, 2, NULL) == NULL, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_optim_new(0, &a, -1, NULL) == NULL, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_clip_grad_norm(NULL, 2, NULL, 1, NULL) != 0, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_clip_grad_norm(&a, 1, NULL, -1, NULL) != 0, PG_STATUS_ERR_VALUE, "max_norm");
    CHECK_ERR(pg_clip_grad_norm(&a, 1, NULL, NAN, NULL) != 0, PG_STATUS_ERR_VALUE, "max_norm");
    CHECK_ERR(pg_memory_stats(NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_memory_category_peaks(NULL, 5) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_tape_memory(NULL, NULL, NULL, NULL, 0) < 0, PG_STATUS_ERR_ARG, "NULL");
    REL(a); REL(b); REL(c);
}

/* ---- tape: nesting, no-grad, stash, clear with live outputs ---- */
static void test_tape(void)
{
    pg_tensor *w = rnd(PG_DTYPE_F64, 3, 3, 0);
    pg_tensor_set_requires_grad(w, 1);
    CHECK(pg_tape_begin() == 0 && pg_tape_depth() == 1 && pg_tape_enabled());
    pg_tensor *y1 = pg_unary(PG_UNARY_OP_TANH, w);
    CHECK(pg_tape_nodes() == 1 && strcmp(pg_tensor_op(y1), "") != 0 && pg_tensor_is_leaf(y1) == 0);
    CHECK(pg_tape_begin() == 0 && pg_tape_depth() == 2 && pg_tape_nodes() == 1); /* nested: kept */
    int prev = pg_tape_set_enabled(0);
    pg_tensor *y2 = pg_unary(PG_UNARY_OP_EXP, y1); /* not recorded */
    CHECK(pg_tape_nodes() == 1);
    pg_tape_set_enabled(prev);
    CHECK(pg_tape_end() == 0 && pg_tape_enabled());
    CHECK(pg_tape_stash() == 0 && pg_tape_nodes() == 0 && pg_tape_depth() == 0);
    pg_tensor *y3 = pg_unary(PG_UNARY_OP_SIGMOID, w); /* recording is off on the private tape */
    CHECK(pg_tape_begin() == 0);
    pg_tensor *y4 = pg_unary(PG_UNARY_OP_SIGMOID, w);
    CHECK(pg_tape_nodes() == 1);
    CHECK(pg_tape_unstash() == 0 && pg_tape_nodes() == 1 && pg_tape_depth() == 1);
    CHECK(pg_tape_end() == 0 && !pg_tape_enabled());
    pg_memory_totals tot;
    int64_t nodes[8], bytes[8];
    const char *lab[8];
    int64_t nlab = pg_tape_memory(&tot, lab, nodes, bytes, 8);
    CHECK(nlab == 1 && tot.nodes == 1 && nodes[0] == 1 && strcmp(lab[0], "tanh") == 0);
    CHECK(pg_tape_node_bytes() > 0);
    /* the tape keeps y1 alive after its handle goes; clearing it frees everything */
    pg_tensor *s = pg_sum(y1, 0);
    REL(y1);
    pg_tape_clear();
    CHECK(pg_tape_nodes() == 0);
    REL(y2); REL(y3); REL(y4); REL(s);
    /* a backward over a loss no recorded op produced: an error saying why, no map, no .grad */
    pg_tensor *l = pg_sum(w, 0);
    pg_gradmap *m = NULL;
    CHECK_ERR((m = pg_backward(l)) == NULL, PG_STATUS_ERR_STATE, "is not on the current tape");
    CHECK(pg_tensor_grad(w) == NULL);
    REL(l);
    /* a map outlives its keys and the tape; looking up a dead key's address finds nothing */
    CHECK(pg_tape_begin() == 0);
    pg_tensor *h = pg_unary(PG_UNARY_OP_RELU, w), *l2 = pg_sum(h, 0);
    pg_tape_end();
    m = pg_backward(l2);
    int64_t hid = pg_tensor_id(h);
    REL(h); REL(l2);
    pg_tape_clear();
    CHECK(pg_gradmap_get_id(m, hid) != NULL);
    CHECK(pg_gradmap_value(m, 0) != NULL && pg_gradmap_value(m, 99) == NULL && pg_gradmap_key_id(m, -1) == -1);
    /* leaf flags: w (a parameter) is a leaf; h and the loss were produced by recorded ops */
    int leaves = 0, others = 0;
    for (int64_t i = 0; i < pg_gradmap_size(m); i++) {
        if (pg_gradmap_key_is_leaf(m, i) == 1) { leaves++; CHECK(pg_gradmap_key_id(m, i) == pg_tensor_id(w)); }
        else { others++; CHECK(pg_gradmap_key_is_leaf(m, i) == 0); }
    }
    CHECK(leaves == 1 && others == 2 && pg_gradmap_key_is_leaf(m, 99) == -1 && pg_gradmap_key_is_leaf(NULL, 0) == -1);
    pg_gradmap_free(m);
    CHECK(pg_tensor_grad(w) != NULL);
    REL(w);
}

/* ---- optimizers ---- */
static void test_optim(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int kind = 0; kind <= 1; kind++)
            for (int variant = 0; variant < 4; variant++) {
                pg_tensor *p = rnd(dt, 3, 2, 0), *q = rnd(dt, 1, 2, 0), *nog = rnd(dt, 2, 2, 0);
                pg_tensor_set_requires_grad(p, 1);
                pg_tensor_set_requires_grad(q, 1);
                pg_tensor_set_requires_grad(nog, 1); /* never gets a gradient */
                pg_tensor *ps[4] = {p, q, p, nog};
                int64_t dropped = -1;
                pg_optim *o = pg_optim_new(kind, ps, 4, &dropped);
                CHECK(o && dropped == 1 && pg_optim_nparams(o) == 3 && pg_optim_kind(o) == kind);
                CHECK(pg_optim_set(o, "lr", 0.05) == 0 && pg_optim_get(o, "lr") == 0.05);
                if (variant == 1) CHECK(pg_optim_set(o, kind ? "weight_decay" : "momentum", 0.5) == 0);
                if (variant == 2) { CHECK(pg_optim_set(o, "nesterov", 1) == 0); pg_optim_set(o, "momentum", 0.9); }
                if (variant == 3) CHECK(pg_optim_set(o, "accumulate_steps", 2) == 0);
                CHECK_ERR(pg_optim_set(o, "lr", NAN) != 0, PG_STATUS_ERR_VALUE, "NaN");
                CHECK_ERR(pg_optim_set(o, "lr", -1) != 0, PG_STATUS_ERR_VALUE, ">= 0");
                CHECK_ERR(pg_optim_set(o, "beta1", 1) != 0, PG_STATUS_ERR_VALUE, "[0, 1)");
                CHECK_ERR(pg_optim_set(o, "accumulate_steps", 1.5) != 0, PG_STATUS_ERR_VALUE, "integer");
                CHECK_ERR(pg_optim_set(o, "bogus", 1) != 0, PG_STATUS_ERR_VALUE, "unknown");
                CHECK_ERR(isnan(pg_optim_get(o, "bogus")), PG_STATUS_ERR_VALUE, "unknown");
                double before[4], after[4];
                pg_tensor_read(nog, before, PG_DTYPE_F64);
                for (int step = 0; step < 4; step++) {
                    CHECK(pg_tape_begin() == 0);
                    pg_tensor *pq = pg_mul(p, q), *t = pg_unary(PG_UNARY_OP_TANH, pq), *l = pg_mean(t, 0);
                    pg_tape_end();
                    pg_gradmap *m = pg_backward(l);
                    CHECK(m != NULL);
                    double nrm = -1;
                    pg_tensor *cl[3] = {p, q, p};
                    CHECK(pg_clip_grad_norm(cl, 3, step % 2 ? m : NULL, 0.01, &nrm) == 0 && nrm >= 0);
                    int rc = pg_optim_step(o, step % 2 ? m : NULL);
                    CHECK(rc == (variant == 3 ? step % 2 : 1));
                    CHECK(pg_optim_zero_grad(o) == 0 && pg_tensor_grad(p) == NULL && pg_tape_nodes() == 0);
                    pg_gradmap_free(m);
                    REL(pq); REL(t); REL(l);
                }
                pg_tensor_read(nog, after, PG_DTYPE_F64);
                /* no gradient: skipped entirely (not even decoupled weight decay) */
                CHECK(memcmp(after, before, sizeof after) == 0);
                CHECK(pg_optim_get(o, "t") == (kind ? (variant == 3 ? 2 : 4) : 0));
                /* state slots: read, write back, bad slots */
                pg_tensor *st = pg_optim_state(o, 0, 0);
                if (st) CHECK(pg_optim_set_state(o, 0, 0, st) == 0);
                pg_tensor *wrong = rnd(dt, 5, 5, 0);
                CHECK_ERR(pg_optim_set_state(o, 0, 0, wrong) != 0, PG_STATUS_ERR_SHAPE, "optimizer state");
                CHECK_ERR(pg_optim_set_state(o, 7, 0, wrong) != 0, PG_STATUS_ERR_VALUE, "no slot");
                CHECK_ERR(pg_optim_set_state(o, 0, 3, wrong) != 0, PG_STATUS_ERR_VALUE, "no slot");
                CHECK(pg_optim_set_state(o, 1, 0, NULL) == 0 && pg_optim_state(o, 1, 0) == NULL);
                CHECK(pg_optim_param(o, 0) == p && pg_optim_param(o, 3) == NULL && pg_optim_state(o, 0, 9) == NULL);
                /* a .grad of the wrong shape is refused before anything changes */
                pg_tensor *gw = rnd(dt, 3, 2, 0);
                pg_tensor_set_grad(p, gw);
                pg_tensor *gq = rnd(dt, 1, 2, 0);
                CHECK(pg_tensor_set_grad(q, gq) == 0);
                REL(gw); REL(gq);
                CHECK(pg_optim_step(o, NULL) >= 0);
                REL(wrong);
                pg_optim_free(o);
                REL(p); REL(q); REL(nog);
            }
    pg_optim *e = pg_optim_new(1, NULL, 0, NULL); /* no parameters at all */
    CHECK(e && pg_optim_step(e, NULL) == 1 && pg_optim_zero_grad(e) == 0);
    pg_optim_free(e);
    /* issue 19: no gradient for any parameter is an error that counts nothing; ranges name the optimizer */
    pg_tensor *w = rnd(PG_DTYPE_F64, 2, 2, 0);
    pg_optim *a = pg_optim_new(1, &w, 1, NULL);
    CHECK(a != NULL);
    CHECK_ERR(pg_optim_step(a, NULL) == -PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE, "optimizer_adam step(): no gradient for any");
    CHECK_ERR(pg_optim_step_sum(a, NULL) == -PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE, "no gradient for any");
    CHECK(pg_optim_get(a, "t") == 0);
    CHECK_ERR(pg_optim_set(a, "lr", INFINITY) != 0, PG_STATUS_ERR_VALUE, "optimizer_adam: lr must be a finite number >= 0, got Inf");
    CHECK_ERR(pg_optim_set(a, "eps", 0) != 0, PG_STATUS_ERR_VALUE, "eps must be a finite number > 0");
    CHECK_ERR(pg_optim_set(a, "momentum", 1) != 0, PG_STATUS_ERR_VALUE, "[0, 1)");
    double neg[4] = {1, 1, 1, -1}, zero[4] = {0, 0, 0, 0};
    const double *vals[2] = {zero, neg};
    CHECK_ERR(pg_optim_load(a, vals, 2, 1, 0) != 0, PG_STATUS_ERR_VALUE, "negative entry");
    CHECK(pg_optim_state(a, 0, 0) == NULL && pg_optim_get(a, "t") == 0); /* nothing written */
    CHECK_ERR(pg_clamp(w, NAN, 1) == NULL, PG_STATUS_ERR_VALUE, "ag_clamp: lo must be");
    pg_optim_free(a);
    REL(w);
}

/* ---- memory reports and counters ---- */
static void test_memory(void)
{
    pg_memory_counts st;
    int64_t peaks[5];
    CHECK(pg_memory_stats(&st) == 0);
    pg_memory_reset_peak();
    pg_tensor *big = pg_tensor_full(PG_DTYPE_F64, 100, 100, 1.0);
    CHECK(pg_memory_stats(&st) == 0 && st.peak >= 80000 && st.current[PG_MEM_CATEGORY_OTHER] >= 80000);
    CHECK(pg_memory_category_peaks(peaks, 5) == 0 && peaks[PG_MEM_CATEGORY_OTHER] >= 80000);
    pg_tensor_set_requires_grad(big, 1);
    CHECK(pg_memory_stats(&st) == 0 && st.current[PG_MEM_CATEGORY_PARAM] >= 80000);
    REL(big);
}

/* ---- data-parallel helpers ---- */
static void test_dist(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        pg_tensor *a0 = rnd(dt, 2, 3, 0), *b0 = rnd(dt, 4, 1, 0), *a1 = rnd(dt, 2, 3, 0), *b1 = rnd(dt, 4, 1, 0);
        pg_tensor *ps[4] = {a0, b0, a1, b1};
        for (int i = 0; i < 4; i++) pg_tensor_set_requires_grad(ps[i], 1);
        pg_tensor *g = rnd(dt, 2, 3, 0), *g1 = rnd(dt, 2, 3, 0), *gb = rnd(dt, 4, 1, 0);
        pg_tensor_set_grad(a0, g);
        pg_tensor_set_grad(a1, g1);
        pg_tensor_set_grad(b1, gb);
        int64_t len = pg_dist_flat_len(ps, 2, 1);
        CHECK(len == 6 + 4 + 2);
        double buf[12] = {0};
        CHECK(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_GRAD, 1, 0.5, buf, PG_DTYPE_F64, 12) == 0);
        CHECK(buf[10] == 1 && buf[11] == 0);
        CHECK(pg_dist_unpack(ps, 2, NULL, PG_DIST_WHAT_GRAD, 1, 2.0, buf, PG_DTYPE_F64, 12) == 0);
        CHECK(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_VALUE, 0, 1.0, buf, PG_DTYPE_F64, 12) == 0);
        CHECK_ERR(pg_dist_pack(ps, 2, NULL, PG_DIST_WHAT_VALUE, 0, 1.0, buf, PG_DTYPE_F64, 3) != 0, PG_STATUS_ERR_SHAPE, "buffer");
        CHECK_ERR(pg_dist_average_replicas(ps, 2, 2, NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
        pg_gradmap *none[2] = {NULL, NULL};
        CHECK(pg_dist_average_replicas(ps, 2, 2, none) == 0);
        CHECK(pg_tensor_grad(b0) != NULL); /* made from replica 1's gradient */
        CHECK(pg_dist_copy_values(&a1, &a0, 1) == 0);
        CHECK(pg_dist_zero_grad(ps, 4) == 0 && pg_tensor_grad(a0) == NULL);
        CHECK(pg_dist_flat_len(NULL, 2, 0) < 0);
        pg_clear_error();
        for (int i = 0; i < 4; i++) REL(ps[i]);
        REL(g); REL(g1); REL(gb);
    }
}

/* ---- threads: each trains its own copy on its own tape; results equal the single-thread run ---- */
static void train(double *out)
{
    lcg = 7;
    pg_tensor *w = rnd(PG_DTYPE_F64, 4, 3, 0), *x = rnd(PG_DTYPE_F64, 3, 8, 0), *y = rnd(PG_DTYPE_F64, 4, 8, 0);
    pg_tensor_set_requires_grad(w, 1);
    pg_optim *o = pg_optim_new(1, &w, 1, NULL);
    pg_optim_set(o, "lr", 0.01);
    for (int s = 0; s < 50; s++) {
        pg_tape_begin();
        pg_tensor *h = pg_matmul(w, x), *a = pg_unary(PG_UNARY_OP_TANH, h), *l = pg_mse_loss(a, y);
        pg_tape_end();
        pg_gradmap *m = pg_backward(l);
        pg_optim_step(o, m);
        pg_gradmap_free(m);
        pg_optim_zero_grad(o);
        REL(h); REL(a); REL(l);
    }
    pg_tensor_read(w, out, PG_DTYPE_F64);
    /* leave nodes on this thread's tape on purpose: thread exit must free them */
    pg_tape_begin();
    pg_tensor *h = pg_unary(PG_UNARY_OP_RELU, w);
    pg_tape_end();
    REL(h);
    pg_optim_free(o);
    REL(w); REL(x); REL(y);
}

static void *thread_main(void *arg)
{
    train(arg);
    return NULL;
}

static void test_threads(void)
{
    double ref[12], r1[12], r2[12];
    /* the value generator is shared, so these threads run one after the other (test_concurrent
     * runs two at once); each leaves nodes on its tape, which its exit must free */
    train(ref);
    pg_tape_clear();
    pthread_t t1, t2;
    CHECK(pthread_create(&t1, NULL, thread_main, r1) == 0);
    pthread_join(t1, NULL);
    CHECK(pthread_create(&t2, NULL, thread_main, r2) == 0);
    pthread_join(t2, NULL);
    CHECK(memcmp(ref, r1, sizeof ref) == 0 && memcmp(ref, r2, sizeof ref) == 0);
}

/* concurrent: two threads train at the same time on shared read-only data */
typedef struct { pg_tensor *x; double out; } conc_arg;
static void *conc_main(void *p)
{
    conc_arg *c = p;
    for (int s = 0; s < 200; s++) {
        pg_tape_begin();
        pg_tensor *t = pg_unary(PG_UNARY_OP_TANH, c->x), *l = pg_sum(t, 0);
        pg_tape_end();
        pg_gradmap *m = pg_backward(l);
        c->out = read1(l);
        pg_gradmap_free(m);
        pg_tape_clear();
        REL(t); REL(l);
    }
    return NULL;
}

static void test_concurrent(void)
{
    pg_tensor *x = rnd(PG_DTYPE_F64, 16, 16, 0);
    pg_tensor_set_requires_grad(x, 1);
    conc_arg a = {x, 0}, b = {x, 0};
    pthread_t t1, t2;
    CHECK(pthread_create(&t1, NULL, conc_main, &a) == 0);
    CHECK(pthread_create(&t2, NULL, conc_main, &b) == 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pg_tensor *t = pg_unary(PG_UNARY_OP_TANH, x), *l = pg_sum(t, 0);
    CHECK(a.out == read1(l) && b.out == read1(l));
    REL(t); REL(l); REL(x);
}

/* ---- the built-in GEMM (no BLAS is handed in here), both micro-kernels, against a naive
 * triple loop in double: every (ta, tb), leading dimensions beyond the rows (the padding holds
 * NaN in A and B, which must never be read, and a sentinel in C, which must stay), alpha and
 * beta (0 over NaN garbage, 1, 0.5), sizes on both sides of the blocked kernel's threshold,
 * ragged against its tiles and larger than its blocks, and inputs moved by one element (other
 * alignment): the same bits. Error bound: (k + 2) eps (|alpha| sum |a b| + |beta c|). ---- */
static double gemm_get(int dt, const void *p, int64_t i) { return dt == PG_DTYPE_F32 ? ((const float *)p)[i] : ((const double *)p)[i]; }
static void gemm_set(int dt, void *p, int64_t i, double v)
{
    if (dt == PG_DTYPE_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

static void gemm_case(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, double beta)
{
    size_t es = dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
    int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    int64_t lda = ra + 3, ldb = rb + 2, ldc = m + 4;
    /* one element more than needed: the second run moves every operand by one element */
    char *A = malloc((size_t)(lda * ca + 1) * es), *B = malloc((size_t)(ldb * cb + 1) * es);
    char *C0 = malloc((size_t)(ldc * n) * es), *C[2] = {malloc((size_t)(ldc * n + 1) * es), NULL};
    C[1] = malloc((size_t)(ldc * n + 1) * es);
    for (int64_t j = 0; j < ca; j++)
        for (int64_t i = 0; i < lda; i++) gemm_set(dt, A, i + j * lda, i < ra ? urand() : NAN);
    for (int64_t j = 0; j < cb; j++)
        for (int64_t i = 0; i < ldb; i++) gemm_set(dt, B, i + j * ldb, i < rb ? urand() : NAN);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < ldc; i++) gemm_set(dt, C0, i + j * ldc, i >= m ? 12345.0 : beta == 0 ? NAN : urand());
    int bad = 0;
    for (int run = 0; run < 2; run++) {
        char *a = A, *b = B, *c = C[run] + run * es;
        if (run) { /* shift the operands by one element */
            memmove(A + es, A, (size_t)(lda * ca) * es);
            memmove(B + es, B, (size_t)(ldb * cb) * es);
            a += es, b += es;
        }
        memcpy(c, C0, (size_t)(ldc * n) * es);
        pg_gemm(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        double eps = dt == PG_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < ldc; i++) {
                double got = gemm_get(dt, c, i + j * ldc), c0 = gemm_get(dt, C0, i + j * ldc);
                if (i >= m) { bad += got != 12345.0; continue; }
                double s = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double x = gemm_get(dt, a, ta ? p + i * lda : i + p * lda), y = gemm_get(dt, b, tb ? j + p * ldb : p + j * ldb);
                    s += x * y, mag += fabs(x * y);
                }
                double want = alpha * s + (beta == 0 ? 0 : beta * c0);
                mag = fabs(alpha) * mag + (beta == 0 ? 0 : fabs(beta * c0));
                bad += !(fabs(got - want) <= (double)(k + 2) * eps * mag + 1e-300);
            }
    }
    for (int64_t j = 0; j < n; j++) /* the same bits at the other alignment */
        bad += memcmp(C[0] + (size_t)(j * ldc) * es, C[1] + (size_t)(j * ldc + 1) * es, (size_t)m * es) != 0;
    if (bad)
        fprintf(stderr, "gemm %s ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g beta=%g: %d bad\n", dt == PG_DTYPE_F32 ? "f32" : "f64",
                ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta, bad);
    CHECK(bad == 0);
    free(A); free(B); free(C0); free(C[0]); free(C[1]);
}

/* The direct and the packed paths of every kernel give the same bits, and so do the AVX2 and
 * AVX-512 kernels (on both paths), on small / thin shapes (m = 1..17, vectors along n for thin
 * m, ragged rows, transposed stores), every layout, alpha != 1 and beta 0, 1, 0.5, k > KC. */
static void gemm_same_bits(int best)
{
    static const int64_t shp[][3] = {{64, 32, 4}, {3, 32, 32}, {10, 64, 128}, {4, 32, 64}, {32, 32, 3}, {10, 128, 64},
                                     {13, 9, 300}, {70, 45, 600}};
    const int64_t kmax = 600, dim = 128 + 4;
    double *A = malloc(sizeof(double) * (size_t)(dim * kmax)), *B = malloc(sizeof(double) * (size_t)(dim * kmax));
    double *C = malloc(sizeof(double) * (size_t)(4 * dim * dim));
    float *Af = malloc(sizeof(float) * (size_t)(dim * kmax)), *Bf = malloc(sizeof(float) * (size_t)(dim * kmax));
    float *Cf = malloc(sizeof(float) * (size_t)(4 * dim * dim));
    for (int64_t i = 0; i < dim * kmax; i++) Af[i] = (float)(A[i] = urand()), Bf[i] = (float)(B[i] = urand());
    for (size_t s = 0; s < sizeof shp / sizeof *shp; s++)
        for (int t = 0; t < 4; t++)
            for (int bi = 0; bi < 3; bi++) {
                int64_t m = shp[s][0], n = shp[s][1], k = shp[s][2], ldc = m + 1, sz = ldc * n;
                int ta = t >> 1, tb = t & 1;
                double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5;
                int run = 0; /* runs: (kernel, path) = (0, packed), (0, direct), then AVX2 / AVX-512 likewise */
                for (int sel = 0; sel <= best; sel++)
                    for (int path = 0; path <= 1; path++, run++) {
                        pg_gemm_kernel_select(sel);
                        pg_gemm_path_select(path);
                        double *c = C + (run % 4) * sz;
                        float *cf = Cf + (run % 4) * sz;
                        for (int64_t i = 0; i < sz; i++) c[i] = cf[i] = (float)(i % 7) - 3;
                        pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, -0.75, A, (ta ? k : m) + 2, B, (tb ? n : k) + 3, beta, c, ldc);
                        pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, -0.75, Af, (ta ? k : m) + 2, Bf, (tb ? n : k) + 3, beta, cf, ldc);
                        if (path == 1) { /* direct == packed on this kernel */
                            CHECK(memcmp(c, c - sz, sizeof(double) * (size_t)sz) == 0);
                            CHECK(memcmp(cf, cf - sz, sizeof(float) * (size_t)sz) == 0);
                        }
                        if (sel == 2) { /* AVX-512 == AVX2 (runs 2, 3 kept at slots 2, 3; AVX-512 at 0, 1) */
                            CHECK(memcmp(c, c + 2 * sz, sizeof(double) * (size_t)sz) == 0);
                            CHECK(memcmp(cf, cf + 2 * sz, sizeof(float) * (size_t)sz) == 0);
                        }
                    }
            }
    pg_gemm_kernel_select(-1);
    pg_gemm_path_select(-1);
    free(A); free(B); free(C); free(Af); free(Bf); free(Cf);
}

/* Threads: pg_set_threads(1..4) give the same bits on every kernel, both paths, every layout,
 * f32 / f64, alpha and beta variants (the work split even on small shapes: minimum 0); then two
 * application threads run products at once while the pool is active (one gets the pool, the
 * other runs alone): right results, and the pool's workers are stopped at the end. */
typedef struct { int dt; int64_t m, n, k; const void *a, *b, *ref; void *c; int bad; } gemm_conc;
static void *gemm_conc_main(void *p)
{
    gemm_conc *g = p;
    size_t es = g->dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
    for (int r = 0; r < 40; r++) {
        memset(g->c, 0, (size_t)(g->m * g->n) * es);
        pg_gemm(g->dt, 0, 1, g->m, g->n, g->k, -0.75, g->a, g->m, g->b, g->n, 0, g->c, g->m);
        g->bad += memcmp(g->c, g->ref, (size_t)(g->m * g->n) * es) != 0;
    }
    return NULL;
}

static void gemm_threads(int best)
{
    static const int64_t shp[][3] = {{64, 4, 32}, {3, 32, 32}, {10, 128, 64}, {70, 45, 600}, {300, 7, 40}, {13, 310, 9}};
    static const double ab[][2] = {{1, 0}, {-0.75, 1}, {0.5, 0.5}};
    const int64_t dim = 300 + 4, kmax = 600;
    double *A = malloc(sizeof(double) * (size_t)(dim * kmax)), *B = malloc(sizeof(double) * (size_t)(dim * kmax));
    float *Af = malloc(sizeof(float) * (size_t)(dim * kmax)), *Bf = malloc(sizeof(float) * (size_t)(dim * kmax));
    double *C = malloc(sizeof(double) * (size_t)(2 * dim * dim));
    float *Cf = malloc(sizeof(float) * (size_t)(2 * dim * dim));
    for (int64_t i = 0; i < dim * kmax; i++) Af[i] = (float)(A[i] = urand()), Bf[i] = (float)(B[i] = urand());
    CHECK(pg_gemm_thread_min_flops(0) == 0);
    int bad = 0;
    for (int sel = 0; sel <= best; sel++)
        for (int path = -1; path <= 1; path++) {
            pg_gemm_kernel_select(sel);
            pg_gemm_path_select(path);
            for (size_t s = 0; s < sizeof shp / sizeof *shp; s++)
                for (int t = 0; t < 4; t++)
                    for (size_t c = 0; c < sizeof ab / sizeof *ab; c++) {
                        int64_t m = shp[s][0], n = shp[s][1], k = shp[s][2], ldc = m + 1, sz = ldc * n;
                        int ta = t >> 1, tb = t & 1;
                        for (int th = 1; th <= 4; th++) {
                            double *cc = C + (th > 1) * sz;
                            float *cf = Cf + (th > 1) * sz;
                            for (int64_t i = 0; i < sz; i++) cc[i] = cf[i] = (float)(i % 7) - 3;
                            CHECK(pg_set_threads(th) == 0);
                            pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, ab[c][0], A, (ta ? k : m) + 2, B, (tb ? n : k) + 3, ab[c][1], cc, ldc);
                            pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, ab[c][0], Af, (ta ? k : m) + 2, Bf, (tb ? n : k) + 3, ab[c][1], cf, ldc);
                            if (th > 1) {
                                int b1 = memcmp(C, C + sz, sizeof(double) * (size_t)sz) != 0;
                                int b2 = memcmp(Cf, Cf + sz, sizeof(float) * (size_t)sz) != 0;
                                if (b1 || b2)
                                    fprintf(stderr, "gemm threads=%d kernel=%d path=%d %lldx%lldx%lld ta=%d tb=%d: %s differ\n", th,
                                            sel, path, (long long)m, (long long)k, (long long)n, ta, tb, b1 ? "f64" : "f32");
                                bad += b1 + b2;
                            }
                        }
                    }
        }
    CHECK(bad == 0);
    CHECK(pg_gemm_threads_live() == 3); /* the pool of 4 threads: 3 workers */
    pg_gemm_kernel_select(-1);
    pg_gemm_path_select(-1);
    pg_gemm_thread_min_flops(-1);
    /* two application threads at once, the pool active (2 threads; 150x300x200: split) */
    CHECK(pg_set_threads(2) == 0);
    CHECK(pg_gemm_threads_live() == 1);
    int64_t m = 150, n = 200, k = 300;
    gemm_conc g[2];
    for (int i = 0; i < 2; i++) {
        int dt = i ? PG_DTYPE_F32 : PG_DTYPE_F64;
        size_t es = dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
        void *ref = malloc((size_t)(m * n) * es);
        CHECK(pg_set_threads(1) == 0);
        pg_gemm(dt, 0, 1, m, n, k, -0.75, dt == PG_DTYPE_F32 ? (void *)Af : (void *)A, m, dt == PG_DTYPE_F32 ? (void *)Bf : (void *)B, n, 0, ref, m);
        g[i] = (gemm_conc){dt, m, n, k, dt == PG_DTYPE_F32 ? (void *)Af : (void *)A, dt == PG_DTYPE_F32 ? (void *)Bf : (void *)B, ref,
                           malloc((size_t)(m * n) * es), 0};
    }
    CHECK(pg_set_threads(2) == 0);
    pg_gemm(PG_DTYPE_F64, 0, 1, m, n, k, -0.75, A, m, B, n, 0, g[0].c, m); /* starts the pool */
    CHECK(pg_gemm_threads_live() == 1);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, gemm_conc_main, &g[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(g[i].bad == 0);
        free((void *)g[i].ref), free(g[i].c);
    }
    /* the right numbers too (the single-threaded reference against a plain sum) */
    CHECK(pg_set_threads(1) == 0);
    CHECK(pg_gemm_threads_live() == 0);
    CHECK(pg_set_threads(2) == 0);
    gemm_case(PG_DTYPE_F64, 1, 0, 150, 200, 300, -0.75, 0.5);
    gemm_case(PG_DTYPE_F32, 0, 1, 150, 200, 300, 1, 0);
    CHECK(pg_gemm_threads_live() == 1);
    CHECK(pg_gemm_threads_stop() == 1 && pg_gemm_threads_live() == 0);
    gemm_case(PG_DTYPE_F64, 0, 0, 150, 200, 300, 1, 1); /* restarts the pool; the exit handler stops it */
    CHECK(pg_gemm_threads_live() == 1);
    CHECK(pg_set_threads(1) == 0);
    free(A); free(B); free(Af); free(Bf); free(C); free(Cf);
}

static void test_gemm(void)
{
    /* m, n, k: loops (a single column); the kernel (ragged; m > MC, k > KC; n > NC); the small
     * and thin products of small MLPs; m = 1, 2, 3, 7, 9, 15, 16, 17 against 2 to 16 lanes */
    static const int64_t shapes[][3] = {{1, 1, 1}, {5, 3, 4}, {129, 1, 300}, {17, 33, 9}, {150, 40, 300}, {5, 3100, 7},
                                        {64, 32, 4}, {3, 32, 32}, {10, 64, 128}, {4, 32, 64}, {32, 32, 3}, {2, 2, 2},
                                        {1, 19, 33}, {7, 19, 33}, {9, 19, 33}, {15, 19, 33}, {16, 19, 33}, {17, 19, 33}};
    static const double ab[][2] = {{1, 0}, {1, 1}, {-1.5, 0.5}, {0.25, 1}};
    CHECK(pg_gemm_kernel_select(0) == 0);
    int best = pg_gemm_kernel_select(-1);
    CHECK(best >= 0 && best <= 2);
    if (best < 2) fprintf(stderr, "gemm: this CPU lacks %s: kernels above %d not tested\n", best < 1 ? "AVX2+FMA" : "AVX-512F", best);
    /* 0 portable, 1 AVX2 + FMA, 2 AVX-512F: each kernel this CPU has */
    for (int sel = 0; sel <= best; sel++) {
        CHECK(pg_gemm_kernel_select(sel) == sel);
        for (int path = -1; path <= 1; path++) { /* by size, packed, direct */
            CHECK(pg_gemm_path_select(path) == path);
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                for (int t = 0; t < 4; t++)
                    for (size_t c = 0; c < sizeof ab / sizeof *ab; c++)
                        for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
                            gemm_case(dt, t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2], ab[c][0], ab[c][1]);
        }
        pg_gemm_path_select(-1);
    }
    gemm_same_bits(best);
    gemm_threads(best);
    CHECK(pg_gemm_kernel_select(best + 1) == best); /* a kernel the CPU lacks: the best below it */
    if (best == 2) { /* AVX2 and AVX-512 sum in the same order: the same bits, every layout */
        int64_t m = 70, n = 45, k = 600; /* ragged against both tiles; k > KC */
        pg_gemm_path_select(0);
        double *A = malloc(sizeof(double) * (size_t)(m * k)), *B = malloc(sizeof(double) * (size_t)(k * n));
        double *C = malloc(sizeof(double) * (size_t)(4 * m * n));
        float *Af = malloc(sizeof(float) * (size_t)(m * k)), *Bf = malloc(sizeof(float) * (size_t)(k * n));
        float *Cf = malloc(sizeof(float) * (size_t)(4 * m * n));
        for (int64_t i = 0; i < m * k; i++) Af[i] = (float)(A[i] = urand());
        for (int64_t i = 0; i < k * n; i++) Bf[i] = (float)(B[i] = urand());
        for (int t = 0; t < 4; t++) {
            int ta = t >> 1, tb = t & 1;
            for (int sel = 1; sel <= 2; sel++) {
                pg_gemm_kernel_select(sel);
                double *c = C + (sel - 1) * m * n;
                float *cf = Cf + (sel - 1) * m * n;
                for (int64_t i = 0; i < m * n; i++) c[i] = cf[i] = (float)(i % 7) - 3;
                pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, -0.75, A, ta ? k : m, B, tb ? n : k, 0.5, c, m);
                pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, -0.75, Af, ta ? k : m, Bf, tb ? n : k, 0.5, cf, m);
            }
            CHECK(memcmp(C, C + m * n, sizeof(double) * (size_t)(m * n)) == 0);
            CHECK(memcmp(Cf, Cf + m * n, sizeof(float) * (size_t)(m * n)) == 0);
        }
        free(A); free(B); free(C); free(Af); free(Bf); free(Cf);
        pg_gemm_path_select(-1);
    }
    pg_gemm_kernel_select(-1);
    /* k == 0: C = beta C (beta 0 overwrites NaN garbage; 1 leaves C alone) */
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int bi = 0; bi < 3; bi++) {
            double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5, one = 1, c[6];
            float cf[6];
            for (int i = 0; i < 6; i++) c[i] = cf[i] = bi == 0 ? NAN : (float)(i + 1);
            pg_gemm(dt, 0, 0, 3, 2, 0, 2.0, &one, 3, &one, 1, beta, dt == PG_DTYPE_F32 ? (void *)cf : (void *)c, 3);
            for (int i = 0; i < 6; i++) CHECK((dt == PG_DTYPE_F32 ? cf[i] : c[i]) == beta * (i + 1));
        }
}

#include "driver_host.c"
#include "driver_codec.c"
#include "driver_lost.c"
#include "driver_hostile.c"
#include "driver_version.c"
#include "driver_index.c"

/* each part leaves nothing alive behind it */
static void run(const char *name, void (*fn)(void))
{
    int64_t before = pg_live_objects();
    fn();
    pg_tape_clear();
    if (pg_live_objects() != before) fprintf(stderr, "%s: %lld objects left alive\n", name, (long long)(pg_live_objects() - before));
    CHECK(pg_live_objects() == before);
}

int main(void)
{
    run("tensors", test_tensors);
    run("errors", test_errors);
    run("tape", test_tape);
    run("ops", test_ops);
    run("gemm", test_gemm);
    run("optim", test_optim);
    run("memory", test_memory);
    run("dist", test_dist);
    run("threads", test_threads);
    run("concurrent", test_concurrent);
    run("host", test_host);
    run("codec", test_codec);
    run("lost", test_lost);
    run("hostile", test_hostile);
    run("versions", test_versions);
    run("views", test_views);
    run("index", test_index);
    pg_tape_clear();
    pg_memory_counts st;
    pg_memory_stats(&st);
    CHECK(pg_live_objects() == 0);
    CHECK(st.total == 0);
    if (pg_live_objects() != 0 || st.total != 0)
        fprintf(stderr, "left alive: %lld tensors, %lld maps, %lld optimizers, %lld bytes\n",
                (long long)st.live_tensors, (long long)st.live_gradmaps, (long long)st.live_optims,
                (long long)st.total);
    printf("driver: %d checks, %d failed\n", n_checks, n_failed);
    return n_failed != 0;
}
