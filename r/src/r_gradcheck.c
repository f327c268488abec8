/* .Call glue: ag_gradcheck's arithmetic (the core's gradcheck.c); R calls the user's function. */
#include "r_util.h"

SEXP R_pg_gradcheck_defaults(SEXP dtype)
{
    double d[3];
    r_check(pg_gradcheck_defaults(Rf_asInteger(dtype), d, d + 1, d + 2));
    SEXP v = Rf_allocVector(REALSXP, 3);
    for (int i = 0; i < 3; i++) REAL(v)[i] = d[i];
    return v;
}

/* the perturbed points of every element of x (a double vector): list(xp, xm) */
SEXP R_pg_gradcheck_points(SEXP dtype, SEXP x, SEXP eps)
{
    if (TYPEOF(x) != REALSXP) r_stopf(PG_STATUS_ERR_ARG, "ag_gradcheck: x must be a double vector");
    R_xlen_t n = XLENGTH(x);
    SEXP xp = PROTECT(Rf_allocVector(REALSXP, n)), xm = PROTECT(Rf_allocVector(REALSXP, n));
    const double e = r_num(eps, "ag_gradcheck: eps");
    for (R_xlen_t i = 0; i < n; i++)
        r_check(
            pg_gradcheck_points(Rf_asInteger(dtype), REAL(x)[i], e, REAL(xp) + i, REAL(xm) + i));
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(out, 0, xp);
    SET_VECTOR_ELT(out, 1, xm);
    UNPROTECT(3);
    return out;
}

static const double *dvec(SEXP v, R_xlen_t n, const char *what)
{
    if (TYPEOF(v) != REALSXP || XLENGTH(v) != n)
        r_stopf(PG_STATUS_ERR_ARG, "ag_gradcheck: %s must be a double vector of length %lld", what,
                (long long)n);
    return REAL(v);
}

/* list(pass, max_err, numerical); a = NULL: no analytical gradient */
SEXP R_pg_gradcheck_judge(SEXP dtype, SEXP a, SEXP fp, SEXP fm, SEXP xp, SEXP xm, SEXP atol,
                          SEXP rtol)
{
    R_xlen_t n = XLENGTH(fp);
    const double *ap = Rf_isNull(a) ? NULL : dvec(a, n, "the analytical gradient");
    SEXP num = PROTECT(Rf_allocVector(REALSXP, n));
    double err;
    int rc = pg_gradcheck_judge(Rf_asInteger(dtype), ap, dvec(fp, n, "fp"), dvec(fm, n, "fm"),
                                dvec(xp, n, "xp"), dvec(xm, n, "xm"), (int64_t)n,
                                r_num(atol, "ag_gradcheck: atol"),
                                r_num(rtol, "ag_gradcheck: rtol"), REAL(num), &err);
    if (rc < 0) r_fail();
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
    SET_VECTOR_ELT(out, 0, Rf_ScalarLogical(rc == 1));
    SET_VECTOR_ELT(out, 1, Rf_ScalarReal(err));
    SET_VECTOR_ELT(out, 2, num);
    UNPROTECT(2);
    return out;
}
