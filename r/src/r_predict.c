/* R glue for ag_predict(type =) (native/predict.c) and a model file's 'target' metadata
 * (native/modelfile_target.c). */
#include "r_util.h"

static const char *str_arg(SEXP s)
{
    return Rf_isString(s) && XLENGTH(s) == 1 && STRING_ELT(s, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(s, 0))
        : NULL;
}

/* type: the core's code (0 response, 1 prob, 2 class); shown: how R shows a non-string type */
SEXP R_pg_predict_type(SEXP type, SEXP shown)
{
    int k = 0;
    r_check(pg_predict_type_parse("ag_predict", str_arg(type), str_arg(shown), &k));
    return Rf_ScalarInteger(k);
}

/* a loss name's classify kind (enum pg_fit_classify); fn names the caller */
SEXP R_pg_predict_classify(SEXP loss, SEXP fn)
{
    int k = 0;
    r_check(pg_predict_classify(str_arg(fn), str_arg(loss), &k));
    return Rf_ScalarInteger(k);
}

/* ag_predict's later batch: its output rows must be the first batch's (the core's text) */
SEXP R_pg_predict_batch_rows(SEXP fn, SEXP rows0, SEXP rows, SEXP batch_size)
{
    r_check(pg_predict_batch_rows(str_arg(fn), r_i64(Rf_asReal(rows0)), r_i64(Rf_asReal(rows)),
                                  r_i64(Rf_asReal(batch_size))));
    return R_NilValue;
}

/* ag_predict's batch of n samples: one output column per sample (the core's text) */
SEXP R_pg_predict_batch_cols(SEXP fn, SEXP rows, SEXP cols, SEXP n, SEXP batch_size)
{
    r_check(pg_predict_batch_cols(str_arg(fn), r_i64(Rf_asReal(rows)), r_i64(Rf_asReal(cols)),
                                  r_i64(Rf_asReal(n)), r_i64(Rf_asReal(batch_size))));
    return R_NilValue;
}

/* out: a double matrix [rows, n]; loss: a name or NULL; n_classes: -1 none; f32: the model's
 * dtype is f32, so probabilities are rounded to it (Python's float32 array, "response"'s
 * values). A matrix [res_rows, n] of doubles. */
SEXP R_pg_predict_transform(SEXP out, SEXP type, SEXP classify, SEXP loss, SEXP n_classes, SEXP f32)
{
    SEXP d = Rf_getAttrib(out, R_DimSymbol);
    if (!Rf_isReal(out) || XLENGTH(d) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "ag_predict: internal: the outputs are not a double matrix");
    const int64_t rows = INTEGER(d)[0], n = INTEGER(d)[1];
    SEXP res = PROTECT(Rf_allocMatrix(REALSXP, (int)rows, (int)n));
    int64_t rr = rows;
    int rc = pg_predict_transform("ag_predict", REAL(out), rows, n, Rf_asInteger(type),
                                  Rf_asInteger(classify), str_arg(loss),
                                  r_i64(Rf_asReal(n_classes)), REAL(res), &rr);
    if (rc) {
        UNPROTECT(1);
        r_fail();
    }
    if (Rf_asInteger(type) == PG_PREDICT_PROB && Rf_asLogical(f32) == TRUE)
        for (R_xlen_t i = 0; i < XLENGTH(res); i++) REAL(res)[i] = (double)(float)REAL(res)[i];
    if (rr != rows) { /* arg-max: one row of ids */
        SEXP one = PROTECT(Rf_allocMatrix(REALSXP, (int)rr, (int)n));
        for (int64_t j = 0; j < n; j++) REAL(one)[j] = REAL(res)[j];
        UNPROTECT(2);
        return one;
    }
    UNPROTECT(1);
    return res;
}
