/* R glue for ag_save_model / ag_load_model's argument rules (native/modelfile_args.c): R says
 * what kind each value is; the rules and texts are the core's, refusals raised classed. */
#include <string.h>
#include "r_util.h"

static const char *one_string(SEXP x)
{
    return Rf_isString(x) && XLENGTH(x) == 1 && STRING_ELT(x, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(x, 0))
        : NULL;
}

/* "f32" / "f64" (as the core's dtype), NULL: -1 */
int r_dtype_of(SEXP x)
{
    const char *s = one_string(x);
    return !s ? -1 : !strcmp(s, "f64") ? PG_DTYPE_F64 : PG_DTYPE_F32;
}

/* load: TRUE for ag_load_model; model_fn: the value itself; have_model: a model is given */
SEXP R_pg_mf_builder_args(SEXP load, SEXP model_fn, SEXP have_model)
{
    int k = Rf_isNull(model_fn)   ? PG_MF_ARG_NONE
        : Rf_isFunction(model_fn) ? PG_MF_ARG_FUNCTION
                                  : PG_MF_ARG_OTHER;
    r_check(pg_mf_builder_args(Rf_asLogical(load) == TRUE ? PG_MF_FN_LOAD : PG_MF_FN_SAVE, k,
                               Rf_asLogical(have_model) == TRUE));
    return R_NilValue;
}

/* load: TRUE for ag_load_model; what: PG_MF_BAD_*; shown: R's class of the value */
SEXP R_pg_mf_arg_fail(SEXP load, SEXP what, SEXP shown)
{
    r_check(pg_mf_arg_fail(Rf_asLogical(load) == TRUE ? PG_MF_FN_LOAD : PG_MF_FN_SAVE,
                           Rf_asInteger(what), one_string(shown)));
    return R_NilValue;
}

/* value: dtype as given (not NULL); shown: R's rendering of it. "f32" or "f64" */
SEXP R_pg_mf_load_dtype(SEXP value, SEXP shown)
{
    int out = -1;
    r_check(pg_mf_load_dtype(one_string(value), one_string(shown), &out));
    return Rf_mkString(out == PG_DTYPE_F64 ? "f64" : "f32");
}

/* NULL for a regular file, else the core's refusal as a status list (R's texts) */
SEXP R_pg_mf_path_check(SEXP path, SEXP fn)
{
    const char *p = R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)));
    int rc = pg_mf_path_check(p, Rf_translateCharUTF8(STRING_ELT(path, 0)),
                              Rf_translateCharUTF8(STRING_ELT(fn, 0)), 1);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* ag_save_model's warning text for a failed to_config() (pg_mf_no_config_note, R's spelling) */
SEXP R_pg_mf_no_config_note(SEXP why)
{
    const char *w =
        Rf_isString(why) && XLENGTH(why) ? Rf_translateCharUTF8(STRING_ELT(why, 0)) : "";
    return Rf_ScalarString(Rf_mkCharCE(pg_mf_no_config_note(w, 1), CE_UTF8));
}
