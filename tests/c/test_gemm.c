/* The built-in GEMM (no BLAS is handed in here), both micro-kernels, against a naive
 * triple loop in double: every (ta, tb), leading dimensions beyond the rows (the padding holds
 * NaN in A and B, which must never be read, and a sentinel in C, which must stay), alpha and
 * beta (0 over NaN garbage, 1, 0.5), sizes on both sides of the blocked kernel's threshold,
 * ragged against its tiles and larger than its blocks, and inputs moved by one element (other
 * alignment): the same bits. Error bound: (k + 2) eps (|alpha| sum |a b| + |beta c|). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static double gemm_get(int dt, const void *p, int64_t i)
{
    return dt == PG_DTYPE_F32 ? ((const float *)p)[i] : ((const double *)p)[i];
}
static void gemm_set(int dt, void *p, int64_t i, double v)
{
    if (dt == PG_DTYPE_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* frees a test's operands, each in f64 and f32 */
static void free_operands(double *A, double *B, double *C, float *Af, float *Bf, float *Cf)
{
    free(A);
    free(B);
    free(C);
    free(Af);
    free(Bf);
    free(Cf);
}

static void gemm_case(int dt, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                      double beta)
{
    size_t es = dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
    int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    int64_t lda = ra + 3, ldb = rb + 2, ldc = m + 4;
    /* one element more than needed: the second run moves every operand by one element */
    char *A = malloc((size_t)(lda * ca + 1) * es), *B = malloc((size_t)(ldb * cb + 1) * es);
    char *C0 = malloc((size_t)(ldc * n) * es), *C[2] = {malloc((size_t)(ldc * n + 1) * es), NULL};
    C[1] = malloc((size_t)(ldc * n + 1) * es);
    for (int64_t j = 0; j < ca; j++)
        for (int64_t i = 0; i < lda; i++) gemm_set(dt, A, i + j * lda, i < ra ? urand() : NAN);
    for (int64_t j = 0; j < cb; j++)
        for (int64_t i = 0; i < ldb; i++) gemm_set(dt, B, i + j * ldb, i < rb ? urand() : NAN);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < ldc; i++)
            gemm_set(dt, C0, i + j * ldc, i >= m ? 12345.0 : beta == 0 ? NAN : urand());
    int bad = 0;
    for (int run = 0; run < 2; run++) {
        char *a = A, *b = B, *c = C[run] + run * es;
        if (run) { /* shift the operands by one element */
            memmove(A + es, A, (size_t)(lda * ca) * es);
            memmove(B + es, B, (size_t)(ldb * cb) * es);
            a += es, b += es;
        }
        memcpy(c, C0, (size_t)(ldc * n) * es);
        pg_gemm(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        double eps = dt == PG_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < ldc; i++) {
                double got = gemm_get(dt, c, i + j * ldc), c0 = gemm_get(dt, C0, i + j * ldc);
                if (i >= m) {
                    bad += got != 12345.0;
                    continue;
                }
                double s = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double x = gemm_get(dt, a, ta ? p + i * lda : i + p * lda),
                           y = gemm_get(dt, b, tb ? j + p * ldb : p + j * ldb);
                    s += x * y, mag += fabs(x * y);
                }
                double want = alpha * s + (beta == 0 ? 0 : beta * c0);
                mag = fabs(alpha) * mag + (beta == 0 ? 0 : fabs(beta * c0));
                bad += !(fabs(got - want) <= (double)(k + 2) * eps * mag + 1e-300);
            }
    }
    for (int64_t j = 0; j < n; j++) /* the same bits at the other alignment */
        bad += memcmp(C[0] + (size_t)(j * ldc) * es, C[1] + (size_t)(j * ldc + 1) * es,
                      (size_t)m * es) != 0;
    if (bad)
        fprintf(stderr, "gemm %s ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g beta=%g: %d bad\n",
                dt == PG_DTYPE_F32 ? "f32" : "f64", ta, tb, (long long)m, (long long)n,
                (long long)k, alpha, beta, bad);
    CHECK(bad == 0);
    free(A);
    free(B);
    free(C0);
    free(C[0]);
    free(C[1]);
}

/* The direct and the packed paths of every kernel give the same bits, and so do the AVX2 and
 * AVX-512 kernels (on both paths), on small / thin shapes (m = 1..17, vectors along n for thin
 * m, ragged rows, transposed stores), every layout, alpha != 1 and beta 0, 1, 0.5, k > KC. */
static const int64_t same_bits_shapes[][3] = {{64, 32, 4},  {3, 32, 32},  {10, 64, 128},
                                              {4, 32, 64},  {32, 32, 3},  {10, 128, 64},
                                              {13, 9, 300}, {70, 45, 600}};
/* m x n x k around the 2-row tails of 10 f64 rows (AVX-512: 8 rows, then 2 at 128 bits), rows
 * 16 + 2 and 16 + 10, 1 to 21 columns (ragged column tiles), 2 k blocks, C^T tiles of n = 18 */
static const int64_t two_row_shapes[][3] = {
    {10, 64, 128}, {10, 256, 128}, {2, 11, 128},  {10, 21, 300}, {18, 9, 64}, {26, 10, 257},
    {10, 1, 5},    {9, 64, 128},   {11, 64, 128}, {3, 18, 64},   {10, 7, 513}};
static void gemm_same_bits(int best, const int64_t (*shp)[3], size_t nshp)
{
    const int64_t kmax = 600, dim = 128 + 4;
    double *A = malloc(sizeof(double) * (size_t)(dim * kmax)),
           *B = malloc(sizeof(double) * (size_t)(dim * kmax));
    double *C = malloc(sizeof(double) * (size_t)(4 * dim * dim));
    float *Af = malloc(sizeof(float) * (size_t)(dim * kmax)),
          *Bf = malloc(sizeof(float) * (size_t)(dim * kmax));
    float *Cf = malloc(sizeof(float) * (size_t)(4 * dim * dim));
    for (int64_t i = 0; i < dim * kmax; i++)
        Af[i] = (float)(A[i] = urand()), Bf[i] = (float)(B[i] = urand());
    for (size_t s = 0; s < nshp; s++)
        for (int t = 0; t < 4; t++)
            for (int bi = 0; bi < 3; bi++) {
                int64_t m = shp[s][0], n = shp[s][1], k = shp[s][2], ldc = m + 1, sz = ldc * n;
                int ta = t >> 1, tb = t & 1;
                double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5;
                int run =
                    0; /* runs: (kernel, path) = (0, packed), (0, direct), then AVX2 / AVX-512 likewise */
                for (int sel = 0; sel <= best; sel++)
                    for (int path = 0; path <= 1; path++, run++) {
                        pg_gemm_kernel_select(sel);
                        pg_gemm_path_select(path);
                        double *c = C + (run % 4) * sz;
                        float *cf = Cf + (run % 4) * sz;
                        for (int64_t i = 0; i < sz; i++) c[i] = cf[i] = (float)(i % 7) - 3;
                        pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, -0.75, A, (ta ? k : m) + 2, B,
                                (tb ? n : k) + 3, beta, c, ldc);
                        pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, -0.75, Af, (ta ? k : m) + 2, Bf,
                                (tb ? n : k) + 3, beta, cf, ldc);
                        if (path == 1) { /* direct == packed on this kernel */
                            CHECK(memcmp(c, c - sz, sizeof(double) * (size_t)sz) == 0);
                            CHECK(memcmp(cf, cf - sz, sizeof(float) * (size_t)sz) == 0);
                        }
                        if (sel ==
                            2) { /* AVX-512 == AVX2 (runs 2, 3 kept at slots 2, 3; AVX-512 at 0, 1) */
                            CHECK(memcmp(c, c + 2 * sz, sizeof(double) * (size_t)sz) == 0);
                            CHECK(memcmp(cf, cf + 2 * sz, sizeof(float) * (size_t)sz) == 0);
                        }
                    }
            }
    pg_gemm_kernel_select(-1);
    pg_gemm_path_select(-1);
    free_operands(A, B, C, Af, Bf, Cf);
}

/* Threads: pg_set_threads(1..4) give the same bits on every kernel, both paths, every layout,
 * f32 / f64, alpha and beta variants (the work split even on small shapes: minimum 0); then two
 * application threads run products at once while the pool is active (one gets the pool, the
 * other runs alone): right results, and the pool's workers are stopped at the end. */
typedef struct {
    int dt;
    int64_t m, n, k;
    const void *a, *b, *ref;
    void *c;
    int bad;
} gemm_conc;
static void *gemm_conc_main(void *p)
{
    gemm_conc *g = p;
    size_t es = g->dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
    for (int r = 0; r < 40; r++) {
        memset(g->c, 0, (size_t)(g->m * g->n) * es);
        pg_gemm(g->dt, 0, 1, g->m, g->n, g->k, -0.75, g->a, g->m, g->b, g->n, 0, g->c, g->m);
        g->bad += memcmp(g->c, g->ref, (size_t)(g->m * g->n) * es) != 0;
    }
    return NULL;
}

static void gemm_threads(int best)
{
    static const int64_t shp[][3] = {{64, 4, 32},   {3, 32, 32},  {10, 128, 64},
                                     {70, 45, 600}, {300, 7, 40}, {13, 310, 9}};
    static const double ab[][2] = {{1, 0}, {-0.75, 1}, {0.5, 0.5}};
    const int64_t dim = 300 + 4, kmax = 600;
    double *A = malloc(sizeof(double) * (size_t)(dim * kmax)),
           *B = malloc(sizeof(double) * (size_t)(dim * kmax));
    float *Af = malloc(sizeof(float) * (size_t)(dim * kmax)),
          *Bf = malloc(sizeof(float) * (size_t)(dim * kmax));
    double *C = malloc(sizeof(double) * (size_t)(2 * dim * dim));
    float *Cf = malloc(sizeof(float) * (size_t)(2 * dim * dim));
    for (int64_t i = 0; i < dim * kmax; i++)
        Af[i] = (float)(A[i] = urand()), Bf[i] = (float)(B[i] = urand());
    CHECK(pg_gemm_thread_min_flops(0) == 0);
    int bad = 0;
    for (int sel = 0; sel <= best; sel++)
        for (int path = -1; path <= 1; path++) {
            pg_gemm_kernel_select(sel);
            pg_gemm_path_select(path);
            for (size_t s = 0; s < sizeof shp / sizeof *shp; s++)
                for (int t = 0; t < 4; t++)
                    for (size_t c = 0; c < sizeof ab / sizeof *ab; c++) {
                        int64_t m = shp[s][0], n = shp[s][1], k = shp[s][2], ldc = m + 1,
                                sz = ldc * n;
                        int ta = t >> 1, tb = t & 1;
                        for (int th = 1; th <= 4; th++) {
                            double *cc = C + (th > 1) * sz;
                            float *cf = Cf + (th > 1) * sz;
                            for (int64_t i = 0; i < sz; i++) cc[i] = cf[i] = (float)(i % 7) - 3;
                            CHECK(pg_set_threads(th) == 0);
                            pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, ab[c][0], A, (ta ? k : m) + 2, B,
                                    (tb ? n : k) + 3, ab[c][1], cc, ldc);
                            pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, ab[c][0], Af, (ta ? k : m) + 2,
                                    Bf, (tb ? n : k) + 3, ab[c][1], cf, ldc);
                            if (th > 1) {
                                int b1 = memcmp(C, C + sz, sizeof(double) * (size_t)sz) != 0;
                                int b2 = memcmp(Cf, Cf + sz, sizeof(float) * (size_t)sz) != 0;
                                if (b1 || b2)
                                    fprintf(stderr,
                                            "gemm threads=%d kernel=%d path=%d %lldx%lldx%lld "
                                            "ta=%d tb=%d: %s differ\n",
                                            th, sel, path, (long long)m, (long long)k, (long long)n,
                                            ta, tb, b1 ? "f64" : "f32");
                                bad += b1 + b2;
                            }
                        }
                    }
        }
    CHECK(bad == 0);
    CHECK(pg_gemm_threads_live() == 3); /* the pool of 4 threads: 3 workers */
    pg_gemm_kernel_select(-1);
    pg_gemm_path_select(-1);
    pg_gemm_thread_min_flops(-1);
    /* two application threads at once, the pool active (2 threads; 150x300x200: split) */
    CHECK(pg_set_threads(2) == 0);
    CHECK(pg_gemm_threads_live() == 1);
    int64_t m = 150, n = 200, k = 300;
    gemm_conc g[2];
    for (int i = 0; i < 2; i++) {
        int dt = i ? PG_DTYPE_F32 : PG_DTYPE_F64;
        size_t es = dt == PG_DTYPE_F32 ? sizeof(float) : sizeof(double);
        void *ref = malloc((size_t)(m * n) * es);
        CHECK(pg_set_threads(1) == 0);
        pg_gemm(dt, 0, 1, m, n, k, -0.75, dt == PG_DTYPE_F32 ? (void *)Af : (void *)A, m,
                dt == PG_DTYPE_F32 ? (void *)Bf : (void *)B, n, 0, ref, m);
        g[i] = (gemm_conc){dt,
                           m,
                           n,
                           k,
                           dt == PG_DTYPE_F32 ? (void *)Af : (void *)A,
                           dt == PG_DTYPE_F32 ? (void *)Bf : (void *)B,
                           ref,
                           malloc((size_t)(m * n) * es),
                           0};
    }
    CHECK(pg_set_threads(2) == 0);
    pg_gemm(PG_DTYPE_F64, 0, 1, m, n, k, -0.75, A, m, B, n, 0, g[0].c, m); /* starts the pool */
    CHECK(pg_gemm_threads_live() == 1);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, gemm_conc_main, &g[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(g[i].bad == 0);
        free((void *)g[i].ref), free(g[i].c);
    }
    /* the right numbers too (the single-threaded reference against a plain sum) */
    CHECK(pg_set_threads(1) == 0);
    CHECK(pg_gemm_threads_live() == 0);
    CHECK(pg_set_threads(2) == 0);
    gemm_case(PG_DTYPE_F64, 1, 0, 150, 200, 300, -0.75, 0.5);
    gemm_case(PG_DTYPE_F32, 0, 1, 150, 200, 300, 1, 0);
    CHECK(pg_gemm_threads_live() == 1);
    CHECK(pg_gemm_threads_stop() == 1 && pg_gemm_threads_live() == 0);
    gemm_case(PG_DTYPE_F64, 0, 0, 150, 200, 300, 1,
              1); /* restarts the pool; the exit handler stops it */
    CHECK(pg_gemm_threads_live() == 1);
    CHECK(pg_set_threads(1) == 0);
    free_operands(A, B, C, Af, Bf, Cf);
}

/* pg_par_for: every item once, in ranges within [0, n), for 1..4 threads and any minimum; a
 * range's fn may ask for threads itself (it runs alone when the pool is busy: no deadlock) */
typedef struct {
    int64_t n;
    int *seen;
    int nested, bad;
} par_ctx;
static void par_inner(void *ctx, int64_t i0, int64_t i1)
{
    __atomic_add_fetch((int64_t *)ctx, i1 - i0, __ATOMIC_RELAXED);
}
static void par_fn(void *ctx, int64_t i0, int64_t i1)
{
    par_ctx *p = ctx;
    if (i0 < 0 || i1 > p->n || i0 >= i1) __atomic_add_fetch(&p->bad, 1, __ATOMIC_RELAXED);
    for (int64_t i = i0; i < i1 && i >= 0 && i < p->n; i++)
        __atomic_add_fetch(&p->seen[i], 1, __ATOMIC_RELAXED);
    if (p->nested && i0 == 0) {
        int64_t whole = 0;
        pg_par_for(5000, 1, par_inner, &whole);
        if (whole != 5000) __atomic_add_fetch(&p->bad, 1, __ATOMIC_RELAXED);
    }
}
static void par_for_ranges(void)
{
    static const int64_t ns[] = {0, 1, 7, 1000, 100003};
    static const int64_t mins[] = {1, 3, 1000, 0};
    int *seen = malloc(sizeof(int) * 100003);
    int bad = 0;
    for (int th = 1; th <= 4; th++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (size_t b = 0; b < sizeof mins / sizeof *mins; b++)
                for (int nested = 0; nested < 2; nested++) {
                    CHECK(pg_set_threads(th) == 0);
                    memset(seen, 0, sizeof(int) * 100003);
                    par_ctx p = {ns[a], seen, nested, 0};
                    pg_par_for(ns[a], mins[b], par_fn, &p);
                    bad += p.bad;
                    for (int64_t i = 0; i < ns[a]; i++) bad += seen[i] != 1;
                }
    CHECK(bad == 0);
    CHECK(pg_set_threads(1) == 0);
    free(seen);
}

void test_gemm(void)
{
    /* m, n, k: loops (a single column); the kernel (ragged; m > MC, k > KC; n > NC); the small
     * and thin products of small MLPs; m = 1, 2, 3, 7, 9, 15, 16, 17 against 2 to 16 lanes */
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {5, 3, 4},   {129, 1, 300}, {17, 33, 9},  {150, 40, 300}, {5, 3100, 7},
        {64, 32, 4}, {3, 32, 32}, {10, 64, 128}, {4, 32, 64},  {32, 32, 3},    {2, 2, 2},
        {1, 19, 33}, {7, 19, 33}, {9, 19, 33},   {15, 19, 33}, {16, 19, 33},   {17, 19, 33}};
    static const double ab[][2] = {{1, 0}, {1, 1}, {-1.5, 0.5}, {0.25, 1}};
    CHECK(pg_gemm_kernel_select(0) == 0);
    int best = pg_gemm_kernel_select(-1);
    CHECK(best >= 0 && best <= 2);
    if (best < 2)
        fprintf(stderr, "gemm: this CPU lacks %s: kernels above %d not tested\n",
                best < 1 ? "AVX2+FMA" : "AVX-512F", best);
    /* 0 portable, 1 AVX2 + FMA, 2 AVX-512F: each kernel this CPU has */
    for (int sel = 0; sel <= best; sel++) {
        CHECK(pg_gemm_kernel_select(sel) == sel);
        for (int path = -1; path <= 1; path++) { /* by size, packed, direct */
            CHECK(pg_gemm_path_select(path) == path);
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                for (int t = 0; t < 4; t++)
                    for (size_t c = 0; c < sizeof ab / sizeof *ab; c++)
                        for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
                            gemm_case(dt, t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2],
                                      ab[c][0], ab[c][1]);
        }
        pg_gemm_path_select(-1);
    }
    gemm_same_bits(best, same_bits_shapes, sizeof same_bits_shapes / sizeof *same_bits_shapes);
    gemm_same_bits(best, two_row_shapes, sizeof two_row_shapes / sizeof *two_row_shapes);
    gemm_threads(best);
    par_for_ranges();
    CHECK(pg_gemm_kernel_select(best + 1) == best); /* a kernel the CPU lacks: the best below it */
    if (best == 2) { /* AVX2 and AVX-512 sum in the same order: the same bits, every layout */
        int64_t m = 70, n = 45, k = 600; /* ragged against both tiles; k > KC */
        pg_gemm_path_select(0);
        double *A = malloc(sizeof(double) * (size_t)(m * k)),
               *B = malloc(sizeof(double) * (size_t)(k * n));
        double *C = malloc(sizeof(double) * (size_t)(4 * m * n));
        float *Af = malloc(sizeof(float) * (size_t)(m * k)),
              *Bf = malloc(sizeof(float) * (size_t)(k * n));
        float *Cf = malloc(sizeof(float) * (size_t)(4 * m * n));
        for (int64_t i = 0; i < m * k; i++) Af[i] = (float)(A[i] = urand());
        for (int64_t i = 0; i < k * n; i++) Bf[i] = (float)(B[i] = urand());
        for (int t = 0; t < 4; t++) {
            int ta = t >> 1, tb = t & 1;
            for (int sel = 1; sel <= 2; sel++) {
                pg_gemm_kernel_select(sel);
                double *c = C + (sel - 1) * m * n;
                float *cf = Cf + (sel - 1) * m * n;
                for (int64_t i = 0; i < m * n; i++) c[i] = cf[i] = (float)(i % 7) - 3;
                pg_gemm(PG_DTYPE_F64, ta, tb, m, n, k, -0.75, A, ta ? k : m, B, tb ? n : k, 0.5, c,
                        m);
                pg_gemm(PG_DTYPE_F32, ta, tb, m, n, k, -0.75, Af, ta ? k : m, Bf, tb ? n : k, 0.5,
                        cf, m);
            }
            CHECK(memcmp(C, C + m * n, sizeof(double) * (size_t)(m * n)) == 0);
            CHECK(memcmp(Cf, Cf + m * n, sizeof(float) * (size_t)(m * n)) == 0);
        }
        free_operands(A, B, C, Af, Bf, Cf);
        pg_gemm_path_select(-1);
    }
    pg_gemm_kernel_select(-1);
    /* k == 0: C = beta C (beta 0 overwrites NaN garbage; 1 leaves C alone) */
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int bi = 0; bi < 3; bi++) {
            double beta = bi == 0 ? 0 : bi == 1 ? 1 : 0.5, one = 1, c[6];
            float cf[6];
            for (int i = 0; i < 6; i++) c[i] = cf[i] = bi == 0 ? NAN : (float)(i + 1);
            pg_gemm(dt, 0, 0, 3, 2, 0, 2.0, &one, 3, &one, 1, beta,
                    dt == PG_DTYPE_F32 ? (void *)cf : (void *)c, 3);
            for (int i = 0; i < 6; i++)
                CHECK((dt == PG_DTYPE_F32 ? cf[i] : c[i]) == beta * (i + 1));
        }
}
