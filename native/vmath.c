/* Vectorised elementwise math: exp, log, sigmoid, tanh, erfc and the GELU (f32, f64), used by
 * the unary ops, softmax and the fused linear layer. libm's scalar calls ran 5-60x slower than numpy's SIMD
 * ones. One source (vmath_kern.h) is compiled per SIMD level and picked by CPU, with GCC vector
 * extensions (16 floats, 8 doubles), so every level does the same IEEE operations per lane:
 * identical bits on SSE2, AVX2 and AVX-512, in R and in Python. Accuracy (tests/test_ops.py):
 * f32 exp, log, tanh within 1 ulp, f64 exp and log within 1, f64 tanh 3, sigmoid 2 (f32) and
 * 4 (f64); erfc within 2 (f32 and f64, tests/c/test_vmath.c), the GELU 2 where its erfc is
 * normal (measured; tests allow 3). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <string.h>
#include "pg.h"

/* Each level's vectors are its register width (a wider GCC vector is split, but its
 * comparisons fall back to scalar code); REP32 / REP64 repeat a constant once per lane. */
#define SUF sse2
#define ATTR
#define VBYTES   16
#define REP32(c) c, c, c, c
#define REP64(c) c, c
#include "vmath_kern.h"
#undef SUF
#undef ATTR
#undef VBYTES
#undef REP32
#undef REP64
#if PG_X86_SIMD
#define SUF      avx2
#define ATTR     PG_TARGET_AVX2
#define VBYTES   32
#define REP32(c) c, c, c, c, c, c, c, c
#define REP64(c) c, c, c, c
#include "vmath_kern.h"
#undef SUF
#undef ATTR
#undef VBYTES
#undef REP32
#undef REP64
#define SUF      avx512
#define ATTR     PG_TARGET_AVX512
#define VBYTES   64
#define REP32(c) c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c
#define REP64(c) c, c, c, c, c, c, c, c
#include "vmath_kern.h"
#undef SUF
#undef ATTR
#undef VBYTES
#undef REP32
#undef REP64
#define LEVELS(name)                                                                               \
    {                                                                                              \
        name##_sse2, name##_avx2, name##_avx512                                                    \
    }
#else
#define LEVELS(name)                                                                               \
    {                                                                                              \
        name##_sse2, name##_sse2, name##_sse2                                                      \
    }
#endif

int pg_simd_sel = -1;

int pg_simd_select(int which)
{
    pg_simd_sel = pg_cpu_simd(which < 0 ? 2 : which);
    return pg_simd_sel;
}

typedef struct {
    void (*f32[3])(const float *, float *, int64_t);
    void (*f64[3])(const double *, double *, int64_t);
} vfn; /* one function's loops, per dtype and SIMD level */

/* Large n over threads (ag_set_threads): each lane's result depends on its element alone (the
 * tail goes through a zero-padded vector), so any split gives the same bits; in blocks of 64
 * elements, at least 16384 a thread (tens of microseconds: less does not pay for the hand-off). */
#define APPLY_BLOCK      64
#define APPLY_MIN_BLOCKS 256
typedef struct {
    const vfn *f;
    int f32, l;
    const char *x;
    char *y;
    int64_t n;
} apply_job;
static void apply_range(void *ctx, int64_t b0, int64_t b1)
{
    const apply_job *a = ctx;
    int64_t e0 = b0 * APPLY_BLOCK, e1 = b1 * APPLY_BLOCK < a->n ? b1 * APPLY_BLOCK : a->n;
    size_t sz = a->f32 ? sizeof(float) : sizeof(double);
    if (a->f32)
        a->f->f32[a->l]((const float *)(a->x + e0 * sz), (float *)(a->y + e0 * sz), e1 - e0);
    else a->f->f64[a->l]((const double *)(a->x + e0 * sz), (double *)(a->y + e0 * sz), e1 - e0);
}

static void apply(const vfn *f, int dtype, const void *x, void *y, int64_t n)
{
    apply_job a = {f, dtype == PG_DTYPE_F32, pg_simd_level(), x, y, n};
    if (n < 2 * APPLY_BLOCK * APPLY_MIN_BLOCKS)
        apply_range(&a, 0, (n + APPLY_BLOCK - 1) / APPLY_BLOCK);
    else pg_par_for((n + APPLY_BLOCK - 1) / APPLY_BLOCK, APPLY_MIN_BLOCKS, apply_range, &a);
}

#define VMATH_API(name)                                                                            \
    void pg_v##name(int dtype, const void *x, void *y, int64_t n)                                  \
    {                                                                                              \
        static const vfn f = {LEVELS(v##name##_f32), LEVELS(v##name##_f64)};                       \
        apply(&f, dtype, x, y, n);                                                                 \
    }
VMATH_API(exp)
VMATH_API(sigmoid)
VMATH_API(log)
VMATH_API(tanh)
VMATH_API(erfc)
VMATH_API(gelu)

/* the gelu's backward: d = g gelu'(x), or d += it when acc (the unary op's gradient slot);
 * elementwise, so over threads as apply() */
typedef struct {
    int f32, l, acc;
    const char *g, *x;
    char *d;
    int64_t n;
} gelu_bw_job;
static void gelu_bw_range(void *ctx, int64_t b0, int64_t b1)
{
    static void (*const f32[3])(const float *, const float *, float *, int64_t, int) =
        LEVELS(vgelu_bw_f32);
    static void (*const f64[3])(const double *, const double *, double *, int64_t, int) =
        LEVELS(vgelu_bw_f64);
    const gelu_bw_job *a = ctx;
    int64_t e0 = b0 * APPLY_BLOCK, e1 = b1 * APPLY_BLOCK < a->n ? b1 * APPLY_BLOCK : a->n;
    size_t o = (size_t)e0 * (a->f32 ? sizeof(float) : sizeof(double));
    if (a->f32)
        f32[a->l]((const float *)(a->g + o), (const float *)(a->x + o), (float *)(a->d + o),
                  e1 - e0, a->acc);
    else
        f64[a->l]((const double *)(a->g + o), (const double *)(a->x + o), (double *)(a->d + o),
                  e1 - e0, a->acc);
}
void pg_vgelu_bw(int dtype, const void *g, const void *x, void *d, int64_t n, int acc)
{
    gelu_bw_job a = {dtype == PG_DTYPE_F32, pg_simd_level(), acc, g, x, d, n};
    pg_par_for((n + APPLY_BLOCK - 1) / APPLY_BLOCK, APPLY_MIN_BLOCKS, gelu_bw_range, &a);
}

/* one LSTM step of one column: vmath_kern.h's vlstm */
void pg_vlstm_cell(int dtype, void *a, const void *bb, const void *q, const void *cp, void *c,
                   void *tc, void *h, void *hb, int64_t H)
{
    static void (*const f32[3])(float *, const float *, const float *, const float *, float *,
                                float *, float *, float *, int64_t) = LEVELS(vlstm_f32);
    static void (*const f64[3])(double *, const double *, const double *, const double *, double *,
                                double *, double *, double *, int64_t) = LEVELS(vlstm_f64);
    const int l = pg_simd_level();
    if (dtype == PG_DTYPE_F32) f32[l](a, bb, q, cp, c, tc, h, hb, H);
    else f64[l](a, bb, q, cp, c, tc, h, hb, H);
}

/* Sum in double over 16 interleaved lanes (element i goes to lane i % 16), lanes then added
 * pairwise in a fixed tree: a fixed order, so the same bits on every machine and compiler, and
 * independent chains the compiler can vectorise (a single running sum ran 4-7x slower than
 * numpy's). */
#define SUM_LANES(T)                                                                               \
    static double sum_lanes_##T(const T *x, int64_t n)                                             \
    {                                                                                              \
        double a[16] = {0};                                                                        \
        if (n < 16) { /* the same tree, skipping the lanes still 0 (adding +0 changes nothing: \
                         no lane is -0, as each starts 0.0 + x) */   \
            for (int l = 0; l < n; l++) a[l] = 0.0 + x[l];                                         \
            int live = (int)n;                                                                     \
            for (int w = 8; w >= 1; w /= 2) {                                                      \
                for (int l = 0; l < w && l + w < live; l++) a[l] += a[l + w];                      \
                if (live > w) live = w;                                                            \
            }                                                                                      \
            return n > 0 ? a[0] : 0.0;                                                             \
        }                                                                                          \
        int64_t i = 0;                                                                             \
        for (; i + 16 <= n; i += 16)                                                               \
            for (int l = 0; l < 16; l++) a[l] += x[i + l];                                         \
        for (int l = 0; i + l < n; l++) a[l] += x[i + l];                                          \
        for (int w = 8; w >= 1; w /= 2)                                                            \
            for (int l = 0; l < w; l++) a[l] += a[l + w];                                          \
        return a[0];                                                                               \
    }
SUM_LANES(float)
SUM_LANES(double)

double pg_vsum(int dtype, const void *x, int64_t n)
{
    return dtype == PG_DTYPE_F32 ? sum_lanes_float(x, n) : sum_lanes_double(x, n);
}
