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
SEXP R_pg_mf_check_load(SEXP p, SEXP have_model, SEXP need_epoch, SEXP rebuild, SEXP dtype)
{
    pg_mf *mf = mf_arg(p);
    pg_mf_load_opts o = pg_mf_load_opts_default();
    o.have_model = Rf_asLogical(have_model) == TRUE;
    o.need_epoch = Rf_asLogical(need_epoch) == TRUE;
    o.rebuild = Rf_asLogical(rebuild) == TRUE;
    o.model_arg = "model = (or model_fn =)";
    o.dtype = r_dtype_of(dtype);
    int rc = pg_mf_check_load(mf, &o);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* ag_model_info()'s answer as the core's JSON text (pg_mf_info_json), else a status list */
SEXP R_pg_mf_info_json(SEXP p)
{
    const char *js = NULL;
    int rc = pg_mf_info_json(mf_arg(p), &js);
    return rc ? r_status_list(rc) : str_or_null(js);
}

SEXP R_pg_mf_read(SEXP p) { return r_st_contents(pg_mf_st(mf_arg(p)), 0); }

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

/* What pg_mf_check_load recorded for the load: the config text, the dtype to build in and the
 * target */
SEXP R_pg_mf_values(SEXP p)
{
    pg_mf *mf = mf_arg(p);
    const char *nm[] = {"config", "dtype", "target"};
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3)), on = PROTECT(Rf_allocVector(STRSXP, 3));
    SET_VECTOR_ELT(out, 0, str_or_null(pg_mf_config(mf)));
    SET_VECTOR_ELT(out, 1, Rf_mkString(pg_mf_dtype(mf) == PG_DTYPE_F64 ? "f64" : "f32"));
    SET_VECTOR_ELT(out, 2, target_of(mf));
    for (int i = 0; i < 3; i++) SET_STRING_ELT(on, i, Rf_mkChar(nm[i]));
    Rf_setAttrib(out, R_NamesSymbol, on);
    UNPROTECT(2);
    return out;
}
