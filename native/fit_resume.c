/* ag_fit(resume_from =): the checks of a checkpoint's training state, once for both front ends
 * (they used to differ in order, texts and in which fields they checked). The layout is the one
 * both write: extra = {"fit": {"settings": {...}, "history": {...}, "rng_state": [...],
 * "callbacks": [...]}} (docs/model-format.md); callbacks check their own states. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

/* "weighted": true for a run with sample / class weights, else absent or null (so checkpoints
 * from before weights load) */
static const char *RESUMED[] = {"n",       "batch_size", "nbatch_logical", "val_split",
                                "shuffle", "loss",       "weighted"};

/* a value's text for messages: the JSON source, "null" when absent */
static void show(const pj_doc *d, int64_t node, char *out, size_t cap)
{
    if (node < 0) snprintf(out, cap, "null");
    else pj_snippet(d, node, 40, out, cap);
}

static int same(const pj_doc *a, int64_t i, const pj_doc *b, int64_t j)
{
    int ta = i < 0 ? PJ_NULL : a->nodes[i].type, tb = j < 0 ? PJ_NULL : b->nodes[j].type;
    if (ta != tb) return 0;
    if (ta == PJ_NUM) return pj_number(a, &a->nodes[i]) == pj_number(b, &b->nodes[j]);
    if (ta == PJ_STR)
        return a->nodes[i].len == b->nodes[j].len &&
            memcmp(a->pool + a->nodes[i].str, b->pool + b->nodes[j].str, (size_t)a->nodes[i].len) ==
            0;
    return ta != PJ_ARR && ta != PJ_OBJ; /* null, true, false */
}

static int is_int32(const pj_doc *d, int64_t node)
{
    const pj_node *x = &d->nodes[node];
    return x->type == PJ_NUM && x->is_int && !x->big && x->ival >= INT32_MIN &&
        x->ival <= INT32_MAX;
}

/* n == PG_RNG_STATE_LEN 32-bit integers, copied to out (when not NULL) */
static int int32_array(const pj_doc *d, int64_t node, int32_t *out)
{
    if (node < 0 || d->nodes[node].type != PJ_ARR || d->nodes[node].count != PG_RNG_STATE_LEN)
        return 0;
    int64_t k = 0;
    for (int64_t c = d->nodes[node].first; c >= 0; c = d->nodes[c].next, k++) {
        if (!is_int32(d, c)) return 0;
        if (out) out[k] = (int32_t)d->nodes[c].ival;
    }
    return 1;
}

/* per-epoch arrays of numbers or nulls; stopped_epoch / best_epoch a number or null */
static int history_ok(const pj_doc *d, int64_t h)
{
    if (h < 0 || d->nodes[h].type != PJ_OBJ) return 0;
    for (int64_t c = d->nodes[h].first; c >= 0; c = d->nodes[c].next) {
        const char *k = d->pool + d->nodes[c].kstr;
        int t = d->nodes[c].type;
        if (!strcmp(k, "stopped_epoch") || !strcmp(k, "best_epoch")) {
            if (t != PJ_NULL && t != PJ_NUM) return 0;
            continue;
        }
        if (t != PJ_ARR) return 0;
        for (int64_t e = d->nodes[c].first; e >= 0; e = d->nodes[e].next)
            if (d->nodes[e].type != PJ_NUM && d->nodes[e].type != PJ_NULL) return 0;
    }
    return 1;
}

static int check(const char *path, const pj_doc *x, int64_t epoch, const pj_doc *s)
{
    int64_t fit = x ? pj_get(x, 0, "fit") : -1, st = fit >= 0 ? pj_get(x, fit, "settings") : -1;
    if (fit < 0 || x->nodes[fit].type != PJ_OBJ || st < 0 || x->nodes[st].type != PJ_OBJ)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s is not an ag_fit checkpoint (no training state)", path);
    if (epoch < 0)
        return pg_fail(PG_STATUS_ERR_VALUE, "ag_fit: %s is not a training checkpoint (no epoch)",
                       path);
    for (size_t i = 0; i < sizeof RESUMED / sizeof *RESUMED; i++) {
        int64_t was = pj_get(x, st, RESUMED[i]), now = pj_get(s, 0, RESUMED[i]);
        if (!same(x, was, s, now)) {
            char a[64], b[64];
            show(x, was, a, sizeof a);
            show(s, now, b, sizeof b);
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_fit: cannot resume: %s was %s in the checkpoint, now %s", RESUMED[i],
                           a, b);
        }
    }
    int64_t seed = pj_get(x, st, "seed"), split = pj_get(x, st, "split_state");
    if (!(seed < 0 || x->nodes[seed].type == PJ_NULL || is_int32(x, seed)) ||
        !(split < 0 || x->nodes[split].type == PJ_NULL || int32_array(x, split, NULL)))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s holds an unusable random-stream state (settings 'seed' / "
                       "'split_state': null, or an integer / %d 32-bit integers)",
                       path, PG_RNG_STATE_LEN);
    int32_t state[PG_RNG_STATE_LEN];
    int ok = history_ok(x, pj_get(x, fit, "history")) &&
        int32_array(x, pj_get(x, fit, "rng_state"), state);
    if (ok) { /* the generator's own rule, on a throwaway stream */
        pg_rng *r = pg_rng_new_seeded(0);
        if (!r) return pg_last_status();
        ok = pg_rng_set_state(r, state, PG_RNG_STATE_LEN) == 0;
        pg_rng_free(r);
        pg_clear_error();
    }
    if (!ok)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s holds an unusable training state (history or random stream)",
                       path);
    return 0;
}

/* the metadata value of key, or NULL */
static const char *meta(const pg_st_file *f, const char *key)
{
    for (int64_t i = 0; i < pg_st_meta_count(f); i++)
        if (!strcmp(pg_st_meta_key(f, i), key)) return pg_st_meta_value(f, i);
    return NULL;
}

/* 1-12 ASCII digits (the loaders' rule), else -1 */
static int64_t epoch_of(const char *t)
{
    size_t n = t ? strlen(t) : 0;
    if (n < 1 || n > 12 || strspn(t, "0123456789") != n) return -1;
    return (int64_t)strtoll(t, NULL, 10);
}

int pg_fit_resume_check(const char *path, const char *settings, int64_t settings_len)
{
    if (!path || !settings || settings_len < 0)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_resume_check(): NULL argument");
    char why[256];
    pj_doc s, x;
    int rc = pj_parse(settings, settings_len, NULL, &s, why, sizeof why);
    if (rc) return pg_fail(rc, "pg_fit_resume_check(): settings are not valid JSON (%s)", why);
    if (s.nodes[0].type != PJ_OBJ) {
        pj_free(&s);
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_resume_check(): settings must be an object");
    }
    pg_st_file *f = NULL;
    if ((rc = pg_st_open(path, &f))) {
        pj_free(&s);
        return rc;
    }
    const char *extra = meta(f, "extra");
    /* a text that does not parse or is not an object holds no training state */
    int have_x = extra && pj_parse(extra, (int64_t)strlen(extra), NULL, &x, why, sizeof why) == 0;
    if (have_x && x.nodes[0].type != PJ_OBJ) {
        pj_free(&x);
        have_x = 0;
    }
    rc = check(path, have_x ? &x : NULL, epoch_of(meta(f, "epoch")), &s);
    if (have_x) pj_free(&x);
    pg_st_close(f);
    pj_free(&s);
    return rc;
}
