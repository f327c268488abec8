/* vew.c's elementwise loops: on every SIMD level the same bits as a plain scalar loop, for each
 * binary op and broadcast form, the gradient copies and bias sums, and ReLU forward and
 * backward, over lengths that leave every tail and values with NaN, infinities, signed zeros
 * and subnormals. */
#include <math.h>
#include <string.h>
#include "check.h"

/* the same bits, element by element, except a NaN's sign (the compiler may turn d + -g into
 * d - g, which flips it; no result reads it) */
static int same(const void *a, const void *b, int64_t n, int f32)
{
    for (int64_t i = 0; i < n; i++) {
        double u = f32 ? ((const float *)a)[i] : ((const double *)a)[i];
        double v = f32 ? ((const float *)b)[i] : ((const double *)b)[i];
        if (isnan(u) && isnan(v)) continue;
        if (memcmp((const char *)a + i * (f32 ? 4 : 8), (const char *)b + i * (f32 ? 4 : 8),
                   f32 ? 4 : 8))
            return 0;
    }
    return 1;
}

#define MAXR 37
#define MAXC 5
#define NV   (MAXR * MAXC)

static double val(int k)
{
    static const double sp[] = {NAN,     INFINITY, -INFINITY, 0.0,  -0.0, 4.9e-324,
                                -1e-310, 1e-40,    3.5e38,    -2.5, 7.0,  1.0 / 3};
    if (k % 5 == 0) return sp[(k / 5) % 12];
    return sin(k * 1.7) * pow(10.0, (k % 9) - 4);
}

static void fill(int f32, void *p, int off)
{
    for (int k = 0; k < NV; k++) {
        if (f32) ((float *)p)[k] = (float)val(k + off);
        else ((double *)p)[k] = val(k + off);
    }
}

/* the reference: the plain loops the kernels replace (scalar at the driver's -O1) */
#define REF_BIN(T, OP)                                                                             \
    for (int64_t j = 0; j < C; j++)                                                                \
        for (int64_t i = 0; i < R; i++) {                                                          \
            T a = ((const T *)x)[j * xs + (mode == PG_EW_SV ? 0 : i)];                             \
            T b = ((const T *)y)[j * ys + (mode == PG_EW_VS ? 0 : i)];                             \
            ((T *)o)[j * R + i] = a OP b;                                                          \
        }

static void ref_bin(int f32, int op, const void *x, int64_t xs, const void *y, int64_t ys, void *o,
                    int64_t R, int64_t C, int mode)
{
    if (f32) {
        if (op == 0) REF_BIN(float, +)
        else if (op == 1)
            REF_BIN(float, -) else if (op == 2) REF_BIN(float, *) else REF_BIN(float, /)
    } else {
        if (op == 0) REF_BIN(double, +)
        else if (op == 1)
            REF_BIN(double, -) else if (op == 2) REF_BIN(double, *) else REF_BIN(double, /)
    }
}

#define REF_REST(T)                                                                                \
    do {                                                                                           \
        const T *gp = (const void *)g, *xp = (const void *)x;                                      \
        T *a = acc_o, *r = rows_o, *u = relu_o, *v = relu_bw_o;                                    \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T s = neg ? -gp[i] : gp[i];                                                            \
            a[i] = acc ? a[i] + s : s;                                                             \
        }                                                                                          \
        for (int64_t j = 0; j < C; j++)                                                            \
            for (int64_t i = 0; i < R; i++) r[i] += neg ? -gp[j * R + i] : gp[j * R + i];          \
        for (int64_t i = 0; i < n; i++) u[i] = xp[i] < 0 ? (T)0 : xp[i];                           \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T d = xp[i] <= 0 ? (T)0 : gp[i];                                                       \
            v[i] = acc ? v[i] + d : d;                                                             \
        }                                                                                          \
    } while (0)

void test_vew(void)
{
    static double x[NV], y[NV], g[NV], o1[4 * NV], o2[4 * NV], init[NV];
    for (int f32 = 0; f32 <= 1; f32++) {
        const int dt = f32 ? PG_DTYPE_F32 : PG_DTYPE_F64;
        const size_t es = f32 ? 4 : 8;
        fill(f32, x, 0), fill(f32, y, 3), fill(f32, g, 11), fill(f32, init, 29);
        for (int level = 0; level <= 2; level++) {
            if (pg_simd_select(level) != level) continue; /* a CPU without it */
            for (int64_t R = 1; R <= MAXR; R += 3)
                for (int64_t C = 1; C <= MAXC; C += 2)
                    for (int mode = PG_EW_VV; mode <= PG_EW_SV; mode++)
                        for (int op = 0; op < 4; op++) {
                            const int64_t xs = mode == PG_EW_SV ? 1 : R, ys = (R + C) % 3 ? R : 0;
                            ref_bin(f32, op, x, xs, y, ys, o1, R, C, mode);
                            pg_ew_bin(dt, op, x, xs, y, ys, o2, R, C, mode);
                            CHECK(same(o1, o2, R * C, f32));
                        }
            /* acc, rows, relu, relu_bw: the reference in o1's quarters, the kernels in o2's */
            const int64_t R = 29, C = 3, n = R * C;
            for (int acc = 0; acc <= 1; acc++)
                for (int neg = 0; neg <= 1; neg++) {
                    const size_t q = (size_t)n * es;
                    char *r1 = (char *)o1, *r2 = (char *)o2;
                    for (int k = 0; k < 4; k++)
                        memcpy(r1 + k * q, init, q), memcpy(r2 + k * q, init, q);
                    void *acc_o = r1, *rows_o = r1 + q, *relu_o = r1 + 2 * q,
                         *relu_bw_o = r1 + 3 * q;
                    if (f32) REF_REST(float);
                    else REF_REST(double);
                    pg_ew_acc(dt, g, r2, n, acc, neg);
                    pg_ew_rows(dt, g, r2 + q, R, C, neg);
                    pg_ew_relu(dt, x, r2 + 2 * q, n);
                    pg_ew_relu_bw(dt, x, g, r2 + 3 * q, n, acc);
                    CHECK(same(r1, r2, 4 * n, f32));
                }
            /* ReLU in place (the fused linear layer's use) */
            memcpy(o2, x, NV * es);
            pg_ew_relu(dt, o2, o2, NV);
            pg_ew_relu(dt, x, o1, NV);
            CHECK(same(o1, o2, NV, f32));
        }
    }
    pg_simd_select(-1);
}
