/* Convolution's core (native/ops_conv.c): forward against a direct loop, gradcheck of x, w and
 * b over strides, padding ("same" too), dilation and groups, the image tag, the refusals. */
#include <math.h>
#include <string.h>
#include "check.h"

typedef struct {
    int64_t C, H, W, Co, kh, kw, s, p, d, g, mode, N;
} cgeo;

static void conv_args(const cgeo *c, double *a)
{
    memset(a, 0, sizeof(double) * PG_CONV_NARGS);
    a[PG_CONV_C] = (double)c->C, a[PG_CONV_H] = (double)c->H, a[PG_CONV_W] = (double)c->W;
    a[PG_CONV_HAS_SHAPE] = 1;
    a[PG_CONV_KH] = (double)c->kh, a[PG_CONV_KW] = (double)c->kw;
    a[PG_CONV_SH] = a[PG_CONV_SW] = (double)c->s;
    a[PG_CONV_PH] = a[PG_CONV_PW] = (double)c->p;
    a[PG_CONV_DH] = a[PG_CONV_DW] = (double)c->d;
    a[PG_CONV_GROUPS] = (double)c->g;
    a[PG_CONV_PAD_MODE] = (double)c->mode;
}

static pg_tensor *conv_op(pg_tensor **in, const void *ctx)
{
    double a[PG_CONV_NARGS];
    conv_args(ctx, a);
    return pg_conv(in[0], in[1], in[2], a, 2, NULL);
}

/* the direct sum, torch's definition, symmetric padding p */
static double direct(const cgeo *c, const double *x, const double *w, const double *b, int64_t n,
                     int64_t o, int64_t oy, int64_t ox)
{
    int64_t Cg = c->C / c->g, Cog = c->Co / c->g, gi = o / Cog;
    double s = b ? b[o] : 0;
    for (int64_t ci = 0; ci < Cg; ci++)
        for (int64_t ky = 0; ky < c->kh; ky++)
            for (int64_t kx = 0; kx < c->kw; kx++) {
                int64_t iy = oy * c->s - c->p + ky * c->d, ix = ox * c->s - c->p + kx * c->d;
                if (iy < 0 || iy >= c->H || ix < 0 || ix >= c->W) continue;
                double xv = x[n * c->C * c->H * c->W + ((gi * Cg + ci) * c->H + iy) * c->W + ix];
                s += xv * w[o + ((ci * c->kh + ky) * c->kw + kx) * c->Co];
            }
    return s;
}

static void check_forward(const cgeo *c)
{
    int64_t K = c->C / c->g * c->kh * c->kw;
    pg_tensor *x = rnd(PG_DTYPE_F64, c->C * c->H * c->W, c->N, 0);
    pg_tensor *w = rnd(PG_DTYPE_F64, c->Co, K, 0), *b = rnd(PG_DTYPE_F64, c->Co, 1, 0);
    pg_tensor *in[3] = {x, w, b};
    pg_tensor *y = conv_op(in, c);
    CHECK(y != NULL);
    if (y) {
        int64_t OH = (c->H + 2 * c->p - c->d * (c->kh - 1) - 1) / c->s + 1;
        int64_t OW = (c->W + 2 * c->p - c->d * (c->kw - 1) - 1) / c->s + 1;
        CHECK(pg_tensor_nrow(y) == c->Co * OH * OW);
        int64_t img[3];
        CHECK(pg_tensor_image_shape(y, img) == 1 && img[0] == OW && img[1] == OH &&
              img[2] == c->Co);
        const double *yp = pg_tensor_data(y);
        double worst = 0;
        for (int64_t n = 0; n < c->N; n++)
            for (int64_t o = 0; o < c->Co; o++)
                for (int64_t oy = 0; oy < OH; oy++)
                    for (int64_t ox = 0; ox < OW; ox++) {
                        double r = direct(c, pg_tensor_data(x), pg_tensor_data(w),
                                          pg_tensor_data(b), n, o, oy, ox);
                        double e = fabs(yp[((n * c->Co + o) * OH + oy) * OW + ox] - r);
                        if (e > worst) worst = e;
                    }
        CHECK(worst < 1e-12);
    }
    REL(y);
    REL(x);
    REL(w);
    REL(b);
}

void test_conv(void)
{
    static const cgeo cases[] = {
        {1, 5, 5, 2, 3, 3, 1, 0, 1, 1, PG_CONV_PAD_NUMBERS, 2},
        {2, 6, 5, 4, 3, 2, 2, 1, 1, 2, PG_CONV_PAD_NUMBERS, 3},
        {3, 7, 7, 3, 3, 3, 1, 2, 2, 3, PG_CONV_PAD_NUMBERS, 2}, /* depthwise, dilated */
        {4, 4, 4, 6, 1, 1, 1, 0, 1, 2, PG_CONV_PAD_NUMBERS, 2}, /* pointwise */
        {2, 5, 6, 2, 2, 3, 3, 1, 1, 1, PG_CONV_PAD_NUMBERS, 1},
        {1, 6, 6, 2, 4, 4, 1, 0, 1, 1, PG_CONV_PAD_SAME, 2}, /* even kernel: 1 before, 2 after */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const cgeo *c = &cases[i];
        if (c->mode == PG_CONV_PAD_NUMBERS) check_forward(c);
        int64_t K = c->C / c->g * c->kh * c->kw;
        int64_t shapes[] = {c->C * c->H * c->W, c->N, c->Co, K, c->Co, 1};
        gradcheck("conv2d", conv_op, c, 3, shapes, 0, 7, PG_DTYPE_F64);
        gradcheck("conv2d f32", conv_op, c, 3, shapes, 0, 7, PG_DTYPE_F32);
    }
    /* "same" keeps H and W; the tag is read when no input_shape is given */
    cgeo c = cases[5];
    double a[PG_CONV_NARGS];
    conv_args(&c, a);
    a[PG_CONV_HAS_SHAPE] = 0;
    pg_tensor *x = rnd(PG_DTYPE_F64, 36, 2, 0), *w = rnd(PG_DTYPE_F64, 2, 16, 0);
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv2d_op: x [36x2] f64 carries no image shape; give input_shape = (C, H, W)");
    const int64_t img[3] = {6, 6, 1};
    CHECK(pg_tensor_set_image_shape(x, img, NULL) == 0);
    pg_tensor *y = pg_conv(x, w, NULL, a, 2, NULL);
    CHECK(y && pg_tensor_nrow(y) == 72);
    REL(y);

    /* refusals: the function, the argument, the shapes */
    conv_args(&c, a);
    a[PG_CONV_PAD_MODE] = PG_CONV_PAD_NUMBERS;
    a[PG_CONV_SH] = 0;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, "ag_conv2d") == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv2d: stride must be whole numbers >= 1, got 0");
    a[PG_CONV_SH] = 1.5;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_conv2d_op: stride must be whole numbers >= 1, got 1.5");
    a[PG_CONV_SH] = 2;
    a[PG_CONV_PAD_MODE] = PG_CONV_PAD_SAME;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "padding = \"same\" needs stride 1 (as torch), got stride 2");
    conv_args(&c, a);
    a[PG_CONV_PAD_MODE] = PG_CONV_PAD_VALID;
    a[PG_CONV_DH] = 3;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_conv2d_op: the kernel (dilated size (10, 4)) is larger than the padded input "
              "(C 1, H 6, W 6)");
    conv_args(&c, a);
    a[PG_CONV_W] = 5;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "input_shape (C 1, H 6, W 5) needs C * H * W rows per sample, but x is [36x2] f64");
    conv_args(&c, a);
    a[PG_CONV_GROUPS] = 2;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "groups = 2 must divide the input channels (1)");
    conv_args(&c, a);
    a[PG_CONV_KH] = a[PG_CONV_KW] = 3;
    CHECK_ERR(pg_conv(x, w, NULL, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_conv2d_op: weight [2x16] f64 must be [C_out, (C / groups) * kH * kW]");
    pg_tensor *b3 = rnd(PG_DTYPE_F64, 3, 1, 0);
    conv_args(&c, a);
    CHECK_ERR(pg_conv(x, w, b3, a, 2, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "bias [3x1] f64 must be [2x1]");
    /* 1-D: a (C, L) signal; a 2-row tag is refused */
    a[PG_CONV_HAS_SHAPE] = 0;
    CHECK_ERR(pg_conv(x, w, NULL, a, 1, NULL) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_conv1d_op: x [36x2] f64 carries the image shape (C 1, H 6, W 6)");
    REL(b3);
    REL(x);
    REL(w);

    /* ag_images: (N, C, H, W) and (N, H, W, C) strides give the same batch */
    double d[2 * 3 * 2 * 2], e[2 * 3 * 2 * 2];
    for (int i = 0; i < 24; i++) d[i] = i;
    for (int n = 0; n < 2; n++) /* e = d transposed to NHWC */
        for (int ci = 0; ci < 3; ci++)
            for (int yy = 0; yy < 2; yy++)
                for (int xx = 0; xx < 2; xx++)
                    e[((n * 2 + yy) * 2 + xx) * 3 + ci] = d[((n * 3 + ci) * 2 + yy) * 2 + xx];
    const int64_t nchw[4] = {12, 4, 2, 1}, nhwc[4] = {12, 1, 6, 3};
    pg_tensor *i1 = pg_images(d, 2, 3, 2, 2, nchw, PG_DTYPE_F64, NULL);
    pg_tensor *i2 = pg_images(e, 2, 3, 2, 2, nhwc, PG_DTYPE_F64, NULL);
    CHECK(i1 && i2 && !memcmp(pg_tensor_data(i1), d, sizeof d) &&
          !memcmp(pg_tensor_data(i2), d, sizeof d));
    int64_t s[3];
    CHECK(i2 && pg_tensor_image_shape(i2, s) == 1 && s[0] == 2 && s[1] == 2 && s[2] == 3);
    REL(i1);
    REL(i2);

    /* ag_sequences: (N, T, F) and (T, N, F) strides give the same [F*T, N], untagged */
    const int64_t ntf[3] = {12, 4, 1}, tnf[3] = {4, 8, 1}; /* d as (2, 3, 4) and (3, 2, 4) */
    double g[24];
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < 3; t++)
            for (int f = 0; f < 4; f++) g[(t * 2 + n) * 4 + f] = d[(n * 3 + t) * 4 + f];
    pg_tensor *q1 = pg_sequences(d, 2, 3, 4, ntf, PG_DTYPE_F64, NULL);
    pg_tensor *q2 = pg_sequences(g, 2, 3, 4, tnf, PG_DTYPE_F64, NULL);
    CHECK(q1 && q2 && !memcmp(pg_tensor_data(q1), d, sizeof d) &&
          !memcmp(pg_tensor_data(q2), d, sizeof d) && pg_tensor_image_shape(q1, s) == 0);
    REL(q1);
    REL(q2);
    CHECK_ERR(pg_sequences(d, 2, 0, 4, ntf, PG_DTYPE_F64, NULL) == NULL, PG_STATUS_ERR_VALUE,
              "ag_sequences: x must hold N >= 0 sequences of T >= 1 steps of F >= 1 features, "
              "got (N 2, T 0, F 4)");

    /* the layer table: defaults filled, pairs and shapes kept, the refusals' texts */
    char out[PG_LAYER_CONFIG_MAX];
    const char *c2 = "{\"type\": \"conv2d\", \"in_channels\": 2, \"out_channels\": 4, "
                     "\"kernel_size\": [3, 2], \"padding\": \"same\", \"input_shape\": [2, 8, 8]}";
    CHECK(pg_layer_config(c2, (int64_t)strlen(c2), 0, 0, out, sizeof out) > 0);
    CHECK(!strcmp(out,
                  "{\"in_channels\": 2, \"out_channels\": 4, \"kernel_size\": [3, 2], "
                  "\"stride\": 1, \"padding\": \"same\", \"dilation\": 1, \"groups\": 1, "
                  "\"bias\": true, \"input_shape\": [2, 8, 8], \"activation\": null, "
                  "\"init\": \"torch\"}"));
    const char *ca = "{\"type\": \"conv1d\", \"in_channels\": 1, \"out_channels\": 2, "
                     "\"kernel_size\": 3, \"activation\": \"relu\"}";
    CHECK(pg_layer_config(ca, (int64_t)strlen(ca), 0, 0, out, sizeof out) > 0 &&
          strstr(out, "\"input_shape\": null, \"activation\": \"relu\", \"init\": \"torch\"}"));
    const char *cs = "{\"type\": \"conv1d\", \"in_channels\": 1, \"out_channels\": 2, "
                     "\"kernel_size\": 3, \"activation\": \"swish\"}";
    CHECK_ERR(pg_layer_config(cs, (int64_t)strlen(cs), 0, 0, out, sizeof out) < 0,
              PG_STATUS_ERR_VALUE, "activation must be one of");
    const char *c1 = "{\"type\": \"conv1d\", \"in_channels\": 3, \"out_channels\": 4, "
                     "\"kernel_size\": 3, \"groups\": 2}";
    CHECK_ERR(pg_layer_config(c1, (int64_t)strlen(c1), 0, 0, out, sizeof out) < 0,
              PG_STATUS_ERR_VALUE,
              "bad arguments for a 'conv1d' layer: in_channels and out_channels (3, 4) must be "
              "divisible by groups (2)");
    const char *c3 = "{\"type\": \"conv2d\", \"in_channels\": 3, \"out_channels\": 4, "
                     "\"kernel_size\": [0, 2]}";
    CHECK_ERR(pg_layer_config(c3, (int64_t)strlen(c3), 0, 0, out, sizeof out) < 0,
              PG_STATUS_ERR_VALUE,
              "kernel_size must be a whole number >= 1 or a list of two, got [0, 2]");
}
