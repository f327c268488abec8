/* GEMM: a BLAS handed in at run time (cblas signature), or the built-in kernel.
 * Run-time hand-over lets Python pass OpenBLAS from its wheel and R pass its own BLAS without
 * link-time paths that break after installation. */
#include "gemm_internal.h" /* first: its pragmas (vectoriser, no FMA contraction) apply here */

/* A single non-transposed column (n == 1, a matrix-vector product) stays with the vectorised
 * column AXPYs, about 2-3x faster there than a one-column micro-kernel (a single FMA chain per
 * vector is latency-bound). Everything else with k > 0 goes to gemm_kernel.c, tiny products
 * too: its direct path costs a few dozen nanoseconds there, and every product with k > 0 and
 * n > 1 (or op(A) = A^T) then sums each element the same way (see gemm_kernel.c). */

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *,
                         int, double, double *, int);
typedef void (*threads_fn)(int);

enum { CblasColMajor = 102, CblasNoTrans = 111, CblasTrans = 112 };

static sgemm_fn blas_sgemm;
static dgemm_fn blas_dgemm;
static threads_fn blas_threads;
static char blas_name[128] = "builtin";
static int n_threads = 1;

int pg_set_blas(void *sgemm, void *dgemm, void *set_threads, const char *name)
{
    blas_sgemm = (sgemm_fn)sgemm;
    blas_dgemm = (dgemm_fn)dgemm;
    blas_threads = (threads_fn)set_threads;
    strncpy(blas_name, (sgemm || dgemm) && name ? name : "builtin", sizeof blas_name - 1);
    if (blas_threads) blas_threads(n_threads);
    return 0;
}

const char *pg_blas_name(void) { return blas_name; }

int pg_gemm_builtin(int dtype) { return dtype == PG_DTYPE_F32 ? !blas_sgemm : !blas_dgemm; }

int pg_set_threads(int n)
{
    if (n < 1 || n > PG_MAX_THREADS)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_set_threads(): n must be an integer in [1, %d], got %d", PG_MAX_THREADS,
                       n);
    n_threads = n;
    if (blas_threads) blas_threads(n);
    pg_gemm_threads_hint(n);
    return 0;
}

int pg_get_threads(void) { return n_threads; }

/* Built-in kernel: gemm_kernel.c (a direct path for small problems, the blocked packed one for
 * large; identical bits); plain loops for matrix-vector products and k == 0. The loop orders
 * keep the innermost loop contiguous so it vectorises: NN/NT are column AXPYs, TN/TT are dot
 * products over contiguous columns of A. Which of the two runs depends only on (n, k, ta), so
 * results are reproducible. ag_set_threads(n) reaches a BLAS handed in, or splits the built-in
 * kernel's large products over n threads (gemm_kernel.c: same bits for every n); the plain
 * loops stay single-threaded. */
#define GEMM_BUILTIN(T)                                                                            \
    static void gemm_builtin_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha,         \
                                 const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,   \
                                 int64_t ldc)                                                      \
    {                                                                                              \
        if (k > 0 && (n > 1 || ta) &&                                                              \
            pg_gemm_blocked_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0)        \
            return;                                                                                \
        gemm_loops_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                      \
    }
#define GEMM_LOOPS(T)                                                                              \
    static void gemm_loops_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha,           \
                               const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,     \
                               int64_t ldc)                                                        \
    {                                                                                              \
        for (int64_t j = 0; j < n; j++) {                                                          \
            T *cj = c + j * ldc;                                                                   \
            if (beta == 0)                                                                         \
                for (int64_t i = 0; i < m; i++) cj[i] = 0;                                         \
            else if (beta != 1)                                                                    \
                for (int64_t i = 0; i < m; i++) cj[i] *= beta;                                     \
            if (!ta) {                                                                             \
                for (int64_t p = 0; p < k; p++) {                                                  \
                    T bv = alpha * (tb ? b[j + p * ldb] : b[p + j * ldb]);                         \
                    const T *ap = a + p * lda;                                                     \
                    for (int64_t i = 0; i < m; i++) cj[i] += ap[i] * bv;                           \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t i = 0; i < m; i++) {                                                  \
                    const T *ai = a + i * lda;                                                     \
                    T s = 0;                                                                       \
                    if (!tb) {                                                                     \
                        const T *bj = b + j * ldb;                                                 \
                        for (int64_t p = 0; p < k; p++) s += ai[p] * bj[p];                        \
                    } else {                                                                       \
                        for (int64_t p = 0; p < k; p++) s += ai[p] * b[j + p * ldb];               \
                    }                                                                              \
                    cj[i] += alpha * s;                                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
GEMM_LOOPS(float)
GEMM_LOOPS(double)
GEMM_BUILTIN(float)
GEMM_BUILTIN(double)

void pg_gemm(int dtype, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
             const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
             int64_t ldc)
{
    if (m == 0 || n == 0) return;
    /* BLAS leaves C untouched when k == 0 and beta == 1; both paths agree on beta * C. */
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    if (dtype == PG_DTYPE_F32) {
        if (blas_sgemm && m < INT32_MAX && n < INT32_MAX && k < INT32_MAX)
            blas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans,
                       tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, (float)alpha, a,
                       (int)lda, b, (int)ldb, (float)beta, c, (int)ldc);
        else gemm_builtin_float(ta, tb, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, c, ldc);
    } else {
        if (blas_dgemm && m < INT32_MAX && n < INT32_MAX && k < INT32_MAX)
            blas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans,
                       tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                       b, (int)ldb, beta, c, (int)ldc);
        else gemm_builtin_double(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
}
