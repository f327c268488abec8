/* Elementwise unary ops, scale, pow, clamp and column softmax, with their backward rules. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <tgmath.h>
#include <string.h>
#include "pg.h"

static const char *unary_name[] = {"ag_relu", "ag_sigmoid", "ag_tanh",    "ag_gelu",
                                   "ag_log",  "ag_exp",     "ag_softmax", "ag_neg"};
static const char *unary_label[] = {"relu", "sigmoid", "tanh",    "gelu",
                                    "log",  "exp",     "softmax", "neg"};

/* Column softmax with the column max subtracted (stable); also used by softmax-CE. Three
 * passes: x - max per column (max over 16 lanes: exact in any order, NaNs skipped), one exp
 * over the whole block (one call also for short columns), then per column the sum in double in
 * pg_vsum's fixed order and the division. The serial max and sum were most of its time. */
void pg_softmax_cols(int dtype, const void *x, void *p, int64_t R, int64_t C)
{
    pg_softmax_cols_lse(dtype, x, p, R, C, NULL, NULL);
}

/* mx, lsum (optional, C each): the column's max and log of its double sum of exps, so that
 * log(p[i]) = (x[i] - mx) - lsum exactly, unclamped, for the cross-entropy losses. Ranges of
 * columns over threads (ag_set_threads; each column alone decides its values: the same bits for
 * any split), at least 16384 values a thread. */
typedef struct {
    int dtype;
    int64_t R;
    const void *x;
    void *p;
    double *mx_out, *lsum;
} softmax_job;
static void softmax_range(void *ctx, int64_t j0, int64_t j1)
{
    const softmax_job *S = ctx;
    const int64_t R = S->R;
    double *mx_out = S->mx_out, *lsum = S->lsum;
    PG_DISPATCH(S->dtype, {
        const T *xp = S->x;
        T *pp = S->p;
        for (int64_t j = j0; j < j1; j++) {
            const T *xc = xp + j * R;
            T *pc = pp + j * R;
            T mx = -INFINITY;
            if (R < 16) {
                for (int64_t i = 0; i < R; i++) mx = xc[i] > mx ? xc[i] : mx;
            } else {
                T lm[16];
                for (int l = 0; l < 16; l++) lm[l] = -INFINITY;
                int64_t i0 = 0;
                for (; i0 + 16 <= R; i0 += 16)
                    for (int l = 0; l < 16; l++) lm[l] = xc[i0 + l] > lm[l] ? xc[i0 + l] : lm[l];
                for (int l = 0; i0 + l < R; l++) lm[l] = xc[i0 + l] > lm[l] ? xc[i0 + l] : lm[l];
                for (int l = 0; l < 16; l++) mx = lm[l] > mx ? lm[l] : mx;
            }
            for (int64_t i = 0; i < R; i++) pc[i] = xc[i] - mx;
            if (mx_out) mx_out[j] = (double)mx;
        }
        pg_vexp(S->dtype, pp + j0 * R, pp + j0 * R, R * (j1 - j0));
        for (int64_t j = j0; j < j1; j++) {
            T *pc = pp + j * R;
            const double sd = pg_vsum(S->dtype, pc, R);
            const T s = (T)sd;
            if (lsum) lsum[j] = log(sd);
            for (int64_t i = 0; i < R; i++) pc[i] /= s;
        }
    });
}

void pg_softmax_cols_lse(int dtype, const void *x, void *p, int64_t R, int64_t C, double *mx_out,
                         double *lsum)
{
    softmax_job S = {dtype, R, x, p, mx_out, lsum};
    pg_par_for(C, R >= 16384 ? 1 : 16384 / (R > 0 ? R : 1), softmax_range, &S);
}

void pg_softmax_cols_bw(int dtype, const void *p, const void *g, void *d, int64_t R, int64_t C,
                        int acc)
{
    PG_DISPATCH(dtype, {
        const T *op = p, *gp = g;
        T *dp = d;
        for (int64_t j = 0; j < C; j++) {
            const T *pc = op + j * R, *gc = gp + j * R;
            T *dc = dp + j * R;
            T s = 0;
            for (int64_t i = 0; i < R; i++) s += pc[i] * gc[i];
            PG_STORE_LOOP(acc, R, dc, pc[i] * (gc[i] - s));
        }
    });
}

static int unary_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0], *o = n->out;
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x), R = x->ne[0], C = x->ne[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g), *xp = pg_data(x), *op = pg_data(o);
        switch ((int)n->ip[0]) {
        case PG_UNARY_OP_RELU: pg_ew_relu_bw(x->dtype, op, gp, d, N, acc); break;
        case PG_UNARY_OP_SIGMOID: PG_STORE_LOOP(acc, N, d, gp[i] * op[i] * (1 - op[i])); break;
        case PG_UNARY_OP_TANH: PG_STORE_LOOP(acc, N, d, gp[i] * (1 - op[i] * op[i])); break;
        case PG_UNARY_OP_GELU: pg_vgelu_bw(x->dtype, gp, xp, d, N, acc); break;
        case PG_UNARY_OP_LOG: PG_STORE_LOOP(acc, N, d, gp[i] / xp[i]); break;
        case PG_UNARY_OP_EXP: PG_STORE_LOOP(acc, N, d, gp[i] * op[i]); break;
        case PG_UNARY_OP_NEG: PG_STORE_LOOP(acc, N, d, -gp[i]); break;
        case PG_UNARY_OP_SOFTMAX: pg_softmax_cols_bw(x->dtype, op, gp, d, R, C, acc); break;
        }
    });
    return 0;
}

int pg_unary_act(int dtype, int op, const void *x, void *y, int64_t n)
{
    switch (op) {
    case PG_UNARY_OP_RELU: pg_ew_relu(dtype, x, y, n); return 1;
    case PG_UNARY_OP_SIGMOID: pg_vsigmoid(dtype, x, y, n); return 1;
    case PG_UNARY_OP_TANH: pg_vtanh(dtype, x, y, n); return 1;
    default: return 0;
    }
}

static int unary_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *out = n->out;
    int op = (int)n->ip[0];
    int64_t N = pg_numel(x);
    if (op == PG_UNARY_OP_SOFTMAX) {
        pg_softmax_cols(x->dtype, pg_data(x), pg_data(out), x->ne[0], x->ne[1]);
        return 0;
    }
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *o = pg_data(out);
        switch (op) {
        case PG_UNARY_OP_RELU:
        case PG_UNARY_OP_SIGMOID:
        case PG_UNARY_OP_TANH: pg_unary_act(x->dtype, op, xp, o, N); break;
        case PG_UNARY_OP_GELU: pg_vgelu(x->dtype, xp, o, N); break;
        case PG_UNARY_OP_LOG: pg_vlog(x->dtype, xp, o, N); break;
        case PG_UNARY_OP_EXP: pg_vexp(x->dtype, xp, o, N); break;
        case PG_UNARY_OP_NEG:
            for (int64_t i = 0; i < N; i++) o[i] = -xp[i];
            break;
        }
    });
    return 0;
}

pg_tensor *pg_unary(int op, pg_tensor *x)
{
    if (op < 0 || op >= PG_UNARY_OP_COUNT)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "pg_unary: unknown op code %d", op);
    if (pg_not_live(x, unary_name[op], "x")) return NULL;
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    int64_t ip[4] = {op, 0, 0, 0};
    return pg_op_run(unary_label[op], unary_fw, unary_bw, out, 1, &x, NULL, ip, 0, NULL);
}

/* ---- scale, pow, clamp: one scalar (or two) not tracked ---- */

/* x^p as R's `^` (ggmlR's ag_pow): C's pow, except that a fractional p of -Inf is NaN like that of
 * any negative x (C gives +Inf or 0); -0 counts as 0. */
#define POW_R(x, p) ((x) == -INFINITY && (p) != floor(p) ? (T)NAN : pow((x), (p)))
enum { SC_SCALE, SC_POW, SC_CLAMP };

static int scalar_bw(pg_node *n, pg_tensor *g)
{
    pg_tensor *x = n->in[0];
    int acc;
    void *slot = pg_grad_slot(x, &acc);
    if (!slot) return -1;
    int64_t N = pg_numel(x);
    double p0 = n->p[0], p1 = n->p[1];
    PG_DISPATCH(x->dtype, {
        T *d = slot;
        const T *gp = pg_data(g), *xp = pg_data(x);
        const T s0 = (T)p0, s1 = (T)p1;
        switch ((int)n->ip[0]) {
        case SC_SCALE: PG_STORE_LOOP(acc, N, d, gp[i] * s0); break;
        case SC_POW: /* p = 0: gradient 0 everywhere (0 * 0^-1 would be NaN at x = 0) */
            if (p0 == 2) PG_STORE_LOOP(acc, N, d, gp[i] * s0 * xp[i]); /* pow(x, 1) is x */
            else if (p0 == 1) PG_STORE_LOOP(acc, N, d, gp[i] * s0 * (T)1);
            else PG_STORE_LOOP(acc, N, d, s0 == 0 ? (T)0 : gp[i] * s0 * POW_R(xp[i], s0 - 1));
            break;
        default: PG_STORE_LOOP(acc, N, d, (xp[i] > s0 && xp[i] < s1) ? gp[i] : (T)0); break;
        }
    });
    return 0;
}

static int scalar_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *out = n->out;
    int64_t N = pg_numel(x);
    double p0 = n->p[0], p1 = n->p[1];
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x);
        T *o = pg_data(out);
        const T s0 = (T)p0, s1 = (T)p1;
        switch ((int)n->ip[0]) {
        case SC_SCALE:
            for (int64_t i = 0; i < N; i++) o[i] = xp[i] * s0;
            break;
        case SC_POW:
            /* the common powers without libm's pow (~40x slower than a multiply): correctly
             * rounded, as pow is to within its < 1 ulp; pow's signs of zero and infinity kept
             * for whole p */
            if (p0 == 2)
                for (int64_t i = 0; i < N; i++) o[i] = xp[i] * xp[i];
            else if (p0 == 1)
                for (int64_t i = 0; i < N; i++) o[i] = xp[i];
            else if (p0 == -1)
                for (int64_t i = 0; i < N; i++) o[i] = 1 / xp[i];
            else if (p0 == 0.5) /* sqrt: NaN below 0, -Inf included; + 0 makes -0 a +0 */
                for (int64_t i = 0; i < N; i++) o[i] = sqrt(xp[i]) + (T)0;
            else
                for (int64_t i = 0; i < N; i++) o[i] = POW_R(xp[i], s0);
            break;
        default:
            for (int64_t i = 0; i < N; i++) o[i] = xp[i] < s0 ? s0 : (xp[i] > s1 ? s1 : xp[i]);
            break;
        }
    });
    return 0;
}

static pg_tensor *scalar_op(int kind, pg_tensor *x, double p0, double p1)
{
    static const char *names[] = {"ag_scale", "ag_pow", "ag_clamp"};
    static const char *labels[] = {"scale", "pow", "clamp"};
    if (pg_not_live(x, names[kind], "x")) return NULL;
    if (kind == SC_CLAMP && (isnan(p0) || isnan(p1))) /* a NaN bound would silently be ignored */
        return pg_fail_null(PG_STATUS_ERR_VALUE, "ag_clamp: %s must be a number or +/-Inf, not NaN",
                            isnan(p0) ? "lo" : "hi");
    if (kind == SC_CLAMP && p0 > p1)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "ag_clamp: lo (%s) must be <= hi (%s)", pg_num(p0),
                            pg_num(p1));
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER);
    if (!out) return NULL;
    double p[4] = {p0, p1, 0, 0};
    int64_t ip[4] = {kind, 0, 0, 0};
    return pg_op_run(labels[kind], scalar_fw, scalar_bw, out, 1, &x, p, ip, 0, NULL);
}

pg_tensor *pg_scale(pg_tensor *x, double s) { return scalar_op(SC_SCALE, x, s, 0); }
pg_tensor *pg_pow(pg_tensor *x, double p) { return scalar_op(SC_POW, x, p, 0); }
pg_tensor *pg_clamp(pg_tensor *x, double lo, double hi) { return scalar_op(SC_CLAMP, x, lo, hi); }
