/* R glue for the model-file schema (native/modelfile*.c): an open file is a handle of kind
 * R_MODELFILE (closed by R_pg_mf_close, or by its finalizer when an R error intervened).
 * Refusals come back as list(status, message, errno) for io.R to raise classed, as r_codec.c's. */
#include "r_util.h"
#include <string.h>

static pg_mf *mf_arg(SEXP p) { return r_get(p, R_MODELFILE); }

static const char *str_arg(SEXP s, const char *what)
{
    if (!Rf_isString(s) || XLENGTH(s) != 1 || STRING_ELT(s, 0) == NA_STRING)
        r_stopf(PG_STATUS_ERR_ARG, "%s must be a single string", what);
    return Rf_translateCharUTF8(STRING_ELT(s, 0));
}

static SEXP str_or_null(const char *s)
{
    return s ? Rf_ScalarString(Rf_mkCharCE(s, CE_UTF8)) : R_NilValue;
}

/* path (native encoding, expanded), fn: the user's function. The open file, or a status list */
SEXP R_pg_mf_open(SEXP path, SEXP fn)
{
    const char *f = str_arg(fn, "fn");
    str_arg(path, "path");
    pg_mf *mf = NULL;
    int rc = pg_mf_open(Rf_translateChar(STRING_ELT(path, 0)), f, &mf);
    if (rc) return r_status_list(rc);
    return r_wrap(mf, R_MODELFILE);
}

SEXP R_pg_mf_close(SEXP p)
{
    r_free_now(p, R_MODELFILE);
    return R_NilValue;
}

/* NULL when the load's metadata rules pass (pg_mf_check_load), else a status list */
SEXP R_pg_mf_check_load(SEXP p, SEXP have_model, SEXP need_epoch, SEXP rebuild)
{
    pg_mf *mf = mf_arg(p);
    pg_mf_load_opts o = pg_mf_load_opts_default();
    o.have_model = Rf_asLogical(have_model) == TRUE;
    o.need_epoch = Rf_asLogical(need_epoch) == TRUE;
    o.rebuild = Rf_asLogical(rebuild) == TRUE;
    o.model_arg = "model = (or model_fn =)";
    int rc = pg_mf_check_load(mf, &o);
    return rc ? r_status_list(rc) : R_NilValue;
}

SEXP R_pg_mf_check_info(SEXP p)
{
    int rc = pg_mf_check_info(mf_arg(p));
    return rc ? r_status_list(rc) : R_NilValue;
}

SEXP R_pg_mf_read(SEXP p) { return r_st_contents(pg_mf_st(mf_arg(p)), 0); }

static SEXP names_of(pg_mf *mf, int list)
{
    if (!pg_mf_has_names(mf, list)) return R_NilValue;
    int64_t n = pg_mf_name_count(mf, list);
    SEXP v = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
    for (int64_t i = 0; i < n; i++)
        SET_STRING_ELT(v, (R_xlen_t)i, Rf_mkCharCE(pg_mf_name(mf, list, i), CE_UTF8));
    UNPROTECT(1);
    return v;
}

/* metadata 'target': NULL, or list(loss (NULL: none), classify (its name), classes (NULL:
 * none)) */
static SEXP target_of(const pg_mf *mf)
{
    if (!pg_mf_has_target(mf)) return R_NilValue;
    int64_t n = pg_mf_class_count(mf);
    SEXP t = PROTECT(Rf_allocVector(VECSXP, 3)), nm = PROTECT(Rf_allocVector(STRSXP, 3));
    SET_VECTOR_ELT(t, 0, str_or_null(pg_mf_target_loss(mf)));
    SET_VECTOR_ELT(t, 1, str_or_null(pg_fit_classify_name(pg_mf_target_classify(mf))));
    if (n >= 0) {
        SEXP cl = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
        for (int64_t i = 0; i < n; i++)
            SET_STRING_ELT(cl, (R_xlen_t)i, Rf_mkCharCE(pg_mf_class(mf, i), CE_UTF8));
        SET_VECTOR_ELT(t, 2, cl);
        UNPROTECT(1);
    }
    const char *k[] = {"loss", "classify", "classes"};
    for (int i = 0; i < 3; i++) SET_STRING_ELT(nm, i, Rf_mkChar(k[i]));
    Rf_setAttrib(t, R_NamesSymbol, nm);
    UNPROTECT(2);
    return t;
}

/* What the last check recorded: name lists, epoch, texts, the optimizer's kind, the files'
 * dtype, format fields, and every tensor's rows, cols and F64 flag (named) */
SEXP R_pg_mf_values(SEXP p)
{
    pg_mf *mf = mf_arg(p);
    pg_st_file *st = pg_mf_st(mf);
    int64_t n = pg_st_count(st), ep = pg_mf_epoch(mf);
    SEXP rows = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)n));
    SEXP cols = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)n));
    SEXP f64 = PROTECT(Rf_allocVector(LGLSXP, (R_xlen_t)n));
    SEXP tn = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
    for (int64_t i = 0; i < n; i++) {
        int64_t r = pg_st_rows(st, i), c = pg_st_cols(st, i);
        INTEGER(rows)[i] = r > INT_MAX ? NA_INTEGER : (int)r;
        INTEGER(cols)[i] = c > INT_MAX ? NA_INTEGER : (int)c;
        LOGICAL(f64)[i] = pg_st_dtype(st, i) == PG_ST_DTYPE_F64;
        SET_STRING_ELT(tn, (R_xlen_t)i, Rf_mkCharCE(pg_st_name(st, i), CE_UTF8));
    }
    Rf_setAttrib(rows, R_NamesSymbol, tn);
    Rf_setAttrib(cols, R_NamesSymbol, tn);
    Rf_setAttrib(f64, R_NamesSymbol, tn);
    const char *nm[] = {"parameters", "buffers", "epoch",  "config",         "extra",
                        "opt_kind",   "all_f64", "format", "format_version", "rows",
                        "cols",       "f64",     "target"};
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 13)), on = PROTECT(Rf_allocVector(STRSXP, 13));
    SET_VECTOR_ELT(out, 0, names_of(mf, PG_MF_LIST_PARAMETERS));
    SET_VECTOR_ELT(out, 1, names_of(mf, PG_MF_LIST_BUFFERS));
    SET_VECTOR_ELT(out, 2, ep < 0 ? R_NilValue : Rf_ScalarReal((double)ep));
    SET_VECTOR_ELT(out, 3, str_or_null(pg_mf_config(mf)));
    SET_VECTOR_ELT(out, 4, str_or_null(pg_mf_extra(mf)));
    SET_VECTOR_ELT(out, 5, str_or_null(pg_mf_opt_kind(mf)));
    SET_VECTOR_ELT(out, 6, Rf_ScalarLogical(pg_mf_all_f64(mf)));
    SET_VECTOR_ELT(out, 7, str_or_null(pg_mf_meta(mf, "format")));
    SET_VECTOR_ELT(out, 8, str_or_null(pg_mf_meta(mf, "format_version")));
    SET_VECTOR_ELT(out, 9, rows);
    SET_VECTOR_ELT(out, 10, cols);
    SET_VECTOR_ELT(out, 11, f64);
    SET_VECTOR_ELT(out, 12, target_of(mf));
    for (int i = 0; i < 13; i++) SET_STRING_ELT(on, i, Rf_mkChar(nm[i]));
    Rf_setAttrib(out, R_NamesSymbol, on);
    UNPROTECT(6);
    return out;
}
