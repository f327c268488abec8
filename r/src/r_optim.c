/* .Call glue: optimizers (state in the core) and gradient clipping. */
#include "r_util.h"

static pg_gradmap *map_arg(SEXP grads) { return r_map_arg(grads, "step"); }

/* returns list(handle, n_dropped) */
SEXP R_pg_optim_new(SEXP kind, SEXP params)
{
    pg_tensor **arr = r_handle_array(params, "optimizer");
    int64_t dropped = 0;
    pg_optim *o = pg_optim_new(Rf_asInteger(kind), arr, XLENGTH(params), &dropped);
    SEXP h = PROTECT(r_wrap(o, R_OPTIM));
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(out, 0, h);
    SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)dropped));
    UNPROTECT(2);
    return out;
}

SEXP R_pg_optim_get(SEXP h, SEXP name)
{
    pg_optim *o = r_get(h, R_OPTIM);
    pg_clear_error();
    double v = pg_optim_get(o, CHAR(STRING_ELT(name, 0)));
    if (ISNAN(v) && pg_last_status() != 0) r_fail();
    return Rf_ScalarReal(v);
}

SEXP R_pg_optim_set(SEXP h, SEXP name, SEXP value)
{
    pg_optim *o = r_get(h, R_OPTIM);
    const char *nm = CHAR(STRING_ELT(name, 0));
    if ((TYPEOF(value) != REALSXP && TYPEOF(value) != INTSXP && TYPEOF(value) != LGLSXP) || XLENGTH(value) != 1)
        Rf_error("optimizer: %s must be a single number", nm);
    r_check(pg_optim_set(o, nm, Rf_asReal(value)));
    return R_NilValue;
}

SEXP R_pg_optim_step(SEXP h, SEXP grads)
{
    pg_optim *o = r_get(h, R_OPTIM);
    int rc = pg_optim_step(o, map_arg(grads));
    if (rc < 0) r_fail();
    return Rf_ScalarLogical(rc == 1);
}

SEXP R_pg_optim_zero_grad(SEXP h)
{
    r_check(pg_optim_zero_grad(r_get(h, R_OPTIM)));
    return R_NilValue;
}

SEXP R_pg_optim_state(SEXP h, SEXP i, SEXP slot)
{
    pg_optim *o = r_get(h, R_OPTIM);
    int64_t k = (int64_t)Rf_asReal(i);
    if (k < 0 || k >= pg_optim_nparams(o)) Rf_error("optimizer state: parameter index out of range");
    pg_tensor *t = pg_optim_state(o, k, Rf_asInteger(slot));
    return t == NULL ? R_NilValue : r_matrix(t);
}

SEXP R_pg_optim_set_state(SEXP h, SEXP i, SEXP slot, SEXP value)
{
    pg_optim *o = r_get(h, R_OPTIM);
    int64_t k = (int64_t)Rf_asReal(i);
    if (Rf_isNull(value)) {
        r_check(pg_optim_set_state(o, k, Rf_asInteger(slot), NULL));
        return R_NilValue;
    }
    pg_tensor *t = r_new_tensor(value, PG_F64, "load_state");
    if (t == NULL) r_fail();
    int rc = pg_optim_set_state(o, k, Rf_asInteger(slot), t);
    pg_tensor_release(t);
    if (rc) r_fail();
    return R_NilValue;
}

SEXP R_pg_clip_grad_norm(SEXP params, SEXP grads, SEXP max_norm)
{
    pg_tensor **arr = r_handle_array(params, "clip_grad_norm");
    double norm = 0;
    r_check(pg_clip_grad_norm(arr, XLENGTH(params), map_arg(grads), r_num(max_norm, "clip_grad_norm: max_norm"),
                              &norm));
    return Rf_ScalarReal(norm);
}

SEXP R_pg_clip_grad_value(SEXP params, SEXP grads, SEXP clip_value)
{
    pg_tensor **arr = r_handle_array(params, "clip_grad_value");
    double mx = 0;
    r_check(pg_clip_grad_value(arr, XLENGTH(params), map_arg(grads), r_num(clip_value, "clip_value"), &mx));
    return Rf_ScalarReal(mx);
}

/* check_grad_anomaly's counts: list(found, n_nan, n_inf, max_abs), one entry per parameter */
SEXP R_pg_grad_anomaly(SEXP params, SEXP grads)
{
    pg_tensor **arr = r_handle_array(params, "check_grad_anomaly");
    R_xlen_t n = XLENGTH(params);
    int64_t *nn = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof *nn), *ni = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof *ni);
    SEXP found = PROTECT(Rf_allocVector(LGLSXP, n)), mx = PROTECT(Rf_allocVector(REALSXP, n));
    r_check(pg_grad_anomaly(arr, n, map_arg(grads), LOGICAL(found), nn, ni, REAL(mx)));
    SEXP cn = PROTECT(Rf_allocVector(REALSXP, n)), ci = PROTECT(Rf_allocVector(REALSXP, n));
    for (R_xlen_t i = 0; i < n; i++) {
        REAL(cn)[i] = (double)nn[i];
        REAL(ci)[i] = (double)ni[i];
    }
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
    SET_VECTOR_ELT(out, 0, found);
    SET_VECTOR_ELT(out, 1, cn);
    SET_VECTOR_ELT(out, 2, ci);
    SET_VECTOR_ELT(out, 3, mx);
    UNPROTECT(5);
    return out;
}
