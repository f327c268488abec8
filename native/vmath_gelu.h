/* The GELU's AVX-512 loops, included once from vmath_kern.h at that level (its vector types,
 * cores and VMATH_LOOP / VMATH_LOOP_BW in scope). A vector with lanes in erfc's other regions
 * ran all three regions' polynomials and divisions: 5.6x an exp per element on N(0, 1) inputs.
 * Here every lane takes the first region's core, and the few lanes outside it (packed with
 * AVX-512's compress, their indices kept) go through the full core afterwards, whole vectors of
 * them at a time. Each element's operations are those of the full core: the same bits. */
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
#else /* AVX2: no compress instruction; the (few) lanes one by one */
#define PACK_LANES(T, VT, W)                                                                       \
    T xs[W], gs[W];                                                                                \
    memcpy(xs, &v, sizeof xs), memcpy(gs, &g, sizeof gs);                                          \
    int no = 0;                                                                                    \
    for (unsigned r = k; r; r &= r - 1) {                                                          \
        const int l = __builtin_ctz(r);                                                            \
        ox[no] = xs[l], oi[no] = base + l;                                                         \
        if (og) og[no] = gs[l];                                                                    \
        no++;                                                                                      \
    }                                                                                              \
    return no;
ATTR static inline __attribute__((always_inline)) int F(pack_f32)(unsigned k, vs v, vs g, int base,
                                                                  float *ox, float *og, int *oi){
    PACK_LANES(float, vs, W32)} ATTR static inline
    __attribute__((always_inline)) int F(pack_f64)(unsigned k, vd v, vd g, int base, double *ox,
                                                   double *og, int *oi)
{
    PACK_LANES(double, vd, W64)
}
#undef PACK_LANES
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
