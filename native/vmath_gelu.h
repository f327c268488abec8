/* The GELU's AVX2 and AVX-512 loops, included once from vmath_kern.h at each level (its vector
 * types, cores and VMATH_LOOP / VMATH_LOOP_BW in scope). A vector with lanes in erfc's other
 * regions ran all three regions' polynomials and divisions: 5.6x an exp per element on N(0, 1)
 * inputs. Here every lane takes the first region's core, and the few lanes outside it (packed
 * with AVX-512's compress or AVX2's permutation from a table, their indices kept) go through the
 * full core afterwards, whole vectors of them at a time. Each element's operations are those of
 * the full core: the same bits. */
#define GELU_CHUNK 1024 /* elements per pass: the packed lanes stay on the stack */

#if VBYTES == 64
/* the lanes of v (and g) where k is set, packed at ox (og), their indices base + lane at oi */
ATTR static inline __attribute__((always_inline)) int F(pack_f32)(unsigned k, vs v, vs g, int base,
                                                                  float *ox, float *og, int *oi)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_storeu_ps(ox, _mm512_maskz_compress_ps((__mmask16)k, (__m512)v));
    if (og) _mm512_storeu_ps(og, _mm512_maskz_compress_ps((__mmask16)k, (__m512)g));
    _mm512_storeu_si512(
        oi,
        _mm512_maskz_compress_epi32((__mmask16)k, _mm512_add_epi32(lane, _mm512_set1_epi32(base))));
    return __builtin_popcount(k);
}
ATTR static inline __attribute__((always_inline)) int F(pack_f64)(unsigned k, vd v, vd g, int base,
                                                                  double *ox, double *og, int *oi)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm512_storeu_pd(ox, _mm512_maskz_compress_pd((__mmask8)k, (__m512d)v));
    if (og) _mm512_storeu_pd(og, _mm512_maskz_compress_pd((__mmask8)k, (__m512d)g));
    const __m512i idx = _mm512_cvtepi32_epi64(_mm256_add_epi32(lane, _mm256_set1_epi32(base)));
    _mm256_storeu_si256((__m256i *)oi,
                        _mm512_cvtepi64_epi32(_mm512_maskz_compress_epi64((__mmask8)k, idx)));
    return __builtin_popcount(k);
}
/* the lanes outside the first region: a comparison mask's zero lanes */
#define OUT_F32(m) _mm512_cmpeq_epi32_mask((__m512i)(m), _mm512_setzero_si512())
#define OUT_F64(m) _mm512_cmpeq_epi64_mask((__m512i)(m), _mm512_setzero_si512())
#else /* AVX2: no compress instruction; a permutation from a table packs the lanes */
/* entry k: the lanes of k's set bits in ascending order, a byte each (zeros after them) */
static const uint64_t gelu_pack_lut[256] = {
    0x0000000000000000, 0x0000000000000000, 0x0000000000000001, 0x0000000000000100,
    0x0000000000000002, 0x0000000000000200, 0x0000000000000201, 0x0000000000020100,
    0x0000000000000003, 0x0000000000000300, 0x0000000000000301, 0x0000000000030100,
    0x0000000000000302, 0x0000000000030200, 0x0000000000030201, 0x0000000003020100,
    0x0000000000000004, 0x0000000000000400, 0x0000000000000401, 0x0000000000040100,
    0x0000000000000402, 0x0000000000040200, 0x0000000000040201, 0x0000000004020100,
    0x0000000000000403, 0x0000000000040300, 0x0000000000040301, 0x0000000004030100,
    0x0000000000040302, 0x0000000004030200, 0x0000000004030201, 0x0000000403020100,
    0x0000000000000005, 0x0000000000000500, 0x0000000000000501, 0x0000000000050100,
    0x0000000000000502, 0x0000000000050200, 0x0000000000050201, 0x0000000005020100,
    0x0000000000000503, 0x0000000000050300, 0x0000000000050301, 0x0000000005030100,
    0x0000000000050302, 0x0000000005030200, 0x0000000005030201, 0x0000000503020100,
    0x0000000000000504, 0x0000000000050400, 0x0000000000050401, 0x0000000005040100,
    0x0000000000050402, 0x0000000005040200, 0x0000000005040201, 0x0000000504020100,
    0x0000000000050403, 0x0000000005040300, 0x0000000005040301, 0x0000000504030100,
    0x0000000005040302, 0x0000000504030200, 0x0000000504030201, 0x0000050403020100,
    0x0000000000000006, 0x0000000000000600, 0x0000000000000601, 0x0000000000060100,
    0x0000000000000602, 0x0000000000060200, 0x0000000000060201, 0x0000000006020100,
    0x0000000000000603, 0x0000000000060300, 0x0000000000060301, 0x0000000006030100,
    0x0000000000060302, 0x0000000006030200, 0x0000000006030201, 0x0000000603020100,
    0x0000000000000604, 0x0000000000060400, 0x0000000000060401, 0x0000000006040100,
    0x0000000000060402, 0x0000000006040200, 0x0000000006040201, 0x0000000604020100,
    0x0000000000060403, 0x0000000006040300, 0x0000000006040301, 0x0000000604030100,
    0x0000000006040302, 0x0000000604030200, 0x0000000604030201, 0x0000060403020100,
    0x0000000000000605, 0x0000000000060500, 0x0000000000060501, 0x0000000006050100,
    0x0000000000060502, 0x0000000006050200, 0x0000000006050201, 0x0000000605020100,
    0x0000000000060503, 0x0000000006050300, 0x0000000006050301, 0x0000000605030100,
    0x0000000006050302, 0x0000000605030200, 0x0000000605030201, 0x0000060503020100,
    0x0000000000060504, 0x0000000006050400, 0x0000000006050401, 0x0000000605040100,
    0x0000000006050402, 0x0000000605040200, 0x0000000605040201, 0x0000060504020100,
    0x0000000006050403, 0x0000000605040300, 0x0000000605040301, 0x0000060504030100,
    0x0000000605040302, 0x0000060504030200, 0x0000060504030201, 0x0006050403020100,
    0x0000000000000007, 0x0000000000000700, 0x0000000000000701, 0x0000000000070100,
    0x0000000000000702, 0x0000000000070200, 0x0000000000070201, 0x0000000007020100,
    0x0000000000000703, 0x0000000000070300, 0x0000000000070301, 0x0000000007030100,
    0x0000000000070302, 0x0000000007030200, 0x0000000007030201, 0x0000000703020100,
    0x0000000000000704, 0x0000000000070400, 0x0000000000070401, 0x0000000007040100,
    0x0000000000070402, 0x0000000007040200, 0x0000000007040201, 0x0000000704020100,
    0x0000000000070403, 0x0000000007040300, 0x0000000007040301, 0x0000000704030100,
    0x0000000007040302, 0x0000000704030200, 0x0000000704030201, 0x0000070403020100,
    0x0000000000000705, 0x0000000000070500, 0x0000000000070501, 0x0000000007050100,
    0x0000000000070502, 0x0000000007050200, 0x0000000007050201, 0x0000000705020100,
    0x0000000000070503, 0x0000000007050300, 0x0000000007050301, 0x0000000705030100,
    0x0000000007050302, 0x0000000705030200, 0x0000000705030201, 0x0000070503020100,
    0x0000000000070504, 0x0000000007050400, 0x0000000007050401, 0x0000000705040100,
    0x0000000007050402, 0x0000000705040200, 0x0000000705040201, 0x0000070504020100,
    0x0000000007050403, 0x0000000705040300, 0x0000000705040301, 0x0000070504030100,
    0x0000000705040302, 0x0000070504030200, 0x0000070504030201, 0x0007050403020100,
    0x0000000000000706, 0x0000000000070600, 0x0000000000070601, 0x0000000007060100,
    0x0000000000070602, 0x0000000007060200, 0x0000000007060201, 0x0000000706020100,
    0x0000000000070603, 0x0000000007060300, 0x0000000007060301, 0x0000000706030100,
    0x0000000007060302, 0x0000000706030200, 0x0000000706030201, 0x0000070603020100,
    0x0000000000070604, 0x0000000007060400, 0x0000000007060401, 0x0000000706040100,
    0x0000000007060402, 0x0000000706040200, 0x0000000706040201, 0x0000070604020100,
    0x0000000007060403, 0x0000000706040300, 0x0000000706040301, 0x0000070604030100,
    0x0000000706040302, 0x0000070604030200, 0x0000070604030201, 0x0007060403020100,
    0x0000000000070605, 0x0000000007060500, 0x0000000007060501, 0x0000000706050100,
    0x0000000007060502, 0x0000000706050200, 0x0000000706050201, 0x0000070605020100,
    0x0000000007060503, 0x0000000706050300, 0x0000000706050301, 0x0000070605030100,
    0x0000000706050302, 0x0000070605030200, 0x0000070605030201, 0x0007060503020100,
    0x0000000007060504, 0x0000000706050400, 0x0000000706050401, 0x0000070605040100,
    0x0000000706050402, 0x0000070605040200, 0x0000070605040201, 0x0007060504020100,
    0x0000000706050403, 0x0000070605040300, 0x0000070605040301, 0x0007060504030100,
    0x0000070605040302, 0x0007060504030200, 0x0007060504030201, 0x0706050403020100,
};
/* the lanes of v (and g) where k is set, packed at ox (og), their indices base + lane at oi; each
 * store writes a whole vector, which the buffers' W spare elements hold */
ATTR static inline __attribute__((always_inline)) int F(pack_f32)(unsigned k, vs v, vs g, int base,
                                                                  float *ox, float *og, int *oi)
{
    const __m256i p = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)gelu_pack_lut[k]));
    _mm256_storeu_ps(ox, _mm256_permutevar8x32_ps((__m256)v, p));
    if (og) _mm256_storeu_ps(og, _mm256_permutevar8x32_ps((__m256)g, p));
    _mm256_storeu_si256((__m256i *)oi, _mm256_add_epi32(p, _mm256_set1_epi32(base)));
    return __builtin_popcount(k);
}
/* a double is two 32-bit halves: lane l's are 2l and 2l + 1, so mask bit l becomes bits 2l, 2l + 1 */
ATTR static inline __attribute__((always_inline)) int F(pack_f64)(unsigned k, vd v, vd g, int base,
                                                                  double *ox, double *og, int *oi)
{
    static const unsigned char halves[16] = {0,   3,   12,  15,  48,  51,  60,  63,
                                             192, 195, 204, 207, 240, 243, 252, 255};
    const __m256i p = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)gelu_pack_lut[halves[k]]));
    _mm256_storeu_pd(ox, (__m256d)_mm256_permutevar8x32_ps((__m256)v, p));
    if (og) _mm256_storeu_pd(og, (__m256d)_mm256_permutevar8x32_ps((__m256)g, p));
    const __m128i q = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)gelu_pack_lut[k]));
    _mm_storeu_si128((__m128i *)oi, _mm_add_epi32(q, _mm_set1_epi32(base)));
    return __builtin_popcount(k);
}
#define OUT_F32(m) (~(unsigned)_mm256_movemask_ps((__m256)(m)) & 0xffu)
#define OUT_F64(m) (~(unsigned)_mm256_movemask_pd((__m256d)(m)) & 0xfu)
#endif

/* y = gelu(x): the first region's core on whole vectors, the packed lanes after each chunk, the
 * zero-padded tail through the full core (VMATH_LOOP's) */
#define VMATH_GELU(NAME, T, VT, W, IN_A, CORE_A, CORE, OUT, PACK)                                  \
    __attribute__((noinline)) VMATH_LOOP(NAME##_full, T, VT, W, CORE) ATTR static void F(NAME)(    \
        const T *x, T *y, int64_t n)                                                               \
    {                                                                                              \
        static _Thread_local T ox[GELU_CHUNK + (W)];                                               \
        static _Thread_local int oi[GELU_CHUNK + (W)];                                             \
        for (int64_t c = 0; c < n; c += GELU_CHUNK) {                                              \
            const int m = (int)(n - c < GELU_CHUNK ? n - c : GELU_CHUNK);                          \
            int i = 0, no = 0;                                                                     \
            VT v;                                                                                  \
            for (; i + (W) <= m; i += (W)) {                                                       \
                memcpy(&v, x + c + i, sizeof v);                                                   \
                const unsigned k = OUT(IN_A(v));                                                   \
                if (k) no += PACK(k, v, v, i, ox + no, NULL, oi + no);                             \
                v = CORE_A(v);                                                                     \
                memcpy(y + c + i, &v, sizeof v);                                                   \
            }                                                                                      \
            if (i < m) F(NAME##_full)(x + c + i, y + c + i, m - i);                                \
            for (int j = 0; j < no; j += (W)) {                                                    \
                memcpy(&v, ox + j, sizeof v);                                                      \
                v = CORE(v);                                                                       \
                memcpy(ox + j, &v, sizeof v);                                                      \
                for (int l = 0; l < (W) && j + l < no; l++) y[c + oi[j + l]] = ox[j + l];          \
            }                                                                                      \
        }                                                                                          \
    }
VMATH_GELU(vgelu_f64, double, vd, W64, F(gelu_in_a), F(gelu_a), F(gelu_core), OUT_F64, F(pack_f64))
VMATH_GELU(vgelu_f32, float, vs, W32, F(geluf_in_a), F(geluf_a), F(geluf_core), OUT_F32,
           F(pack_f32))
#undef VMATH_GELU

/* d = g gelu'(x), or d += it when acc (a NaN in d stays itself): as VMATH_GELU, with the packed
 * lanes' d left alone until their value comes */
#define VMATH_GELU_BW(NAME, T, VT, W, IN_A, CORE_A, CORE, SEL, OUT, PACK)                          \
    __attribute__((noinline)) VMATH_LOOP_BW(NAME##_full, T, VT, W, CORE, SEL) ATTR static void F(  \
        NAME)(const T *g, const T *x, T *d, int64_t n, int acc)                                    \
    {                                                                                              \
        static _Thread_local T ox[GELU_CHUNK + (W)], og[GELU_CHUNK + (W)];                         \
        static _Thread_local int oi[GELU_CHUNK + (W)];                                             \
        for (int64_t c = 0; c < n; c += GELU_CHUNK) {                                              \
            const int m = (int)(n - c < GELU_CHUNK ? n - c : GELU_CHUNK);                          \
            int i = 0, no = 0;                                                                     \
            VT gv, xv, dv;                                                                         \
            for (; i + (W) <= m; i += (W)) {                                                       \
                memcpy(&gv, g + c + i, sizeof gv), memcpy(&xv, x + c + i, sizeof xv);              \
                const VT in = (VT)IN_A(xv);                                                        \
                const unsigned k = OUT(in);                                                        \
                if (k) no += PACK(k, xv, gv, i, ox + no, og + no, oi + no);                        \
                gv = CORE_A(gv, xv);                                                               \
                if (acc) {                                                                         \
                    memcpy(&dv, d + c + i, sizeof dv);                                             \
                    gv = SEL(in, SEL(dv != dv, dv, dv + gv), dv);                                  \
                }                                                                                  \
                memcpy(d + c + i, &gv, sizeof gv);                                                 \
            }                                                                                      \
            if (i < m) F(NAME##_full)(g + c + i, x + c + i, d + c + i, m - i, acc);                \
            for (int j = 0; j < no; j += (W)) {                                                    \
                memcpy(&gv, og + j, sizeof gv), memcpy(&xv, ox + j, sizeof xv);                    \
                gv = CORE(gv, xv);                                                                 \
                memcpy(ox + j, &gv, sizeof gv);                                                    \
                for (int l = 0; l < (W) && j + l < no; l++) {                                      \
                    T *p = d + c + oi[j + l];                                                      \
                    *p = !acc ? ox[j + l] : *p != *p ? *p : *p + ox[j + l];                        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
VMATH_GELU_BW(vgelu_bw_f64, double, vd, W64, F(gelu_in_a), F(gelu_bw_a), F(gelu_bw_core), vsel,
              OUT_F64, F(pack_f64))
VMATH_GELU_BW(vgelu_bw_f32, float, vs, W32, F(geluf_in_a), F(geluf_bw_a), F(geluf_bw_core), vssel,
              OUT_F32, F(pack_f32))
#undef VMATH_GELU_BW
#undef OUT_F32
#undef OUT_F64
#undef GELU_CHUNK
