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
    if ((TYPEOF(value) != REALSXP && TYPEOF(value) != INTSXP && TYPEOF(value) != LGLSXP) ||
        XLENGTH(value) != 1)
        r_stopf(PG_STATUS_ERR_ARG, "optimizer: %s must be a single number", nm);
    r_check(pg_optim_set(o, nm, Rf_asReal(value)));
    return R_NilValue;
}

/* a step (pg_optim_step or pg_optim_step_sum): TRUE when the parameters moved (1), FALSE when
 * the step only accumulated (0); an R error on failure */
static SEXP step_with(SEXP h, SEXP grads, int (*f)(pg_optim *, pg_gradmap *))
{
    int rc = f(r_get(h, R_OPTIM), map_arg(grads));
    if (rc < 0) r_fail();
    return Rf_ScalarLogical(rc == 1);
}

SEXP R_pg_optim_step(SEXP h, SEXP grads) { return step_with(h, grads, pg_optim_step); }

SEXP R_pg_optim_zero_grad(SEXP h)
{
    r_check(pg_optim_zero_grad(r_get(h, R_OPTIM)));
    return R_NilValue;
}

SEXP R_pg_optim_state(SEXP h, SEXP i, SEXP slot)
{
    pg_optim *o = r_get(h, R_OPTIM);
    int64_t k = r_i64(Rf_asReal(i));
    if (k < 0 || k >= pg_optim_nparams(o))
        r_stopf(PG_STATUS_ERR_VALUE, "optimizer state: parameter index out of range");
    pg_tensor *t = pg_optim_state(o, k, Rf_asInteger(slot));
    return t == NULL ? R_NilValue : r_matrix(t);
}

/* clip_grad_norm / clip_grad_value: fn on the parameter list with the one bound, its result */
typedef int (*clip_fn)(pg_tensor **, int64_t, pg_gradmap *, double, double *);
static SEXP clip_call(clip_fn fn, SEXP params, SEXP grads, SEXP bound, const char *op,
                      const char *what)
{
    pg_tensor **arr = r_handle_array(params, op);
    double out = 0;
    r_check(fn(arr, XLENGTH(params), map_arg(grads), r_num(bound, what), &out));
    return Rf_ScalarReal(out);
}

SEXP R_pg_clip_grad_norm(SEXP params, SEXP grads, SEXP max_norm)
{
    return clip_call(pg_clip_grad_norm, params, grads, max_norm, "clip_grad_norm",
                     "clip_grad_norm: max_norm");
}

SEXP R_pg_clip_grad_value(SEXP params, SEXP grads, SEXP clip_value)
{
    return clip_call(pg_clip_grad_value, params, grads, clip_value, "clip_grad_value",
                     "clip_value");
}

/* check_grad_anomaly's counts: list(found, n_nan, n_inf, max_abs), one entry per parameter */
SEXP R_pg_grad_anomaly(SEXP params, SEXP grads)
{
    pg_tensor **arr = r_handle_array(params, "check_grad_anomaly");
    R_xlen_t n = XLENGTH(params);
    int64_t *nn = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof *nn),
            *ni = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof *ni);
    SEXP found = PROTECT(Rf_allocVector(LGLSXP, n)), mx = PROTECT(Rf_allocVector(REALSXP, n));
    r_check(pg_grad_anomaly(arr, n, map_arg(grads), LOGICAL(found), nn, ni, REAL(mx)));
    SEXP cn = PROTECT(r_counts(nn, n)), ci = PROTECT(r_counts(ni, n));
    const SEXP items[4] = {found, cn, ci, mx};
    SEXP out = r_list(4, items);
    UNPROTECT(4);
    return out;
}

/* ---- ggmlR 0.8.6 accumulation and state (optim.R, optim_state.R) ---- */

SEXP R_pg_optim_step_sum(SEXP h, SEXP grads) { return step_with(h, grads, pg_optim_step_sum); }

/* a gradient map from a user-built environment's entries: params (handles) -> vals (numbers,
 * converted to each parameter's dtype) */
SEXP R_pg_gradmap_build(SEXP params, SEXP vals)
{
    pg_tensor **keys = r_handle_array(params, "step");
    R_xlen_t n = XLENGTH(params);
    if (TYPEOF(vals) != VECSXP || XLENGTH(vals) != n)
        r_stopf(PG_STATUS_ERR_ARG, "step: one gradient per parameter expected");
    pg_tensor **tv = (pg_tensor **)R_alloc(n > 0 ? n : 1, sizeof *tv);
    for (R_xlen_t i = 0; i < n; i++) {
        tv[i] = r_new_tensor(VECTOR_ELT(vals, i), pg_tensor_dtype(keys[i]), "step");
        if (!tv[i]) {
            for (R_xlen_t k = 0; k < i; k++) pg_tensor_release(tv[k]);
            r_fail();
        }
    }
    pg_gradmap *m = pg_gradmap_make(keys, tv, (int64_t)n);
    for (R_xlen_t k = 0; k < n; k++) pg_tensor_release(tv[k]); /* the map holds its own refs */
    return r_wrap(m, R_GRADMAP);
}

/* NULL when the doubles v fit a tensor of dtype f32 (f32 TRUE) or f64, else the message. */
SEXP R_pg_values_fit(SEXP v, SEXP f32, SEXP what)
{
    if (TYPEOF(v) != REALSXP || !Rf_isString(what) || XLENGTH(what) != 1)
        Rf_error("internal: bad arguments to pg_values_fit");
    int rc = pg_values_fit(REAL(v), (int64_t)XLENGTH(v),
                           Rf_asLogical(f32) == TRUE ? PG_DTYPE_F32 : PG_DTYPE_F64,
                           Rf_translateCharUTF8(STRING_ELT(what, 0)));
    if (!rc) return R_NilValue;
    SEXP out = Rf_ScalarString(Rf_mkCharCE(pg_last_error(), CE_UTF8));
    pg_clear_error();
    return out;
}
