/* Gradient helpers over a parameter list (ggmlR's clip_grad_norm, 0.8.3's clip_grad_value and
 * check_grad_anomaly): on a gradient map, or on each parameter's .grad when the map is NULL. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "pg.h"

static int clip_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm, double *norm_out);

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

/* Unshares every listed gradient before any is rewritten (out of memory: nothing changed). */
static int unshare_grads(pg_tensor **params, int64_t n, pg_gradmap *grads, const char *fn)
{
    int oom = 0;
    for (int64_t i = 0; i < n && !oom; i++) if (!listed_before(params, i)) grad_mut(params[i], grads, &oom);
    return oom ? pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", fn) : 0;
}

/* params[i]'s gradient to rewrite in place (its version bumped); NULL: none, or listed before */
static pg_tensor *grad_to_write(pg_tensor **params, int64_t i, pg_gradmap *grads)
{
    pg_tensor *g = listed_before(params, i) ? NULL : grad_of(params[i], grads);
    if (g) pg_bump(g);
    return g;
}

/* the gradient helpers' parameter list: n >= 0 live tensors (fn names the helper) */
static int check_param_list(pg_tensor **params, int64_t n, const char *fn)
{
    if (n < 0 || (n > 0 && !params)) return pg_fail(PG_STATUS_ERR_ARG, "%s: bad parameter list", fn);
    for (int64_t i = 0; i < n; i++)
        if (pg_not_live(params[i], fn, "params[i]")) return PG_STATUS_ERR_ARG;
    return 0;
}

int pg_clip_grad_norm(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm, double *norm_out)
{
    pg_grad_lock();
    int rc = clip_locked(params, n, grads, max_norm, norm_out);
    pg_grad_unlock();
    return rc;
}

static int clip_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double max_norm, double *norm_out)
{
    if (check_param_list(params, n, "clip_grad_norm")) return pg_last_status();
    if (isnan(max_norm) || max_norm < 0) return pg_fail(PG_STATUS_ERR_VALUE, "clip_grad_norm: max_norm must be >= 0, got %g", max_norm);
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
    int rc = unshare_grads(params, n, grads, "clip_grad_norm");
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *g = grad_to_write(params, i, grads);
        if (!g) continue;
        int64_t N = pg_numel(g);
        PG_DISPATCH(g->dtype, {
            T *gp = pg_data(g);
            const T s = (T)f;
            for (int64_t k = 0; k < N; k++) gp[k] *= s;
        });
    }
    return 0;
}

/* ---- clip_grad_value, check_grad_anomaly (ggmlR 0.8.3) ---- */

static int clip_value_locked(pg_tensor **params, int64_t n, pg_gradmap *grads, double c, double *max_abs)
{
    if (check_param_list(params, n, "clip_grad_value")) return pg_last_status();
    if (!(isfinite(c) && c > 0)) return pg_fail(PG_STATUS_ERR_VALUE, "clip_value must be a single positive finite number");
    double mx = 0;
    int rc = unshare_grads(params, n, grads, "clip_grad_value");
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++) {
        pg_tensor *g = grad_to_write(params, i, grads);
        if (!g) continue;
        int64_t N = pg_numel(g);
        PG_DISPATCH(g->dtype, {
            T *gp = pg_data(g);
            const T hi = (T)c, lo = (T)-c;
            for (int64_t k = 0; k < N; k++) {
                double a = fabs((double)gp[k]);
                if (isfinite(a) && a > mx) mx = a;
                if (gp[k] > hi) gp[k] = hi;          /* NaN compares false both ways: stays NaN */
                else if (gp[k] < lo) gp[k] = lo;
            }
        });
    }
    if (max_abs) *max_abs = mx;
    return 0;
}

int pg_clip_grad_value(pg_tensor **params, int64_t n, pg_gradmap *grads, double clip_value, double *max_abs)
{
    pg_grad_lock();
    int rc = clip_value_locked(params, n, grads, clip_value, max_abs);
    pg_grad_unlock();
    return rc;
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
    if (n > 0 && (!found || !n_nan || !n_inf || !max_abs)) return pg_fail(PG_STATUS_ERR_ARG, "check_grad_anomaly: NULL output");
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
                if (isnan(v)) nn += !is_r_na(v);   /* as ggmlR's is.nan(): R's NA is not NaN there */
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
