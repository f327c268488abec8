/* Tensors (every source dtype, strided and empty copies, defaults) and the error paths
 * (NULL, foreign pointers, bad shapes, dtypes and values, huge sizes). */
#include <math.h>
#include <string.h>
#include "check.h"

/* ---- tensors: construction, copies, accessors ---- */
void test_tensors(void)
{
    { /* the image shape: set with W * H * C == nrow, kept by elementwise ops, cleared */
        pg_tensor *x = rnd(PG_DTYPE_F64, 12, 2, 0);
        int64_t shp[3] = {2, 3, 2}, got[3] = {0, 0, 0}, bad[3] = {2, 2, 2}, neg[3] = {-1, 1, 1};
        CHECK(pg_tensor_image_shape(x, got) == 0);
        CHECK(pg_tensor_set_image_shape(x, shp, "f") == 0);
        pg_tensor *y = pg_unary(PG_UNARY_OP_TANH, x);
        CHECK(pg_tensor_image_shape(y, got) == 1 && got[0] == 2 && got[1] == 3 && got[2] == 2);
        CHECK_ERR(pg_tensor_set_image_shape(x, bad, "f") != 0, PG_STATUS_ERR_VALUE,
                  "f: shape (W 2, H 2, C 2) needs W * H * C rows, but x is [12x2] f64");
        CHECK_ERR(pg_tensor_set_image_shape(x, neg, "f") != 0, PG_STATUS_ERR_VALUE, ">= 1");
        CHECK(pg_tensor_set_image_shape(x, NULL, "f") == 0 && pg_tensor_image_shape(x, got) == 0);
        CHECK(pg_tensor_image_shape(NULL, got) < 0);
        REL(x);
        REL(y);
        pg_clear_error();
    }
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
    pg_tensor *cl = pg_tensor_clone(rv), *ca = pg_tensor_cast(rv, PG_DTYPE_F32),
              *fu = pg_tensor_full(PG_DTYPE_F32, 6, 1, 2.5);
    CHECK(cl && ca && fu && pg_tensor_id(cl) != pg_tensor_id(rv));
    CHECK(pg_tensor_dtype(ca) == PG_DTYPE_F32 && pg_tensor_numel(fu) == 6 &&
          pg_tensor_is_leaf(fu) == 1);
    CHECK(pg_tensor_set_grad(rv, cl) == 0 && pg_tensor_grad(rv) == cl);
    CHECK(pg_tensor_set_grad(rv, NULL) == 0 && pg_tensor_grad(rv) == NULL);
    CHECK_ERR(pg_tensor_set_grad(rv, ca) != 0, PG_STATUS_ERR_SHAPE, "does not match");
    CHECK_ERR(pg_tensor_write(rv, d, PG_DTYPE_F64, 2, 3, 1, 2) != 0, PG_STATUS_ERR_SHAPE,
              "assigning data");
    CHECK_ERR(pg_tensor_write(rv, d, 99, 6, 1, 1, 6) != 0, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_tensor_read(rv, o6, PG_DTYPE_I32) != 0, PG_STATUS_ERR_DTYPE, "read");
    CHECK(pg_tensor_set_requires_grad(rv, 1) == 0 && pg_tensor_requires_grad(rv) == 1);
    CHECK(pg_tensor_set_requires_grad(rv, 0) == 0 && pg_tensor_requires_grad(rv) == 0);
    CHECK(strcmp(pg_tensor_op(rv), "") == 0);
    REL(rv);
    REL(cl);
    REL(ca);
    REL(fu);
    /* empty tensors in every position */
    pg_tensor *e = pg_tensor_new(PG_DTYPE_F32, 0, 5, NULL, PG_DTYPE_F32, 1, 0),
              *e2 = pg_tensor_full(PG_DTYPE_F64, 4, 0, 1.0);
    CHECK(e && e2 && pg_tensor_numel(e) == 0 && pg_tensor_numel(e2) == 0);
    pg_tensor *es = pg_sum(e, 0), *et = pg_transpose(e2);
    CHECK(es && read1(es) == 0 && et && pg_tensor_nrow(et) == 0);
    REL(e);
    REL(e2);
    REL(es);
    REL(et);
    /* defaults */
    CHECK(pg_set_default_dtype(PG_DTYPE_F64) == PG_DTYPE_F32 && pg_default_dtype() == PG_DTYPE_F64);
    CHECK(pg_set_default_dtype(PG_DTYPE_F32) == PG_DTYPE_F64);
    CHECK_ERR(pg_set_default_dtype(PG_DTYPE_I32) != 0 && pg_default_dtype() == PG_DTYPE_F32,
              PG_STATUS_ERR_DTYPE, "ag_dtype");
    CHECK(strcmp(pg_version(), "") != 0 && strcmp(pg_blas_name(), "builtin") == 0);
    CHECK(pg_set_threads(2) == 0 && pg_get_threads() == 2 && pg_set_threads(1) == 0);
    CHECK_ERR(pg_set_threads(0) != 0, PG_STATUS_ERR_VALUE, "ag_set_threads");
}

/* ---- error paths: NULL, foreign pointers, bad shapes / dtypes / values, huge sizes ---- */
void test_errors(void)
{
    pg_tensor *a = rnd(PG_DTYPE_F32, 2, 3, 0), *b = rnd(PG_DTYPE_F32, 4, 5, 0),
              *c = rnd(PG_DTYPE_F64, 2, 3, 0);
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
        for (int u = PG_UNARY_OP_RELU; u <= PG_UNARY_OP_NEG; u++)
            CHECK_ERR(pg_unary(u, x) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
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
        CHECK_ERR(pg_batch_norm(x, NULL, NULL, NULL, NULL, 1e-5, 0.1, 1) == NULL, PG_STATUS_ERR_ARG,
                  badmsg[k]);
        CHECK_ERR(pg_layer_norm(x, NULL, NULL, 1e-5) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        const double dids[3] = {0, 0, 0};
        CHECK_ERR(pg_embedding(x, dids, 3) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
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
        CHECK_ERR(pg_tensor_set_grad(a, x) != 0 || x == NULL, x ? PG_STATUS_ERR_ARG : 0,
                  x ? badmsg[k] : "");
        CHECK_ERR(pg_tensor_set_requires_grad(x, 1) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        pg_tensor *pl[2] = {a, x};
        CHECK_ERR(pg_optim_new(1, pl, 2, NULL) == NULL, PG_STATUS_ERR_ARG, badmsg[k]);
        double nrm;
        CHECK_ERR(pg_clip_grad_norm(pl, 2, NULL, 1.0, &nrm) != 0, PG_STATUS_ERR_ARG, badmsg[k]);
        pg_tensor_retain(x); /* both ignore what is not a live tensor */
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
    CHECK_ERR(pg_bce_logits_loss(a, c) == NULL, PG_STATUS_ERR_DTYPE,
              "ag_bce_with_logits_loss: dtype mismatch");
    CHECK_ERR(pg_huber_loss(a, a, 0.0) == NULL, PG_STATUS_ERR_VALUE,
              "ag_huber_loss: delta must be");
    CHECK_ERR(pg_huber_loss(a, a, NAN) == NULL, PG_STATUS_ERR_VALUE,
              "ag_huber_loss: delta must be");
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
    CHECK_ERR(pg_reshape(a, INT64_C(3074457345618258603), 2) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_reshape");
    CHECK_ERR(pg_reshape(a, (INT64_C(1) << 62) + 3, 4) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, INT64_MAX, INT64_MAX) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    CHECK_ERR(pg_reshape(a, -1, 0) == NULL, PG_STATUS_ERR_SHAPE, "ag_reshape");
    int64_t ids[3] = {0, 5, -1};
    CHECK_ERR(pg_softmax_ce_loss_idx(a, ids, 3) == NULL, PG_STATUS_ERR_VALUE, "out of range");
    CHECK_ERR(pg_softmax_ce_loss_idx(a, ids, 2) == NULL, PG_STATUS_ERR_SHAPE, "class ids");
    CHECK_ERR(pg_softmax_ce_loss_idx(a, NULL, 3) == NULL, PG_STATUS_ERR_ARG, "NULL");
    const double dids[3] = {0, 5, -1}, big[2] = {1, 1e300};
    CHECK_ERR(
        pg_embedding(a, dids, 3) == NULL, PG_STATUS_ERR_VALUE,
        "ag_embedding: id 5 at position 1 is out of range [0, 3) for weight [2x3] f32 (ids are "
        "0-based)");
    CHECK_ERR(pg_embedding(a, big, 2) == NULL, PG_STATUS_ERR_VALUE, "id 1e+300 at position 1");
    CHECK_ERR(pg_embedding(a, NULL, 2) == NULL, PG_STATUS_ERR_ARG, "ag_embedding");
    CHECK_ERR(pg_embedding(a, dids, -1) == NULL, PG_STATUS_ERR_VALUE, "ag_embedding");
    CHECK_ERR(pg_slice_rows(a, 1, 2) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, -1, 1) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, INT64_MAX, INT64_MAX) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_slice_rows(a, 1, INT64_MAX) == NULL, PG_STATUS_ERR_VALUE, "ag_slice_rows");
    CHECK_ERR(pg_concat_rows(a, b) == NULL, PG_STATUS_ERR_SHAPE, "ag_concat_rows");
    CHECK_ERR(pg_matmul_t(a, a, 0, 0, 1) == NULL, PG_STATUS_ERR_SHAPE, "");
    CHECK_ERR(pg_batch_norm(a, b, NULL, NULL, NULL, 1e-5, 0.1, 1) == NULL, PG_STATUS_ERR_SHAPE,
              "gamma");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, -1, 0.1, 1) == NULL, PG_STATUS_ERR_VALUE,
              "eps");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, NAN, 0.1, 1) == NULL, PG_STATUS_ERR_VALUE,
              "eps");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, 1e-5, 2, 1) == NULL, PG_STATUS_ERR_VALUE,
              "momentum");
    CHECK_ERR(pg_batch_norm(a, NULL, NULL, NULL, NULL, 1e-5, 0.1, 0) == NULL, PG_STATUS_ERR_ARG,
              "running");
    CHECK_ERR(pg_layer_norm(a, c, NULL, 1e-5) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_backward(a) == NULL, PG_STATUS_ERR_SHAPE, "1x1");
    /* sizes */
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, -1, 3, NULL, PG_DTYPE_F32, 1, 1) == NULL,
              PG_STATUS_ERR_VALUE, ">= 0");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, 3, -1, NULL, PG_DTYPE_F32, 1, 1) == NULL,
              PG_STATUS_ERR_VALUE, ">= 0");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, INT64_MAX, INT64_MAX, NULL, PG_DTYPE_F32, 1, 1) == NULL,
              PG_STATUS_ERR_VALUE, "too large");
    CHECK_ERR(pg_tensor_full(PG_DTYPE_F64, INT64_C(1) << 40, INT64_C(1) << 40, 0) == NULL,
              PG_STATUS_ERR_VALUE, "too large");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_I32, 2, 2, NULL, PG_DTYPE_F32, 1, 1) == NULL,
              PG_STATUS_ERR_DTYPE, "dtype");
    CHECK_ERR(pg_tensor_new(PG_DTYPE_F32, 2, 2, junk, 42, 1, 2) == NULL, PG_STATUS_ERR_DTYPE,
              "dtype");
    CHECK_ERR(pg_tensor_cast(a, 7) == NULL, PG_STATUS_ERR_DTYPE, "dtype");
    /* tape misuse */
    CHECK_ERR(pg_tape_end() != 0, PG_STATUS_ERR_STATE, "without a matching begin");
    CHECK_ERR(pg_tape_unstash() != 0, PG_STATUS_ERR_STATE, "no tape");
    /* NULL handles of the other object kinds */
    CHECK(pg_gradmap_size(NULL) == 0 && pg_gradmap_key_id(NULL, 0) == -1 &&
          pg_gradmap_value(NULL, 0) == NULL);
    CHECK(pg_gradmap_get_id(NULL, 1) == NULL);
    pg_gradmap_free(NULL);
    pg_optim_free(NULL);
    CHECK(pg_optim_kind(NULL) == -1 && pg_optim_nparams(NULL) == -1 &&
          pg_optim_param(NULL, 0) == NULL);
    CHECK_ERR(pg_optim_set(NULL, "lr", 1) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(isnan(pg_optim_get(NULL, "lr")), PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_step(NULL, NULL) < 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_step_sum(NULL, NULL) < 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_load(NULL, NULL, 0, 0, 0) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_optim_zero_grad(NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK(pg_optim_state(NULL, 0, 0) == NULL);
    CHECK_ERR(pg_optim_new(9, NULL, 0, NULL) == NULL, PG_STATUS_ERR_VALUE, "kind");
    CHECK_ERR(pg_optim_new(0, NULL, 2, NULL) == NULL, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_optim_new(0, &a, -1, NULL) == NULL, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_clip_grad_norm(NULL, 2, NULL, 1, NULL) != 0, PG_STATUS_ERR_ARG, "parameter list");
    CHECK_ERR(pg_clip_grad_norm(&a, 1, NULL, -1, NULL) != 0, PG_STATUS_ERR_VALUE, "max_norm");
    CHECK_ERR(pg_clip_grad_norm(&a, 1, NULL, NAN, NULL) != 0, PG_STATUS_ERR_VALUE, "max_norm");
    CHECK_ERR(pg_memory_stats(NULL) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_memory_category_peaks(NULL, 5) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_tape_memory(NULL, NULL, NULL, NULL, 0) < 0, PG_STATUS_ERR_ARG, "NULL");
    REL(a);
    REL(b);
    REL(c);
}
