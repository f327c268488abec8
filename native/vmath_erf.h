/* vmath_kern.h's erfc and GELU cores, included there once per SIMD level (its vector types,
 * helpers and exp cores in scope). Not a header of its own: include it only from vmath_kern.h. */

/* exp(hi + lo) for erfc's tail, one exponential where fdlibm takes two: exp_core's steps with n
 * from hi + lo and r = ((hi - n ln2hi) + lo) - n ln2lo, whose first difference is exact for the
 * few-bit hi of erfc (-z^2 - 0.5625, z to 21 bits) and |r| stays near ln2 / 2; below the clamp
 * (an underflow) 0 */
ATTR static inline __attribute__((always_inline)) vd F(exp_hl)(vd hi, vd lo)
{
    const vd x = hi + lo, xc = vmax(x, VD(-746.0));
    const vd t = xc * VD(0x1.71547652b82fep0) + VD(0x1.8p52);
    const vd nd = t - VD(0x1.8p52);
    const vd r =
        ((hi - nd * VD(6.93147180369123816490e-01)) + lo) - nd * VD(1.90821492927058770002e-10);
    const vd p = VD(1.0) + F(expm1_series)(r);
    const vl n = (vl)t - (vl)VD(0x1.8p52);
    const vl n1 = (vl)(((vu)(n + 2048)) >> 1) - 1024, n2 = n - n1;
    const vd s1 = (vd)((n1 + 1023) << 52), s2 = (vd)((n2 + 1023) << 52);
    return vsel(x < VD(-746.0), VD(0.0), p * s1 * s2);
}

/* exp_hl for W32 floats with expf_core's steps (hi = -z^2, z to 12 bits: hi - n ln2hi exact) */
ATTR static inline __attribute__((always_inline)) vs F(expf_hl)(vs hi, vs lo)
{
    const vs x = hi + lo, xc = vsmax(x, VS(-104.0f));
    const vs t = xc * VS(0x1.715476p0f) + VS(0x1.8p23f);
    const vs nd = t - VS(0x1.8p23f);
    const vs r = ((hi - nd * VS(0.693359375f)) + lo) - nd * VS(-2.12194440e-4f);
    return vssel(x < VS(-104.0f), VS(0.0f), F(expf_scale)(r, t));
}

/* whether any lane of comparison mask m is set (its bytes read as 64-bit words, so f32 masks
 * too): the erfc cores skip a region no lane is in; each lane's value stays the same. AVX2 and
 * AVX-512 test in a register: a copy to a local array let GCC over-align the array, which
 * ASan's stack frames for use-after-return checks do not keep (a fault in the sanitized tests) */
ATTR static inline __attribute__((always_inline)) int F(any_lane)(vl m)
{
#if VBYTES == 64
    return _mm512_test_epi64_mask((__m512i)m, (__m512i)m) != 0;
#elif VBYTES == 32
    return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#else
    unsigned long long u[W64], any = 0;
    memcpy(u, &m, sizeof u);
    for (int k = 0; k < W64; k++) any |= u[k];
    return any != 0;
#endif
}

/* erfc_core's first region, |x| < 0.84375 (other lanes: values of no use) */
ATTR static inline __attribute__((always_inline)) vd F(erfc_a)(vd x)
{
    const vd z = x * x;
    const vd r = VD(1.28379167095512558561e-01) +
        z *
            (VD(-3.25042107247001499370e-01) +
             z *
                 (VD(-2.84817495755985104766e-02) +
                  z * (VD(-5.77027029648944159157e-03) + z * VD(-2.37630166566501626084e-05))));
    const vd s = VD(1.0) +
        z *
            (VD(3.97917223959155352819e-01) +
             z *
                 (VD(6.50222499887672944485e-02) +
                  z *
                      (VD(5.08130628187576562776e-03) +
                       z *
                           (VD(1.32494738004321644526e-04) +
                            z * VD(-3.96022827877536812320e-06)))));
    const vd q = r / s;
    /* 1 - erf(x) directly below 1/4 (no cancellation); above, 1/2 - (x q + (x - 1/2)) */
    const vd lo = VD(1.0) - (x + x * q), hi = VD(0.5) - (x * q + (x - VD(0.5)));
    return vsel(x < VD(0.25), lo, hi);
}

/* erfc for W64 doubles, with fdlibm's s_erf.c regions and coefficients: |x| < 0.84375
 * 1 - erf(x), erf(x) = x + x P/Q(x^2); up to 1.25 around erf(1) as erx + P/Q(|x| - 1); beyond
 * exp(-z^2 - 0.5625) exp((z - a)(z + a) + R/S(1 / a^2)) / a, a = |x|, z = a to 21 bits (z^2
 * exact), R/S's coefficients picked per lane at 1/0.35; x < 0 as 2 - erfc(|x|). The gelu needs
 * erfc(-u) = 1 + erf(u), which this gives without the cancellation below u = 0. */
ATTR static inline __attribute__((always_inline)) vd F(erfc_core)(vd x)
{
    const vd a = (vd)((vl)x & ~(vl)VD(-0.0));
    const vl neg = (vl)(x < VD(0.0));
    const vl mA = (vl)(a < VD(0.84375)), mC = (vl)(a >= VD(1.25));
    const vl mB = ~mA & ~mC & (vl)(a == a);
    vd y = VD(0.0);
    if (F(any_lane)(mA)) y = vsel(mA, F(erfc_a)(x), y);
    if (F(any_lane)(mB)) {
        const vd s = a - VD(1.0);
        const vd P = VD(-2.36211856075265944077e-03) +
            s *
                (VD(4.14856118683748331666e-01) +
                 s *
                     (VD(-3.72207876035701323847e-01) +
                      s *
                          (VD(3.18346619901161753674e-01) +
                           s *
                               (VD(-1.10894694282396677476e-01) +
                                s *
                                    (VD(3.54783043256182359371e-02) +
                                     s * VD(-2.16637559486879084300e-03))))));
        const vd Q = VD(1.0) +
            s *
                (VD(1.06420880400844228286e-01) +
                 s *
                     (VD(5.40397917702171048937e-01) +
                      s *
                          (VD(7.18286544141962662868e-02) +
                           s *
                               (VD(1.26171219808761642112e-01) +
                                s *
                                    (VD(1.36370839120290507362e-02) +
                                     s * VD(1.19844998467991074170e-02))))));
        const vd pq = P / Q, erx = VD(8.45062911510467529297e-01);
        y = vsel(mB, vsel(neg, VD(1.0) + (erx + pq), (VD(1.0) - erx) - pq), y);
    }
    if (F(any_lane)(mC)) {
        /* a past 28 computes erfc(28), an underflow to 0 (2 below 0): no NaN from inf */
        const vd ac = vmin(a, VD(28.0)), s = VD(1.0) / (ac * ac);
        const vl b = (vl)(ac >= VD(0x1.6db6dp+1)); /* 1/0.35 as fdlibm rounds it */
/* R/S with the coefficients PICK chooses: the inner set, then the outer (a degree less: its
 * top coefficient 0 adds exactly nothing) only where a lane needs it */
#define RS_EXPR                                                                                    \
    ((PICK(-9.86494403484714822705e-03, -9.86494292470009928597e-03) +                             \
      s *                                                                                          \
          (PICK(-6.93858572707181764372e-01, -7.99283237680523006574e-01) +                        \
           s *                                                                                     \
               (PICK(-1.05586262253232909814e+01, -1.77579549177547519889e+01) +                   \
                s *                                                                                \
                    (PICK(-6.23753324503260060396e+01, -1.60636384855821916062e+02) +              \
                     s *                                                                           \
                         (PICK(-1.62396669462573470355e+02, -6.37566443368389627722e+02) +         \
                          s *                                                                      \
                              (PICK(-1.84605092906711035994e+02, -1.02509513161107724954e+03) +    \
                               s *                                                                 \
                                   (PICK(-8.12874355063065934246e+01,                              \
                                         -4.83519191608651397019e+02) +                            \
                                    s * PICK(-9.81432934416914548592e+00, 0.0)))))))) /            \
     (VD(1.0) +                                                                                    \
      s *                                                                                          \
          (PICK(1.96512716674392571292e+01, 3.03380607434824582924e+01) +                          \
           s *                                                                                     \
               (PICK(1.37657754143519042600e+02, 3.25792512996573918826e+02) +                     \
                s *                                                                                \
                    (PICK(4.34565877475229228821e+02, 1.53672958608443695994e+03) +                \
                     s *                                                                           \
                         (PICK(6.45387271733267880336e+02, 3.19985821950859553908e+03) +           \
                          s *                                                                      \
                              (PICK(4.29008140027567833386e+02, 2.55305040643316442583e+03) +      \
                               s *                                                                 \
                                   (PICK(1.08635005541779435134e+02, 4.74528541206955367215e+02) + \
                                    s *                                                            \
                                        (PICK(6.57024977031928170135e+00,                          \
                                              -2.24409524465858183362e+01) +                       \
                                         s * PICK(-6.04244152148580987438e-02, 0.0))))))))))
#define PICK(ra, rb) VD(ra)
        vd RS = RS_EXPR;
#undef PICK
        if (F(any_lane)((vl)(b & mC))) {
#define PICK(ra, rb) VD(rb)
            RS = vsel(b, RS_EXPR, RS);
#undef PICK
        }
#undef RS_EXPR
        const vd z = (vd)((vl)ac & ~0xffffffffLL); /* low 32 bits cleared */
        const vd r = F(exp_hl)(-z * z - VD(0.5625), (z - ac) * (z + ac) + RS);
        const vd q = r / ac;
        y = vsel(mC, vsel(neg, VD(2.0) - q, q), y);
    }
    return vsel(x != x, x, y);
}

/* erfcf_core's first region, |x| < 0.84375 (other lanes: values of no use) */
ATTR static inline __attribute__((always_inline)) vs F(erfcf_a)(vs x)
{
    const vs z = x * x;
    const vs r = VS(1.2837916613e-01f) +
        z *
            (VS(-3.2504209876e-01f) +
             z *
                 (VS(-2.8481749818e-02f) +
                  z * (VS(-5.7702702470e-03f) + z * VS(-2.3763017452e-05f))));
    const vs s = VS(1.0f) +
        z *
            (VS(3.9791721106e-01f) +
             z *
                 (VS(6.5022252500e-02f) +
                  z *
                      (VS(5.0813062117e-03f) +
                       z * (VS(1.3249473704e-04f) + z * VS(-3.9602282413e-06f)))));
    const vs q = r / s;
    const vs lo = VS(1.0f) - (x + x * q), hi = VS(0.5f) - (x * q + (x - VS(0.5f)));
    return vssel(x < VS(0.25f), lo, hi);
}

/* erfc for W32 floats, in f32: erfc_core's regions with fdlibm's s_erff.c coefficients (the
 * same degrees), expf_core for the exponentials, z = a to 12 bits, exp(-z^2) exp((z - a)(z + a)
 * + R/S - 0.5625) */
ATTR static inline __attribute__((always_inline)) vs F(erfcf_core)(vs x)
{
    const vs a = (vs)((vi)x & ~(vi)VS(-0.0f));
    const vi neg = (vi)(x < VS(0.0f));
    const vi mA = (vi)(a < VS(0.84375f)), mC = (vi)(a >= VS(1.25f));
    const vi mB = ~mA & ~mC & (vi)(a == a);
    vs y = VS(0.0f);
    if (F(any_lane)((vl)mA)) y = vssel(mA, F(erfcf_a)(x), y);
    if (F(any_lane)((vl)mB)) {
        const vs s = a - VS(1.0f);
        const vs P = VS(-2.3621185683e-03f) +
            s *
                (VS(4.1485610604e-01f) +
                 s *
                     (VS(-3.7220788002e-01f) +
                      s *
                          (VS(3.1834661961e-01f) +
                           s *
                               (VS(-1.1089469492e-01f) +
                                s * (VS(3.5478305072e-02f) + s * VS(-2.1663755178e-03f))))));
        const vs Q = VS(1.0f) +
            s *
                (VS(1.0642088205e-01f) +
                 s *
                     (VS(5.4039794207e-01f) +
                      s *
                          (VS(7.1828655899e-02f) +
                           s *
                               (VS(1.2617121637e-01f) +
                                s * (VS(1.3637083583e-02f) + s * VS(1.1984500103e-02f))))));
        const vs pq = P / Q, erx = VS(8.4506291151e-01f);
        y = vssel(mB, vssel(neg, VS(1.0f) + (erx + pq), (VS(1.0f) - erx) - pq), y);
    }
    if (F(any_lane)((vl)mC)) {
        const vs ac = vsmin(a, VS(28.0f)), s = VS(1.0f) / (ac * ac);
        const vi b = (vi)(ac >= VS(0x1.6db6dap+1f));
/* R/S with the coefficients PICK chooses: the inner set, then the outer (a degree less: its
 * top coefficient 0 adds exactly nothing) only where a lane needs it */
#define RS_EXPR                                                                                    \
    ((PICK(-9.8649440333e-03f, -9.8649431020e-03f) +                                               \
      s *                                                                                          \
          (PICK(-6.9385856390e-01f, -7.9928326607e-01f) +                                          \
           s *                                                                                     \
               (PICK(-1.0558626175e+01f, -1.7757955551e+01f) +                                     \
                s *                                                                                \
                    (PICK(-6.2375331879e+01f, -1.6063638306e+02f) +                                \
                     s *                                                                           \
                         (PICK(-1.6239666748e+02f, -6.3756646729e+02f) +                           \
                          s *                                                                      \
                              (PICK(-1.8460508728e+02f, -1.0250950928e+03f) +                      \
                               s *                                                                 \
                                   (PICK(-8.1287437439e+01f, -4.8351919556e+02f) +                 \
                                    s * PICK(-9.8143291473e+00f, 0.0f)))))))) /                    \
     (VS(1.0f) +                                                                                   \
      s *                                                                                          \
          (PICK(1.9651271820e+01f, 3.0338060379e+01f) +                                            \
           s *                                                                                     \
               (PICK(1.3765776062e+02f, 3.2579251099e+02f) +                                       \
                s *                                                                                \
                    (PICK(4.3456588745e+02f, 1.5367296143e+03f) +                                  \
                     s *                                                                           \
                         (PICK(6.4538726807e+02f, 3.1998581543e+03f) +                             \
                          s *                                                                      \
                              (PICK(4.2900814819e+02f, 2.5530502930e+03f) +                        \
                               s *                                                                 \
                                   (PICK(1.0863500214e+02f, 4.7452853394e+02f) +                   \
                                    s *                                                            \
                                        (PICK(6.5702495575e+00f, -2.2440952301e+01f) +             \
                                         s * PICK(-6.0424413532e-02f, 0.0f))))))))))
#define PICK(ra, rb) VS(ra)
        vs RS = RS_EXPR;
#undef PICK
        if (F(any_lane)((vl)(b & mC))) {
#define PICK(ra, rb) VS(rb)
            RS = vssel(b, RS_EXPR, RS);
#undef PICK
        }
#undef RS_EXPR
        /* z^2 is exact but z^2 + 0.5625 not always in f32 (an error of 4e-6 near a = 8): the
         * 0.5625 goes with R/S */
        const vs z = (vs)((vi)ac & -4096); /* low 12 bits cleared */
        const vs r = F(expf_hl)(-z * z, (z - ac) * (z + ac) + (RS - VS(0.5625f)));
        const vs q = r / ac;
        y = vssel(mC, vssel(neg, VS(2.0f) - q, q), y);
    }
    return vssel(x != x, x, y);
}

/* gelu(x) = x/2 (1 + erf(x / sqrt2)) as x/2 erfc(-x / sqrt2); its derivative
 * erfc(-u)/2 + x exp(-x^2/2) / sqrt(2 pi), times the incoming gradient g. A NaN x (R's NA among
 * them) comes out as itself, else a NaN g: which of two NaNs an operation passes on depends on
 * its operand order, which the compiler may swap, so no NaN meets another. */
ATTR static inline __attribute__((always_inline)) vd F(gelu_core)(vd x)
{
    return vsel(x != x, x, VD(0.5) * x * F(erfc_core)(-(x * VD(M_SQRT1_2))));
}
ATTR static inline __attribute__((always_inline)) vd F(gelu_bw_core)(vd g, vd x)
{
    const vd c = F(erfc_core)(-(x * VD(M_SQRT1_2)));
    const vd e = F(exp_core)(VD(-0.5) * x * x);
    const vd dx = VD(0.5) * c + x * e * VD(0.5 * M_2_SQRTPI * M_SQRT1_2);
    return vsel(x != x, x, vsel(g != g, g, g * dx));
}
ATTR static inline __attribute__((always_inline)) vs F(geluf_core)(vs x)
{
    return vssel(x != x, x, VS(0.5f) * x * F(erfcf_core)(-(x * VS((float)M_SQRT1_2))));
}
ATTR static inline __attribute__((always_inline)) vs F(geluf_bw_core)(vs g, vs x)
{
    const vs c = F(erfcf_core)(-(x * VS((float)M_SQRT1_2)));
    const vs e = F(expf_core)(VS(-0.5f) * x * x);
    const vs dx = VS(0.5f) * c + x * e * VS((float)(0.5 * M_2_SQRTPI * M_SQRT1_2));
    return vssel(x != x, x, vssel(g != g, g, g * dx));
}

/* The GELU where erfc's argument -x / sqrt2 is in its first region (|x / sqrt2| < 0.84375, most
 * lanes of a layer's pre-activations): gelu_core's and gelu_bw_core's operations on those lanes
 * alone, so the same bits; the lanes outside (NaN too) go through the full cores (vmath_kern.h) */
ATTR static inline __attribute__((always_inline)) vl F(gelu_in_a)(vd x)
{
    const vd u = -(x * VD(M_SQRT1_2));
    return (vl)((vd)((vl)u & ~(vl)VD(-0.0)) < VD(0.84375));
}
ATTR static inline __attribute__((always_inline)) vd F(gelu_a)(vd x)
{
    return VD(0.5) * x * F(erfc_a)(-(x * VD(M_SQRT1_2)));
}
ATTR static inline __attribute__((always_inline)) vd F(gelu_bw_a)(vd g, vd x)
{
    const vd c = F(erfc_a)(-(x * VD(M_SQRT1_2)));
    const vd e = F(exp_core)(VD(-0.5) * x * x);
    const vd dx = VD(0.5) * c + x * e * VD(0.5 * M_2_SQRTPI * M_SQRT1_2);
    return vsel(g != g, g, g * dx);
}
ATTR static inline __attribute__((always_inline)) vi F(geluf_in_a)(vs x)
{
    const vs u = -(x * VS((float)M_SQRT1_2));
    return (vi)((vs)((vi)u & ~(vi)VS(-0.0f)) < VS(0.84375f));
}
ATTR static inline __attribute__((always_inline)) vs F(geluf_a)(vs x)
{
    return VS(0.5f) * x * F(erfcf_a)(-(x * VS((float)M_SQRT1_2)));
}
ATTR static inline __attribute__((always_inline)) vs F(geluf_bw_a)(vs g, vs x)
{
    const vs c = F(erfcf_a)(-(x * VS((float)M_SQRT1_2)));
    const vs e = F(expf_core)(VS(-0.5f) * x * x);
    const vs dx = VS(0.5f) * c + x * e * VS((float)(0.5 * M_2_SQRTPI * M_SQRT1_2));
    return vssel(g != g, g, g * dx);
}
