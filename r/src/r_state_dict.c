/* .Call glue: ag_load_state_dict() (native/state_dict.c). state.R checks the R objects (the
 * state a list with $parameters, strict a flag) and walks the model; this turns the model's
 * named tensors and the state's named values into the core's description, which checks and
 * writes, all or nothing, and raises the core's refusal classed. */
#include <string.h>
#include "r_util.h"

/* a list's names (a NULL entry for NA); NULL when the list has none */
static const char *const *names_of(SEXP lst)
{
    SEXP nm = Rf_getAttrib(lst, R_NamesSymbol);
    if (Rf_isNull(nm)) return NULL;
    const char **out = (const char **)R_alloc(XLENGTH(nm) > 0 ? XLENGTH(nm) : 1, sizeof *out);
    for (R_xlen_t j = 0; j < XLENGTH(nm); j++)
        out[j] = STRING_ELT(nm, j) == NA_STRING ? NULL : Rf_translateCharUTF8(STRING_ELT(nm, j));
    return out;
}

/* one state value as the checks see it (R's is.numeric, dim() or else length(), the doubles);
 * an ag_tensor stands for its $data */
static void host_matrix(SEXP x, pg_host_matrix *m)
{
    memset(m, 0, sizeof *m);
    int64_t *dims = (int64_t *)R_alloc(2, sizeof *dims);
    m->present = 1;
    m->dims = dims;
    if (Rf_inherits(x, "ag_tensor")) {
        pg_tensor *t = r_get(r_handle(x), R_TENSOR);
        double *v = (double *)R_alloc(pg_tensor_numel(t) > 0 ? pg_tensor_numel(t) : 1, sizeof *v);
        r_check(pg_tensor_read(t, v, PG_DTYPE_F64));
        m->numeric = 1, m->ndim = 2, m->data = v;
        dims[0] = pg_tensor_nrow(t), dims[1] = pg_tensor_ncol(t);
        return;
    }
    /* R's is.numeric: numbers, not a factor, a date, a time or a time difference */
    m->numeric = (TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP) && !Rf_isFactor(x) &&
        !Rf_inherits(x, "Date") && !Rf_inherits(x, "POSIXt") && !Rf_inherits(x, "difftime");
    SEXP d = Rf_getAttrib(x, R_DimSymbol);
    if (Rf_isNull(d) || TYPEOF(d) != INTSXP) {
        m->ndim = 1, dims[0] = (int64_t)Rf_xlength(x); /* shown as its length */
        return;
    }
    m->ndim = (int)XLENGTH(d);
    if (m->ndim > 2) m->dims = dims = (int64_t *)R_alloc(m->ndim, sizeof *dims);
    for (int k = 0; k < m->ndim; k++) dims[k] = INTEGER(d)[k];
    /* a dim that disagrees with the length (a tampered object) gets no data: read as no numbers */
    if (m->numeric && m->ndim == 2 && dims[0] * dims[1] != (int64_t)XLENGTH(x)) m->numeric = 0;
    if (!m->numeric || m->ndim != 2) return;
    m->data = r_doubles(x);
}

/* model: list(parameters, buffers), each a named list of ag_tensors; state: list(parameters,
 * buffers), each a named list of values; as the core's two sides */
static void describe(SEXP model, SEXP state, SEXP caller, pg_state_dict_side *ms,
                     pg_state_dict_side *ss)
{
    if (TYPEOF(model) != VECSXP || XLENGTH(model) != 2 || TYPEOF(state) != VECSXP ||
        XLENGTH(state) != 2 || !Rf_isString(caller) || XLENGTH(caller) != 1)
        r_stopf(PG_STATUS_ERR_ARG, "internal: bad state dict description");
    for (int k = 0; k < 2; k++) {
        SEXP mk = VECTOR_ELT(model, k), sk = VECTOR_ELT(state, k);
        if (TYPEOF(mk) != VECSXP || TYPEOF(sk) != VECSXP)
            r_stopf(PG_STATUS_ERR_ARG, "internal: bad state dict description");
        ms[k].n = XLENGTH(mk), ms[k].names = names_of(mk), ms[k].values = NULL;
        pg_tensor **t = (pg_tensor **)R_alloc(ms[k].n > 0 ? ms[k].n : 1, sizeof *t);
        for (int64_t j = 0; j < ms[k].n; j++) t[j] = r_get(r_handle(VECTOR_ELT(mk, j)), R_TENSOR);
        ms[k].tensors = t;
        ss[k].n = XLENGTH(sk), ss[k].names = names_of(sk), ss[k].tensors = NULL;
        pg_host_matrix *v = (pg_host_matrix *)R_alloc(ss[k].n > 0 ? ss[k].n : 1, sizeof *v);
        for (int64_t j = 0; j < ss[k].n; j++) host_matrix(VECTOR_ELT(sk, j), &v[j]);
        ss[k].values = v;
    }
}

/* pg_state_dict_load: NULL, or the core's refusal raised classed */
SEXP R_pg_state_dict_load(SEXP model, SEXP state, SEXP strict, SEXP caller)
{
    pg_state_dict_side ms[2], ss[2];
    describe(model, state, caller, ms, ss);
    r_check(pg_state_dict_load(CHAR(STRING_ELT(caller, 0)), ms, ss, Rf_asLogical(strict) == TRUE));
    return R_NilValue;
}

/* pg_state_dict_load_file (ag_load_model()'s ggmlR container; dtype "f32" / "f64" asked, or
 * NULL): NULL, or the refusal raised */
SEXP R_pg_state_dict_load_file(SEXP model, SEXP state, SEXP caller, SEXP dtype)
{
    pg_state_dict_side ms[2], ss[2];
    describe(model, state, caller, ms, ss);
    r_check(pg_state_dict_load_file(CHAR(STRING_ELT(caller, 0)), ms, ss, r_dtype_of(dtype)));
    return R_NilValue;
}

/* pg_state_dict_check_args: NULL, or its refusal raised classed */
/* pg_state_dict_model_fail's refusal (the model's parameters), raised classed; name NULL or NA:
 * "unnamed" */
SEXP R_pg_state_dict_model_fail(SEXP caller, SEXP index, SEXP name, SEXP shown)
{
    const char *nm = Rf_isString(name) && XLENGTH(name) == 1 && STRING_ELT(name, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(name, 0))
        : NULL;
    r_check(pg_state_dict_model_fail(CHAR(STRING_ELT(caller, 0)), (int64_t)Rf_asInteger(index), nm,
                                     Rf_translateCharUTF8(STRING_ELT(shown, 0))));
    return R_NilValue;
}

SEXP R_pg_state_dict_check_args(SEXP caller, SEXP state_ok, SEXP strict_ok, SEXP buffers_ok)
{
    r_check(pg_state_dict_check_args(
        Rf_isString(caller) && XLENGTH(caller) == 1 ? CHAR(STRING_ELT(caller, 0)) : NULL,
        Rf_asLogical(state_ok) == TRUE, Rf_asLogical(strict_ok) == TRUE,
        Rf_asLogical(buffers_ok) == TRUE));
    return R_NilValue;
}

SEXP R_pg_state_dict_format(void) { return Rf_mkString(pg_state_dict_format()); }

/* x[[name]] of a list (exact, the first), R_NilValue when x is no list or has none */
static SEXP field(SEXP x, const char *name)
{
    SEXP nm = Rf_getAttrib(x, R_NamesSymbol);
    if (TYPEOF(x) != VECSXP || !Rf_isString(nm)) return R_NilValue;
    for (R_xlen_t i = 0; i < XLENGTH(nm); i++)
        if (STRING_ELT(nm, i) != NA_STRING && !strcmp(CHAR(STRING_ELT(nm, i)), name))
            return VECTOR_ELT(x, i);
    return R_NilValue;
}

static const char *utf8_or_null(SEXP x)
{
    return Rf_isString(x) && XLENGTH(x) == 1 && STRING_ELT(x, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(x, 0))
        : NULL;
}

/* pg_state_dict_container_check on what readRDS gave (box); version: its version as R prints
 * it; have_model, have_model_fn, trust, all_f64: flags; dtype: ag_load_model's (NULL: none),
 * shown as R shows it. list(asked ("f32" / "f64" or NULL), build), or the refusal as a status
 * list. */
SEXP R_pg_sd_container(SEXP box, SEXP path, SEXP version, SEXP flags, SEXP dtype, SEXP shown)
{
    SEXP fmt = field(box, "format"), ver = field(box, "version");
    pg_state_dict_container c = {0};
    c.path = utf8_or_null(path), c.version = utf8_or_null(version);
    c.is_list = TYPEOF(box) == VECSXP;
    /* identical(x, "ggmlR.ag_state") / identical(x, 1L): no attributes */
    c.format = ATTRIB(fmt) == R_NilValue ? utf8_or_null(fmt) : NULL;
    c.version_ok = TYPEOF(ver) == INTSXP && XLENGTH(ver) == 1 && INTEGER(ver)[0] == 1 &&
        ATTRIB(ver) == R_NilValue;
    c.have_model = LOGICAL(flags)[0] == TRUE, c.have_model_fn = LOGICAL(flags)[1] == TRUE;
    c.trust = LOGICAL(flags)[2] == TRUE, c.all_f64 = LOGICAL(flags)[3] == TRUE;
    c.stored_fn = Rf_isFunction(field(box, "model_fn"));
    c.have_dtype = !Rf_isNull(dtype), c.dtype = utf8_or_null(dtype),
    c.dtype_shown = utf8_or_null(shown);
    c.params_list = TYPEOF(field(box, "parameters")) == VECSXP;
    int asked = -1, build = -1, rc = pg_state_dict_container_check(&c, &asked, &build);
    if (rc) return r_status_list(rc);
    const char *nm[2] = {"asked", "build"};
    SEXP out = PROTECT(r_named_list(nm, 2));
    if (asked >= 0) SET_VECTOR_ELT(out, 0, Rf_mkString(asked == PG_DTYPE_F64 ? "f64" : "f32"));
    SET_VECTOR_ELT(out, 1, Rf_mkString(build == PG_DTYPE_F64 ? "f64" : "f32"));
    UNPROTECT(1);
    return out;
}
