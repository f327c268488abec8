/* Learning-rate schedules as ggmlR 0.8.6 computes them (pg_api_sched.h): one definition for R and
 * Python. Rounding as R's round() (halves to even: nearbyint in the default mode). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "pg.h"

static double anneal(int linear, double a, double b, double p)
{
    return linear ? a + (b - a) * p : b + (a - b) * (1 + cos(M_PI * p)) / 2;
}

static int whole_at_least(double v, double lo, const char *msg)
{
    return (isnan(v) || v < lo) ? pg_fail(PG_STATUS_ERR_VALUE, "%s", msg) : 0;
}

/* A count as ggmlR coerces it (R's as.integer): truncated toward zero; NaN (a front end's
 * non-number), +-Inf or outside (INT_MIN, INT_MAX + 1) becomes NaN (R's NA), which
 * whole_at_least refuses. The same edges as pg_arg_count's. */
static double as_count(double v)
{
    return (v > INT_MIN && v < INT_MAX + 1.0) ? trunc(v) + 0.0 : NAN; /* + 0.0: no -0 */
}

/* the ranges beyond ggmlR's own checks (issue 19): rates finite >= 0, factors finite > 0 */
static int in_range(double v, double lo, int lo_open, double hi, int hi_open, const char *msg)
{
    int ok = isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    char got[32];
    return ok ? 0 : pg_fail(PG_STATUS_ERR_VALUE, "%s, got %s", msg, pg_fmt_num(got, sizeof got, v));
}
#define RATE(v, nm)     in_range(v, 0, 0, INFINITY, 0, nm " must be a single finite number >= 0")
#define FACTOR(v, nm)   in_range(v, 0, 1, INFINITY, 0, nm " must be a single finite number > 0")
#define MOMENTUM(v, nm) in_range(v, 0, 0, 1, 1, nm " must be a single number in [0, 1)")

int pg_sched_init(int kind, double *par, double *st, double cur_lr, double *lr0, double *mom0)
{
    if (!par || !st || !lr0 || !mom0)
        return pg_fail(PG_STATUS_ERR_ARG, "lr_scheduler: NULL argument");
    memset(st, 0, PG_SCHED_NSTATE * sizeof *st);
    *lr0 = NAN;
    *mom0 = NAN;
    switch (kind) { /* the counts as R's as.integer first (once for both front ends: issue 29) */
    case PG_SCHED_KIND_STEP:
        par[0] = as_count(par[0]);
        if (whole_at_least(par[0], 1, "step_size must be >= 1")) return PG_STATUS_ERR_VALUE;
        return FACTOR(par[1], "gamma") ? PG_STATUS_ERR_VALUE : 0;
    case PG_SCHED_KIND_COSINE:
        par[0] = as_count(par[0]);
        if (whole_at_least(par[0], 1, "T_max must be >= 1")) return PG_STATUS_ERR_VALUE;
        if (!(par[3] >= 1))
            return pg_fail(PG_STATUS_ERR_VALUE, "T_mult must be a single number >= 1");
        if (!isfinite(par[3]))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "T_mult must be a single finite number >= 1, got Inf");
        if (RATE(par[1], "lr_min")) return PG_STATUS_ERR_VALUE;
        par[4] = cur_lr; /* lr_max */
        st[1] = par[0];  /* T_cur */
        return 0;
    case PG_SCHED_KIND_CYCLIC:
        par[2] = as_count(par[2]);
        par[3] = as_count(par[3]);
        if (whole_at_least(par[2], 1, "step_size_up must be >= 1")) return PG_STATUS_ERR_VALUE;
        if (whole_at_least(par[3], 1, "step_size_down must be >= 1")) return PG_STATUS_ERR_VALUE;
        if (!(par[1] >= par[0])) return pg_fail(PG_STATUS_ERR_VALUE, "max_lr must be >= base_lr");
        if (RATE(par[0], "base_lr") || RATE(par[1], "max_lr") || FACTOR(par[5], "gamma"))
            return PG_STATUS_ERR_VALUE;
        *lr0 = par[0];
        return 0;
    case PG_SCHED_KIND_ONECYCLE: { /* in: max_lr, total, pct_start, div, final_div, anneal, base_m, max_m */
        par[1] = as_count(par[1]);
        if (whole_at_least(par[1], 2, "total_steps must be >= 2")) return PG_STATUS_ERR_VALUE;
        if (!(par[2] > 0 && par[2] < 1))
            return pg_fail(PG_STATUS_ERR_VALUE, "pct_start must be in (0, 1)");
        if (RATE(par[0], "max_lr") || FACTOR(par[3], "div_factor") ||
            FACTOR(par[4], "final_div_factor") || MOMENTUM(par[6], "base_momentum") ||
            MOMENTUM(par[7], "max_momentum"))
            return PG_STATUS_ERR_VALUE;
        double up = nearbyint(par[2] * par[1]), div = par[3], fdiv = par[4];
        par[2] = par[0] / div;    /* initial */
        par[3] = par[0] / fdiv;   /* final */
        par[4] = up < 1 ? 1 : up; /* step_up */
        *lr0 = par[2];
        *mom0 = par[7];
        return 0;
    }
    case PG_SCHED_KIND_WARMUP_COSINE:
        par[0] = as_count(par[0]);
        par[1] = as_count(par[1]);
        if (whole_at_least(par[0], 0, "warmup_steps must be >= 0")) return PG_STATUS_ERR_VALUE;
        if (!(par[1] > par[0]))
            return pg_fail(PG_STATUS_ERR_VALUE, "total_steps must be > warmup_steps");
        if (RATE(par[3], "lr_min") || RATE(par[4], "warmup_start_lr")) return PG_STATUS_ERR_VALUE;
        par[2] = cur_lr; /* lr_max */
        if (par[0] > 0) *lr0 = par[4];
        return 0;
    case PG_SCHED_KIND_WARMUP: /* par[1] base_lr: the front end's (the optimizer's, or the next schedule's lr_max) */
        par[0] = as_count(par[0]);
        if (whole_at_least(par[0], 1, "warmup_steps must be >= 1")) return PG_STATUS_ERR_VALUE;
        if (RATE(par[2], "start_factor")) return PG_STATUS_ERR_VALUE;
        *lr0 = par[1] * par[2];
        return 0;
    default: return pg_fail(PG_STATUS_ERR_VALUE, "lr_scheduler: unknown kind %d", kind);
    }
}

int pg_sched_step(int kind, const double *par, double *st, double cur_lr, double *lr, double *mom)
{
    if (!par || !st || !lr || !mom)
        return pg_fail(PG_STATUS_ERR_ARG, "lr_scheduler: NULL argument");
    *mom = NAN;
    switch (kind) {
    case PG_SCHED_KIND_STEP:
        st[0] += 1;
        *lr = fmod(st[0], par[0]) == 0 ? cur_lr * par[1] : cur_lr;
        return 0;
    case PG_SCHED_KIND_COSINE: {
        double T = par[0], lr_min = par[1], lr_max = par[4], t, period;
        st[0] += 1;
        if (par[2] != 0) { /* restart: cycles of T_cur steps, each T_mult times the last */
            t = st[2];
            period = st[1];
            st[2] += 1;
            if (st[2] >= st[1]) {
                double next = nearbyint(st[1] * par[3]);
                st[2] = 0;
                st[1] = next < 1 ? 1 : next;
            }
        } else {
            t = st[0] - 1 < T - 1 ? st[0] - 1 : T - 1;
            period = T;
        }
        *lr = lr_min + 0.5 * (lr_max - lr_min) * (1 + cos(M_PI * t / period));
        return 0;
    }
    case PG_SCHED_KIND_CYCLIC: {
        double base = par[0], up = par[2], down = par[3], s = (st[0] += 1);
        double total = up + down, c = floor(s / total), pos = s - c * total;
        double frac = pos <= up ? pos / up : 1 - (pos - up) / down, amp = par[1] - base;
        if (par[4] == 1) amp = amp / pow(2, c);
        else if (par[4] == 2) amp = amp * pow(par[5], s);
        *lr = base + amp * frac;
        return 0;
    }
    case PG_SCHED_KIND_ONECYCLE: {
        double total = par[1], up = par[4], s = st[0] + 1 < total ? st[0] + 1 : total;
        int lin = par[5] != 0;
        st[0] = s;
        if (s <= up) {
            double p = s / up;
            *lr = anneal(lin, par[2], par[0], p);
            *mom = anneal(lin, par[7], par[6], p);
        } else {
            double d = total - up, p = (s - up) / (d < 1 ? 1 : d);
            if (p > 1) p = 1;
            *lr = anneal(lin, par[0], par[3], p);
            *mom = anneal(lin, par[6], par[7], p);
        }
        return 0;
    }
    case PG_SCHED_KIND_WARMUP_COSINE: {
        double w = par[0], total = par[1], s = st[0] + 1 < total ? st[0] + 1 : total;
        st[0] = s;
        if (s <= w) *lr = par[4] + (par[2] - par[4]) * s / w;
        else *lr = par[3] + 0.5 * (par[2] - par[3]) * (1 + cos(M_PI * (s - w) / (total - w)));
        return 0;
    }
    case PG_SCHED_KIND_WARMUP: { /* linear from base * start_factor to base; then NaN: the next schedule's turn */
        const double s = ++st[0];
        *lr = s <= par[0] ? par[1] * (par[2] + (1 - par[2]) * s / par[0]) : NAN;
        return 0;
    }
    default: return pg_fail(PG_STATUS_ERR_VALUE, "lr_scheduler: unknown kind %d", kind);
    }
}
