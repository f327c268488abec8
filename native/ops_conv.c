/* Convolution (pg_api_conv.h): im2col of one sample and one group at a time into the built-in
 * GEMM, so no buffer outgrows one sample's columns; exact backward for x, w and b. */
#include "pg_fp.h" /* first: no FMA contraction, one vectoriser model (R = Python bits) */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "conv_internal.h"

typedef pg_conv_geom geom;

/* the node keeps the geometry: sizes in p (exact in a double), the small numbers in ip */
#define F16(v, s) (((int64_t)(v)&0xffff) << (s))
#define G16(v, s) (((v) >> (s)) & 0xffff)
void pg_conv_geom_pack(const geom *q, double *p, int64_t *ip)
{
    p[0] = (double)q->C, p[1] = (double)q->H, p[2] = (double)q->W, p[3] = (double)q->g;
    ip[0] = F16(q->kh, 0) | F16(q->kw, 16) | F16(q->sh, 32) | F16(q->sw, 48);
    ip[1] = F16(q->ph0, 0) | F16(q->ph1, 16) | F16(q->pw0, 32) | F16(q->pw1, 48);
    ip[2] = F16(q->dh, 0) | F16(q->dw, 16);
    ip[3] = 0;
}

void pg_conv_geom_out(geom *q)
{
    q->OH = (q->H + q->ph0 + q->ph1 - q->dh * (q->kh - 1) - 1) / q->sh + 1;
    q->OW = (q->W + q->pw0 + q->pw1 - q->dw * (q->kw - 1) - 1) / q->sw + 1;
}

void pg_conv_geom_unpack(const pg_node *n, geom *q)
{
    q->C = (int64_t)n->p[0], q->H = (int64_t)n->p[1], q->W = (int64_t)n->p[2];
    q->g = (int64_t)n->p[3], q->Co = n->in[1]->ne[0];
    q->kh = G16(n->ip[0], 0), q->kw = G16(n->ip[0], 16), q->sh = G16(n->ip[0], 32);
    q->sw = G16(n->ip[0], 48);
    q->ph0 = G16(n->ip[1], 0), q->ph1 = G16(n->ip[1], 16), q->pw0 = G16(n->ip[1], 32);
    q->pw1 = G16(n->ip[1], 48);
    q->dh = G16(n->ip[2], 0), q->dw = G16(n->ip[2], 16);
}

static geom geom_unpack(const pg_node *n)
{
    geom q;
    pg_conv_geom_unpack(n, &q);
    pg_conv_geom_out(&q);
    return q;
}

/* the output columns [lo, hi) whose input column ox*s + off lies in [0, W) */
static void col_range(int64_t off, int64_t s, int64_t W, int64_t OW, int64_t *lo, int64_t *hi)
{
    *lo = off >= 0 ? 0 : (-off + s - 1) / s;
    *hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / s + 1;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}

/* one sample's group gi as col [P, Kg] (column k = (ci*kh + ky)*kw + kx); add: col2im instead,
 * adding col back into xs */
#define IM2COL(T, NAME)                                                                            \
    __attribute__((optimize("no-tree-loop-distribute-patterns"))) void NAME(                       \
        const geom *q, int64_t gi, T *xs, T *col, int add)                                         \
    {                                                                                              \
        const int64_t Cg = q->C / q->g, P = q->OH * q->OW, HW = q->H * q->W;                       \
        for (int64_t ci = 0; ci < Cg; ci++)                                                        \
            for (int64_t ky = 0; ky < q->kh; ky++)                                                 \
                for (int64_t kx = 0; kx < q->kw; kx++) {                                           \
                    T *xc = xs + (gi * Cg + ci) * HW;                                              \
                    T *cc = col + ((ci * q->kh + ky) * q->kw + kx) * P;                            \
                    int64_t off = kx * q->dw - q->pw0, lo, hi;                                     \
                    col_range(off, q->sw, q->W, q->OW, &lo, &hi);                                  \
                    for (int64_t oy = 0; oy < q->OH; oy++) {                                       \
                        int64_t iy = oy * q->sh - q->ph0 + ky * q->dh;                             \
                        T *row = cc + oy * q->OW;                                                  \
                        int in = iy >= 0 && iy < q->H;                                             \
                        T *xr = xc + (in ? iy : 0) * q->W + off;                                   \
                        if (add) {                                                                 \
                            if (!in) continue;                                                     \
                            for (int64_t ox = lo; ox < hi; ox++) xr[ox * q->sw] += row[ox];        \
                            continue;                                                              \
                        }                                                                          \
                        if (!in) {                                                                 \
                            for (int64_t ox = 0; ox < q->OW; ox++) row[ox] = 0;                    \
                            continue;                                                              \
                        }                                                                          \
                        for (int64_t ox = 0; ox < lo; ox++) row[ox] = 0;                           \
                        if (q->sw == 1)                                                            \
                            for (int64_t ox = lo; ox < hi; ox++) row[ox] = xr[ox];                 \
                        else                                                                       \
                            for (int64_t ox = lo; ox < hi; ox++) row[ox] = xr[ox * q->sw];         \
                        for (int64_t ox = hi; ox < q->OW; ox++) row[ox] = 0;                       \
                    }                                                                              \
                }                                                                                  \
    }
IM2COL(float, pg_im2col_f32)
IM2COL(double, pg_im2col_f64)
#define IM2COL_T(T, q, gi, xs, col, add) PG_IM2COL(q, gi, xs, col, add)

/* a 1x1 kernel, stride 1, no padding: the sample itself is the column matrix */
int pg_conv_pointwise(const geom *q)
{
    return q->kh == 1 && q->kw == 1 && q->sh == 1 && q->sw == 1 && !q->ph0 && !q->ph1 && !q->pw0 &&
        !q->pw1;
}

static int conv_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2], *out = n->out;
    const geom q = geom_unpack(n);
    const int64_t N = x->ne[1], Cg = q.C / q.g, Cog = q.Co / q.g, P = q.OH * q.OW;
    const int64_t Kg = Cg * q.kh * q.kw, pw = pg_conv_pointwise(&q);
    PG_DISPATCH(x->dtype, {
        /* col, then w transposed [K, C_out]: the products run untransposed (faster when tiny) */
        T *col = pg_scratch((size_t)((pw ? 0 : P * Kg) + Kg * q.Co) * sizeof(T));
        if (!col) return -1;
        T *wt = col + (pw ? 0 : P * Kg);
        const T *wp = pg_data(w), *bp = b ? pg_data(b) : NULL;
        for (int64_t k = 0; k < Kg; k++)
            for (int64_t o = 0; o < q.Co; o++) wt[k + o * Kg] = wp[o + k * q.Co];
        for (int64_t j = 0; j < N; j++) {
            T *xs = (T *)pg_data(x) + j * q.C * q.H * q.W, *ys = (T *)pg_data(out) + j * q.Co * P;
            for (int64_t gi = 0; gi < q.g; gi++) {
                const T *a = pw ? xs + gi * Cg * P : col;
                if (!pw) IM2COL_T(T, &q, gi, xs, col, 0);
                pg_gemm(x->dtype, 0, 0, P, Cog, Kg, 1.0, a, P, wt + gi * Cog * Kg, Kg, 0.0,
                        ys + gi * Cog * P, P);
            }
            for (int64_t c = 0; bp && c < q.Co; c++) {
                T *yc = ys + c * P, bc = bp[c];
                for (int64_t i = 0; i < P; i++) yc[i] += bc;
            }
        }
    });
    return 0;
}

void pg_conv_bias_grad(int dtype, const void *dy, int64_t N, int64_t Co, int64_t P, void *db,
                       int acc)
{
    PG_DISPATCH(dtype, {
        const T *gp = dy;
        T *d = db;
        for (int64_t c = 0; c < Co; c++) { /* 8 lanes (vectorised), a fixed order */
            double s = 0;
            for (int64_t j = 0; j < N; j++) {
                const T *gc = gp + j * Co * P + c * P;
                T lane[8] = {0};
                int64_t i = 0;
                for (; i + 8 <= P; i += 8)
                    for (int l = 0; l < 8; l++) lane[l] += gc[i + l];
                for (; i < P; i++) lane[i & 7] += gc[i];
                for (int l = 0; l < 8; l++) s += (double)lane[l];
            }
            d[c] = acc ? d[c] + (T)s : (T)s;
        }
    });
}

static int conv_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    const geom q = geom_unpack(n);
    const int64_t N = x->ne[1], Cg = q.C / q.g, Cog = q.Co / q.g, P = q.OH * q.OW;
    const int64_t Kg = Cg * q.kh * q.kw, pw = pg_conv_pointwise(&q), X = q.C * q.H * q.W;
    void *sx = NULL, *sw = NULL, *sb = NULL;
    int ax = 0, aw = 0, ab = 0;
    int wx = pg_grad_slot_for(x, &sx, &ax), ww = pg_grad_slot_for(w, &sw, &aw);
    int wb = b ? pg_grad_slot_for(b, &sb, &ab) : 0;
    if (wx < 0 || ww < 0 || wb < 0) return -1;
    if (wb > 0) pg_conv_bias_grad(x->dtype, pg_data(g), N, q.Co, P, sb, ab);
    PG_DISPATCH(x->dtype, {
        const T *gp = pg_data(g), *wp = pg_data(w);
        if (wx > 0 && !ax) memset(sx, 0, (size_t)(X * N) * sizeof(T));
        if (ww > 0 && !aw) memset(sw, 0, (size_t)(q.Co * Kg) * sizeof(T));
        if (wx > 0 || ww > 0) {
            T *col = pw ? NULL : pg_scratch((size_t)(2 * P * Kg) * sizeof(T));
            if (!pw && !col) return -1;
            T *dcol = pw ? NULL : col + P * Kg;
            for (int64_t j = 0; j < N; j++) {
                T *xs = (T *)pg_data(x) + j * X;
                const T *gs = gp + j * q.Co * P;
                for (int64_t gi = 0; gi < q.g; gi++) {
                    const T *gg = gs + gi * Cog * P;
                    if (ww > 0) { /* dW_g += G_g^T col */
                        const T *a = pw ? xs + gi * Cg * P : col;
                        if (!pw) IM2COL_T(T, &q, gi, xs, col, 0);
                        pg_gemm(x->dtype, 1, 0, Cog, Kg, P, 1.0, gg, P, a, P, 1.0,
                                (T *)sw + gi * Cog, q.Co);
                    }
                    if (wx > 0) { /* dcol = G_g W_g, folded back onto the sample */
                        T *dxs = (T *)sx + j * X;
                        T *dst = pw ? dxs + gi * Cg * P : dcol;
                        pg_gemm(x->dtype, 0, 0, P, Kg, Cog, 1.0, gg, P, wp + gi * Cog, q.Co,
                                pw ? 1.0 : 0.0, dst, P);
                        if (!pw) IM2COL_T(T, &q, gi, dxs, dcol, 1);
                    }
                }
            }
        }
    });
    return 0;
}

/* ---- argument checks: every number whole and in range, named as the user wrote it ---- */

static const char *const ARG_NAME[PG_CONV_NARGS] = {
    "input_shape", "input_shape", "input_shape",    "",
    "kernel_size", "kernel_size", "stride",         "stride",
    "padding",     "padding",     "dilation",       "dilation",
    "groups",      "padding",     "output_padding", "output_padding"};

int pg_conv_whole(const char *fn, const double *a, int i, double lo, int64_t *v)
{
    char num[32];
    if (!pg_is_whole(a[i]) || a[i] < lo || a[i] > 2147483647.0)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must be %s >= %g, got %s", fn, ARG_NAME[i],
                       i == PG_CONV_GROUPS ? "a whole number" : "whole numbers", lo,
                       pg_fmt_num(num, sizeof num, a[i]));
    *v = (int64_t)a[i];
    return 0;
}

/* the shape as the user writes it: (C, H, W), or (C, L) for 1-D */
static const char *shape_text(char *buf, size_t cap, int dims, int64_t C, int64_t H, int64_t W)
{
    if (dims == 1) snprintf(buf, cap, "(C %lld, L %lld)", (long long)C, (long long)W);
    else snprintf(buf, cap, "(C %lld, H %lld, W %lld)", (long long)C, (long long)H, (long long)W);
    return buf;
}

int pg_conv_input(const char *fn, pg_tensor *x, const double *a, int dims, geom *q)
{
    char s[96];
    if (a[PG_CONV_HAS_SHAPE] != 0) {
        int64_t v[3];
        for (int i = 0; i < 3; i++)
            if (pg_conv_whole(fn, a, i, 1, &v[i])) return -1;
        q->C = v[0], q->H = v[1], q->W = v[2];
        int64_t hw, chw;
        if (__builtin_mul_overflow(v[0], v[1], &hw) || __builtin_mul_overflow(hw, v[2], &chw) ||
            chw != x->ne[0])
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: input_shape %s needs %s rows per sample, but x is %s "
                           "(samples are columns)",
                           fn, shape_text(s, sizeof s, dims, v[0], v[1], v[2]),
                           dims == 1 ? "C * L" : "C * H * W", pg_desc(x));
        return 0;
    }
    if (x->img[0] <= 0)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: x %s carries no image shape; give input_shape = %s or tag x "
                       "(ag_image_shape, ag_images)",
                       fn, pg_desc(x), dims == 1 ? "(C, L)" : "(C, H, W)");
    q->W = x->img[0], q->H = x->img[1], q->C = x->img[2];
    if (dims == 1 && q->H != 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: x %s carries the image shape (C %lld, H %lld, W %lld); a 1-D "
                       "signal has H = 1",
                       fn, pg_desc(x), (long long)q->C, (long long)q->H, (long long)q->W);
    return 0;
}

static int kernel_geom(const char *fn, const pg_tensor *w, const double *a, int dims, geom *q)
{
    const int64_t Cg = q->C / q->g, cols = w->ne[1];
    if (a[PG_CONV_KH] != 0 || a[PG_CONV_KW] != 0) {
        if (pg_conv_whole(fn, a, PG_CONV_KH, 1, &q->kh) ||
            pg_conv_whole(fn, a, PG_CONV_KW, 1, &q->kw))
            return -1;
    } else {
        int64_t kk = cols / Cg, k = (int64_t)llround(sqrt((double)kk));
        q->kh = dims == 1 ? 1 : k, q->kw = dims == 1 ? kk : k;
    }
    if (q->kh * q->kw * Cg != cols || cols == 0)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: weight %s must be [C_out, (C / groups) * %s] = [%lld, %lld * %s] "
                       "for %lld input channels and groups = %lld",
                       fn, pg_desc(w), dims == 1 ? "kernel_size" : "kH * kW", (long long)q->Co,
                       (long long)Cg,
                       a[PG_CONV_KH] != 0 || a[PG_CONV_KW] != 0 ? "k"
                           : dims == 1                          ? "k"
                                                                : "k^2 (a square kernel)",
                       (long long)q->C, (long long)q->g);
    return 0;
}

static int geometry(const char *fn, pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *a,
                    int dims, geom *q)
{
    char s[96];
    memset(q, 0, sizeof *q);
    if (pg_conv_input(fn, x, a, dims, q) || pg_conv_whole(fn, a, PG_CONV_GROUPS, 1, &q->g))
        return -1;
    q->Co = w->ne[0];
    if (q->C % q->g || q->Co % q->g)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: groups = %lld must divide the input channels (%lld) and the output "
                       "channels (weight rows, %lld)",
                       fn, (long long)q->g, (long long)q->C, (long long)q->Co);
    if (kernel_geom(fn, w, a, dims, q)) return -1;
    if (b && (b->ne[0] != q->Co || b->ne[1] != 1))
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: bias %s must be [%lldx1], one per output channel",
                       fn, pg_desc(b), (long long)q->Co);
    if (pg_conv_whole(fn, a, PG_CONV_SH, 1, &q->sh) ||
        pg_conv_whole(fn, a, PG_CONV_SW, 1, &q->sw) ||
        pg_conv_whole(fn, a, PG_CONV_DH, 1, &q->dh) || pg_conv_whole(fn, a, PG_CONV_DW, 1, &q->dw))
        return -1;
    int mode = (int)a[PG_CONV_PAD_MODE];
    if (mode == PG_CONV_PAD_NUMBERS) {
        if (pg_conv_whole(fn, a, PG_CONV_PH, 0, &q->ph0) ||
            pg_conv_whole(fn, a, PG_CONV_PW, 0, &q->pw0))
            return -1;
        q->ph1 = q->ph0, q->pw1 = q->pw0;
    } else if (mode == PG_CONV_PAD_SAME) {
        if (q->sh != 1 || q->sw != 1)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: padding = \"same\" needs stride 1 (as torch), got stride %lld", fn,
                           (long long)(q->sh != 1 ? q->sh : q->sw));
        int64_t th = q->dh * (q->kh - 1), tw = q->dw * (q->kw - 1);
        q->ph0 = th / 2, q->ph1 = th - th / 2, q->pw0 = tw / 2, q->pw1 = tw - tw / 2;
    } else if (mode != PG_CONV_PAD_VALID) {
        return pg_fail(PG_STATUS_ERR_ARG, "%s: unknown padding mode %d", fn, mode);
    }
    const int64_t v[] = {q->kh, q->kw, q->sh, q->sw, q->ph0, q->ph1, q->pw0, q->pw1, q->dh, q->dw};
    for (int i = 0; i < 10; i++)
        if (v[i] > 65535)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: kernel_size, stride, padding and dilation must be at most 65535",
                           fn);
    int64_t ekh = q->dh * (q->kh - 1) + 1, ekw = q->dw * (q->kw - 1) + 1;
    if (ekh > q->H + q->ph0 + q->ph1 || ekw > q->W + q->pw0 + q->pw1) {
        char k[64];
        if (dims == 1) snprintf(k, sizeof k, "%lld", (long long)ekw);
        else snprintf(k, sizeof k, "(%lld, %lld)", (long long)ekh, (long long)ekw);
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: the kernel (dilated size %s) is larger than the padded input %s "
                       "plus padding (%lld, %lld)",
                       fn, k, shape_text(s, sizeof s, dims, q->C, q->H, q->W),
                       (long long)(q->ph0 + q->ph1), (long long)(q->pw0 + q->pw1));
    }
    pg_conv_geom_out(q);
    return 0;
}

pg_tensor *pg_conv(pg_tensor *x, pg_tensor *w, pg_tensor *b, const double *args, int dims,
                   const char *fn)
{
    if (!fn) fn = dims == 1 ? "ag_conv1d_op" : "ag_conv2d_op";
    if (pg_not_live(x, fn, "x") || pg_not_live(w, fn, "weight") ||
        (b && pg_not_live(b, fn, "bias")) || pg_same_dtype(fn, "x", x, "weight", w) ||
        (b && pg_same_dtype(fn, "x", x, "bias", b)))
        return NULL;
    if (!args || (dims != 1 && dims != 2))
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: bad arguments (args %p, dims %d)", fn,
                            (const void *)args, dims);
    geom q;
    if (geometry(fn, x, w, b, args, dims, &q)) return NULL;
    int64_t rows;
    if (__builtin_mul_overflow(q.Co * q.OH, q.OW, &rows))
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: the output is too large", fn);
    pg_tensor *out = pg_new(x->dtype, rows, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    out->img[0] = q.OW, out->img[1] = q.OH, out->img[2] = q.Co;
    double p[4];
    int64_t ip[4];
    pg_conv_geom_pack(&q, p, ip);
    pg_tensor *in[3] = {x, w, b};
    return pg_op_run(dims == 1 ? "conv1d" : "conv2d", conv_fw, conv_bw, out, 3, in, p, ip, 0, NULL);
}

pg_tensor *pg_images(const double *data, int64_t n, int64_t c, int64_t h, int64_t w,
                     const int64_t *st, int dtype, const char *fn)
{
    if (!fn) fn = "ag_images";
    if (!data || !st || n < 0 || c < 1 || h < 1 || w < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: x must be a 4-d array with N >= 0 and C, H, W >= 1, got (N %lld, "
                            "C %lld, H %lld, W %lld)",
                            fn, (long long)n, (long long)c, (long long)h, (long long)w);
    if (dtype != PG_DTYPE_F32 && dtype != PG_DTYPE_F64)
        return pg_fail_null(PG_STATUS_ERR_DTYPE, "%s: dtype must be f32 or f64", fn);
    int64_t hw, chw;
    if (__builtin_mul_overflow(h, w, &hw) || __builtin_mul_overflow(hw, c, &chw))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: C * H * W overflows", fn);
    pg_tensor *t = pg_new(dtype, chw, n, PG_MEM_CATEGORY_OTHER);
    if (!t) return NULL;
    PG_DISPATCH(dtype, {
        T *o = pg_data(t);
        for (int64_t i = 0; i < n; i++)
            for (int64_t ci = 0; ci < c; ci++)
                for (int64_t y = 0; y < h; y++) {
                    const double *src = data + i * st[0] + ci * st[1] + y * st[2];
                    T *dst = o + i * chw + ci * hw + y * w;
                    for (int64_t xx = 0; xx < w; xx++) dst[xx] = (T)src[xx * st[3]];
                }
    });
    t->img[0] = w, t->img[1] = h, t->img[2] = c;
    return t;
}
