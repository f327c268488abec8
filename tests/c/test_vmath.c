/* vmath.c's erfc and gelu kernels: accuracy in ulps against long double erfcl over a dense grid
 * (tails, subnormals, signed zeros, infinities, NaN) and the same bits on every SIMD level. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define NGRID 400000

/* distance in ulps between two finite doubles (floats widened exactly) of the same type */
static double ulps64(double a, double b)
{
    int64_t ia, ib;
    memcpy(&ia, &a, 8), memcpy(&ib, &b, 8);
    if (ia < 0) ia = INT64_MIN - ia;
    if (ib < 0) ib = INT64_MIN - ib;
    return (double)(ia > ib ? ia - ib : ib - ia);
}
static double ulps32(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return fabs((double)ia - (double)ib);
}

/* the grid: dense over [-30, 30] and [-1, 1], geometric towards 0 and out to the largest values,
 * both signs, plus the special values */
static int64_t grid(double *x)
{
    int64_t n = 0;
    for (int i = 0; i <= 150000; i++) x[n++] = -30.0 + 60.0 * i / 150000;
    for (int i = 0; i <= 50000; i++) x[n++] = -1.0 + 2.0 * i / 50000;
    for (int i = 0; i < 90000; i++) {
        const double v = exp(-745.0 + 1455.0 * i / 90000);
        x[n++] = v, x[n++] = -v;
    }
    const double sp[] = {0.0,    -0.0,  INFINITY,     -INFINITY,     NAN,    0.84375, -0.84375,
                         1.25,   -1.25, 0x1.6db6dp+1, -0x1.6db6dp+1, 0.25,   6.0,     -6.0,
                         26.5,   27.3,  28.0,         -28.0,         5e-324, -5e-324, 1e-40,
                         -1e-40, 9.2,   10.05,        3.9,           -3.9};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++) x[n++] = sp[i];
    return n;
}

static void erfc_accuracy(void)
{
    double *x = malloc(NGRID * sizeof *x), *y = malloc(NGRID * sizeof *y);
    float *xf = malloc(NGRID * sizeof *xf), *yf = malloc(NGRID * sizeof *yf);
    const int64_t n = grid(x);
    pg_verfc(PG_DTYPE_F64, x, y, n);
    double worst = 0, worstf = 0, sub = 0, subf = 0;
    for (int64_t i = 0; i < n; i++) {
        const long double r = erfcl((long double)x[i]);
        const double rd = (double)r;
        if (isnan(x[i])) {
            CHECK(isnan(y[i]));
            continue;
        }
        if (fabs(rd) < 0x1p-1022) { /* subnormal results: in units of the smallest subnormal */
            const double e = fabs(y[i] - rd) / 0x1p-1074;
            if (e > sub) sub = e;
            continue;
        }
        const double u = ulps64(y[i], rd);
        if (u > worst) worst = u;
    }
    for (int64_t i = 0; i < n; i++) xf[i] = (float)x[i];
    pg_verfc(PG_DTYPE_F32, xf, yf, n);
    for (int64_t i = 0; i < n; i++) {
        const float rf = (float)erfcl((long double)xf[i]);
        if (isnan(xf[i])) {
            CHECK(isnan(yf[i]));
            continue;
        }
        if (fabsf(rf) < 0x1p-126f) {
            const double e = fabs((double)yf[i] - rf) / 0x1p-149;
            if (e > subf) subf = e;
            continue;
        }
        const double u = ulps32(yf[i], rf);
        if (u > worstf) worstf = u;
    }
    if (getenv("PG_TEST_VERBOSE"))
        printf("erfc max ulp: f64 %.0f, f32 %.0f over %lld points; subnormal results off by %.0f, "
               "%.0f units\n",
               worst, worstf, (long long)n, sub, subf);
    CHECK(worst <= 2);
    CHECK(worstf <= 3);
    free(x), free(y), free(xf), free(yf);
}

/* the same bits from every level, forward and backward (store and accumulate), ragged lengths
 * and more than one of the grouped loops' 1024-element chunks (vmath_gelu.h); a NaN in d stays
 * where the lane is in erfc's first region (x[8]) and where it is not (x[7]) */
static void simd_levels(void)
{
    enum { M = 2600 };
    double x[M], g[M], d0[M];
    /* two in three at most 1.5 from 0: vectors with every mix of lanes in and out of the first
     * region, each packing pattern of AVX2's table */
    for (int i = 0; i < M; i++)
        x[i] = (i % 3 ? 1.5 : 12) * urand(), g[i] = urand(), d0[i] = urand();
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = -0.0, x[4] = 1e-310, x[5] = -40;
    x[7] = 5, d0[7] = NAN, x[8] = 0.1, d0[8] = NAN, x[2000] = NAN, d0[2001] = NAN;
    unsigned char ref[2][4][M * 8];
    const int lens[] = {M, 1, 3, 7, 17, 33, 999, 1024, 1025, 2047, 2049};
    for (int dt = 0; dt < 2; dt++) {
        const int dtype = dt ? PG_DTYPE_F64 : PG_DTYPE_F32;
        const size_t es = dt ? 8 : 4;
        char xs[M * 8], gs[M * 8];
        for (int i = 0; i < M; i++) {
            if (dt) memcpy(xs + 8 * i, &x[i], 8), memcpy(gs + 8 * i, &g[i], 8);
            else {
                const float a = (float)x[i], b = (float)g[i];
                memcpy(xs + 4 * i, &a, 4), memcpy(gs + 4 * i, &b, 4);
            }
        }
        for (int level = 0; level <= 2; level++) {
            if (pg_simd_select(level) != level) continue;
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                const int len = lens[li];
                unsigned char out[4][M * 8];
                memset(out, 0, sizeof out);
                pg_verfc(dtype, xs, out[0], len);
                pg_vgelu(dtype, xs, out[1], len);
                pg_vgelu_bw(dtype, gs, xs, out[2], len, 0);
                for (int i = 0; i < len; i++) {
                    if (dt) memcpy(out[3] + 8 * i, &d0[i], 8);
                    else {
                        const float v = (float)d0[i];
                        memcpy(out[3] + 4 * i, &v, 4);
                    }
                }
                pg_vgelu_bw(dtype, gs, xs, out[3], len, 1);
                for (int k = 0; k < 4; k++) {
                    if (level == 0 && li == 0) memcpy(ref[dt][k], out[k], M * es);
                    else CHECK(memcmp(ref[dt][k], out[k], (size_t)len * es) == 0);
                }
            }
        }
    }
    pg_simd_select(-1);
}

void test_vmath(void)
{
    erfc_accuracy();
    simd_levels();
}
