/* Pooling in the core (native/ops_pool.c): known values, the tie and NaN rule, padding,
 * gradchecks of max / average / global pooling in both dtypes, a compiled replay, the image tag
 * on the result and the refusals' texts. */
#include <math.h>
#include <string.h>
#include "check.h"

static pg_tensor *mat(int64_t r, int64_t c, const double *v)
{
    return pg_tensor_new(PG_DTYPE_F64, r, c, v, PG_DTYPE_F64, 1, r);
}

typedef struct {
    int kind, dims, global;
    double shape[3], k[2], s[2], p[2];
} pool_ctx;

static pg_tensor *f_pool(pg_tensor **in, const void *ctx)
{
    const pool_ctx *c = ctx;
    if (c->global) return pg_global_pool(in[0], c->kind, c->shape, NULL);
    return pg_pool(in[0], c->kind, c->dims, c->shape, c->k, c->s, c->p, NULL);
}

static void known_values(void)
{
    /* one 4x4 image, values 1..16 row by row; 2x2 max with stride 2 -> 6 8 14 16 */
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i + 1;
    pg_tensor *x = mat(16, 1, v);
    const double sh[3] = {1, 4, 4}, k[2] = {2, 2};
    const double p0[2] = {0, 0}, p1[2] = {1, 1}, s1[2] = {1, 1};
    pg_tensor *y = pg_pool(x, PG_POOL_KIND_MAX, 2, sh, k, NULL, p0, NULL);
    double o[25];
    CHECK(y && pg_tensor_nrow(y) == 4);
    if (y) {
        pg_tensor_read(y, o, PG_DTYPE_F64);
        CHECK(o[0] == 6 && o[1] == 8 && o[2] == 14 && o[3] == 16);
        int64_t img[3];
        CHECK(pg_tensor_image_shape(y, img) == 1 && img[0] == 2 && img[1] == 2 && img[2] == 1);
    }
    REL(y);
    /* average with padding 1, stride 1: the corner window holds only 1, divided by 4 */
    y = pg_pool(x, PG_POOL_KIND_AVG, 2, sh, k, s1, p1, NULL);
    CHECK(y && pg_tensor_nrow(y) == 25);
    if (y) {
        pg_tensor_read(y, o, PG_DTYPE_F64);
        CHECK(o[0] == 0.25 && o[6] == (1 + 2 + 5 + 6) / 4.0 && o[24] == 4);
    }
    REL(y);
    /* global: mean 8.5, max 16, [C, N] untagged */
    y = pg_global_pool(x, PG_POOL_KIND_AVG, sh, NULL);
    int64_t img[3];
    CHECK(y && read1(y) == 8.5 && pg_tensor_image_shape(y, img) == 0);
    REL(y);
    REL(x);
}

static void ties_and_nan(void)
{
    /* a 1-D window of 4: ties go to the first maximum, NaN to the last NaN */
    const double tv[] = {3, 1, 3, 2}, nv[] = {NAN, 5, NAN, 1};
    const double sh[2] = {1, 4}, k[1] = {4}, p[1] = {0};
    for (int c = 0; c < 2; c++) {
        pg_tensor *x = mat(4, 1, c ? nv : tv);
        pg_tensor_set_requires_grad(x, 1);
        pg_tape_begin();
        pg_tensor *y = pg_pool(x, PG_POOL_KIND_MAX, 1, sh, k, NULL, p, NULL);
        pg_tensor *s = y ? pg_sum(y, 0) : NULL;
        pg_gradmap *g = s ? pg_backward(s) : NULL;
        CHECK(g != NULL);
        double gv[4] = {0};
        pg_tensor *gx = g ? pg_gradmap_get(g, x) : NULL;
        if (gx) pg_tensor_read(gx, gv, PG_DTYPE_F64);
        if (c == 0) CHECK(read1(y) == 3 && gv[0] == 1 && gv[2] == 0);
        else CHECK(isnan(read1(y)) && gv[0] == 0 && gv[2] == 1 && gv[1] == 0);
        if (g) pg_gradmap_free(g);
        REL(s);
        REL(y);
        pg_tape_clear();
        pg_tape_end();
        REL(x);
    }
}

static void gradchecks(void)
{
    const pool_ctx cs[] = {
        {PG_POOL_KIND_MAX, 2, 0, {2, 5, 6}, {2, 2}, {2, 2}, {0, 0}},
        {PG_POOL_KIND_MAX, 2, 0, {2, 5, 6}, {3, 2}, {1, 2}, {1, 1}},
        {PG_POOL_KIND_AVG, 2, 0, {2, 5, 6}, {2, 3}, {2, 1}, {1, 1}},
        {PG_POOL_KIND_AVG, 2, 0, {2, 5, 6}, {3, 3}, {2, 2}, {0, 0}},
        {PG_POOL_KIND_MAX, 1, 0, {3, 7}, {3}, {2}, {1}},
        {PG_POOL_KIND_AVG, 1, 0, {3, 7}, {2}, {1}, {1}},
        {PG_POOL_KIND_MAX, 2, 1, {2, 5, 6}, {0}, {0}, {0}},
        {PG_POOL_KIND_AVG, 2, 1, {2, 5, 6}, {0}, {0}, {0}},
    };
    for (int dt = 0; dt < 2; dt++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            int64_t rows = cs[i].dims == 1
                ? (int64_t)(cs[i].shape[0] * cs[i].shape[1])
                : (int64_t)(cs[i].shape[0] * cs[i].shape[1] * cs[i].shape[2]);
            const int64_t shapes[2] = {rows, 3};
            gradcheck("pool", f_pool, &cs[i], 1, shapes, 0, 1, dt ? PG_DTYPE_F32 : PG_DTYPE_F64);
        }
}

static void compiled(void)
{
    /* a compiled replay with new inputs equals the eager op */
    lcg = 7;
    pg_tensor *x = rnd(PG_DTYPE_F64, 2 * 4 * 4, 3, 0);
    const double sh[3] = {2, 4, 4}, k[2] = {2, 2}, p[2] = {1, 1};
    CHECK(pg_graph_record_begin() == 0);
    pg_tensor *y = pg_pool(x, PG_POOL_KIND_MAX, 2, sh, k, NULL, p, NULL);
    pg_tensor *s = pg_sum(y, 0);
    pg_graph *g = pg_graph_record_end(s, &x, 1, PG_GRAPH_BUILD_FORWARD, NULL);
    CHECK(g != NULL);
    double nv[96];
    for (int i = 0; i < 96; i++) nv[i] = urand();
    CHECK(g && pg_graph_set_input(g, 0, nv, PG_DTYPE_F64, 32, 3, 1, 32) == 0);
    CHECK(g && pg_graph_run(g) == 0);
    pg_tensor *x2 = mat(32, 3, nv);
    pg_tensor *y2 = pg_pool(x2, PG_POOL_KIND_MAX, 2, sh, k, NULL, p, NULL);
    pg_tensor *s2 = pg_sum(y2, 0);
    CHECK(g && read1(pg_graph_output(g)) == read1(s2));
    if (g) pg_graph_free(g);
    REL(s);
    REL(y);
    REL(s2);
    REL(y2);
    REL(x2);
    REL(x);
}

static void refusals(void)
{
    pg_tensor *x = pg_tensor_full(PG_DTYPE_F32, 48, 2, 0);
    const double sh[3] = {3, 4, 4}, k2[2] = {2, 2}, p0[2] = {0, 0};
    const double kbig[2] = {5, 5}, kfrac[2] = {2.5, 2}, s0[2] = {0, 1}, pbig[2] = {2, 0};
    const double shbad[3] = {3, 4, 5};
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_MAX, 2, NULL, k2, NULL, p0, "ag_max_pool2d") == NULL,
              PG_STATUS_ERR_SHAPE,
              "ag_max_pool2d: x [48x2] f32 carries no image shape; give input_shape = (C, H, W)");
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_MAX, 2, sh, kbig, NULL, p0, NULL) == NULL,
              PG_STATUS_ERR_SHAPE,
              "ag_max_pool2d_op: kernel_size (5, 5) is larger than the padded input (H 4, W 4 "
              "with padding (0, 0)); x is [48x2] f32");
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_AVG, 2, sh, kfrac, NULL, p0, NULL) == NULL,
              PG_STATUS_ERR_VALUE,
              "ag_avg_pool2d_op: kernel_size must be one or two (H, W) whole numbers >= 1, got "
              "(2.5, 2)");
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_AVG, 2, sh, k2, s0, p0, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_avg_pool2d_op: stride must be one or two (H, W) whole numbers >= 1, got (0, 1)");
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_MAX, 2, sh, k2, NULL, pbig, NULL) == NULL,
              PG_STATUS_ERR_VALUE,
              "ag_max_pool2d_op: padding (2, 0) must be at most half of kernel_size (2, 2)");
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_MAX, 2, shbad, k2, NULL, p0, NULL) == NULL,
              PG_STATUS_ERR_SHAPE,
              "ag_max_pool2d_op: input_shape (C 3, H 4, W 5) needs 60 rows (C * H * W), but x is "
              "[48x2] f32");
    const double sh1[2] = {3, 16}, k1[1] = {17}, p1[1] = {0};
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_MAX, 1, sh1, k1, NULL, p1, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_max_pool1d_op: kernel_size 17 is larger than the padded input (length 16 with "
              "padding 0)");
    /* a tag with H > 1 refused by a 1-D op; the tag read by a 2-D one */
    const int64_t tag[3] = {4, 4, 3};
    CHECK(pg_tensor_set_image_shape(x, tag, NULL) == 0);
    CHECK_ERR(pg_pool(x, PG_POOL_KIND_AVG, 1, NULL, k1, NULL, p1, NULL) == NULL,
              PG_STATUS_ERR_SHAPE, "a 1-D op needs H = 1 (give input_shape = (C, L))");
    pg_tensor *y = pg_pool(x, PG_POOL_KIND_AVG, 2, NULL, k2, NULL, p0, NULL);
    CHECK(y && pg_tensor_nrow(y) == 12);
    REL(y);
    y = pg_global_pool(x, PG_POOL_KIND_MAX, NULL, NULL);
    CHECK(y && pg_tensor_nrow(y) == 3 && pg_tensor_ncol(y) == 2);
    REL(y);
    REL(x);
}

void test_pool(void)
{
    known_values();
    ties_and_nan();
    gradchecks();
    compiled();
    refusals();
}
