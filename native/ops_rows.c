/* Row slice / concat, the transposed matmul and the causal mask used by attention, with their
 * backward rules (split from ops_layers.c: the same includes, so the same code generation). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

/* ---- row slice / concat ---- */

/* dst rows [r0, r0 + nr) of a [Rd, C] matrix (+)= src [nr, C] (ops_mha.c too) */
void pg_rows_add(int dtype, void *dst, int64_t Rd, int64_t r0, const void *src, int64_t nr,
                 int64_t C, int acc)
{
    PG_DISPATCH(dtype, {
        T *d = dst;
        const T *s = src;
        for (int64_t j = 0; j < C; j++) {
            T *dc = d + j * Rd + r0;
            const T *sc = s + j * nr;
            PG_STORE_LOOP(acc, nr, dc, sc[i]);
        }
    });
}

/* dst [nr, C] (+)= rows [r0, r0 + nr) of src [Rs, C] */
void pg_rows_get(int dtype, void *dst, const void *src, int64_t Rs, int64_t r0, int64_t nr,
                 int64_t C, int acc)
{
    if (acc) {
        PG_DISPATCH(dtype, {
            T *d = dst;
            const T *s = src;
            for (int64_t j = 0; j < C; j++)
                for (int64_t i = 0; i < nr; i++) d[i + j * nr] += s[r0 + i + j * Rs];
        });
        return;
    }
    size_t es = pg_dtype_size(dtype);
    for (int64_t j = 0; j < C; j++)
        memcpy((char *)dst + (size_t)(j * nr) * es, (const char *)src + (size_t)(j * Rs + r0) * es,
               (size_t)nr * es);
}

static int slice_rows_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t R = x->ne[0], C = x->ne[1], from = n->ip[0], nr = g->ne[0];
    if (!acc) memset(slot, 0, (size_t)pg_numel(x) * pg_dtype_size(x->dtype));
    pg_rows_add(x->dtype, slot, R, from, pg_data(g), nr, C, 1);
    return 0;
}

static int slice_rows_fw(pg_node *n)
{
    pg_tensor *x = n->in[0];
    pg_rows_get(x->dtype, pg_data(n->out), pg_data(x), x->ne[0], n->ip[0], n->out->ne[0], x->ne[1],
                0);
    return 0;
}

pg_tensor *pg_slice_rows(pg_tensor *x, int64_t from, int64_t n)
{
    const char *op = "ag_slice_rows";
    if (pg_not_live(x, op, "x")) return NULL;
    if (from < 0 || n < 0 || from > x->ne[0] - n)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: rows from = %lld (0-based), n = %lld do not fit in x %s", op,
                            (long long)from, (long long)n, pg_desc(x));
    pg_tensor *out = pg_new(x->dtype, n, x->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    int64_t ip[4] = {from, 0, 0, 0};
    return pg_op_run("slice_rows", slice_rows_fw, slice_rows_bw, out, 1, &x, NULL, ip, 0, NULL);
}

static int concat_rows_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *a = n->in[0], *b = n->in[1];
    int64_t Ra = a->ne[0], Rb = b->ne[0], C = g->ne[1], R = g->ne[0];
    int acc;
    if (pg_wants_grad(a)) {
        void *slot = pg_grad_slot(a, &acc);
        if (!slot) return -1;
        pg_rows_get(g->dtype, slot, pg_data(g), R, 0, Ra, C, acc);
    }
    if (pg_wants_grad(b)) {
        void *slot = pg_grad_slot(b, &acc);
        if (!slot) return -1;
        pg_rows_get(g->dtype, slot, pg_data(g), R, Ra, Rb, C, acc);
    }
    return 0;
}

static int concat_rows_fw(pg_node *n)
{
    pg_tensor *a = n->in[0], *b = n->in[1];
    int64_t Ra = a->ne[0], Rb = b->ne[0], C = a->ne[1];
    pg_rows_add(a->dtype, pg_data(n->out), Ra + Rb, 0, pg_data(a), Ra, C, 0);
    pg_rows_add(a->dtype, pg_data(n->out), Ra + Rb, Ra, pg_data(b), Rb, C, 0);
    return 0;
}

pg_tensor *pg_concat_rows(pg_tensor *a, pg_tensor *b)
{
    const char *op = "ag_concat_rows";
    if (pg_not_live(a, op, "a") || pg_not_live(b, op, "b") || pg_same_dtype(op, "a", a, "b", b))
        return NULL;
    if (a->ne[1] != b->ne[1])
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: a is %s and b is %s; they must have the same number of columns",
                            op, pg_desc(a), pg_desc(b));
    pg_tensor *out = pg_new(a->dtype, a->ne[0] + b->ne[0], a->ne[1], PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {a, b};
    return pg_op_run("concat_rows", concat_rows_fw, concat_rows_bw, out, 2, in, NULL, NULL, 0,
                     NULL);
}

/* ---- matmul with transposes ---- */

static int matmul_t_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *a = n->in[0], *b = n->in[1];
    int ta = (int)n->ip[0], tb = (int)n->ip[1];
    double al = n->p[0];
    int64_t m = g->ne[0], c = g->ne[1];
    int64_t k = ta ? a->ne[0] : a->ne[1];
    int64_t lda = a->ne[0], ldb = b->ne[0];
    int acc;
    if (pg_wants_grad(a)) {
        void *d = pg_grad_slot(a, &acc);
        if (!d) return -1;
        if (!ta) /* dA [m,k] = al * G op(B)^T */
            pg_gemm(a->dtype, 0, !tb, m, k, c, al, pg_data(g), m, pg_data(b), ldb, acc ? 1.0 : 0.0,
                    d, lda);
        else /* dA [k,m] = al * op(B) G^T */
            pg_gemm(a->dtype, tb, 1, k, m, c, al, pg_data(b), ldb, pg_data(g), m, acc ? 1.0 : 0.0,
                    d, lda);
    }
    if (pg_wants_grad(b)) {
        void *d = pg_grad_slot(b, &acc);
        if (!d) return -1;
        if (!tb) /* dB [k,c] = al * op(A)^T G */
            pg_gemm(a->dtype, !ta, 0, k, c, m, al, pg_data(a), lda, pg_data(g), m, acc ? 1.0 : 0.0,
                    d, ldb);
        else /* dB [c,k] = al * G^T op(A) */
            pg_gemm(a->dtype, 1, ta, c, k, m, al, pg_data(g), m, pg_data(a), lda, acc ? 1.0 : 0.0,
                    d, ldb);
    }
    return 0;
}

static int matmul_t_fw(pg_node *n)
{
    pg_tensor *a = n->in[0], *b = n->in[1], *out = n->out;
    int ta = (int)n->ip[0], tb = (int)n->ip[1];
    int64_t m = out->ne[0], c = out->ne[1], k = ta ? a->ne[0] : a->ne[1];
    pg_gemm(a->dtype, ta, tb, m, c, k, n->p[0], pg_data(a), a->ne[0], pg_data(b), b->ne[0], 0.0,
            pg_data(out), m);
    return 0;
}

pg_tensor *pg_matmul_t(pg_tensor *a, pg_tensor *b, int ta, int tb, double alpha)
{
    const char *op = "ag_matmul_t";
    if (pg_not_live(a, op, "A") || pg_not_live(b, op, "B") || pg_same_dtype(op, "A", a, "B", b))
        return NULL;
    ta = ta != 0;
    tb = tb != 0;
    int64_t m = ta ? a->ne[1] : a->ne[0], k = ta ? a->ne[0] : a->ne[1];
    int64_t kb = tb ? b->ne[1] : b->ne[0], c = tb ? b->ne[0] : b->ne[1];
    if (k != kb)
        return pg_fail_null(PG_STATUS_ERR_SHAPE,
                            "%s: op(A) = %s%s and op(B) = %s%s: inner dims %lld and %lld differ",
                            op, pg_desc(a), ta ? " transposed" : "", pg_desc(b),
                            tb ? " transposed" : "", (long long)k, (long long)kb);
    pg_tensor *out = pg_new(a->dtype, m, c, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    pg_tensor *in[2] = {a, b};
    double p[4] = {alpha, 0, 0, 0};
    int64_t ip[4] = {ta, tb, 0, 0};
    return pg_op_run("matmul_t", matmul_t_fw, matmul_t_bw, out, 2, in, p, ip, 0, NULL);
}

/* ---- causal mask ---- */

static int causal_mask_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g);
        for (int64_t j = 0; j < C; j++) {
            T *dc = d + j * R;
            const T *gc = gp + j * R;
            PG_STORE_LOOP(acc, R, dc, i > j ? (T)0 : gc[i]);
        }
    });
    return 0;
}

static int causal_mask_fw(pg_node *n)
{
    pg_tensor *x = n->in[0];
    int64_t R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *o = pg_data(n->out);
        for (int64_t j = 0; j < C; j++)
            for (int64_t i = 0; i < R; i++) o[i + j * R] = i > j ? (T)-INFINITY : xp[i + j * R];
    });
    return 0;
}

pg_tensor *pg_causal_mask(pg_tensor *x)
{
    if (pg_not_live(x, "ag_causal_mask", "x")) return NULL;
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    return pg_op_run("causal_mask", causal_mask_fw, causal_mask_bw, out, 1, &x, NULL, NULL, 0,
                     NULL);
}
