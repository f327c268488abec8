/* Gradient helpers over a parameter list (ggmlR's clip_grad_norm, 0.8.3's clip_grad_value and
 * check_grad_anomaly): on a gradient map, or on each parameter's .grad when the map is NULL. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "pg.h"

static int clip_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm,
                       double *norm_out);

static pg_tensor *grad_of(pg_tensor *p, pg_gradmap *grads)
{
    return grads ? pg_gradmap_get(grads, p) : p->grad;
}

/* the gradient a clipping helper rewrites in place: its own buffer, never one shared between a
 * map and .grad (ggmlR's environment and $grad are separate values). NULL + error when OOM. */
static pg_tensor *grad_mut(pg_tensor *p, pg_gradmap *grads, int *oom)
{
    pg_tensor *g = grad_of(p, grads);
    if (!g) return NULL;
    pg_tensor *o = grads ? pg_gradmap_get_own(grads, p) : pg_grad_own(p);
    if (!o) *oom = 1;
    return o;
}

/* params[i] listed earlier too: counted and scaled once */
static int listed_before(pg_tensor **params, int64_t i)
{
    for (int64_t k = 0; k < i; k++)
        if (params[k] == params[i]) return 1;
    return 0;
}

/* Rewrites each listed gradient in place, once, in list order: all are unshared first (out of
 * memory: nothing changed), then each gets its version bumped and fn(g, ctx). */
static int rewrite_grads(pg_tensor **params, int64_t n, pg_gradmap *grads, const char *name,
                         void (*fn)(pg_tensor *g, void *ctx), void *ctx)
{
    int oom = 0;
    for (int64_t i = 0; i < n && !oom; i++)
        if (!listed_before(params, i)) grad_mut(params[i], grads, &oom);
    if (oom) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *g = listed_before(params, i) ? NULL : grad_of(params[i], grads);
        if (!g) continue;
        pg_bump(g);
        fn(g, ctx);
    }
    return 0;
}

static void scale_grad(pg_tensor *g, void *ctx)
{
    const double f = *(const double *)ctx;
    int64_t N = pg_numel(g);
    PG_DISPATCH(g->dtype, {
        T *gp = pg_data(g);
        const T s = (T)f;
        for (int64_t k = 0; k < N; k++) gp[k] *= s;
    });
}

typedef struct {
    double c, mx;
} clamp_ctx; /* mx: the largest finite |value| seen */

static void clamp_grad(pg_tensor *g, void *ctx)
{
    clamp_ctx *cc = ctx;
    int64_t N = pg_numel(g);
    double mx = cc->mx;
    PG_DISPATCH(g->dtype, {
        T *gp = pg_data(g);
        const T hi = (T)cc->c, lo = (T)-cc->c;
        for (int64_t k = 0; k < N; k++) {
            double a = fabs((double)gp[k]);
            if (isfinite(a) && a > mx) mx = a;
            if (gp[k] > hi) gp[k] = hi; /* NaN compares false both ways: stays NaN */
            else if (gp[k] < lo) gp[k] = lo;
        }
    });
    cc->mx = mx;
}

/* the gradient helpers' parameter list: n >= 0 live tensors (fn names the helper) */
static int check_param_list(pg_tensor **params, int64_t n, const char *fn)
{
    if (n < 0 || (n > 0 && !params))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: bad parameter list", fn);
    for (int64_t i = 0; i < n; i++)
        if (pg_not_live(params[i], fn, "params[i]")) return PG_STATUS_ERR_ARG;
    return 0;
}

int pg_clip_grad_norm(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm,
                      double *norm_out)
{
    PG_GRAD_LOCKED(clip_locked(params, n, grads, max_norm, norm_out));
}

static int clip_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm,
                       double *norm_out)
{
    if (check_param_list(params, n, "clip_grad_norm")) return pg_last_status();
    if (isnan(max_norm) || max_norm < 0)
        return pg_fail(PG_STATUS_ERR_VALUE, "clip_grad_norm: max_norm must be >= 0, got %s",
                       pg_num(max_norm));
    double ss = 0;
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *g = listed_before(params, i) ? NULL : grad_of(params[i], grads);
        if (!g) continue;
        int64_t N = pg_numel(g);
        PG_DISPATCH(g->dtype, {
            const T *gp = pg_data(g);
            for (int64_t k = 0; k < N; k++) ss += (double)gp[k] * (double)gp[k];
        });
    }
    double norm = sqrt(ss);
    if (norm_out) *norm_out = norm;
    if (!(norm > max_norm)) return 0;
    double f = max_norm / (norm + 1e-6);
    return rewrite_grads(params, n, grads, "clip_grad_norm", scale_grad, &f);
}

/* ---- clip_grad_value, check_grad_anomaly (ggmlR 0.8.3) ---- */

static int clip_value_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double c,
                             double *max_abs)
{
    if (check_param_list(params, n, "clip_grad_value")) return pg_last_status();
    if (!(isfinite(c) && c > 0)) { /* named as the front ends' kind check: both languages */
        char num[32];
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "clip_grad_value: clip_value must be a single positive finite number, "
                       "got %s",
                       pg_fmt_num(num, sizeof num, c));
    }
    clamp_ctx cc = {c, 0};
    int rc = rewrite_grads(params, n, grads, "clip_grad_value", clamp_grad, &cc);
    if (rc) return rc;
    if (max_abs) *max_abs = cc.mx;
    return 0;
}

int pg_clip_grad_value(pg_tensor **params, int64_t n, pg_gradmap *grads, double clip_value,
                       double *max_abs)
{
    PG_GRAD_LOCKED(clip_value_locked(params, n, grads, clip_value, max_abs));
}

/* R's NA_real_: a NaN whose low 32 bits are 1954 (R_IsNA); f64 keeps it, f32 cannot */
static int is_r_na(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return isnan(v) && (uint32_t)bits == 1954u;
}

int pg_grad_anomaly(pg_tensor **params, int64_t n, pg_gradmap *grads, int *found, int64_t *n_nan,
                    int64_t *n_inf, double *max_abs)
{
    if (n > 0 && (!found || !n_nan || !n_inf || !max_abs))
        return pg_fail(PG_STATUS_ERR_ARG, "check_grad_anomaly: NULL output");
    if (check_param_list(params, n, "check_grad_anomaly")) return pg_last_status();
    pg_grad_lock();
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *g = grad_of(params[i], grads);
        found[i] = g != NULL;
        n_nan[i] = n_inf[i] = 0;
        max_abs[i] = NAN;
        if (!g) continue;
        int64_t N = pg_numel(g), nn = 0, ni = 0;
        double mx = -1;
        PG_DISPATCH(g->dtype, {
            const T *gp = pg_data(g);
            for (int64_t k = 0; k < N; k++) {
                double v = (double)gp[k];
                if (isnan(v)) nn += !is_r_na(v); /* as ggmlR's is.nan(): R's NA is not NaN there */
                else if (isinf(v)) ni++;
                else if (fabs(v) > mx) mx = fabs(v);
            }
        });
        n_nan[i] = nn;
        n_inf[i] = ni;
        max_abs[i] = mx < 0 ? NAN : mx;
    }
    pg_grad_unlock();
    return 0;
}
