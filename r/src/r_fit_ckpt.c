/* .Call glue: ag_fit's checkpoint run state in the core's layout (native/fit_ckpt.c, written;
 * fit_resume.c, read back), so R and Python write and read one format. */
#include <math.h>
#include <string.h>
#include "r_util.h"

static const char *utf8(SEXP s, R_xlen_t i) { return Rf_translateCharUTF8(STRING_ELT(s, i)); }

/* value key of an R list (first match; absent, NULL or empty: NA), as unlist(l)[key] reads it */
static double list_num(SEXP l, const char *key)
{
    SEXP nm = Rf_getAttrib(l, R_NamesSymbol);
    for (R_xlen_t j = 0; TYPEOF(l) == VECSXP && nm != R_NilValue && j < XLENGTH(l); j++)
        if (!strcmp(utf8(nm, j), key))
            return Rf_length(VECTOR_ELT(l, j)) ? Rf_asReal(VECTOR_ELT(l, j)) : NA_REAL;
    return NA_REAL;
}

/* the metadata 'extra' text of the run set up by setup: logs (the run's per-epoch logs, named
 * lists), metrics (the metric columns' names after the core's), rng (the stream's state),
 * states (a list: each callback's state JSON text or NULL); stopped / best epoch: none */
SEXP R_pg_fit_ckpt_extra(SEXP setup, SEXP logs, SEXP metrics, SEXP rng, SEXP states)
{
    pg_fit_setup *su = r_get(setup, R_FIT_SETUP);
    if (TYPEOF(logs) != VECSXP || TYPEOF(metrics) != STRSXP || TYPEOF(rng) != INTSXP ||
        XLENGTH(rng) != PG_RNG_STATE_LEN || TYPEOF(states) != VECSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_model_checkpoint: bad run state for the checkpoint");
    const int64_t ne = XLENGTH(logs), nm = XLENGTH(metrics), ncb = XLENGTH(states);
    const int64_t ncol = 1 + PG_FIT_LOG_COUNT + nm;
    const char **names = (const char **)R_alloc((size_t)nm + 1, sizeof(char *));
    const char **cb = (const char **)R_alloc((size_t)ncb + 1, sizeof(char *));
    double *hist = (double *)R_alloc((size_t)(ncol * ne + 1), sizeof(double));
    for (R_xlen_t i = 0; i < nm; i++) names[i] = utf8(metrics, i);
    for (R_xlen_t i = 0; i < ncb; i++) {
        SEXP s = VECTOR_ELT(states, i);
        cb[i] = TYPEOF(s) == STRSXP && XLENGTH(s) == 1 ? utf8(s, 0) : NULL;
    }
    for (int64_t c = 0; c < ncol; c++) { /* the core's columns: epoch, its logs, the metrics */
        const char *k = c == 0      ? "epoch"
            : c <= PG_FIT_LOG_COUNT ? pg_fit_log_name((int)c - 1)
                                    : names[c - 1 - PG_FIT_LOG_COUNT];
        for (int64_t i = 0; i < ne; i++) hist[c * ne + i] = list_num(VECTOR_ELT(logs, i), k);
    }
    int64_t sn = pg_fit_setup_settings(su, NULL, 0);
    if (sn < 0) r_fail();
    char *s = R_alloc((size_t)sn + 1, 1);
    pg_fit_setup_settings(su, s, sn + 1);
    int64_t need =
        pg_fit_ckpt_extra(s, hist, ne, nm, names, NAN, NAN, INTEGER(rng), ncb, cb, NULL, 0);
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    pg_fit_ckpt_extra(s, hist, ne, nm, names, NAN, NAN, INTEGER(rng), ncb, cb, buf, need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}

/* callback i's (0-based) arrays (list(params, buffers) of named matrices, either NULL) as the
 * model file's extra tensors: list(name, value, dtype) entries, names the core's */
SEXP R_pg_fit_ckpt_more(SEXP i, SEXP arrays, SEXP dtype)
{
    static const char *const KIND[] = {"params", "buffers"},
                             *const F[] = {"name", "value", "dtype"};
    SEXP an = Rf_getAttrib(arrays, R_NamesSymbol), out = PROTECT(Rf_allocVector(VECSXP, 0));
    for (int kind = 0; kind < 2 && TYPEOF(arrays) == VECSXP && an != R_NilValue; kind++) {
        SEXP d = R_NilValue;
        for (R_xlen_t j = 0; j < XLENGTH(arrays) && d == R_NilValue; j++)
            if (!strcmp(CHAR(STRING_ELT(an, j)), KIND[kind])) d = VECTOR_ELT(arrays, j);
        SEXP dn = Rf_getAttrib(d, R_NamesSymbol);
        if (TYPEOF(d) != VECSXP || dn == R_NilValue) continue;
        SEXP grown = PROTECT(Rf_allocVector(VECSXP, XLENGTH(out) + XLENGTH(d)));
        for (R_xlen_t j = 0; j < XLENGTH(out); j++) SET_VECTOR_ELT(grown, j, VECTOR_ELT(out, j));
        for (R_xlen_t j = 0; j < XLENGTH(d); j++) {
            const char *k = utf8(dn, j);
            int64_t need = pg_fit_ckpt_tensor_name(r_i64(Rf_asReal(i)), kind, k, NULL, 0);
            if (need < 0) r_fail();
            char *buf = R_alloc((size_t)need + 1, 1);
            pg_fit_ckpt_tensor_name(r_i64(Rf_asReal(i)), kind, k, buf, need + 1);
            SEXP e = SET_VECTOR_ELT(grown, XLENGTH(out) + j, r_named_list(F, 3));
            SET_VECTOR_ELT(e, 0, Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8)));
            SET_VECTOR_ELT(e, 1, VECTOR_ELT(d, j));
            SET_VECTOR_ELT(e, 2, dtype);
        }
        out = grown;
        UNPROTECT(2);
        PROTECT(out);
    }
    UNPROTECT(1);
    return out;
}

/* the checkpoint's tensors (a named list, as the model file's reader gives them) by callback:
 * a list of ncb, callback i's list(params, buffers) of named matrices, or NULL when it has none */
SEXP R_pg_fit_ckpt_arrays(SEXP tensors, SEXP ncb)
{
    static const char *const F[] = {"params", "buffers"};
    SEXP names = Rf_getAttrib(tensors, R_NamesSymbol), dt = Rf_install("dtype");
    const R_xlen_t n = names == R_NilValue ? 0 : XLENGTH(tensors), m = Rf_asInteger(ncb);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, m));
    for (R_xlen_t j = 0; j < n; j++) {
        const char *s = utf8(names, j);
        int64_t i = 0, rest = 0;
        int k = 0;
        if (!pg_fit_ckpt_tensor_parse(s, &i, &k, &rest) || i >= m) continue;
        SEXP e = VECTOR_ELT(out, i);
        if (e == R_NilValue) {
            e = SET_VECTOR_ELT(out, i, r_named_list(F, 2));
            for (int q = 0; q < 2; q++) SET_VECTOR_ELT(e, q, Rf_allocVector(VECSXP, 0));
        }
        /* appended by name (a list grown by one: a callback keeps few arrays) */
        SEXP old = VECTOR_ELT(e, k), on = Rf_getAttrib(old, R_NamesSymbol);
        SEXP v = PROTECT(Rf_allocVector(VECSXP, XLENGTH(old) + 1));
        SEXP vn = PROTECT(Rf_allocVector(STRSXP, XLENGTH(old) + 1));
        for (R_xlen_t q = 0; q < XLENGTH(old); q++) {
            SET_VECTOR_ELT(v, q, VECTOR_ELT(old, q));
            SET_STRING_ELT(vn, q, STRING_ELT(on, q));
        }
        SEXP x = SET_VECTOR_ELT(v, XLENGTH(old), Rf_shallow_duplicate(VECTOR_ELT(tensors, j)));
        Rf_setAttrib(x, dt, R_NilValue);
        SET_STRING_ELT(vn, XLENGTH(old), Rf_mkCharCE(s + rest, CE_UTF8));
        Rf_setAttrib(v, R_NamesSymbol, vn);
        SET_VECTOR_ELT(e, k, v);
        UNPROTECT(2);
    }
    UNPROTECT(1);
    return out;
}

static void ckpt_free(SEXP p)
{
    pg_fit_ckpt_free(R_ExternalPtrAddr(p));
    R_ClearExternalPtr(p);
}

static SEXP ints_or_null(const int32_t *v, int has)
{
    if (!has) return R_NilValue;
    SEXP x = Rf_allocVector(INTSXP, PG_RNG_STATE_LEN);
    memcpy(INTEGER(x), v, sizeof(int32_t) * PG_RNG_STATE_LEN);
    return x;
}

static SEXP epoch_or_null(double v) { return isnan(v) ? R_NilValue : Rf_ScalarInteger((int)v); }

/* ag_fit(resume_from = path): the checkpoint checked against the run's settings (the set-up's,
 * which takes its seed and split state), nothing written; list(epoch, seed, split_state,
 * rng_state, logs = the history as the run's per-epoch logs (named lists, epoch an integer),
 * stopped_epoch, best_epoch, callbacks = each state's JSON text or NULL) */
SEXP R_pg_fit_ckpt_read(SEXP setup, SEXP path)
{
    pg_fit_ckpt *c = NULL;
    r_check(
        pg_fit_setup_resume(r_get(setup, R_FIT_SETUP), Rf_translateChar(STRING_ELT(path, 0)), &c));
    SEXP xp = PROTECT(R_MakeExternalPtr(c, R_NilValue, R_NilValue));
    R_RegisterCFinalizer(xp, ckpt_free); /* freed on an R error below too */
    static const char *const F[] = {"epoch", "seed",          "split_state", "rng_state",
                                    "logs",  "stopped_epoch", "best_epoch",  "callbacks"};
    SEXP out = PROTECT(r_named_list(F, 8));
    SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)pg_fit_ckpt_epoch(c)));
    int32_t v[PG_RNG_STATE_LEN], seed = 0;
    if (pg_fit_ckpt_seed(c, &seed)) SET_VECTOR_ELT(out, 1, Rf_ScalarInteger(seed));
    SET_VECTOR_ELT(out, 2, ints_or_null(v, pg_fit_ckpt_split_state(c, v)));
    pg_fit_ckpt_rng_state(c, v);
    SET_VECTOR_ELT(out, 3, ints_or_null(v, 1));
    const int64_t ncol = pg_fit_ckpt_columns(c), n = pg_fit_ckpt_epochs(c);
    SEXP hn = PROTECT(Rf_allocVector(STRSXP, ncol)), col = PROTECT(Rf_allocVector(REALSXP, n));
    SEXP logs = SET_VECTOR_ELT(out, 4, Rf_allocVector(VECSXP, n));
    for (int64_t i = 0; i < n; i++)
        Rf_setAttrib(SET_VECTOR_ELT(logs, i, Rf_allocVector(VECSXP, ncol)), R_NamesSymbol, hn);
    for (int64_t j = 0; j < ncol; j++) {
        SET_STRING_ELT(hn, j, Rf_mkCharCE(pg_fit_ckpt_column_name(c, j), CE_UTF8));
        pg_fit_ckpt_column(c, j, REAL(col));
        for (int64_t i = 0; i < n; i++) {
            const double x = REAL(col)[i];
            SET_VECTOR_ELT(VECTOR_ELT(logs, i), j,
                           j ? Rf_ScalarReal(x) : Rf_ScalarInteger(isnan(x) ? NA_INTEGER : (int)x));
        }
    }
    SET_VECTOR_ELT(out, 5, epoch_or_null(pg_fit_ckpt_stopped_epoch(c)));
    SET_VECTOR_ELT(out, 6, epoch_or_null(pg_fit_ckpt_best_epoch(c)));
    SEXP cbs = SET_VECTOR_ELT(out, 7, Rf_allocVector(VECSXP, pg_fit_ckpt_callbacks(c)));
    for (int64_t i = 0; i < pg_fit_ckpt_callbacks(c); i++) {
        const char *t = pg_fit_ckpt_callback_state(c, i);
        if (t) SET_VECTOR_ELT(cbs, i, Rf_ScalarString(Rf_mkCharCE(t, CE_UTF8)));
    }
    ckpt_free(xp);
    UNPROTECT(4);
    return out;
}
