/* .Call glue: ag_fit(metrics =) names and ag_evaluate's values, all computed in the core
 * (native/metrics.c), as Python's pyggmlr/fit/evaluate.py calls them. */
#include <string.h>
#include "r_util.h"

static const char *fn_of(SEXP fn)
{
    if (!Rf_isString(fn) || XLENGTH(fn) != 1) Rf_error("internal: fn must be one string");
    return CHAR(STRING_ELT(fn, 0));
}

/* the codes of a character vector of metric names, unique, checked against classify */
SEXP R_pg_metric_codes(SEXP fn, SEXP names, SEXP classify, SEXP in_fit)
{
    const char *f = fn_of(fn);
    const R_xlen_t m = XLENGTH(names);
    SEXP r = PROTECT(Rf_allocVector(INTSXP, m));
    R_xlen_t k = 0;
    for (R_xlen_t i = 0; i < m; i++) {
        const char *nm = STRING_ELT(names, i) == NA_STRING ? NULL : CHAR(STRING_ELT(names, i));
        const int c = pg_metric_code(f, nm, Rf_asInteger(classify), Rf_asLogical(in_fit) == 1);
        if (c < 0) r_fail();
        int seen = 0;
        for (R_xlen_t j = 0; j < k; j++) seen |= INTEGER(r)[j] == c;
        if (!seen) INTEGER(r)[k++] = c;
    }
    r = Rf_lengthgets(r, k);
    UNPROTECT(1);
    return r;
}

SEXP R_pg_metric_name(SEXP code) { return Rf_mkString(pg_metric_name(Rf_asInteger(code))); }

/* ag_evaluate's reading of the outputs (pg_metric_read): loss NULL or a name, dims the outputs',
 * yn y's samples; c(loss code (-1: none), classify) */
/* ag_evaluate's loss or metrics: one of them given (the core's text) */
SEXP R_pg_metric_asked(SEXP fn, SEXP has_loss, SEXP has_metrics)
{
    r_check(
        pg_metric_asked(fn_of(fn), Rf_asLogical(has_loss) == 1, Rf_asLogical(has_metrics) == 1));
    return R_NilValue;
}

SEXP R_pg_metric_read(SEXP fn, SEXP name, SEXP has_threshold, SEXP dims, SEXP yn)
{
    int loss = 0, classify = 0;
    dims = PROTECT(Rf_coerceVector(dims, REALSXP));
    const int rc = pg_metric_read(fn_of(fn), Rf_isNull(name) ? NULL : CHAR(STRING_ELT(name, 0)),
                                  Rf_asLogical(has_threshold) == 1, (int64_t)REAL(dims)[0],
                                  (int64_t)REAL(dims)[1], (int64_t)Rf_asReal(yn), &loss, &classify);
    UNPROTECT(1);
    r_check(rc);
    SEXP r = Rf_allocVector(INTSXP, 2);
    INTEGER(r)[0] = loss;
    INTEGER(r)[1] = classify;
    return r;
}

/* out [k, n] and y [rows, n] double matrices; writes k, n, rows */
static void dims(const char *f, SEXP out, SEXP y, int64_t *k, int64_t *n, int64_t *rows)
{
    SEXP od = Rf_getAttrib(out, R_DimSymbol), yd = Rf_getAttrib(y, R_DimSymbol);
    if (TYPEOF(out) != REALSXP || TYPEOF(y) != REALSXP || XLENGTH(od) != 2 || XLENGTH(yd) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "%s: outputs and targets must be double matrices", f);
    *k = INTEGER(od)[0], *n = INTEGER(od)[1], *rows = INTEGER(yd)[0];
    if ((int64_t)INTEGER(yd)[1] != *n)
        r_stopf(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples but y has %lld", f, (long long)*n,
                (long long)INTEGER(yd)[1]);
}

/* ag_evaluate's loss value (loss: a PG_FIT_LOSS_* code) */
SEXP R_pg_metric_loss_value(SEXP fn, SEXP loss, SEXP out, SEXP y)
{
    const char *f = fn_of(fn);
    int64_t k, n, rows;
    double v = 0;
    dims(f, out, y, &k, &n, &rows);
    r_check(pg_metric_loss_value(f, Rf_asInteger(loss), REAL(out), k, n, REAL(y), rows, &v));
    return Rf_ScalarReal(v);
}

/* one metric: a number, or the confusion matrix (an integer matrix, rows true, columns predicted) */
SEXP R_pg_metric_value(SEXP fn, SEXP code, SEXP classify, SEXP threshold, SEXP out, SEXP y)
{
    const char *f = fn_of(fn);
    int64_t k, n, rows;
    dims(f, out, y, &k, &n, &rows);
    const int c = Rf_asInteger(code), cl = Rf_asInteger(classify);
    const double thr = Rf_asReal(threshold); /* NA: the classify's default */
    if (c != PG_METRIC_CONFUSION_MATRIX) {
        double v = 0;
        r_check(
            pg_metric_value(f, c, cl, ISNAN(thr) ? NAN : thr, REAL(out), k, n, REAL(y), rows, &v));
        return Rf_ScalarReal(v);
    }
    const int64_t m = pg_metric_nclass(cl, k);
    if (m < 1 || m > 46340)
        r_stopf(PG_STATUS_ERR_VALUE, "%s: confusion_matrix needs a classifier", f);
    int64_t *cm = (int64_t *)R_alloc((size_t)(m * m), sizeof *cm);
    r_check(pg_confusion_matrix(f, cl, ISNAN(thr) ? NAN : thr, REAL(out), k, n, REAL(y), rows, cm));
    SEXP r = PROTECT(Rf_allocMatrix(INTSXP, (int)m, (int)m));
    for (int64_t i = 0; i < m * m; i++) INTEGER(r)[i] = (int)cm[i];
    UNPROTECT(1);
    return r;
}

/* ag_fit(metrics =): keep the epoch's outputs in the plan for these codes (integer vector) */
SEXP R_pg_fit_metrics(SEXP fp, SEXP codes)
{
    SEXP c = PROTECT(Rf_coerceVector(codes, INTSXP));
    r_check(pg_fit_metrics(r_get(fp, R_FIT), XLENGTH(c), INTEGER(c)));
    UNPROTECT(1);
    return R_NilValue;
}

/* the monitors' mask once the metrics are set (pg_fit_monitor_mask) */
SEXP R_pg_fit_monitor_mask(SEXP fp)
{
    const int m = pg_fit_monitor_mask(r_get(fp, R_FIT));
    if (m < 0) r_fail();
    return Rf_ScalarInteger(m);
}
