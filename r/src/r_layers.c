/* .Call glue for the layer ops of native/pg_api_layers.h. */
#include "r_util.h"

static pg_tensor *opt_tensor(SEXP x)
{
    return Rf_isNull(x) ? NULL : (pg_tensor *)r_get(x, R_TENSOR);
}

SEXP R_pg_batch_norm(SEXP x, SEXP gamma, SEXP beta, SEXP rm, SEXP rv, SEXP eps, SEXP momentum,
                     SEXP training)
{
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_batch_norm(xt, opt_tensor(gamma), opt_tensor(beta), opt_tensor(rm),
                                opt_tensor(rv), r_num(eps, "ag_batch_norm: eps"),
                                r_num(momentum, "ag_batch_norm: momentum"),
                                Rf_asLogical(training) == TRUE),
                  R_TENSOR);
}

SEXP R_pg_layer_norm(SEXP x, SEXP gamma, SEXP beta, SEXP eps)
{
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(
        pg_layer_norm(xt, opt_tensor(gamma), opt_tensor(beta), r_num(eps, "ag_layer_norm: eps")),
        R_TENSOR);
}

SEXP R_pg_embedding(SEXP weight, SEXP ids)
{
    pg_tensor *w = r_get(weight, R_TENSOR);
    if (TYPEOF(ids) != REALSXP) r_stopf(PG_STATUS_ERR_ARG, "ag_embedding: ids must be doubles");
    return r_wrap(pg_embedding(w, REAL(ids), (int64_t)XLENGTH(ids)), R_TENSOR);
}

/* ids held in a tensor: read on every run, so a compiled graph refills them */
SEXP R_pg_embedding_ids(SEXP weight, SEXP ids)
{
    return r_wrap(pg_embedding_ids(r_get(weight, R_TENSOR), r_get(ids, R_TENSOR)), R_TENSOR);
}

SEXP R_pg_slice_rows(SEXP x, SEXP from, SEXP n)
{
    pg_tensor *xt = r_get(x, R_TENSOR);
    return r_wrap(pg_slice_rows(xt, (int64_t)r_num(from, "ag_slice_rows: from"),
                                (int64_t)r_num(n, "ag_slice_rows: n")),
                  R_TENSOR);
}

SEXP R_pg_concat_rows(SEXP a, SEXP b)
{
    pg_tensor *at = r_get(a, R_TENSOR), *bt = r_get(b, R_TENSOR);
    return r_wrap(pg_concat_rows(at, bt), R_TENSOR);
}

SEXP R_pg_matmul_t(SEXP a, SEXP b, SEXP ta, SEXP tb, SEXP alpha)
{
    pg_tensor *at = r_get(a, R_TENSOR), *bt = r_get(b, R_TENSOR);
    return r_wrap(pg_matmul_t(at, bt, Rf_asLogical(ta) == TRUE, Rf_asLogical(tb) == TRUE,
                              r_num(alpha, "alpha")),
                  R_TENSOR);
}

SEXP R_pg_causal_mask(SEXP x) { return r_wrap(pg_causal_mask(r_get(x, R_TENSOR)), R_TENSOR); }

SEXP R_pg_normalization(SEXP x, SEXP mean, SEXP variance, SEXP eps)
{
    return r_wrap(pg_normalization(r_get(x, R_TENSOR), r_get(mean, R_TENSOR),
                                   r_get(variance, R_TENSOR), r_num(eps, "ag_normalization: eps")),
                  R_TENSOR);
}

SEXP R_pg_normalization_adapt(SEXP x, SEXP mean, SEXP variance)
{
    r_check(pg_normalization_adapt(r_get(x, R_TENSOR), r_get(mean, R_TENSOR),
                                   r_get(variance, R_TENSOR)));
    return R_NilValue;
}

SEXP R_pg_normalization_check(SEXP mean, SEXP variance, SEXP features)
{
    r_check(pg_normalization_check(r_get(mean, R_TENSOR), r_get(variance, R_TENSOR),
                                   (int64_t)r_num(features, "ag_normalization: features")));
    return R_NilValue;
}
