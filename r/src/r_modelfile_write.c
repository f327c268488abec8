/* R glue for the model-file writer (native/modelfile_write.c): everything R hands over is
 * converted first (R_alloc, which may long-jump), then the core's writer runs without R calls,
 * so nothing leaks. Refusals come back as list(status, message, errno), as r_codec.c's. */
#include "r_util.h"
#include <math.h>
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

static const char *opt_str(SEXP s)
{
    return Rf_isString(s) && XLENGTH(s) == 1 && STRING_ELT(s, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(s, 0))
        : NULL;
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

/* params, bufs, more: list(names, f64, values); fields: character (created_by, config, extra;
 * NA = none); epoch: a number or NULL; opt: NULL or list(kind, t, accum_count, hyper (named
 * list of numbers / logicals / NULL), params (character), slots = list(slot, param, values,
 * f64)). Writes path; returns list(status, message, errno), status 0 = written. */
SEXP R_pg_mf_save(SEXP path, SEXP params, SEXP bufs, SEXP more, SEXP fields, SEXP epoch, SEXP opt)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || !Rf_isString(fields) ||
        XLENGTH(fields) != PG_MF_FIELD_COUNT)
        Rf_error("ag_save_model(): internal: bad arguments to the model-file writer");
    r_group g[3] = {group(params), group(bufs), group(more)}, slots = {0, NULL};
    const char *f[PG_MF_FIELD_COUNT];
    for (int i = 0; i < PG_MF_FIELD_COUNT; i++)
        f[i] =
            STRING_ELT(fields, i) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(fields, i));
    pg_mf_opt_meta m = pg_mf_opt_meta_default();
    const char **slot_names = NULL, **slot_params = NULL;
    SEXP slot_values = R_NilValue;
    if (!Rf_isNull(opt)) {
        SEXP hy = VECTOR_ELT(opt, 3), hn = Rf_getAttrib(hy, R_NamesSymbol), sl = VECTOR_ELT(opt, 5);
        m.kind = opt_str(VECTOR_ELT(opt, 0));
        m.t = (int64_t)Rf_asReal(VECTOR_ELT(opt, 1));
        m.accum_count = (int64_t)Rf_asReal(VECTOR_ELT(opt, 2));
        m.n_hyper = XLENGTH(hy);
        m.hyper_names = strs(hn);
        double *hv = (double *)R_alloc((size_t)m.n_hyper + 1, sizeof(double));
        int *ht = (int *)R_alloc((size_t)m.n_hyper + 1, sizeof(int));
        for (R_xlen_t i = 0; i < m.n_hyper; i++) {
            SEXP v = VECTOR_ELT(hy, i);
            ht[i] = Rf_isLogical(v)   ? PG_MF_NUM_BOOL
                : TYPEOF(v) == INTSXP ? PG_MF_NUM_INT
                                      : PG_MF_NUM_DOUBLE;
            hv[i] = Rf_isNull(v) || XLENGTH(v) != 1 ? NAN : Rf_asReal(v);
            if (ht[i] != PG_MF_NUM_DOUBLE && ISNA(hv[i])) ht[i] = PG_MF_NUM_DOUBLE;
        }
        m.hyper_values = hv, m.hyper_types = ht;
        if (m.n_hyper && (!Rf_isString(hn) || XLENGTH(hn) != m.n_hyper))
            Rf_error("ag_save_model(): internal: unnamed optimizer hyper-parameters");
        m.params = strs(VECTOR_ELT(opt, 4));
        m.n_params = XLENGTH(VECTOR_ELT(opt, 4));
        slot_names = strs(VECTOR_ELT(sl, 0));
        slot_params = strs(VECTOR_ELT(sl, 1));
        slot_values = VECTOR_ELT(sl, 2);
        slots.n = XLENGTH(slot_values);
        slots.t = (pg_st_tensor *)R_alloc((size_t)slots.n + 1, sizeof(pg_st_tensor));
        for (R_xlen_t i = 0; i < slots.n; i++)
            if (!Rf_isNull(VECTOR_ELT(slot_values, i)))
                r_st_tensor(VECTOR_ELT(slot_values, i), LOGICAL(VECTOR_ELT(sl, 3))[i] == TRUE,
                            slot_names[i], &slots.t[i]);
    }
    const char *p = Rf_translateChar(STRING_ELT(path, 0));
    /* converted: from here on no R call, so the writer cannot leak */
    pg_mf_writer *w = NULL;
    int rc = pg_mf_writer_new(&w);
    int roles[3] = {PG_MF_ROLE_PARAMETER, PG_MF_ROLE_BUFFER, PG_MF_ROLE_TENSOR};
    for (int k = 0; k < 2; k++)
        for (R_xlen_t i = 0; !rc && i < g[k].n; i++) rc = pg_mf_writer_add(w, roles[k], &g[k].t[i]);
    if (!rc) rc = pg_mf_writer_check(w);
    for (int i = 0; !rc && i < PG_MF_FIELD_COUNT; i++)
        if (f[i]) rc = pg_mf_writer_set(w, i, f[i]);
    if (!rc && !Rf_isNull(epoch)) rc = pg_mf_writer_set_epoch(w, (int64_t)Rf_asReal(epoch));
    if (!rc && !Rf_isNull(opt)) {
        rc = pg_mf_writer_set_optimizer(w, &m);
        for (R_xlen_t i = 0; !rc && i < slots.n; i++)
            rc = pg_mf_writer_add_slot(w, slot_names[i], slot_params[i],
                                       Rf_isNull(VECTOR_ELT(slot_values, i)) ? NULL : &slots.t[i]);
    }
    for (R_xlen_t i = 0; !rc && i < g[2].n; i++)
        rc = pg_mf_writer_add(w, PG_MF_ROLE_TENSOR, &g[2].t[i]);
    if (!rc) rc = pg_mf_writer_commit(w, p);
    pg_mf_writer_free(w);
    return r_status_list(rc);
}
