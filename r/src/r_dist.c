/* .Call glue: the data-parallel helpers of native/pg_api_dist.h used by dp_train(). */
#include <string.h>
#include "r_util.h"

/* params: n_rep * n handles (replica r's parameter i at r * n + i); grads: list of n_rep gradient
 * map handles (NULL entries: use .grad) */
SEXP R_pg_dist_average(SEXP params, SEXP n, SEXP grads)
{
    pg_tensor **arr = r_handle_array(params, "dp_train");
    int64_t np = r_i64(Rf_asReal(n));
    if (TYPEOF(grads) != VECSXP) r_stopf(PG_STATUS_ERR_ARG, "dp_train: grads must be a list");
    R_xlen_t n_rep = XLENGTH(grads);
    if (np < 0 || n_rep < 1 || (int64_t)XLENGTH(params) != np * (int64_t)n_rep)
        r_stopf(PG_STATUS_ERR_ARG, "dp_train: %d parameter handles do not make %d replicas of %d",
                (int)XLENGTH(params), (int)n_rep, (int)np);
    pg_gradmap **maps = (pg_gradmap **)R_alloc(n_rep, sizeof(pg_gradmap *));
    for (R_xlen_t r = 0; r < n_rep; r++) {
        SEXP g = VECTOR_ELT(grads, r);
        maps[r] = Rf_isNull(g) ? NULL : (pg_gradmap *)r_get(g, R_GRADMAP);
    }
    r_check(pg_dist_average_replicas(arr, np, (int64_t)n_rep, maps));
    return R_NilValue;
}

SEXP R_pg_dist_copy(SEXP dst, SEXP src)
{
    if (XLENGTH(dst) != XLENGTH(src))
        r_stopf(PG_STATUS_ERR_ARG, "dp_train: destination has %d parameters, source has %d",
                (int)XLENGTH(dst), (int)XLENGTH(src));
    pg_tensor **d = r_handle_array(dst, "dp_train"), **s = r_handle_array(src, "dp_train");
    r_check(pg_dist_copy_values(d, s, (int64_t)XLENGTH(dst)));
    return R_NilValue;
}

SEXP R_pg_dist_zero_grad(SEXP params)
{
    pg_tensor **arr = r_handle_array(params, "dp_train");
    r_check(pg_dist_zero_grad(arr, (int64_t)XLENGTH(params)));
    return R_NilValue;
}

/* MPI data parallelism (r/R/distributed.R): the fused buffers as R doubles, which Rmpi moves */
SEXP R_pg_dist_sig(SEXP params)
{
    pg_tensor **arr = r_handle_array(params, "ag_allreduce_gradients");
    uint32_t sig = 0;
    r_check(pg_dist_layout_sig(arr, (int64_t)XLENGTH(params), &sig));
    return Rf_ScalarReal((double)sig);
}

/* the flat layout of pg_dist_pack plus `extra` trailing zeros (room for a weight) */
SEXP R_pg_dist_pack(SEXP params, SEXP grads, SEXP what, SEXP flags, SEXP scale, SEXP extra)
{
    pg_tensor **arr = r_handle_array(params, "ag_allreduce_gradients");
    const int64_t n = (int64_t)XLENGTH(params);
    pg_gradmap *m = r_map_arg(grads, "ag_allreduce_gradients");
    const int fl = Rf_asLogical(flags) == 1;
    const int64_t L = pg_dist_flat_len(arr, n, fl);
    if (L < 0) r_fail();
    SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)(L + Rf_asInteger(extra))));
    memset(REAL(out), 0, (size_t)XLENGTH(out) * sizeof(double));
    int rc = pg_dist_pack(arr, n, m, Rf_asInteger(what), fl, Rf_asReal(scale), REAL(out),
                          PG_DTYPE_F64, XLENGTH(out));
    UNPROTECT(1);
    r_check(rc);
    return out;
}

SEXP R_pg_dist_unpack(SEXP params, SEXP grads, SEXP what, SEXP flags, SEXP scale, SEXP buf)
{
    pg_tensor **arr = r_handle_array(params, "ag_allreduce_gradients");
    pg_gradmap *m = r_map_arg(grads, "ag_allreduce_gradients");
    if (TYPEOF(buf) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_allreduce_gradients: the reduced buffer must be doubles");
    r_check(pg_dist_unpack(arr, (int64_t)XLENGTH(params), m, Rf_asInteger(what),
                           Rf_asLogical(flags) == 1, Rf_asReal(scale), REAL(buf), PG_DTYPE_F64,
                           XLENGTH(buf)));
    return R_NilValue;
}
