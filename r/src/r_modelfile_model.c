/* R glue for a model and its optimizer against a model file (native/modelfile_model.c): the
 * core copies the tensors and the optimizer's state itself, so R hands over handles only.
 * Refusals come back as list(status, message, errno), as r_modelfile.c's. */
#include "r_util.h"
#include <limits.h>

/* list(param names, params, buffer names, buffers, optimizer handle or NULL): tensors are
 * ag_tensor environments or handles; everything R_alloc'd (the caller makes no R call after) */
pg_mf_model r_mf_model(SEXP m)
{
    if (TYPEOF(m) != VECSXP || XLENGTH(m) != 5)
        Rf_error("internal: bad model description for the model file");
    pg_mf_model out = pg_mf_model_default();
    for (int k = 0; k < 2; k++) {
        SEXP nm = VECTOR_ELT(m, 2 * k), ts = VECTOR_ELT(m, 2 * k + 1);
        R_xlen_t n = XLENGTH(ts);
        if (!Rf_isString(nm) || TYPEOF(ts) != VECSXP || XLENGTH(nm) != n)
            Rf_error("internal: bad model description for the model file");
        const char **names = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
        pg_tensor **t = (pg_tensor **)R_alloc((size_t)n + 1, sizeof(pg_tensor *));
        for (R_xlen_t i = 0; i < n; i++) {
            names[i] = Rf_translateCharUTF8(STRING_ELT(nm, i));
            t[i] = r_get(r_handle(VECTOR_ELT(ts, i)), R_TENSOR);
        }
        if (k) out.n_buffers = n, out.buffer_names = names, out.buffers = t;
        else out.n_params = n, out.param_names = names, out.params = t;
    }
    SEXP o = VECTOR_ELT(m, 4);
    out.optim = Rf_isNull(o) ? NULL : r_get(o, R_OPTIM);
    return out;
}

/* a file hyper-parameter as R has it: logical, integer or double */
static SEXP hyper_value(pg_mf *mf, int64_t j)
{
    double v = pg_mf_opt_hyper_value(mf, j);
    int ty = pg_mf_opt_hyper_type(mf, j);
    if (ty == PG_MF_NUM_BOOL) return Rf_ScalarLogical(v != 0);
    if (ty == PG_MF_NUM_INT && v >= INT_MIN && v <= INT_MAX) return Rf_ScalarInteger((int)v);
    return Rf_ScalarReal(v);
}

/* pg_mf_load_check: a status list when refused; else NULL, or when the optimizer's
 * hyper-parameters differ from the file's list(message, name, entry (1-based, 0: the default),
 * default, is_flag, state = the file's values) */
SEXP R_pg_mf_load_check(SEXP p, SEXP model)
{
    pg_mf *mf = r_get(p, R_MODELFILE);
    pg_mf_model m = r_mf_model(model);
    pg_optim_hyper_diff d;
    int rc = pg_mf_load_check(mf, &m, &d);
    if (rc) return r_status_list(rc);
    if (!d.n) return R_NilValue;
    SEXP st = PROTECT(Rf_allocVector(VECSXP, d.n));
    for (int k = 0; k < d.n; k++)
        if (d.entry[k] >= 0) SET_VECTOR_ELT(st, k, hyper_value(mf, d.entry[k]));
    SEXP out = r_hyper_diff(&d, st);
    UNPROTECT(1);
    return out;
}

/* writes what pg_mf_load_check staged: NULL, or a status list */
SEXP R_pg_mf_load_commit(SEXP p)
{
    int rc = pg_mf_load_commit(r_get(p, R_MODELFILE));
    return rc ? r_status_list(rc) : R_NilValue;
}

/* ag_save_model's check that the config loads back (native/modelfile_check.c); R rebuilds
 * between begin and end. begin: NULL when the config was checked already, else the dtype to
 * rebuild in ("f32" / "f64"), or a status list. */
SEXP R_pg_mf_config_begin(SEXP text, SEXP model)
{
    if (!Rf_isString(text) || XLENGTH(text) != 1 || STRING_ELT(text, 0) == NA_STRING)
        Rf_error("ag_save_model(): internal: bad config text");
    pg_mf_model m = r_mf_model(model);
    int checked = 0, dt = 0;
    int rc = pg_mf_config_check_begin(Rf_translateCharUTF8(STRING_ELT(text, 0)), &m, &checked, &dt);
    if (rc) return r_status_list(rc);
    return checked ? R_NilValue : Rf_mkString(dt == PG_DTYPE_F64 ? "f64" : "f32");
}

/* the rebuilt model against the model: NULL, or a status list */
SEXP R_pg_mf_config_end(SEXP text, SEXP model, SEXP built)
{
    if (!Rf_isString(text) || XLENGTH(text) != 1 || STRING_ELT(text, 0) == NA_STRING)
        Rf_error("ag_save_model(): internal: bad config text");
    pg_mf_model m = r_mf_model(model), b = r_mf_model(built);
    int rc = pg_mf_config_check_end(Rf_translateCharUTF8(STRING_ELT(text, 0)), &m, &b);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* a rebuild that failed with why (conditionMessage): the refusal's status list. p: the open
 * model file, NULL for ag_save_model's check; what: PG_MF_REBUILD_* */
SEXP R_pg_mf_rebuild_fail(SEXP p, SEXP what, SEXP why)
{
    const pg_mf *mf = Rf_isNull(p) ? NULL : r_get(p, R_MODELFILE);
    const char *w = Rf_isString(why) && XLENGTH(why) >= 1 && STRING_ELT(why, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(why, 0))
        : "?";
    return r_status_list(pg_mf_rebuild_fail(mf, Rf_asInteger(what), w));
}

/* ag_save_model's refusal of a config or extra R cannot write (pg_mf_json_refuse): its status
 * list; why: PG_MF_JSON_*, detail: R's reason or NULL */
SEXP R_pg_mf_json_refuse(SEXP why, SEXP what, SEXP detail)
{
    const char *d =
        Rf_isString(detail) && XLENGTH(detail) >= 1 && STRING_ELT(detail, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(detail, 0))
        : NULL;
    if (!Rf_isString(what) || XLENGTH(what) != 1 || STRING_ELT(what, 0) == NA_STRING)
        Rf_error("ag_save_model(): internal: bad what");
    return r_status_list(
        pg_mf_json_refuse(Rf_asInteger(why), Rf_translateCharUTF8(STRING_ELT(what, 0)), d));
}
