/* R glue for the model-file schema (native/modelfile*.c): an open file is a handle of kind
 * R_MODELFILE (closed by R_pg_mf_close, or by its finalizer when an R error intervened).
 * Refusals come back as list(status, message, errno) for io.R to raise classed, as r_codec.c's. */
#include "r_util.h"
#include <limits.h>
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

static SEXP num_or_int(double v)
{
    return v >= INT_MIN && v <= INT_MAX ? Rf_ScalarInteger((int)v) : Rf_ScalarReal(v);
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
    const char *nm[] = {"parameters", "buffers", "epoch",          "config", "extra", "opt_kind",
                        "all_f64",    "format",  "format_version", "rows",   "cols",  "f64"};
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 12)), on = PROTECT(Rf_allocVector(STRSXP, 12));
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
    for (int i = 0; i < 12; i++) SET_STRING_ELT(on, i, Rf_mkChar(nm[i]));
    Rf_setAttrib(out, R_NamesSymbol, on);
    UNPROTECT(6);
    return out;
}

/* names (character) with rows and cols (doubles) into C arrays (R_alloc: freed by R) */
static int64_t shapes_arg(SEXP names, SEXP rows, SEXP cols, const char ***nm, int64_t **r,
                          int64_t **c)
{
    R_xlen_t n = XLENGTH(names);
    if (!Rf_isString(names) || TYPEOF(rows) != REALSXP || TYPEOF(cols) != REALSXP ||
        XLENGTH(rows) != n || XLENGTH(cols) != n)
        r_stopf(PG_STATUS_ERR_ARG, "internal: bad names or shapes for the model-file check");
    *nm = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
    *r = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    *c = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    for (R_xlen_t i = 0; i < n; i++) {
        (*nm)[i] = Rf_translateCharUTF8(STRING_ELT(names, i));
        (*r)[i] = (int64_t)REAL(rows)[i];
        (*c)[i] = (int64_t)REAL(cols)[i];
    }
    return (int64_t)n;
}

/* NULL when the model's parameters (buffers = FALSE) or buffers match the file (pg_mf_match) */
SEXP R_pg_mf_match(SEXP p, SEXP buffers, SEXP names, SEXP rows, SEXP cols)
{
    pg_mf *mf = mf_arg(p);
    const char **nm;
    int64_t *r, *c, n = shapes_arg(names, rows, cols, &nm, &r, &c);
    int list = Rf_asLogical(buffers) == TRUE ? PG_MF_LIST_BUFFERS : PG_MF_LIST_PARAMETERS;
    int rc = pg_mf_match(mf, list, n, nm, r, c, NULL);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* The optimizer's kind and parameters (names, shapes) against the file (pg_mf_opt_check):
 * list(t, accum_count, hyper = named list, slots), or a status list */
SEXP R_pg_mf_opt_check(SEXP p, SEXP kind, SEXP names, SEXP rows, SEXP cols)
{
    pg_mf *mf = mf_arg(p);
    const char *k = str_arg(kind, "kind"), **nm;
    int64_t *r, *c, n = shapes_arg(names, rows, cols, &nm, &r, &c);
    int rc = pg_mf_opt_check(mf, k, n, nm, r, c);
    if (rc) return r_status_list(rc);
    int64_t nh = pg_mf_opt_count(mf, 0), ns = pg_mf_opt_count(mf, 2);
    SEXP hyper = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)nh));
    SEXP hn = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)nh));
    for (int64_t i = 0; i < nh; i++) {
        double v = pg_mf_opt_hyper_value(mf, i);
        int ty = pg_mf_opt_hyper_type(mf, i);
        SET_VECTOR_ELT(hyper, (R_xlen_t)i,
                       ty == PG_MF_NUM_BOOL      ? Rf_ScalarLogical(v != 0)
                           : ty == PG_MF_NUM_INT ? num_or_int(v)
                                                 : Rf_ScalarReal(v));
        SET_STRING_ELT(hn, (R_xlen_t)i, Rf_mkCharCE(pg_mf_opt_name(mf, 0, i), CE_UTF8));
    }
    Rf_setAttrib(hyper, R_NamesSymbol, hn);
    SEXP slots = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)ns));
    for (int64_t i = 0; i < ns; i++)
        SET_STRING_ELT(slots, (R_xlen_t)i, Rf_mkCharCE(pg_mf_opt_name(mf, 2, i), CE_UTF8));
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 4)), on = PROTECT(Rf_allocVector(STRSXP, 4));
    SET_VECTOR_ELT(out, 0, num_or_int((double)pg_mf_opt_t(mf)));
    SET_VECTOR_ELT(out, 1, num_or_int((double)pg_mf_opt_accum_count(mf)));
    SET_VECTOR_ELT(out, 2, hyper);
    SET_VECTOR_ELT(out, 3, slots);
    const char *onm[] = {"t", "accum_count", "hyper", "slots"};
    for (int i = 0; i < 4; i++) SET_STRING_ELT(on, i, Rf_mkChar(onm[i]));
    Rf_setAttrib(out, R_NamesSymbol, on);
    UNPROTECT(5);
    return out;
}
