/* .Call glue: learning-rate schedules (formulas and value checks in the core, sched.c). The R
 * scheduler keeps par and st as numeric vectors; these calls copy them, never write in place. */
#include <string.h>
#include "r_util.h"

static double *par_copy(SEXP par, double *buf)
{
    if (TYPEOF(par) != REALSXP || XLENGTH(par) != PG_SCHED_NPAR)
        r_stopf(PG_STATUS_ERR_ARG, "lr_scheduler: par must be a numeric vector of length %d",
                (int)PG_SCHED_NPAR);
    memcpy(buf, REAL(par), PG_SCHED_NPAR * sizeof *buf);
    return buf;
}

static SEXP real_vec(const double *x, int n)
{
    SEXP v = Rf_allocVector(REALSXP, n);
    memcpy(REAL(v), x, n * sizeof *x);
    return v;
}

/* returns list(par, st, lr0, mom0); NaN lr0 / mom0: leave the optimizer's */
SEXP R_pg_sched_init(SEXP kind, SEXP par, SEXP cur_lr)
{
    double p[PG_SCHED_NPAR], st[PG_SCHED_NSTATE], lr0, mom0;
    par_copy(par, p);
    r_check(pg_sched_init(Rf_asInteger(kind), p, st,
                          r_num(cur_lr, "lr_scheduler: the optimizer's lr"), &lr0, &mom0));
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
    SET_VECTOR_ELT(out, 0, real_vec(p, PG_SCHED_NPAR));
    SET_VECTOR_ELT(out, 1, real_vec(st, PG_SCHED_NSTATE));
    SET_VECTOR_ELT(out, 2, Rf_ScalarReal(lr0));
    SET_VECTOR_ELT(out, 3, Rf_ScalarReal(mom0));
    UNPROTECT(1);
    return out;
}

/* one step; returns c(lr, mom, st) (one vector: this runs once per batch) */
SEXP R_pg_sched_step(SEXP kind, SEXP par, SEXP st, SEXP cur_lr)
{
    double p[PG_SCHED_NPAR], out[2 + PG_SCHED_NSTATE];
    par_copy(par, p);
    if (TYPEOF(st) != REALSXP || XLENGTH(st) != PG_SCHED_NSTATE)
        r_stopf(PG_STATUS_ERR_ARG, "lr_scheduler: st must be a numeric vector of length %d",
                (int)PG_SCHED_NSTATE);
    memcpy(out + 2, REAL(st), PG_SCHED_NSTATE * sizeof *out);
    r_check(pg_sched_step(Rf_asInteger(kind), p, out + 2,
                          r_num(cur_lr, "lr_scheduler: the optimizer's lr"), &out[0], &out[1]));
    return real_vec(out, 2 + PG_SCHED_NSTATE);
}
