/* .Call glue for the selection and sampling ops of native/pg_api_select.h (ggmlR 0.8.6 §2).
 * Operands are ag_tensors or R numbers; temporaries are released before any R error. */
#include "r_util.h"

/* an operand for the integer-result ops: R numbers take the default dtype, as in every other op
 * and in the Python package (so both rank the same values) */
/* Ops with integer results read plain R numbers as f64, as ggmlR ranks R's doubles themselves
 * (an f32 copy could turn a near tie into a tie). */
static pg_tensor *int_operand(SEXP x, const char *op, int *tmp)
{
    return r_operand(x, PG_DTYPE_F64, op, "x", tmp);
}

/* the core's int64 results as an R integer vector (indices < nrow, so they fit) */
static SEXP int_result(const int64_t *v, int64_t n)
{
    SEXP out = PROTECT(Rf_allocVector(INTSXP, (R_xlen_t)n));
    for (int64_t j = 0; j < n; j++) INTEGER(out)[j] = (int)v[j];
    UNPROTECT(1);
    return out;
}

SEXP R_pg_argmax(SEXP X)
{
    int tmp = 0;
    pg_tensor *x = int_operand(X, "ag_argmax", &tmp);
    if (x == NULL) r_fail();
    int64_t C = pg_tensor_ncol(x);
    int64_t *idx = (int64_t *)R_alloc(C > 0 ? C : 1, sizeof(int64_t));
    int rc = pg_argmax(x, idx);
    if (tmp) pg_tensor_release(x);
    r_check(rc);
    return int_result(idx, C);
}

/* ops with one tensor operand and a tensor result; R numbers take the default dtype */
static SEXP unary_select(SEXP X, pg_tensor *(*f)(pg_tensor *), const char *op)
{
    int tmp = 0;
    pg_tensor *x = r_operand(X, pg_default_dtype(), op, "x", &tmp);
    if (x == NULL) r_fail();
    pg_tensor *out = f(x);
    if (tmp) pg_tensor_release(x);
    return r_wrap_tensor(out);
}

SEXP R_pg_log_softmax(SEXP X) { return unary_select(X, pg_log_softmax, "ag_log_softmax"); }
SEXP R_pg_colmax(SEXP X) { return unary_select(X, pg_colmax, "ag_max"); }

/* index: R's numbers as doubles (NA is NaN); the core checks its length, NA, whole numbers and
 * range with ggmlR's texts (pg_gather_f64) */
SEXP R_pg_gather(SEXP X, SEXP index)
{
    if (TYPEOF(index) != REALSXP)
        r_stopf(PG_STATUS_ERR_ARG, "ag_gather: index must be numeric (0-based integers)");
    int tmp = 0;
    pg_tensor *x = r_operand(X, pg_default_dtype(), "ag_gather", "x", &tmp);
    if (x == NULL) r_fail();
    pg_tensor *out = pg_gather_f64(x, REAL(index), (int64_t)XLENGTH(index));
    if (tmp) pg_tensor_release(x);
    return r_wrap_tensor(out);
}

/* The draw comes first (ggmlR's one runif(n * batch) on entry): the stream is entered before the
 * operand exists, since r_draw_enter may long-jump and a temporary would leak. */
SEXP R_pg_sample_categorical(SEXP X)
{
    r_draw c = r_draw_enter();
    int tmp = 0;
    pg_tensor *x = int_operand(X, "ag_sample_categorical", &tmp);
    if (x == NULL) {
        r_draw_leave(c, 0);
        r_fail();
    }
    int64_t C = pg_tensor_ncol(x);
    int64_t *idx = (int64_t *)R_alloc(C > 0 ? C : 1, sizeof(int64_t));
    int rc = pg_sample_categorical(NULL, x, idx);
    if (tmp) pg_tensor_release(x);
    r_draw_leave(c, rc == 0);
    r_check(rc);
    return int_result(idx, C);
}

/* mu + eps * exp(log_std): R numbers take the other operand's dtype (as ag_add's operands do).
 * The stream is entered first (it may long-jump; nothing to free yet); the core checks the shapes
 * before its randn node draws, so a refused call leaves R's stream as it was. */
SEXP R_pg_sample_normal(SEXP MU, SEXP LS)
{
    int dm = r_operand_dtype(MU), dl = r_operand_dtype(LS);
    int d = dm >= 0 ? dm : dl >= 0 ? dl : pg_default_dtype();
    int tm = 0, tl = 0;
    r_draw c = r_draw_enter();
    pg_tensor *mu = r_operand(MU, d, "ag_sample_normal", "mu", &tm);
    pg_tensor *ls = mu ? r_operand(LS, d, "ag_sample_normal", "log_std", &tl) : NULL;
    pg_tensor *out = ls ? pg_sample_normal(mu, ls) : NULL;
    if (tm) pg_tensor_release(mu);
    if (tl) pg_tensor_release(ls);
    r_draw_leave(c, out != NULL);
    return r_wrap_tensor(out);
}
