/* The layers' random draws, made once for R and Python: the dropout op and the orthogonal
 * initialiser (pg_api_rng.h). Arithmetic in double, no FMA, so both languages get the same bits. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "rng_internal.h"

/* one runif(n) turned into the inverted-dropout mask m (n doubles), in the eager draw order */
static int draw_mask(pg_rng *r, int64_t n, double rate, double *m)
{
    if (!(rate >= 0.0 && rate < 1.0))
        return pg_fail(PG_STATUS_ERR_VALUE, "dropout: rate must be in [0, 1), got %s",
                       pg_num(rate));
    if (!(r = pg_rng_lock(r, "dropout"))) return pg_last_status();
    for (int64_t i = 0; i < n; i++) m[i] = pg_rng_runif1(r, 0.0, 1.0); /* runif(length(x)) */
    pg_rng_unlock(r);
    double keep = 1.0 - rate;
    for (int64_t i = 0; i < n; i++) m[i] = (double)(m[i] > rate) / keep;
    return 0;
}

int pg_rng_dropout_fill(pg_rng *r, pg_tensor *mask, double rate, int transpose)
{
    if (pg_not_live(mask, "dropout", "mask")) return pg_last_status();
    if (mask->requires_grad)
        return pg_fail(PG_STATUS_ERR_VALUE, "dropout: the mask %s must not require grad",
                       pg_desc(mask));
    int64_t nrow = mask->ne[0], ncol = mask->ne[1], n = nrow * ncol;
    double *m = malloc((size_t)(n ? n : 1) * sizeof *m);
    if (!m)
        return pg_fail(PG_STATUS_ERR_NOMEM, "dropout: out of memory for a %s mask", pg_desc(mask));
    int rc = draw_mask(r, n, rate, m);
    /* element (i, j): m[i + j * nrow], or m[j + i * ncol] when drawn transposed */
    if (!rc)
        rc = transpose ? pg_tensor_write(mask, m, PG_DTYPE_F64, nrow, ncol, ncol, 1)
                       : pg_tensor_write(mask, m, PG_DTYPE_F64, nrow, ncol, 1, nrow);
    free(m);
    return rc;
}

int pg_rng_dropout_fill_raw(pg_rng *r, int dtype, void *dst, int64_t nrow, int64_t ncol,
                            double rate, int transpose)
{
    int64_t n = nrow * ncol;
    double *m = malloc((size_t)(n ? n : 1) * sizeof *m);
    if (!m) return pg_fail(PG_STATUS_ERR_NOMEM, "dropout: out of memory for a mask");
    int rc = draw_mask(r, n, rate, m);
    /* pg_tensor_write's conversion, element (i, j) from m[i + j * nrow] or m[j + i * ncol] */
    if (!rc)
        PG_DISPATCH(dtype, {
            T *d = dst;
            for (int64_t j = 0; j < ncol; j++)
                for (int64_t i = 0; i < nrow; i++)
                    d[i + j * nrow] = (T)m[transpose ? j + i * ncol : i + j * nrow];
        });
    free(m);
    return rc;
}

/* ---- dropout, one op: the mask is a saved buffer redrawn by every run of the node ---- */

static int dropout_fw(pg_node *n)
{
    pg_tensor *x = n->in[0], *m = n->saved[0], *out = n->out;
    if (pg_rng_dropout_fill(NULL, m, n->p[0], (int)n->ip[0])) return -1;
    int64_t N = pg_numel(x);
    PG_DISPATCH(x->dtype, {
        const T *xp = pg_data(x), *mp = pg_data(m);
        T *op = pg_data(out);
        for (int64_t i = 0; i < N; i++) op[i] = xp[i] * mp[i]; /* ag_mul(x, mask)'s bits */
    });
    return 0;
}

/* g times the mask: ag_mul's rule for x with the mask a constant */
static int dropout_bw(pg_node *n, pg_tensor *g)
{
    return pg_grad_add_times(n->in[0], g, n->saved[0]);
}

pg_tensor *pg_dropout(pg_tensor *x, double rate, int transpose)
{
    if (pg_not_live(x, "ag_dropout", "x")) return NULL;
    if (!(rate >= 0.0 && rate < 1.0))
        return pg_fail_null(PG_STATUS_ERR_VALUE, "ag_dropout: rate must be in [0, 1), got %s",
                            pg_num(rate));
    pg_tensor *out = pg_new_like(x, PG_MEM_CATEGORY_OTHER),
              *mask = pg_new_like(x, PG_MEM_CATEGORY_SAVED);
    if (!out || !mask) {
        if (out) pg_tensor_release(out);
        if (mask) pg_tensor_release(mask);
        return NULL;
    }
    pg_tensor *in[1] = {x};
    double p[4] = {rate, 0, 0, 0};
    int64_t ip[4] = {transpose != 0, 0, 0, 0};
    return pg_op_run("dropout", dropout_fw, dropout_bw, out, 1, in, p, ip, 1, &mask);
}

/* Thin Householder QR of a [n, k] (n >= k, column-major, overwritten): q [n, k] gets Q with
 * each column times sign(R_jj) (0 counts as +1), so the factorisation is the unique one with a
 * positive diagonal. */
static int householder_q(int64_t n, int64_t k, double *a, double *q)
{
    double *v = malloc((size_t)(n * k) * sizeof *v), *beta = malloc((size_t)k * 2 * sizeof *beta);
    if (!v || !beta) {
        free(v);
        free(beta);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_linear: out of memory for the QR");
    }
    double *sgn = beta + k;
    for (int64_t j = 0; j < k; j++) {
        double *x = a + j * n + j, *vj = v + j * n;
        int64_t m = n - j;
        double ss = 0;
        for (int64_t i = 0; i < m; i++) ss += x[i] * x[i];
        double norm = sqrt(ss), alpha = x[0] >= 0 ? -norm : norm; /* R_jj, away from cancellation */
        memset(vj, 0, (size_t)j * sizeof *vj);
        vj[j] = x[0] - alpha;
        for (int64_t i = 1; i < m; i++) vj[j + i] = x[i];
        double vv = 0;
        for (int64_t i = j; i < n; i++) vv += vj[i] * vj[i];
        beta[j] = vv > 0 ? 2.0 / vv : 0.0;
        sgn[j] = alpha < 0 ? -1.0 : 1.0;
        for (int64_t c = j; c < k; c++) { /* A[j:, c] -= beta v (v . A[j:, c]) */
            double *ac = a + c * n, d = 0;
            for (int64_t i = j; i < n; i++) d += vj[i] * ac[i];
            d *= beta[j];
            for (int64_t i = j; i < n; i++) ac[i] -= d * vj[i];
        }
    }
    memset(q, 0, (size_t)(n * k) * sizeof *q);
    for (int64_t j = 0; j < k; j++) q[j * n + j] = 1.0;
    for (int64_t j = k - 1; j >= 0; j--) { /* Q = H_0 ... H_{k-1} [I_k; 0] */
        double *vj = v + j * n;
        for (int64_t c = 0; c < k; c++) {
            double *qc = q + c * n, d = 0;
            for (int64_t i = j; i < n; i++) d += vj[i] * qc[i];
            d *= beta[j];
            for (int64_t i = j; i < n; i++) qc[i] -= d * vj[i];
        }
    }
    for (int64_t c = 0; c < k; c++)
        if (sgn[c] < 0)
            for (int64_t i = 0; i < n; i++) q[c * n + i] = -q[c * n + i];
    free(v);
    free(beta);
    return 0;
}

int pg_rng_orthogonal(pg_rng *r, int64_t out, int64_t in, double gain, double *w)
{
    if (out < 1 || in < 1)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_linear: orthogonal init needs out >= 1 and in >= 1, got [%lldx%lld]",
                       (long long)out, (long long)in);
    if (pg_arg_gain("ag_linear", gain, 0)) return PG_STATUS_ERR_VALUE;
    if (!w) return pg_fail(PG_STATUS_ERR_ARG, "ag_linear: w is NULL");
    int64_t n = out > in ? out : in, k = out > in ? in : out;
    /* G and Q here, the reflectors in the QR: three [n, k] blocks of doubles */
    if (pg_rng_check_size(3.0 * (double)n * (double)k, 8, "ag_linear (orthogonal init)"))
        return PG_STATUS_ERR_NOMEM;
    double *g = malloc((size_t)(n * k) * 2 * sizeof *g);
    if (!g)
        return pg_fail(PG_STATUS_ERR_NOMEM,
                       "ag_linear: out of memory for a [%lldx%lld] orthogonal init", (long long)out,
                       (long long)in);
    if (!(r = pg_rng_lock(r, "ag_linear"))) {
        free(g);
        return pg_last_status();
    }
    for (int64_t i = 0; i < n * k; i++) g[i] = pg_rng_rnorm1(r, 0.0, 1.0); /* one rnorm(n * k) */
    pg_rng_unlock(r);
    double *q = g + n * k;
    int rc = householder_q(n, k, g, q);
    if (!rc) {
        for (int64_t c = 0; c < in; c++)
            for (int64_t i = 0; i < out; i++) /* W = Q [out >= in] or t(Q) */
                w[c * out + i] = out >= in ? q[c * n + i] : q[i * n + c];
        if (gain != 1.0)
            for (int64_t i = 0; i < out * in; i++) w[i] *= gain;
    }
    free(g);
    return rc;
}
