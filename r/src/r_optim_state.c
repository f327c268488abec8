/* .Call glue: optimizer state() / load_state() (native/optim_state.c). R walks the state list
 * into a flat description (optim_state.R's .st_desc); this turns it into pg_optim_state_in. */
#include <string.h>
#include "r_util.h"

const double *r_doubles(SEXP x)
{
    if (TYPEOF(x) == REALSXP) return REAL(x);
    double *v = (double *)R_alloc(XLENGTH(x) > 0 ? XLENGTH(x) : 1, sizeof *v);
    for (R_xlen_t e = 0; e < XLENGTH(x); e++)
        v[e] = INTEGER(x)[e] == NA_INTEGER ? NAN : INTEGER(x)[e];
    return v;
}

static SEXP field(SEXP list, const char *name)
{
    SEXP nms = Rf_getAttrib(list, R_NamesSymbol);
    for (R_xlen_t j = 0; j < XLENGTH(list) && !Rf_isNull(nms); j++)
        if (!strcmp(CHAR(STRING_ELT(nms, j)), name)) return VECTOR_ELT(list, j);
    return R_NilValue;
}

static const char *utf8(SEXP s, R_xlen_t j)
{
    return STRING_ELT(s, j) == NA_STRING ? "NA" : Rf_translateCharUTF8(STRING_ELT(s, j));
}

/* list(value, text): scalars by kind; text (R's display) when given, and for anything else */
void r_host_value(SEXP pair, pg_host_value *v)
{
    memset(v, 0, sizeof *v);
    if (TYPEOF(pair) != VECSXP || XLENGTH(pair) != 2) return;
    SEXP x = VECTOR_ELT(pair, 0), txt = VECTOR_ELT(pair, 1);
    int one = !Rf_isNull(x) && XLENGTH(x) == 1 && Rf_isNull(Rf_getAttrib(x, R_ClassSymbol));
    if (Rf_isNull(x)) v->kind = PG_HOST_ABSENT;
    else if (one && TYPEOF(x) == LGLSXP && LOGICAL(x)[0] != NA_LOGICAL)
        v->kind = PG_HOST_BOOL, v->num = LOGICAL(x)[0] != 0;
    else if (one && TYPEOF(x) == INTSXP && INTEGER(x)[0] != NA_INTEGER)
        v->kind = PG_HOST_INT, v->num = INTEGER(x)[0];
    else if (one && TYPEOF(x) == REALSXP && !(ISNA(REAL(x)[0])))
        v->kind = PG_HOST_NUM, v->num = REAL(x)[0];
    else if (one && TYPEOF(x) == STRSXP && STRING_ELT(x, 0) != NA_STRING)
        v->kind = PG_HOST_TEXT, v->text = utf8(x, 0);
    else v->kind = PG_HOST_OTHER;
    if (Rf_isString(txt) && XLENGTH(txt) == 1) v->text = utf8(txt, 0);
    else if (v->kind == PG_HOST_OTHER) v->text = "?";
}

static const char *const *strings(SEXP s, int64_t *n)
{
    *n = Rf_isString(s) ? XLENGTH(s) : 0;
    const char **out = (const char **)R_alloc(*n > 0 ? *n : 1, sizeof *out);
    for (int64_t j = 0; j < *n; j++) out[j] = utf8(s, j);
    return out;
}

/* one slot value: NULL (absent), or its dims and, for numbers, doubles (integers converted) */
static void host_matrix(SEXP x, pg_host_matrix *m)
{
    memset(m, 0, sizeof *m);
    if (Rf_isNull(x)) return;
    m->present = 1;
    m->numeric = (TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP) && !Rf_isFactor(x);
    SEXP d = Rf_getAttrib(x, R_DimSymbol);
    /* a plain vector of several values: 1-D (Python's 1-D array); of one: a scalar (ndim 0) */
    int flat = Rf_isNull(d) && Rf_isVectorAtomic(x) && XLENGTH(x) != 1;
    m->ndim = flat ? 1 : Rf_isNull(d) ? 0 : (int)XLENGTH(d);
    int64_t *dims = (int64_t *)R_alloc(m->ndim > 0 ? m->ndim : 1, sizeof *dims);
    for (int k = 0; k < m->ndim; k++) dims[k] = flat ? XLENGTH(x) : INTEGER(d)[k];
    m->dims = dims;
    if (!m->numeric || m->ndim != 2) return;
    m->data = r_doubles(x);
}

/* .st_desc's list as the core's description */
static pg_optim_state_in describe(SEXP desc)
{
    if (TYPEOF(desc) != VECSXP) Rf_error("internal: bad state description");
    pg_optim_state_in in = pg_optim_state_in_default();
    in.form = Rf_asInteger(field(desc, "form"));
    in.is_map = Rf_asLogical(field(desc, "is_map")) == TRUE;
    r_host_value(field(desc, "format"), &in.format);
    r_host_value(field(desc, "version"), &in.version);
    r_host_value(field(desc, "type"), &in.type);
    r_host_value(field(desc, "t"), &in.t);
    r_host_value(field(desc, "accum_count"), &in.accum_count);
    SEXP len = field(desc, "slot_len");
    for (R_xlen_t s = 0; s < 3 && s < XLENGTH(len) && TYPEOF(len) == INTSXP; s++)
        in.slot_len[s] = INTEGER(len)[s];
    SEXP names = field(desc, "names"), mine = field(desc, "opt_names");
    SEXP bad = field(desc, "names_bad"); /* names of the wrong kind: its class */
    if (Rf_isString(bad) && XLENGTH(bad) == 1) in.names_bad = CHAR(STRING_ELT(bad, 0));
    in.names_given = !Rf_isNull(names);
    in.names = strings(names, &in.n_names);
    if (!Rf_isNull(mine)) in.opt_names = strings(mine, &in.n_opt_names);
    SEXP slots = field(desc, "slots");
    in.n_slots = TYPEOF(slots) == VECSXP ? XLENGTH(slots) : 0;
    pg_host_matrix *m = (pg_host_matrix *)R_alloc(in.n_slots > 0 ? in.n_slots : 1, sizeof *m);
    for (int64_t j = 0; j < in.n_slots; j++) host_matrix(VECTOR_ELT(slots, j), &m[j]);
    in.slots = m;
    SEXP hn = field(desc, "hyper_names"), hv = field(desc, "hyper");
    in.hyper_names = strings(hn, &in.n_hyper);
    if (TYPEOF(hv) != VECSXP || XLENGTH(hv) != in.n_hyper) in.n_hyper = 0;
    pg_host_value *h = (pg_host_value *)R_alloc(in.n_hyper > 0 ? in.n_hyper : 1, sizeof *h);
    for (int64_t j = 0; j < in.n_hyper; j++) r_host_value(VECTOR_ELT(hv, j), &h[j]);
    in.hyper = h;
    return in;
}

/* pg_optim_state_form_of: the state list's form (a NULL value counts as absent) */
SEXP R_pg_optim_state_form(SEXP has_type, SEXP has_kind, SEXP params_is_list)
{
    return Rf_ScalarInteger(pg_optim_state_form_of(Rf_asLogical(has_type) == TRUE,
                                                   Rf_asLogical(has_kind) == TRUE,
                                                   Rf_asLogical(params_is_list) == TRUE));
}

/* pg_optim_state_load: NULL, or the core's error raised classed */
SEXP R_pg_optim_state_load(SEXP h, SEXP desc, SEXP check_only)
{
    pg_optim *o = r_get(h, R_OPTIM);
    pg_optim_state_in in = describe(desc);
    r_check(pg_optim_state_load(o, &in, Rf_asLogical(check_only) == TRUE));
    return R_NilValue;
}

/* pg_optim_state_check: the checks (their refusal raised classed), then the comparison: NULL
 * when nothing differs, else list(message, name, entry (1-based, 0: the default), default,
 * is_flag) */
SEXP R_pg_optim_state_check(SEXP h, SEXP desc)
{
    pg_optim *o = r_get(h, R_OPTIM);
    pg_optim_state_in in = describe(desc);
    pg_optim_hyper_diff d;
    r_check(pg_optim_state_check(o, &in, &d));
    return r_hyper_diff(&d, R_NilValue);
}

SEXP r_hyper_diff(const pg_optim_hyper_diff *d, SEXP state)
{
    if (!d->n) return R_NilValue;
    PROTECT(state);
    static const char *const fields[] = {"message", "name", "entry", "default", "is_flag", "state"};
    SEXP out = PROTECT(r_named_list(fields, Rf_isNull(state) ? 5 : 6));
    SEXP nm = PROTECT(Rf_allocVector(STRSXP, d->n)), entry = PROTECT(Rf_allocVector(INTSXP, d->n));
    SEXP dflt = PROTECT(Rf_allocVector(REALSXP, d->n)),
         flag = PROTECT(Rf_allocVector(LGLSXP, d->n));
    for (int k = 0; k < d->n; k++) {
        SET_STRING_ELT(nm, k, Rf_mkChar(d->name[k]));
        INTEGER(entry)[k] = (int)d->entry[k] + 1;
        REAL(dflt)[k] = d->default_value[k];
        LOGICAL(flag)[k] = d->is_flag[k];
    }
    SET_VECTOR_ELT(out, 0, Rf_ScalarString(Rf_mkCharCE(d->message, CE_UTF8)));
    SET_VECTOR_ELT(out, 1, nm);
    SET_VECTOR_ELT(out, 2, entry);
    SET_VECTOR_ELT(out, 3, dflt);
    SET_VECTOR_ELT(out, 4, flag);
    if (!Rf_isNull(state)) SET_VECTOR_ELT(out, 5, state);
    UNPROTECT(6);
    return out;
}

static SEXP name_vec(int table, int kind)
{
    int n = 0;
    while (pg_optim_name(table, kind, n)) n++;
    SEXP v = PROTECT(Rf_allocVector(STRSXP, n));
    for (int j = 0; j < n; j++) SET_STRING_ELT(v, j, Rf_mkChar(pg_optim_name(table, kind, j)));
    UNPROTECT(1);
    return v;
}

/* state() from the core (pg_optim_state_of): list(note = the mid-accumulation warning or NULL,
 * format, version, type, t, accum_count, slots = its slot names, hyper = the hyper-parameters it
 * stores, flags as logicals, file_slots = the model files' slot names) */
SEXP R_pg_optim_state_parts(SEXP h)
{
    pg_optim *o = r_get(h, R_OPTIM);
    pg_optim_state_out s;
    r_check(pg_optim_state_of(o, &s));
    static const char *const fields[] = {"note",        "format", "version", "type",      "t",
                                         "accum_count", "slots",  "hyper",   "file_slots"};
    SEXP out = PROTECT(r_named_list(fields, 9));
    SET_VECTOR_ELT(out, 0, s.has_note ? Rf_ScalarString(Rf_mkCharCE(s.note, CE_UTF8)) : R_NilValue);
    SET_VECTOR_ELT(out, 1, Rf_mkString(s.format));
    SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(s.version));
    SET_VECTOR_ELT(out, 3, Rf_mkString(s.type));
    SET_VECTOR_ELT(out, 4, Rf_ScalarInteger((int)s.t));
    SET_VECTOR_ELT(out, 5, Rf_ScalarInteger((int)s.accum_count));
    SET_VECTOR_ELT(out, 6, name_vec(PG_OPTIM_NAMES_SLOTS, pg_optim_kind(o)));
    SEXP hy = PROTECT(Rf_allocVector(VECSXP, s.n_hyper)),
         hn = PROTECT(Rf_allocVector(STRSXP, s.n_hyper));
    for (int k = 0; k < s.n_hyper; k++) {
        SET_VECTOR_ELT(hy, k,
                       s.hyper_is_flag[k] ? Rf_ScalarLogical(s.hyper_value[k] != 0)
                                          : Rf_ScalarReal(s.hyper_value[k]));
        SET_STRING_ELT(hn, k, Rf_mkChar(s.hyper_name[k]));
    }
    Rf_setAttrib(hy, R_NamesSymbol, hn);
    SET_VECTOR_ELT(out, 7, hy);
    SET_VECTOR_ELT(out, 8, name_vec(PG_OPTIM_NAMES_FILE_SLOTS, pg_optim_kind(o)));
    UNPROTECT(3);
    return out;
}

static SEXP by_kind(int table)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, PG_OPTIM_KIND_COUNT));
    SEXP nm = PROTECT(Rf_allocVector(STRSXP, PG_OPTIM_KIND_COUNT));
    for (int k = 0; k < PG_OPTIM_KIND_COUNT; k++) {
        SET_VECTOR_ELT(out, k, name_vec(table, k));
        SET_STRING_ELT(nm, k, Rf_mkChar(pg_optim_kind_name(k)));
    }
    Rf_setAttrib(out, R_NamesSymbol, nm);
    UNPROTECT(2);
    return out;
}

/* the model files' tables by kind, list(file_slots = list(sgd, adam), file_hyper = ...), read
 * into optim.R's .SLOTS / .HYPER at load */
SEXP R_pg_optim_tables(void)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2)), nm = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_VECTOR_ELT(out, 0, by_kind(PG_OPTIM_NAMES_FILE_SLOTS));
    SET_VECTOR_ELT(out, 1, by_kind(PG_OPTIM_NAMES_FILE_HYPER));
    SET_STRING_ELT(nm, 0, Rf_mkChar("file_slots"));
    SET_STRING_ELT(nm, 1, Rf_mkChar("file_hyper"));
    Rf_setAttrib(out, R_NamesSymbol, nm);
    UNPROTECT(2);
    return out;
}

/* ag_fit's opt_params(epoch) (pg_fit_opt_params): names, values as .st_val pairs; refusals are
 * raised classed */
SEXP R_pg_fit_opt_params(SEXP h, SEXP names, SEXP values, SEXP epoch)
{
    pg_optim *o = r_get(h, R_OPTIM);
    R_xlen_t n = XLENGTH(values);
    if (!Rf_isString(names) || TYPEOF(values) != VECSXP || XLENGTH(names) != n)
        Rf_error("internal: bad opt_params for the core");
    const char **nm = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
    pg_host_value *v = (pg_host_value *)R_alloc((size_t)n + 1, sizeof *v);
    for (R_xlen_t i = 0; i < n; i++) {
        nm[i] = utf8(names, i);
        r_host_value(VECTOR_ELT(values, i), &v[i]);
    }
    r_check(pg_fit_opt_params(o, (int64_t)n, nm, v, r_i64(Rf_asReal(epoch))));
    return R_NilValue;
}
