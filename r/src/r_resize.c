/* .Call glue for padding and upsampling (native/pg_api_resize.h): sizes arrive as R doubles,
 * modes as strings, and the core checks them, so both languages raise the same texts. */
#include "r_util.h"

/* v's doubles (n of them into *n), or NULL for R's NULL; the front end sends doubles */
static const double *dbl(SEXP v, int *n, const char *fn, const char *arg)
{
    if (Rf_isNull(v)) return *n = 0, NULL;
    if (TYPEOF(v) != REALSXP || XLENGTH(v) > 8)
        r_stopf(PG_STATUS_ERR_ARG, "%s: %s must be at most 8 numbers", fn, arg);
    *n = (int)XLENGTH(v);
    return REAL(v);
}

static const char *str(SEXP v) { return CHAR(STRING_ELT(v, 0)); }

SEXP R_pg_pad2d(SEXP x, SEXP dims, SEXP shape, SEXP padding, SEXP value, SEXP mode, SEXP fn)
{
    const char *f = str(fn);
    int np, ns;
    const double *p = dbl(padding, &np, f, "padding"), *s = dbl(shape, &ns, f, "input_shape");
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_pad2d(xt, Rf_asInteger(dims), s, p, np, Rf_asReal(value), str(mode), f),
                  R_TENSOR);
}

/* the layer's check: the padding as the core normalizes it (left, right, top, bottom) */
SEXP R_pg_pad2d_check(SEXP dims, SEXP padding, SEXP value, SEXP mode, SEXP fn)
{
    const char *f = str(fn);
    int np;
    const double *p = dbl(padding, &np, f, "padding");
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 4));
    r_check(pg_pad2d_check(Rf_asInteger(dims), p, np, Rf_asReal(value), str(mode), f, REAL(out)));
    UNPROTECT(1);
    return out;
}

SEXP R_pg_upsample2d(SEXP x, SEXP dims, SEXP shape, SEXP scale, SEXP mode, SEXP fn)
{
    const char *f = str(fn);
    int n1, n2;
    const double *s = dbl(scale, &n1, f, "scale_factor"), *sh = dbl(shape, &n2, f, "input_shape");
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_upsample2d(xt, Rf_asInteger(dims), sh, s, str(mode), f), R_TENSOR);
}

SEXP R_pg_upsample2d_check(SEXP dims, SEXP scale, SEXP mode, SEXP fn)
{
    const char *f = str(fn);
    int n;
    const double *s = dbl(scale, &n, f, "scale_factor");
    r_check(pg_upsample2d_check(Rf_asInteger(dims), s, str(mode), f));
    return R_NilValue;
}
