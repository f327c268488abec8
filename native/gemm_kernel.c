/* Built-in blocked GEMM (GotoBLAS / BLIS structure), used when no BLAS was handed in.
 *
 *   for jc over n in NC columns:                   B panel  (kc x nc) -> packed, NR-column slivers
 *     for pc over k in KC:                         first k block applies beta, later ones add
 *       for ic over m in MC rows:                  A block  (mc x kc) -> packed, MR-row slivers
 *         for jr over nc in NR, ir over mc in MR:  micro-kernel: MR x NR tile held in registers
 *
 * Packing absorbs the transposes and the leading dimensions, and pads ragged slivers with
 * zeros; a ragged tile of C goes through a small scratch tile, so the micro-kernel always runs
 * the same instructions. ag_set_threads(n) splits large products over n threads by rows or
 * columns of C, never k (the end of the file): the same bits for every n. Problems whose
 * operands fit in about 4 MiB take the direct path instead (further down: no packing of B, no
 * allocation, masked ragged rows, vectors along n for thin m), which sums every element
 * exactly as this one does: the two paths give identical bits.
 *
 * Determinism: each C element is  C = alpha * acc_0 + beta * C,  then  C = alpha * acc_b + C
 * for every later k block b, where acc_b sums a[i,p] * b[p,j] over the block in increasing p,
 * starting from 0. That order depends only on k and KC (fixed per dtype and kernel), never on
 * the position of the element in a tile, on m or n, on the alignment of the inputs or on the
 * optimisation level: the AVX2 kernel uses explicit FMA intrinsics; the portable one plain
 * multiply and add, with contraction into FMA switched off for this file (GCC pragma below,
 * STDC FP_CONTRACT for clang), so that R (-O2) and Python (-O3) builds give the same bits.
 * The kernel is picked once per process by CPU (AVX-512F, AVX2 + FMA, or portable). The
 * AVX-512 and AVX2 kernels sum in the same order with the same FMAs and the same KC, so they
 * give identical bits; the portable kernel (no FMA) rounds differently. Results can differ
 * between machines with and without AVX2, never between runs, -O levels or languages on one. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PG_GEMM_X86 1
#define PG_AVX2 __attribute__((target("avx2,fma")))
#else
#define PG_GEMM_X86 0
#endif

#define MAX_MR 32
#define MAX_NR 6

typedef void (*ukr_float)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha,
                          float beta);
typedef void (*ukr_double)(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, double alpha,
                           double beta);
typedef struct { ukr_float ukr; int mr, nr; int64_t mc, kc, nc; } kern_float;
typedef struct { ukr_double ukr; int mr, nr; int64_t mc, kc, nc; } kern_double;

/* ---- portable micro-kernels: GCC/clang vector extensions, 16-byte vectors (SSE2, NEON) ---- */
typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));

/* Accumulators c<r><j>: row-vector r, column j. Loads from packed buffers (64-byte aligned,
 * slivers a multiple of 16 bytes); C is accessed through memcpy (any alignment). */
#define GV_LD(V, p) (*(const V *)(const void *)(p))
#define GV_STORE_TILE(V, T, vl, nvec, acc, c, ldc, alpha, beta)                                 \
    do {                                                                                       \
        for (int j_ = 0; j_ < 6; j_++)                                                         \
            for (int r_ = 0; r_ < (nvec); r_++) {                                              \
                T *p_ = (c) + (int64_t)j_ * (ldc) + r_ * (vl);                                 \
                V t_ = (acc)[r_][j_] * (alpha), o_;                                             \
                if ((beta) != 0) {                                                             \
                    memcpy(&o_, p_, sizeof o_);                                                \
                    t_ = (beta) == 1 ? t_ + o_ : t_ + o_ * (beta);                             \
                }                                                                              \
                memcpy(p_, &t_, sizeof t_);                                                    \
            }                                                                                  \
    } while (0)

/* f32: 8 x 6 (2 vectors x 6 columns = 12 accumulators) */
static void ukr_generic_float(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha,
                              float beta)
{
    v4f c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c04 = {0}, c05 = {0};
    v4f c10 = {0}, c11 = {0}, c12 = {0}, c13 = {0}, c14 = {0}, c15 = {0};
    for (int64_t p = 0; p < kc; p++, a += 8, b += 6) {
        v4f a0 = GV_LD(v4f, a), a1 = GV_LD(v4f, a + 4), bj;
#define GV_COL_F(j) bj = (v4f){b[j], b[j], b[j], b[j]}; c0##j += a0 * bj; c1##j += a1 * bj;
        GV_COL_F(0) GV_COL_F(1) GV_COL_F(2) GV_COL_F(3) GV_COL_F(4) GV_COL_F(5)
#undef GV_COL_F
    }
    v4f acc[2][6] = {{c00, c01, c02, c03, c04, c05}, {c10, c11, c12, c13, c14, c15}};
    GV_STORE_TILE(v4f, float, 4, 2, acc, c, ldc, alpha, beta);
}

/* f64: 4 x 6 */
static void ukr_generic_double(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                               double alpha, double beta)
{
    v2d c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c04 = {0}, c05 = {0};
    v2d c10 = {0}, c11 = {0}, c12 = {0}, c13 = {0}, c14 = {0}, c15 = {0};
    for (int64_t p = 0; p < kc; p++, a += 4, b += 6) {
        v2d a0 = GV_LD(v2d, a), a1 = GV_LD(v2d, a + 2), bj;
#define GV_COL_D(j) bj = (v2d){b[j], b[j]}; c0##j += a0 * bj; c1##j += a1 * bj;
        GV_COL_D(0) GV_COL_D(1) GV_COL_D(2) GV_COL_D(3) GV_COL_D(4) GV_COL_D(5)
#undef GV_COL_D
    }
    v2d acc[2][6] = {{c00, c01, c02, c03, c04, c05}, {c10, c11, c12, c13, c14, c15}};
    GV_STORE_TILE(v2d, double, 2, 2, acc, c, ldc, alpha, beta);
}

#if PG_GEMM_X86
/* ---- AVX2 + FMA micro-kernels: f32 16 x 6, f64 8 x 6 (12 ymm accumulators) ---- */
#define AVX_STORE(SUF, V, acc, p, va, vb, mode)                                                 \
    do {                                                                                       \
        V t_ = _mm256_mul_##SUF(va, acc);                                                       \
        if ((mode) == 1) t_ = _mm256_add_##SUF(t_, _mm256_loadu_##SUF(p));                      \
        else if ((mode) == 2) t_ = _mm256_add_##SUF(t_, _mm256_mul_##SUF(vb, _mm256_loadu_##SUF(p))); \
        _mm256_storeu_##SUF(p, t_);                                                             \
    } while (0)

PG_AVX2 static void ukr_avx2_float(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                   float alpha, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00;
    __m256 c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00;
    for (int64_t p = 0; p < kc; p++, a += 16, b += 6) {
        __m256 a0 = _mm256_load_ps(a), a1 = _mm256_load_ps(a + 8), bj;
#define AVX_COL_F(j)                                                                          \
        bj = _mm256_broadcast_ss(b + j);                                                        \
        c0##j = _mm256_fmadd_ps(a0, bj, c0##j);                                                 \
        c1##j = _mm256_fmadd_ps(a1, bj, c1##j);
        AVX_COL_F(0) AVX_COL_F(1) AVX_COL_F(2) AVX_COL_F(3) AVX_COL_F(4) AVX_COL_F(5)
#undef AVX_COL_F
    }
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;
#define AVX_ST_F(j)                                                                           \
    AVX_STORE(ps, __m256, c0##j, c + j * ldc, va, vb, mode);                                   \
    AVX_STORE(ps, __m256, c1##j, c + j * ldc + 8, va, vb, mode);
    AVX_ST_F(0) AVX_ST_F(1) AVX_ST_F(2) AVX_ST_F(3) AVX_ST_F(4) AVX_ST_F(5)
#undef AVX_ST_F
}

PG_AVX2 static void ukr_avx2_double(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                                    double alpha, double beta)
{
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00;
    __m256d c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00;
    for (int64_t p = 0; p < kc; p++, a += 8, b += 6) {
        __m256d a0 = _mm256_load_pd(a), a1 = _mm256_load_pd(a + 4), bj;
#define AVX_COL_D(j)                                                                          \
        bj = _mm256_broadcast_sd(b + j);                                                        \
        c0##j = _mm256_fmadd_pd(a0, bj, c0##j);                                                 \
        c1##j = _mm256_fmadd_pd(a1, bj, c1##j);
        AVX_COL_D(0) AVX_COL_D(1) AVX_COL_D(2) AVX_COL_D(3) AVX_COL_D(4) AVX_COL_D(5)
#undef AVX_COL_D
    }
    __m256d va = _mm256_set1_pd(alpha), vb = _mm256_set1_pd(beta);
    int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;
#define AVX_ST_D(j)                                                                           \
    AVX_STORE(pd, __m256d, c0##j, c + j * ldc, va, vb, mode);                                  \
    AVX_STORE(pd, __m256d, c1##j, c + j * ldc + 4, va, vb, mode);
    AVX_ST_D(0) AVX_ST_D(1) AVX_ST_D(2) AVX_ST_D(3) AVX_ST_D(4) AVX_ST_D(5)
#undef AVX_ST_D
}

/* ---- AVX-512F micro-kernels: f32 32 x 6, f64 16 x 6 (12 zmm accumulators) ----
 * The AVX2 kernels with vectors twice as wide: per element the same k order, one FMA per k
 * step from 0, and the same store arithmetic (alpha * acc, then + C or + beta * C), with the
 * same KC, so the two kernels give identical bits. Measured on an AMD EPYC (Zen 5, two
 * 512-bit FMA pipes), one thread, against 32x8, 32x12, 32x14, 48x8 and 64x6 (f64: 16x8,
 * 16x12, 16x14, 24x8, 32x6): 32x6 / 16x6 was the fastest or within noise of it on every
 * project shape (32x8 even, 32x12 and up 5-15% slower at n = 64: ragged 6-column edges cost
 * less than a longer tile's); MC 64-512 and KC 256-512 all within noise, so MC and KC stay
 * those of the AVX2 kernel. */
#define PG_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define Z_STORE(SUF, V, acc, p, va, vb, mode)                                                   \
    do {                                                                                       \
        V t_ = _mm512_mul_##SUF(va, acc);                                                       \
        if ((mode) == 1) t_ = _mm512_add_##SUF(t_, _mm512_loadu_##SUF(p));                      \
        else if ((mode) == 2) t_ = _mm512_add_##SUF(t_, _mm512_mul_##SUF(vb, _mm512_loadu_##SUF(p))); \
        _mm512_storeu_##SUF(p, t_);                                                             \
    } while (0)

PG_AVX512 static void ukr_avx512_float(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                       float alpha, float beta)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00;
    __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00;
    for (int64_t p = 0; p < kc; p++, a += 32, b += 6) {
        __m512 a0 = _mm512_load_ps(a), a1 = _mm512_load_ps(a + 16), bj;
#define Z_COL_F(j)                                                                            \
        bj = _mm512_set1_ps(b[j]);                                                              \
        c0##j = _mm512_fmadd_ps(a0, bj, c0##j);                                                 \
        c1##j = _mm512_fmadd_ps(a1, bj, c1##j);
        Z_COL_F(0) Z_COL_F(1) Z_COL_F(2) Z_COL_F(3) Z_COL_F(4) Z_COL_F(5)
#undef Z_COL_F
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;
#define Z_ST_F(j)                                                                             \
    Z_STORE(ps, __m512, c0##j, c + j * ldc, va, vb, mode);                                     \
    Z_STORE(ps, __m512, c1##j, c + j * ldc + 16, va, vb, mode);
    Z_ST_F(0) Z_ST_F(1) Z_ST_F(2) Z_ST_F(3) Z_ST_F(4) Z_ST_F(5)
#undef Z_ST_F
}

PG_AVX512 static void ukr_avx512_double(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                                        double alpha, double beta)
{
    __m512d c00 = _mm512_setzero_pd(), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00;
    __m512d c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00;
    for (int64_t p = 0; p < kc; p++, a += 16, b += 6) {
        __m512d a0 = _mm512_load_pd(a), a1 = _mm512_load_pd(a + 8), bj;
#define Z_COL_D(j)                                                                            \
        bj = _mm512_set1_pd(b[j]);                                                              \
        c0##j = _mm512_fmadd_pd(a0, bj, c0##j);                                                 \
        c1##j = _mm512_fmadd_pd(a1, bj, c1##j);
        Z_COL_D(0) Z_COL_D(1) Z_COL_D(2) Z_COL_D(3) Z_COL_D(4) Z_COL_D(5)
#undef Z_COL_D
    }
    __m512d va = _mm512_set1_pd(alpha), vb = _mm512_set1_pd(beta);
    int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;
#define Z_ST_D(j)                                                                             \
    Z_STORE(pd, __m512d, c0##j, c + j * ldc, va, vb, mode);                                    \
    Z_STORE(pd, __m512d, c1##j, c + j * ldc + 8, va, vb, mode);
    Z_ST_D(0) Z_ST_D(1) Z_ST_D(2) Z_ST_D(3) Z_ST_D(4) Z_ST_D(5)
#undef Z_ST_D
}
#endif

/* Block sizes: the packed A block (MC x KC) stays in L2, a B sliver (KC x NR) in L1, the
 * B panel (KC x NC) in L3. KC is part of the summation order (see the top of the file). */
static const kern_float k_generic_f = {ukr_generic_float, 8, 6, 128, 256, 3072};
static const kern_double k_generic_d = {ukr_generic_double, 4, 6, 64, 256, 3072};
#if PG_GEMM_X86
static const kern_float k_avx2_f = {ukr_avx2_float, 16, 6, 128, 256, 3072};
static const kern_double k_avx2_d = {ukr_avx2_double, 8, 6, 64, 256, 3072};
static const kern_float k_avx512_f = {ukr_avx512_float, 32, 6, 128, 256, 3072};
static const kern_double k_avx512_d = {ukr_avx512_double, 16, 6, 64, 256, 3072};
#endif

static int kernel_sel = -1; /* -1: not chosen yet; 0: portable; 1: AVX2 + FMA; 2: AVX-512F */

/* the best kernel this CPU runs, at most `want` */
static int kernel_available(int want)
{
#if PG_GEMM_X86
    __builtin_cpu_init();
    if (want >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        return 2;
    if (want >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#else
    (void)want;
#endif
    return 0;
}

/* -1: the best this CPU runs; 0 portable, 1 AVX2 + FMA, 2 AVX-512F (a kernel the CPU lacks
 * falls back to the best below it); returns the kernel now in use. */
int pg_gemm_kernel_select(int which)
{
    kernel_sel = kernel_available(which < 0 ? 2 : which);
    return kernel_sel;
}

/* ---- packing ----
 * A block op(A)[i0 : i0+mc, p0 : p0+kc] -> slivers of mr rows: ap[s*kc*mr + p*mr + i].
 * B panel op(B)[p0 : p0+kc, j0 : j0+nc] -> slivers of nr columns: bp[s*kc*nr + p*nr + j]. */
#define GEMM_PACK(T)                                                                          \
    static void pack_a_##T(int ta, const T *a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,  \
                           int64_t kc, int mr, T *ap, int pad)                                 \
    {                                                                                          \
        for (int64_t ir = 0; ir < mc; ir += mr, ap += kc * mr) {                               \
            int64_t rows = mc - ir < mr ? mc - ir : mr;                                        \
            if (!ta) {                                                                         \
                for (int64_t p = 0; p < kc; p++) {                                             \
                    const T *src = a + (i0 + ir) + (p0 + p) * lda;                             \
                    T *dst = ap + p * mr;                                                      \
                    int64_t i = 0;                                                             \
                    for (; i < rows; i++) dst[i] = src[i];                                     \
                    for (; i < mr; i++) dst[i] = 0;                                            \
                }                                                                              \
            } else {                                                                           \
                for (int64_t i = 0; i < rows; i++) {                                           \
                    const T *src = a + (p0) + (i0 + ir + i) * lda;                             \
                    for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = src[p];                  \
                }                                                                              \
                for (int64_t i = rows; pad && i < mr; i++)                                     \
                    for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = 0;                       \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void pack_b_##T(int tb, const T *b, int64_t ldb, int64_t p0, int64_t j0, int64_t kc,  \
                           int64_t nc, int nr, T *bp)                                          \
    {                                                                                          \
        for (int64_t jr = 0; jr < nc; jr += nr, bp += kc * nr) {                               \
            int64_t cols = nc - jr < nr ? nc - jr : nr;                                        \
            if (!tb) {                                                                         \
                for (int64_t j = 0; j < cols; j++) {                                           \
                    const T *src = b + (p0) + (j0 + jr + j) * ldb;                             \
                    for (int64_t p = 0; p < kc; p++) bp[p * nr + j] = src[p];                  \
                }                                                                              \
                for (int64_t j = cols; j < nr; j++)                                            \
                    for (int64_t p = 0; p < kc; p++) bp[p * nr + j] = 0;                       \
            } else {                                                                           \
                for (int64_t p = 0; p < kc; p++) {                                             \
                    const T *src = b + (j0 + jr) + (p0 + p) * ldb;                             \
                    T *dst = bp + p * nr;                                                      \
                    int64_t j = 0;                                                             \
                    for (; j < cols; j++) dst[j] = src[j];                                     \
                    for (; j < nr; j++) dst[j] = 0;                                            \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
GEMM_PACK(float)
GEMM_PACK(double)

#if PG_GEMM_X86
/* f32 op(A) = A^T (the dX = W^T G of a layer's backward): the portable packing above writes
 * each source row with a stride of mr floats; here 8 x 8 blocks go through registers
 * (an AVX2 transpose; f64 4 x 4). The dX shape 784x256^T * 256x64 went from 1.25x to 1.0x the
 * time of the non-transposed product. Same values in the same places: no change in results. */
PG_AVX2 static void pack_at_float_avx2(const float *a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,
                                       int64_t kc, int mr, float *ap, int pad)
{
    for (int64_t ir = 0; ir < mc; ir += mr, ap += kc * mr) {
        int64_t rows = mc - ir < mr ? mc - ir : mr, i = 0;
        for (; i + 8 <= rows; i += 8) {
            const float *s = a + p0 + (i0 + ir + i) * lda;
            int64_t p = 0;
            for (; p + 8 <= kc; p += 8) {
                __m256 r0 = _mm256_loadu_ps(s + p), r1 = _mm256_loadu_ps(s + lda + p);
                __m256 r2 = _mm256_loadu_ps(s + 2 * lda + p), r3 = _mm256_loadu_ps(s + 3 * lda + p);
                __m256 r4 = _mm256_loadu_ps(s + 4 * lda + p), r5 = _mm256_loadu_ps(s + 5 * lda + p);
                __m256 r6 = _mm256_loadu_ps(s + 6 * lda + p), r7 = _mm256_loadu_ps(s + 7 * lda + p);
                __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
                __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
                __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
                __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
                __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
                __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
                float *d = ap + p * mr + i;
                _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
                _mm256_storeu_ps(d + mr, _mm256_permute2f128_ps(u1, u5, 0x20));
                _mm256_storeu_ps(d + 2 * mr, _mm256_permute2f128_ps(u2, u6, 0x20));
                _mm256_storeu_ps(d + 3 * mr, _mm256_permute2f128_ps(u3, u7, 0x20));
                _mm256_storeu_ps(d + 4 * mr, _mm256_permute2f128_ps(u0, u4, 0x31));
                _mm256_storeu_ps(d + 5 * mr, _mm256_permute2f128_ps(u1, u5, 0x31));
                _mm256_storeu_ps(d + 6 * mr, _mm256_permute2f128_ps(u2, u6, 0x31));
                _mm256_storeu_ps(d + 7 * mr, _mm256_permute2f128_ps(u3, u7, 0x31));
            }
            for (; p < kc; p++)
                for (int q = 0; q < 8; q++) ap[p * mr + i + q] = s[q * lda + p];
        }
        for (; i < rows; i++) {
            const float *src = a + p0 + (i0 + ir + i) * lda;
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = src[p];
        }
        for (; pad && i < mr; i++)
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = 0;
    }
}
/* f64: 4 x 4 blocks */
PG_AVX2 static void pack_at_double_avx2(const double *a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,
                                        int64_t kc, int mr, double *ap, int pad)
{
    for (int64_t ir = 0; ir < mc; ir += mr, ap += kc * mr) {
        int64_t rows = mc - ir < mr ? mc - ir : mr, i = 0;
        for (; i + 4 <= rows; i += 4) {
            const double *s = a + p0 + (i0 + ir + i) * lda;
            int64_t p = 0;
            for (; p + 4 <= kc; p += 4) {
                __m256d r0 = _mm256_loadu_pd(s + p), r1 = _mm256_loadu_pd(s + lda + p);
                __m256d r2 = _mm256_loadu_pd(s + 2 * lda + p), r3 = _mm256_loadu_pd(s + 3 * lda + p);
                __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
                __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
                double *d = ap + p * mr + i;
                _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
                _mm256_storeu_pd(d + mr, _mm256_permute2f128_pd(t1, t3, 0x20));
                _mm256_storeu_pd(d + 2 * mr, _mm256_permute2f128_pd(t0, t2, 0x31));
                _mm256_storeu_pd(d + 3 * mr, _mm256_permute2f128_pd(t1, t3, 0x31));
            }
            for (; p < kc; p++)
                for (int q = 0; q < 4; q++) ap[p * mr + i + q] = s[q * lda + p];
        }
        for (; i < rows; i++) {
            const double *src = a + p0 + (i0 + ir + i) * lda;
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = src[p];
        }
        for (; pad && i < mr; i++)
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = 0;
    }
}
#define PACK_A_float(ta, a, lda, i0, p0, mc, kc, mr, ap, pad)                                  \
    ((ta) && kernel_sel >= 1 ? pack_at_float_avx2(a, lda, i0, p0, mc, kc, mr, ap, pad)        \
                             : pack_a_float(ta, a, lda, i0, p0, mc, kc, mr, ap, pad))
#define PACK_A_double(ta, a, lda, i0, p0, mc, kc, mr, ap, pad)                                 \
    ((ta) && kernel_sel >= 1 ? pack_at_double_avx2(a, lda, i0, p0, mc, kc, mr, ap, pad)       \
                             : pack_a_double(ta, a, lda, i0, p0, mc, kc, mr, ap, pad))
#else
#define PACK_A_float pack_a_float
#define PACK_A_double pack_a_double
#endif

static int64_t round_up(int64_t x, int64_t r) { return (x + r - 1) / r * r; }

/* ---- direct path: small and thin products, no packing of B, no allocation ----
 * A tile of the output, NV vectors (of VL rows) by NR columns, read from the operands in place:
 * the "a side" (one vector per k step) must be contiguous along the tile's rows, the "b side"
 * is broadcast one element at a time from any strides. op(A) untransposed is the a side as it
 * is (rows of C along the vector, columns of A one k step apart); op(A) = A^T is transposed
 * into a stack sliver of at most 2 VL rows x KC first (the only copy); where op(B) = B^T and
 * n fills the vectors better than m (thin m: the output layer, dW = G X^T of a small layer),
 * the roles swap: C^T = op(B)^T op(A)^T, rows of B^T along the vector, stored transposed.
 * A ragged last vector is loaded and stored under a mask (AVX-512), a mask table (AVX2 loads)
 * or a scratch copy; ragged columns have their own NR; no padding work, no tile copy-out.
 *
 * Summation: every element is the micro-kernels' one, exactly: acc = 0, acc = fma(a, b, acc)
 * over the k block in increasing k (portable: acc = acc + a * b), blocks of the same KC, then
 * C = alpha * acc (+ C, + beta * C on the first block; + C on later ones), with the same
 * operations (fma and products are commutative bit for bit, so the swapped roles change
 * nothing). The direct and the blocked paths therefore give identical bits for every shape
 * and layout (AVX2 and AVX-512 too, as their blocked kernels do); which path runs is only a
 * matter of speed. */
#define DK_KC 256 /* the kc of every kern_* table above: part of the summation order */

#define DK_KERNEL(PFX, T, ATTR, VT, VL, NV, NR, PART)                                          \
    ATTR static void PFX##_##NV##_##NR##_##PART(int64_t kc, const T *a, int64_t sa, const T *b,   \
                                               int64_t rsb, int64_t csb, T *c, int64_t rc,       \
                                               int64_t cc, int rows, T alpha, T beta)            \
    {                                                                                          \
        VT acc[NV][NR];                                                                        \
        const int lastn = rows - (NV - 1) * VL;                                                \
        PFX##_MASKDECL(lastn)                                                                  \
        _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++)                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[v][j] = PFX##_ZERO();      \
        for (int64_t p = 0; p < kc; p++, a += sa, b += rsb) {                                  \
            VT av[NV];                                                                         \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                               \
                av[v] = (PART && v == NV - 1) ? PFX##_LDP(a + v * VL, lastn) : PFX##_LD(a + v * VL); \
            _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++) {                             \
                VT bj = PFX##_BC(b[j * csb]);                                                  \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                           \
                    acc[v][j] = PFX##_FMA(av[v], bj, acc[v][j]);                               \
            }                                                                                  \
        }                                                                                      \
        const VT va = PFX##_BC(alpha), vb = PFX##_BC(beta);                                    \
        const int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;                                    \
        _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++)                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) {                             \
                const int n_ = (PART && v == NV - 1) ? lastn : VL;                             \
                T *cp = c + (int64_t)v * VL * rc + j * cc;                                     \
                VT t = PFX##_MUL(va, acc[v][j]), o;                                            \
                if (rc == 1 && n_ == VL) {                                                     \
                    if (mode) {                                                                \
                        o = PFX##_LD(cp);                                                      \
                        t = mode == 1 ? PFX##_ADD(t, o) : PFX##_ADD(t, PFX##_MUL(vb, o));      \
                    }                                                                          \
                    PFX##_ST(cp, t);                                                           \
                } else if (rc == 1) {                                                          \
                    if (mode) {                                                                \
                        o = PFX##_LDP(cp, n_);                                                 \
                        t = mode == 1 ? PFX##_ADD(t, o) : PFX##_ADD(t, PFX##_MUL(vb, o));      \
                    }                                                                          \
                    PFX##_STP(cp, t, n_);                                                      \
                } else { /* transposed output: lanes ldc apart */                              \
                    T tmp[VL] __attribute__((aligned(64)));                                    \
                    if (mode) {                                                                \
                        for (int l = 0; l < VL; l++) tmp[l] = l < n_ ? cp[l * rc] : 0;         \
                        o = PFX##_LD(tmp);                                                     \
                        t = mode == 1 ? PFX##_ADD(t, o) : PFX##_ADD(t, PFX##_MUL(vb, o));      \
                    }                                                                          \
                    PFX##_ST(tmp, t);                                                          \
                    for (int l = 0; l < n_; l++) cp[l * rc] = tmp[l];                          \
                }                                                                              \
            }                                                                                  \
    }

typedef void (*dk_float)(int64_t, const float *, int64_t, const float *, int64_t, int64_t, float *, int64_t,
                         int64_t, int, float, float);
typedef void (*dk_double)(int64_t, const double *, int64_t, const double *, int64_t, int64_t, double *,
                          int64_t, int64_t, int, double, double);

/* NV = 1: up to 8 columns (8 accumulators: enough FMAs in flight); NV = 2: up to 6 (12) */
#define DK_ALL(PFX, T, ATTR, VT, VL)                                                           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 1, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 1, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 2, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 2, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 3, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 3, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 4, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 4, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 5, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 5, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 6, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 6, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 7, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 7, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 8, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 1, 8, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 1, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 1, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 2, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 2, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 3, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 3, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 4, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 4, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 5, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 5, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 6, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 6, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 7, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 7, 1)           \
    DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 8, 0) DK_KERNEL(PFX, T, ATTR, VT, VL, 2, 8, 1)           \
    static const dk_##T PFX##_tab[2][8][2] = {                                                 \
        {{PFX##_1_1_0, PFX##_1_1_1}, {PFX##_1_2_0, PFX##_1_2_1}, {PFX##_1_3_0, PFX##_1_3_1},   \
         {PFX##_1_4_0, PFX##_1_4_1}, {PFX##_1_5_0, PFX##_1_5_1}, {PFX##_1_6_0, PFX##_1_6_1},   \
         {PFX##_1_7_0, PFX##_1_7_1}, {PFX##_1_8_0, PFX##_1_8_1}},                              \
        {{PFX##_2_1_0, PFX##_2_1_1}, {PFX##_2_2_0, PFX##_2_2_1}, {PFX##_2_3_0, PFX##_2_3_1},   \
         {PFX##_2_4_0, PFX##_2_4_1}, {PFX##_2_5_0, PFX##_2_5_1}, {PFX##_2_6_0, PFX##_2_6_1},   \
         {PFX##_2_7_0, PFX##_2_7_1}, {PFX##_2_8_0, PFX##_2_8_1}}};

/* portable: 16-byte vector extensions; ragged loads / stores element by element */
#define GVF_MASKDECL(n)
#define GVF_ZERO() ((v4f){0, 0, 0, 0})
#define GVF_LD(p) gv_ld_f(p)
#define GVF_LDP(p, n) gv_ldp_f(p, n)
#define GVF_BC(x) gv_bc_f(x)
#define GVF_FMA(a, b, c) ((c) + (a) * (b))
#define GVF_MUL(a, b) ((a) * (b))
#define GVF_ADD(a, b) ((a) + (b))
#define GVF_ST(p, v) gv_st_f(p, v)
#define GVF_STP(p, v, n) gv_stp_f(p, v, n)
static inline v4f gv_ld_f(const float *p) { v4f v; memcpy(&v, p, sizeof v); return v; }
static inline v4f gv_ldp_f(const float *p, int n) { v4f v = {0, 0, 0, 0}; for (int l = 0; l < n; l++) v[l] = p[l]; return v; }
static inline v4f gv_bc_f(float x) { return (v4f){x, x, x, x}; }
static inline void gv_st_f(float *p, v4f v) { memcpy(p, &v, sizeof v); }
static inline void gv_stp_f(float *p, v4f v, int n) { for (int l = 0; l < n; l++) p[l] = v[l]; }
#define GVD_MASKDECL(n)
#define GVD_ZERO() ((v2d){0, 0})
#define GVD_LD(p) gv_ld_d(p)
#define GVD_LDP(p, n) gv_ldp_d(p, n)
#define GVD_BC(x) ((v2d){x, x})
#define GVD_FMA(a, b, c) ((c) + (a) * (b))
#define GVD_MUL(a, b) ((a) * (b))
#define GVD_ADD(a, b) ((a) + (b))
#define GVD_ST(p, v) gv_st_d(p, v)
#define GVD_STP(p, v, n) gv_stp_d(p, v, n)
static inline v2d gv_ld_d(const double *p) { v2d v; memcpy(&v, p, sizeof v); return v; }
static inline v2d gv_ldp_d(const double *p, int n) { v2d v = {0, 0}; for (int l = 0; l < n; l++) v[l] = p[l]; return v; }
static inline void gv_st_d(double *p, v2d v) { memcpy(p, &v, sizeof v); }
static inline void gv_stp_d(double *p, v2d v, int n) { for (int l = 0; l < n; l++) p[l] = v[l]; }
DK_ALL(GVF, float, , v4f, 4)
DK_ALL(GVD, double, , v2d, 2)

#if PG_GEMM_X86
/* AVX2: ragged loads through a mask table (vmaskmov: no fault past the end), ragged stores
 * through a scratch vector */
static const int32_t dk_mask32[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static const int64_t dk_mask64[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
#define AVF_MASKDECL(n) const __m256i mk_ = _mm256_loadu_si256((const __m256i *)(const void *)(dk_mask32 + 8 - (n)));
#define AVF_ZERO() _mm256_setzero_ps()
#define AVF_LD(p) _mm256_loadu_ps(p)
#define AVF_LDP(p, n) _mm256_maskload_ps(p, mk_)
#define AVF_BC(x) _mm256_set1_ps(x)
#define AVF_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define AVF_MUL(a, b) _mm256_mul_ps(a, b)
#define AVF_ADD(a, b) _mm256_add_ps(a, b)
#define AVF_ST(p, v) _mm256_storeu_ps(p, v)
#define AVF_STP(p, v, n) do { float t_[8]; _mm256_storeu_ps(t_, v); memcpy(p, t_, sizeof(float) * (size_t)(n)); } while (0)
#define AVD_MASKDECL(n) const __m256i mk_ = _mm256_loadu_si256((const __m256i *)(const void *)(dk_mask64 + 4 - (n)));
#define AVD_ZERO() _mm256_setzero_pd()
#define AVD_LD(p) _mm256_loadu_pd(p)
#define AVD_LDP(p, n) _mm256_maskload_pd(p, mk_)
#define AVD_BC(x) _mm256_set1_pd(x)
#define AVD_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define AVD_MUL(a, b) _mm256_mul_pd(a, b)
#define AVD_ADD(a, b) _mm256_add_pd(a, b)
#define AVD_ST(p, v) _mm256_storeu_pd(p, v)
#define AVD_STP(p, v, n) do { double t_[4]; _mm256_storeu_pd(t_, v); memcpy(p, t_, sizeof(double) * (size_t)(n)); } while (0)
DK_ALL(AVF, float, PG_AVX2, __m256, 8)
DK_ALL(AVD, double, PG_AVX2, __m256d, 4)

/* AVX-512: ragged rows under a k-mask, loads and stores alike */
#define ZF_MASKDECL(n) const __mmask16 mk_ = (__mmask16)((1u << (n)) - 1u);
#define ZF_ZERO() _mm512_setzero_ps()
#define ZF_LD(p) _mm512_loadu_ps(p)
#define ZF_LDP(p, n) _mm512_maskz_loadu_ps(mk_, p)
#define ZF_BC(x) _mm512_set1_ps(x)
#define ZF_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define ZF_MUL(a, b) _mm512_mul_ps(a, b)
#define ZF_ADD(a, b) _mm512_add_ps(a, b)
#define ZF_ST(p, v) _mm512_storeu_ps(p, v)
#define ZF_STP(p, v, n) _mm512_mask_storeu_ps(p, mk_, v)
#define ZD_MASKDECL(n) const __mmask8 mk_ = (__mmask8)((1u << (n)) - 1u);
#define ZD_ZERO() _mm512_setzero_pd()
#define ZD_LD(p) _mm512_loadu_pd(p)
#define ZD_LDP(p, n) _mm512_maskz_loadu_pd(mk_, p)
#define ZD_BC(x) _mm512_set1_pd(x)
#define ZD_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define ZD_MUL(a, b) _mm512_mul_pd(a, b)
#define ZD_ADD(a, b) _mm512_add_pd(a, b)
#define ZD_ST(p, v) _mm512_storeu_pd(p, v)
#define ZD_STP(p, v, n) _mm512_mask_storeu_pd(p, mk_, v)
DK_ALL(ZF, float, PG_AVX512, __m512, 16)
DK_ALL(ZD, double, PG_AVX512, __m512d, 8)
#define DK_PICK_float(vl) (kernel_sel == 2 ? (vl = 16, ZF_tab) : kernel_sel == 1 ? (vl = 8, AVF_tab) : (vl = 4, GVF_tab))
#define DK_PICK_double(vl) (kernel_sel == 2 ? (vl = 8, ZD_tab) : kernel_sel == 1 ? (vl = 4, AVD_tab) : (vl = 2, GVD_tab))
#else
#define DK_PICK_float(vl) (vl = 4, GVF_tab)
#define DK_PICK_double(vl) (vl = 2, GVD_tab)
#endif

/* Roles swapped (vectors along n) when that needs fewer vector FMAs, counting a packed
 * (transposed) element as 0.25 of one in f32, 0.7 in f64 (4 x 4 transposes), and an element
 * stored transposed as 2: the a side is packed when it is op(A) = A^T unswapped or op(B) = B
 * (not transposed) swapped. Measured on Zen 5; depends on the shape and vector length only. */
static int direct_swap(int ta, int tb, int64_t m, int64_t n, int64_t k, int vl, size_t es)
{
    const double pack = es == 4 ? 0.25 : 0.7, tr = 2;
    double keep = (double)((m + vl - 1) / vl) * (double)n * (double)k + (ta ? pack * (double)m * (double)k : 0);
    double swap = (double)((n + vl - 1) / vl) * (double)m * (double)k + (!tb ? pack * (double)n * (double)k : 0) +
                  tr * (double)m * (double)n;
    return swap < keep;
}

/* The direct path over the whole product: k blocks of DK_KC (beta on the first), tiles of up
 * to 2 VL rows (of the output, or of its transpose when swapped) by up to 8 / 6 columns. */
#define GEMM_DIRECT(T)                                                                        \
    static void gemm_direct_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, \
                                int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) \
    {                                                                                          \
        int vl;                                                                                \
        const dk_##T(*tab)[8][2] = DK_PICK_##T(vl);                                            \
        int swap = direct_swap(ta, tb, m, n, k, vl, sizeof(T));                                           \
        int64_t R, S, sa, rsb, csb, rc, cc;                                                    \
        const T *as, *bs;                                                                      \
        if (!swap) {                                                                           \
            R = m, S = n, as = a, sa = lda, bs = b, rc = 1, cc = ldc;                          \
            rsb = tb ? ldb : 1, csb = tb ? 1 : ldb;                                            \
        } else {                                                                               \
            R = n, S = m, as = b, sa = ldb, bs = a, rc = ldc, cc = 1;                          \
            rsb = ta ? 1 : lda, csb = ta ? lda : 1;                                            \
        }                                                                                      \
        const int pack = swap ? !tb : ta, mrv = 2 * vl, nr2 = kernel_sel == 2 ? 8 : 6;          \
        const T *pk = swap ? b : a;                                                            \
        const int64_t ldp = swap ? ldb : lda;                                                  \
        unsigned char buf_[32 * DK_KC * 4 + 64]; /* 2 VL rows x KC: 32 KiB either type */      \
        T *buf = (T *)(((uintptr_t)buf_ + 63) & ~(uintptr_t)63);                               \
        for (int64_t pc = 0; pc < k; pc += DK_KC) {                                            \
            int64_t kc = k - pc < DK_KC ? k - pc : DK_KC;                                      \
            T bet = pc == 0 ? beta : (T)1;                                                     \
            for (int64_t r0 = 0; r0 < R; r0 += mrv) {                                          \
                int rows = (int)(R - r0 < mrv ? R - r0 : mrv);                                 \
                int nv = rows > vl ? 2 : 1, part = rows % vl != 0, nrmax = nv == 2 ? nr2 : 8;  \
                const T *ar;                                                                   \
                int64_t sar = sa;                                                              \
                if (pack) {                                                                    \
                    PACK_A_##T(1, pk, ldp, r0, pc, rows, kc, mrv, buf, 0);                     \
                    ar = buf, sar = mrv;                                                       \
                } else                                                                         \
                    ar = as + r0 + pc * sa;                                                    \
                /* columns in balanced tiles (10 = 5 + 5, not 8 + 2: few accumulators stall) */ \
                int64_t nt = (S + nrmax - 1) / nrmax, q = S / nt, rem = S % nt;                 \
                for (int64_t t = 0, s0 = 0; t < nt; t++) {                                     \
                    int cols = (int)(q + (t < rem));                                           \
                    tab[nv - 1][cols - 1][part](kc, ar, sar, bs + pc * rsb + s0 * csb, rsb, csb, \
                                                c + r0 * rc + s0 * cc, rc, cc, rows, alpha, bet); \
                    s0 += cols;                                                                \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
GEMM_DIRECT(float)
GEMM_DIRECT(double)

/* The direct path for everything whose operands and result fit in about 4 MiB: measured on
 * Zen 5 it beats packing there, 0.5-0.9x its time from 64x4x32 to 256x784x256 f32 and 0.8-0.9x
 * on the MLP's f64 products (256x784x64 .. 256x784x256, 3.7 MiB); packing wins from about
 * 512x512x512 f64 (6 MiB), where B must be streamed from further out. Shape only. */
static int path_sel = -1; /* pg_gemm_path_select: -1 by size, 0 packed, 1 direct */
int pg_gemm_path_select(int which)
{
    path_sel = which < 0 ? -1 : which > 1 ? 1 : which;
    return path_sel;
}
static int direct_pays(int64_t m, int64_t n, int64_t k, size_t es)
{
    if (path_sel >= 0) return path_sel;
    return ((double)m * (double)k + (double)k * (double)n + (double)m * (double)n) * (double)es <= 4194304.0;
}

/* The packed path, single-threaded. Returns 0, or -1 (nothing written) when the packing
 * buffers cannot be allocated. Each call allocates its own buffers: threads share none. */
#define GEMM_PACKED(T)                                                                       \
    static int gemm_packed_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, \
                               int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) \
    {                                                                                          \
        const kern_##T *kr = &k_generic_##T;                                                   \
        KERN_PICK_##T                                                                          \
        const int mr = kr->mr, nr = kr->nr;                                                    \
        int64_t kc_max = k < kr->kc ? k : kr->kc;                                              \
        int64_t mc_max = round_up(m < kr->mc ? m : kr->mc, mr);                                \
        int64_t nc_max = round_up(n < kr->nc ? n : kr->nc, nr);                                \
        int64_t a_len = round_up(mc_max * kc_max, 64 / (int64_t)sizeof(T));                    \
        size_t bytes = (size_t)(a_len + nc_max * kc_max) * sizeof(T) + 64;                     \
        void *raw = malloc(bytes);                                                             \
        if (!raw) return -1;                                                                   \
        T *ap = (T *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), *bp = ap + a_len;               \
        T tile[MAX_MR * MAX_NR];                                                               \
        memset(tile, 0, sizeof(T) * (size_t)(mr * nr)); /* rows past a ragged edge: defined */   \
        for (int64_t jc = 0; jc < n; jc += kr->nc) {                                           \
            int64_t nc = n - jc < kr->nc ? n - jc : kr->nc;                                    \
            for (int64_t pc = 0; pc < k; pc += kr->kc) {                                       \
                int64_t kc = k - pc < kr->kc ? k - pc : kr->kc;                                \
                T bet = pc == 0 ? beta : (T)1;                                                 \
                pack_b_##T(tb, b, ldb, pc, jc, kc, nc, nr, bp);                                \
                for (int64_t ic = 0; ic < m; ic += kr->mc) {                                   \
                    int64_t mc = m - ic < kr->mc ? m - ic : kr->mc;                            \
                    PACK_A_##T(ta, a, lda, ic, pc, mc, kc, mr, ap, 1);                               \
                    for (int64_t jr = 0; jr < nc; jr += nr) {                                  \
                        int64_t cols = nc - jr < nr ? nc - jr : nr;                            \
                        for (int64_t ir = 0; ir < mc; ir += mr) {                              \
                            int64_t rows = mc - ir < mr ? mc - ir : mr;                        \
                            T *cc = c + (ic + ir) + (jc + jr) * ldc;                           \
                            const T *as = ap + ir * kc, *bs = bp + jr * kc;                    \
                            if (rows == mr && cols == nr) {                                    \
                                kr->ukr(kc, as, bs, cc, ldc, alpha, bet);                      \
                                continue;                                                      \
                            }                                                                  \
                            /* ragged tile: same kernel on a scratch tile, then copy out */    \
                            if (bet != 0)                                                      \
                                for (int64_t j = 0; j < cols; j++)                             \
                                    memcpy(tile + j * mr, cc + j * ldc, (size_t)rows * sizeof(T)); \
                            kr->ukr(kc, as, bs, tile, mr, alpha, bet);                         \
                            for (int64_t j = 0; j < cols; j++)                                 \
                                memcpy(cc + j * ldc, tile + j * mr, (size_t)rows * sizeof(T)); \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        free(raw);                                                                             \
        return 0;                                                                              \
    }

#if PG_GEMM_X86
#define KERN_PICK_float if (kernel_sel == 1) kr = &k_avx2_f; else if (kernel_sel == 2) kr = &k_avx512_f;
#define KERN_PICK_double if (kernel_sel == 1) kr = &k_avx2_d; else if (kernel_sel == 2) kr = &k_avx512_d;
#else
#define KERN_PICK_float
#define KERN_PICK_double
#endif
#define k_generic_float k_generic_f
#define k_generic_double k_generic_d
GEMM_PACKED(float)
GEMM_PACKED(double)

/* ---- one product, single-threaded: the direct or the packed path (identical bits) ---- */
#define GEMM_ONE(T)                                                                           \
    static void gemm_one_##T(int direct, int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, \
                             const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,   \
                             int64_t ldc)                                                      \
    {                                                                                          \
        if (!direct && gemm_packed_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0) \
            return;                                                                            \
        gemm_direct_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                 \
    }
GEMM_ONE(float)
GEMM_ONE(double)

/* ---- threads: ag_set_threads(n) splits large products over n threads ----
 *
 * C is cut into n parts along one dimension, never along k: the rows of C (units of the
 * kernel's MR = 2 vectors: whole tiles of either path) when m >= n, else its columns (units
 * of the packed NR or the direct path's column tile; whole vector tiles when the direct path
 * swaps roles). Each part is an ordinary single-threaded product on a sub-block of C, and
 * every element is summed in the one order described at the top of the file, whatever the
 * tile, block or path it lands in: the result has the same bits for every thread count. Each
 * thread packs what its part needs into its own buffers (the packed path allocates per call);
 * the part that takes the rows duplicates the packing of B, the one that takes the columns
 * that of A: the smaller operand side is the one duplicated.
 *
 * Only where it pays: each thread gets at least PG_GEMM_MIN_FLOPS of work in f64 (2 m n k / threads),
 * twice that in f32 (twice as fast), else fewer threads, down to one; about 30 us of work.
 * Measured on 2 cores of a Zen 5 EPYC VM (AVX-512) with a worker that slept: 2 MFLOP per
 * thread in f64 ran 1.14x as fast as one thread (4 MFLOP f32 1.13x), 1 MFLOP 0.88x; with
 * the worker still spinning from the previous product, 1.75-1.95x from 1 MFLOP up.
 *
 * The pool: n - 1 worker threads, started at the first threaded product (not before: the
 * default of one thread never starts any), resized when n changes. Workers sleep on a
 * condition variable between products, after a spin of at most 20 us; the calling thread
 * runs part 0 and then waits for the others (spinning up to 100 us, then asleep). Up to 64
 * threads. One product at a time: a product that finds the pool busy (another
 * application thread's product in flight) runs single-threaded at once instead of waiting
 * (same bits; no oversubscription of the cores). A thread that cannot be created: fewer
 * threads (down to single-threaded). Workers block all signals (the application's handlers
 * run on its own threads). At process exit, and when the library is unloaded (dlclose: R's
 * dyn.unload), a destructor stops and joins the workers (pg_gemm_threads_stop() does the same
 * on demand). After fork() the child has no workers: the pool notices (the pid changed) and
 * starts afresh. Windows (_WIN32): single-threaded. */
#define PG_GEMM_MIN_FLOPS 2.0e6
#define PG_GEMM_MAX_THREADS 64

static double min_flops = PG_GEMM_MIN_FLOPS;
double pg_gemm_thread_min_flops(double flops)
{
    min_flops = flops < 0 ? PG_GEMM_MIN_FLOPS : flops;
    return min_flops;
}

typedef struct {
    int dtype, direct, ta, tb, by_cols, parts;
    int64_t m, n, k, lda, ldb, ldc, unit;
    double alpha, beta;
    const void *a, *b;
    void *c;
} gemm_job;

/* part p of the job: a sub-block of C, units [p U / P, (p+1) U / P) of the split dimension */
static void job_run(const gemm_job *j, int p)
{
    int64_t len = j->by_cols ? j->n : j->m, U = (len + j->unit - 1) / j->unit;
    int64_t u0 = U * p / j->parts, u1 = U * (p + 1) / j->parts;
    int64_t s0 = u0 * j->unit, s1 = u1 * j->unit < len ? u1 * j->unit : len;
    if (s1 <= s0) return;
    int64_t m = j->by_cols ? j->m : s1 - s0, n = j->by_cols ? s1 - s0 : j->n;
    /* element offsets of the part's op(A) rows / op(B) columns / C block */
    int64_t oa = j->by_cols ? 0 : (j->ta ? s0 * j->lda : s0);
    int64_t ob = j->by_cols ? (j->tb ? s0 : s0 * j->ldb) : 0;
    int64_t oc = j->by_cols ? s0 * j->ldc : s0;
    if (j->dtype == PG_F32)
        gemm_one_float(j->direct, j->ta, j->tb, m, n, j->k, (float)j->alpha, (const float *)j->a + oa, j->lda,
                       (const float *)j->b + ob, j->ldb, (float)j->beta, (float *)j->c + oc, j->ldc);
    else
        gemm_one_double(j->direct, j->ta, j->tb, m, n, j->k, j->alpha, (const double *)j->a + oa, j->lda,
                        (const double *)j->b + ob, j->ldb, j->beta, (double *)j->c + oc, j->ldc);
}

#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pthread_t th;
    int id;             /* 1..nworkers: the part it runs (the caller runs part 0) */
    unsigned long seen; /* the last job generation it has looked at */
} worker;

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one product / resize at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;     /* the fields below; with the cvs */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static worker workers[PG_GEMM_MAX_THREADS];
static int nworkers;      /* started and not joined (changed under job_mu and mu) */
static int keep;          /* workers with id > keep leave */
static unsigned long gen; /* job generation: bumped to hand out a job */
static gemm_job job;
static unsigned long pending; /* parts still running on workers */
static pid_t pool_pid;

/* Spins, in microseconds: a worker after its part (the next product of a training step often
 * follows within microseconds; waking a sleeping thread cost 10-60 us on the 2-core VM), the
 * caller waiting for the workers' parts (they end about when its own does). Measured there,
 * products in a row at 2 threads: 128x128x128 f64 went from 1.14x to 1.85x the speed of one
 * thread with the workers' spin, 0.5x to 1.1x with the caller's. */
static const double spin_us_w = 20, spin_us_c = 100;
static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}
/* spin (pause) while (*p == v) == eq, for at most `us` microseconds */
static void spin_while(const unsigned long *p, unsigned long v, int eq, double us)
{
    if ((__atomic_load_n(p, __ATOMIC_ACQUIRE) == v) != eq || us <= 0) return;
    double end = now_us() + us;
    do
        for (int i = 0; i < 16; i++) {
#if PG_GEMM_X86
            _mm_pause();
#endif
            if ((__atomic_load_n(p, __ATOMIC_ACQUIRE) == v) != eq) return;
        }
    while (now_us() < end);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        if (w->seen == gen && w->id <= keep && spin_us_w > 0) {
            /* a short spin first: the next product often follows within microseconds */
            pthread_mutex_unlock(&mu);
            spin_while(&gen, w->seen, 1, spin_us_w);
            pthread_mutex_lock(&mu);
        }
        while (w->seen == gen && w->id <= keep) pthread_cond_wait(&work_cv, &mu);
        if (w->id > keep) break;
        w->seen = gen;
        if (w->id >= job.parts) continue;
        gemm_job j = job;
        pthread_mutex_unlock(&mu);
        job_run(&j, w->id);
        pthread_mutex_lock(&mu);
        if (__atomic_sub_fetch(&pending, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&done_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* with job_mu held: keep `want` workers (0..MAX-1); returns how many there are */
static int pool_resize(int want)
{
    if (pool_pid != getpid()) { /* a fork()ed child: the parent's workers are not here */
        pthread_mutex_init(&mu, NULL);
        pthread_cond_init(&work_cv, NULL);
        pthread_cond_init(&done_cv, NULL);
        nworkers = 0, keep = 0, pending = 0;
        pool_pid = getpid();
    }
    if (want < nworkers) {
        pthread_mutex_lock(&mu);
        keep = want;
        pthread_cond_broadcast(&work_cv);
        pthread_mutex_unlock(&mu);
        for (int i = want; i < nworkers; i++) pthread_join(workers[i].th, NULL);
        nworkers = want;
    }
    if (want > nworkers) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the workers inherit a full mask */
        pthread_mutex_lock(&mu);
        keep = want;
        pthread_mutex_unlock(&mu);
        for (; nworkers < want; nworkers++) {
            worker *w = &workers[nworkers];
            w->id = nworkers + 1;
            w->seen = gen; /* gen changes only under job_mu, held here */
            if (pthread_create(&w->th, NULL, worker_main, w) != 0) break;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_mutex_lock(&mu);
        keep = nworkers;
        pthread_mutex_unlock(&mu);
    }
    return nworkers;
}

int pg_gemm_threads_stop(void)
{
    pthread_mutex_lock(&job_mu);
    int n = pool_pid == getpid() ? nworkers : 0;
    pool_resize(0);
    pthread_mutex_unlock(&job_mu);
    return n;
}

int pg_gemm_threads_live(void)
{
    pthread_mutex_lock(&job_mu);
    int n = pool_pid == getpid() ? nworkers : 0;
    pthread_mutex_unlock(&job_mu);
    return n;
}

/* pg_set_threads(n): fewer threads than workers -> stop the extra ones now */
void pg_gemm_threads_hint(int n)
{
    pthread_mutex_lock(&job_mu);
    if (pool_pid == getpid() && n - 1 < nworkers) pool_resize(n - 1 < 0 ? 0 : n - 1);
    pthread_mutex_unlock(&job_mu);
}

/* exit and dlclose: no worker may outlive the code it runs. If a product is in flight on
 * another thread at exit, leave the workers alone (exit ends them) rather than wait. */
__attribute__((destructor)) static void pool_fini(void)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return;
    if (pool_pid == getpid()) pool_resize(0);
    pthread_mutex_unlock(&job_mu);
}

/* Runs the product on `parts` threads (the caller included); 0 when it did not (pool busy,
 * no thread could be created): the caller then runs it alone. */
static int pool_run(gemm_job *j, int threads)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return 0;
    int have = pool_resize(threads - 1 < PG_GEMM_MAX_THREADS ? threads - 1 : PG_GEMM_MAX_THREADS);
    if (j->parts > have + 1) j->parts = have + 1;
    if (j->parts < 2) {
        pthread_mutex_unlock(&job_mu);
        return 0;
    }
    pthread_mutex_lock(&mu);
    job = *j;
    __atomic_store_n(&pending, j->parts - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&gen, gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    job_run(j, 0);
    spin_while(&pending, 0, 0, spin_us_c);
    pthread_mutex_lock(&mu);
    while (pending > 0) pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&job_mu);
    return 1;
}
#else
int pg_gemm_threads_stop(void) { return 0; }
int pg_gemm_threads_live(void) { return 0; }
void pg_gemm_threads_hint(int n) { (void)n; }
static int pool_run(gemm_job *j, int threads) { (void)j, (void)threads; return 0; }
#endif

/* The built-in kernel's entry (k > 0). Returns 0. */
#define GEMM_BLOCKED(T, DT)                                                                   \
    int pg_gemm_blocked_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a, \
                            int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc)    \
    {                                                                                          \
        if (kernel_sel < 0) pg_gemm_kernel_select(-1);                                         \
        int direct = direct_pays(m, n, k, sizeof(T)), threads = pg_get_threads();              \
        if (threads > 1) {                                                                     \
            double work = 2.0 * (double)m * (double)n * (double)k;                             \
            double most = min_flops > 0 ? work / (min_flops * (sizeof(T) == 4 ? 2 : 1)) : (double)threads; \
            int parts = most < (double)threads ? (int)most : threads;                          \
            int by_cols = n > m, mr = 2 * (int)(64 / sizeof(T)) / (kernel_sel == 2 ? 1 : kernel_sel == 1 ? 2 : 4); \
            int64_t unit = !by_cols ? mr                                                       \
                         : !direct ? 6                                                         \
                         : direct_swap(ta, tb, m, n, k, mr / 2, sizeof(T)) ? mr                \
                         : kernel_sel == 2 ? 8 : 6;                                            \
            int64_t units = ((by_cols ? n : m) + unit - 1) / unit;                             \
            if (parts > units) parts = (int)units;                                             \
            if (parts > 1) {                                                                   \
                gemm_job j = {DT, direct, ta, tb, by_cols, parts, m, n, k, lda, ldb, ldc, unit, \
                              alpha, beta, a, b, c};                                           \
                if (pool_run(&j, threads)) return 0;                                           \
            }                                                                                  \
        }                                                                                      \
        gemm_one_##T(direct, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);            \
        return 0;                                                                              \
    }
GEMM_BLOCKED(float, PG_F32)
GEMM_BLOCKED(double, PG_F64)
