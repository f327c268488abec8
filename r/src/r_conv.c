/* .Call glue for convolution and image batches (native/pg_api_conv.h, pg_api_image.h). The R
 * side (r/R/conv.R) checks the kinds and hands doubles; this fills the core's argument vector
 * (pairs as (H, W), a 1-D op's H side 1) and the core checks the values. */
#include <string.h>
#include "r_util.h"

/* v: doubles, one (both sides) or `dims` values (1-D: the L side; H gets h1) */
static void pair(SEXP v, int dims, double h1, double *a, int ih, int iw, const char *fn,
                 const char *arg)
{
    if (TYPEOF(v) != REALSXP || (XLENGTH(v) != 1 && XLENGTH(v) != dims))
        r_stopf(PG_STATUS_ERR_ARG, "%s: %s must be %s", fn, arg,
                dims == 2 ? "a number or a pair c(H, W)" : "a number");
    const double *p = REAL(v);
    a[ih] = dims == 1 ? h1 : p[0];
    a[iw] = XLENGTH(v) == 1 ? p[0] : p[1];
}

/* the core's argument vector; output_padding: R's NULL for the plain convolutions */
static void conv_args(double *a, int d, SEXP shape, SEXP kernel, SEXP stride, SEXP padding,
                      SEXP dilation, SEXP groups, SEXP outpad, const char *f)
{
    memset(a, 0, sizeof(double) * PG_CONV_NARGS);
    if (!Rf_isNull(shape)) {
        if (TYPEOF(shape) != REALSXP || XLENGTH(shape) != (d == 2 ? 3 : 2))
            r_stopf(PG_STATUS_ERR_ARG, "%s: input_shape must be %s", f,
                    d == 2 ? "c(C, H, W)" : "c(C, L)");
        const double *s = REAL(shape);
        a[PG_CONV_C] = s[0], a[PG_CONV_H] = d == 2 ? s[1] : 1, a[PG_CONV_W] = s[d == 2 ? 2 : 1];
        a[PG_CONV_HAS_SHAPE] = 1;
    }
    if (!Rf_isNull(kernel)) pair(kernel, d, 1, a, PG_CONV_KH, PG_CONV_KW, f, "kernel_size");
    pair(stride, d, 1, a, PG_CONV_SH, PG_CONV_SW, f, "stride");
    pair(dilation, d, 1, a, PG_CONV_DH, PG_CONV_DW, f, "dilation");
    if (TYPEOF(padding) == STRSXP) {
        const char *m = CHAR(STRING_ELT(padding, 0));
        a[PG_CONV_PAD_MODE] = !strcmp(m, "same") ? PG_CONV_PAD_SAME : PG_CONV_PAD_VALID;
    } else {
        pair(padding, d, 0, a, PG_CONV_PH, PG_CONV_PW, f, "padding");
    }
    if (!Rf_isNull(outpad)) pair(outpad, d, 0, a, PG_CONV_OPH, PG_CONV_OPW, f, "output_padding");
    a[PG_CONV_GROUPS] = r_num(groups, "groups");
}

SEXP R_pg_conv(SEXP x, SEXP w, SEXP b, SEXP shape, SEXP kernel, SEXP stride, SEXP padding,
               SEXP dilation, SEXP groups, SEXP dims, SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    int d = Rf_asInteger(dims);
    double a[PG_CONV_NARGS];
    conv_args(a, d, shape, kernel, stride, padding, dilation, groups, R_NilValue, f);
    pg_tensor *bt = Rf_isNull(b) ? NULL : r_get(b, R_TENSOR);
    return r_wrap(pg_conv(r_get(x, R_TENSOR), r_get(w, R_TENSOR), bt, a, d, f), R_TENSOR);
}

SEXP R_pg_conv_transpose(SEXP x, SEXP w, SEXP b, SEXP shape, SEXP kernel, SEXP stride, SEXP padding,
                         SEXP outpad, SEXP dilation, SEXP groups, SEXP dims, SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    int d = Rf_asInteger(dims);
    double a[PG_CONV_NARGS];
    conv_args(a, d, shape, kernel, stride, padding, dilation, groups, outpad, f);
    pg_tensor *bt = Rf_isNull(b) ? NULL : r_get(b, R_TENSOR);
    return r_wrap(pg_conv_transpose(r_get(x, R_TENSOR), r_get(w, R_TENSOR), bt, a, d, f), R_TENSOR);
}

/* a layer constructor's values checked by the core (pg_conv_check); outpad NULL: not transposed */
SEXP R_pg_conv_check(SEXP cin, SEXP cout, SEXP shape, SEXP kernel, SEXP stride, SEXP padding,
                     SEXP outpad, SEXP dilation, SEXP groups, SEXP dims, SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    int d = Rf_asInteger(dims);
    double a[PG_CONV_NARGS];
    conv_args(a, d, shape, kernel, stride, padding, dilation, groups, outpad, f);
    r_check(pg_conv_check(r_num(cin, "in_channels"), r_num(cout, "out_channels"), a, d,
                          !Rf_isNull(outpad), f));
    return R_NilValue;
}

/* data: doubles; shape c(N, C, H, W); strides (elements) of n, c, h, w */
SEXP R_pg_images(SEXP data, SEXP shape, SEXP strides, SEXP dtype, SEXP fn)
{
    int64_t s[4], st[4];
    for (int i = 0; i < 4; i++) {
        s[i] = r_i64(REAL(shape)[i]);
        st[i] = r_i64(REAL(strides)[i]);
    }
    return r_wrap(pg_images(REAL(data), s[0], s[1], s[2], s[3], st, Rf_asInteger(dtype),
                            CHAR(STRING_ELT(fn, 0))),
                  R_TENSOR);
}

/* data: doubles; shape c(N, T, F); strides (elements) of n, step, feature */
SEXP R_pg_sequences(SEXP data, SEXP shape, SEXP strides, SEXP dtype, SEXP fn)
{
    int64_t s[3], st[3];
    for (int i = 0; i < 3; i++) {
        s[i] = r_i64(REAL(shape)[i]);
        st[i] = r_i64(REAL(strides)[i]);
    }
    return r_wrap(pg_sequences(REAL(data), s[0], s[1], s[2], st, Rf_asInteger(dtype),
                               CHAR(STRING_ELT(fn, 0))),
                  R_TENSOR);
}

/* c(C, H, W) as integers, or NULL */
SEXP R_pg_image_shape(SEXP x)
{
    int64_t s[3];
    int rc = pg_tensor_image_shape(r_get(x, R_TENSOR), s);
    if (rc < 0) r_check(-rc);
    if (rc == 0) return R_NilValue;
    SEXP out = PROTECT(Rf_allocVector(INTSXP, 3));
    INTEGER(out)[0] = (int)s[2], INTEGER(out)[1] = (int)s[1], INTEGER(out)[2] = (int)s[0];
    UNPROTECT(1);
    return out;
}

/* shape: NULL (clear) or doubles c(C, H, W), whole numbers checked by R */
SEXP R_pg_set_image_shape(SEXP x, SEXP shape, SEXP fn)
{
    int64_t s[3];
    if (!Rf_isNull(shape)) {
        s[0] = r_i64(REAL(shape)[2]), s[1] = r_i64(REAL(shape)[1]);
        s[2] = r_i64(REAL(shape)[0]);
    }
    r_check(pg_tensor_set_image_shape(r_get(x, R_TENSOR), Rf_isNull(shape) ? NULL : s,
                                      CHAR(STRING_ELT(fn, 0))));
    return R_NilValue;
}
