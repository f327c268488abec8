/* .Call glue: ag_fit's data plan (the core's fit.c). Draws (the split, each epoch's shuffle) run
 * between r_draw_enter and r_draw_leave, so they come from R's .Random.seed or the run stream. */
#include <string.h>
#include "r_util.h"

static pg_fit *fit_get(SEXP x) { return r_get(x, R_FIT); }

/* setup: the run's set-up (batch sizes, val_split, shuffle and, resuming, the split state loaded
 * before the split; it takes the plan's) */
SEXP R_pg_fit_new(SEXP x, SEXP y, SEXP classify, SEXP setup, SEXP fixed_split)
{
    pg_tensor *xt = r_get(x, R_TENSOR), *yt = Rf_isNull(y) ? NULL : r_get(y, R_TENSOR);
    pg_fit_setup *su = r_get(setup, R_FIT_SETUP);
    pg_fit_params p = pg_fit_default_params();
    r_check(pg_fit_setup_plan_params(su, &p));
    p.classify = Rf_asInteger(classify); /* a pg_fit_classify code */
    p.fixed_split = Rf_asLogical(fixed_split) == 1;
    r_draw c = r_draw_enter();
    pg_fit *f = pg_fit_new(xt, yt, &p);
    r_draw_leave(c, f != NULL);
    SEXP out = PROTECT(r_wrap(f, R_FIT));
    r_check(pg_fit_setup_plan(su, f));
    UNPROTECT(1);
    return out;
}

/* c(n, n_train, n_val, training batches, micro-batches per logical batch, validation batches) */
SEXP R_pg_fit_sizes(SEXP fp)
{
    pg_fit_dims d;
    r_check(pg_fit_sizes(fit_get(fp), &d));
    const int64_t s[6] = {d.n, d.n_train, d.n_val, d.n_batches, d.accum, d.n_val_batches};
    return r_counts(s, 6);
}

/* list(x, y) of batch b (0-based) as ag_tensors (the plan's reused tensors); y NULL without */
SEXP R_pg_fit_batch(SEXP fp, SEXP val, SEXP b)
{
    pg_tensor *xb = NULL, *yb = NULL;
    if (pg_fit_batch(fit_get(fp), Rf_asLogical(val) == 1, (int64_t)r_num(b, "ag_fit: batch"), &xb,
                     &yb) < 0)
        r_fail();
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(out, 0, r_wrap_tensor(xb));
    if (yb) SET_VECTOR_ELT(out, 1, r_wrap_tensor(yb));
    UNPROTECT(1);
    return out;
}

SEXP R_pg_fit_record(SEXP fp, SEXP val, SEXP loss, SEXP out)
{
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    r_check(pg_fit_record(fit_get(fp), Rf_asLogical(val) == 1, r_num(loss, "ag_fit: loss"), o));
    return R_NilValue;
}

SEXP R_pg_fit_running(SEXP fp)
{
    SEXP v = PROTECT(Rf_allocVector(REALSXP, 2));
    r_check(pg_fit_running(fit_get(fp), REAL(v), REAL(v) + 1));
    UNPROTECT(1);
    return v;
}

/* data parallelism: this rank's chunk of every training batch; the epoch's statistics as sums */
SEXP R_pg_fit_shard(SEXP fp, SEXP rank, SEXP world)
{
    r_check(pg_fit_shard(fit_get(fp), (int64_t)r_num(rank, "ag_fit: rank"),
                         (int64_t)r_num(world, "ag_fit: world")));
    return R_NilValue;
}

SEXP R_pg_fit_stats_get(SEXP fp)
{
    pg_fit *f = fit_get(fp);
    const int64_t n = pg_fit_stats_len(f);
    if (n < 0) r_fail();
    SEXP v = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
    r_check(pg_fit_stats_export(f, REAL(v), n));
    UNPROTECT(1);
    return v;
}

SEXP R_pg_fit_stats_set(SEXP fp, SEXP buf)
{
    if (TYPEOF(buf) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: the reduced statistics must be doubles");
    r_check(pg_fit_stats_import(fit_get(fp), REAL(buf), XLENGTH(buf)));
    return R_NilValue;
}

/* ag_accuracy's operands: out [c, n] and y [k, n] double matrices; writes c, n, k */
static void acc_dims(SEXP out, SEXP y, int64_t *c, int64_t *n, int64_t *k)
{
    SEXP od = Rf_getAttrib(out, R_DimSymbol), yd = Rf_getAttrib(y, R_DimSymbol);
    if (TYPEOF(out) != REALSXP || TYPEOF(y) != REALSXP || XLENGTH(od) != 2 || XLENGTH(yd) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "ag_accuracy: outputs and targets must be double matrices");
    *c = INTEGER(od)[0], *n = INTEGER(od)[1], *k = INTEGER(yd)[0];
    if ((int64_t)INTEGER(yd)[1] != *n || XLENGTH(out) != *c * *n || XLENGTH(y) != *k * *n)
        r_stopf(PG_STATUS_ERR_SHAPE,
                "ag_accuracy: outputs and targets disagree in their number of samples");
}

/* ag_accuracy's count in the core: out [classes, n] and y (ids [1, n] or one-hot) as doubles */
SEXP R_pg_accuracy_count(SEXP out, SEXP y)
{
    int64_t c, n, k;
    acc_dims(out, y, &c, &n, &k);
    int64_t hit = 0;
    r_check(pg_accuracy_count(REAL(out), c, n, REAL(y), k, &hit));
    return Rf_ScalarReal((double)hit);
}

/* ag_accuracy's binary count in the core: out and y [rows, n] doubles, a threshold; c(hits,
 * elements) */
SEXP R_pg_binary_count(SEXP out, SEXP y, SEXP threshold)
{
    int64_t c, n, k;
    acc_dims(out, y, &c, &n, &k);
    int64_t hit = 0, nd = 0;
    r_check(pg_binary_count(REAL(out), c, n, REAL(y), k, Rf_asReal(threshold), &hit, &nd));
    SEXP r = Rf_allocVector(REALSXP, 2);
    REAL(r)[0] = (double)hit;
    REAL(r)[1] = (double)nd;
    return r;
}

/* ag_fit's class count before training: nclass (levels or max id + 1), outputs (NA: unknown) */
SEXP R_pg_fit_check_classes(SEXP nclass, SEXP outputs, SEXP levels)
{
    const double nc = Rf_asReal(nclass), k = Rf_asReal(outputs);
    if (ISNAN(nc) || ISNAN(k)) return R_NilValue;
    r_check(pg_fit_check_classes((int64_t)nc, (int64_t)k, Rf_asLogical(levels) == 1));
    return R_NilValue;
}

/* static = NULL's probe verdict (pg_fit_probe_why): NULL when the replay equals the eager loss */
SEXP R_pg_fit_probe_why(SEXP eager, SEXP replay, SEXP batch)
{
    char buf[512];
    if (!pg_fit_probe_why(Rf_asReal(eager), Rf_asReal(replay), (int64_t)Rf_asReal(batch), buf,
                          sizeof buf))
        return R_NilValue;
    return Rf_mkString(buf);
}

/* validation_data: the plan was made unshuffled; its training part reshuffles per epoch from now */
/* ag_fit: y has x's samples (dim(x), dim(y)), else the core's error with R's t() in its hint */
SEXP R_pg_fit_check_samples(SEXP dx, SEXP dy)
{
    if (XLENGTH(dx) != 2 || XLENGTH(dy) != 2) r_stopf(PG_STATUS_ERR_ARG, "expected two dims");
    const double *a = REAL(dx = PROTECT(Rf_coerceVector(dx, REALSXP)));
    const double *b = REAL(dy = PROTECT(Rf_coerceVector(dy, REALSXP)));
    const int rc = pg_fit_check_samples((int64_t)a[0], (int64_t)a[1], (int64_t)b[0], (int64_t)b[1],
                                        "t(x)", "t(y)");
    UNPROTECT(2);
    r_check(rc);
    return R_NilValue;
}

/* ag_dataloader: the same with its name, col_major = FALSE offered first */
SEXP R_pg_loader_check_samples(SEXP dx, SEXP dy)
{
    if (XLENGTH(dx) != 2 || XLENGTH(dy) != 2) r_stopf(PG_STATUS_ERR_ARG, "expected two dims");
    const double *a = REAL(dx = PROTECT(Rf_coerceVector(dx, REALSXP)));
    const double *b = REAL(dy = PROTECT(Rf_coerceVector(dy, REALSXP)));
    const int rc = pg_check_samples("ag_dataloader", (int64_t)a[0], (int64_t)a[1], (int64_t)b[0],
                                    (int64_t)b[1], "t(x)", "t(y)", "col_major = FALSE");
    UNPROTECT(2);
    r_check(rc);
    return R_NilValue;
}

/* ag_fit(validation_data =): the core's rules on dim(x), dim(y), dim(x_val), dim(y_val) (NULL
 * without targets); the val_split that holds out x_val's columns */
static const int64_t *dims2(SEXP d, int64_t *out)
{
    if (Rf_isNull(d)) return NULL;
    out[0] = (int64_t)r_num(VECTOR_ELT(d, 0), "ag_fit: rows");
    out[1] = (int64_t)r_num(VECTOR_ELT(d, 1), "ag_fit: columns");
    return out;
}

SEXP R_pg_fit_val_join(SEXP dims, SEXP val_split)
{
    int64_t d[4][2];
    const int64_t *p[4];
    for (int k = 0; k < 4; k++) p[k] = dims2(VECTOR_ELT(dims, k), d[k]);
    double out = 0;
    r_check(pg_fit_val_join(p[0], p[1], p[2], p[3], r_num(val_split, "ag_fit: val_split"), &out));
    return Rf_ScalarReal(out);
}

/* ag_dataloader's batch count (the core's rule, pg_batch_count): n / batch_size with drop_last,
 * else ceil(n / batch_size) */
SEXP R_pg_batch_count(SEXP n, SEXP batch_size, SEXP drop_last)
{
    const int64_t c = pg_batch_count("ag_dataloader", (int64_t)r_num(n, "ag_dataloader: n"),
                                     (int64_t)r_num(batch_size, "ag_dataloader: batch_size"),
                                     Rf_asLogical(drop_last) == TRUE);
    if (c < 0) r_fail();
    return Rf_ScalarInteger((int)c);
}
