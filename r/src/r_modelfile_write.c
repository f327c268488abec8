/* R glue for the model-file writer (native/modelfile_write.c): everything R hands over is
 * converted first (R_alloc, which may long-jump), then the core's writer runs without R calls,
 * so nothing leaks. Refusals come back as list(status, message, errno), as r_codec.c's. */
#include "r_util.h"
#include <string.h>

typedef struct {
    R_xlen_t n;
    pg_st_tensor *t;
} r_group;

/* list(names, f64, values) -> tensors */
static r_group group(SEXP g)
{
    r_group out = {0, NULL};
    if (TYPEOF(g) != VECSXP || XLENGTH(g) != 3)
        Rf_error("ag_save_model(): internal: bad tensor group for the model-file writer");
    SEXP nm = VECTOR_ELT(g, 0), f64 = VECTOR_ELT(g, 1), v = VECTOR_ELT(g, 2);
    out.n = XLENGTH(v);
    if (!Rf_isString(nm) || XLENGTH(nm) != out.n || !Rf_isLogical(f64) || XLENGTH(f64) != out.n ||
        TYPEOF(v) != VECSXP)
        Rf_error("ag_save_model(): internal: bad tensor group for the model-file writer");
    out.t = (pg_st_tensor *)R_alloc((size_t)out.n + 1, sizeof(pg_st_tensor));
    for (R_xlen_t i = 0; i < out.n; i++)
        r_st_tensor(VECTOR_ELT(v, i), LOGICAL(f64)[i] == TRUE,
                    Rf_translateCharUTF8(STRING_ELT(nm, i)), &out.t[i]);
    return out;
}

static const char **strs(SEXP s)
{
    R_xlen_t n = Rf_isString(s) ? XLENGTH(s) : 0;
    const char **v = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
    for (R_xlen_t i = 0; i < n; i++) v[i] = Rf_translateCharUTF8(STRING_ELT(s, i));
    return v;
}

/* NULL when no name is both a parameter and a buffer (pg_mf_writer_check), else a status list */
SEXP R_pg_mf_names_check(SEXP params, SEXP bufs)
{
    if (!Rf_isString(params) || !Rf_isString(bufs))
        Rf_error("ag_save_model(): internal: bad names for the model-file writer");
    const char **p = strs(params), **b = strs(bufs);
    pg_mf_writer *w = NULL;
    int rc = pg_mf_writer_new(&w);
    for (R_xlen_t i = 0; !rc && i < XLENGTH(params) + XLENGTH(bufs); i++) {
        int isp = i < XLENGTH(params);
        pg_st_tensor t = {isp ? p[i] : b[i - XLENGTH(params)], PG_ST_DTYPE_F64, 2, 0, 0, NULL};
        rc = pg_mf_writer_add(w, isp ? PG_MF_ROLE_PARAMETER : PG_MF_ROLE_BUFFER, &t);
    }
    if (!rc) rc = pg_mf_writer_check(w);
    pg_mf_writer_free(w);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* model: r_mf_model's list; more: list(names, f64, values) (ag_fit's callback arrays); fields:
 * character (created_by, config, extra, target; NA = none); epoch: a number or NULL; target:
 * NULL or list(loss (NULL: none), classes (NULL: none)) for metadata 'target' (the loss's
 * classify kind: the core's). Writes
 * path; returns list(status, message, errno), status 0 = written. */
SEXP R_pg_mf_save(SEXP path, SEXP model, SEXP more, SEXP fields, SEXP epoch, SEXP target)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || !Rf_isString(fields) ||
        XLENGTH(fields) != PG_MF_FIELD_COUNT)
        Rf_error("ag_save_model(): internal: bad arguments to the model-file writer");
    pg_mf_model m = r_mf_model(model);
    r_group g = group(more);
    const char *f[PG_MF_FIELD_COUNT];
    for (int i = 0; i < PG_MF_FIELD_COUNT; i++)
        f[i] =
            STRING_ELT(fields, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(fields, i));
    const char *p = Rf_translateChar(STRING_ELT(path, 0));
    const char *t_loss = NULL, **t_cls = NULL;
    int64_t t_n = -1;
    if (!Rf_isNull(target)) {
        SEXP l = VECTOR_ELT(target, 0), c = VECTOR_ELT(target, 1);
        t_loss = Rf_isNull(l) ? NULL : Rf_translateCharUTF8(STRING_ELT(l, 0));
        if (!Rf_isNull(c)) {
            t_n = XLENGTH(c);
            t_cls = (const char **)R_alloc((size_t)(t_n ? t_n : 1), sizeof(char *));
            for (int64_t i = 0; i < t_n; i++)
                t_cls[i] =
                    STRING_ELT(c, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(c, i));
        }
    }
    /* converted: from here on no R call, so the writer cannot leak */
    pg_mf_writer *w = NULL;
    int rc = pg_mf_writer_new(&w);
    if (!rc) rc = pg_mf_writer_add_model(w, &m);
    for (int i = 0; !rc && i < PG_MF_FIELD_COUNT; i++)
        if (f[i]) rc = pg_mf_writer_set(w, i, f[i]);
    if (!rc && !Rf_isNull(epoch)) rc = pg_mf_writer_set_epoch(w, (int64_t)Rf_asReal(epoch));
    if (!rc && !Rf_isNull(target))
        rc = pg_mf_writer_set_target(w, t_loss, -1, t_n, (const char *const *)t_cls);
    for (R_xlen_t i = 0; !rc && i < g.n; i++) rc = pg_mf_writer_add(w, PG_MF_ROLE_TENSOR, &g.t[i]);
    if (!rc) rc = pg_mf_writer_commit(w, p);
    pg_mf_writer_free(w);
    return r_status_list(rc);
}
