/* Max / average pooling and global pooling of image batches [C*H*W, N] (pg_api_pool.h): the
 * argument checks and their texts, forward, exact backward, and replayable forwards. Max
 * pooling keeps no index buffer: backward rescans the window of x (the tape guarantees x is
 * unchanged), which finds the same element by the same rule. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

typedef struct {
    int64_t C, H, W, kh, kw, sh, sw, ph, pw, Ho, Wo;
} geom;

static const char *def_name(int kind, int dims)
{
    static const char *const n[2][2] = {{"ag_max_pool1d_op", "ag_max_pool2d_op"},
                                        {"ag_avg_pool1d_op", "ag_avg_pool2d_op"}};
    return n[kind == PG_POOL_KIND_AVG][dims == 2];
}

/* "(a, b)" for dims 2, "a" for dims 1, as the user gave them (pg_fmt_num15: Inf / NaN / NA in R's
 * words, inf / nan in Python's) */
static const char *show(char *buf, size_t n, const double *v, int dims)
{
    char a[40], b[40];
    if (dims == 2)
        snprintf(buf, n, "(%s, %s)", pg_fmt_num15(a, sizeof a, v[0]),
                 pg_fmt_num15(b, sizeof b, v[1]));
    else snprintf(buf, n, "%s", pg_fmt_num15(a, sizeof a, v[0]));
    return buf;
}

/* v[0..dims) whole numbers in [lo, 2^31 - 1] into out (H, W order; dims 1 fills H with `h1`) */
static int sizes(const char *fn, const char *arg, const double *v, int dims, double lo, int64_t h1,
                 int64_t *out)
{
    for (int i = 0; i < dims; i++)
        if (!pg_is_whole(v[i]) || v[i] < lo || v[i] > 2147483647.0) {
            char b[80];
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must be %s whole number%s >= %g, got %s",
                           fn, arg, dims == 2 ? "one or two (H, W)" : "a", dims == 2 ? "s" : "", lo,
                           show(b, sizeof b, v, dims));
        }
    if (dims == 2) {
        out[0] = (int64_t)v[0];
        out[1] = (int64_t)v[1];
    } else {
        out[0] = h1;
        out[1] = (int64_t)v[0];
    }
    return 0;
}

/* (C, H, W) from shape (dims + 1 values, torch order) or x's tag, checked against x's rows
 * (pg.h: the resize ops share it) */
int pg_image_of(pg_tensor *x, const double *shape, int dims, const char *fn, int64_t *chw)
{
    char b[160];
    if (shape) {
        int n = dims + 1;
        for (int i = 0; i < n; i++)
            if (!pg_is_whole(shape[i]) || shape[i] < 1 || shape[i] > 2147483647.0) {
                char s0[40], s1[40], s2[40];
                pg_fmt_num15(s0, sizeof s0, shape[0]);
                pg_fmt_num15(s1, sizeof s1, shape[1]);
                if (n == 3)
                    snprintf(b, sizeof b, "(%s, %s, %s)", s0, s1,
                             pg_fmt_num15(s2, sizeof s2, shape[2]));
                else snprintf(b, sizeof b, "(%s, %s)", s0, s1);
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: input_shape must be %d whole numbers >= 1 %s, got %s", fn, n,
                               n == 3 ? "(C, H, W)" : "(C, L)", b);
            }
        chw[0] = (int64_t)shape[0];
        chw[1] = n == 3 ? (int64_t)shape[1] : 1;
        chw[2] = (int64_t)shape[n - 1];
    } else {
        if (x->img[0] <= 0)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: x %s carries no image shape; give input_shape = %s or tag x "
                           "(ag_image_shape)",
                           fn, pg_desc(x), dims == 1 ? "(C, L)" : "(C, H, W)");
        chw[0] = x->img[2];
        chw[1] = x->img[1];
        chw[2] = x->img[0];
        if (dims == 1 && chw[1] != 1)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: x %s carries the image shape (C %lld, H %lld, W %lld); a 1-D op "
                           "needs H = 1 (give input_shape = (C, L))",
                           fn, pg_desc(x), (long long)chw[0], (long long)chw[1], (long long)chw[2]);
    }
    double rows = (double)chw[0] * (double)chw[1] * (double)chw[2];
    if (rows != (double)x->ne[0]) {
        if (dims == 1)
            snprintf(b, sizeof b, "(C %lld, L %lld) needs %.0f rows (C * L)", (long long)chw[0],
                     (long long)chw[2], rows);
        else
            snprintf(b, sizeof b, "(C %lld, H %lld, W %lld) needs %.0f rows (C * H * W)",
                     (long long)chw[0], (long long)chw[1], (long long)chw[2], rows);
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: %s %s, but x is %s", fn,
                       shape ? "input_shape" : "x's image shape", b, pg_desc(x));
    }
    return 0;
}

/* ---- the kernels: one window's first maximum (ties) / last NaN, as torch's CPU loop. The fast
 * path takes the plain maximum with a NaN flag (selects the compiler vectorises; a branch per
 * element mispredicts on real data) and finds the first element equal to it; a window with NaN
 * takes the rule's scan. ---- */
#define POOL_SPAN(o, s, p, k, n, lo, hi)                                                           \
    int64_t lo = (o) * (s) - (p), hi = lo + (k);                                                   \
    if (lo < 0) lo = 0;                                                                            \
    if (hi > (n)) hi = (n)

#define DEF_ARGMAX(T, SUF)                                                                         \
    static int64_t argmax_nan_##SUF(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0,     \
                                    int64_t w1)                                                    \
    {                                                                                              \
        int64_t best = h0 * W + w0;                                                                \
        T m = x[best];                                                                             \
        for (int64_t h = h0; h < h1; h++)                                                          \
            for (int64_t w = w0; w < w1; w++)                                                      \
                if (x[h * W + w] > m || isnan(x[h * W + w])) m = x[best = h * W + w];              \
        return best;                                                                               \
    }                                                                                              \
    static inline T maxv_##SUF(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0,          \
                               int64_t w1, int *nan)                                               \
    {                                                                                              \
        T m = x[h0 * W + w0];                                                                      \
        int bad = 0;                                                                               \
        for (int64_t h = h0; h < h1; h++)                                                          \
            for (int64_t w = w0; w < w1; w++) {                                                    \
                T v = x[h * W + w];                                                                \
                m = v > m ? v : m;                                                                 \
                bad |= v != v;                                                                     \
            }                                                                                      \
        *nan = bad;                                                                                \
        return m;                                                                                  \
    }                                                                                              \
    static inline int64_t argmax_##SUF(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0,  \
                                       int64_t w1)                                                 \
    {                                                                                              \
        int nan;                                                                                   \
        T m = maxv_##SUF(x, W, h0, h1, w0, w1, &nan);                                              \
        if (nan) return argmax_nan_##SUF(x, W, h0, h1, w0, w1);                                    \
        for (int64_t h = h0; h < h1; h++)                                                          \
            for (int64_t w = w0; w < w1; w++)                                                      \
                if (x[h * W + w] == m) return h * W + w;                                           \
        return h0 * W + w0; /* not reached */                                                      \
    }                                                                                              \
    static inline T maxval_##SUF(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0,        \
                                 int64_t w1)                                                       \
    {                                                                                              \
        int nan;                                                                                   \
        T m = maxv_##SUF(x, W, h0, h1, w0, w1, &nan);                                              \
        return nan ? x[argmax_nan_##SUF(x, W, h0, h1, w0, w1)] : m;                                \
    }
DEF_ARGMAX(float, f)
DEF_ARGMAX(double, d)
#define ARGMAX(x, ...)                                                                             \
    _Generic((x), const float * : argmax_f, const double * : argmax_d)(x, __VA_ARGS__)
#define MAXVAL(x, ...)                                                                             \
    _Generic((x), const float * : maxval_f, const double * : maxval_d)(x, __VA_ARGS__)

/* the node's geometry: ip[0] = H << 32 | W, ip[1] = C, ip[2] = kh << 32 | kw, ip[3] = sh << 32 |
 * sw, p[0..1] = padding, p[2] = kind (every size < 2^31) */
static geom node_geom(const pg_node *n)
{
    geom g;
    g.H = n->ip[0] >> 32, g.W = n->ip[0] & 0xffffffff, g.C = n->ip[1];
    g.kh = n->ip[2] >> 32, g.kw = n->ip[2] & 0xffffffff;
    g.sh = n->ip[3] >> 32, g.sw = n->ip[3] & 0xffffffff;
    g.ph = (int64_t)n->p[0], g.pw = (int64_t)n->p[1];
    g.Ho = (g.H + 2 * g.ph - g.kh) / g.sh + 1, g.Wo = (g.W + 2 * g.pw - g.kw) / g.sw + 1;
    return g;
}

static int pool_fw(pg_node *n)
{
    const geom g = node_geom(n);
    const int avg = n->p[2] == PG_POOL_KIND_AVG;
    pg_tensor *x = n->in[0], *out = n->out;
    const int64_t planes = g.C * x->ne[1], HW = g.H * g.W, OHW = g.Ho * g.Wo;
    PG_DISPATCH(x->dtype, {
        const T div = (T)(g.kh * g.kw);
        for (int64_t c = 0; c < planes; c++) {
            const T *xp = (const T *)pg_data(x) + c * HW;
            T *o = (T *)pg_data(out) + c * OHW;
            for (int64_t oh = 0; oh < g.Ho; oh++) {
                POOL_SPAN(oh, g.sh, g.ph, g.kh, g.H, h0, h1);
                for (int64_t ow = 0; ow < g.Wo; ow++) {
                    POOL_SPAN(ow, g.sw, g.pw, g.kw, g.W, w0, w1);
                    if (!avg) {
                        o[oh * g.Wo + ow] = MAXVAL(xp, g.W, h0, h1, w0, w1);
                        continue;
                    }
                    T s = 0;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) s += xp[h * g.W + w];
                    o[oh * g.Wo + ow] = s / div;
                }
            }
        }
    });
    return 0;
}

static int pool_bw(pg_node *n, pg_tensor *gout)
{
    pg_tensor *x = n->in[0];
    void *slot;
    int acc, wg = pg_grad_slot_for(x, &slot, &acc);
    if (wg <= 0) return wg;
    const geom g = node_geom(n);
    const int avg = n->p[2] == PG_POOL_KIND_AVG;
    const int64_t planes = g.C * x->ne[1], HW = g.H * g.W, OHW = g.Ho * g.Wo;
    PG_DISPATCH(x->dtype, {
        if (!acc) memset(slot, 0, (size_t)pg_numel(x) * sizeof(T));
        const T div = (T)(g.kh * g.kw);
        for (int64_t c = 0; c < planes; c++) {
            const T *xp = (const T *)pg_data(x) + c * HW, *gp = (const T *)pg_data(gout) + c * OHW;
            T *d = (T *)slot + c * HW;
            for (int64_t oh = 0; oh < g.Ho; oh++) {
                POOL_SPAN(oh, g.sh, g.ph, g.kh, g.H, h0, h1);
                for (int64_t ow = 0; ow < g.Wo; ow++) {
                    POOL_SPAN(ow, g.sw, g.pw, g.kw, g.W, w0, w1);
                    const T gv = gp[oh * g.Wo + ow];
                    if (!avg) {
                        d[ARGMAX(xp, g.W, h0, h1, w0, w1)] += gv;
                        continue;
                    }
                    const T q = gv / div;
                    for (int64_t h = h0; h < h1; h++)
                        for (int64_t w = w0; w < w1; w++) d[h * g.W + w] += q;
                }
            }
        }
    });
    return 0;
}

/* the layer's arguments alone (no input yet): sizes and padding <= kernel / 2 into k, s, p */
static int check_args(int kind, int dims, const double *kernel, const double *stride,
                      const double *padding, const char **fn, int64_t *k, int64_t *s, int64_t *p)
{
    if (kind != PG_POOL_KIND_MAX && kind != PG_POOL_KIND_AVG)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_pool(): bad kind %d", kind);
    if (dims != 1 && dims != 2)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_pool(): dims must be 1 or 2, got %d", dims);
    if (!*fn) *fn = def_name(kind, dims);
    if (!kernel || !padding)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: kernel_size and padding are required", *fn);
    if (sizes(*fn, "kernel_size", kernel, dims, 1, 1, k) ||
        sizes(*fn, "stride", stride ? stride : kernel, dims, 1, 1, s) ||
        sizes(*fn, "padding", padding, dims, 0, 0, p))
        return -1;
    char bk[80], bp[80];
    if (2 * p[0] > k[0] || 2 * p[1] > k[1])
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: padding %s must be at most half of kernel_size %s",
                       *fn, show(bp, sizeof bp, padding, dims), show(bk, sizeof bk, kernel, dims));
    return 0;
}

int pg_pool_check(int kind, int dims, const double *kernel, const double *stride,
                  const double *padding, const char *fn)
{
    int64_t k[2], s[2], p[2];
    return check_args(kind, dims, kernel, stride, padding, &fn, k, s, p) ? pg_last_status() : 0;
}

pg_tensor *pg_pool(pg_tensor *x, int kind, int dims, const double *shape, const double *kernel,
                   const double *stride, const double *padding, const char *fn)
{
    int64_t k[2], s[2], p[2], chw[3] = {0, 0, 0};
    if (check_args(kind, dims, kernel, stride, padding, &fn, k, s, p) || pg_not_live(x, fn, "x") ||
        pg_image_of(x, shape, dims, fn, chw))
        return NULL;
    char bk[80];
    geom g = {chw[0], chw[1], chw[2], k[0], k[1], s[0], s[1], p[0], p[1], 0, 0};
    if (g.H + 2 * g.ph < g.kh || g.W + 2 * g.pw < g.kw) {
        char in[120];
        if (dims == 1)
            snprintf(in, sizeof in, "length %lld with padding %lld", (long long)g.W,
                     (long long)g.pw);
        else
            snprintf(in, sizeof in, "H %lld, W %lld with padding (%lld, %lld)", (long long)g.H,
                     (long long)g.W, (long long)g.ph, (long long)g.pw);
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: kernel_size %s is larger than the padded input (%s); x is %s", fn,
                            show(bk, sizeof bk, kernel, dims), in, pg_desc(x));
    }
    g.Ho = (g.H + 2 * g.ph - g.kh) / g.sh + 1;
    g.Wo = (g.W + 2 * g.pw - g.kw) / g.sw + 1;
    pg_tensor *out = pg_new(x->dtype, g.C * g.Ho * g.Wo, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    out->img[0] = g.Wo, out->img[1] = g.Ho, out->img[2] = g.C;
    int64_t ip[4] = {g.H << 32 | g.W, g.C, g.kh << 32 | g.kw, g.sh << 32 | g.sw};
    double pp[4] = {(double)g.ph, (double)g.pw, (double)kind, 0};
    pg_tensor *in[1] = {x};
    return pg_op_run(kind == PG_POOL_KIND_MAX ? "max_pool" : "avg_pool", pool_fw, pool_bw, out, 1,
                     in, pp, ip, 0, NULL);
}

/* ---- global pooling: ip[0] = C, ip[1] = H*W, p[0] = kind ---- */
static int gpool_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *out = n->out;
    const int64_t planes = n->ip[0] * x->ne[1], HW = n->ip[1];
    const int avg = n->p[0] == PG_POOL_KIND_AVG;
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *o = pg_data(out);
        for (int64_t c = 0; c < planes; c++) {
            const T *v = xp + c * HW;
            if (!avg) {
                o[c] = MAXVAL(v, HW, 0, 1, 0, HW);
                continue;
            }
            T s = 0;
            for (int64_t i = 0; i < HW; i++) s += v[i];
            o[c] = s / (T)HW;
        }
    });
    return 0;
}

static int gpool_bw(pg_node *n, pg_tensor *gout)
{
    pg_tensor *x = n->in[0];
    void *slot;
    int acc, wg = pg_grad_slot_for(x, &slot, &acc);
    if (wg <= 0) return wg;
    const int64_t planes = n->ip[0] * x->ne[1], HW = n->ip[1];
    const int avg = n->p[0] == PG_POOL_KIND_AVG;
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x), *gp = pg_data(gout);
        T *d = slot;
        if (!acc) memset(slot, 0, (size_t)pg_numel(x) * sizeof(T));
        for (int64_t c = 0; c < planes; c++) {
            const T *v = xp + c * HW;
            T *dc = d + c * HW;
            if (!avg) {
                dc[ARGMAX(v, HW, 0, 1, 0, HW)] += gp[c];
                continue;
            }
            const T q = gp[c] / (T)HW;
            for (int64_t i = 0; i < HW; i++) dc[i] += q;
        }
    });
    return 0;
}

pg_tensor *pg_global_pool(pg_tensor *x, int kind, const double *shape, const char *fn)
{
    if (kind != PG_POOL_KIND_MAX && kind != PG_POOL_KIND_AVG)
        return pg_fail_null(PG_STATUS_ERR_ARG, "pg_global_pool(): bad kind %d", kind);
    if (!fn) fn = kind == PG_POOL_KIND_MAX ? "ag_global_max_pool_op" : "ag_global_avg_pool_op";
    int64_t chw[3] = {0, 0, 0};
    if (pg_not_live(x, fn, "x") || pg_image_of(x, shape, 2, fn, chw)) return NULL;
    pg_tensor *out = pg_new(x->dtype, chw[0], x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    int64_t ip[4] = {chw[0], chw[1] * chw[2], 0, 0};
    double pp[4] = {(double)kind, 0, 0, 0};
    pg_tensor *in[1] = {x};
    return pg_op_run(kind == PG_POOL_KIND_MAX ? "global_max_pool" : "global_avg_pool", gpool_fw,
                     gpool_bw, out, 1, in, pp, ip, 0, NULL);
}
