/* Padding and upsampling in the core (native/ops_resize.c): known values of each mode,
 * gradchecks in both dtypes, a compiled replay, the image tag and the refusals' texts. */
#include <math.h>
#include <string.h>
#include "check.h"

static pg_tensor *mat(int64_t r, int64_t c, const double *v)
{
    return pg_tensor_new(PG_DTYPE_F64, r, c, v, PG_DTYPE_F64, 1, r);
}

typedef struct {
    int up, dims, npad;
    double shape[3], pad[4], value;
    const char *mode;
} rs_ctx;

static pg_tensor *f_rs(pg_tensor **in, const void *ctx)
{
    const rs_ctx *c = ctx;
    if (c->up) return pg_upsample2d(in[0], c->dims, c->shape, c->pad, c->mode, NULL);
    return pg_pad2d(in[0], c->dims, c->shape, c->pad, c->npad, c->value, c->mode, NULL);
}

static void known_values(void)
{
    /* one 1x3 signal 1 2 3 padded (2, 1): constant 9 9 1 2 3 9, reflect 3 2 1 2 3 2,
     * replicate 1 1 1 2 3 3 */
    const double v[3] = {1, 2, 3}, sh[2] = {1, 3}, p[2] = {2, 1};
    const double want[3][6] = {{9, 9, 1, 2, 3, 9}, {3, 2, 1, 2, 3, 2}, {1, 1, 1, 2, 3, 3}};
    const char *modes[3] = {"constant", "reflect", "replicate"};
    pg_tensor *x = mat(3, 1, v);
    for (int m = 0; m < 3; m++) {
        pg_tensor *y = pg_pad2d(x, 1, sh, p, 2, m ? 0 : 9, modes[m], NULL);
        double o[6] = {0};
        CHECK(y && pg_tensor_nrow(y) == 6);
        if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
        CHECK(!memcmp(o, want[m], sizeof o));
        int64_t img[3];
        CHECK(y && pg_tensor_image_shape(y, img) == 1 && img[0] == 6 && img[1] == 1 && img[2] == 1);
        REL(y);
    }
    /* a 2x2 image 1 2 / 3 4 upsampled by 2: nearest repeats, bilinear (align_corners False)
     * gives row 0: 1 1.25 1.75 2 */
    const double v4[4] = {1, 2, 3, 4}, sh2[3] = {1, 2, 2}, s2[2] = {2, 2};
    pg_tensor *x4 = mat(4, 1, v4);
    pg_tensor *y = pg_upsample2d(x4, 2, sh2, s2, NULL, NULL);
    double o[16] = {0};
    CHECK(y && pg_tensor_nrow(y) == 16);
    if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
    CHECK(o[0] == 1 && o[1] == 1 && o[2] == 2 && o[4] == 1 && o[8] == 3 && o[15] == 4);
    REL(y);
    y = pg_upsample2d(x4, 2, sh2, s2, "bilinear", NULL);
    if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
    CHECK(y && o[0] == 1 && o[1] == 1.25 && o[2] == 1.75 && o[3] == 2 && o[15] == 4);
    CHECK(y && o[4] == 1.5 && o[5] == 1.75);
    REL(y);
    REL(x4);
    REL(x);
}

static void gradchecks(void)
{
    const rs_ctx cs[] = {
        {0, 2, 4, {2, 3, 4}, {1, 2, 0, 3}, 0.5, "constant"},
        {0, 2, 2, {2, 3, 4}, {2, 3}, 0, "reflect"},
        {0, 2, 4, {2, 3, 4}, {3, 1, 2, 0}, 0, "reflect"},
        {0, 2, 1, {2, 3, 4}, {3}, 0, "replicate"},
        {0, 1, 2, {3, 5}, {4, 1}, 0, "reflect"},
        {0, 1, 1, {3, 5}, {2}, 0, NULL},
        /* negative pads crop, mixed signs, every mode (torch's F.pad) */
        {0, 2, 4, {2, 3, 4}, {-1, 2, 1, -2}, 0.5, "constant"},
        {0, 2, 4, {2, 3, 4}, {-3, 1, -1, -1}, 0, "constant"},
        {0, 2, 4, {2, 3, 4}, {2, -3, -1, 2}, 0, "reflect"},
        {0, 2, 4, {2, 3, 4}, {-5, 3, 0, -2}, 0, "replicate"},
        {0, 1, 2, {3, 5}, {-7, 4}, 0, "reflect"},
        {0, 1, 2, {3, 5}, {-2, -2}, 0, NULL},
        {1, 2, 0, {2, 3, 4}, {2, 3}, 0, "nearest"},
        {1, 2, 0, {2, 3, 4}, {3, 2}, 0, "bilinear"},
        {1, 2, 0, {2, 1, 4}, {1, 3}, 0, "bilinear"},
        {1, 1, 0, {3, 5}, {3}, 0, "linear"},
    };
    for (int dt = 0; dt < 2; dt++)
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            int64_t rows = cs[i].dims == 1
                ? (int64_t)(cs[i].shape[0] * cs[i].shape[1])
                : (int64_t)(cs[i].shape[0] * cs[i].shape[1] * cs[i].shape[2]);
            const int64_t shapes[2] = {rows, 3};
            gradcheck(cs[i].up ? "upsample" : "pad", f_rs, &cs[i], 1, shapes, 0, 1,
                      dt ? PG_DTYPE_F32 : PG_DTYPE_F64);
        }
}

static void compiled(void)
{
    /* a compiled replay with new inputs equals the eager ops */
    lcg = 9;
    pg_tensor *x = rnd(PG_DTYPE_F64, 2 * 3 * 4, 3, 0);
    const double sh[3] = {2, 3, 4}, p[4] = {1, 2, 2, 1}, s[2] = {2, 3};
    CHECK(pg_graph_record_begin() == 0);
    pg_tensor *a = pg_pad2d(x, 2, sh, p, 4, 0, "reflect", NULL);
    pg_tensor *y = pg_upsample2d(a, 2, NULL, s, "bilinear", NULL);
    pg_tensor *q = pg_mul(y, y);
    pg_tensor *t = pg_sum(q, 0);
    pg_graph *g = pg_graph_record_end(t, &x, 1, PG_GRAPH_BUILD_FORWARD, NULL);
    CHECK(g != NULL);
    double nv[72];
    for (int i = 0; i < 72; i++) nv[i] = urand();
    CHECK(g && pg_graph_set_input(g, 0, nv, PG_DTYPE_F64, 24, 3, 1, 24) == 0);
    CHECK(g && pg_graph_run(g) == 0);
    pg_tensor *x2 = mat(24, 3, nv);
    pg_tensor *a2 = pg_pad2d(x2, 2, sh, p, 4, 0, "reflect", NULL);
    pg_tensor *y2 = pg_upsample2d(a2, 2, NULL, s, "bilinear", NULL);
    pg_tensor *q2 = pg_mul(y2, y2);
    pg_tensor *t2 = pg_sum(q2, 0);
    CHECK(g && t2 && read1(pg_graph_output(g)) == read1(t2));
    if (g) pg_graph_free(g);
    pg_tensor *ts[] = {a, y, q, t, a2, y2, q2, t2, x2, x};
    for (int i = 0; i < 10; i++) REL(ts[i]);
}

/* negative pads: known crops and the refusals (an empty result; "constant" crops beyond x) */
static void crops(void)
{
    /* 0 1 2 3 4 padded (-2, 3): constant 2 3 4 9 9 9, reflect 2 3 4 3 2 1, replicate 2 3 4 4 4
     * 4; (-7, 4): reflect 1 0, replicate 4 4, constant refused (crops 7 of 5) */
    const double v[5] = {0, 1, 2, 3, 4}, sh[2] = {1, 5}, p[2] = {-2, 3}, p7[2] = {-7, 4};
    const double want[3][6] = {{2, 3, 4, 9, 9, 9}, {2, 3, 4, 3, 2, 1}, {2, 3, 4, 4, 4, 4}};
    const double want7[3][2] = {{0, 0}, {1, 0}, {4, 4}};
    const char *modes[3] = {"constant", "reflect", "replicate"};
    pg_tensor *x = mat(5, 1, v);
    for (int m = 0; m < 3; m++) {
        pg_tensor *y = pg_pad2d(x, 1, sh, p, 2, m ? 0 : 9, modes[m], NULL);
        double o[6] = {0};
        CHECK(y && pg_tensor_nrow(y) == 6);
        if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
        CHECK(!memcmp(o, want[m], sizeof o));
        REL(y);
        if (!m) continue;
        y = pg_pad2d(x, 1, sh, p7, 2, 0, modes[m], NULL);
        double o7[2] = {0};
        CHECK(y && pg_tensor_nrow(y) == 2);
        if (y) pg_tensor_read(y, o7, PG_DTYPE_F64);
        CHECK(!memcmp(o7, want7[m], sizeof o7));
        REL(y);
    }
    CHECK_ERR(pg_pad2d(x, 1, sh, p7, 2, 0, NULL, "ag_pad1d") == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad1d: padding (left -7, right 4) crops more than the input (C 1, L 5) holds; "
              "x is [5x1] f64");
    const double e1[2] = {-3, -2}, e2[4] = {0, 0, 1, -2}, sh2[3] = {1, 1, 5};
    CHECK_ERR(pg_pad2d(x, 1, sh, e1, 2, 0, "replicate", NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad1d_op: padding (left -3, right -2) leaves an empty output (L 0) of the input "
              "(C 1, L 5); x is [5x1] f64");
    CHECK_ERR(pg_pad2d(x, 2, sh2, e2, 4, 0, NULL, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad2d_op: padding (left 0, right 0, top 1, bottom -2) crops more than the input "
              "(C 1, H 1, W 5) holds");
    CHECK_ERR(pg_pad2d(x, 2, sh2, e2, 4, 0, "reflect", NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad2d_op: reflect padding (left 0, right 0, top 1, bottom -2) must be less than");
    double lrtb[4];
    const double n1[1] = {-1};
    CHECK(pg_pad2d_check(2, n1, 1, 0, "reflect", NULL, lrtb) == 0 && lrtb[0] == -1 &&
          lrtb[3] == -1);
    REL(x);
}

static void refusals(void)
{
    pg_tensor *x = pg_tensor_full(PG_DTYPE_F32, 48, 2, 0);
    const double sh[3] = {3, 4, 4}, p1[1] = {1}, p3[3] = {1, 1, 1}, pf[2] = {1.5, 0};
    const double p4[4] = {1, 4, 0, 0}, s0[2] = {0, 2};
    CHECK_ERR(pg_pad2d(x, 2, NULL, p1, 1, 0, NULL, "ag_pad2d") == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad2d: x [48x2] f32 carries no image shape; give input_shape = (C, H, W)");
    CHECK_ERR(pg_pad2d(x, 2, sh, p3, 3, 0, NULL, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_pad2d_op: padding must be a whole number (negative: crop), a pair (H, W) or four "
              "(left, right, top, bottom) of them, got 3 values");
    CHECK_ERR(pg_pad2d(x, 2, sh, pf, 2, 0, NULL, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "of them, got (1.5, 0)");
    CHECK_ERR(pg_pad2d(x, 2, sh, p1, 1, 0, "circular", NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_pad2d_op: mode must be \"constant\", \"reflect\" or \"replicate\", got "
              "\"circular\"");
    CHECK_ERR(pg_pad2d(x, 2, sh, p1, 1, 2, "reflect", NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_pad2d_op: value (2) applies to mode \"constant\" only, got mode \"reflect\"");
    CHECK_ERR(pg_pad2d(x, 2, sh, p4, 4, 0, "reflect", NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_pad2d_op: reflect padding (left 1, right 4, top 0, bottom 0) must be less than "
              "the input's W 4 (left, right) and H 4 (top, bottom); x is [48x2] f32");
    CHECK_ERR(
        pg_pad2d_check(1, p4, 4, 0, NULL, "ag_pad1d", NULL) == PG_STATUS_ERR_VALUE,
        PG_STATUS_ERR_VALUE,
        "ag_pad1d: padding must be a whole number (negative: crop) or a pair (left, right) of "
        "them, got 4 values");
    CHECK_ERR(pg_upsample2d(x, 2, sh, s0, NULL, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_upsample2d_op: scale_factor must be one or two (H, W) whole numbers >= 1, got "
              "(0, 2)");
    CHECK_ERR(pg_upsample2d_check(2, p4, "bicubic", "ag_upsample2d") == PG_STATUS_ERR_VALUE,
              PG_STATUS_ERR_VALUE,
              "ag_upsample2d: mode must be \"nearest\" or \"bilinear\", got \"bicubic\"");
    /* 1-D takes torch's "linear", not "bilinear" */
    CHECK_ERR(pg_upsample2d_check(1, p4, "bilinear", "ag_upsample1d") == PG_STATUS_ERR_VALUE,
              PG_STATUS_ERR_VALUE,
              "ag_upsample1d: mode must be \"nearest\" or \"linear\", got \"bilinear\"");
    CHECK_ERR(pg_upsample2d_check(1, s0, NULL, NULL) == PG_STATUS_ERR_VALUE, PG_STATUS_ERR_VALUE,
              "ag_upsample1d_op: scale_factor must be a whole number >= 1, got 0");
    const double shbad[3] = {3, 4, 5};
    CHECK_ERR(pg_upsample2d(x, 2, shbad, p4, NULL, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_upsample2d_op: input_shape (C 3, H 4, W 5) needs 60 rows (C * H * W), but x is "
              "[48x2] f32");
    double lrtb[4];
    const double hw[2] = {1, 3};
    CHECK(pg_pad2d_check(2, hw, 2, 0, NULL, NULL, lrtb) == 0 && lrtb[0] == 3 && lrtb[1] == 3 &&
          lrtb[2] == 1 && lrtb[3] == 1);
    REL(x);
}

void test_resize(void)
{
    known_values();
    gradchecks();
    compiled();
    crops();
    refusals();
}
