/* The built-in GEMM's internal declarations: gemm.c (entry, plain loops), gemm_ukernel.c (the
 * micro-kernels and their selection), gemm_kernel.c (packed and direct paths, path choice),
 * gemm_pool.c (threads). Not a cffi header: include it first in each of those files.
 *
 * R compiles with -O2, where GCC's "very cheap" vectoriser cost model leaves loops of unknown
 * trip count scalar (R CMD check warns about vectoriser flags in Makevars); ask for the -O3
 * model here, for the GEMM files only. Python builds with -O3 already: no change there.
 *
 * No contraction of a * b + c into FMA (GCC pragma below, STDC FP_CONTRACT for clang; where the
 * target has FMA, e.g. aarch64, or x86 built with -mfma): the portable kernel and the plain
 * loops multiply and add as written, so that R (-O2) and Python (-O3) builds give the same bits.
 * The pragmas apply to the rest of each translation unit that includes this header first.
 *
 * Determinism: each C element is  C = alpha * acc_0 + beta * C,  then  C = alpha * acc_b + C
 * for every later k block b, where acc_b sums a[i,p] * b[p,j] over the block in increasing p,
 * starting from 0. That order depends only on k and KC (fixed per dtype and kernel), never on
 * the position of the element in a tile, on m or n, on the alignment of the inputs, on the path
 * (direct or packed), on the thread count or on the optimisation level: the AVX2 and AVX-512
 * kernels use explicit FMA intrinsics, the portable one plain multiply and add. The kernel is
 * picked once per process by CPU (AVX-512F, AVX2 + FMA, or portable). The AVX-512 and AVX2
 * kernels sum in the same order with the same FMAs and the same KC, so they give identical
 * bits; the portable kernel (no FMA) rounds differently. Results can differ between machines
 * with and without AVX2, never between runs, -O levels or languages on one. */
#ifndef PG_GEMM_INTERNAL_H
#define PG_GEMM_INTERNAL_H

#include "pg_fp.h" /* the vectoriser and no-contraction pragmas, as every floating-point file */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#define PG_GEMM_X86 PG_X86_SIMD /* pg.h */
#define PG_AVX2     PG_TARGET_AVX2
#define PG_AVX512   PG_TARGET_AVX512

/* The built-in kernel (k > 0), for gemm.c: a direct (unpacked) path for small problems, the
 * packed blocked one for large ones, identical bits; returns 0 (it allocates nothing it cannot
 * do without). pg_set_threads(n) tells the thread pool (pg_gemm_threads_hint: stops workers
 * beyond n - 1). Selectors of kernel, path and threading (tests, benchmarks): pg_api_gemm.h. */
int pg_gemm_blocked_float(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          float *c, int64_t ldc);
int pg_gemm_blocked_double(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                           const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                           double *c, int64_t ldc);
void pg_gemm_threads_hint(int n);

/* 0 portable, 1 AVX2 + FMA, 2 AVX-512F; -1 until the first product (or pg_gemm_kernel_select) */
extern int pg_gemm_ksel;
extern int pg_gemm_intel; /* an Intel CPU: set with pg_gemm_ksel */

/* Per dtype: the packed micro-kernel (an MR x NR tile of C from packed slivers of A and B),
 * the direct-path kernels dk[NV - 1][cols - 1][ragged] (NV vectors of MR / 2 rows by cols
 * columns, read in place; see gemm_kernel.c), and the kernel's block sizes. dnr: the direct
 * path's most columns per tile at NV = 2 (8 at NV = 1). pg_gemm_kern_<T>() gives the kernel
 * in use (pg_gemm_ksel chosen); pg_gemm_kern_half_<T>() the half-width one under AVX-512;
 * pg_gemm_kern_two_<T>() the direct path's 128-bit kernels for ragged rows of 2 (f64). */
#define PG_GEMM_KERN_TYPES(T)                                                                      \
    typedef void (*ukr_##T)(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, T alpha,        \
                            T beta);                                                               \
    typedef void (*dk_##T)(int64_t kc, const T *a, int64_t sa, const T *b, int64_t rsb,            \
                           int64_t csb, T *c, int64_t rc, int64_t cc, int rows, T alpha, T beta);  \
    typedef struct {                                                                               \
        ukr_##T ukr;                                                                               \
        int mr, nr;                                                                                \
        int64_t mc, kc, nc;                                                                        \
        int dnr;                                                                                   \
        const dk_##T (*dk)[8][2];                                                                  \
    } kern_##T;                                                                                    \
    const kern_##T *pg_gemm_kern_##T(void);                                                        \
    const kern_##T *pg_gemm_kern_half_##T(void); /* the AVX2 one under AVX-512, else NULL */       \
    const dk_##T *pg_gemm_kern_two_##T(void); /* AVX-512 f64: 2-row tiles, 1-10 columns; or NULL */
PG_GEMM_KERN_TYPES(float)
PG_GEMM_KERN_TYPES(double)

/* One product, single-threaded, on the direct or the packed path (gemm_kernel.c) */
void pg_gemm_one_float(int direct, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc);
void pg_gemm_one_double(int direct, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                        const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                        double *c, int64_t ldc);

/* A product to split over threads (gemm_pool.c): C cut along its columns (by_cols) or rows in
 * units of `unit` (whole tiles of the path that runs); `parts` (the chunks) is filled in by the
 * pool. */
typedef struct {
    int dtype, direct, ta, tb, by_cols, parts;
    int64_t m, n, k, lda, ldb, ldc, unit;
    double alpha, beta;
    const void *a, *b;
    void *c;
} gemm_job;
/* Runs the job on up to pg_get_threads() threads where that pays; 0 when it did not run it
 * (one thread, too little work, the pool busy): the caller runs it alone. */
int pg_gemm_split(gemm_job *j);

#endif
