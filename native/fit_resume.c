/* ag_fit(resume_from =): the checks of a checkpoint's training state, once for both front ends
 * (they used to differ in order, texts and in which fields they checked). The layout is the one
 * both write: extra = {"fit": {"settings": {...}, "history": {...}, "rng_state": [...],
 * "callbacks": [...]}} (docs/model-format.md); callbacks check their own states. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* arrays of the same strings (ag_fit(metrics =)'s names), in order */
static int same_list(const pj_doc *a, int64_t i, const pj_doc *b, int64_t j)
{
    if (i < 0 || j < 0 || a->nodes[i].type != PJ_ARR || b->nodes[j].type != PJ_ARR ||
        a->nodes[i].count != b->nodes[j].count)
        return 0;
    for (int64_t x = a->nodes[i].first, y = b->nodes[j].first; x >= 0 && y >= 0;
         x = a->nodes[x].next, y = b->nodes[y].next)
        if (a->nodes[x].type != PJ_STR || !same(a, x, b, y)) return 0;
    return 1;
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

/* per-epoch arrays of numbers or nulls, all of one length; stopped_epoch / best_epoch a number
 * or null */
static int history_ok(const pj_doc *d, int64_t h)
{
    if (h < 0 || d->nodes[h].type != PJ_OBJ) return 0;
    int64_t n = -1;
    for (int64_t c = d->nodes[h].first; c >= 0; c = d->nodes[c].next) {
        const char *k = d->pool + d->nodes[c].kstr;
        int t = d->nodes[c].type;
        if (!strcmp(k, "stopped_epoch") || !strcmp(k, "best_epoch")) {
            if (t != PJ_NULL && t != PJ_NUM) return 0;
            continue;
        }
        if (t != PJ_ARR || (n >= 0 && d->nodes[c].count != n)) return 0;
        n = d->nodes[c].count;
        for (int64_t e = d->nodes[c].first; e >= 0; e = d->nodes[e].next)
            if (d->nodes[e].type != PJ_NUM && d->nodes[e].type != PJ_NULL) return 0;
    }
    return 1;
}

/* The history's rows are the epochs done, numbered 1 to epoch (the writers' layout): a
 * hand-edited count, numbering or stopped / best epoch past it is refused, not resumed from with
 * a shortened or renumbered history. Absent "epoch" column: files that never had one. */
static int history_epochs(const char *path, const pj_doc *d, int64_t h, int64_t epoch)
{
    for (int64_t c = d->nodes[h].first; c >= 0; c = d->nodes[c].next) {
        const char *k = d->pool + d->nodes[c].kstr;
        if (d->nodes[c].type == PJ_NUM) { /* stopped_epoch / best_epoch (history_ok) */
            double v = pj_number(d, &d->nodes[c]);
            if (!(v >= 0 && v <= (double)epoch && v == floor(v)))
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "ag_fit: %s holds an unusable training state (its history's %s "
                               "is not an epoch from 0 to %lld)",
                               path, k, (long long)epoch);
            continue;
        }
        if (d->nodes[c].type != PJ_ARR) continue;
        if (d->nodes[c].count != epoch)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_fit: %s holds an unusable training state (its history has %lld "
                           "epoch%s, the checkpoint's epoch is %lld)",
                           path, (long long)d->nodes[c].count, d->nodes[c].count == 1 ? "" : "s",
                           (long long)epoch);
        if (strcmp(k, "epoch")) continue;
        int64_t i = 1;
        for (int64_t e = d->nodes[c].first; e >= 0; e = d->nodes[e].next, i++)
            if (d->nodes[e].type != PJ_NUM || pj_number(d, &d->nodes[e]) != (double)i)
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "ag_fit: %s holds an unusable training state (its history's "
                               "epochs are not numbered 1 to %lld)",
                               path, (long long)epoch);
    }
    return 0;
}

/* the generator's own rule, on a throwaway stream (the split state too: refused here, before
 * the plan loads it, with this text in both languages) */
static int state_ok(const int32_t *state)
{
    pg_rng *r = pg_rng_new_seeded(0);
    int ok = r && pg_rng_set_state(r, state, PG_RNG_STATE_LEN) == 0;
    pg_rng_free(r);
    pg_clear_error();
    return ok;
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
    /* metrics: absent or null in checkpoints from before the record (they resume) */
    int64_t mw = pj_get(x, st, "metrics"), mn = pj_get(s, 0, "metrics");
    if (mw >= 0 && x->nodes[mw].type != PJ_NULL && !same_list(x, mw, s, mn)) {
        char a[64], b[64];
        show(x, mw, a, sizeof a);
        show(s, mn, b, sizeof b);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: cannot resume: metrics were %s in the checkpoint, now %s "
                       "(resume with the checkpoint's metrics)",
                       a, b);
    }
    int64_t seed = pj_get(x, st, "seed"), split = pj_get(x, st, "split_state");
    int32_t state[PG_RNG_STATE_LEN];
    if (!(seed < 0 || x->nodes[seed].type == PJ_NULL || is_int32(x, seed)) ||
        !(split < 0 || x->nodes[split].type == PJ_NULL ||
          (int32_array(x, split, state) && state_ok(state))))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s holds an unusable random-stream state (settings 'seed' / "
                       "'split_state': null, or an integer / %d 32-bit integers)",
                       path, PG_RNG_STATE_LEN);
    int64_t cbs = pj_get(x, fit, "callbacks"); /* absent, null or an array */
    if (cbs >= 0 && x->nodes[cbs].type != PJ_NULL && x->nodes[cbs].type != PJ_ARR)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s holds an unusable training state (callbacks: not an array)",
                       path);
    if (!history_ok(x, pj_get(x, fit, "history")) ||
        !int32_array(x, pj_get(x, fit, "rng_state"), state) || !state_ok(state))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s holds an unusable training state (history or random stream)",
                       path);
    return history_epochs(path, x, pj_get(x, fit, "history"), epoch);
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

/* ---- the checkpoint's run state, handed out (pg_api_train_stop.h) ---- */

struct pg_fit_ckpt {
    int64_t epoch, n, ncol, ncb;
    double *cols; /* cols[c * n + i] */
    char **names; /* ncol */
    double stopped, best;
    int has_seed, has_split;
    int32_t seed, split[PG_RNG_STATE_LEN], rng[PG_RNG_STATE_LEN];
    char **cb; /* ncb JSON texts, NULL: null */
};

void pg_fit_ckpt_free(pg_fit_ckpt *c)
{
    if (!c) return;
    for (int64_t i = 0; c->names && i < c->ncol; i++) free(c->names[i]);
    for (int64_t i = 0; c->cb && i < c->ncb; i++) free(c->cb[i]);
    free(c->names), free(c->cb), free(c->cols), free(c);
}

static char *dup_n(const char *s, int64_t n)
{
    char *p = malloc((size_t)n + 1);
    if (p) memcpy(p, s, (size_t)n), p[n] = '\0';
    return p;
}

static double num_or_nan(const pj_doc *d, int64_t v)
{
    return v >= 0 && d->nodes[v].type == PJ_NUM ? pj_number(d, &d->nodes[v]) : NAN;
}

/* a history member that is not one of the fixed columns: an ag_fit(metrics =) column */
static int extra_col(const pj_doc *x, int64_t k)
{
    const char *key = x->pool + x->nodes[k].kstr;
    if (x->nodes[k].type != PJ_ARR || !strcmp(key, "epoch")) return 0;
    for (int j = 0; j < PG_FIT_LOG_COUNT; j++)
        if (!strcmp(key, pg_fit_log_name(j))) return 0;
    return 1;
}

/* column j named key from the array node col (absent: NaN) */
static int set_col(pg_fit_ckpt *c, int64_t j, const char *key, const pj_doc *x, int64_t col)
{
    if (!(c->names[j] = dup_n(key, (int64_t)strlen(key)))) return -1;
    int64_t e = col >= 0 && x->nodes[col].type == PJ_ARR ? x->nodes[col].first : -1;
    for (int64_t i = 0; i < c->n; i++, e = e >= 0 ? x->nodes[e].next : -1)
        c->cols[j * c->n + i] = num_or_nan(x, e);
    return 0;
}

/* the fixed columns first (epoch, then enum pg_fit_log's; absent: NaN), then the file's others */
static int fill(pg_fit_ckpt *c, const pj_doc *x)
{
    int64_t fit = pj_get(x, 0, "fit"), st = pj_get(x, fit, "settings");
    int64_t h = pj_get(x, fit, "history"), cbs = pj_get(x, fit, "callbacks");
    int64_t seed = pj_get(x, st, "seed"), split = pj_get(x, st, "split_state");
    c->has_seed = seed >= 0 && x->nodes[seed].type == PJ_NUM;
    c->seed = c->has_seed ? (int32_t)x->nodes[seed].ival : 0;
    c->has_split = split >= 0 && int32_array(x, split, c->split);
    int32_array(x, pj_get(x, fit, "rng_state"), c->rng);
    c->stopped = num_or_nan(x, pj_get(x, h, "stopped_epoch"));
    c->best = num_or_nan(x, pj_get(x, h, "best_epoch"));
    const int64_t fixed = 1 + PG_FIT_LOG_COUNT;
    c->ncol = fixed;
    for (int64_t k = x->nodes[h].first; k >= 0; k = x->nodes[k].next) {
        if (x->nodes[k].type == PJ_ARR) c->n = x->nodes[k].count; /* one length (checked) */
        c->ncol += extra_col(x, k);
    }
    c->names = calloc((size_t)c->ncol, sizeof *c->names);
    c->cols = malloc(sizeof(double) * (size_t)(c->ncol * c->n + 1));
    c->ncb = cbs >= 0 && x->nodes[cbs].type == PJ_ARR ? x->nodes[cbs].count : 0;
    c->cb = calloc((size_t)c->ncb + 1, sizeof *c->cb);
    if (!c->names || !c->cols || !c->cb) return -1;
    for (int64_t j = 0; j < fixed; j++) {
        const char *key = j == 0 ? "epoch" : pg_fit_log_name((int)j - 1);
        if (set_col(c, j, key, x, pj_get(x, h, key))) return -1;
    }
    int64_t j = fixed;
    for (int64_t k = x->nodes[h].first; k >= 0; k = x->nodes[k].next)
        if (extra_col(x, k) && set_col(c, j++, x->pool + x->nodes[k].kstr, x, k)) return -1;
    int64_t i = 0;
    for (int64_t k = c->ncb ? x->nodes[cbs].first : -1; k >= 0; k = x->nodes[k].next, i++)
        if (x->nodes[k].type != PJ_NULL &&
            !(c->cb[i] = dup_n(x->text + x->nodes[k].start, x->nodes[k].end - x->nodes[k].start)))
            return -1;
    return 0;
}

int pg_fit_ckpt_open(const char *path, const char *settings, int64_t settings_len,
                     pg_fit_ckpt **out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_ckpt_open(): out is NULL");
    *out = NULL;
    int rc = pg_fit_resume_check(path, settings, settings_len);
    if (rc) return rc;
    pg_st_file *f = NULL;
    if ((rc = pg_st_open(path, &f))) return rc;
    const char *extra = meta(f, "extra");
    char why[256];
    pj_doc x;
    pg_fit_ckpt *c = calloc(1, sizeof *c);
    if (!c || pj_parse(extra, (int64_t)strlen(extra), NULL, &x, why, sizeof why)) {
        free(c);
        pg_st_close(f);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: %s: out of memory", path);
    }
    c->epoch = epoch_of(meta(f, "epoch"));
    rc = fill(c, &x);
    pj_free(&x);
    pg_st_close(f);
    if (rc) {
        pg_fit_ckpt_free(c);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: %s: out of memory", path);
    }
    *out = c;
    return 0;
}

int64_t pg_fit_ckpt_epoch(const pg_fit_ckpt *c) { return c ? c->epoch : -1; }
int pg_fit_ckpt_seed(const pg_fit_ckpt *c, int32_t *seed)
{
    if (c && c->has_seed && seed) *seed = c->seed;
    return c ? c->has_seed : 0;
}
int pg_fit_ckpt_split_state(const pg_fit_ckpt *c, int32_t *out)
{
    if (c && c->has_split && out) memcpy(out, c->split, sizeof c->split);
    return c ? c->has_split : 0;
}
void pg_fit_ckpt_rng_state(const pg_fit_ckpt *c, int32_t *out)
{
    if (c && out) memcpy(out, c->rng, sizeof c->rng);
}
int64_t pg_fit_ckpt_epochs(const pg_fit_ckpt *c) { return c ? c->n : 0; }
int64_t pg_fit_ckpt_columns(const pg_fit_ckpt *c) { return c ? c->ncol : 0; }
const char *pg_fit_ckpt_column_name(const pg_fit_ckpt *c, int64_t j)
{
    return c && j >= 0 && j < c->ncol ? c->names[j] : NULL;
}
void pg_fit_ckpt_column(const pg_fit_ckpt *c, int64_t j, double *out)
{
    if (c && out && j >= 0 && j < c->ncol && c->n)
        memcpy(out, c->cols + j * c->n, sizeof(double) * (size_t)c->n);
}
double pg_fit_ckpt_stopped_epoch(const pg_fit_ckpt *c) { return c ? c->stopped : NAN; }
double pg_fit_ckpt_best_epoch(const pg_fit_ckpt *c) { return c ? c->best : NAN; }
int64_t pg_fit_ckpt_callbacks(const pg_fit_ckpt *c) { return c ? c->ncb : 0; }
const char *pg_fit_ckpt_callback_state(const pg_fit_ckpt *c, int64_t i)
{
    return c && i >= 0 && i < c->ncb ? c->cb[i] : NULL;
}
