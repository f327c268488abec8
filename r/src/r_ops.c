/* .Call glue for the differentiable ops: operands are tensor handles or R numbers (constants
 * of the other operand's dtype). Temporaries are released before any R error. */
#include "r_util.h"

typedef pg_tensor *(*bin_fn)(pg_tensor *, pg_tensor *);

static SEXP binary(SEXP A, SEXP B, bin_fn f, const char *op, const char *na, const char *nb)
{
    int da = r_operand_dtype(A), db = r_operand_dtype(B);
    int d = da >= 0 ? da : db >= 0 ? db : pg_default_dtype();
    int ta = 0, tb = 0;
    pg_tensor *a = r_operand(A, d, op, na, &ta);
    if (a == NULL) r_fail();
    pg_tensor *b = r_operand(B, d, op, nb, &tb);
    if (b == NULL) {
        if (ta) pg_tensor_release(a);
        r_fail();
    }
    pg_tensor *out = f(a, b);
    if (ta) pg_tensor_release(a);
    if (tb) pg_tensor_release(b);
    return r_wrap_tensor(out);
}

SEXP R_pg_matmul(SEXP A, SEXP B) { return binary(A, B, pg_matmul, "ag_matmul", "A", "B"); }

/* ag_linear's forward: act(W x + b) as one node (act -1: none; else PG_UNARY_OP_RELU / PG_UNARY_OP_SIGMOID /
 * PG_UNARY_OP_TANH), the same numbers as matmul -> add -> activation; x may be R numbers */
SEXP R_pg_linear(SEXP W, SEXP x, SEXP b, SEXP act)
{
    pg_tensor *w = r_get(r_handle(W), R_TENSOR), *bt = r_get(r_handle(b), R_TENSOR);
    int tx = 0;
    pg_tensor *xt = r_operand(x, pg_tensor_dtype(w), "ag_linear", "x", &tx);
    if (xt == NULL) r_fail();
    pg_tensor *out = pg_linear(w, xt, bt, Rf_asInteger(act));
    if (tx) pg_tensor_release(xt);
    return r_wrap_tensor(out);
}
SEXP R_pg_add(SEXP A, SEXP B) { return binary(A, B, pg_add, "ag_add", "A", "B"); }
SEXP R_pg_sub(SEXP A, SEXP B) { return binary(A, B, pg_sub, "ag_sub", "A", "B"); }
SEXP R_pg_mul(SEXP A, SEXP B) { return binary(A, B, pg_mul, "ag_mul", "A", "B"); }
SEXP R_pg_div(SEXP A, SEXP B) { return binary(A, B, pg_div, "ag_div", "A", "B"); }
SEXP R_pg_mse_loss(SEXP p, SEXP t)
{
    return binary(p, t, pg_mse_loss, "ag_mse_loss", "pred", "target");
}
SEXP R_pg_cross_entropy_loss(SEXP p, SEXP t)
{
    return binary(p, t, pg_cross_entropy_loss, "ag_cross_entropy_loss", "pred", "target");
}

/* R_pg_unary's kinds: the core's pg_unary_op values, then the glue's own ops with parameters */
enum { R_OP_SCALE = 100, R_OP_POW, R_OP_CLAMP, R_OP_SUM, R_OP_MEAN, R_OP_TRANSPOSE, R_OP_RESHAPE };

/* the kinds by name, read once at load (r/R/zzz.R), so R holds no enum values of its own */
SEXP R_pg_op_codes(void)
{
    static const char *nm[] = {"RELU",  "SIGMOID", "TANH", "GELU",      "LOG",
                               "EXP",   "SOFTMAX", "NEG",  "SCALE",     "POW",
                               "CLAMP", "SUM",     "MEAN", "TRANSPOSE", "RESHAPE"};
    const int v[] = {PG_UNARY_OP_RELU,    PG_UNARY_OP_SIGMOID,
                     PG_UNARY_OP_TANH,    PG_UNARY_OP_GELU,
                     PG_UNARY_OP_LOG,     PG_UNARY_OP_EXP,
                     PG_UNARY_OP_SOFTMAX, PG_UNARY_OP_NEG,
                     R_OP_SCALE,          R_OP_POW,
                     R_OP_CLAMP,          R_OP_SUM,
                     R_OP_MEAN,           R_OP_TRANSPOSE,
                     R_OP_RESHAPE};
    const int n = (int)(sizeof v / sizeof v[0]);
    SEXP out = PROTECT(Rf_allocVector(INTSXP, n)), names = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) {
        INTEGER(out)[i] = v[i];
        SET_STRING_ELT(names, i, Rf_mkChar(nm[i]));
    }
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}

/* unary ops with up to two scalar parameters: kind selects the C function */
SEXP R_pg_unary(SEXP kind, SEXP X, SEXP p1, SEXP p2, SEXP name)
{
    int k = Rf_asInteger(kind);
    double a = Rf_asReal(p1), b = Rf_asReal(p2);
    int tmp = 0;
    pg_tensor *x = r_operand(X, pg_default_dtype(), CHAR(STRING_ELT(name, 0)), "x", &tmp);
    if (x == NULL) r_fail();
    pg_tensor *out;
    switch (k) {
    case R_OP_SCALE: out = pg_scale(x, a); break;
    case R_OP_POW: out = pg_pow(x, a); break;
    case R_OP_CLAMP: out = pg_clamp(x, a, b); break;
    case R_OP_SUM: out = pg_sum(x, (int)a); break;
    case R_OP_MEAN: out = pg_mean(x, (int)a); break;
    case R_OP_TRANSPOSE: out = pg_transpose(x); break;
    case R_OP_RESHAPE: out = pg_reshape(x, (int64_t)a, (int64_t)b); break;
    default: out = pg_unary(k, x); break;
    }
    if (tmp) pg_tensor_release(x);
    return r_wrap_tensor(out);
}

/* R's hint for 1-based class ids (target 1..k for k classes, as.integer(f) of a factor), read
 * only when the call failed: R numbers or a tensor's values (a handle the caller already took
 * with r_get); NULL when they do not look so */
typedef struct {
    pg_tensor *l;
    SEXP T;
} ce_ctx;

static const char *ce_hint(void *p)
{
    const ce_ctx *c = p;
    SEXP T = c->T, th = r_handle(T);
    const double *ids = NULL;
    R_xlen_t n = 0;
    if (TYPEOF(th) == EXTPTRSXP) {
        pg_tensor *t = R_ExternalPtrAddr(th);
        n = t ? (R_xlen_t)pg_tensor_numel(t) : 0;
        double *v = n > 0 ? (double *)R_alloc((size_t)n, sizeof(double)) : NULL;
        if (v && pg_tensor_read(t, v, PG_DTYPE_F64) == 0) ids = v;
        pg_clear_error();
    } else if (TYPEOF(T) == REALSXP) {
        ids = REAL(T), n = XLENGTH(T);
    } else if (TYPEOF(T) == INTSXP && !Rf_isFactor(T)) {
        n = XLENGTH(T);
        double *v = n > 0 ? (double *)R_alloc((size_t)n, sizeof(double)) : NULL;
        for (R_xlen_t j = 0; j < n; j++) v[j] = INTEGER(T)[j] == NA_INTEGER ? NAN : INTEGER(T)[j];
        ids = v;
    }
    /* the loss takes no factor (ag_fit's hint offers one) */
    return ids && pg_fit_one_based_hint(ids, (int64_t)n, pg_tensor_nrow(c->l))
        ? "class ids are 0-based: pass as.integer(f) - 1L"
        : NULL;
}

/* A failed softmax CE (the target's conversion, the weights or the loss): the core's error and
 * class, with the 1-based hint appended when it applies */
static void __attribute__((noreturn)) ce_fail(pg_tensor *l, SEXP T)
{
    ce_ctx c = {l, T};
    r_fail_hint(ce_hint, &c);
}

/* A softmax-CE target: an ag_tensor as it is; R numbers in the logits' dtype when they are a
 * matrix of the logits' shape, else f64 ids (*tmp: the caller releases the converted tensor). */
static pg_tensor *ce_target(pg_tensor *l, SEXP T, const char *op, int *tmp)
{
    SEXP th = r_handle(T);
    if (TYPEOF(th) == EXTPTRSXP) return r_get(th, R_TENSOR);
    SEXP d = Rf_getAttrib(T, R_DimSymbol);
    const int same = !Rf_isNull(d) && XLENGTH(d) == 2 && INTEGER(d)[0] == pg_tensor_nrow(l) &&
        INTEGER(d)[1] == pg_tensor_ncol(l);
    pg_tensor *t = r_operand(T, same ? pg_tensor_dtype(l) : PG_DTYPE_F64, op, "target", tmp);
    if (!t) ce_fail(l, T);
    return t;
}

/* ag_softmax_cross_entropy_loss: the core's one rule (pg_softmax_ce_loss_any) for a tensor
 * target or R numbers (a matrix of the logits' shape in their dtype, else class ids in f64);
 * ids_vec TRUE: R had a vector, class ids whatever its length (pg_softmax_ce_loss_ids) */
SEXP R_pg_softmax_ce_loss_any(SEXP L, SEXP T, SEXP ids_vec)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    pg_tensor *l = r_get(r_handle(L), R_TENSOR), *t;
    int tmp = 0;
    t = ce_target(l, T, op, &tmp);
    pg_tensor *out =
        Rf_asLogical(ids_vec) == 1 ? pg_softmax_ce_loss_ids(l, t) : pg_softmax_ce_loss_any(l, t);
    if (tmp) pg_tensor_release(t);
    if (!out) ce_fail(l, T);
    return r_wrap_tensor(out);
}

/* ag_softmax_cross_entropy_loss with torch's options (pg_softmax_ce_loss_opt): the target as
 * R_pg_softmax_ce_loss_any reads it; W NULL or per-class weights (an ag_tensor or R numbers, in
 * the logits' dtype); has_ig / ig: ignore_index; ls: label_smoothing. The core checks them all. */
SEXP R_pg_softmax_ce_loss_opt(SEXP L, SEXP T, SEXP ids_vec, SEXP W, SEXP has_ig, SEXP ig, SEXP ls)
{
    const char *op = "ag_softmax_cross_entropy_loss";
    pg_tensor *l = r_get(r_handle(L), R_TENSOR), *t, *w = NULL;
    int tmp = 0, wtmp = 0;
    t = ce_target(l, T, op, &tmp);
    if (!Rf_isNull(W)) {
        w = r_operand(W, pg_tensor_dtype(l), op, "weight", &wtmp);
        if (!w) {
            if (tmp) pg_tensor_release(t);
            ce_fail(l, T);
        }
    }
    pg_tensor *out =
        pg_softmax_ce_loss_opt(l, t, Rf_asLogical(ids_vec) == 1, w, Rf_asLogical(has_ig) == 1,
                               Rf_asReal(ig), Rf_asReal(ls));
    if (tmp) pg_tensor_release(t);
    if (wtmp) pg_tensor_release(w);
    if (!out) ce_fail(l, T);
    return r_wrap_tensor(out);
}
