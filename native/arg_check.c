/* The front ends' argument rules and texts (pg_api_args.h), once for R and Python. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

#define INT_RANGE 2147483647.0 /* R's integer range: the same bound in both languages */

static int refuse(const char *fn, const char *arg, const char *rng, const char *shown,
                  int wrong_kind)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: %s must be %s, got %s", fn, arg, rng, shown ? shown : "?");
    int chars = 0; /* the wrong kind shown in full would swamp the text: 300 characters */
    for (char *c = msg; wrong_kind && *c; c++)
        if ((*c & 0xC0) != 0x80 && ++chars > 300) {
            *c = '\0';
            break;
        }
    return pg_fail(wrong_kind ? PG_STATUS_ERR_ARG : PG_STATUS_ERR_VALUE, "%s", msg);
}

int pg_arg_int(const char *fn, const char *arg, double v, const double *lo, const double *hi,
               const char *rule, const char *shown, int wrong_kind)
{
    if (!fn || !arg) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_int(): NULL name");
    char rng[200];
    const int at_max = hi && *hi == INT_RANGE;
    if (rule) snprintf(rng, sizeof rng, "%s", rule);
    else if (!lo && !hi) snprintf(rng, sizeof rng, "an integer");
    else if (lo && (!hi || at_max)) snprintf(rng, sizeof rng, "an integer >= %.0f", *lo);
    else if (lo) snprintf(rng, sizeof rng, "an integer in [%.0f, %.0f]", *lo, *hi);
    else snprintf(rng, sizeof rng, "an integer in [%s, %.0f]", pg_num(-HUGE_VAL), *hi);
    if (wrong_kind || !isfinite(v) || v != floor(v)) return refuse(fn, arg, rng, shown, wrong_kind);
    if ((lo && v < *lo) || (hi && v > *hi)) {
        if (at_max && v > *hi && !rule)
            snprintf(rng + strlen(rng), sizeof rng - strlen(rng),
                     " and <= %.0f (R's integer range)", INT_RANGE);
        return refuse(fn, arg, rng, shown, 0);
    }
    return 0;
}

int pg_arg_num(const char *fn, const char *arg, double v, const double *lo, const double *hi,
               int lo_open, int hi_open, const char *shown, int wrong_kind)
{
    if (!fn || !arg) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_num(): NULL name");
    char rng[200];
    if (!hi && !lo) snprintf(rng, sizeof rng, "a finite number");
    else if (!hi) snprintf(rng, sizeof rng, "a finite number %s %g", lo_open ? ">" : ">=", *lo);
    else if (lo)
        snprintf(rng, sizeof rng, "a finite number in %s%g, %g%s", lo_open ? "(" : "[", *lo, *hi,
                 hi_open ? ")" : "]");
    else
        snprintf(rng, sizeof rng, "a finite number in %s%s, %g%s", lo_open ? "(" : "[",
                 pg_num(-HUGE_VAL), *hi, hi_open ? ")" : "]");
    const int ok = !wrong_kind && isfinite(v) && (!lo || (lo_open ? v > *lo : v >= *lo)) &&
        (!hi || (hi_open ? v < *hi : v <= *hi));
    return ok ? 0 : refuse(fn, arg, rng, shown, wrong_kind);
}

int pg_arg_count(const char *fn, const char *arg, double v, double lo, const char *rule,
                 const char *shown, int wrong_kind, double *out)
{
    if (!fn || !arg || !rule || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_count(): NULL");
    /* as.integer keeps (-INT_RANGE - 1, INT_RANGE + 1); NaN fails both */
    if (wrong_kind || !(v >= lo && v < INT_RANGE + 1))
        return refuse(fn, arg, rule, shown, wrong_kind);
    *out = trunc(v) + 0.0; /* + 0.0: no -0 */
    return 0;
}

int pg_arg_real(const char *fn, const char *arg, double v, double lo, int lo_open, const char *rule,
                const char *shown, int wrong_kind)
{
    if (!fn || !arg || !rule) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_real(): NULL");
    const int ok = !wrong_kind && isfinite(v) && (lo_open ? v > lo : v >= lo);
    char num[32]; /* no shown: v as the core prints numbers, the same text in both languages */
    return ok ? 0
              : refuse(fn, arg, rule, shown ? shown : pg_fmt_num(num, sizeof num, v), wrong_kind);
}

int pg_arg_whole_ids(const char *fn, const char *what, const double *v, int64_t n)
{
    if (!fn || !what || (n && !v) || n < 0)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_whole_ids(): NULL");
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] != floor(v[i])) /* NaN / R's NA, +/-Inf, 2.5 */
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: %s must be whole numbers (0-based), got non-integer values", fn,
                           what);
    return 0;
}

int pg_arg_clamp(const char *fn, const char *arg, double v, double lo, double hi, const char *rule,
                 const char *shown, int wrong_kind, double *out)
{
    if (!fn || !arg || !rule || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_clamp(): NULL");
    if (wrong_kind || !isfinite(v)) return refuse(fn, arg, rule, shown, wrong_kind);
    *out = trunc(v < lo ? lo : v > hi ? hi : v) + 0.0; /* + 0.0: no -0 */
    return 0;
}

int pg_arg_gain(const char *fn, double gain, int wrong_kind)
{
    if (!fn) return pg_fail(PG_STATUS_ERR_ARG, "pg_arg_gain(): NULL name");
    if (wrong_kind || !isfinite(gain)) /* ggmlR's stop(): a bad value, whatever came */
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: gain must be a single finite number", fn);
    return 0;
}
