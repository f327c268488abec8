/* Plain elementwise loops of the ops (the broadcasting binary ops, their gradients' copies and
 * bias sums, ReLU and its gradient), compiled once per SIMD level and picked by CPU: a build for
 * the baseline x86-64 vectorises them 4 floats wide (SSE2), AVX2 and AVX-512 run 8 and 16. On
 * small models these loops were a tenth of an eager step's instructions. Each lane does one
 * IEEE operation on its own element, with no reordering and no contraction (pg_fp.h), so every
 * level gives the same bits as the scalar loops they replace. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include "pg.h"

/* o = x OP y over C columns of R (o's columns contiguous; x's and y's start xs and ys elements
 * apart, 0 for a broadcast column); m: PG_EW_VV both columns, PG_EW_VS y one value, PG_EW_SV x
 * one value. o is a fresh buffer (restrict); x and y may be the same. */
#define EW_BIN(SUF, ATTR, T, NAME, OP)                                                             \
    ATTR static void NAME##_##T##_##SUF(const T *x, int64_t xs, const T *y, int64_t ys,            \
                                        T *restrict o, int64_t R, int64_t C, int m)                \
    {                                                                                              \
        for (int64_t j = 0; j < C; j++, x += xs, y += ys, o += R) {                                \
            if (m == PG_EW_VV) {                                                                   \
                for (int64_t i = 0; i < R; i++) o[i] = x[i] OP y[i];                               \
            } else if (m == PG_EW_VS) {                                                            \
                const T b = *y;                                                                    \
                for (int64_t i = 0; i < R; i++) o[i] = x[i] OP b;                                  \
            } else {                                                                               \
                const T a = *x;                                                                    \
                for (int64_t i = 0; i < R; i++) o[i] = a OP y[i];                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* d = +-g, or d += +-g (acc); d += +-g's columns in order (a broadcast column's gradient); ReLU y = x < 0 ? 0 : x (NaN and -0 kept; y may be x); its
 * gradient d (+)= o <= 0 ? 0 : g from the output o (a NaN input passes its gradient, as
 * PyTorch's threshold rule; both loads unconditional, so the select vectorises) */
#define EW_REST(SUF, ATTR, T)                                                                      \
    ATTR static void acc_##T##_##SUF(const T *g, T *d, int64_t n, int acc, int neg)                \
    {                                                                                              \
        if (acc && neg) {                                                                          \
            for (int64_t i = 0; i < n; i++) d[i] += -g[i];                                         \
        } else if (acc) {                                                                          \
            for (int64_t i = 0; i < n; i++) d[i] += g[i];                                          \
        } else if (neg) {                                                                          \
            for (int64_t i = 0; i < n; i++) d[i] = -g[i];                                          \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) d[i] = g[i];                                           \
        }                                                                                          \
    }                                                                                              \
    ATTR static void rows_##T##_##SUF(const T *g, T *restrict d, int64_t R, int64_t C, int neg)    \
    {                                                                                              \
        for (int64_t j = 0; j < C; j++, g += R) {                                                  \
            if (neg)                                                                               \
                for (int64_t i = 0; i < R; i++) d[i] += -g[i];                                     \
            else                                                                                   \
                for (int64_t i = 0; i < R; i++) d[i] += g[i];                                      \
        }                                                                                          \
    }                                                                                              \
    ATTR static void relu_##T##_##SUF(const T *x, T *y, int64_t n)                                 \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0 ? (T)0 : x[i];                             \
    }                                                                                              \
    ATTR static void relu_bw_##T##_##SUF(const T *o, const T *g, T *d, int64_t n, int acc)         \
    {                                                                                              \
        if (acc) {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T gv = g[i];                                                                       \
                d[i] += o[i] <= 0 ? (T)0 : gv;                                                     \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T gv = g[i];                                                                       \
                d[i] = o[i] <= 0 ? (T)0 : gv;                                                      \
            }                                                                                      \
        }                                                                                          \
    }

#define EW_TYPE(SUF, ATTR, T)                                                                      \
    EW_BIN(SUF, ATTR, T, add, +)                                                                   \
    EW_BIN(SUF, ATTR, T, sub, -)                                                                   \
    EW_BIN(SUF, ATTR, T, mul, *)                                                                   \
    EW_BIN(SUF, ATTR, T, div, /)                                                                   \
    EW_REST(SUF, ATTR, T)
#define EW_LEVEL(SUF, ATTR) EW_TYPE(SUF, ATTR, float) EW_TYPE(SUF, ATTR, double)

EW_LEVEL(sse2, )
#if PG_X86_SIMD
EW_LEVEL(avx2, PG_TARGET_AVX2)
EW_LEVEL(avx512, PG_TARGET_AVX512)
#define EW_LEVELS(name, T)                                                                         \
    {                                                                                              \
        name##_##T##_sse2, name##_##T##_avx2, name##_##T##_avx512                                  \
    }
#else
#define EW_LEVELS(name, T)                                                                         \
    {                                                                                              \
        name##_##T##_sse2, name##_##T##_sse2, name##_##T##_sse2                                    \
    }
#endif

void pg_ew_bin(int dtype, int op, const void *x, int64_t xs, const void *y, int64_t ys, void *o,
               int64_t R, int64_t C, int mode)
{
    typedef void (*f32_t)(const float *, int64_t, const float *, int64_t, float *restrict, int64_t,
                          int64_t, int);
    typedef void (*f64_t)(const double *, int64_t, const double *, int64_t, double *restrict,
                          int64_t, int64_t, int);
    static const f32_t f32[4][3] = {EW_LEVELS(add, float), EW_LEVELS(sub, float),
                                    EW_LEVELS(mul, float), EW_LEVELS(div, float)};
    static const f64_t f64[4][3] = {EW_LEVELS(add, double), EW_LEVELS(sub, double),
                                    EW_LEVELS(mul, double), EW_LEVELS(div, double)};
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[op][l](x, xs, y, ys, o, R, C, mode);
    else f64[op][l](x, xs, y, ys, o, R, C, mode);
}

void pg_ew_acc(int dtype, const void *g, void *d, int64_t n, int acc, int neg)
{
    static void (*const f32[3])(const float *, float *, int64_t, int, int) = EW_LEVELS(acc, float);
    static void (*const f64[3])(const double *, double *, int64_t, int, int) =
        EW_LEVELS(acc, double);
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[l](g, d, n, acc, neg);
    else f64[l](g, d, n, acc, neg);
}

void pg_ew_rows(int dtype, const void *g, void *d, int64_t R, int64_t C, int neg)
{
    static void (*const f32[3])(const float *, float *restrict, int64_t, int64_t, int) =
        EW_LEVELS(rows, float);
    static void (*const f64[3])(const double *, double *restrict, int64_t, int64_t, int) =
        EW_LEVELS(rows, double);
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[l](g, d, R, C, neg);
    else f64[l](g, d, R, C, neg);
}

void pg_ew_relu(int dtype, const void *x, void *y, int64_t n)
{
    static void (*const f32[3])(const float *, float *, int64_t) = EW_LEVELS(relu, float);
    static void (*const f64[3])(const double *, double *, int64_t) = EW_LEVELS(relu, double);
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[l](x, y, n);
    else f64[l](x, y, n);
}

void pg_ew_relu_bw(int dtype, const void *o, const void *g, void *d, int64_t n, int acc)
{
    static void (*const f32[3])(const float *, const float *, float *, int64_t, int) =
        EW_LEVELS(relu_bw, float);
    static void (*const f64[3])(const double *, const double *, double *, int64_t, int) =
        EW_LEVELS(relu_bw, double);
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[l](o, g, d, n, acc);
    else f64[l](o, g, d, n, acc);
}
