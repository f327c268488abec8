/* .Call glue: ag_fit(sample_weight =, class_weight =) (the core's fit_weight.c, fit_wloss.c). */
#include "r_util.h"

/* the weights on the plan: sw, cw doubles or NULL (cw NaN: a class not given), code the loss's
 * (-1: a loss function, refused by the core) */
SEXP R_pg_fit_set_weights(SEXP fp, SEXP code, SEXP sw, SEXP cw)
{
    static const double none = 0; /* an empty vector is still given: never NULL */
    const double *s = Rf_isNull(sw) ? NULL : (XLENGTH(sw) ? REAL(sw) : &none);
    const double *c = Rf_isNull(cw) ? NULL : (XLENGTH(cw) ? REAL(cw) : &none);
    r_check(pg_fit_set_weights(r_get(fp, R_FIT), Rf_asInteger(code), s,
                               s ? (int64_t)XLENGTH(sw) : 0, c, c ? (int64_t)XLENGTH(cw) : 0));
    return R_NilValue;
}

/* the weight row of the training batch gathered last (an ag_tensor), NULL when unweighted */
SEXP R_pg_fit_batch_weights(SEXP fp)
{
    pg_tensor *w = pg_fit_batch_weights(r_get(fp, R_FIT));
    return w ? r_wrap_tensor(w) : R_NilValue;
}

/* the built-in loss `code` of out against y (NULL: none), each sample weighted by w */
SEXP R_pg_fit_loss_weighted(SEXP code, SEXP out, SEXP y, SEXP w)
{
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    pg_tensor *t = Rf_isNull(y) ? NULL : r_get(r_handle(y), R_TENSOR);
    pg_tensor *wt = Rf_isNull(w) ? NULL : r_get(r_handle(w), R_TENSOR);
    return r_wrap_tensor(pg_fit_loss_weighted(Rf_asInteger(code), o, t, wt));
}
