/* External pointers (one creator, one getter, quiet finalizers) and conversions. */
#include "r_util.h"
#include <stdarg.h>
#include <string.h>

static void free_tensor(void *p) { pg_tensor_release((pg_tensor *)p); }

static void free_gradmap(void *p) { pg_gradmap_free((pg_gradmap *)p); }

static void free_optim(void *p) { pg_optim_free((pg_optim *)p); }

static void free_early_stop(void *p) { pg_early_stop_free((pg_early_stop *)p); }

static void free_fit(void *p) { pg_fit_free((pg_fit *)p); }

static void free_checkpoint(void *p) { pg_checkpoint_free((pg_checkpoint *)p); }

static void free_graph(void *p) { pg_graph_free((pg_graph *)p); }

static void free_rng(void *p) { pg_rng_free((pg_rng *)p); }

static void free_session(void *p) { pg_session_free((pg_session *)p); }

static void free_modelfile(void *p) { pg_mf_close((pg_mf *)p); }

static void free_fit_setup(void *p) { pg_fit_setup_free((pg_fit_setup *)p); }

/* per kind: the pointer's tag, its finalizer, and what it is (the errors of a wrong kind and of
 * a cleared pointer: a handle saved with saveRDS and read back) */
static const char *const kind_name[R_KIND_COUNT] = {[R_TENSOR] = "pg_tensor",
                                                    [R_GRADMAP] = "pg_gradmap",
                                                    [R_OPTIM] = "pg_optim",
                                                    [R_EARLY_STOP] = "pg_early_stop",
                                                    [R_FIT] = "pg_fit",
                                                    [R_CHECKPOINT] = "pg_checkpoint",
                                                    [R_GRAPH] = "pg_graph",
                                                    [R_RNG] = "pg_rng",
                                                    [R_SESSION] = "pg_session",
                                                    [R_MODELFILE] = "pg_mf",
                                                    [R_FIT_SETUP] = "pg_fit_setup"};
static void (*const kind_free[R_KIND_COUNT])(void *) = {[R_TENSOR] = free_tensor,
                                                        [R_GRADMAP] = free_gradmap,
                                                        [R_OPTIM] = free_optim,
                                                        [R_EARLY_STOP] = free_early_stop,
                                                        [R_FIT] = free_fit,
                                                        [R_CHECKPOINT] = free_checkpoint,
                                                        [R_GRAPH] = free_graph,
                                                        [R_RNG] = free_rng,
                                                        [R_SESSION] = free_session,
                                                        [R_MODELFILE] = free_modelfile,
                                                        [R_FIT_SETUP] = free_fit_setup};
static const char *const kind_what[R_KIND_COUNT] = {
    [R_TENSOR] = "tensor",          [R_GRADMAP] = "gradient map",
    [R_OPTIM] = "optimizer",        [R_EARLY_STOP] = "ag_early_stopping",
    [R_FIT] = "ag_fit data plan",   [R_CHECKPOINT] = "ag_model_checkpoint",
    [R_GRAPH] = "compiled step",    [R_RNG] = "random stream",
    [R_SESSION] = "ag_fit session", [R_MODELFILE] = "open model file",
    [R_FIT_SETUP] = "ag_fit set-up"};

static SEXP kind_tag(int kind)
{
    static SEXP tags[R_KIND_COUNT]; /* symbols are never collected; looked up once */
    if (!tags[kind]) tags[kind] = Rf_install(kind_name[kind]);
    return tags[kind];
}

/* one quiet finalizer: the kind is the pointer's tag */
static void fin_handle(SEXP x)
{
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL) return;
    for (int k = 0; k < R_KIND_COUNT; k++)
        if (R_ExternalPtrTag(x) == kind_tag(k)) kind_free[k](p);
    R_ClearExternalPtr(x);
}

void r_free_now(SEXP x, int kind)
{
    if (TYPEOF(x) == EXTPTRSXP && R_ExternalPtrTag(x) == kind_tag(kind)) fin_handle(x);
}

/* The core's error as a classed R condition (no call), as Python's typed exceptions
 * (r_guard.c: the class from the core's status). */
void r_stopf(int status, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r_stop_status(status, buf);
}

void r_fail_hint(const char *(*hint)(void *), void *ctx)
{
    const char *msg = pg_last_error();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", (msg && *msg) ? msg : "pyggmlr: unknown error in the C core");
    int status = pg_last_status();
    pg_clear_error();
    const char *h = hint ? hint(ctx) : NULL; /* after the error is kept: it may call the core */
    size_t len = strlen(buf);
    if (h) snprintf(buf + len, sizeof buf - len, "; %s", h);
    r_stop_status(status, buf);
}

void r_fail(void) { r_fail_hint(NULL, NULL); }

SEXP r_wrap_keep(void *p, int kind, SEXP keep)
{
    if (p == NULL) r_fail();
    if (kind == R_TENSOR) r_gc_pressure(); /* R's collector cannot see the core's bytes */
    SEXP x = PROTECT(R_MakeExternalPtr(p, kind_tag(kind), keep));
    R_RegisterCFinalizerEx(x, fin_handle, TRUE);
    UNPROTECT(1);
    return x;
}

SEXP r_wrap(void *p, int kind) { return r_wrap_keep(p, kind, R_NilValue); }

void *r_get(SEXP x, int kind)
{
    if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != kind_tag(kind))
        r_stopf(PG_STATUS_ERR_ARG, "expected a %s handle (%s)", kind_name[kind], kind_what[kind]);
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL && kind == R_GRAPH)
        r_stopf(PG_STATUS_ERR_STATE,
                "compiled step: the graph is gone (a saved and reloaded handle); compile again");
    if (p == NULL)
        r_stopf(PG_STATUS_ERR_STATE, "%s handle is dead (was it saved with saveRDS?)",
                kind_what[kind]);
    return p;
}

static pg_tensor *new_tensor_arg(SEXP x, int dtype, const char *op, const char *arg);

pg_tensor *r_new_tensor(SEXP x, int dtype, const char *op)
{
    return new_tensor_arg(x, dtype, op, strcmp(op, "ag_tensor") ? "value" : "data");
}

static pg_tensor *new_tensor_arg(SEXP x, int dtype, const char *op, const char *arg)
{
    int src;
    const void *ptr;
    if (Rf_isFactor(x))
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "%s: a factor is not numeric (use as.integer() for its codes)", op);
    switch (TYPEOF(x)) {
    case REALSXP:
        src = PG_DTYPE_F64;
        ptr = REAL(x);
        break;
    case INTSXP:
    case LGLSXP: {
        /* NA_integer_ / NA (INT_MIN) must become NA_real_, not -2147483648 */
        const int *iv = TYPEOF(x) == INTSXP ? INTEGER(x) : LOGICAL(x);
        R_xlen_t n = XLENGTH(x), k = 0;
        while (k < n && iv[k] != NA_INTEGER) k++;
        if (k == n) {
            src = PG_DTYPE_I32;
            ptr = iv;
            break;
        }
        double *dv =
            (double *)R_alloc((size_t)n, sizeof(double)); /* freed when the .Call returns */
        for (R_xlen_t i = 0; i < n; i++) dv[i] = iv[i] == NA_INTEGER ? NA_REAL : (double)iv[i];
        src = PG_DTYPE_F64;
        ptr = dv;
        break;
    }
    default:
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "%s: expected a numeric matrix, vector or ag_tensor, got %s", op,
                            Rf_type2char(TYPEOF(x)));
    }
    int64_t nr, nc;
    if (r_matrix_dims(x, op, arg, &nr, &nc)) return NULL; /* length == prod(dim), or an error */
    return pg_tensor_new(dtype, nr, nc, ptr, src, 1, nr);
}

pg_tensor *r_operand(SEXP x, int dtype, const char *op, const char *arg, int *tmp)
{
    *tmp = 0;
    x = r_handle(x);
    if (TYPEOF(x) == EXTPTRSXP) {
        if (R_ExternalPtrTag(x) != kind_tag(R_TENSOR))
            return pg_fail_null(PG_STATUS_ERR_ARG, "%s: argument '%s' is not a tensor handle", op,
                                arg);
        pg_tensor *t = R_ExternalPtrAddr(x);
        if (t == NULL)
            return pg_fail_null(
                PG_STATUS_ERR_STATE,
                "%s: argument '%s': tensor handle is dead (was it saved with saveRDS?)", op, arg);
        return t;
    }
    pg_tensor *t = new_tensor_arg(x, dtype, op, arg);
    if (t) *tmp = 1;
    return t;
}

int r_operand_dtype(SEXP x)
{
    x = r_handle(x);
    if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != kind_tag(R_TENSOR)) return -1;
    pg_tensor *t = R_ExternalPtrAddr(x);
    return t && pg_tensor_check(t) == 0 ? pg_tensor_dtype(t) : -1;
}

SEXP r_matrix(pg_tensor *t)
{
    int64_t nr = pg_tensor_nrow(t), nc = pg_tensor_ncol(t);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nr, (int)nc));
    if (nr * nc > 0 && pg_tensor_read(t, REAL(out), PG_DTYPE_F64) != 0) {
        UNPROTECT(1);
        r_fail();
    }
    UNPROTECT(1);
    return out;
}

double r_num(SEXP x, const char *what)
{
    if ((TYPEOF(x) != REALSXP && TYPEOF(x) != INTSXP && TYPEOF(x) != LGLSXP) || XLENGTH(x) != 1)
        r_stopf(PG_STATUS_ERR_ARG, "%s must be a single number", what);
    double v = Rf_asReal(x);
    return v;
}

/* ---- ag_tensor and gradient environments ---- */
static SEXP s_ptr, s_id, s_dtype, s_device, s_data, s_grad, s_rg, s_map;
static SEXP c_class, c_grads_class, c_f32, c_f64,
    c_cpu;               /* shared constants, preserved, not mutable */
static SEXP t_gb, t_gbf; /* gradient binding function and formals template (tape.R) */
static SEXP ns_env;

static SEXP constant(SEXP x)
{
    R_PreserveObject(x);
    MARK_NOT_MUTABLE(x);
    return x;
}

static SEXP template_fn(const char *name)
{
    SEXP f = Rf_findVarInFrame(ns_env, Rf_install(name));
    if (TYPEOF(f) == PROMSXP) f = Rf_eval(f, ns_env);
    if (TYPEOF(f) != CLOSXP) Rf_error("pyggmlr: internal function %s is missing", name);
    R_PreserveObject(f);
    return f;
}

static void env_init(void)
{
    if (ns_env) return;
    s_ptr = Rf_install(".ptr");
    s_id = Rf_install("id");
    s_dtype = Rf_install("dtype");
    s_device = Rf_install("device");
    s_data = Rf_install("data");
    s_grad = Rf_install("grad");
    s_rg = Rf_install("requires_grad");
    s_map = Rf_install(".map");
    c_class = constant(Rf_mkString("ag_tensor"));
    c_grads_class = constant(Rf_mkString("ag_grads"));
    c_f32 = constant(Rf_mkString("f32"));
    c_f64 = constant(Rf_mkString("f64"));
    c_cpu = constant(Rf_mkString("cpu"));
    SEXP ns = PROTECT(R_FindNamespace(PROTECT(Rf_mkString("pyggmlr"))));
    R_PreserveObject(ns);
    ns_env = ns;
    UNPROTECT(2);
    t_gb = template_fn(".gb_grad");
    t_gbf = template_fn(".gb_formals");
}

SEXP r_handle(SEXP x)
{
    if (TYPEOF(x) != ENVSXP) return x;
    if (s_ptr == NULL) env_init();
    SEXP p = Rf_findVarInFrame(x, s_ptr);
    return TYPEOF(p) == EXTPTRSXP ? p : x;
}

SEXP r_tensor_env(SEXP ptr)
{
    if (TYPEOF(ptr) == ENVSXP) return ptr;
    r_get(ptr, R_TENSOR);
    env_init();
    PROTECT(ptr);
    /* The environment holds only `.ptr`; every field (`data`, `grad`, `requires_grad`, `id`,
     * `dtype`, `device`, `grad_fn`) is served by the `$.ag_tensor` method (r_tensor_field) from
     * the core, so a tensor costs one small environment and one binding (R-side objects per op
     * were most of a small model's R training step). */
    SEXP e = PROTECT(R_NewEnv(R_EmptyEnv, FALSE, 0));
    Rf_defineVar(s_ptr, ptr, e);
    Rf_setAttrib(e, R_ClassSymbol, c_class);
    UNPROTECT(2);
    return e;
}

/* `$` and `[[` on an ag_tensor: the computed fields from the core, anything else from the
 * environment (NULL when unbound, as for a plain environment) */
SEXP r_tensor_field(SEXP x, SEXP name)
{
    if (TYPEOF(x) != ENVSXP) r_stopf(PG_STATUS_ERR_ARG, "ag_tensor field access: not an ag_tensor");
    env_init();
    SEXP sym = Rf_isString(name) && XLENGTH(name) == 1 ? Rf_installTrChar(STRING_ELT(name, 0))
        : TYPEOF(name) == SYMSXP                       ? name
                                                       : R_NilValue;
    if (sym == R_NilValue)
        r_stopf(PG_STATUS_ERR_ARG, "ag_tensor field access: the field name must be one string");
    if (sym == s_data || sym == s_grad || sym == s_rg || sym == s_id || sym == s_dtype) {
        pg_tensor *t = r_get(r_handle(x), R_TENSOR);
        if (sym == s_data) return r_matrix(t);
        if (sym == s_rg) return Rf_ScalarLogical(pg_tensor_requires_grad(t));
        if (sym == s_id) return Rf_ScalarReal((double)pg_tensor_id(t));
        if (sym == s_dtype) return pg_tensor_dtype(t) == PG_DTYPE_F64 ? c_f64 : c_f32;
        pg_tensor *g = pg_tensor_grad(t);
        return g == NULL ? R_NilValue : r_matrix(g);
    }
    if (sym == s_device) return c_cpu;
    SEXP v = Rf_findVarInFrame(x, sym);
    if (v == R_UnboundValue) return R_NilValue; /* grad_fn, unset fields: NULL as ggmlR */
    if (TYPEOF(v) == PROMSXP) v = Rf_eval(v, R_EmptyEnv);
    return v;
}

int r_tensor_field_is_computed(SEXP name)
{
    env_init();
    SEXP sym =
        Rf_isString(name) && XLENGTH(name) == 1 ? Rf_installTrChar(STRING_ELT(name, 0)) : name;
    return sym == s_data ? 1 : sym == s_grad ? 2 : sym == s_rg ? 3 : 0;
}

pg_gradmap *r_map_arg(SEXP grads, const char *where)
{
    if (Rf_isNull(grads)) return NULL;
    env_init();
    if (TYPEOF(grads) == ENVSXP) {
        SEXP m = Rf_findVarInFrame(grads, s_map);
        if (TYPEOF(m) == EXTPTRSXP) return r_get(m, R_GRADMAP);
    }
    if (TYPEOF(grads) == EXTPTRSXP) return r_get(grads, R_GRADMAP);
    r_stopf(PG_STATUS_ERR_ARG, "%s: grads must be the environment returned by backward() or NULL",
            where);
}

SEXP r_wrap_tensor(pg_tensor *t)
{
    SEXP x = PROTECT(r_wrap(t, R_TENSOR));
    SEXP e = r_tensor_env(x);
    UNPROTECT(1);
    return e;
}

/* The binding of leaf id `id` in gradient environments: its symbol as.character(id) and the body
 * .gb_grad(.map, id, value). Leaves keep their ids across steps, so both are cached per id (R's
 * number formatting and the call's cells were ~10% of a small model's R step); every step then
 * makes only one closure per leaf. Symbols are never collected; the bodies live in one
 * preserved list. */
static void leaf_binding(double v, SEXP *sym, SEXP *body)
{
    enum { N = 1024 };
    static double ids[N];
    static SEXP syms[N], bodies;
    if (bodies == NULL) bodies = constant(Rf_allocVector(VECSXP, N));
    size_t k = (size_t)((uint64_t)v * 0x9E3779B97F4A7C15ull >> 54) & (N - 1);
    if (syms[k] == NULL || ids[k] != v) {
        SEXP id = PROTECT(Rf_ScalarReal(v));
        SEXP nm = PROTECT(Rf_coerceVector(id, STRSXP)); /* as.character(id), as R formats it */
        syms[k] = Rf_installChar(STRING_ELT(nm, 0));
        SET_VECTOR_ELT(bodies, k, Rf_lang4(t_gb, s_map, id, Rf_install("value")));
        ids[k] = v;
        UNPROTECT(2);
    }
    *sym = syms[k];
    *body = VECTOR_ELT(bodies, k);
}

SEXP r_grad_env(SEXP map)
{
    pg_gradmap *m = r_get(map, R_GRADMAP);
    env_init();
    PROTECT(map);
    int64_t n = pg_gradmap_size(m), nleaf = 0;
    for (int64_t i = 0; i < n; i++) nleaf += pg_gradmap_key_is_leaf(m, i) == 1;
    SEXP e = PROTECT(R_NewEnv(R_EmptyEnv, nleaf > 8, (int)(nleaf + 1)));
    Rf_defineVar(s_map, map, e);
    /* Only leaves (parameters, inputs) get a binding: their ids are the same every step, so
     * their symbols are made once. Op results have new ids every step, and a binding each would
     * make R symbols, which R never frees (the step slowed down as a run went on); they are
     * served by `[[.ag_grads`/`$.ag_grads` from the core's map instead. */
    for (int64_t i = 0; i < n; i++) {
        if (pg_gradmap_key_is_leaf(m, i) != 1) continue;
        SEXP sym, body;
        leaf_binding((double)pg_gradmap_key_id(m, i), &sym, &body);
        SEXP f = PROTECT(Rf_allocSExp(CLOSXP));
        SET_FORMALS(f, FORMALS(t_gbf));
        SET_BODY(f, body);
        SET_CLOENV(f, e);
        R_MakeActiveBinding(sym, f, e);
        UNPROTECT(1);
    }
    Rf_setAttrib(e, R_ClassSymbol, c_grads_class);
    UNPROTECT(2);
    return e;
}

pg_tensor **r_handle_array(SEXP lst, const char *op)
{
    if (TYPEOF(lst) != VECSXP)
        r_stopf(PG_STATUS_ERR_ARG, "%s: expected a list of tensor handles", op);
    R_xlen_t n = XLENGTH(lst);
    pg_tensor **arr = (pg_tensor **)R_alloc(n > 0 ? n : 1, sizeof(pg_tensor *));
    for (R_xlen_t i = 0; i < n; i++) {
        SEXP h = VECTOR_ELT(lst, i);
        if (TYPEOF(h) != EXTPTRSXP)
            r_stopf(PG_STATUS_ERR_ARG, "%s: parameter %d is not a tensor", op, (int)i + 1);
        arr[i] = r_get(h, R_TENSOR);
    }
    return arr;
}

SEXP r_list(int n, const SEXP *items)
{
    SEXP out = Rf_allocVector(VECSXP, n);
    for (int i = 0; i < n; i++) SET_VECTOR_ELT(out, i, items[i]);
    return out;
}

SEXP r_counts(const int64_t *v, R_xlen_t n)
{
    SEXP out = Rf_allocVector(REALSXP, n);
    for (R_xlen_t i = 0; i < n; i++) REAL(out)[i] = (double)v[i];
    return out;
}

SEXP r_named_counts(const int64_t *v, const char *const *names, int n)
{
    SEXP out = PROTECT(r_counts(v, n)), nm = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
    Rf_setAttrib(out, R_NamesSymbol, nm);
    UNPROTECT(2);
    return out;
}

int64_t *r_dims(SEXP v, int *nd)
{
    SEXP dim = Rf_getAttrib(v, R_DimSymbol);
    if (Rf_isNull(dim)) {
        int64_t *d = (int64_t *)R_alloc(1, sizeof *d);
        d[0] = (int64_t)Rf_xlength(v);
        *nd = 1;
        return d;
    }
    SEXP r = PROTECT(Rf_coerceVector(dim, REALSXP));
    *nd = (int)XLENGTH(r);
    int64_t *d = (int64_t *)R_alloc((size_t)(*nd ? *nd : 1), sizeof *d);
    for (int i = 0; i < *nd; i++)
        d[i] = REAL(r)[i] >= 0 && REAL(r)[i] < 9e18 ? r_i64(REAL(r)[i]) : -1;
    UNPROTECT(1);
    return d;
}

SEXP r_name_table(const char *(*name)(int))
{
    int n = 0;
    while (name(n)) n++;
    SEXP out = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) SET_STRING_ELT(out, i, Rf_mkChar(name(i)));
    UNPROTECT(1);
    return out;
}

/* a list of n NULLs named names[i], for the caller to fill */
SEXP r_named_list(const char *const *names, int n)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n)), nm = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
    Rf_setAttrib(out, R_NamesSymbol, nm);
    UNPROTECT(2);
    return out;
}
