/* .Call glue: ag_fit's data plan (the core's fit.c). Draws (the split, each epoch's shuffle) run
 * between r_draw_enter and r_draw_leave, so they come from R's .Random.seed or the run stream. */
#include <math.h>
#include <string.h>
#include "r_util.h"

static pg_fit *fit_get(SEXP x) { return r_get(x, R_FIT); }

/* setup: the run's set-up (batch sizes, val_split, shuffle and, resuming, the split state loaded
 * before the split; it takes the plan's); xv, yv: validation_data's tensors (NULL: none), which
 * the core appends as the validation part */
SEXP R_pg_fit_new(SEXP x, SEXP y, SEXP classify, SEXP setup, SEXP xv, SEXP yv)
{
    pg_tensor *xt = r_get(x, R_TENSOR), *yt = Rf_isNull(y) ? NULL : r_get(y, R_TENSOR);
    pg_tensor *xvt = Rf_isNull(xv) ? NULL : r_get(xv, R_TENSOR);
    pg_tensor *yvt = Rf_isNull(yv) ? NULL : r_get(yv, R_TENSOR);
    pg_fit_setup *su = r_get(setup, R_FIT_SETUP);
    const int classify_code = Rf_asInteger(classify); /* a pg_fit_classify code */
    r_draw c = r_draw_enter();                        /* the plan draws from R's stream */
    pg_fit *f = pg_fit_setup_new_plan(su, xt, yt, classify_code, NULL, xvt, yvt);
    r_draw_leave(c, f != NULL);
    return r_wrap(f, R_FIT);
}

/* c(n, n_train, n_val, training batches, micro-batches per logical batch, validation batches) */
SEXP R_pg_fit_sizes(SEXP fp)
{
    pg_fit_dims d;
    r_check(pg_fit_sizes(fit_get(fp), &d));
    const int64_t s[6] = {d.n, d.n_train, d.n_val, d.n_batches, d.accum, d.n_val_batches};
    return r_counts(s, 6);
}

/* the training batches epochs first..nepoch walk: the progress total (the core's) */
SEXP R_pg_fit_total_batches(SEXP fp, SEXP nepoch, SEXP first)
{
    int64_t t = pg_fit_total_batches(fit_get(fp), (int64_t)r_num(nepoch, "ag_fit: nepoch"),
                                     (int64_t)r_num(first, "ag_fit: first epoch"));
    if (t < 0) r_fail();
    return Rf_ScalarReal((double)t);
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

/* ag_accuracy's value in the core (pg_accuracy): out [k, n] and y [rows, m] double matrices,
 * threshold (NULL: none), bools (y was a logical vector) */
SEXP R_pg_accuracy(SEXP out, SEXP y, SEXP threshold, SEXP bools)
{
    SEXP od = Rf_getAttrib(out, R_DimSymbol), yd = Rf_getAttrib(y, R_DimSymbol);
    if (TYPEOF(out) != REALSXP || TYPEOF(y) != REALSXP || XLENGTH(od) != 2 || XLENGTH(yd) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "ag_accuracy: outputs and targets must be double matrices");
    double acc = 0;
    r_check(pg_accuracy("ag_accuracy", REAL(out), INTEGER(od)[0], INTEGER(od)[1], REAL(y),
                        INTEGER(yd)[0], INTEGER(yd)[1], !Rf_isNull(threshold),
                        Rf_isNull(threshold) ? 0.5 : Rf_asReal(threshold), Rf_asLogical(bools) == 1,
                        &acc));
    return Rf_ScalarReal(acc);
}

/* ag_fit's targets Y (a double matrix) against dim(x) and, under classify arg-max, the model's
 * outputs (NA: unknown) and a factor's levels (NULL: none): pg_fit_targets with R's t() in the
 * hint and its 1-based idiom; returns class_weight's class count (the core's rule) */
SEXP R_pg_fit_targets(SEXP dx, SEXP y, SEXP classify, SEXP outputs, SEXP nlevels)
{
    SEXP dy = Rf_getAttrib(y, R_DimSymbol);
    if (XLENGTH(dx) != 2 || XLENGTH(dy) != 2 || TYPEOF(y) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: targets must be a double matrix");
    const double *a = REAL(dx = PROTECT(Rf_coerceVector(dx, REALSXP))), k = Rf_asReal(outputs);
    int64_t nclass = -1;
    const int rc = pg_fit_targets((int64_t)a[0], (int64_t)a[1], INTEGER(dy)[0], INTEGER(dy)[1],
                                  REAL(y), Rf_asInteger(classify), ISNAN(k) ? -1 : (int64_t)k,
                                  Rf_isNull(nlevels) ? -1 : r_i64(Rf_asReal(nlevels)), 1, "t(x)",
                                  "t(y)", &nclass);
    UNPROTECT(1);
    r_check(rc);
    return Rf_ScalarReal((double)nclass);
}

/* y's rows, the metric codes (an integer vector) and validation_data's class ids (a double
 * vector, empty: none) against the model's outputs (NULL / NA: unknown) for the built-in loss
 * code (-1: a function): pg_fit_outputs_check */
SEXP R_pg_fit_outputs_check(SEXP loss, SEXP metrics, SEXP rows, SEXP ids, SEXP outputs)
{
    if (TYPEOF(metrics) != INTSXP || TYPEOF(ids) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_fit: metric codes must be integers and ids doubles");
    const double k = Rf_isNull(outputs) ? NA_REAL : Rf_asReal(outputs);
    r_check(pg_fit_outputs_check(Rf_asInteger(loss), INTEGER(metrics), XLENGTH(metrics),
                                 r_i64(Rf_asReal(rows)), REAL(ids), XLENGTH(ids),
                                 ISNAN(k) ? -1 : (int64_t)k));
    return R_NilValue;
}

/* ag_fit's optimizer object (its handle) against the model's parameters (a list of tensor
 * handles): pg_fit_optim_check */
SEXP R_pg_fit_optim_check(SEXP h, SEXP params)
{
    pg_tensor **arr = r_handle_array(params, "ag_fit");
    r_check(pg_fit_optim_check(r_get(h, R_OPTIM), arr, XLENGTH(params)));
    return R_NilValue;
}

/* the [features, n] rule (pg_fit_cols) for the value v (samples: n 0 refused): c(rows, n), else
 * the core's text */
SEXP R_pg_fit_cols(SEXP fn, SEXP what, SEXP v, SEXP samples)
{
    int nd = 0;
    int64_t *d = r_dims(v, &nd), rows = 0, n = 0;
    r_check(pg_fit_cols(CHAR(STRING_ELT(fn, 0)), CHAR(STRING_ELT(what, 0)), d, nd,
                        Rf_asLogical(samples) == 1, &rows, &n));
    SEXP r = Rf_allocVector(REALSXP, 2);
    REAL(r)[0] = (double)rows, REAL(r)[1] = (double)n;
    return r;
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

/* keras' verbose: number (is.numeric, one, not NA) v's mode 0, 1, 2 (pg_fit_verbosity) */
SEXP R_pg_fit_verbosity(SEXP number, SEXP v, SEXP shown)
{
    int mode = 0;
    r_check(pg_fit_verbosity(Rf_asLogical(number) == 1, Rf_asReal(v), CHAR(STRING_ELT(shown, 0)), 1,
                             &mode));
    return Rf_ScalarInteger(mode);
}

/* distributed one flag, static one flag or NULL (pg_fit_flags_check's texts) */
SEXP R_pg_fit_flags_check(SEXP distributed_ok, SEXP static_ok)
{
    r_check(pg_fit_flags_check(Rf_asLogical(distributed_ok) == 1, Rf_asLogical(static_ok) == 1, 1));
    return R_NilValue;
}

/* what: a pg_fit_kind name ("LOSS") */
SEXP R_pg_fit_kind_fail(SEXP what, SEXP shown, SEXP epoch)
{
    static const char *K[] = {"VALIDATION_DATA", "LOSS",     "OPT_PARAMS",
                              "OPT_PARAMS_FN",   "MODEL",    "NO_PARAMS",
                              "CALLBACKS",       "CALLBACK", "LOSS_VALUE"};
    int k = 0;
    while (k < 9 && strcmp(CHAR(STRING_ELT(what, 0)), K[k])) k++;
    r_check(pg_fit_kind_fail(k, CHAR(STRING_ELT(shown, 0)), r_i64(Rf_asReal(epoch)), 1));
    return R_NilValue;
}

SEXP R_pg_fit_resume_from_fail(SEXP shown)
{
    r_check(pg_fit_resume_from_fail(CHAR(STRING_ELT(shown, 0))));
    return R_NilValue;
}

/* ag_fit(x = an ag_dataloader): y given, or batch_size / shuffle other than ag_fit's defaults
 * (batch_size as given: one number, as is.numeric, or none) */
SEXP R_pg_fit_loader_check(SEXP has_y, SEXP batch_size, SEXP shuffle_true)
{
    const int t = TYPEOF(batch_size);
    const int num =
        (t == REALSXP || (t == INTSXP && !Rf_isFactor(batch_size))) && XLENGTH(batch_size) == 1;
    r_check(pg_fit_loader_check(Rf_asLogical(has_y) == 1, num ? Rf_asReal(batch_size) : NAN,
                                Rf_asLogical(shuffle_true) == 1));
    return R_NilValue;
}

/* a factor y as 0-based ids (NA: missing): its missing labels, then its levels against loss */
SEXP R_pg_fit_labels_check(SEXP loss, SEXP nlabels, SEXP ids)
{
    ids = PROTECT(Rf_coerceVector(ids, REALSXP)); /* NA_integer_ -> NA_real_ (a NaN) */
    const int rc = pg_fit_labels_check(Rf_translateCharUTF8(STRING_ELT(loss, 0)),
                                       r_i64(Rf_asReal(nlabels)), REAL(ids), XLENGTH(ids), 1);
    UNPROTECT(1);
    r_check(rc);
    return R_NilValue;
}

/* labels (a character vector, NA missing) as 0-based ids (doubles) of classes: the core's rules
 * and texts, in UTF-8 */
SEXP R_pg_labels_code(SEXP fn, SEXP what, SEXP whose, SEXP labels, SEXP classes, SEXP validation)
{
    const R_xlen_t n = XLENGTH(labels), k = XLENGTH(classes);
    const char **l = (const char **)R_alloc((size_t)(n ? n : 1), sizeof *l);
    const char **c = (const char **)R_alloc((size_t)(k ? k : 1), sizeof *c);
    for (R_xlen_t i = 0; i < n; i++)
        l[i] =
            STRING_ELT(labels, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(labels, i));
    for (R_xlen_t i = 0; i < k; i++) c[i] = Rf_translateCharUTF8(STRING_ELT(classes, i));
    SEXP ids = PROTECT(Rf_allocVector(REALSXP, n));
    const int st = pg_labels_code(CHAR(STRING_ELT(fn, 0)), CHAR(STRING_ELT(what, 0)),
                                  CHAR(STRING_ELT(whose, 0)), l, (int64_t)n, c, (int64_t)k,
                                  Rf_asLogical(validation) == 1, REAL(ids));
    UNPROTECT(1);
    r_check(st);
    return ids;
}

/* a character vector's classes (pg_labels_classes: code-point order, NA missing): the 1-based
 * index of each class's first label, in class order */
SEXP R_pg_labels_classes(SEXP labels)
{
    const R_xlen_t n = XLENGTH(labels);
    const char **l = (const char **)R_alloc((size_t)(n ? n : 1), sizeof *l);
    int64_t *ids = (int64_t *)R_alloc((size_t)(n ? n : 1), sizeof *ids);
    int64_t *first = (int64_t *)R_alloc((size_t)(n ? n : 1), sizeof *first);
    for (R_xlen_t i = 0; i < n; i++)
        l[i] =
            STRING_ELT(labels, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(labels, i));
    const int64_t k = pg_labels_classes(l, (int64_t)n, ids, first);
    if (k < 0) r_fail();
    SEXP r = Rf_allocVector(REALSXP, (R_xlen_t)k);
    for (int64_t c = 0; c < k; c++) REAL(r)[c] = (double)first[c] + 1;
    return r;
}

/* labels y: one label a sample (pg_labels_shape) */
SEXP R_pg_labels_shape(SEXP y)
{
    int nd = 0;
    const int64_t *d = r_dims(y, &nd);
    r_check(pg_labels_shape(d, nd));
    return R_NilValue;
}

/* a model with return_state set: the core's refusal naming fn and the model's name */
SEXP R_pg_fit_return_state(SEXP fn, SEXP model)
{
    r_check(
        pg_fit_return_state(CHAR(STRING_ELT(fn, 0)),
                            XLENGTH(model) ? Rf_translateCharUTF8(STRING_ELT(model, 0)) : NULL));
    return R_NilValue;
}

/* a model with no forward(x) or no parameters(): the core's refusal naming fn and its class */
SEXP R_pg_fit_model_fail(SEXP fn, SEXP params, SEXP got)
{
    r_check(pg_fit_model_fail(CHAR(STRING_ELT(fn, 0)), Rf_asLogical(params) == 1,
                              Rf_translateCharUTF8(STRING_ELT(got, 0))));
    return R_NilValue;
}

/* ag_fit(metrics =)'s codes without "accuracy", refused without targets */
SEXP R_pg_fit_metric_codes_fit(SEXP codes, SEXP has_y)
{
    SEXP c = PROTECT(Rf_duplicate(Rf_coerceVector(codes, INTSXP)));
    const int64_t n = pg_fit_metric_codes_fit(INTEGER(c), XLENGTH(c), Rf_asLogical(has_y) == 1);
    UNPROTECT(1);
    if (n < 0) r_fail();
    return Rf_xlengthgets(c, (R_xlen_t)n);
}
