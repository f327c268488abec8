/* Built-in blocked GEMM (GotoBLAS / BLIS structure), used when no BLAS was handed in.
 *
 *   for jc over n in NC columns:                   B panel  (kc x nc) -> packed, NR-column slivers
 *     for pc over k in KC:                         first k block applies beta, later ones add
 *       for ic over m in MC rows:                  A block  (mc x kc) -> packed, MR-row slivers
 *         for jr over nc in NR, ir over mc in MR:  micro-kernel: MR x NR tile held in registers
 *
 * Packing absorbs the transposes and the leading dimensions, and pads ragged slivers with
 * zeros; a ragged tile of C goes through a small scratch tile, so the micro-kernel always runs
 * the same instructions. Problems whose operands fit in about 4 MiB take the direct path
 * instead (further down: no packing of B, no allocation, masked ragged rows, vectors along n
 * for thin m), which sums every element exactly as this one does: the two paths give identical
 * bits (the summation order: gemm_internal.h). The micro-kernels and their selection are in
 * gemm_ukernel.c; ag_set_threads(n) splits large products over n threads by rows or columns of
 * C, never k (gemm_pool.c): the same bits for every n. */
#include "gemm_internal.h"

#define MAX_MR 32
#define MAX_NR 6

/* ---- packing ----
 * A block op(A)[i0 : i0+mc, p0 : p0+kc] -> slivers of mr rows: ap[s*kc*mr + p*mr + i].
 * B panel op(B)[p0 : p0+kc, j0 : j0+nc] -> slivers of nr columns: bp[s*kc*nr + p*nr + j]: the
 * same as packing op(B)^T's rows, with the transpose flag flipped (pack_a(!tb, ...)). */
/* pack_a's whole slivers over the columns [pb, pe) of a block: MR a constant where it can be,
 * so each column's copy unrolls */
#define PACK_COLS 16
#define PACK_RUN(MR)                                                                               \
    for (; ir < full; ir += (MR), sl += kc * (MR))                                                 \
        for (int64_t p = pb; p < pe; p++)                                                          \
            for (int i = 0; i < (MR); i++) sl[p * (MR) + i] = a[i0 + ir + (p0 + p) * lda + i]

#define GEMM_PACK(T)                                                                               \
    /* rows [i, rows) of an mr-row sliver of op(A) = A^T (i0: the sliver's first row), then   \
     * zero rows up to mr when padding */    \
    static void pack_at_rows_##T(const T *a, int64_t lda, int64_t i0, int64_t p0, int64_t i,       \
                                 int64_t rows, int64_t kc, int mr, T *ap, int pad)                 \
    {                                                                                              \
        for (; i < rows; i++) {                                                                    \
            const T *src = a + p0 + (i0 + i) * lda;                                                \
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = src[p];                              \
        }                                                                                          \
        for (; pad && i < mr; i++)                                                                 \
            for (int64_t p = 0; p < kc; p++) ap[p * mr + i] = 0;                                   \
    }                                                                                              \
    static void pack_a_##T(int ta, const T *a, int64_t lda, int64_t i0, int64_t p0, int64_t mc,    \
                           int64_t kc, int mr, T *ap, int pad)                                     \
    {                                                                                              \
        if (ta) {                                                                                  \
            for (int64_t ir = 0; ir < mc; ir += mr, ap += kc * mr)                                 \
                pack_at_rows_##T(a, lda, i0 + ir, p0, 0, mc - ir < mr ? mc - ir : mr, kc, mr, ap,  \
                                 pad);                                                             \
            return;                                                                                \
        }                                                                                          \
        /* PACK_COLS columns at a time, sliver by sliver: the block's columns stay in L1 while \
         * its slivers read them in turn (whole slivers one after another read mr elements a   \
         * column, lda apart: a cache miss each, past the prefetchers) and every sliver's      \
         * writes stay one run */   \
        const int64_t full = mc / mr * mr;                                                         \
        for (int64_t pb = 0; pb < kc; pb += PACK_COLS) {                                           \
            const int64_t pe = kc - pb < PACK_COLS ? kc : pb + PACK_COLS;                          \
            T *sl = ap;                                                                            \
            int64_t ir = 0;                                                                        \
            if (mr == 6) PACK_RUN(6);                                                              \
            else if (mr == 8) PACK_RUN(8);                                                         \
            else if (mr == 16) PACK_RUN(16);                                                       \
            else if (mr == 32) PACK_RUN(32);                                                       \
            else PACK_RUN(mr);                                                                     \
            for (int64_t p = pb; ir < mc && p < pe; p++) { /* a ragged last sliver */              \
                const T *src = a + i0 + ir + (p0 + p) * lda;                                       \
                int64_t i = 0;                                                                     \
                for (; i < mc - ir; i++) sl[p * mr + i] = src[i];                                  \
                for (; i < mr; i++) sl[p * mr + i] = 0;                                            \
            }                                                                                      \
        }                                                                                          \
    }
GEMM_PACK(float)
GEMM_PACK(double)

#if PG_GEMM_X86
/* f32 op(A) = A^T (the dX = W^T G of a layer's backward): the portable packing above writes
 * each source row with a stride of mr floats; here 8 x 8 blocks go through registers
 * (an AVX2 transpose; f64 4 x 4): as fast as the non-transposed product (docs/gemm.md). Same
 * values in the same places: no change in results. */
PG_AVX2 static inline void transpose_block_float(const float *s, int64_t lda, float *d, int64_t mr)
{
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + lda);
    __m256 r2 = _mm256_loadu_ps(s + 2 * lda), r3 = _mm256_loadu_ps(s + 3 * lda);
    __m256 r4 = _mm256_loadu_ps(s + 4 * lda), r5 = _mm256_loadu_ps(s + 5 * lda);
    __m256 r6 = _mm256_loadu_ps(s + 6 * lda), r7 = _mm256_loadu_ps(s + 7 * lda);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(d + mr, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(d + 2 * mr, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(d + 3 * mr, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(d + 4 * mr, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(d + 5 * mr, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(d + 6 * mr, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(d + 7 * mr, _mm256_permute2f128_ps(u3, u7, 0x31));
}
PG_AVX2 static inline void transpose_block_double(const double *s, int64_t lda, double *d,
                                                  int64_t mr)
{
    __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + lda);
    __m256d r2 = _mm256_loadu_pd(s + 2 * lda), r3 = _mm256_loadu_pd(s + 3 * lda);
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(d + mr, _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(d + 2 * mr, _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(d + 3 * mr, _mm256_permute2f128_pd(t1, t3, 0x31));
}
/* op(A) = A^T: BL x BL blocks (BL rows, BL k steps) through transpose_block, the k tail and
 * the rows past the last whole block element by element */
#define GEMM_PACK_AT(T, BL)                                                                        \
    PG_AVX2 static void pack_at_##T##_avx2(const T *a, int64_t lda, int64_t i0, int64_t p0,        \
                                           int64_t mc, int64_t kc, int mr, T *ap, int pad)         \
    {                                                                                              \
        for (int64_t ir = 0; ir < mc; ir += mr, ap += kc * mr) {                                   \
            int64_t rows = mc - ir < mr ? mc - ir : mr, i = 0;                                     \
            for (; i + BL <= rows; i += BL) {                                                      \
                const T *s = a + p0 + (i0 + ir + i) * lda;                                         \
                int64_t p = 0;                                                                     \
                for (; p + BL <= kc; p += BL)                                                      \
                    transpose_block_##T(s + p, lda, ap + p * mr + i, mr);                          \
                for (; p < kc; p++)                                                                \
                    for (int q = 0; q < BL; q++) ap[p * mr + i + q] = s[q * lda + p];              \
            }                                                                                      \
            pack_at_rows_##T(a, lda, i0 + ir, p0, i, rows, kc, mr, ap, pad);                       \
        }                                                                                          \
    }
GEMM_PACK_AT(float, 8)
GEMM_PACK_AT(double, 4)
#define PACK_A(T, ta, a, lda, i0, p0, mc, kc, mr, ap, pad)                                         \
    ((ta) && pg_gemm_ksel >= 1 ? pack_at_##T##_avx2(a, lda, i0, p0, mc, kc, mr, ap, pad)           \
                               : pack_a_##T(ta, a, lda, i0, p0, mc, kc, mr, ap, pad))
#else
#define PACK_A(T, ta, a, lda, i0, p0, mc, kc, mr, ap, pad)                                         \
    pack_a_##T(ta, a, lda, i0, p0, mc, kc, mr, ap, pad)
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
 * The kernels: gemm_ukernel.c (DK_KERNEL).
 *
 * Summation: every element is the micro-kernels' one, exactly: acc = 0, acc = fma(a, b, acc)
 * over the k block in increasing k (portable: acc = acc + a * b), blocks of the same KC, then
 * C = alpha * acc (+ C, + beta * C on the first block; + C on later ones), with the same
 * operations (fma and products are commutative bit for bit, so the swapped roles change
 * nothing). The direct and the blocked paths therefore give identical bits for every shape
 * and layout (AVX2 and AVX-512 too, as their blocked kernels do); which path runs is only a
 * matter of speed. */
#define DK_KC 256 /* the kc of every kernel table (gemm_ukernel.c): part of the summation order */

/* Roles swapped (vectors along n) when that needs fewer vector FMAs, counting a packed
 * (transposed) element as 0.25 of one in f32, 0.7 in f64 (4 x 4 transposes), and an element
 * stored transposed as 2: the a side is packed when it is op(A) = A^T unswapped or op(B) = B
 * (not transposed) swapped. Fitted on Zen 5 (docs/gemm.md); shape and vector length only. */
static int direct_swap(int ta, int tb, int64_t m, int64_t n, int64_t k, int vl, size_t es)
{
    const double pack = es == 4 ? 0.25 : 0.7, tr = 2;
    double keep = (double)((m + vl - 1) / vl) * (double)n * (double)k +
        (ta ? pack * (double)m * (double)k : 0);
    double swap = (double)((n + vl - 1) / vl) * (double)m * (double)k +
        (!tb ? pack * (double)n * (double)k : 0) + tr * (double)m * (double)n;
    return swap < keep;
}

/* Whether the direct path copies an in-place a side (one row tile, one k block) to the stack
 * first: its columns, sa bytes apart, fall on few of L1's 64 sets when sa is a multiple of
 * 1-4 KiB (an FFN's 1024-row weight, f64 256 rows), and every column tile of the row tile
 * then reads it from L2 again. The copy costs about one more pass, so it pays from 8 column
 * tiles at 2 sets or fewer, from 32 at 4 (Zen 3, AVX2: docs/gemm.md). Same values: same bits. */
static int direct_aliases(int64_t sa, int64_t cols, int nr)
{
    int64_t g = 4096, r = sa % g; /* g: gcd(sa, 4096), Euclid */
    while (r) {
        int64_t t = g % r;
        g = r, r = t;
    }
    int64_t sets = 4096 / g, tiles = (cols + nr - 1) / nr;
    return (sets <= 2 && tiles >= 8) || (sets <= 4 && tiles >= 32);
}

/* One row tile of the direct path across all S columns, with kernels ktab (a row of a kernel
 * table: one NV) in balanced column tiles (10 = 5 + 5, not 8 + 2: few accumulators stall). */
#define DK_COLS(ktab, prt, nrmax, ar, crow, nrows)                                                 \
    do {                                                                                           \
        int64_t nt = (S + nrmax - 1) / nrmax, q = S / nt, rem = S % nt;                            \
        for (int64_t t = 0, s0 = 0; t < nt; t++) {                                                 \
            int cols = (int)(q + (t < rem));                                                       \
            (ktab)[cols - 1][prt](kc, ar, sar, bs + pc * rsb + s0 * csb, rsb, csb,                 \
                                  (crow) + s0 * cc, rc, cc, nrows, alpha, bet);                    \
            s0 += cols;                                                                            \
        }                                                                                          \
    } while (0)

/* DK_COLS with a kernel row indexed by columns only (no ragged flag) */
#define DK_COLS1(krow, nrmax, ar, crow, nrows)                                                     \
    do {                                                                                           \
        int64_t nt = (S + nrmax - 1) / nrmax, q = S / nt, rem = S % nt;                            \
        for (int64_t t = 0, s0 = 0; t < nt; t++) {                                                 \
            int cols = (int)(q + (t < rem));                                                       \
            (krow)[cols - 1](kc, ar, sar, bs + pc * rsb + s0 * csb, rsb, csb, (crow) + s0 * cc,    \
                             rc, cc, nrows, alpha, bet);                                           \
            s0 += cols;                                                                            \
        }                                                                                          \
    } while (0)

/* The direct path over the whole product: k blocks of DK_KC (beta on the first), tiles of up
 * to 2 VL rows (of the output, or of its transpose when swapped) by up to 8 / dnr columns. */
#define GEMM_DIRECT(T)                                                                             \
    static void gemm_direct_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha,          \
                                const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,    \
                                int64_t ldc)                                                       \
    {                                                                                              \
        const kern_##T *kr = pg_gemm_kern_##T(), *kh = pg_gemm_kern_half_##T();                    \
        const dk_##T *k2 = pg_gemm_kern_two_##T(); /* NULL but for f64 under AVX-512 */            \
        const int vl = kr->mr / 2;                                                                 \
        const dk_##T(*tab)[8][2] = kr->dk;                                                         \
        int swap = direct_swap(ta, tb, m, n, k, vl, sizeof(T));                                    \
        int64_t R, S, sa, rsb, csb, rc, cc;                                                        \
        const T *as, *bs;                                                                          \
        if (!swap) {                                                                               \
            R = m, S = n, as = a, sa = lda, bs = b, rc = 1, cc = ldc;                              \
            rsb = tb ? ldb : 1, csb = tb ? 1 : ldb;                                                \
        } else {                                                                                   \
            R = n, S = m, as = b, sa = ldb, bs = a, rc = ldc, cc = 1;                              \
            rsb = ta ? 1 : lda, csb = ta ? lda : 1;                                                \
        }                                                                                          \
        const int pack = swap ? !tb : ta, mrv = 2 * vl, nr2 = kr->dnr;                             \
        const T *pk = swap ? b : a;                                                                \
        const int64_t ldp = swap ? ldb : lda;                                                      \
        unsigned char buf_[32 * DK_KC * 4 + 64]; /* 2 VL rows x KC: 32 KiB either type */          \
        const int copy = !pack && direct_aliases(sa * (int64_t)sizeof(T), S, nr2);                 \
        T *buf = (T *)(((uintptr_t)buf_ + 63) & ~(uintptr_t)63);                                   \
        /* copied a side: two row tiles a copy where they fit (AVX2), each column read in one  \
         * run of 2 VL rows, not two runs lda apart (a cache miss each) */   \
        const int64_t group = (int64_t)(2 * mrv * DK_KC * sizeof(T)) <= 32 * DK_KC * 4 ? 2 : 1;    \
        for (int64_t pc = 0; pc < k; pc += DK_KC) {                                                \
            int64_t kc = k - pc < DK_KC ? k - pc : DK_KC;                                          \
            T bet = pc == 0 ? beta : (T)1;                                                         \
            for (int64_t r0 = 0; r0 < R; r0 += mrv) {                                              \
                int rows = (int)(R - r0 < mrv ? R - r0 : mrv);                                     \
                /* under AVX-512, ragged rows filling at most half a vector run at half width   \
                 * (AVX2 kernels, a second pass; 2 f64 rows after others at 128 bits,        \
                 * X2_KERNEL: a product of 2 rows alone ran faster on the AVX2 one): 10 f64    \
                 * rows cost 1.5 vector FMAs, not 2 */  \
                int half = kh && rows % vl && rows % vl <= vl / 2 ? rows % vl : 0;                 \
                int main_ = rows - half;                                                           \
                int nv = main_ > vl ? 2 : 1, part = main_ % vl != 0, nrmax = nv == 2 ? nr2 : 8;    \
                const T *ar;                                                                       \
                int64_t sar = sa;                                                                  \
                if (pack) {                                                                        \
                    PACK_A(T, 1, pk, ldp, r0, pc, rows, kc, mrv, buf, 0);                          \
                    ar = buf, sar = mrv;                                                           \
                } else if (copy) { /* group row tiles at a time, the first of them copies */       \
                    int64_t g = (r0 / mrv) % group;                                                \
                    if (g == 0)                                                                    \
                        pack_a_##T(0, as, sa, r0, pc, R - r0 < group * mrv ? R - r0 : group * mrv, \
                                   kc, mrv, buf, 0);                                               \
                    ar = buf + g * kc * mrv, sar = mrv;                                            \
                } else ar = as + r0 + pc * sa;                                                     \
                if (main_) DK_COLS(tab[nv - 1], part, nrmax, ar, c + r0 * rc, main_);              \
                if (half == 2 && k2 && r0 + main_ > 0)                                             \
                    DK_COLS1(k2, 10, ar + main_, c + (r0 + main_) * rc, half);                     \
                else if (half)                                                                     \
                    DK_COLS(kh->dk[0], half < vl / 2, 8, ar + main_, c + (r0 + main_) * rc, half); \
            }                                                                                      \
        }                                                                                          \
    }
GEMM_DIRECT(float)
GEMM_DIRECT(double)

/* The direct path for everything whose operands and result fit in about 4 MiB, where it beats
 * packing; beyond, B must be streamed from further out and packing wins (docs/gemm.md). With
 * the AVX2 kernel (8 f64 / 16 f32 rows a tile), also not where op(B) = B^T is broadcast
 * unswapped from rows 128 KiB or more apart over a k block (dW = G X^T of wide layers): each
 * row tile walks that span again, and packing B once was 1.1-1.6x faster there. On AVX-512,
 * twice the rows a tile, AMD's Zen lost nothing; an Intel Xeon (Emerald Rapids) did, from 8
 * row tiles (m >= 16 vectors) on and once the row tiles re-walk 3 MiB or more of B in all
 * (below that the direct path was 1.1-1.2x faster there: 256 x 256 from k 128, f32).
 * Speed only: both paths give the same bits. */
static int path_sel = -1; /* pg_gemm_path_select: -1 by size, 0 packed, 1 direct */
int pg_gemm_path_select(int which)
{
    path_sel = which < 0 ? -1 : which > 1 ? 1 : which;
    return path_sel;
}
static int direct_pays(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t ldb, size_t es,
                       int vl)
{
    if (path_sel >= 0) return path_sel;
    double span = (double)(k < DK_KC ? k : DK_KC) * (double)ldb * (double)es;
    int rewalks = pg_gemm_ksel == 1 ||
        (pg_gemm_ksel == 2 && pg_gemm_intel && m >= 16 * vl &&
         (double)m / (2 * vl) * span >= 3145728.0);
    if (rewalks && tb && span >= 131072.0 && !direct_swap(ta, tb, m, n, k, vl, es)) return 0;
    return ((double)m * (double)k + (double)k * (double)n + (double)m * (double)n) * (double)es <=
        4194304.0;
}

/* The packed path, single-threaded. Returns 0, or -1 (nothing written) when the packing
 * buffers cannot be allocated. Each call allocates its own buffers: threads share none. */
#define GEMM_PACKED(T)                                                                             \
    static int gemm_packed_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha,           \
                               const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,     \
                               int64_t ldc)                                                        \
    {                                                                                              \
        const kern_##T *kr = pg_gemm_kern_##T();                                                   \
        const int mr = kr->mr, nr = kr->nr;                                                        \
        int64_t kc_max = k < kr->kc ? k : kr->kc;                                                  \
        int64_t mc_max = round_up(m < kr->mc ? m : kr->mc, mr);                                    \
        int64_t nc_max = round_up(n < kr->nc ? n : kr->nc, nr);                                    \
        int64_t a_len = round_up(mc_max * kc_max, 64 / (int64_t)sizeof(T));                        \
        size_t bytes = (size_t)(a_len + nc_max * kc_max) * sizeof(T) + 64;                         \
        void *raw = malloc(bytes);                                                                 \
        if (!raw) return -1;                                                                       \
        T *ap = (T *)(((uintptr_t)raw + 63) & ~(uintptr_t)63), *bp = ap + a_len;                   \
        T tile[MAX_MR * MAX_NR];                                                                   \
        memset(tile, 0, sizeof(T) * (size_t)(mr * nr)); /* rows past a ragged edge: defined */     \
        for (int64_t jc = 0; jc < n; jc += kr->nc) {                                               \
            int64_t nc = n - jc < kr->nc ? n - jc : kr->nc;                                        \
            for (int64_t pc = 0; pc < k; pc += kr->kc) {                                           \
                int64_t kc = k - pc < kr->kc ? k - pc : kr->kc;                                    \
                T bet = pc == 0 ? beta : (T)1;                                                     \
                pack_a_##T(!tb, b, ldb, jc, pc, nc, kc, nr, bp, 1); /* op(B)^T's rows */           \
                for (int64_t ic = 0; ic < m; ic += kr->mc) {                                       \
                    int64_t mc = m - ic < kr->mc ? m - ic : kr->mc;                                \
                    PACK_A(T, ta, a, lda, ic, pc, mc, kc, mr, ap, 1);                              \
                    for (int64_t jr = 0; jr < nc; jr += nr) {                                      \
                        int64_t cols = nc - jr < nr ? nc - jr : nr;                                \
                        for (int64_t ir = 0; ir < mc; ir += mr) {                                  \
                            int64_t rows = mc - ir < mr ? mc - ir : mr;                            \
                            T *cc = c + (ic + ir) + (jc + jr) * ldc;                               \
                            const T *as = ap + ir * kc, *bs = bp + jr * kc;                        \
                            if (rows == mr && cols == nr) {                                        \
                                kr->ukr(kc, as, bs, cc, ldc, alpha, bet);                          \
                                continue;                                                          \
                            }                                                                      \
                            /* ragged tile: same kernel on a scratch tile, then copy out */        \
                            if (bet != 0)                                                          \
                                for (int64_t j = 0; j < cols; j++)                                 \
                                    memcpy(tile + j * mr, cc + j * ldc, (size_t)rows * sizeof(T)); \
                            kr->ukr(kc, as, bs, tile, mr, alpha, bet);                             \
                            for (int64_t j = 0; j < cols; j++)                                     \
                                memcpy(cc + j * ldc, tile + j * mr, (size_t)rows * sizeof(T));     \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        free(raw);                                                                                 \
        return 0;                                                                                  \
    }
GEMM_PACKED(float)
GEMM_PACKED(double)

/* One product, single-threaded: the direct or the packed path (identical bits); and the
 * built-in kernel's entry (k > 0, returns 0): split over threads where that pays (gemm_pool.c)
 * in units of whole tiles of the path that runs: MR rows (either path), else columns: the
 * packed NR, the direct path's column tile, or MR when it swaps roles (vectors along n). */
#define GEMM_ENTRY(T, DT)                                                                          \
    void pg_gemm_one_##T(int direct, int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha,     \
                         const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,           \
                         int64_t ldc)                                                              \
    {                                                                                              \
        if (!direct && gemm_packed_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0) \
            return;                                                                                \
        gemm_direct_##T(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                     \
    }                                                                                              \
    int pg_gemm_blocked_##T(int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T *a,  \
                            int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc)       \
    {                                                                                              \
        if (pg_gemm_ksel < 0) pg_gemm_kernel_select(-1);                                           \
        int direct = direct_pays(ta, tb, m, n, k, ldb, sizeof(T), pg_gemm_kern_##T()->mr / 2);     \
        if (pg_get_threads() > 1) {                                                                \
            const kern_##T *kr = pg_gemm_kern_##T();                                               \
            int by_cols = n > m, mr = kr->mr;                                                      \
            int64_t unit = !by_cols                               ? mr                             \
                : !direct                                         ? kr->nr                         \
                : direct_swap(ta, tb, m, n, k, mr / 2, sizeof(T)) ? mr                             \
                                                                  : kr->dnr;                       \
            gemm_job j = {DT,  direct, ta,  tb,   by_cols, 0,    m, n, k,                          \
                          lda, ldb,    ldc, unit, alpha,   beta, a, b, c};                         \
            if (pg_gemm_split(&j)) return 0;                                                       \
        }                                                                                          \
        pg_gemm_one_##T(direct, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);             \
        return 0;                                                                                  \
    }
GEMM_ENTRY(float, PG_DTYPE_F32)
GEMM_ENTRY(double, PG_DTYPE_F64)
