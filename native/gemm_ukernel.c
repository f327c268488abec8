/* The built-in GEMM's micro-kernels (portable, AVX2 + FMA, AVX-512F) and their selection.
 *
 * Each instruction set defines its vector operations once, as ISA_OP(S, ...) with S the
 * type's suffix (f / d for the portable vector extensions, ps / pd for the intrinsics); one
 * body per kernel (UKR: the packed path's micro-kernel, DK_KERNEL: the direct path's) is then
 * compiled for every ISA and dtype. Per element every kernel does the same: acc = 0,
 * acc = fma(a, b, acc) over the k block in increasing k (portable: acc = acc + a * b), then
 * C = alpha * acc (+ C, or + beta * C), see gemm_internal.h. */
#include "gemm_internal.h"

/* the token-pasting kernel generators below are laid out by hand: clang-format 14 reaches no
 * fixed point on them */
/* clang-format off */

/* ---- portable: GCC/clang vector extensions, 16-byte vectors (SSE2, NEON) ----
 * Packed slivers are 64-byte aligned, a multiple of 16 bytes (LDA); C and the operands of the
 * direct path through memcpy (any alignment); ragged loads / stores element by element. */
typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
#define GV_SPLAT_f(x) ((v4f){x, x, x, x})
#define GV_SPLAT_d(x) ((v2d){x, x})
#define GV_MASKDECL(S, n)
#define GV_ZERO(S) GV_SPLAT_##S(0)
#define GV_LDA(S, p) (*(const __typeof__(GV_ZERO(S)) *)(const void *)(p))
#define GV_LD(S, p) gv_ld_##S(p)
#define GV_LDP(S, p, n) gv_ldp_##S(p, n)
#define GV_BC(S, x) GV_SPLAT_##S(x)
#define GV_FMA(S, a, b, c) ((c) + (a) * (b))
#define GV_MUL(S, a, b) ((a) * (b))
#define GV_ADD(S, a, b) ((a) + (b))
#define GV_ST(S, p, v) memcpy(p, &(v), sizeof(v))
#define GV_STP(S, p, v, n) do { for (int l_ = 0; l_ < (n); l_++) (p)[l_] = (v)[l_]; } while (0)
#define GV_HELPERS(S, T, V)                                                                    \
    static inline V gv_ld_##S(const T *p) { V v; memcpy(&v, p, sizeof v); return v; }          \
    static inline V gv_ldp_##S(const T *p, int n)                                              \
    {                                                                                          \
        V v = GV_ZERO(S);                                                                      \
        for (int l = 0; l < n; l++) v[l] = p[l];                                               \
        return v;                                                                              \
    }
GV_HELPERS(f, float, v4f)
GV_HELPERS(d, double, v2d)

#if PG_GEMM_X86
/* ---- AVX2 + FMA: ragged loads through a mask table (vmaskmov: no fault past the end), ragged
 * stores through a scratch vector ---- */
static const int32_t dk_mask32[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static const int64_t dk_mask64[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
#define AV_MASK_ps(n) (dk_mask32 + 8 - (n))
#define AV_MASK_pd(n) (dk_mask64 + 4 - (n))
#define AV_MASKDECL(S, n) const __m256i mk_ = _mm256_loadu_si256((const __m256i *)(const void *)AV_MASK_##S(n));
#define AV_ZERO(S) _mm256_setzero_##S()
#define AV_LDA(S, p) _mm256_load_##S(p)
#define AV_LD(S, p) _mm256_loadu_##S(p)
#define AV_LDP(S, p, n) _mm256_maskload_##S(p, mk_)
#define AV_BC(S, x) _mm256_set1_##S(x)
#define AV_FMA(S, a, b, c) _mm256_fmadd_##S(a, b, c)
#define AV_MUL(S, a, b) _mm256_mul_##S(a, b)
#define AV_ADD(S, a, b) _mm256_add_##S(a, b)
#define AV_ST(S, p, v) _mm256_storeu_##S(p, v)
#define AV_STP(S, p, v, n)                                                                     \
    do {                                                                                       \
        unsigned char t_[32];                                                                  \
        _mm256_storeu_##S((void *)t_, v);                                                      \
        memcpy(p, t_, sizeof *(p) * (size_t)(n));                                              \
    } while (0)

/* ---- AVX-512F: ragged rows under a k-mask, loads and stores alike ---- */
#define Z_MASK_ps __mmask16
#define Z_MASK_pd __mmask8
#define Z_MASKDECL(S, n) const Z_MASK_##S mk_ = (Z_MASK_##S)((1u << (n)) - 1u);
#define Z_ZERO(S) _mm512_setzero_##S()
#define Z_LDA(S, p) _mm512_load_##S(p)
#define Z_LD(S, p) _mm512_loadu_##S(p)
#define Z_LDP(S, p, n) _mm512_maskz_loadu_##S(mk_, p)
#define Z_BC(S, x) _mm512_set1_##S(x)
#define Z_FMA(S, a, b, c) _mm512_fmadd_##S(a, b, c)
#define Z_MUL(S, a, b) _mm512_mul_##S(a, b)
#define Z_ADD(S, a, b) _mm512_add_##S(a, b)
#define Z_ST(S, p, v) _mm512_storeu_##S(p, v)
#define Z_STP(S, p, v, n) _mm512_mask_storeu_##S(p, mk_, v)
#endif

/* ---- the packed path's micro-kernel: 2 vectors x 6 columns (12 accumulators c<r><j>: row
 * vector r, column j), from packed slivers (a: 2 VL rows per k step, b: 6 columns) ----
 * portable f32 8 x 6, f64 4 x 6; AVX2 f32 16 x 6, f64 8 x 6; AVX-512 f32 32 x 6, f64 16 x 6.
 * AVX-512: the AVX2 kernels with vectors twice as wide (per element the same k order, one FMA
 * per k step from 0, the same store arithmetic and the same KC: identical bits). The tile
 * shape, MC and KC were chosen by measurement (docs/gemm.md). */
#define UKR_COL(ISA, S, j)                                                                     \
    bj = ISA##_BC(S, b[j]);                                                                    \
    c0##j = ISA##_FMA(S, a0, bj, c0##j);                                                       \
    c1##j = ISA##_FMA(S, a1, bj, c1##j);
#define UKR_STORE(ISA, S, acc, p)                                                              \
    do {                                                                                       \
        __typeof__(acc) t_ = ISA##_MUL(S, va, acc);                                            \
        if (mode == 1) t_ = ISA##_ADD(S, t_, ISA##_LD(S, p));                                  \
        else if (mode == 2) t_ = ISA##_ADD(S, t_, ISA##_MUL(S, vb, ISA##_LD(S, p)));           \
        ISA##_ST(S, p, t_);                                                                    \
    } while (0);
#define UKR_ST(ISA, S, VL, j) UKR_STORE(ISA, S, c0##j, c + j * ldc) UKR_STORE(ISA, S, c1##j, c + j * ldc + VL)
#define UKR(ISA, S, T, ATTR, VT, VL)                                                           \
    ATTR static void ukr_##ISA##_##S(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, T alpha, T beta) \
    {                                                                                          \
        VT c00 = ISA##_ZERO(S), c01 = c00, c02 = c00, c03 = c00, c04 = c00, c05 = c00;         \
        VT c10 = c00, c11 = c00, c12 = c00, c13 = c00, c14 = c00, c15 = c00;                   \
        for (int64_t p = 0; p < kc; p++, a += 2 * VL, b += 6) {                                \
            VT a0 = ISA##_LDA(S, a), a1 = ISA##_LDA(S, a + VL), bj;                            \
            UKR_COL(ISA, S, 0) UKR_COL(ISA, S, 1) UKR_COL(ISA, S, 2)                           \
            UKR_COL(ISA, S, 3) UKR_COL(ISA, S, 4) UKR_COL(ISA, S, 5)                           \
        }                                                                                      \
        const VT va = ISA##_BC(S, alpha), vb = ISA##_BC(S, beta);                              \
        const int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;                                    \
        UKR_ST(ISA, S, VL, 0) UKR_ST(ISA, S, VL, 1) UKR_ST(ISA, S, VL, 2)                      \
        UKR_ST(ISA, S, VL, 3) UKR_ST(ISA, S, VL, 4) UKR_ST(ISA, S, VL, 5)                      \
    }

/* ---- the direct path's kernels (gemm_kernel.c): NV vectors (of VL rows) by NR columns of C
 * (or of C^T), a side one vector per k step from stride sa, b side broadcast from strides
 * rsb (per k) and csb (per column); C rows rc apart, columns cc apart (rc != 1: stored
 * transposed). PART: the last vector is ragged (rows of the tile: (NV - 1) VL + lastn). ---- */
#define DK_KERNEL(ISA, S, T, ATTR, VT, VL, NV, NR, PART)                                       \
    ATTR static void ISA##_##S##_##NV##_##NR##_##PART(int64_t kc, const T *a, int64_t sa, const T *b, \
                                                     int64_t rsb, int64_t csb, T *c, int64_t rc, \
                                                     int64_t cc, int rows, T alpha, T beta)      \
    {                                                                                          \
        VT acc[NV][NR];                                                                        \
        const int lastn = rows - (NV - 1) * VL;                                                \
        ISA##_MASKDECL(S, lastn)                                                               \
        _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++)                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[v][j] = ISA##_ZERO(S);     \
        for (int64_t p = 0; p < kc; p++, a += sa, b += rsb) {                                  \
            VT av[NV];                                                                         \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                               \
                av[v] = (PART && v == NV - 1) ? ISA##_LDP(S, a + v * VL, lastn) : ISA##_LD(S, a + v * VL); \
            _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++) {                             \
                VT bj = ISA##_BC(S, b[j * csb]);                                               \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                           \
                    acc[v][j] = ISA##_FMA(S, av[v], bj, acc[v][j]);                            \
            }                                                                                  \
        }                                                                                      \
        const VT va = ISA##_BC(S, alpha), vb = ISA##_BC(S, beta);                              \
        const int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;                                    \
        _Pragma("GCC unroll 8") for (int j = 0; j < NR; j++)                                   \
            _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) {                             \
                const int n_ = (PART && v == NV - 1) ? lastn : VL;                             \
                T *cp = c + (int64_t)v * VL * rc + j * cc;                                     \
                VT t = ISA##_MUL(S, va, acc[v][j]), o;                                         \
                if (rc == 1 && n_ == VL) {                                                     \
                    if (mode) {                                                                \
                        o = ISA##_LD(S, cp);                                                   \
                        t = mode == 1 ? ISA##_ADD(S, t, o) : ISA##_ADD(S, t, ISA##_MUL(S, vb, o)); \
                    }                                                                          \
                    ISA##_ST(S, cp, t);                                                        \
                } else if (rc == 1) {                                                          \
                    if (mode) {                                                                \
                        o = ISA##_LDP(S, cp, n_);                                              \
                        t = mode == 1 ? ISA##_ADD(S, t, o) : ISA##_ADD(S, t, ISA##_MUL(S, vb, o)); \
                    }                                                                          \
                    ISA##_STP(S, cp, t, n_);                                                   \
                } else { /* transposed output: lanes ldc apart */                              \
                    T tmp[VL] __attribute__((aligned(64)));                                    \
                    if (mode) {                                                                \
                        for (int l = 0; l < VL; l++) tmp[l] = l < n_ ? cp[l * rc] : 0;         \
                        o = ISA##_LD(S, tmp);                                                  \
                        t = mode == 1 ? ISA##_ADD(S, t, o) : ISA##_ADD(S, t, ISA##_MUL(S, vb, o)); \
                    }                                                                          \
                    ISA##_ST(S, tmp, t);                                                       \
                    for (int l = 0; l < n_; l++) cp[l * rc] = tmp[l];                          \
                }                                                                              \
            }                                                                                  \
    }

/* NV = 1: up to 8 columns (8 accumulators: enough FMAs in flight); NV = 2: up to 6 (12), 8 on
 * AVX-512 (32 registers); each with a full and a ragged last vector */
#define DK_UNPACK(...) __VA_ARGS__
#define DK_CALL(M, ...) M(__VA_ARGS__)
#define DK_NR(X, NV, NR) DK_CALL(DK_KERNEL, DK_UNPACK X, NV, NR, 0) DK_CALL(DK_KERNEL, DK_UNPACK X, NV, NR, 1)
#define DK_NV(X, NV)                                                                           \
    DK_NR(X, NV, 1) DK_NR(X, NV, 2) DK_NR(X, NV, 3) DK_NR(X, NV, 4)                            \
    DK_NR(X, NV, 5) DK_NR(X, NV, 6) DK_NR(X, NV, 7) DK_NR(X, NV, 8)
#define DK_ENT(ISA, S, NV, NR) {ISA##_##S##_##NV##_##NR##_0, ISA##_##S##_##NV##_##NR##_1}
#define DK_ROW(ISA, S, NV)                                                                     \
    {DK_ENT(ISA, S, NV, 1), DK_ENT(ISA, S, NV, 2), DK_ENT(ISA, S, NV, 3), DK_ENT(ISA, S, NV, 4), \
     DK_ENT(ISA, S, NV, 5), DK_ENT(ISA, S, NV, 6), DK_ENT(ISA, S, NV, 7), DK_ENT(ISA, S, NV, 8)}

/* every kernel of one ISA and dtype: the packed micro-kernel, the direct kernels and their table */
#define GEMM_ISA(ISA, S, T, ATTR, VT, VL)                                                      \
    UKR(ISA, S, T, ATTR, VT, VL)                                                               \
    DK_NV((ISA, S, T, ATTR, VT, VL), 1) DK_NV((ISA, S, T, ATTR, VT, VL), 2)                    \
    static const dk_##T ISA##_##S##_tab[2][8][2] = {DK_ROW(ISA, S, 1), DK_ROW(ISA, S, 2)};
GEMM_ISA(GV, f, float, , v4f, 4)
GEMM_ISA(GV, d, double, , v2d, 2)
#if PG_GEMM_X86
GEMM_ISA(AV, ps, float, PG_AVX2, __m256, 8)
GEMM_ISA(AV, pd, double, PG_AVX2, __m256d, 4)
GEMM_ISA(Z, ps, float, PG_AVX512, __m512, 16)
GEMM_ISA(Z, pd, double, PG_AVX512, __m512d, 8)
#endif

#if PG_GEMM_X86
/* ---- AVX-512 f64: the direct path's ragged tiles of exactly 2 rows (the 10-row output layer
 * = 8 + 2) at 128 bits, up to 10 columns: a masked AVX2 vector spends 4 lanes on them, and
 * 8 columns leave its 8 FMA chains latency-bound; here one 128-bit FMA per column and k, 10
 * chains. Per element the same FMA from 0 in increasing k and the same alpha * acc (+ C,
 * + beta * C) as every kernel: the same bits. (Tried and slower on Zen 4: one pass sharing
 * the 8 rows' broadcasts, masked or 128-bit; rows 8-9 of two or four columns in one vector
 * (blends); vectors along n via packing or gathers: docs/gemm.md.) ---- */
#define X2_KERNEL(NR)                                                                          \
    PG_AVX2 static void X2_pd_##NR(int64_t kc, const double *a, int64_t sa, const double *b,   \
                                   int64_t rsb, int64_t csb, double *c, int64_t rc,            \
                                   int64_t cc, int rows, double alpha, double beta)            \
    {                                                                                          \
        __m128d acc[NR];                                                                       \
        (void)rows; /* 2 */                                                                    \
        _Pragma("GCC unroll 10") for (int j = 0; j < NR; j++) acc[j] = _mm_setzero_pd();       \
        for (int64_t p = 0; p < kc; p++, a += sa, b += rsb) {                                  \
            const __m128d av = _mm_loadu_pd(a);                                                \
            _Pragma("GCC unroll 10") for (int j = 0; j < NR; j++)                              \
                acc[j] = _mm_fmadd_pd(av, _mm_set1_pd(b[j * csb]), acc[j]);                    \
        }                                                                                      \
        const __m128d va = _mm_set1_pd(alpha), vb = _mm_set1_pd(beta);                        \
        const int mode = beta == 0 ? 0 : beta == 1 ? 1 : 2;                                    \
        _Pragma("GCC unroll 10") for (int j = 0; j < NR; j++) {                                \
            double *cp = c + j * cc; /* rows rc apart (transposed output: ldc) */              \
            __m128d t = _mm_mul_pd(va, acc[j]), o;                                             \
            if (mode) {                                                                        \
                o = _mm_set_pd(cp[rc], cp[0]);                                                 \
                t = mode == 1 ? _mm_add_pd(t, o) : _mm_add_pd(t, _mm_mul_pd(vb, o));           \
            }                                                                                  \
            _mm_storel_pd(cp, t);                                                              \
            _mm_storeh_pd(cp + rc, t);                                                         \
        }                                                                                      \
    }
X2_KERNEL(1) X2_KERNEL(2) X2_KERNEL(3) X2_KERNEL(4) X2_KERNEL(5)
X2_KERNEL(6) X2_KERNEL(7) X2_KERNEL(8) X2_KERNEL(9) X2_KERNEL(10)
static const dk_double X2_pd_tab[10] = {X2_pd_1, X2_pd_2, X2_pd_3, X2_pd_4, X2_pd_5,
                                        X2_pd_6, X2_pd_7, X2_pd_8, X2_pd_9, X2_pd_10};
#endif

/* Block sizes: the packed A block (MC x KC) stays in L2, a B sliver (KC x NR) in L1, the
 * B panel (KC x NC) in L3. KC is part of the summation order (gemm_internal.h); the direct
 * path's blocks (DK_KC in gemm_kernel.c) are the same 256. Indexed by pg_gemm_ksel. */
/* MR x NR = 2 VL x 6; MC 128 rows in f32, 64 in f64; the direct tiles up to dnr columns */
#define KERN(ISA, S, VL, MC, DNR) {ukr_##ISA##_##S, 2 * (VL), 6, MC, 256, 3072, DNR, ISA##_##S##_tab}
#if PG_GEMM_X86
#define KERNS_X86(S, VL, MC) , KERN(AV, S, VL, MC, 6), KERN(Z, S, 2 * (VL), MC, 8)
#else
#define KERNS_X86(S, VL, MC)
#endif
static const kern_float kerns_float[] = {KERN(GV, f, 4, 128, 6) KERNS_X86(ps, 8, 128)};
static const kern_double kerns_double[] = {KERN(GV, d, 2, 64, 6) KERNS_X86(pd, 4, 64)};
#define KERN_GET(T)                                                                            \
    const kern_##T *pg_gemm_kern_##T(void) { return &kerns_##T[pg_gemm_ksel > 0 ? pg_gemm_ksel : 0]; }
KERN_GET(float)
KERN_GET(double)
/* AVX-512 in use: the AVX2 kernels (the same bits), for ragged rows that fill half a vector */
#if PG_GEMM_X86
#define KERN_HALF(T)                                                                           \
    const kern_##T *pg_gemm_kern_half_##T(void) { return pg_gemm_ksel == 2 ? &kerns_##T[1] : NULL; }
#else
#define KERN_HALF(T)                                                                           \
    const kern_##T *pg_gemm_kern_half_##T(void) { return NULL; }
#endif
KERN_HALF(float)
KERN_HALF(double)

/* AVX-512 in use: the 2-row f64 kernels (X2_KERNEL) by columns (1 to 10); else NULL */
const dk_double *pg_gemm_kern_two_double(void)
{
#if PG_GEMM_X86
    return pg_gemm_ksel == 2 ? X2_pd_tab : NULL;
#else
    return NULL;
#endif
}
const dk_float *pg_gemm_kern_two_float(void) { return NULL; }

int pg_gemm_ksel = -1;
int pg_gemm_intel = 0;

/* the widest SIMD level this CPU runs, at most `want` (GEMM kernels, Adam) */
int pg_cpu_simd(int want)
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
    pg_gemm_ksel = pg_cpu_simd(which < 0 ? 2 : which);
#if PG_GEMM_X86
    pg_gemm_intel = __builtin_cpu_is("intel"); /* the direct path's limits differ (gemm_kernel.c) */
#endif
    return pg_gemm_ksel;
}
/* clang-format on */
