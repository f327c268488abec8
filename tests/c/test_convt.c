/* Transposed convolution's core (native/ops_convt.c): forward against a direct scatter loop
 * (torch's definition), gradcheck of x, w and b over stride, padding, output_padding, dilation
 * and groups, the image tag, the refusals and the layers' constructor check (pg_conv_check). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

typedef struct {
    int64_t C, H, W, Co, kh, kw, s, p, op, d, g, N;
} tgeo;

static void targs(const tgeo *c, double *a)
{
    memset(a, 0, sizeof(double) * PG_CONV_NARGS);
    a[PG_CONV_C] = (double)c->C, a[PG_CONV_H] = (double)c->H, a[PG_CONV_W] = (double)c->W;
    a[PG_CONV_HAS_SHAPE] = 1;
    a[PG_CONV_KH] = (double)c->kh, a[PG_CONV_KW] = (double)c->kw;
    a[PG_CONV_SH] = a[PG_CONV_SW] = (double)c->s;
    a[PG_CONV_PH] = a[PG_CONV_PW] = (double)c->p;
    a[PG_CONV_OPH] = a[PG_CONV_OPW] = (double)c->op;
    a[PG_CONV_DH] = a[PG_CONV_DW] = (double)c->d;
    a[PG_CONV_GROUPS] = (double)c->g;
}

static pg_tensor *convt_op(pg_tensor **in, const void *ctx)
{
    double a[PG_CONV_NARGS];
    targs(ctx, a);
    return pg_conv_transpose(in[0], in[1], in[2], a, 2, NULL);
}

/* y[n, o, oy, ox] as torch defines it: each input pixel scatters w's kernel onto the output */
static void direct(const tgeo *c, const double *x, const double *w, const double *b, double *y,
                   int64_t OH, int64_t OW)
{
    int64_t Cig = c->C / c->g, Cog = c->Co / c->g, K = Cog * c->kh * c->kw;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t o = 0; o < c->Co; o++)
            for (int64_t i = 0; i < OH * OW; i++) y[(n * c->Co + o) * OH * OW + i] = b[o];
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t iy = 0; iy < c->H; iy++)
                for (int64_t ix = 0; ix < c->W; ix++) {
                    double xv = x[((n * c->C + ci) * c->H + iy) * c->W + ix];
                    int64_t gi = ci / Cig;
                    for (int64_t oc = 0; oc < Cog; oc++)
                        for (int64_t ky = 0; ky < c->kh; ky++)
                            for (int64_t kx = 0; kx < c->kw; kx++) {
                                int64_t oy = iy * c->s - c->p + ky * c->d;
                                int64_t ox = ix * c->s - c->p + kx * c->d;
                                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                                double wv = w[ci + ((oc * c->kh + ky) * c->kw + kx) * c->C];
                                y[((n * c->Co + gi * Cog + oc) * OH + oy) * OW + ox] += xv * wv;
                            }
                    (void)K;
                }
}

static void check_forward(const tgeo *c)
{
    int64_t K = c->Co / c->g * c->kh * c->kw;
    pg_tensor *x = rnd(PG_DTYPE_F64, c->C * c->H * c->W, c->N, 0);
    pg_tensor *w = rnd(PG_DTYPE_F64, c->C, K, 0), *b = rnd(PG_DTYPE_F64, c->Co, 1, 0);
    pg_tensor *in[3] = {x, w, b};
    pg_tensor *y = convt_op(in, c);
    CHECK(y != NULL);
    if (y) {
        int64_t OH = (c->H - 1) * c->s - 2 * c->p + c->d * (c->kh - 1) + c->op + 1;
        int64_t OW = (c->W - 1) * c->s - 2 * c->p + c->d * (c->kw - 1) + c->op + 1;
        CHECK(pg_tensor_nrow(y) == c->Co * OH * OW);
        int64_t img[3];
        CHECK(pg_tensor_image_shape(y, img) == 1 && img[0] == OW && img[1] == OH &&
              img[2] == c->Co);
        double *r = malloc(sizeof(double) * (size_t)(c->Co * OH * OW * c->N));
        direct(c, pg_tensor_data(x), pg_tensor_data(w), pg_tensor_data(b), r, OH, OW);
        const double *yp = pg_tensor_data(y);
        double worst = 0;
        for (int64_t i = 0; i < c->Co * OH * OW * c->N; i++)
            if (fabs(yp[i] - r[i]) > worst) worst = fabs(yp[i] - r[i]);
        CHECK(worst < 1e-12);
        free(r);
    }
    REL(y);
    REL(x);
    REL(w);
    REL(b);
}

void test_convt(void)
{
    static const tgeo cases[] = {
        {1, 3, 3, 2, 3, 3, 1, 0, 0, 1, 1, 2},
        {2, 3, 4, 4, 3, 2, 2, 1, 1, 1, 2, 3}, /* stride 2, output_padding 1, groups */
        {3, 4, 3, 3, 3, 3, 1, 2, 1, 2, 3, 2}, /* depthwise, dilated, output_padding < dilation */
        {4, 3, 3, 6, 1, 1, 1, 0, 0, 1, 2, 2}, /* pointwise */
        {2, 2, 3, 2, 2, 3, 3, 1, 2, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tgeo *c = &cases[i];
        check_forward(c);
        int64_t K = c->Co / c->g * c->kh * c->kw;
        int64_t shapes[] = {c->C * c->H * c->W, c->N, c->C, K, c->Co, 1};
        gradcheck("conv_transpose2d", convt_op, c, 3, shapes, 0, 7, PG_DTYPE_F64);
        gradcheck("conv_transpose2d f32", convt_op, c, 3, shapes, 0, 7, PG_DTYPE_F32);
    }
    /* the tag is read without input_shape; a square kernel and C_out come from the bias */
    tgeo c = cases[0];
    double a[PG_CONV_NARGS];
    targs(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0, a[PG_CONV_KH] = a[PG_CONV_KW] = 0;
    pg_tensor *x = rnd(PG_DTYPE_F64, 9, 2, 0), *w = rnd(PG_DTYPE_F64, 1, 18, 0);
    pg_tensor *b = rnd(PG_DTYPE_F64, 2, 1, 0);
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d_op: x [9x2] f64 carries no image shape");
    const int64_t img[3] = {3, 3, 1};
    CHECK(pg_tensor_set_image_shape(x, img, NULL) == 0);
    pg_tensor *y = pg_conv_transpose(x, w, b, a, 2, NULL);
    CHECK(y && pg_tensor_nrow(y) == 2 * 5 * 5);
    REL(y);
    CHECK_ERR(pg_conv_transpose(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "give kernel_size");
    /* refusals: output_padding not below stride or dilation, stride 0, channels, bias */
    targs(&c, a);
    a[PG_CONV_OPH] = 1;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 2, "ag_conv_transpose2d") == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d: output_padding (1, 0) must be smaller than the stride (1, 1) "
              "or the dilation (1, 1)");
    targs(&c, a);
    a[PG_CONV_SW] = 0;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d_op: stride must be whole numbers >= 1, got 0");
    targs(&c, a);
    a[PG_CONV_C] = 3, a[PG_CONV_H] = 3, a[PG_CONV_W] = 1;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "weight [1x18] f64 must have C_in = 3 rows");
    targs(&c, a);
    pg_tensor *b3 = rnd(PG_DTYPE_F64, 3, 1, 0);
    CHECK_ERR(pg_conv_transpose(x, w, b3, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "bias [3x1] f64 must be [2x1]");
    targs(&c, a);
    a[PG_CONV_PH] = a[PG_CONV_PW] = 3;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "the output (H -1, W -1) would be empty");
    REL(b3);
    REL(b);
    REL(x);
    REL(w);

    /* the constructors' check: the same texts for every convolution layer */
    targs(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0;
    CHECK(pg_conv_check(1, 2, a, 2, 1, NULL) == 0);
    CHECK_ERR(pg_conv_check(3, 4, (a[PG_CONV_GROUPS] = 2, a), 2, 0, "ag_conv2d") != 0,
              PG_STATUS_ERR_VALUE,
              "ag_conv2d: in_channels (3) and out_channels (4) must be divisible by groups (2)");
    targs(&c, a);
    a[PG_CONV_KH] = 0;
    CHECK_ERR(pg_conv_check(1, 2, a, 2, 0, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv2d: kernel_size must be an integer >= 1, got 0");
    targs(&c, a);
    a[PG_CONV_SW] = 2, a[PG_CONV_PAD_MODE] = PG_CONV_PAD_SAME;
    CHECK_ERR(pg_conv_check(1, 2, a, 1, 0, "ag_conv1d") != 0, PG_STATUS_ERR_VALUE,
              "ag_conv1d: padding = \"same\" needs stride 1 (as torch), got stride 2");
    targs(&c, a);
    a[PG_CONV_OPH] = 2, a[PG_CONV_SH] = 2;
    CHECK_ERR(pg_conv_check(1, 2, a, 2, 1, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d: output_padding (2, 0) must be smaller than the stride (2, 1)");
    targs(&c, a);
    a[PG_CONV_C] = 2;
    CHECK_ERR(pg_conv_check(1, 2, a, 2, 1, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d: input_shape (2, 3, 3) has 2 channels but in_channels = 1");
    CHECK_ERR(pg_conv_check(1.5, 2, a, 2, 1, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d: in_channels must be an integer >= 1, got 1.5");
    /* the ops' limit, at construction for every convolution (it was the forward's for conv) */
    targs(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0, a[PG_CONV_DW] = 65535;
    CHECK(pg_conv_check(1, 2, a, 2, 0, NULL) == 0);
    a[PG_CONV_DW] = 65536;
    CHECK_ERR(pg_conv_check(1, 2, a, 2, 0, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv2d: kernel_size, stride, padding and dilation must be at most 65535");
    targs(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0, a[PG_CONV_PH] = 70000;
    CHECK_ERR(pg_conv_check(1, 2, a, 2, 1, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose2d: kernel_size, stride, padding and dilation must be at most "
              "65535");
}

/* ---- 1-D (dims 1: H = 1, kH = 1, the L side's numbers in the W slots) ---- */

static void targs1(const tgeo *c, double *a)
{
    targs(c, a);
    a[PG_CONV_H] = 1, a[PG_CONV_KH] = 1, a[PG_CONV_SH] = 1, a[PG_CONV_PH] = 0;
    a[PG_CONV_OPH] = 0, a[PG_CONV_DH] = 1;
}

static pg_tensor *convt1_op(pg_tensor **in, const void *ctx)
{
    double a[PG_CONV_NARGS];
    targs1(ctx, a);
    return pg_conv_transpose(in[0], in[1], in[2], a, 1, NULL);
}

/* torch's scatter on signals: x[n, ci, il] adds w[ci, oc, k] * x at il*s - p + k*d */
static void check_forward1(const tgeo *c)
{
    int64_t Cig = c->C / c->g, Cog = c->Co / c->g, K = Cog * c->kw;
    int64_t OL = (c->W - 1) * c->s - 2 * c->p + c->d * (c->kw - 1) + c->op + 1;
    pg_tensor *x = rnd(PG_DTYPE_F64, c->C * c->W, c->N, 0);
    pg_tensor *w = rnd(PG_DTYPE_F64, c->C, K, 0), *b = rnd(PG_DTYPE_F64, c->Co, 1, 0);
    pg_tensor *in[3] = {x, w, b};
    pg_tensor *y = convt1_op(in, c);
    int64_t img[3];
    CHECK(y && pg_tensor_nrow(y) == c->Co * OL && pg_tensor_image_shape(y, img) == 1 &&
          img[0] == OL && img[1] == 1 && img[2] == c->Co);
    if (y && pg_tensor_nrow(y) == c->Co * OL) {
        const double *xp = pg_tensor_data(x), *wp = pg_tensor_data(w), *bp = pg_tensor_data(b);
        double *r = malloc(sizeof(double) * (size_t)(c->Co * OL * c->N)), worst = 0;
        for (int64_t n = 0; n < c->N; n++)
            for (int64_t o = 0; o < c->Co; o++)
                for (int64_t i = 0; i < OL; i++) r[(n * c->Co + o) * OL + i] = bp[o];
        for (int64_t n = 0; n < c->N; n++)
            for (int64_t ci = 0; ci < c->C; ci++)
                for (int64_t il = 0; il < c->W; il++)
                    for (int64_t oc = 0; oc < Cog; oc++)
                        for (int64_t k = 0; k < c->kw; k++) {
                            int64_t ol = il * c->s - c->p + k * c->d;
                            if (ol < 0 || ol >= OL) continue;
                            r[(n * c->Co + ci / Cig * Cog + oc) * OL + ol] +=
                                xp[(n * c->C + ci) * c->W + il] * wp[ci + (oc * c->kw + k) * c->C];
                        }
        const double *yp = pg_tensor_data(y);
        for (int64_t i = 0; i < c->Co * OL * c->N; i++)
            if (fabs(yp[i] - r[i]) > worst) worst = fabs(yp[i] - r[i]);
        CHECK(worst < 1e-12);
        free(r);
    }
    REL(y);
    REL(x);
    REL(w);
    REL(b);
}

void test_convt1d(void)
{
    static const tgeo cases[] = {
        /* C, H, L, Co, kh, k, s, p, op, d, g, N */
        {1, 1, 5, 2, 1, 3, 1, 0, 0, 1, 1, 2},
        {2, 1, 6, 4, 1, 3, 2, 1, 1, 1, 2, 3}, /* stride 2, output_padding 1, groups */
        {3, 1, 4, 3, 1, 3, 1, 2, 1, 2, 3, 2}, /* depthwise, dilated, output_padding < dilation */
        {4, 1, 3, 6, 1, 1, 1, 0, 0, 1, 2, 2}, /* pointwise */
        {2, 1, 3, 2, 1, 4, 3, 1, 2, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tgeo *c = &cases[i];
        check_forward1(c);
        int64_t K = c->Co / c->g * c->kw;
        int64_t shapes[] = {c->C * c->W, c->N, c->C, K, c->Co, 1};
        gradcheck("conv_transpose1d", convt1_op, c, 3, shapes, 0, 7, PG_DTYPE_F64);
        gradcheck("conv_transpose1d f32", convt1_op, c, 3, shapes, 0, 7, PG_DTYPE_F32);
    }
    /* the tag (H = 1) without input_shape; the kernel and C_out from the bias */
    tgeo c = cases[0];
    double a[PG_CONV_NARGS];
    targs1(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0, a[PG_CONV_KH] = a[PG_CONV_KW] = 0;
    pg_tensor *x = rnd(PG_DTYPE_F64, 5, 2, 0), *w = rnd(PG_DTYPE_F64, 1, 6, 0);
    pg_tensor *b = rnd(PG_DTYPE_F64, 2, 1, 0);
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 1, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose1d_op: x [5x2] f64 carries no image shape; give input_shape = "
              "(C, L)");
    const int64_t img[3] = {5, 1, 1};
    CHECK(pg_tensor_set_image_shape(x, img, NULL) == 0);
    pg_tensor *y = pg_conv_transpose(x, w, b, a, 1, NULL);
    CHECK(y && pg_tensor_nrow(y) == 2 * 7);
    REL(y);
    CHECK_ERR(pg_conv_transpose(x, w, NULL, a, 1, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "[C_in, (C_out / groups) * k] does not tell C_out");
    /* refusals in (C, L) terms */
    targs1(&c, a);
    a[PG_CONV_OPW] = 1;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 1, "ag_conv_transpose1d") == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose1d: output_padding (1) must be smaller than the stride (1) or the "
              "dilation (1)");
    targs1(&c, a);
    a[PG_CONV_KW] = 4;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 1, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_conv_transpose1d_op: weight [1x6] f64 must be [C_in, (C_out / groups) * k] = "
              "[1, (C_out / 1) * 4]");
    targs1(&c, a);
    a[PG_CONV_PW] = 4;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 1, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_conv_transpose1d_op: the output (L -1) would be empty: input (C 1, L 5) with "
              "padding 4");
    targs1(&c, a);
    a[PG_CONV_PAD_MODE] = PG_CONV_PAD_SAME;
    CHECK_ERR(pg_conv_transpose(x, w, b, a, 1, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ConvTranspose1d takes no \"same\"");
    REL(b);
    REL(x);
    REL(w);
    targs1(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0;
    CHECK(pg_conv_check(1, 2, a, 1, 1, NULL) == 0);
    a[PG_CONV_SW] = 2, a[PG_CONV_OPW] = 2;
    CHECK_ERR(pg_conv_check(1, 2, a, 1, 1, NULL) != 0, PG_STATUS_ERR_VALUE,
              "ag_conv_transpose1d: output_padding (2) must be smaller than the stride (2)");
}
