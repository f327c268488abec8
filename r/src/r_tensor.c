/* .Call glue: tensors, the tape, backward and gradient maps, BLAS and global settings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#define USE_FC_LEN_T
#include "r_util.h"
#include <string.h>
#include <R_ext/BLAS.h>
#ifndef _WIN32
#include <dlfcn.h>
#endif
#ifndef FCONE
#define FCONE
#endif

static int dtype_arg(SEXP dtype)
{
    int d = Rf_asInteger(dtype);
    if (d != PG_DTYPE_F32 && d != PG_DTYPE_F64)
        r_stopf(PG_STATUS_ERR_DTYPE, "dtype must be 'f32' or 'f64'");
    return d;
}

SEXP R_pg_tensor_new(SEXP data, SEXP dtype, SEXP requires_grad)
{
    int d = dtype_arg(dtype);
    const int rg = Rf_asLogical(requires_grad) == TRUE;
    pg_tensor *t = r_new_tensor(data, d, rg ? "ag_param" : "ag_tensor");
    if (t == NULL) r_fail();
    if (rg) pg_tensor_set_requires_grad(t, 1);
    return r_wrap(t, R_TENSOR);
}

/* copy with another dtype (same values, new id) */
SEXP R_pg_tensor_cast(SEXP x, SEXP dtype)
{
    pg_tensor *t = r_get(r_handle(x), R_TENSOR);
    return r_wrap(pg_tensor_cast(t, dtype_arg(dtype)), R_TENSOR);
}

/* the field writes of R_pg_tensor_field_set: x$data <- value, x$requires_grad <- flag,
 * x$grad <- value (NULL clears it) on the tensor handle x; a shape mismatch is the core's text,
 * as Python's */
static void tensor_write(SEXP x, SEXP value)
{
    pg_tensor *t = r_get(x, R_TENSOR);
    pg_tensor *src = r_new_tensor(value, PG_DTYPE_F64, "$data<-");
    if (src == NULL) r_fail();
    int64_t nr = pg_tensor_nrow(src), nc = pg_tensor_ncol(src);
    int rc = pg_tensor_write(t, pg_tensor_data(src), PG_DTYPE_F64, nr, nc, 1, nr);
    pg_tensor_release(src);
    if (rc) r_fail();
}

SEXP R_pg_tensor_info(SEXP x)
{
    pg_tensor *t = r_get(x, R_TENSOR);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 5));
    REAL(out)[0] = (double)pg_tensor_id(t);
    REAL(out)[1] = (double)pg_tensor_nrow(t);
    REAL(out)[2] = (double)pg_tensor_ncol(t);
    REAL(out)[3] = (double)pg_tensor_dtype(t);
    REAL(out)[4] = (double)pg_tensor_requires_grad(t);
    UNPROTECT(1);
    return out;
}

static void tensor_set_requires_grad(SEXP x, SEXP flag)
{
    pg_tensor *t = r_get(x, R_TENSOR);
    /* TRUE or FALSE only, as Python's check_flag: 1:2 or "yes" was taken as TRUE */
    int f = TYPEOF(flag) == LGLSXP && XLENGTH(flag) == 1 ? LOGICAL(flag)[0] : NA_LOGICAL;
    if (f == NA_LOGICAL)
        r_check(pg_fail(PG_STATUS_ERR_ARG,
                        "ag_tensor: requires_grad must be TRUE or FALSE, got %s of length %lld",
                        Rf_type2char(TYPEOF(flag)), (long long)XLENGTH(flag)));
    r_check(pg_tensor_set_requires_grad(t, f));
}

static void tensor_set_grad(SEXP x, SEXP value)
{
    pg_tensor *t = r_get(x, R_TENSOR);
    if (Rf_isNull(value)) {
        r_check(pg_tensor_set_grad(t, NULL));
        return;
    }
    pg_tensor *g = r_new_tensor(value, pg_tensor_dtype(t), "$grad<-");
    if (g == NULL) r_fail();
    int rc = pg_tensor_set_grad(t, g);
    pg_tensor_release(g);
    if (rc) r_fail();
}

/* x$name and x[[name]] (see r_tensor_field) */
SEXP R_pg_tensor_field(SEXP x, SEXP name) { return r_tensor_field(x, name); }

/* x$name <- value: `data`, `grad` and `requires_grad` write the core tensor (an ag_tensor value
 * gives its values); `.ptr`, `id` and `dtype` are read-only; other names are plain fields */
SEXP R_pg_tensor_field_set(SEXP x, SEXP name, SEXP value)
{
    if (TYPEOF(x) != ENVSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_tensor field assignment: not an ag_tensor");
    if (!Rf_isString(name) || XLENGTH(name) != 1)
        r_stopf(PG_STATUS_ERR_ARG, "ag_tensor field assignment: the field name must be one string");
    const char *nm = Rf_translateChar(STRING_ELT(name, 0));
    int kind = r_tensor_field_is_computed(name);
    if (kind) {
        SEXP h = r_handle(x);
        if (TYPEOF(value) == ENVSXP) value = r_matrix(r_get(r_handle(value), R_TENSOR));
        PROTECT(value);
        if (kind == 1) tensor_write(h, value);
        else if (kind == 2) tensor_set_grad(h, value);
        else if (Rf_isNull(value))
            r_check(pg_fail(PG_STATUS_ERR_ARG,
                            "ag_tensor: requires_grad must be TRUE or FALSE, "
                            "got NULL"));
        else tensor_set_requires_grad(h, value);
        UNPROTECT(1);
        return x;
    }
    if (!strcmp(nm, ".ptr") || !strcmp(nm, "id") || !strcmp(nm, "dtype") || !strcmp(nm, "device"))
        r_stopf(PG_STATUS_ERR_STATE, "ag_tensor: `%s` is read-only%s", nm,
                !strcmp(nm, "dtype") ? "; ag_tensor(x, dtype = ...) makes a copy of another dtype"
                    : !strcmp(nm, "device") ? "; pyggmlr runs on the CPU"
                                            : "");
    Rf_defineVar(Rf_installTrChar(STRING_ELT(name, 0)), value, x);
    return x;
}

SEXP R_pg_same_tensor(SEXP a, SEXP b)
{
    return Rf_ScalarLogical(r_get(a, R_TENSOR) == r_get(b, R_TENSOR));
}

/* TRUE at the first occurrence of each tensor in a list of ag_tensors (by identity, not name):
 * an optimizer keeps a tensor listed twice once. One call: comparing pairs in R cost 30 us per
 * optimizer of a 3-layer model, a tenth of ag_fit's set-up. */
SEXP R_pg_first_of_each(SEXP lst)
{
    if (TYPEOF(lst) != VECSXP) r_stopf(PG_STATUS_ERR_ARG, "first_of_each: expected a list");
    const R_xlen_t n = XLENGTH(lst);
    pg_tensor **t = (pg_tensor **)R_alloc(n > 0 ? n : 1, sizeof(pg_tensor *));
    for (R_xlen_t i = 0; i < n; i++) t[i] = r_get(r_handle(VECTOR_ELT(lst, i)), R_TENSOR);
    SEXP keep = PROTECT(Rf_allocVector(LGLSXP, n));
    for (R_xlen_t i = 0; i < n; i++) {
        int first = 1;
        for (R_xlen_t j = 0; j < i && first; j++) first = t[j] != t[i];
        LOGICAL(keep)[i] = first;
    }
    UNPROTECT(1);
    return keep;
}

SEXP R_pg_xptr_is_null(SEXP x)
{
    return Rf_ScalarLogical(TYPEOF(x) != EXTPTRSXP || R_ExternalPtrAddr(x) == NULL);
}

/* ---- defaults ---- */
SEXP R_pg_default_dtype(SEXP dtype)
{
    int prev = pg_default_dtype();
    if (!Rf_isNull(dtype)) r_check(pg_set_default_dtype(dtype_arg(dtype)) < 0);
    return Rf_ScalarInteger(prev);
}

/* ---- tape ---- */
/* R frees a tensor only when its garbage collector runs, and that runs on R's own allocations,
 * blind to the core's buffers: a training loop piled up each step's activations and gradient
 * maps (over 1 MB a step for a 784-256-128-10 MLP), and every step wrote to fresh pages (page
 * faults were half the step). So each outermost with_grad_tape() scope starts with a young-
 * generation collection when the core's memory has grown by a set room (below) since the last
 * one: memory stays bounded and is reused while still mapped. */
static int64_t gc_base = -1;

static int64_t core_bytes(void)
{
    pg_memory_counts c = {{0}};
    pg_memory_stats(&c);
    return c.total;
}

static void collect_if_due(void)
{
    int64_t now = core_bytes();
    if (gc_base < 0) gc_base = now;
    /* A collection costs 0.3-0.7 ms whatever it frees, every 21st 1.5-4 ms, every 126th ~25 ms
     * (R's generations; measured, R 4.2), and until it runs every step writes to fresh buffers
     * instead of reusing cached ones. The room is 32 times the largest growth seen between two
     * steps since the last collection, at least 32 MB, at most 256 MB. The floor was 4 MB: on a
     * 4-64-32-3 MLP (about 45 steps per 4 MB) collections took 3-5 ms of a 3-epoch ag_fit's
     * 10-12 ms; at 32 MB they take 0.6-1 ms and the run 7.5-10 ms (Rscript, interleaved, min of
     * 7). Models whose step grows 1 MB or more are not affected. */
    static int64_t prev = -1, step_max = 0;
    if (prev >= 0 && now - prev > step_max) step_max = now - prev;
    prev = now;
    const int64_t MB = (int64_t)1 << 20;
    int64_t room = 32 * step_max;
    room = room < 32 * MB ? 32 * MB : room > 256 * MB ? 256 * MB : room;
    if (now - gc_base <= room) {
        if (now < gc_base) gc_base = now;
        return;
    }
    static SEXP call = NULL;
    if (call == NULL) { /* gc(verbose = FALSE, reset = FALSE, full = FALSE) */
        call = Rf_lang4(Rf_install("gc"), Rf_ScalarLogical(FALSE), Rf_ScalarLogical(FALSE),
                        Rf_ScalarLogical(FALSE));
        R_PreserveObject(call);
    }
    Rf_eval(call, R_BaseEnv);
    R_RunPendingFinalizers();
    gc_base = prev = core_bytes();
    step_max = 0;
}

SEXP R_pg_tape(SEXP what)
{
    int w = Rf_asInteger(what);
    switch (w) {
    case R_TAPE_BEGIN:
        if (pg_tape_depth() == 0) collect_if_due();
        r_check(pg_tape_begin());
        break;
    case R_TAPE_END: r_check(pg_tape_end()); break;
    case R_TAPE_CLEAR: pg_tape_clear(); break;
    case R_TAPE_DEPTH: return Rf_ScalarInteger(pg_tape_depth());
    case R_TAPE_NODES: return Rf_ScalarReal((double)pg_tape_nodes());
    case R_TAPE_ENABLED: return Rf_ScalarLogical(pg_tape_enabled());
    default: Rf_error("bad tape request %d", w);
    }
    return R_NilValue;
}

SEXP R_pg_tape_set_enabled(SEXP flag)
{
    return Rf_ScalarLogical(pg_tape_set_enabled(Rf_asLogical(flag) == TRUE));
}

static SEXP backward_map(SEXP loss)
{
    pg_gradmap *m = pg_backward(r_get(r_handle(loss), R_TENSOR));
    if (!m) r_host_rethrow(); /* an R error in an ag_checkpoint replay goes on unchanged */
    return r_wrap(m, R_GRADMAP);
}

/* backward() in one call: the gradient environment of the loss's tape */
SEXP R_pg_backward_env(SEXP loss)
{
    SEXP h = r_handle(loss);
    if (TYPEOF(h) != EXTPTRSXP)
        r_check(pg_fail(PG_STATUS_ERR_ARG, "backward() requires an ag_tensor, got %s",
                        Rf_type2char(TYPEOF(loss))));
    SEXP map = PROTECT(backward_map(loss));
    SEXP e = r_grad_env(map);
    UNPROTECT(1);
    return e;
}

/* the ag_tensor environment of a tensor handle (an environment passes through) */
SEXP R_pg_wrap(SEXP x) { return r_tensor_env(x); }

/* ids of the tensors in the map, as doubles */
SEXP R_pg_gradmap_ids(SEXP map)
{
    pg_gradmap *m = r_get(map, R_GRADMAP);
    int64_t n = pg_gradmap_size(m);
    SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
    for (int64_t i = 0; i < n; i++) REAL(out)[i] = (double)pg_gradmap_key_id(m, i);
    UNPROTECT(1);
    return out;
}

SEXP R_pg_gradmap_get(SEXP map, SEXP id)
{
    pg_gradmap *m = r_get(map, R_GRADMAP);
    pg_tensor *g = pg_gradmap_get_id(m, r_i64(Rf_asReal(id)));
    return g == NULL ? R_NilValue : r_matrix(g);
}

/* overwrite a gradient in the map (in place; shape must match) */
SEXP R_pg_gradmap_set(SEXP map, SEXP id, SEXP value)
{
    pg_gradmap *m = r_get(map, R_GRADMAP);
    pg_tensor *g = pg_gradmap_get_id(m, r_i64(Rf_asReal(id)));
    if (g == NULL)
        r_stopf(PG_STATUS_ERR_VALUE, "no gradient with id %.0f in this map", Rf_asReal(id));
    g = pg_gradmap_own_value(m, g); /* the environment only: $grad keeps its values, as in ggmlR */
    if (g == NULL) r_stopf(PG_STATUS_ERR_NOMEM, "gradient<-: out of memory");
    pg_tensor *src = r_new_tensor(value, PG_DTYPE_F64, "gradient<-");
    if (src == NULL) r_fail();
    int rc = pg_tensor_write(g, pg_tensor_data(src), PG_DTYPE_F64, pg_tensor_nrow(src),
                             pg_tensor_ncol(src), 1, pg_tensor_nrow(src));
    pg_tensor_release(src);
    if (rc) r_fail();
    return R_NilValue;
}

/* ---- accounting ---- */
SEXP R_pg_live_objects(void) { return Rf_ScalarReal((double)pg_live_objects()); }

SEXP R_pg_memory_stats(void)
{
    pg_memory_counts c;
    r_check(pg_memory_stats(&c));
    /* named, read by name in R: bytes per category, then the totals and live counts */
    enum { NC = PG_MEM_CATEGORY_COUNT, N = NC + 6 };
    int64_t v[N] = {[NC] = c.total,  c.peak,        c.live_tensors,
                    c.live_gradmaps, c.live_optims, c.tape_nodes};
    const char *nm[N] = {[NC] = "total",    "peak",      "live_tensors", "live_gradmaps",
                         "live_optimizers", "tape_nodes"};
    for (int i = 0; i < NC; i++) {
        v[i] = c.current[i];
        nm[i] = r_mem_categories[i];
    }
    return r_named_counts(v, nm, N);
}

/* ---- BLAS ---- */
/* cblas_dgemm signature over R's own Fortran dgemm (column-major only: the core never asks for
 * row-major) */
static void r_cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha,
                          const double *a, int lda, const double *b, int ldb, double beta,
                          double *c, int ldc)
{
    (void)order;
    const char *tra = ta == 112 ? "T" : "N", *trb = tb == 112 ? "T" : "N";
    F77_CALL(dgemm)(tra, trb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc FCONE FCONE);
}

/* R's BLAS exports no sgemm in its headers, but every BLAS R links (reference, OpenBLAS, MKL,
 * BLIS, ...) has the Fortran symbol; found at run time in the process's global scope */
typedef void (*f77_sgemm_fn)(const char *, const char *, const int *, const int *, const int *,
                             const float *, const float *, const int *, const float *, const int *,
                             const float *, float *, const int *, FC_LEN_T, FC_LEN_T);
static f77_sgemm_fn r_sgemm;

static void r_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                          const float *a, int lda, const float *b, int ldb, float beta, float *c,
                          int ldc)
{
    (void)order;
    const char *tra = ta == 112 ? "T" : "N", *trb = tb == 112 ? "T" : "N";
    r_sgemm(tra, trb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
}

/* GEMM from R's own BLAS: dgemm, and sgemm when the library has it (else the built-in kernel) */
SEXP R_pg_use_r_blas(SEXP lib)
{
#ifndef _WIN32
    if (!r_sgemm) r_sgemm = (f77_sgemm_fn)dlsym(RTLD_DEFAULT, "sgemm_");
#endif
    char name[160];
    const char *l = Rf_isString(lib) && XLENGTH(lib) == 1 ? CHAR(STRING_ELT(lib, 0)) : "";
    snprintf(name, sizeof name, "R BLAS%s%s%s%s", *l ? " (" : "", l, *l ? ")" : "",
             r_sgemm ? "" : "; f32: builtin");
    pg_set_blas(r_sgemm ? (void *)r_cblas_sgemm : NULL, (void *)r_cblas_dgemm, NULL, name);
    return Rf_mkString(pg_blas_name());
}

SEXP R_pg_set_blas(SEXP sgemm, SEXP dgemm, SEXP threads, SEXP name)
{
    void *s = Rf_isNull(sgemm) ? NULL : R_ExternalPtrAddr(sgemm);
    void *d = Rf_isNull(dgemm) ? NULL : R_ExternalPtrAddr(dgemm);
    void *th = Rf_isNull(threads) ? NULL : R_ExternalPtrAddr(threads);
    r_check(pg_set_blas(s, d, th, CHAR(STRING_ELT(name, 0))));
    return Rf_mkString(pg_blas_name());
}

SEXP R_pg_blas_name(void) { return Rf_mkString(pg_blas_name()); }

/* the previous count, as Python's ag_set_threads (and R's options()/par()) return it */
SEXP R_pg_set_threads(SEXP n)
{
    int prev = pg_get_threads();
    if (!Rf_isNull(n)) r_check(pg_set_threads(Rf_asInteger(n)));
    return Rf_ScalarInteger(prev);
}

SEXP R_pg_version(void) { return Rf_mkString(pg_version()); }
