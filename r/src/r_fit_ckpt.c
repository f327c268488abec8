/* .Call glue: ag_fit's checkpoint run state in the core's layout (native/fit_ckpt.c, written;
 * fit_resume.c, read back), so R and Python write and read one format. */
#include <math.h>
#include <string.h>
#include "r_util.h"

static const char *utf8(SEXP s, R_xlen_t i) { return Rf_translateCharUTF8(STRING_ELT(s, i)); }

/* the metadata 'extra' text: settings (a JSON object text), hist (the columns epoch, the core's
 * logs, then the metric columns, one after another), n epochs, metrics (the metric columns'
 * names), stopped / best epoch (NULL, NA: none), rng (the stream's state), states (a list: each
 * callback's state JSON text or NULL) */
SEXP R_pg_fit_ckpt_extra(SEXP settings, SEXP hist, SEXP n, SEXP metrics, SEXP stopped, SEXP best,
                         SEXP rng, SEXP states)
{
    const int64_t ne = (int64_t)Rf_asReal(n), nm = XLENGTH(metrics), ncb = XLENGTH(states);
    if (TYPEOF(settings) != STRSXP || TYPEOF(hist) != REALSXP || TYPEOF(metrics) != STRSXP ||
        TYPEOF(rng) != INTSXP || XLENGTH(rng) != PG_RNG_STATE_LEN || TYPEOF(states) != VECSXP ||
        XLENGTH(hist) != ne * (1 + PG_FIT_LOG_COUNT + nm))
        r_stopf(PG_STATUS_ERR_ARG, "ag_model_checkpoint: bad run state for the checkpoint");
    const char **names = (const char **)R_alloc((size_t)nm + 1, sizeof(char *));
    const char **cb = (const char **)R_alloc((size_t)ncb + 1, sizeof(char *));
    for (R_xlen_t i = 0; i < nm; i++) names[i] = utf8(metrics, i);
    for (R_xlen_t i = 0; i < ncb; i++) {
        SEXP s = VECTOR_ELT(states, i);
        cb[i] = TYPEOF(s) == STRSXP && XLENGTH(s) == 1 ? utf8(s, 0) : NULL;
    }
    const double st = Rf_length(stopped) == 1 ? Rf_asReal(stopped) : NA_REAL;
    const double be = Rf_length(best) == 1 ? Rf_asReal(best) : NA_REAL;
    const char *s = utf8(settings, 0);
    int64_t need =
        pg_fit_ckpt_extra(s, REAL(hist), ne, nm, names, st, be, INTEGER(rng), ncb, cb, NULL, 0);
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    pg_fit_ckpt_extra(s, REAL(hist), ne, nm, names, st, be, INTEGER(rng), ncb, cb, buf, need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}

/* callback i's (0-based) tensor name of kind 0 (param) / 1 (buffer) in the file */
SEXP R_pg_fit_ckpt_tensor_name(SEXP i, SEXP kind, SEXP name)
{
    const char *k = utf8(name, 0);
    int64_t need = pg_fit_ckpt_tensor_name((int64_t)Rf_asReal(i), Rf_asInteger(kind), k, NULL, 0);
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    pg_fit_ckpt_tensor_name((int64_t)Rf_asReal(i), Rf_asInteger(kind), k, buf, need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}

/* the file's tensor names parsed: list(callback (0-based; NA: not a callback's), kind, name) */
SEXP R_pg_fit_ckpt_tensor_parse(SEXP names)
{
    const R_xlen_t n = XLENGTH(names);
    static const char *const F[] = {"callback", "kind", "name"};
    SEXP out = PROTECT(r_named_list(F, 3));
    SEXP cb = SET_VECTOR_ELT(out, 0, Rf_allocVector(INTSXP, n));
    SEXP kd = SET_VECTOR_ELT(out, 1, Rf_allocVector(INTSXP, n));
    SEXP nm = SET_VECTOR_ELT(out, 2, Rf_allocVector(STRSXP, n));
    for (R_xlen_t j = 0; j < n; j++) {
        const char *s = utf8(names, j);
        int64_t i = 0, rest = 0;
        int k = 0, is = pg_fit_ckpt_tensor_parse(s, &i, &k, &rest);
        INTEGER(cb)[j] = is ? (int)i : NA_INTEGER;
        INTEGER(kd)[j] = is ? k : NA_INTEGER;
        SET_STRING_ELT(nm, j, is ? Rf_mkCharCE(s + rest, CE_UTF8) : NA_STRING);
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
 * rng_state, history = the columns, stopped_epoch, best_epoch, callbacks = each state's JSON
 * text or NULL) */
SEXP R_pg_fit_ckpt_read(SEXP setup, SEXP path)
{
    pg_fit_ckpt *c = NULL;
    r_check(
        pg_fit_setup_resume(r_get(setup, R_FIT_SETUP), Rf_translateChar(STRING_ELT(path, 0)), &c));
    SEXP xp = PROTECT(R_MakeExternalPtr(c, R_NilValue, R_NilValue));
    R_RegisterCFinalizer(xp, ckpt_free); /* freed on an R error below too */
    static const char *const F[] = {"epoch",   "seed",          "split_state", "rng_state",
                                    "history", "stopped_epoch", "best_epoch",  "callbacks"};
    SEXP out = PROTECT(r_named_list(F, 8));
    SET_VECTOR_ELT(out, 0, Rf_ScalarInteger((int)pg_fit_ckpt_epoch(c)));
    int32_t v[PG_RNG_STATE_LEN], seed = 0;
    if (pg_fit_ckpt_seed(c, &seed)) SET_VECTOR_ELT(out, 1, Rf_ScalarInteger(seed));
    SET_VECTOR_ELT(out, 2, ints_or_null(v, pg_fit_ckpt_split_state(c, v)));
    pg_fit_ckpt_rng_state(c, v);
    SET_VECTOR_ELT(out, 3, ints_or_null(v, 1));
    const int64_t ncol = pg_fit_ckpt_columns(c), n = pg_fit_ckpt_epochs(c);
    SEXP h = SET_VECTOR_ELT(out, 4, Rf_allocVector(VECSXP, ncol));
    SEXP hn = PROTECT(Rf_allocVector(STRSXP, ncol));
    for (int64_t j = 0; j < ncol; j++) {
        SET_STRING_ELT(hn, j, Rf_mkCharCE(pg_fit_ckpt_column_name(c, j), CE_UTF8));
        pg_fit_ckpt_column(c, j, REAL(SET_VECTOR_ELT(h, j, Rf_allocVector(REALSXP, n))));
    }
    Rf_setAttrib(h, R_NamesSymbol, hn);
    SET_VECTOR_ELT(out, 5, epoch_or_null(pg_fit_ckpt_stopped_epoch(c)));
    SET_VECTOR_ELT(out, 6, epoch_or_null(pg_fit_ckpt_best_epoch(c)));
    SEXP cbs = SET_VECTOR_ELT(out, 7, Rf_allocVector(VECSXP, pg_fit_ckpt_callbacks(c)));
    for (int64_t i = 0; i < pg_fit_ckpt_callbacks(c); i++) {
        const char *t = pg_fit_ckpt_callback_state(c, i);
        if (t) SET_VECTOR_ELT(cbs, i, Rf_ScalarString(Rf_mkCharCE(t, CE_UTF8)));
    }
    ckpt_free(xp);
    UNPROTECT(3);
    return out;
}
