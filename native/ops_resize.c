/* Padding and upsampling of image batches [C*H*W, N] (pg_api_resize.h): the argument checks and
 * their texts, forward, exact backward and replayable forwards. Backward walks the output in
 * forward order and adds into the input's gradient, one plane at a time: deterministic sums. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE };
enum { UP_NEAREST, UP_BILINEAR };
static const char *const PAD_MODES[] = {"constant", "reflect", "replicate", NULL};
static const char *const UP_MODES[] = {"nearest", "bilinear", NULL};
/* 1-D: torch's names ("linear" is bilinear with H = 1 and scale 1 along H) */
static const char *const UP1_MODES[] = {"nearest", "linear", NULL};

/* mode's index in names (NULL: 0), or the refusal naming fn and the choices */
static int mode_of(const char *fn, const char *mode, const char *const *names, int *out)
{
    if (!mode) return *out = 0, 0;
    for (int i = 0; names[i]; i++)
        if (!strcmp(mode, names[i])) return *out = i, 0;
    char got[64];
    pj_qname(mode, got, sizeof got); /* quoted, escaped */
    if (names[2])
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: mode must be \"%s\", \"%s\" or \"%s\", got %s", fn,
                       names[0], names[1], names[2], got);
    return pg_fail(PG_STATUS_ERR_VALUE, "%s: mode must be \"%s\" or \"%s\", got %s", fn, names[0],
                   names[1], got);
}

/* the given values as "(a, b, ...)" (pg_fmt_num15) or "a" for one */
static const char *show(char *buf, size_t cap, const double *v, int n)
{
    size_t k = 0;
    char num[40];
    if (n > 1) k += (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "",
                              pg_fmt_num15(num, sizeof num, v[i]));
    if (n > 1 && k < cap) snprintf(buf + k, cap - k, ")");
    return buf;
}

static int whole_in(const double *v, int n, double lo)
{
    for (int i = 0; i < n; i++)
        if (!pg_is_whole(v[i]) || v[i] < lo || v[i] > 2147483647.0) return 0;
    return 1;
}

/* ---- padding: ip[0] = H << 32 | W, ip[1] = C, ip[2] = left << 32 | right, ip[3] = top << 32 |
 * bottom (each pad a signed 32-bit half: negative crops), p[0] = value, p[1] = mode ---- */
typedef struct {
    int64_t C, H, W, l, r, t, b;
} pgeom;

static pgeom pad_geom(const pg_node *n)
{
    pgeom g = {n->ip[1],
               n->ip[0] >> 32,
               n->ip[0] & 0xffffffff,
               (int32_t)(uint32_t)((uint64_t)n->ip[2] >> 32),
               (int32_t)(uint32_t)(uint64_t)n->ip[2],
               (int32_t)(uint32_t)((uint64_t)n->ip[3] >> 32),
               (int32_t)(uint32_t)(uint64_t)n->ip[3]};
    return g;
}

static int64_t pack2(int64_t hi, int64_t lo)
{
    return (int64_t)((uint64_t)(uint32_t)(int32_t)hi << 32 | (uint32_t)(int32_t)lo);
}

/* the source index of padded position i (already shifted by the leading pad) in [0, n), or -1
 * for the constant fill; reflect needs pad < n, so one mirror suffices. A negative pad only
 * shifts i: the mirror and the edge stay the input's own (torch's rule) */
static inline int64_t pad_src(int64_t i, int64_t n, int mode)
{
    if (i >= 0 && i < n) return i;
    if (mode == PAD_CONSTANT) return -1;
    if (mode == PAD_REPLICATE) return i < 0 ? 0 : n - 1;
    return i < 0 ? -i : 2 * (n - 1) - i;
}

static int pad_fw(pg_node *n)
{
    const pgeom g = pad_geom(n);
    const int mode = (int)n->p[1];
    pg_tensor *x = n->in[0], *out = n->out;
    const int64_t planes = g.C * x->ne[1], Ho = g.H + g.t + g.b, Wo = g.W + g.l + g.r;
    PG_DISPATCH(x->dtype, {
        const T fill = (T)n->p[0];
        for (int64_t c = 0; c < planes; c++) {
            const T *xp = (const T *)pg_data(x) + c * g.H * g.W;
            T *o = (T *)pg_data(out) + c * Ho * Wo;
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t ih = pad_src(oh - g.t, g.H, mode);
                for (int64_t ow = 0; ow < Wo; ow++) {
                    const int64_t iw = pad_src(ow - g.l, g.W, mode);
                    o[oh * Wo + ow] = ih < 0 || iw < 0 ? fill : xp[ih * g.W + iw];
                }
            }
        }
    });
    return 0;
}

static int pad_bw(pg_node *n, pg_tensor *gout)
{
    pg_tensor *x = n->in[0];
    void *slot;
    int acc, wg = pg_grad_slot_for(x, &slot, &acc);
    if (wg <= 0) return wg;
    const pgeom g = pad_geom(n);
    const int mode = (int)n->p[1];
    const int64_t planes = g.C * x->ne[1], Ho = g.H + g.t + g.b, Wo = g.W + g.l + g.r;
    PG_DISPATCH(x->dtype, {
        if (!acc) memset(slot, 0, (size_t)pg_numel(x) * sizeof(T));
        for (int64_t c = 0; c < planes; c++) {
            const T *gp = (const T *)pg_data(gout) + c * Ho * Wo;
            T *d = (T *)slot + c * g.H * g.W;
            for (int64_t oh = 0; oh < Ho; oh++) {
                const int64_t ih = pad_src(oh - g.t, g.H, mode);
                if (ih < 0) continue;
                for (int64_t ow = 0; ow < Wo; ow++) {
                    const int64_t iw = pad_src(ow - g.l, g.W, mode);
                    if (iw >= 0) d[ih * g.W + iw] += gp[oh * Wo + ow];
                }
            }
        }
    });
    return 0;
}

/* padding, value and mode alone; lrtb: (left, right, top, bottom) */
static int pad_args(int dims, const double *padding, int npad, double value, const char *mode,
                    const char **fn, int64_t *lrtb, int *m)
{
    if (dims != 1 && dims != 2)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_pad2d(): dims must be 1 or 2, got %d", dims);
    if (!*fn) *fn = dims == 2 ? "ag_pad2d_op" : "ag_pad1d_op";
    const char *what = dims == 2
        ? "a whole number (negative: crop), a pair (H, W) or four (left, "
          "right, top, bottom) of them"
        : "a whole number (negative: crop) or a pair (left, right) of them";
    char b[160];
    if (!padding || !(npad == 1 || npad == 2 || (dims == 2 && npad == 4)))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: padding must be %s, got %d values", *fn, what,
                       padding ? npad : 0);
    if (!whole_in(padding, npad, -2147483647.0))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: padding must be %s, got %s", *fn, what,
                       show(b, sizeof b, padding, npad));
    if (mode_of(*fn, mode, PAD_MODES, m)) return -1;
    if (!isfinite(value))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: value must be a finite number, got %s", *fn,
                       pg_num(value));
    if (value != 0 && *m != PAD_CONSTANT)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: value (%.15g) applies to mode \"constant\" only, got mode \"%s\"", *fn,
                       value, PAD_MODES[*m]);
    const int64_t v[4] = {(int64_t)padding[0], (int64_t)padding[npad > 1],
                          (int64_t)padding[npad > 2 ? 2 : 0], (int64_t)padding[npad > 2 ? 3 : 0]};
    if (dims == 1) lrtb[0] = v[0], lrtb[1] = v[1], lrtb[2] = lrtb[3] = 0;
    else if (npad == 1) lrtb[0] = lrtb[1] = lrtb[2] = lrtb[3] = v[0];
    else if (npad == 2) lrtb[0] = lrtb[1] = v[1], lrtb[2] = lrtb[3] = v[0];
    else memcpy(lrtb, v, sizeof v);
    return 0;
}

int pg_pad2d_check(int dims, const double *padding, int npad, double value, const char *mode,
                   const char *fn, double *lrtb)
{
    int64_t v[4];
    int m;
    if (pad_args(dims, padding, npad, value, mode, &fn, v, &m)) return pg_last_status();
    for (int i = 0; lrtb && i < 4; i++) lrtb[i] = (double)v[i];
    return 0;
}

/* negative pads crop (torch's F.pad): the result keeps >= 1 in each dimension; "constant"
 * crops before it pads, so its crops together must fit in the input (torch's narrow()) */
static int crops(const char *fn, int dims, int m, pg_tensor *x, int64_t C, int64_t H, int64_t W,
                 const int64_t *p, int64_t Ho, int64_t Wo)
{
    char pad[128], in[96], out[64];
    if (dims == 1) {
        snprintf(pad, sizeof pad, "(left %lld, right %lld)", (long long)p[0], (long long)p[1]);
        snprintf(in, sizeof in, "(C %lld, L %lld)", (long long)C, (long long)W);
        snprintf(out, sizeof out, "L %lld", (long long)Wo);
    } else {
        snprintf(pad, sizeof pad, "(left %lld, right %lld, top %lld, bottom %lld)", (long long)p[0],
                 (long long)p[1], (long long)p[2], (long long)p[3]);
        snprintf(in, sizeof in, "(C %lld, H %lld, W %lld)", (long long)C, (long long)H,
                 (long long)W);
        snprintf(out, sizeof out, "H %lld, W %lld", (long long)Ho, (long long)Wo);
    }
    const int64_t cw = (p[0] < 0 ? -p[0] : 0) + (p[1] < 0 ? -p[1] : 0);
    const int64_t ch = (p[2] < 0 ? -p[2] : 0) + (p[3] < 0 ? -p[3] : 0);
    if (m == PAD_CONSTANT && (cw > W || ch > H))
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: padding %s crops more than the input %s holds; x is %s", fn, pad, in,
                       pg_desc(x));
    if (Ho < 1 || Wo < 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: padding %s leaves an empty output (%s) of the input %s; x is %s", fn,
                       pad, out, in, pg_desc(x));
    return 0;
}

pg_tensor *pg_pad2d(pg_tensor *x, int dims, const double *shape, const double *padding, int npad,
                    double value, const char *mode, const char *fn)
{
    int64_t p[4] = {0, 0, 0, 0}, chw[3] = {0, 0, 0}; /* set on success: -O3 cannot tell */
    int m = 0;
    if (pad_args(dims, padding, npad, value, mode, &fn, p, &m) || pg_not_live(x, fn, "x") ||
        pg_image_of(x, shape, dims, fn, chw))
        return NULL;
    const int64_t C = chw[0], H = chw[1], W = chw[2];
    if (m == PAD_REFLECT && (p[0] >= W || p[1] >= W || p[2] >= H || p[3] >= H)) {
        if (dims == 1)
            return pg_fail_null(PG_STATUS_ERR_SHAPE,
                                "%s: reflect padding (left %lld, right %lld) must be less than "
                                "the input's length %lld; x is %s",
                                fn, (long long)p[0], (long long)p[1], (long long)W, pg_desc(x));
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: reflect padding (left %lld, right %lld, top %lld, bottom %lld) "
                            "must be less than the input's W %lld (left, right) and H %lld (top, "
                            "bottom); x is %s",
                            fn, (long long)p[0], (long long)p[1], (long long)p[2], (long long)p[3],
                            (long long)W, (long long)H, pg_desc(x));
    }
    const int64_t Ho = H + p[2] + p[3], Wo = W + p[0] + p[1];
    if (crops(fn, dims, m, x, C, H, W, p, Ho, Wo)) return NULL;
    if (Ho > 2147483647 || Wo > 2147483647)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: the padded image (H %lld, W %lld) is too "
                            "large",
                            fn, (long long)Ho, (long long)Wo);
    pg_tensor *out = pg_new(x->dtype, C * Ho * Wo, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    out->img[0] = Wo, out->img[1] = Ho, out->img[2] = C;
    int64_t ip[4] = {H << 32 | W, C, pack2(p[0], p[1]), pack2(p[2], p[3])};
    double pp[4] = {value, (double)m, 0, 0};
    pg_tensor *in[1] = {x};
    return pg_op_run("pad2d", pad_fw, pad_bw, out, 1, in, pp, ip, 0, NULL);
}

/* ---- upsampling: ip[0] = H << 32 | W, ip[1] = C, ip[2] = sh << 32 | sw, p[0] = mode ---- */

/* torch's linear source index with scale_factor s given (align_corners False): the two inputs
 * and their weights for output o of an axis of n inputs, in T's precision as torch's opmath */
#define LIN_INDEX(T, o, n, s, i0, i1, l0, l1)                                                      \
    T l1 = (T)(1.0 / (double)(s)) * ((T)(o) + (T)0.5) - (T)0.5;                                    \
    if (l1 < 0) l1 = 0;                                                                            \
    const int64_t i0 = (int64_t)l1, i1 = i0 + (i0 < (n)-1);                                        \
    l1 -= (T)i0;                                                                                   \
    if (l1 > 1) l1 = 1;                                                                            \
    const T l0 = (T)1 - l1

static int up_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *out = n->out;
    const int64_t H = n->ip[0] >> 32, W = n->ip[0] & 0xffffffff, sh = n->ip[2] >> 32,
                  sw = n->ip[2] & 0xffffffff, Ho = H * sh, Wo = W * sw;
    const int64_t planes = n->ip[1] * x->ne[1];
    const int bil = n->p[0] == UP_BILINEAR;
    PG_DISPATCH(x->dtype, {
        for (int64_t c = 0; c < planes; c++) {
            const T *xp = (const T *)pg_data(x) + c * H * W;
            T *o = (T *)pg_data(out) + c * Ho * Wo;
            for (int64_t oh = 0; oh < Ho; oh++) {
                if (!bil) {
                    const T *row = xp + (oh / sh) * W;
                    for (int64_t ow = 0; ow < Wo; ow++) o[oh * Wo + ow] = row[ow / sw];
                    continue;
                }
                LIN_INDEX(T, oh, H, sh, h0, h1, hl0, hl1);
                for (int64_t ow = 0; ow < Wo; ow++) {
                    LIN_INDEX(T, ow, W, sw, w0, w1, wl0, wl1);
                    const T t0 = xp[h0 * W + w0] * wl0 + xp[h0 * W + w1] * wl1;
                    const T t1 = xp[h1 * W + w0] * wl0 + xp[h1 * W + w1] * wl1;
                    o[oh * Wo + ow] = t0 * hl0 + t1 * hl1;
                }
            }
        }
    });
    return 0;
}

static int up_bw(pg_node *n, pg_tensor *gout)
{
    pg_tensor *x = n->in[0];
    void *slot;
    int acc, wg = pg_grad_slot_for(x, &slot, &acc);
    if (wg <= 0) return wg;
    const int64_t H = n->ip[0] >> 32, W = n->ip[0] & 0xffffffff, sh = n->ip[2] >> 32,
                  sw = n->ip[2] & 0xffffffff, Ho = H * sh, Wo = W * sw;
    const int64_t planes = n->ip[1] * x->ne[1];
    const int bil = n->p[0] == UP_BILINEAR;
    PG_DISPATCH(x->dtype, {
        if (!acc) memset(slot, 0, (size_t)pg_numel(x) * sizeof(T));
        for (int64_t c = 0; c < planes; c++) {
            const T *gp = (const T *)pg_data(gout) + c * Ho * Wo;
            T *d = (T *)slot + c * H * W;
            for (int64_t oh = 0; oh < Ho; oh++) {
                if (!bil) {
                    T *row = d + (oh / sh) * W;
                    for (int64_t ow = 0; ow < Wo; ow++) row[ow / sw] += gp[oh * Wo + ow];
                    continue;
                }
                LIN_INDEX(T, oh, H, sh, h0, h1, hl0, hl1);
                for (int64_t ow = 0; ow < Wo; ow++) {
                    LIN_INDEX(T, ow, W, sw, w0, w1, wl0, wl1);
                    const T gv = gp[oh * Wo + ow], g0 = gv * hl0, g1 = gv * hl1;
                    d[h0 * W + w0] += g0 * wl0;
                    d[h0 * W + w1] += g0 * wl1;
                    d[h1 * W + w0] += g1 * wl0;
                    d[h1 * W + w1] += g1 * wl1;
                }
            }
        }
    });
    return 0;
}

static int up_args(int dims, const double *scale, const char *mode, const char **fn, int64_t *s,
                   int *m)
{
    if (dims != 1 && dims != 2)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_upsample2d(): dims must be 1 or 2, got %d", dims);
    if (!*fn) *fn = dims == 2 ? "ag_upsample2d_op" : "ag_upsample1d_op";
    char b[80];
    if (!scale) return pg_fail(PG_STATUS_ERR_VALUE, "%s: scale_factor is required", *fn);
    if (!whole_in(scale, dims, 1))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: scale_factor must be %s >= 1, got %s", *fn,
                       dims == 2 ? "one or two (H, W) whole numbers" : "a whole number",
                       show(b, sizeof b, scale, dims));
    if (mode_of(*fn, mode, dims == 2 ? UP_MODES : UP1_MODES, m)) return -1;
    if (dims == 2) s[0] = (int64_t)scale[0], s[1] = (int64_t)scale[1];
    else s[0] = 1, s[1] = (int64_t)scale[0];
    return 0;
}

int pg_upsample2d_check(int dims, const double *scale, const char *mode, const char *fn)
{
    int64_t s[2];
    int m;
    return up_args(dims, scale, mode, &fn, s, &m) ? pg_last_status() : 0;
}

pg_tensor *pg_upsample2d(pg_tensor *x, int dims, const double *shape, const double *scale,
                         const char *mode, const char *fn)
{
    int64_t s[2] = {1, 1}, chw[3] = {0, 0, 0}; /* s: set on success, -O3 cannot tell */
    int m = 0;
    if (up_args(dims, scale, mode, &fn, s, &m) || pg_not_live(x, fn, "x") ||
        pg_image_of(x, shape, dims, fn, chw))
        return NULL;
    const int64_t C = chw[0], H = chw[1], W = chw[2];
    if ((double)H * (double)s[0] > 2147483647.0 || (double)W * (double)s[1] > 2147483647.0)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: the upsampled image (H %lld * %lld, W %lld * %lld) is too large",
                            fn, (long long)H, (long long)s[0], (long long)W, (long long)s[1]);
    const int64_t Ho = H * s[0], Wo = W * s[1];
    pg_tensor *out = pg_new(x->dtype, C * Ho * Wo, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    out->img[0] = Wo, out->img[1] = Ho, out->img[2] = C;
    int64_t ip[4] = {H << 32 | W, C, s[0] << 32 | s[1], 0};
    double pp[4] = {(double)m, 0, 0, 0};
    pg_tensor *in[1] = {x};
    return pg_op_run(m == UP_BILINEAR ? "upsample_bilinear" : "upsample_nearest", up_fw, up_bw, out,
                     1, in, pp, ip, 0, NULL);
}
