/* External pointers (one creator, one getter, quiet finalizers) and conversions. */
#include "r_util.h"

static const char *kind_name[] = {"pg_tensor", "pg_gradmap", "pg_optim"};

static SEXP kind_tag(int kind) { return Rf_install(kind_name[kind]); }

static void fin_tensor(SEXP x)
{
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL) return;
    pg_tensor_release((pg_tensor *)p);
    R_ClearExternalPtr(x);
}

static void fin_gradmap(SEXP x)
{
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL) return;
    pg_gradmap_free((pg_gradmap *)p);
    R_ClearExternalPtr(x);
}

static void fin_optim(SEXP x)
{
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL) return;
    pg_optim_free((pg_optim *)p);
    R_ClearExternalPtr(x);
}

void r_fail(void)
{
    const char *msg = pg_last_error();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", (msg && *msg) ? msg : "pyggmlr: unknown error in the C core");
    pg_clear_error();
    Rf_errorcall(R_NilValue, "%s", buf);
}

SEXP r_wrap(void *p, int kind)
{
    if (p == NULL) r_fail();
    SEXP x = PROTECT(R_MakeExternalPtr(p, kind_tag(kind), R_NilValue));
    R_RegisterCFinalizerEx(x, kind == R_TENSOR ? fin_tensor : kind == R_GRADMAP ? fin_gradmap : fin_optim,
                           TRUE);
    UNPROTECT(1);
    return x;
}

void *r_get(SEXP x, int kind)
{
    if (TYPEOF(x) != EXTPTRSXP || R_ExternalPtrTag(x) != kind_tag(kind))
        Rf_error("expected a %s handle", kind_name[kind]);
    void *p = R_ExternalPtrAddr(x);
    if (p == NULL) {
        if (kind == R_TENSOR) Rf_errorcall(R_NilValue, "tensor handle is dead (was it saved with saveRDS?)");
        Rf_errorcall(R_NilValue, "%s handle is dead (was it saved with saveRDS?)", kind_name[kind]);
    }
    return p;
}

pg_tensor *r_new_tensor(SEXP x, int dtype, const char *op)
{
    int src;
    const void *ptr;
    switch (TYPEOF(x)) {
    case REALSXP: src = PG_F64; ptr = REAL(x); break;
    case INTSXP: src = PG_I32; ptr = INTEGER(x); break;
    case LGLSXP: src = PG_I32; ptr = LOGICAL(x); break;
    default:
        return pg_fail_null(PG_ERR_DTYPE, "%s: expected a numeric matrix, vector or ag_tensor, got %s",
                            op, Rf_type2char(TYPEOF(x)));
    }
    int64_t nr = XLENGTH(x), nc = 1;
    SEXP dim = Rf_getAttrib(x, R_DimSymbol);
    if (!Rf_isNull(dim)) {
        if (XLENGTH(dim) == 2) {
            nr = INTEGER(dim)[0];
            nc = INTEGER(dim)[1];
        } else if (XLENGTH(dim) != 1) {
            return pg_fail_null(PG_ERR_SHAPE, "%s: tensors are 2-D matrices [features, batch]; got an array with %d dims",
                                op, (int)XLENGTH(dim));
        }
    }
    return pg_tensor_new(dtype, nr, nc, ptr, src, 1, nr);
}

pg_tensor *r_operand(SEXP x, int dtype, const char *op, const char *arg, int *tmp)
{
    *tmp = 0;
    if (TYPEOF(x) == EXTPTRSXP) {
        if (R_ExternalPtrTag(x) != kind_tag(R_TENSOR))
            return pg_fail_null(PG_ERR_ARG, "%s: argument '%s' is not a tensor handle", op, arg);
        pg_tensor *t = R_ExternalPtrAddr(x);
        if (t == NULL)
            return pg_fail_null(PG_ERR_STATE, "%s: argument '%s': tensor handle is dead (was it saved with saveRDS?)", op, arg);
        return t;
    }
    pg_tensor *t = r_new_tensor(x, dtype, op);
    if (t) *tmp = 1;
    return t;
}

SEXP r_matrix(pg_tensor *t)
{
    int64_t nr = pg_tensor_nrow(t), nc = pg_tensor_ncol(t);
    SEXP out = PROTECT(Rf_allocMatrix(REALSXP, (int)nr, (int)nc));
    if (nr * nc > 0 && pg_tensor_read(t, REAL(out), PG_F64) != 0) {
        UNPROTECT(1);
        r_fail();
    }
    UNPROTECT(1);
    return out;
}

double r_num(SEXP x, const char *what)
{
    if ((TYPEOF(x) != REALSXP && TYPEOF(x) != INTSXP && TYPEOF(x) != LGLSXP) || XLENGTH(x) != 1)
        Rf_error("%s must be a single number", what);
    double v = Rf_asReal(x);
    return v;
}
