/* .Call glue for pooling (native/pg_api_pool.h): sizes arrive as R doubles (NULL: none) and the
 * core checks them, so both languages raise the same texts. */
#include "r_util.h"

/* n doubles of v, or NULL for R's NULL; a wrong length is the front end's to refuse first */
static const double *dbl(SEXP v, R_xlen_t n, const char *fn, const char *arg)
{
    if (Rf_isNull(v)) return NULL;
    if (TYPEOF(v) != REALSXP || XLENGTH(v) != n)
        r_stopf(PG_STATUS_ERR_ARG, "%s: %s must be %lld numbers", fn, arg, (long long)n);
    return REAL(v);
}

SEXP R_pg_pool(SEXP x, SEXP kind, SEXP dims, SEXP shape, SEXP kernel, SEXP stride, SEXP padding,
               SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    int d = Rf_asInteger(dims);
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_pool(xt, Rf_asInteger(kind), d, dbl(shape, d + 1, f, "input_shape"),
                          dbl(kernel, d, f, "kernel_size"), dbl(stride, d, f, "stride"),
                          dbl(padding, d, f, "padding"), f),
                  R_TENSOR);
}

SEXP R_pg_pool_check(SEXP kind, SEXP dims, SEXP kernel, SEXP stride, SEXP padding, SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    int d = Rf_asInteger(dims);
    r_check(pg_pool_check(Rf_asInteger(kind), d, dbl(kernel, d, f, "kernel_size"),
                          dbl(stride, d, f, "stride"), dbl(padding, d, f, "padding"), f));
    return R_NilValue;
}

SEXP R_pg_global_pool(SEXP x, SEXP kind, SEXP shape, SEXP fn)
{
    const char *f = CHAR(STRING_ELT(fn, 0));
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_global_pool(xt, Rf_asInteger(kind), dbl(shape, 3, f, "input_shape"), f),
                  R_TENSOR);
}
