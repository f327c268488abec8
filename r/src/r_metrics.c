/* .Call glue: ag_fit(metrics =) names and ag_evaluate's values, all computed in the core
 * (native/metrics.c), as Python's pyggmlr/fit/evaluate.py calls them. */
#include <string.h>
#include "r_util.h"

static const char *fn_of(SEXP fn)
{
    if (!Rf_isString(fn) || XLENGTH(fn) != 1) Rf_error("internal: fn must be one string");
    return CHAR(STRING_ELT(fn, 0));
}

/* a character vector's strings (NA: NULL, the core's "missing name"), R_alloc'ed */
static const char **names_of(SEXP names)
{
    const R_xlen_t m = Rf_isNull(names) ? 0 : XLENGTH(names);
    const char **s = (const char **)R_alloc((size_t)(m ? m : 1), sizeof *s);
    for (R_xlen_t i = 0; i < m; i++)
        s[i] = STRING_ELT(names, i) == NA_STRING ? NULL : CHAR(STRING_ELT(names, i));
    return s;
}

/* the codes of a character vector of metric names, unique, checked against classify */
SEXP R_pg_metric_codes(SEXP fn, SEXP names, SEXP classify, SEXP in_fit)
{
    const R_xlen_t m = XLENGTH(names);
    SEXP r = PROTECT(Rf_allocVector(INTSXP, m));
    const int64_t k = pg_metric_codes(fn_of(fn), names_of(names), m, Rf_asInteger(classify),
                                      Rf_asLogical(in_fit) == 1, INTEGER(r));
    if (k < 0) r_fail();
    r = Rf_lengthgets(r, (R_xlen_t)k);
    UNPROTECT(1);
    return r;
}

SEXP R_pg_metric_name(SEXP code) { return Rf_mkString(pg_metric_name(Rf_asInteger(code))); }

/* ag_evaluate's loss or metrics: one of them given (the core's text) */
SEXP R_pg_metric_asked(SEXP fn, SEXP has_loss, SEXP has_metrics)
{
    r_check(
        pg_metric_asked(fn_of(fn), Rf_asLogical(has_loss) == 1, Rf_asLogical(has_metrics) == 1));
    return R_NilValue;
}

/* ag_evaluate's results (pg_evaluate): out [k, n] and y [rows, n] double matrices, loss NULL or
 * a name, threshold NULL or a number, metrics NULL or names; a named list: loss (when given),
 * then each metric, the confusion matrix an integer matrix (rows true, columns predicted) */
SEXP R_pg_evaluate(SEXP fn, SEXP loss, SEXP threshold, SEXP metrics, SEXP out, SEXP y)
{
    const char *f = fn_of(fn);
    SEXP od = Rf_getAttrib(out, R_DimSymbol), yd = Rf_getAttrib(y, R_DimSymbol);
    if (TYPEOF(out) != REALSXP || TYPEOF(y) != REALSXP || XLENGTH(od) != 2 || XLENGTH(yd) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "%s: outputs and targets must be double matrices", f);
    const int64_t k = INTEGER(od)[0], nm = Rf_isNull(metrics) ? 0 : XLENGTH(metrics);
    int cm_wanted = 0; /* counts room only when asked for: k outputs may be many */
    for (int64_t i = 0; i < nm; i++)
        cm_wanted |= STRING_ELT(metrics, i) != NA_STRING &&
            !strcmp(CHAR(STRING_ELT(metrics, i)), "confusion_matrix");
    const int64_t side = k > 2 ? k : 2, room = cm_wanted && side <= 46340 ? side * side : 0;
    int *codes = (int *)R_alloc((size_t)(nm ? nm : 1), sizeof *codes);
    double *vals = (double *)R_alloc((size_t)(nm ? nm : 1), sizeof *vals), lv = 0;
    int64_t *cm = room ? (int64_t *)R_alloc((size_t)room, sizeof *cm) : NULL;
    const int64_t m = pg_evaluate(
        f, Rf_isNull(loss) ? NULL : CHAR(STRING_ELT(loss, 0)), !Rf_isNull(threshold),
        Rf_isNull(threshold) ? NAN : Rf_asReal(threshold), names_of(metrics), nm, REAL(out), k,
        INTEGER(od)[1], REAL(y), INTEGER(yd)[0], INTEGER(yd)[1], &lv, codes, vals, cm, room);
    if (m < 0) r_fail();
    const int has_loss = !Rf_isNull(loss);
    SEXP r = PROTECT(Rf_allocVector(VECSXP, m + has_loss));
    SEXP names = PROTECT(Rf_allocVector(STRSXP, m + has_loss));
    if (has_loss)
        SET_VECTOR_ELT(r, 0, Rf_ScalarReal(lv)), SET_STRING_ELT(names, 0, Rf_mkChar("loss"));
    for (int64_t i = 0; i < m; i++) {
        SEXP v;
        if (codes[i] == PG_METRIC_CONFUSION_MATRIX) {
            const int c = (int)vals[i];
            v = Rf_allocMatrix(INTSXP, c, c);
            for (int64_t j = 0; j < (int64_t)c * c; j++) INTEGER(v)[j] = (int)cm[j];
        } else {
            v = Rf_ScalarReal(vals[i]);
        }
        SET_VECTOR_ELT(r, has_loss + i, v);
        SET_STRING_ELT(names, has_loss + i, Rf_mkChar(pg_metric_name(codes[i])));
    }
    Rf_setAttrib(r, R_NamesSymbol, names);
    UNPROTECT(2);
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
