/* .Call glue: the data-parallel helpers of native/pg_api_dist.h used by dp_train(). */
#include "r_util.h"

/* borrowed tensor pointers of an R list of handles; R_alloc'd (freed by R at .Call exit) */
static pg_tensor **dist_handles(SEXP lst, const char *op)
{
    if (TYPEOF(lst) != VECSXP) Rf_error("%s: expected a list of tensor handles", op);
    R_xlen_t n = XLENGTH(lst);
    pg_tensor **arr = (pg_tensor **)R_alloc(n > 0 ? n : 1, sizeof(pg_tensor *));
    for (R_xlen_t i = 0; i < n; i++) {
        SEXP h = VECTOR_ELT(lst, i);
        if (TYPEOF(h) != EXTPTRSXP) Rf_error("%s: parameter %d is not a tensor", op, (int)i + 1);
        arr[i] = r_get(h, R_TENSOR);
    }
    return arr;
}

/* params: n_rep * n handles (replica r's parameter i at r * n + i); grads: list of n_rep gradient
 * map handles (NULL entries: use .grad) */
SEXP R_pg_dist_average(SEXP params, SEXP n, SEXP grads)
{
    pg_tensor **arr = dist_handles(params, "dp_train");
    int64_t np = (int64_t)Rf_asReal(n);
    if (TYPEOF(grads) != VECSXP) Rf_error("dp_train: grads must be a list");
    R_xlen_t n_rep = XLENGTH(grads);
    if (np < 0 || n_rep < 1 || (int64_t)XLENGTH(params) != np * (int64_t)n_rep)
        Rf_error("dp_train: %d parameter handles do not make %d replicas of %d", (int)XLENGTH(params), (int)n_rep, (int)np);
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
    if (XLENGTH(dst) != XLENGTH(src)) Rf_error("dp_train: destination has %d parameters, source has %d",
                                               (int)XLENGTH(dst), (int)XLENGTH(src));
    pg_tensor **d = dist_handles(dst, "dp_train"), **s = dist_handles(src, "dp_train");
    r_check(pg_dist_copy_values(d, s, (int64_t)XLENGTH(dst)));
    return R_NilValue;
}

SEXP R_pg_dist_zero_grad(SEXP params)
{
    pg_tensor **arr = dist_handles(params, "dp_train");
    r_check(pg_dist_zero_grad(arr, (int64_t)XLENGTH(params)));
    return R_NilValue;
}
