/* The vectorised elementwise math of vmath.c, written once and included there once per SIMD
 * level: SUF names the level, ATTR is its target attribute. Every lane does the same IEEE
 * operations (no FMA: vmath.c turns contraction off), so all levels give the same bits.
 * Not a header of its own: include it only from vmath.c. */
#define CAT_(a, b) a##_##b
#define CAT(a, b)  CAT_(a, b)
#define F(name)    CAT(name, SUF)

/* this level's vector types (VBYTES wide) and helpers */
typedef double F(vd) __attribute__((vector_size(VBYTES)));
typedef long long F(vl) __attribute__((vector_size(VBYTES)));
typedef unsigned long long F(vu) __attribute__((vector_size(VBYTES)));
typedef float F(vs) __attribute__((vector_size(VBYTES)));
typedef int F(vi) __attribute__((vector_size(VBYTES)));
typedef unsigned F(vu32) __attribute__((vector_size(VBYTES)));
#define vd             F(vd)
#define vl             F(vl)
#define vu             F(vu)
#define vs             F(vs)
#define vi             F(vi)
#define vu32           F(vu32)
#define VD(c)          ((vd){REP64(c)})
#define VS(c)          ((vs){REP32(c)})
#define W64            (VBYTES / 8)
#define W32            (VBYTES / 4)
/* lanes of a where mask m (a comparison's result) is set, else of b */
#define vsel(m, a, b)  ((vd)(((vl)(m) & (vl)(a)) | (~(vl)(m) & (vl)(b))))
#define vmin(a, b)     vsel((a) < (b), (a), (b))
#define vmax(a, b)     vsel((a) > (b), (a), (b))
#define vssel(m, a, b) ((vs)(((vi)(m) & (vi)(a)) | (~(vi)(m) & (vi)(b))))
#define vsmin(a, b)    vssel((a) < (b), (a), (b))
#define vsmax(a, b)    vssel((a) > (b), (a), (b))

/* expm1(r) = r + r^2 s(r) for |r| <= ln2 / 2, s the Taylor series from 1/2! to r^11/13! (next
 * term < 5e-18 relative) in Estrin's scheme (a short dependency chain: Horner's 26 dependent
 * operations ran at a third of the throughput). No cancellation: r is exact, r^2 s(r) small. */
ATTR static inline __attribute__((always_inline)) vd F(expm1_series)(vd r)
{
    const vd r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const vd e0 = VD(1.0 / 2) + VD(1.0 / 6) * r, e1 = VD(1.0 / 24) + VD(1.0 / 120) * r;
    const vd e2 = VD(1.0 / 720) + VD(1.0 / 5040) * r, e3 = VD(1.0 / 40320) + VD(1.0 / 362880) * r;
    const vd e4 = VD(1.0 / 3628800) + VD(1.0 / 39916800) * r;
    const vd e5 = VD(1.0 / 479001600) + VD(1.0 / 6227020800.0) * r;
    const vd f0 = e0 + e1 * r2, f1 = e2 + e3 * r2, f2 = e4 + e5 * r2;
    return r + r2 * ((f0 + f1 * r4) + f2 * r8);
}

/* exp(x) for W64 doubles: x = n ln2 + r, |r| <= ln2 / 2 (n rounded with the 1.5 * 2^52 shift, ln2 in
 * two parts as in fdlibm, so r is exact to ~2^-60), exp(r) = 1 + expm1(r), then times 2^n as
 * 2^n1 * 2^n2 (both normal; one rounding, into subnormals too). Within 1 ulp (tests). */
ATTR static inline __attribute__((always_inline)) vd F(exp_core)(vd x)
{
    const vd xc = vmin(vmax(x, VD(-746.0)), VD(710.0));
    const vd t = xc * VD(0x1.71547652b82fep0) + VD(0x1.8p52);
    const vd nd = t - VD(0x1.8p52);
    const vd r = (xc - nd * VD(6.93147180369123816490e-01)) - nd * VD(1.90821492927058770002e-10);
    const vd p = VD(1.0) + F(expm1_series)(r);
    /* n = bits(t) - bits(shift); n1 = floor(n / 2) (shifted to stay non-negative), n2 = n - n1 */
    const vl n = (vl)t - (vl)VD(0x1.8p52);
    const vl n1 = (vl)(((vu)(n + 2048)) >> 1) - 1024, n2 = n - n1;
    const vd s1 = (vd)((n1 + 1023) << 52), s2 = (vd)((n2 + 1023) << 52);
    /* x clamped to 710 gives 2^1024 * p = inf, to -746 gives 0: overflow and underflow need no
     * test of their own; a NaN x stays NaN */
    return vsel(x != x, x, p * s1 * s2);
}

/* tanh for W64 doubles: e / (e + 2) with e = expm1(2|x|) = 2^n expm1(r) + (2^n - 1) (r as in exp;
 * both terms exact for these n, one rounding in the sum), x's sign put back; 1 beyond |x| = 20 */
ATTR static inline __attribute__((always_inline)) vd F(tanh_core)(vd x)
{
    const vl sign = (vl)x & (vl)VD(-0.0);
    const vd a = (vd)((vl)x & ~(vl)VD(-0.0));
    const vd a2 = vmin(a + a, VD(40.0));
    const vd t = a2 * VD(0x1.71547652b82fep0) + VD(0x1.8p52);
    const vd nd = t - VD(0x1.8p52);
    const vd r = (a2 - nd * VD(6.93147180369123816490e-01)) - nd * VD(1.90821492927058770002e-10);
    const vd s = (vd)(((vl)t - (vl)VD(0x1.8p52) + 1023) << 52); /* 2^n, n in [0, 58] */
    const vd em = s * F(expm1_series)(r) + (s - VD(1.0));
    const vd th = vsel(a > VD(20.0), VD(1.0), em / (em + VD(2.0)));
    return vsel(x != x, x, (vd)((vl)th | sign));
}

ATTR static inline __attribute__((always_inline)) vd F(sigmoid_core)(vd x)
{
    return VD(1.0) / (VD(1.0) + F(exp_core)(-x));
}

/* exp(r) 2^n for expf_core and expf_hl: r reduced, t = x / ln2 + the 1.5 * 2^23 shift */
ATTR static inline __attribute__((always_inline)) vs F(expf_scale)(vs r, vs t)
{
    const vs r2 = r * r;
    const vs e0 = VS(5.0000001201E-1f) + VS(1.6666665459E-1f) * r;
    const vs e1 = VS(4.1665795894E-2f) + VS(8.3334519073E-3f) * r;
    const vs e2 = VS(1.3981999507E-3f) + VS(1.9875691500E-4f) * r;
    const vs q = e0 + (e1 + e2 * r2) * r2;
    const vs p = (q * r2 + r) + VS(1.0f);
    const vi n = (vi)t - (vi)VS(0x1.8p23f);
    const vi n1 = (vi)(((vu32)(n + 256)) >> 1) - 128, n2 = n - n1;
    const vs s1 = (vs)((n1 + 127) << 23), s2 = (vs)((n2 + 127) << 23);
    return p * s1 * s2;
}

/* exp for W32 floats, in f32 (Cephes' expf): n ln2 + r with ln2 in two parts (n * C1 exact),
 * exp(r) = 1 + r + r^2 P(r) with P of degree 5, times 2^n1 * 2^n2. Within 1 ulp but for
 * results below FLT_MIN (measured over the whole range in the tests). */
ATTR static inline __attribute__((always_inline)) vs F(expf_core)(vs x)
{
    const vs xc = vsmin(vsmax(x, VS(-104.0f)), VS(89.0f));
    const vs t = xc * VS(0x1.715476p0f) + VS(0x1.8p23f);
    const vs nd = t - VS(0x1.8p23f);
    const vs r = (xc - nd * VS(0.693359375f)) - nd * VS(-2.12194440e-4f);
    return vssel(x != x, x, F(expf_scale)(r, t)); /* clamped x gives inf / 0 at the ends */
}

ATTR static inline __attribute__((always_inline)) vs F(sigmoidf_core)(vs x)
{
    return VS(1.0f) / (VS(1.0f) + F(expf_core)(-x));
}

/* tanh for W32 floats: below |x| = 0.625 Cephes' odd polynomial (no cancellation), above it
 * 1 - 2 / (exp(2|x|) + 1); x's sign put back */
ATTR static inline __attribute__((always_inline)) vs F(tanhf_poly)(vs a)
{
    const vs z = a * a;
    const vs e0 = VS(-5.70498872745E-3f) * z + VS(2.06390887954E-2f);
    const vs e1 = VS(-5.37397155531E-2f) * z + VS(1.33314422036E-1f);
    const vs z2 = z * z;
    return ((e0 * z2 + e1) * z + VS(-3.33332819422E-1f)) * z * a + a;
}
ATTR static inline __attribute__((always_inline)) vs F(tanhf_big)(vs a)
{
    return VS(1.0f) - VS(2.0f) / (F(expf_core)(a + a) + VS(1.0f));
}
ATTR static inline __attribute__((always_inline)) vs F(tanhf_core)(vs x)
{
    const vi sign = (vi)x & (vi)VS(-0.0f);
    const vs a = (vs)((vi)x & ~(vi)VS(-0.0f));
    const vs poly = F(tanhf_poly)(a), big = F(tanhf_big)(a);
    return (vs)((vi)vssel(a < VS(0.625f), poly, big) | sign);
}
/* tanhf_core computing only the side that every lane takes, when they agree (the LSTM's cells
 * and gates mostly lie below 0.625): the select would pick the same values, the same bits */
ATTR static inline __attribute__((always_inline)) vs F(tanhf_sided)(vs x)
{
    const vi sign = (vi)x & (vi)VS(-0.0f);
    const vs a = (vs)((vi)x & ~(vi)VS(-0.0f));
    const vi m = (vi)(a < VS(0.625f));
    unsigned long long u[VBYTES / 8], all = ~0ULL, any = 0;
    memcpy(u, &m, sizeof u);
    for (int k = 0; k < VBYTES / 8; k++) all &= u[k], any |= u[k];
    if (all == ~0ULL) return (vs)((vi)F(tanhf_poly)(a) | sign);
    if (!any) return (vs)((vi)F(tanhf_big)(a) | sign);
    return (vs)((vi)vssel(m, F(tanhf_poly)(a), F(tanhf_big)(a)) | sign);
}

/* log for W64 doubles (fdlibm's e_log): x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1,
 * s = f / (2 + f), log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))), plus k ln2 in two parts.
 * Subnormal x is scaled by 2^54 first. Within 1 ulp. */
ATTR static inline __attribute__((always_inline)) vd F(log_core)(vd x)
{
    const vl sub = (vl)(x < VD(0x1p-1022));
    const vd xs = vsel(sub, x * VD(0x1p54), x);
    const vl bits = (vl)xs;
    /* m's bits: x's mantissa under the exponent of [1, 2), then halved when m >= sqrt(2) */
    vl k = ((vl)((vu)bits >> 52) & 0x7ff) - 1023 - (sub & 54);
    vd m = (vd)((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
    const vl big = (vl)(m >= VD(0x1.6a09e667f3bcdp0));
    m = vsel(big, m * VD(0.5), m);
    k = k - big; /* big is -1 where set */
    const vd kd =
        (vd)(k + (vl)VD(0x1.8p52)) - VD(0x1.8p52); /* exact; no int64 conversion before AVX-512DQ */
    const vd f = m - VD(1.0);
    const vd sv = f / (VD(2.0) + f);
    const vd z = sv * sv, w = z * z;
    const vd t1 = w *
        (VD(3.999999999940941908e-01) +
         w * (VD(2.222219843214978396e-01) + w * VD(1.531383769920937332e-01)));
    const vd t2 = z *
        (VD(6.666666666666735130e-01) +
         w *
             (VD(2.857142874366239149e-01) +
              w * (VD(1.818357216161805012e-01) + w * VD(1.479819860511658591e-01))));
    const vd R = t2 + t1, hfsq = VD(0.5) * f * f;
    vd y = kd * VD(6.93147180369123816490e-01) -
        ((hfsq - (sv * (hfsq + R) + kd * VD(1.90821492927058770002e-10))) - f);
    y = vsel(x == VD(0.0), VD(-INFINITY), y);
    y = vsel(x == VD(INFINITY), x, y);
    return vsel(x < VD(0.0), VD(NAN), vsel(x != x, x, y));
}

/* log for W32 floats (Cephes' logf): x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) by a
 * degree-9 polynomial in m - 1, plus e ln2 in two parts. Subnormal x scaled by 2^25 first. */
ATTR static inline __attribute__((always_inline)) vs F(logf_core)(vs x)
{
    const vi sub = (vi)(x < VS(0x1p-126f));
    const vs xs = vssel(sub, x * VS(0x1p25f), x);
    const vi bits = (vi)xs;
    vi e = ((vi)((vu32)bits >> 23) & 0xff) - 127 - (sub & 25);
    vs m = (vs)((bits & 0x007fffff) | 0x3f800000); /* [1, 2) */
    const vi big = (vi)(m >= VS(0x1.6a09e6p0f));
    m = vssel(big, m * VS(0.5f), m);
    e = e - big;
    const vs ef = __builtin_convertvector(e, vs);
    const vs f = m - VS(1.0f);
    const vs z = f * f;
    vs p = VS(7.0376836292E-2f);
    p = p * f + VS(-1.1514610310E-1f);
    p = p * f + VS(1.1676998740E-1f);
    p = p * f + VS(-1.2420140846E-1f);
    p = p * f + VS(1.4249322787E-1f);
    p = p * f + VS(-1.6668057665E-1f);
    p = p * f + VS(2.0000714765E-1f);
    p = p * f + VS(-2.4999993993E-1f);
    p = p * f + VS(3.3333331174E-1f);
    vs y = p * f * z;
    y = y + ef * VS(-2.12194440e-4f);
    y = y + VS(-0.5f) * z;
    y = (f + y) + ef * VS(0.693359375f);
    y = vssel(x == VS(0.0f), VS(-INFINITY), y);
    y = vssel(x == VS(INFINITY), x, y);
    return vssel(x < VS(0.0f), VS(NAN), vssel(x != x, x, y));
}

#include "vmath_erf.h" /* erfc and the GELU */

/* y[i] = f(x[i]) over whole vectors of W lanes, then the tail through a zero-padded vector: the
 * same lanes' arithmetic for every element */
#define VMATH_LOOP(NAME, T, VT, W, CORE)                                                           \
    ATTR static void F(NAME)(const T *x, T *y, int64_t n)                                          \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        VT v;                                                                                      \
        for (; i + (W) <= n; i += (W)) {                                                           \
            memcpy(&v, x + i, sizeof v);                                                           \
            v = CORE(v);                                                                           \
            memcpy(y + i, &v, sizeof v);                                                           \
        }                                                                                          \
        if (i < n) {                                                                               \
            T buf[W] = {0};                                                                        \
            memcpy(buf, x + i, (size_t)(n - i) * sizeof *x);                                       \
            memcpy(&v, buf, sizeof v);                                                             \
            v = CORE(v);                                                                           \
            memcpy(buf, &v, sizeof v);                                                             \
            memcpy(y + i, buf, (size_t)(n - i) * sizeof *y);                                       \
        }                                                                                          \
    }
VMATH_LOOP(vexp_f64, double, vd, W64, F(exp_core))
VMATH_LOOP(vexp_f32, float, vs, W32, F(expf_core))
VMATH_LOOP(vsigmoid_f64, double, vd, W64, F(sigmoid_core))
VMATH_LOOP(vsigmoid_f32, float, vs, W32, F(sigmoidf_core))
VMATH_LOOP(vtanh_f32, float, vs, W32, F(tanhf_core))
VMATH_LOOP(vtanh_f64, double, vd, W64, F(tanh_core))
VMATH_LOOP(vlog_f64, double, vd, W64, F(log_core))
VMATH_LOOP(vlog_f32, float, vs, W32, F(logf_core))
VMATH_LOOP(verfc_f64, double, vd, W64, F(erfc_core))
VMATH_LOOP(verfc_f32, float, vs, W32, F(erfcf_core))
#if VBYTES == 16
VMATH_LOOP(vgelu_f64, double, vd, W64, F(gelu_core))
VMATH_LOOP(vgelu_f32, float, vs, W32, F(geluf_core))
#endif

/* d[i] = CORE(g[i], x[i]), or d[i] += it when acc (a NaN in d stays itself): whole vectors,
 * then the zero-padded tail */
#define VMATH_LOOP_BW(NAME, T, VT, W, CORE, SEL)                                                   \
    ATTR static void F(NAME)(const T *g, const T *x, T *d, int64_t n, int acc)                     \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        VT gv, xv, dv;                                                                             \
        for (; i + (W) <= n; i += (W)) {                                                           \
            memcpy(&gv, g + i, sizeof gv), memcpy(&xv, x + i, sizeof xv);                          \
            gv = CORE(gv, xv);                                                                     \
            if (acc) memcpy(&dv, d + i, sizeof dv), gv = SEL(dv != dv, dv, dv + gv);               \
            memcpy(d + i, &gv, sizeof gv);                                                         \
        }                                                                                          \
        if (i < n) {                                                                               \
            T bg[W] = {0}, bx[W] = {0}, bd[W] = {0};                                               \
            const size_t sz = (size_t)(n - i) * sizeof *x;                                         \
            memcpy(bg, g + i, sz), memcpy(bx, x + i, sz);                                          \
            if (acc) memcpy(bd, d + i, sz);                                                        \
            memcpy(&gv, bg, sizeof gv), memcpy(&xv, bx, sizeof xv), memcpy(&dv, bd, sizeof dv);    \
            gv = CORE(gv, xv);                                                                     \
            if (acc) gv = SEL(dv != dv, dv, dv + gv);                                              \
            memcpy(bd, &gv, sizeof gv);                                                            \
            memcpy(d + i, bd, sz);                                                                 \
        }                                                                                          \
    }
#if VBYTES == 16
VMATH_LOOP_BW(vgelu_bw_f64, double, vd, W64, F(gelu_bw_core), vsel)
VMATH_LOOP_BW(vgelu_bw_f32, float, vs, W32, F(geluf_bw_core), vssel)
#else
#include "vmath_gelu.h" /* AVX2, AVX-512: lanes outside erfc's first region grouped */
#endif
#undef VMATH_LOOP
#undef VMATH_LOOP_BW

/* One LSTM step of one column (ops_rnn.c): the gates' sums a = (a + bb) + q (bb may be NULL),
 * i, f, o = sigmoid, g = tanh (kept in a), c = f * cp + i * g (0 + i * g without cp), tc =
 * tanh(c), h = o * tc, into h and hb. The cores above, lane by lane: the same bits as the
 * separate passes, in one sweep over the column (W lanes at a time, the tail zero-padded). */
#define VMATH_LSTM(NAME, T, VT, W, SIG, TANH)                                                      \
    /* the gates (whole vectors): four independent chains per step of the loop */                  \
    ATTR static inline __attribute__((always_inline)) void F(NAME##_gates)(T * a, const T *bb,     \
                                                                           const T *q, int64_t H)  \
    {                                                                                              \
        VT v0, v1, v2, v3, w0, w1, w2, w3;                                                         \
        memcpy(&v0, a, sizeof v0), memcpy(&v1, a + H, sizeof v0);                                  \
        memcpy(&v2, a + 2 * H, sizeof v0), memcpy(&v3, a + 3 * H, sizeof v0);                      \
        if (bb) {                                                                                  \
            memcpy(&w0, bb, sizeof v0), memcpy(&w1, bb + H, sizeof v0);                            \
            memcpy(&w2, bb + 2 * H, sizeof v0), memcpy(&w3, bb + 3 * H, sizeof v0);                \
            v0 = v0 + w0, v1 = v1 + w1, v2 = v2 + w2, v3 = v3 + w3;                                \
        }                                                                                          \
        memcpy(&w0, q, sizeof v0), memcpy(&w1, q + H, sizeof v0);                                  \
        memcpy(&w2, q + 2 * H, sizeof v0), memcpy(&w3, q + 3 * H, sizeof v0);                      \
        v0 = SIG(v0 + w0), v1 = SIG(v1 + w1), v2 = TANH(v2 + w2), v3 = SIG(v3 + w3);               \
        memcpy(a, &v0, sizeof v0), memcpy(a + H, &v1, sizeof v0);                                  \
        memcpy(a + 2 * H, &v2, sizeof v0), memcpy(a + 3 * H, &v3, sizeof v0);                      \
    }                                                                                              \
    /* the cell and h from the gates (whole vectors) */                                            \
    ATTR static inline __attribute__((always_inline)) void F(NAME##_cell)(                         \
        const T *a, const T *cp, T *c, T *tc, T *h, T *hb, int64_t H)                              \
    {                                                                                              \
        VT i, f, g, o, cv;                                                                         \
        memcpy(&i, a, sizeof i), memcpy(&f, a + H, sizeof i);                                      \
        memcpy(&g, a + 2 * H, sizeof i), memcpy(&o, a + 3 * H, sizeof i);                          \
        const VT ig = i * g;                                                                       \
        if (cp) {                                                                                  \
            memcpy(&cv, cp, sizeof cv);                                                            \
            cv = f * cv + ig;                                                                      \
        } else cv = (VT){0} + ig;                                                                  \
        const VT tv = TANH(cv), hv = o * tv;                                                       \
        memcpy(c, &cv, sizeof cv), memcpy(tc, &tv, sizeof cv);                                     \
        memcpy(h, &hv, sizeof cv), memcpy(hb, &hv, sizeof cv);                                     \
    }                                                                                              \
    ATTR static void F(NAME)(T * a, const T *bb, const T *q, const T *cp, T *c, T *tc, T *h,       \
                             T *hb, int64_t H)                                                     \
    {                                                                                              \
        int64_t j = 0;                                                                             \
        for (; j + (W) <= H; j += (W)) F(NAME##_gates)(a + j, bb ? bb + j : NULL, q + j, H);       \
        for (j = 0; j + (W) <= H; j += (W))                                                        \
            F(NAME##_cell)(a + j, cp ? cp + j : NULL, c + j, tc + j, h + j, hb + j, H);            \
        if (j == H) return;                                                                        \
        /* the tail through zero-padded copies, the four gates W apart */                          \
        const int64_t n = H - j;                                                                   \
        T ta[4 * (W)] = {0}, tb[4 * (W)] = {0}, tq[4 * (W)] = {0}, tp[W] = {0}, o[4][W];           \
        for (int k = 0; k < 4; k++) {                                                              \
            memcpy(ta + k * (W), a + k * H + j, (size_t)n * sizeof(T));                            \
            if (bb) memcpy(tb + k * (W), bb + k * H + j, (size_t)n * sizeof(T));                   \
            memcpy(tq + k * (W), q + k * H + j, (size_t)n * sizeof(T));                            \
        }                                                                                          \
        if (cp) memcpy(tp, cp + j, (size_t)n * sizeof(T));                                         \
        F(NAME##_gates)(ta, bb ? tb : NULL, tq, W);                                                \
        F(NAME##_cell)(ta, cp ? tp : NULL, o[0], o[1], o[2], o[3], W);                             \
        for (int k = 0; k < 4; k++) memcpy(a + k * H + j, ta + k * (W), (size_t)n * sizeof(T));    \
        memcpy(c + j, o[0], (size_t)n * sizeof(T)), memcpy(tc + j, o[1], (size_t)n * sizeof(T));   \
        memcpy(h + j, o[2], (size_t)n * sizeof(T)), memcpy(hb + j, o[3], (size_t)n * sizeof(T));   \
    }
VMATH_LSTM(vlstm_f32, float, vs, W32, F(sigmoidf_core), F(tanhf_sided))
VMATH_LSTM(vlstm_f64, double, vd, W64, F(sigmoid_core), F(tanh_core))
#undef VMATH_LSTM
#undef vd
#undef vl
#undef vu
#undef vs
#undef vi
#undef vu32
#undef VD
#undef VS
#undef W64
#undef W32
#undef vsel
#undef vmin
#undef vmax
#undef vssel
#undef vsmin
#undef vsmax
#undef F
#undef CAT
#undef CAT_
