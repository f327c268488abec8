/* .Call glue for ag_flash_attention (native/pg_api_attention.h; ggmlR 0.8.6 §3). q, k, v are
 * ag_tensors or R numbers (numbers take the dtype of the first tensor among them, else the
 * default); the mask is NULL, an ag_tensor (its value) or a matrix, logical (TRUE attend, FALSE
 * blocked, NA NaN as ggmlR's ifelse) or numeric. Temporaries are released before any R error. */
#include <math.h>
#include "r_util.h"

static int is_handle(SEXP x) { return TYPEOF(r_handle(x)) == EXTPTRSXP; }

/* the mask as a tensor of dtype dt (a tensor of that dtype itself, *tmp = 0) or NULL + error */
static pg_tensor *mask_tensor(SEXP M, int dt, int *tmp)
{
    *tmp = 0;
    if (is_handle(M)) {
        pg_tensor *m = r_operand(M, dt, "ag_flash_attention", "mask", tmp);
        if (!m || pg_tensor_dtype(m) == dt) return m;
        *tmp = 1;
        return pg_tensor_cast(m, dt);
    }
    if (TYPEOF(M) == LGLSXP) {
        int64_t nr, nc;
        if (r_matrix_dims(M, "ag_flash_attention", "mask", &nr, &nc))
            return NULL; /* length == prod(dim) */
        double *buf = (double *)R_alloc((size_t)(nr * nc > 0 ? nr * nc : 1), sizeof(double));
        const int *lg = LOGICAL(M);
        for (int64_t i = 0; i < nr * nc; i++)
            buf[i] = lg[i] == NA_LOGICAL ? NAN : lg[i] ? 0.0 : -INFINITY;
        pg_tensor *m = pg_tensor_new(dt, nr, nc, buf, PG_DTYPE_F64, 1, nr);
        *tmp = m != NULL;
        return m;
    }
    pg_tensor *m = r_new_tensor(M, dt, "ag_flash_attention");
    *tmp = m != NULL;
    return m;
}

SEXP R_pg_flash_attention(SEXP Q, SEXP K, SEXP V, SEXP n_heads, SEXP scale, SEXP M, SEXP causal)
{
    const char *op = "ag_flash_attention";
    int dt = pg_default_dtype();
    SEXP qkv[3] = {Q, K, V};
    for (int i = 0; i < 3; i++) {
        int d = r_operand_dtype(qkv[i]);
        if (d >= 0) {
            dt = d;
            break;
        }
    }
    int tq = 0, tk = 0, tv = 0, tm = 0;
    pg_tensor *q = r_operand(Q, dt, op, "q", &tq);
    pg_tensor *k = q ? r_operand(K, dt, op, "k", &tk) : NULL;
    pg_tensor *v = k ? r_operand(V, dt, op, "v", &tv) : NULL;
    pg_tensor *m = NULL, *out = NULL;
    int h = Rf_length(n_heads) >= 1 ? INTEGER(n_heads)[0] : 0;
    if (h == NA_INTEGER) h = 0;
    const double sc = Rf_length(scale) >= 1 ? REAL(scale)[0] : NAN;
    const int c = Rf_asLogical(causal) == TRUE;
    int nd = 0;
    int64_t mr = 0, mc = 0;
    int mask_ok = 1;
    if (v && M != R_NilValue) { /* after q, k, v: their errors come first */
        SEXP dim = Rf_getAttrib(M, R_DimSymbol);
        if (is_handle(M)) {
            int t0 = 0;
            pg_tensor *mt =
                r_operand(M, dt, op, "mask", &t0); /* borrowed: a handle; NULL + error if dead */
            nd = 2;
            mask_ok = mt != NULL;
            if (mt) {
                mr = pg_tensor_nrow(mt);
                mc = pg_tensor_ncol(mt);
            }
        } else if (TYPEOF(dim) == INTSXP && Rf_length(dim) == 2) {
            nd = 2;
            mask_ok = r_matrix_dims(M, op, "mask", &mr, &mc) == 0;
        } else {
            nd = 1;
        }
    }
    if (v && mask_ok && pg_flash_attention_check(q, k, v, h, nd, mr, mc, c) == 0) {
        if (nd) m = mask_tensor(M, pg_tensor_dtype(q), &tm);
        if (!nd || m) out = pg_flash_attention(q, k, v, h, sc, m, c);
    }
    if (tq) pg_tensor_release(q);
    if (tk) pg_tensor_release(k);
    if (tv) pg_tensor_release(v);
    if (tm) pg_tensor_release(m);
    return r_wrap_tensor(out);
}

/* ag_multihead_attention's forward: q, k, v (ag_tensors) have d_model rows, k and v one column
 * count; the core's check and text (pg_mha_check_inputs), classed by its status */
SEXP R_pg_mha_check(SEXP d_model, SEXP Q, SEXP K, SEXP V)
{
    pg_tensor *q = r_get(r_handle(Q), R_TENSOR), *k = r_get(r_handle(K), R_TENSOR),
              *v = r_get(r_handle(V), R_TENSOR);
    r_check(pg_mha_check_inputs((int64_t)Rf_asInteger(d_model), q, k, v));
    return R_NilValue;
}

/* ag_multihead_attention's heads after its projections (pg_mha_heads): Q, K, V external
 * pointers; dropout 0 in eval mode */
SEXP R_pg_mha_heads(SEXP Q, SEXP K, SEXP V, SEXP n_heads, SEXP scale, SEXP causal, SEXP rate)
{
    pg_tensor *q = r_get(Q, R_TENSOR), *k = r_get(K, R_TENSOR), *v = r_get(V, R_TENSOR);
    const int64_t h = (int64_t)Rf_asInteger(n_heads);
    const double sc = Rf_asReal(scale), p = Rf_asReal(rate);
    const int ca = Rf_asLogical(causal) == 1;
    if (!(p > 0.0)) return r_wrap(pg_mha_heads(q, k, v, h, sc, ca, p), R_TENSOR);
    r_draw c = r_draw_enter(); /* the masks come from R's .Random.seed (or the run stream) */
    pg_tensor *out = pg_mha_heads(q, k, v, h, sc, ca, p);
    r_draw_leave(c, out != NULL);
    return r_wrap(out, R_TENSOR);
}
