/* matmul and the broadcasting binary ops (add, sub, mul, div), with their backward rules. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <string.h>
#include "pg.h"

static int same_dtype(const char *op, const pg_tensor *a, const pg_tensor *b)
{
    if (a->dtype != b->dtype)
        return pg_fail(
            PG_STATUS_ERR_DTYPE,
            "%s: dtype mismatch: A is %s, B is %s (convert one with ag_tensor(x, dtype=...))", op,
            pg_desc(a), pg_desc(b));
    return 0;
}

/* ---- matmul ---- */

static int matmul_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *a = n->in[0], *b = n->in[1];
    int64_t m = a->ne[0], k = a->ne[1], c = b->ne[1];
    int acc;
    if (pg_wants_grad(a)) { /* dA = g B^T */
        void *d = pg_grad_slot(a, &acc);
        if (!d) return -1;
        pg_gemm(a->dtype, 0, 1, m, k, c, 1.0, pg_data(g), m, pg_data(b), k, acc ? 1.0 : 0.0, d, m);
    }
    if (pg_wants_grad(b)) { /* dB = A^T g */
        void *d = pg_grad_slot(b, &acc);
        if (!d) return -1;
        pg_gemm(a->dtype, 1, 0, k, c, m, 1.0, pg_data(a), m, pg_data(g), m, acc ? 1.0 : 0.0, d, k);
    }
    return 0;
}

static int matmul_fw(pg_node *n)
{
    pg_tensor *a = n->in[0], *b = n->in[1];
    pg_gemm(a->dtype, 0, 0, a->ne[0], b->ne[1], a->ne[1], 1.0, pg_data(a), a->ne[0], pg_data(b),
            b->ne[0], 0.0, pg_data(n->out), a->ne[0]);
    return 0;
}

pg_tensor *pg_matmul(pg_tensor *a, pg_tensor *b)
{
    if (pg_not_live(a, "ag_matmul", "A") || pg_not_live(b, "ag_matmul", "B") ||
        same_dtype("ag_matmul", a, b))
        return NULL;
    if (a->ne[1] != b->ne[0])
        return pg_fail_null(
            PG_STATUS_ERR_SHAPE,
            "ag_matmul: A is %s and B is %s: ncol(A) = %lld must equal nrow(B) = %lld%s",
            pg_desc(a), pg_desc(b), (long long)a->ne[1], (long long)b->ne[0],
            a->ne[0] == b->ne[0] ? " (did you mean ag_matmul(ag_transpose(A), B)?)"
                : a->ne[1] == b->ne[1]
                ? " (did you mean ag_matmul(A, ag_transpose(B)); data in row-major [batch, "
                  "features] layout must be transposed to [features, batch])"
                : "");
    pg_tensor *out = pg_new(a->dtype, a->ne[0], b->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {a, b};
    return pg_op_run("matmul", matmul_fw, matmul_bw, out, 2, in, NULL, NULL, 0, NULL);
}

/* ---- broadcasting binary ops ---- */

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };
static const char *bin_name[] = {"ag_add", "ag_sub", "ag_mul", "ag_div"};
static const char *bin_label[] = {"add", "sub", "mul", "div"};

/* Element (i, j) of a [r, c] operand broadcast to the output: stride 0 along size-1 dims. */
typedef struct {
    int64_t rs, cs;
} bstride;
static bstride bstr(const pg_tensor *t)
{
    bstride s = {t->ne[0] == 1 ? 0 : 1, t->ne[1] == 1 ? 0 : t->ne[0]};
    return s;
}

static int bcast_dim(int64_t a, int64_t b, int64_t *out)
{
    if (a == b || b == 1) *out = a;
    else if (a == 1) *out = b;
    else return -1;
    return 0;
}

/* gv (gradient element), xa and xb (operand elements) at output position (i, j) */
#define BIN_OPERANDS_AT(i, j)                                                                      \
    T gv = gp[i + j * R];                                                                          \
    T xa = ap[i * sa.rs + j * sa.cs], xb = bp[i * sb.rs + j * sb.cs];                              \
    (void)xa;                                                                                      \
    (void)xb

/* d (+)= s * contribution, reduced onto the shape of `t` when t was broadcast. `expr` uses
 * gv, xa and xb (BIN_OPERANDS_AT). */
#define BIN_GRAD_LOOP(expr)                                                                        \
    do {                                                                                           \
        if (full) {                                                                                \
            for (int64_t j = 0; j < C; j++)                                                        \
                for (int64_t i = 0; i < R; i++) {                                                  \
                    BIN_OPERANDS_AT(i, j);                                                         \
                    if (acc) d[i + j * R] += (expr);                                               \
                    else d[i + j * R] = (expr);                                                    \
                }                                                                                  \
        } else {                                                                                   \
            if (!acc) memset(d, 0, (size_t)pg_numel(t) * sizeof(T));                               \
            for (int64_t j = 0; j < C; j++)                                                        \
                for (int64_t i = 0; i < R; i++) {                                                  \
                    BIN_OPERANDS_AT(i, j);                                                         \
                    d[i * st.rs + j * st.cs] += (expr);                                            \
                }                                                                                  \
        }                                                                                          \
    } while (0)

/* Gradient of operand `which` (0 = A, 1 = B) of binary op `kind`. */
static int bin_grad(pg_node *n, pg_tensor *g, int which)
{
    pg_tensor *a = n->in[0], *b = n->in[1], *t = n->in[which];
    int kind = (int)n->ip[0];
    int64_t R = g->ne[0], C = g->ne[1];
    int full = t->ne[0] == R && t->ne[1] == C;
    bstride sa = bstr(a), sb = bstr(b), st = bstr(t);
    int acc;
    void *slot = pg_grad_slot(t, &acc);
    if (!slot) return -1;
    if ((kind == BIN_ADD || kind == BIN_SUB) && (full || (t->ne[0] == R && t->ne[1] == 1))) {
        /* plain copies and column-vector (bias) row sums: contiguous loops that vectorise; the
         * same additions in the same order as the general loop below */
        const int neg = kind == BIN_SUB && which == 1;
        if (full) {
            pg_ew_acc(g->dtype, pg_data(g), slot, R * C, acc, neg);
        } else {
            if (!acc) memset(slot, 0, (size_t)R * pg_dtype_size(g->dtype));
            pg_ew_rows(g->dtype, pg_data(g), slot, R, C, neg);
        }
        return 0;
    }
    PG_DISPATCH(g->dtype, {
        T *d = slot;
        const T *gp = pg_data(g), *ap = pg_data(a), *bp = pg_data(b);
        if (kind == BIN_ADD || (kind == BIN_SUB && which == 0)) BIN_GRAD_LOOP(gv);
        else if (kind == BIN_SUB) BIN_GRAD_LOOP(-gv);
        else if (kind == BIN_MUL && which == 0) BIN_GRAD_LOOP(gv * xb);
        else if (kind == BIN_MUL) BIN_GRAD_LOOP(gv * xa);
        else if (which == 0) BIN_GRAD_LOOP(gv / xb);
        else BIN_GRAD_LOOP(-gv * (xa / xb) / xb); /* xb * xb over/underflows past 1e154 */
    });
    return 0;
}

static int bin_bw(pg_node *n, pg_tensor *g)
{
    if (pg_wants_grad(n->in[0]) && bin_grad(n, g, 0)) return -1;
    if (pg_wants_grad(n->in[1]) && bin_grad(n, g, 1)) return -1;
    return 0;
}

/* vew.c's loops, column by column (in one run when the operands are whole or one value): the
 * same element operations as a plain loop over (i, j) */
static int bin_fw(pg_node *n)
{
    pg_tensor *a = n->in[0], *b = n->in[1], *out = n->out;
    int64_t R = out->ne[0], C = out->ne[1];
    bstride sa = bstr(a), sb = bstr(b);
    int kind = (int)n->ip[0];
    int whole_a = a->ne[0] == R && a->ne[1] == C, whole_b = b->ne[0] == R && b->ne[1] == C;
    int one_a = a->ne[0] == 1 && a->ne[1] == 1, one_b = b->ne[0] == 1 && b->ne[1] == 1;
    if ((whole_a && (whole_b || one_b)) || (one_a && whole_b)) {
        int mode = !whole_a ? PG_EW_SV : whole_b ? PG_EW_VV : PG_EW_VS;
        pg_ew_bin(a->dtype, kind, pg_data(a), 0, pg_data(b), 0, pg_data(out), R * C, 1, mode);
    } else {
        int mode = sa.rs == 0 ? PG_EW_SV : sb.rs == 1 ? PG_EW_VV : PG_EW_VS;
        pg_ew_bin(a->dtype, kind, pg_data(a), sa.cs, pg_data(b), sb.cs, pg_data(out), R, C, mode);
    }
    return 0;
}

static pg_tensor *binary(int kind, pg_tensor *a, pg_tensor *b)
{
    const char *name = bin_name[kind];
    if (pg_not_live(a, name, "A") || pg_not_live(b, name, "B") || same_dtype(name, a, b))
        return NULL;
    int64_t R, C;
    if (bcast_dim(a->ne[0], b->ne[0], &R) || bcast_dim(a->ne[1], b->ne[1], &C))
        return pg_fail_null(
            PG_STATUS_ERR_SHAPE,
            "%s: shapes A %s and B %s do not broadcast (each dim must match or be 1)", name,
            pg_desc(a), pg_desc(b));
    pg_tensor *out = pg_new(a->dtype, R, C, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {a, b};
    int64_t ip[4] = {kind, 0, 0, 0};
    return pg_op_run(bin_label[kind], bin_fw, bin_bw, out, 2, in, NULL, ip, 0, NULL);
}

pg_tensor *pg_add(pg_tensor *a, pg_tensor *b) { return binary(BIN_ADD, a, b); }
pg_tensor *pg_sub(pg_tensor *a, pg_tensor *b) { return binary(BIN_SUB, a, b); }
pg_tensor *pg_mul(pg_tensor *a, pg_tensor *b) { return binary(BIN_MUL, a, b); }
pg_tensor *pg_div(pg_tensor *a, pg_tensor *b) { return binary(BIN_DIV, a, b); }

/* ---- fused linear: act(W x + b), one node ----
 * The same arithmetic as matmul -> add -> activation (GEMM, then one pass adding the bias and
 * applying the activation), so results equal the unfused ops bit for bit. */

static int linear_fw(pg_node *n)
{
    pg_tensor *w = n->in[0], *x = n->in[1], *b = n->in[2], *out = n->out;
    int64_t m = w->ne[0], k = w->ne[1], B = x->ne[1];
    int act = (int)n->ip[0];
    pg_gemm(w->dtype, 0, 0, m, B, k, 1.0, pg_data(w), m, pg_data(x), k, 0.0, pg_data(out), m);
    PG_DISPATCH(w->dtype, {
        T *o = pg_data(out);
        const T *bp = b ? (const T *)pg_data(b) : NULL;
        for (int64_t j = 0; j < B; j++) {
            T *oc = o + j * m;
            if (bp)
                for (int64_t i = 0; i < m; i++) oc[i] = oc[i] + bp[i];
            pg_unary_act(w->dtype, act, oc, oc, m);
        }
    });
    return 0;
}

static int linear_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *w = n->in[0], *x = n->in[1], *b = n->in[2], *o = n->out;
    int64_t m = w->ne[0], k = w->ne[1], B = x->ne[1], N = m * B;
    int act = (int)n->ip[0];
    const void *dz = pg_data(g);
    if (act >= 0) { /* gradient through the activation, in a reused scratch buffer */
        void *s = pg_scratch((size_t)N * pg_dtype_size(w->dtype));
        if (!s) return -1;
        PG_DISPATCH(w->dtype, {
            T *d = s;
            const T *gp = pg_data(g), *op = pg_data(o);
            switch (act) {
            case PG_UNARY_OP_RELU: pg_ew_relu_bw(w->dtype, op, gp, d, N, 0); break;
            case PG_UNARY_OP_SIGMOID:
                for (int64_t i = 0; i < N; i++) d[i] = gp[i] * op[i] * (1 - op[i]);
                break;
            default:
                for (int64_t i = 0; i < N; i++) d[i] = gp[i] * (1 - op[i] * op[i]);
                break;
            }
        });
        dz = s;
    }
    int acc;
    if (pg_wants_grad(b)) { /* row sums, column by column as the add's backward */
        void *slot = pg_grad_slot(b, &acc);
        if (!slot) return -1;
        if (!acc) memset(slot, 0, (size_t)m * pg_dtype_size(w->dtype));
        pg_ew_rows(w->dtype, dz, slot, m, B, 0);
    }
    if (pg_wants_grad(w)) { /* dW = dz x^T */
        void *d = pg_grad_slot(w, &acc);
        if (!d) return -1;
        pg_gemm(w->dtype, 0, 1, m, k, B, 1.0, dz, m, pg_data(x), k, acc ? 1.0 : 0.0, d, m);
    }
    if (pg_wants_grad(x)) { /* dx = W^T dz */
        void *d = pg_grad_slot(x, &acc);
        if (!d) return -1;
        pg_gemm(w->dtype, 1, 0, k, B, m, 1.0, pg_data(w), m, dz, m, acc ? 1.0 : 0.0, d, k);
    }
    return 0;
}

pg_tensor *pg_linear(pg_tensor *w, pg_tensor *x, pg_tensor *b, int act)
{
    const char *op = "ag_linear";
    if (pg_not_live(w, op, "W") || pg_not_live(x, op, "x") || same_dtype(op, w, x)) return NULL;
    if (b && (pg_not_live(b, op, "b") || same_dtype(op, w, b))) return NULL;
    if (act != -1 && act != PG_UNARY_OP_RELU && act != PG_UNARY_OP_SIGMOID &&
        act != PG_UNARY_OP_TANH)
        return pg_fail_null(
            PG_STATUS_ERR_VALUE,
            "%s: fused activation code %d is not supported (relu, sigmoid, tanh or -1 for none)",
            op, act);
    if (w->ne[1] != x->ne[0]) /* both languages' text (Python's layer had its own) */
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: W is %s and x is %s: ncol(W) = %lld must equal nrow(x) = %lld%s",
                            op, pg_desc(w), pg_desc(x), (long long)w->ne[1], (long long)x->ne[0],
                            x->ne[1] == w->ne[1] ? "; x looks row-major [batch, features]: pass "
                                                   "ag_transpose(x), samples are columns"
                                                 : "");
    if (b && (b->ne[0] != w->ne[0] || b->ne[1] != 1))
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: b is %s but W is %s; b must be [%lldx1]", op,
                            pg_desc(b), pg_desc(w), (long long)w->ne[0]);
    pg_tensor *out = pg_new(w->dtype, w->ne[0], x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[3] = {w, x, b};
    int64_t ip[4] = {act, 0, 0, 0};
    return pg_op_run("linear", linear_fw, linear_bw, out, 3, in, NULL, ip, 0, NULL);
}
