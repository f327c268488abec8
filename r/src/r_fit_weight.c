/* .Call glue: ag_fit(sample_weight =, class_weight =) (the core's fit_weight.c, fit_wloss.c). */
#include "r_util.h"

/* the weights on the plan: sw doubles or NULL, cw NULL or list(ids doubles or NULL, weights
 * doubles), code the loss's (-1: a loss function, refused by the core) */
static const double *dbl(SEXP v)
{
    static const double none = 0; /* an empty vector is still given: never NULL */
    return Rf_isNull(v) ? NULL : (XLENGTH(v) ? REAL(v) : &none);
}

/* sample_weight v (its dims; a plain vector: its length): the core's shape rule and text */
SEXP R_pg_fit_weight_shape(SEXP v)
{
    int nd = 0;
    const int64_t *d = r_dims(v, &nd);
    r_check(pg_fit_weight_shape(d, nd));
    return R_NilValue;
}

SEXP R_pg_fit_set_weights(SEXP fp, SEXP code, SEXP sw, SEXP cw, SEXP nclass, SEXP labels)
{
    SEXP ids = Rf_isNull(cw) ? R_NilValue : VECTOR_ELT(cw, 0);
    SEXP w = Rf_isNull(cw) ? R_NilValue : VECTOR_ELT(cw, 1);
    const R_xlen_t k = Rf_isNull(labels) ? 0 : XLENGTH(labels); /* a factor y's levels */
    const char **s = (const char **)R_alloc((size_t)k + 1, sizeof *s);
    for (R_xlen_t i = 0; i < k; i++) s[i] = Rf_translateCharUTF8(STRING_ELT(labels, i));
    r_check(pg_fit_set_weights(r_get(fp, R_FIT), Rf_asInteger(code), dbl(sw),
                               Rf_isNull(sw) ? 0 : (int64_t)XLENGTH(sw), dbl(ids), dbl(w),
                               Rf_isNull(w) ? 0 : (int64_t)XLENGTH(w), r_i64(Rf_asReal(nclass)),
                               k ? s : NULL, (int64_t)k));
    return R_NilValue;
}

/* class_weight's names as 0-based class ids (pg_fit_class_keys): classes a factor y's levels,
 * NULL for class-id y; NA names are missing keys */
SEXP R_pg_fit_class_keys(SEXP keys, SEXP classes)
{
    const R_xlen_t n = XLENGTH(keys), k = Rf_isNull(classes) ? -1 : XLENGTH(classes);
    const char **s = (const char **)R_alloc((size_t)(n + (k > 0 ? k : 0) + 1), sizeof *s);
    for (R_xlen_t i = 0; i < n; i++)
        s[i] = STRING_ELT(keys, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(keys, i));
    for (R_xlen_t i = 0; i < k; i++) s[n + i] = Rf_translateCharUTF8(STRING_ELT(classes, i));
    SEXP ids = PROTECT(Rf_allocVector(REALSXP, n));
    const int st = pg_fit_class_keys(s, (int64_t)n, s + n, (int64_t)k, REAL(ids));
    UNPROTECT(1);
    r_check(st);
    return ids;
}

/* the built-in loss `code` of out against y (NULL: none), each sample weighted by w */
SEXP R_pg_fit_loss_weighted(SEXP code, SEXP out, SEXP y, SEXP w)
{
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    pg_tensor *t = Rf_isNull(y) ? NULL : r_get(r_handle(y), R_TENSOR);
    pg_tensor *wt = Rf_isNull(w) ? NULL : r_get(r_handle(w), R_TENSOR);
    return r_wrap_tensor(pg_fit_loss_weighted(Rf_asInteger(code), o, t, wt));
}
