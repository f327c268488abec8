/* Checks of the JSON texts inside a model file's metadata (config, optimizer, extra, the name
 * lists), before a front end's JSON library sees them: the bounded parser's limits and strict
 * syntax, and for the architecture the plausibility guard that keeps a hostile config from
 * making the rebuild allocate gigabytes before the shapes are compared with the file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

#define CFG_MAX_SIZE 1e8

/* Depth-first in document order, as both front ends walked it: depth, then an object's product
 * of its integer fields > 1, then its children. */
static int check_cfg(const pj_doc *d, int64_t node, int depth, int64_t budget)
{
    const pj_node *x = &d->nodes[node];
    if (depth > PG_CONFIG_MAX_DEPTH)
        return pg_fail(PG_STATUS_ERR_VALUE, "architecture config is nested too deeply");
    if (x->type == PJ_OBJ) {
        int64_t prod = 1;
        int over = 0;
        for (int64_t c = x->first; c >= 0 && !over; c = d->nodes[c].next) {
            const pj_node *v = &d->nodes[c];
            if (v->type != PJ_NUM) continue;
            /* a whole number written as a float (3e7, 30000000.0) is a size to a front end that
             * takes whole doubles as integers (R), so it counts as one */
            double fv = pj_number(d, v);
            if (!(fv > 1) || fv != floor(fv) || (!v->is_int && fv > CFG_MAX_SIZE))
                continue; /* the latter: below */
            if (fv > 9e18 || prod > budget / (int64_t)fv) over = 1;
            else prod *= (int64_t)fv;
        }
        if (over || prod > budget) {
            if (over)
                return pg_fail(
                    PG_STATUS_ERR_VALUE,
                    "architecture config has an implausible layer size (more than %lld elements; "
                    "the file holds far fewer values)",
                    (long long)budget);
            return pg_fail(
                PG_STATUS_ERR_VALUE,
                "architecture config has an implausible layer size (%lld elements; the file holds "
                "far fewer values)",
                (long long)prod);
        }
    }
    if (x->type == PJ_OBJ || x->type == PJ_ARR) {
        for (int64_t c = x->first; c >= 0; c = d->nodes[c].next) {
            int rc = check_cfg(d, c, depth + 1, budget);
            if (rc) return rc;
        }
    } else if (x->type == PJ_NUM) {
        double v = pj_number(d, x);
        if (v > CFG_MAX_SIZE || v < -CFG_MAX_SIZE) {
            char s[80];
            pj_snippet(d, node, 40, s, sizeof s);
            return pg_fail(PG_STATUS_ERR_VALUE, "architecture config has an implausible size %s",
                           s);
        }
    }
    return 0;
}

int pg_json_check(const char *text, int64_t len, const char *what, int64_t config_budget)
{
    if (!text || len < 0) return pg_fail(PG_STATUS_ERR_ARG, "pg_json_check(): text is NULL");
    if (!what) what = "the JSON text";
    char why[480];
    pj_doc d;
    int rc = pj_parse(text, len, NULL, &d, why, sizeof why);
    if (rc == PG_STATUS_ERR_NOMEM) return pg_fail(rc, "out of memory reading %s", what);
    if (rc) return pg_fail(PG_STATUS_ERR_VALUE, "%s is not valid JSON (%s)", what, why);
    if (config_budget > 0) rc = check_cfg(&d, 0, 0, config_budget);
    pj_free(&d);
    return rc;
}
