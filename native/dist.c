/* Data parallelism: fused gradient buffers (pack / unpack), replica averaging and weight copies.
 * No communication happens here; the bindings all-reduce or broadcast the flat buffers. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

static int check_list(pg_tensor **params, int64_t n, const char *op)
{
    if (n < 0 || (n > 0 && !params))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: bad parameter list (n = %lld)", op, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        char arg[40];
        snprintf(arg, sizeof arg, "params[%lld]", (long long)(i + pg_index_base()));
        if (pg_not_live(params[i], op, arg)) return PG_STATUS_ERR_ARG;
    }
    return 0;
}

static int check_buf(const void *buf, int buf_dtype, int64_t buf_len, int64_t need, const char *op)
{
    if (buf_dtype != PG_DTYPE_F32 && buf_dtype != PG_DTYPE_F64)
        return pg_fail(PG_STATUS_ERR_DTYPE, "%s: buffer dtype must be f32 or f64, got %s", op,
                       pg_dtype_name(buf_dtype));
    if (buf_len < need)
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: buffer has %lld elements, the layout needs %lld",
                       op, (long long)buf_len, (long long)need);
    if (!buf && need > 0) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL buffer", op);
    return 0;
}

static pg_tensor *grad_of(pg_tensor *p, pg_gradmap *grads)
{
    return grads ? pg_gradmap_get(grads, p) : p->grad;
}

int64_t pg_dist_flat_len(pg_tensor **params, int64_t n, int flags)
{
    if (check_list(params, n, "pg_dist_flat_len")) return -1;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) total += pg_numel(params[i]);
    return total + (flags ? n : 0);
}

int pg_dist_layout_sig(pg_tensor **params, int64_t n, uint32_t *out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_dist_layout_sig: NULL output");
    if (check_list(params, n, "pg_dist_layout_sig")) return -1;
    uint32_t h = 2166136261u; /* FNV-1a over the shape and dtype of each entry */
    for (int64_t i = 0; i < n; i++) {
        const int64_t v[5] = {params[i]->ne[0], params[i]->ne[1], params[i]->ne[2],
                              params[i]->ne[3], params[i]->dtype};
        const unsigned char *b = (const unsigned char *)v;
        for (size_t k = 0; k < sizeof v; k++) h = (h ^ b[k]) * 16777619u;
    }
    *out = h;
    return 0;
}

/* dst (dtype dd) <- src (dtype sd) * scale, n elements */
static void copy_scaled(void *dst, int dd, const void *src, int sd, int64_t n, double scale)
{
    if (dd == PG_DTYPE_F32) {
        float *d = dst;
        if (sd == PG_DTYPE_F32) {
            const float *s = src;
            const float f = (float)scale;
            if (scale == 1) memcpy(d, s, (size_t)n * sizeof *d);
            else
                for (int64_t k = 0; k < n; k++) d[k] = s[k] * f;
        } else {
            const double *s = src;
            for (int64_t k = 0; k < n; k++) d[k] = (float)(s[k] * scale);
        }
    } else {
        double *d = dst;
        if (sd == PG_DTYPE_F64) {
            const double *s = src;
            if (scale == 1) memcpy(d, s, (size_t)n * sizeof *d);
            else
                for (int64_t k = 0; k < n; k++) d[k] = s[k] * scale;
        } else {
            const float *s = src;
            for (int64_t k = 0; k < n; k++) d[k] = (double)s[k] * scale;
        }
    }
}

/* pack's and unpack's checks (fn names the C function, op the caller's view): the flat length,
 * -1 with the error set */
static int64_t check_call(pg_tensor **params, int64_t n, int what, int flags, const void *buf,
                          int buf_dtype, int64_t buf_len, const char *fn, const char *op)
{
    if (what < 0 || what >= PG_DIST_WHAT_COUNT)
        return (pg_fail(PG_STATUS_ERR_VALUE, "%s: unknown what = %d", fn, what), -1);
    if (what == PG_DIST_WHAT_VALUE && flags)
        return (pg_fail(PG_STATUS_ERR_VALUE, "%s: presence flags apply to gradients only", op), -1);
    int64_t need = pg_dist_flat_len(params, n, flags);
    if (need < 0 || check_buf(buf, buf_dtype, buf_len, need, op)) return -1;
    return need;
}

int pg_dist_pack(pg_tensor **params, int64_t n, pg_gradmap *grads, int what, int flags,
                 double scale, void *buf, int buf_dtype, int64_t buf_len)
{
    const char *op = what == PG_DIST_WHAT_VALUE ? "ag_broadcast_parameters (pack)"
                                                : "ag_allreduce_gradients (pack)";
    int64_t need = check_call(params, n, what, flags, buf, buf_dtype, buf_len, "pg_dist_pack", op);
    if (need < 0) return pg_last_status();
    size_t es = pg_dtype_size(buf_dtype);
    char *out = buf;
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *p = params[i];
        pg_tensor *src = what == PG_DIST_WHAT_VALUE ? p : grad_of(p, grads);
        int64_t N = pg_numel(p);
        if (src && (src->ne[0] != p->ne[0] || src->ne[1] != p->ne[1]))
            return pg_fail(PG_STATUS_ERR_SHAPE, "%s: gradient %s does not match parameter %lld %s",
                           op, pg_desc(src), (long long)i, pg_desc(p));
        if (src) copy_scaled(out + (size_t)off * es, buf_dtype, pg_data(src), src->dtype, N, scale);
        else memset(out + (size_t)off * es, 0, (size_t)N * es);
        if (flags) {
            if (buf_dtype == PG_DTYPE_F32) ((float *)buf)[need - n + i] = src ? 1.0f : 0.0f;
            else ((double *)buf)[need - n + i] = src ? 1.0 : 0.0;
        }
        off += N;
    }
    return 0;
}

static double flag_at(const void *buf, int dt, int64_t k)
{
    return dt == PG_DTYPE_F32 ? (double)((const float *)buf)[k] : ((const double *)buf)[k];
}

/* A fresh gradient for p (.grad mode): new tensor, so maps returned earlier never change. */
static pg_tensor *fresh_grad(pg_tensor *p)
{
    pg_tensor *g = pg_new(p->dtype, p->ne[0], p->ne[1], PG_MEM_CATEGORY_GRAD);
    if (!g) return NULL;
    pg_tensor *old = p->grad;
    p->grad = g; /* takes the new reference */
    pg_tensor_release(old);
    return g;
}

int pg_dist_unpack(pg_tensor **params, int64_t n, pg_gradmap *grads, int what, int flags,
                   double scale, const void *buf, int buf_dtype, int64_t buf_len)
{
    const char *op = what == PG_DIST_WHAT_VALUE ? "ag_broadcast_parameters (unpack)"
                                                : "ag_allreduce_gradients (unpack)";
    int64_t need =
        check_call(params, n, what, flags, buf, buf_dtype, buf_len, "pg_dist_unpack", op);
    if (need < 0) return pg_last_status();
    /* validate everything before writing anything */
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *p = params[i];
        if (what == PG_DIST_WHAT_VALUE) continue;
        pg_tensor *g = grad_of(p, grads);
        int global = flags ? flag_at(buf, buf_dtype, need - n + i) > 0 : 1;
        if (g && (g->ne[0] != p->ne[0] || g->ne[1] != p->ne[1]))
            return pg_fail(PG_STATUS_ERR_SHAPE, "%s: gradient %s does not match parameter %lld %s",
                           op, pg_desc(g), (long long)i, pg_desc(p));
        if (!g && global && grads)
            return pg_fail(
                PG_STATUS_ERR_STATE,
                "%s: parameter %lld %s has no gradient in this process's map but %s; "
                "pass grads=None to work on .grad, or make every process reach every parameter",
                op, (long long)i, pg_desc(p),
                flags ? "another process has one" : "the buffer carries one");
    }
    size_t es = pg_dtype_size(buf_dtype);
    const char *in = buf;
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *p = params[i];
        int64_t N = pg_numel(p);
        const void *src = in + (size_t)off * es;
        off += N;
        pg_tensor *dst;
        if (what == PG_DIST_WHAT_VALUE) {
            dst = p;
        } else {
            int global = flags ? flag_at(buf, buf_dtype, need - n + i) > 0 : 1;
            if (!global) continue;
            dst = grads ? pg_gradmap_get(grads, p) : fresh_grad(p);
            if (!dst)
                return pg_fail(PG_STATUS_ERR_NOMEM,
                               "%s: out of memory for the gradient of parameter %lld", op,
                               (long long)i);
        }
        copy_scaled(pg_data(dst), dst->dtype, src, buf_dtype, N, scale);
        pg_bump(dst);
    }
    return 0;
}

int pg_dist_average_replicas(pg_tensor **params, int64_t n, int64_t n_rep, pg_gradmap **grads)
{
    const char *op = "dp_train (average gradients)";
    if (n_rep < 1)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: n_rep must be >= 1, got %lld", op,
                       (long long)n_rep);
    if (!grads) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL array of gradient maps", op);
    if (check_list(params, n * n_rep, op)) return pg_last_status();
    /* validate: shapes agree; replica 0 can receive the result */
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *p0 = params[i];
        int any = 0;
        for (int64_t r = 0; r < n_rep; r++) {
            pg_tensor *p = params[r * n + i];
            if (p->ne[0] != p0->ne[0] || p->ne[1] != p0->ne[1] || p->dtype != p0->dtype)
                return pg_fail(PG_STATUS_ERR_SHAPE,
                               "%s: parameter %lld is %s in replica %lld but %s in replica 0", op,
                               (long long)i, pg_desc(p), (long long)r, pg_desc(p0));
            pg_tensor *g = grad_of(p, grads[r]);
            if (g && (g->ne[0] != p->ne[0] || g->ne[1] != p->ne[1] || g->dtype != p->dtype))
                return pg_fail(PG_STATUS_ERR_SHAPE,
                               "%s: gradient %s does not match parameter %lld %s of replica %lld",
                               op, pg_desc(g), (long long)i, pg_desc(p), (long long)r);
            any |= g != NULL;
        }
        if (any && !grad_of(p0, grads[0]) && grads[0])
            return pg_fail(
                PG_STATUS_ERR_STATE,
                "%s: parameter %lld %s has no gradient in replica 0's map but has one in "
                "another replica",
                op, (long long)i, pg_desc(p0));
    }
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *p0 = params[i];
        pg_tensor *g0 = grad_of(p0, grads[0]);
        int any = 0;
        for (int64_t r = 0; r < n_rep; r++) any |= grad_of(params[r * n + i], grads[r]) != NULL;
        if (!any) continue;
        if (!grads[0]) {
            /* .grad mode: a new tensor, so a map sharing the old .grad is not changed */
            pg_tensor *old = g0;
            pg_tensor *g = pg_new(p0->dtype, p0->ne[0], p0->ne[1], PG_MEM_CATEGORY_GRAD);
            if (!g) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", op);
            int64_t N = pg_numel(p0);
            if (old) memcpy(pg_data(g), pg_data(old), (size_t)N * pg_dtype_size(p0->dtype));
            else memset(pg_data(g), 0, (size_t)N * pg_dtype_size(p0->dtype));
            p0->grad = g;
            pg_tensor_release(old);
            g0 = g;
        }
        int64_t N = pg_numel(p0);
        double inv = 1.0 / (double)n_rep;
        pg_bump(g0);
        PG_DISPATCH(p0->dtype, {
            T *d = pg_data(g0);
            for (int64_t r = 1; r < n_rep; r++) {
                pg_tensor *g = grad_of(params[r * n + i], grads[r]);
                if (!g) continue;
                const T *s = pg_data(g);
                for (int64_t k = 0; k < N; k++) d[k] += s[k];
            }
            const T f = (T)inv;
            if (n_rep > 1)
                for (int64_t k = 0; k < N; k++) d[k] *= f;
        });
    }
    return 0;
}

int pg_dist_copy_values(pg_tensor **dst, pg_tensor **src, int64_t n)
{
    const char *op = "dp_train (copy weights)";
    if (check_list(dst, n, op) || check_list(src, n, op)) return pg_last_status();
    for (int64_t i = 0; i < n; i++)
        if (dst[i]->ne[0] != src[i]->ne[0] || dst[i]->ne[1] != src[i]->ne[1])
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: parameter %lld is %s in the source but %s in the destination", op,
                           (long long)i, pg_desc(src[i]), pg_desc(dst[i]));
    for (int64_t i = 0; i < n; i++) {
        if (dst[i] == src[i] || dst[i]->st == src[i]->st) continue;
        copy_scaled(pg_data(dst[i]), dst[i]->dtype, pg_data(src[i]), src[i]->dtype,
                    pg_numel(src[i]), 1.0);
        pg_bump(dst[i]);
    }
    return 0;
}

int pg_dist_zero_grad(pg_tensor **params, int64_t n)
{
    if (check_list(params, n, "zero_grad")) return pg_last_status();
    for (int64_t i = 0; i < n; i++) pg_tensor_set_grad(params[i], NULL);
    return 0;
}

double pg_mean_r(const double *x, int64_t n)
{
    if (!x || n <= 0) return NAN;
    long double s = 0.0L;
    for (int64_t i = 0; i < n; i++) s += x[i];
    if (isfinite((double)s)) {
        s /= n;
    } else { /* maybe only overflowed: smaller terms, as R */
        long double t = 0.0L;
        for (int64_t i = 0; i < n; i++) t += x[i] / (double)n;
        s = t;
    }
    if (isfinite((double)s)) {
        long double t = 0.0L;
        for (int64_t i = 0; i < n; i++) t += (x[i] - s);
        s += t / n;
    }
    return (double)s;
}
