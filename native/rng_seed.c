/* The seed rule of ggml_set_seed, ag_fit(seed =), ag_dataloader(seed =) and the generators: R's
 * as.integer(seed) before set.seed, once for both languages (Python refused "42" where R took
 * it, and the two named different errors for 1.5e10, NaN or TRUE). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

pg_seed_arg pg_seed_default_arg(void)
{
    pg_seed_arg a = {"ggml_set_seed", "`seed`", PG_SEED_NUMBER, NAN, NULL, NULL, "NULL"};
    return a;
}

/* as.integer(<string>): R_strtod of the whole string but for surrounding blanks; NaN when not */
static double string_value(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *end;
    const double v = strtod(s, &end);
    if (end == s) return NAN;
    while (isspace((unsigned char)*end)) end++;
    return *end ? NAN : v;
}

int pg_seed_parse(const pg_seed_arg *a, int32_t *out)
{
    if (!a || !out || !a->fn || !a->arg)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_seed_parse(): NULL argument");
    char shown[96];
    const char *none = a->null_name ? a->null_name : "NULL";
    if (a->kind == PG_SEED_STRING && a->s) pj_qname(a->s, shown, sizeof shown);
    else if (a->shown) snprintf(shown, sizeof shown, "%s", a->shown);
    else if (isfinite(a->v)) pg_format_r(shown, sizeof shown, a->v);
    else pg_fmt_num(shown, sizeof shown, a->v); /* Python's inf / nan, R's Inf / NaN / NA */
    if (a->kind != PG_SEED_NUMBER && a->kind != PG_SEED_STRING) /* a logical, a vector, ... */
        return pg_fail(PG_STATUS_ERR_ARG, "%s: %s must be a single non-NA integer (or %s). Got %s.",
                       a->fn, a->arg, none, shown);
    if (a->kind == PG_SEED_NUMBER && isnan(a->v)) /* NA / NaN: ggmlR's own check */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: %s must be a single non-NA integer (or %s). Got %s.", a->fn, a->arg,
                       none, shown);
    const double v = a->kind == PG_SEED_STRING ? (a->s ? string_value(a->s) : NAN) : a->v;
    /* as.integer: truncation toward zero; NA (then set.seed's refusal) out of R's integer range */
    if (!(fabs(v) < 2147483648.0) || trunc(v) == -2147483648.0)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: supplied seed is not a valid integer, got %s",
                       a->fn, shown);
    *out = (int32_t)trunc(v);
    return 0;
}
