/* R glue for the model-file writer (native/modelfile_write.c): everything R hands over is
 * converted first (R_alloc, which may long-jump), then the core's writer runs without R calls,
 * so nothing leaks. Refusals come back as list(status, message, errno), as r_codec.c's. */
#include "r_util.h"
#include <string.h>

typedef struct {
    R_xlen_t n;
    const char **name;
    int64_t *dims; /* rows, cols of each */
    const double **data;
    const int *f64;
} r_group;

/* list(names, f64, values: double matrices) -> what pg_mf_writer_add_values takes */
static r_group group(SEXP g)
{
    r_group out = {0};
    if (TYPEOF(g) != VECSXP || XLENGTH(g) != 3)
        Rf_error("ag_save_model(): internal: bad tensor group for the model-file writer");
    SEXP nm = VECTOR_ELT(g, 0), f64 = VECTOR_ELT(g, 1), v = VECTOR_ELT(g, 2);
    out.n = XLENGTH(v);
    if (!Rf_isString(nm) || XLENGTH(nm) != out.n || !Rf_isLogical(f64) || XLENGTH(f64) != out.n ||
        TYPEOF(v) != VECSXP)
        Rf_error("ag_save_model(): internal: bad tensor group for the model-file writer");
    out.name = (const char **)R_alloc((size_t)out.n + 1, sizeof(char *));
    out.dims = (int64_t *)R_alloc(2 * (size_t)out.n + 1, sizeof(int64_t));
    out.data = (const double **)R_alloc((size_t)out.n + 1, sizeof(double *));
    out.f64 = LOGICAL(f64);
    for (R_xlen_t i = 0; i < out.n; i++) {
        SEXP x = VECTOR_ELT(v, i), dim = Rf_getAttrib(x, R_DimSymbol);
        out.name[i] = Rf_translateCharUTF8(STRING_ELT(nm, i));
        if (TYPEOF(x) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 ||
            (double)INTEGER(dim)[0] * INTEGER(dim)[1] != (double)XLENGTH(x))
            Rf_error("ag_save_model(): internal: tensor '%s' is not a double matrix", out.name[i]);
        out.dims[2 * i] = INTEGER(dim)[0], out.dims[2 * i + 1] = INTEGER(dim)[1];
        out.data[i] = REAL(x);
    }
    return out;
}

static const char **strs(SEXP s)
{
    R_xlen_t n = Rf_isString(s) ? XLENGTH(s) : 0;
    const char **v = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
    for (R_xlen_t i = 0; i < n; i++) v[i] = Rf_translateCharUTF8(STRING_ELT(s, i));
    return v;
}

/* NULL when no name is both a parameter and a buffer (the core's pg_mf_names_check), else a
 * status list */
SEXP R_pg_mf_names_check(SEXP params, SEXP bufs)
{
    if (!Rf_isString(params) || !Rf_isString(bufs))
        Rf_error("ag_save_model(): internal: bad names for the model-file writer");
    pg_mf_model m = pg_mf_model_default();
    m.n_params = XLENGTH(params), m.n_buffers = XLENGTH(bufs);
    m.param_names = strs(params), m.buffer_names = strs(bufs);
    int rc = pg_mf_names_check(&m);
    return rc ? r_status_list(rc) : R_NilValue;
}

/* model: r_mf_model's list; more: list(names, f64, values) (ag_fit's callback arrays); fields:
 * character (created_by, config, extra, target; NA = none); epoch: a number or NULL; target:
 * NULL or list(loss (NULL: none), classes (NULL: none)) for metadata 'target' (the loss's
 * classify kind: the core's). Writes
 * path; returns NULL when written, else list(status, message, errno). */
SEXP R_pg_mf_save(SEXP path, SEXP model, SEXP more, SEXP fields, SEXP epoch, SEXP target)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || !Rf_isString(fields) ||
        XLENGTH(fields) != PG_MF_FIELD_COUNT)
        Rf_error("ag_save_model(): internal: bad arguments to the model-file writer");
    pg_mf_model m = r_mf_model(model);
    r_group g = group(more);
    pg_mf_save_spec s = pg_mf_save_spec_default();
    s.model = &m;
    for (int i = 0; i < PG_MF_FIELD_COUNT; i++)
        s.fields[i] =
            STRING_ELT(fields, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(fields, i));
    if (!Rf_isNull(epoch)) s.epoch = r_i64(Rf_asReal(epoch));
    if ((s.has_target = !Rf_isNull(target))) {
        SEXP l = VECTOR_ELT(target, 0), c = VECTOR_ELT(target, 1);
        s.target_loss = Rf_isNull(l) ? NULL : Rf_translateCharUTF8(STRING_ELT(l, 0));
        if (!Rf_isNull(c)) {
            s.n_classes = XLENGTH(c);
            const char **cls = (const char **)R_alloc((size_t)s.n_classes + 1, sizeof(char *));
            for (int64_t i = 0; i < s.n_classes; i++)
                cls[i] =
                    STRING_ELT(c, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(c, i));
            s.classes = cls;
        }
    }
    int *two = (int *)R_alloc((size_t)g.n + 1, sizeof(int));
    for (R_xlen_t i = 0; i < g.n; i++) two[i] = 2;
    s.n_more = g.n, s.more_names = g.name, s.more_f64 = g.f64, s.more_ndim = two;
    s.more_dims = g.dims, s.more_data = g.data;
    /* converted: from here on no R call, so the writer cannot leak */
    int rc = pg_mf_save(Rf_translateChar(STRING_ELT(path, 0)), &s);
    return rc ? r_status_list(rc) : R_NilValue;
}
