/* ag_fit's built-in callbacks as both front ends save, restore and show them, the history a
 * checkpoint hands back, and the progress= rule: once here, so R and Python only convert. The
 * callbacks' rules are fit_stop.c's; the checkpoint layout fit_ckpt.c's / fit_resume.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

/* a double as the shortest text that reads back the same (whole: ".0" added unless whole is
 * set, so a reader keeps it a real number); not finite: null */
static void put_num(pg_sbuf *b, double v, int whole)
{
    char s[40] = "null";
    if (isfinite(v)) {
        for (int d = 15; d <= 17; d++) {
            snprintf(s, sizeof s, "%.*g", d, v);
            if (strtod(s, NULL) == v) break;
        }
        if (!whole && !strpbrk(s, ".e")) strcat(s, ".0");
    }
    pg_sbuf_printf(b, "%s", s);
}

static int64_t done(pg_sbuf *b, char *out, int64_t cap)
{
    if (out && cap > 0 && b->len >= cap) out[cap - 1] = '\0';
    return b->len;
}

/* ---- the built-in callbacks' checkpoint state ---- */

static const char *const STATE_KEYS[] = {"best", "best_epoch", "wait"};

const char *pg_callback_state_key(int k) { return k >= 0 && k < 3 ? STATE_KEYS[k] : NULL; }

static int64_t state_json(const pg_early_stop_state *s, int wait, char *out, int64_t cap)
{
    pg_sbuf b = {out, out ? cap : 0, 0};
    if (out && cap > 0) out[0] = '\0';
    pg_sbuf_printf(&b, "{\"%s\": ", STATE_KEYS[0]);
    put_num(&b, s->best, 0);
    if (s->best_epoch)
        pg_sbuf_printf(&b, ", \"%s\": %lld", STATE_KEYS[1], (long long)s->best_epoch);
    else pg_sbuf_printf(&b, ", \"%s\": null", STATE_KEYS[1]);
    if (wait) pg_sbuf_printf(&b, ", \"%s\": %lld", STATE_KEYS[2], (long long)s->wait);
    pg_sbuf_printf(&b, "}");
    return done(&b, out, cap);
}

int64_t pg_early_stop_state_json(const pg_early_stop *es, char *out, int64_t cap)
{
    pg_early_stop_state s;
    int rc = pg_early_stop_get_state(es, &s);
    return rc ? -rc : state_json(&s, 1, out, cap);
}

int64_t pg_checkpoint_state_json(const pg_checkpoint *c, char *out, int64_t cap)
{
    pg_early_stop_state s;
    int rc = pg_checkpoint_get_state(c, &s);
    return rc ? -rc : state_json(&s, 0, out, cap);
}

int pg_early_stop_state_load(pg_early_stop *es, int is_map, const pg_host_value *v)
{
    double best;
    int64_t be, w;
    int rc = pg_callback_state_parse("ag_early_stopping", is_map, v, &best, &be, &w);
    return rc || !es ? rc : pg_early_stop_set_state(es, best, be, w);
}

int pg_checkpoint_state_load(pg_checkpoint *c, int is_map, const pg_host_value *v)
{
    double best;
    int64_t be, w;
    int rc = pg_callback_state_parse("ag_model_checkpoint", is_map, v, &best, &be, &w);
    return rc || !c ? rc : pg_checkpoint_set_state(c, best, be);
}

/* ---- what a hand-written loop hands the callbacks ---- */

static int is_num(const pg_host_value *v)
{
    return v->kind == PG_HOST_NUM || v->kind == PG_HOST_INT || v->kind == PG_HOST_BOOL;
}

static const char *text_of(const pg_host_value *v) { return v->text ? v->text : "?"; }

int pg_fit_run_measures(const char *fn, const pg_host_value *has_val,
                        const pg_host_value *has_accuracy, int r_spelling, int *val, int *mask)
{
    if (!fn || !has_val || !has_accuracy || !val || !mask)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_run_measures(): NULL argument");
    const char *none = r_spelling ? "NULL" : "None";
    const pg_host_value *v = has_val, *a = has_accuracy;
    if (v->kind != PG_HOST_ABSENT && !(is_num(v) && !isnan(v->num)))
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: on_train_begin(fit): fit's has_val must be %s, got %s", fn,
                       r_spelling ? "TRUE, FALSE or NULL" : "True, False or None", text_of(v));
    if (a->kind != PG_HOST_ABSENT && !is_num(a))
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: on_train_begin(fit): fit's has_accuracy must be a whole number (the "
                       "monitor mask, -1: unknown) or %s, got %s",
                       fn, none, text_of(a));
    if (a->kind != PG_HOST_ABSENT &&
        !(a->num >= -1 && a->num <= 2147483647.0 && a->num == floor(a->num)))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: on_train_begin(fit): fit's has_accuracy must be a whole number (the "
                       "monitor mask, -1: unknown) or %s, got %s",
                       fn, none, text_of(a));
    *val = v->kind == PG_HOST_ABSENT || v->num != 0;
    *mask = a->kind == PG_HOST_ABSENT ? -1 : (int)a->num;
    return 0;
}

int pg_fit_log_values(const char *fn, const pg_host_value *v, int r_spelling, double *out)
{
    if (!fn || !v || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_log_values(): NULL argument");
    for (int k = 0; k < PG_FIT_LOG_ALL; k++) {
        if (v[k].kind != PG_HOST_ABSENT && !is_num(&v[k]))
            return pg_fail(PG_STATUS_ERR_ARG,
                           "%s: logs' \"%s\" must be a number (%s: not measured), got %s", fn,
                           pg_fit_log_name(k), r_spelling ? "NULL" : "None", text_of(&v[k]));
        out[k] = v[k].kind == PG_HOST_ABSENT ? NAN : v[k].num;
    }
    return 0;
}

/* ---- the fields the callbacks show ---- */

static pg_host_value hv(int kind, double num, const char *text)
{
    pg_host_value v = {kind, num, text};
    return v;
}

/* an epoch as a field: 0 is none */
static pg_host_value epoch_hv(int64_t e)
{
    return e ? hv(PG_HOST_INT, (double)e, NULL) : hv(PG_HOST_ABSENT, 0, NULL);
}

/* field k of names: the callback's own settings (own[0 .. n_own)), then the monitor's fields */
static const char *field(const char *const *names, int n, int k, const pg_host_value *own,
                         int n_own, int mode, int monitor, const pg_early_stop_state *s,
                         pg_host_value *out)
{
    if (k < 0 || k >= n) return NULL;
    if (out) {
        const pg_host_value common[] = {monitor < 0 ? hv(PG_HOST_ABSENT, 0, NULL)
                                                    : hv(PG_HOST_TEXT, 0, pg_fit_log_name(monitor)),
                                        hv(PG_HOST_TEXT, 0, pg_monitor_mode_name(mode)),
                                        hv(PG_HOST_NUM, s->best, NULL),
                                        epoch_hv(s->best_epoch),
                                        hv(PG_HOST_INT, (double)s->wait, NULL),
                                        epoch_hv(s->stopped_epoch)};
        *out = k < n_own ? own[k] : common[k - n_own];
    }
    return names[k];
}

const char *pg_early_stop_field(const pg_early_stop *es, int k, pg_host_value *out)
{
    static const char *const NAMES[] = {"patience",   "min_delta", "restore_best",
                                        "monitor",    "mode",      "best",
                                        "best_epoch", "wait",      "stopped_epoch"};
    pg_early_stop_params p = pg_early_stop_default_params();
    pg_early_stop_state s = {0};
    if (!es || pg_early_stop_params_get(es, &p) || pg_early_stop_get_state(es, &s)) out = NULL;
    const pg_host_value own[] = {hv(PG_HOST_INT, (double)p.patience, NULL),
                                 hv(PG_HOST_NUM, p.min_delta, NULL),
                                 hv(PG_HOST_BOOL, p.restore_best != 0, NULL)};
    return field(NAMES, 9, k, own, 3, p.mode, p.monitor, &s, out);
}

const char *pg_checkpoint_field(const pg_checkpoint *c, int k, pg_host_value *out)
{
    static const char *const NAMES[] = {"every", "save_best_only", "monitor",
                                        "mode",  "best",           "best_epoch"};
    pg_checkpoint_params p = pg_checkpoint_default_params();
    pg_early_stop_state s = {0};
    if (!c || pg_checkpoint_params_get(c, &p) || pg_checkpoint_get_state(c, &s)) out = NULL;
    const pg_host_value own[] = {hv(PG_HOST_INT, (double)p.every, NULL),
                                 hv(PG_HOST_BOOL, p.best_only != 0, NULL)};
    return field(NAMES, 6, k, own, 2, p.mode, p.monitor, &s, out);
}

/* ---- how the callbacks print ---- */

static const char *monitor_shown(int monitor)
{
    return monitor < 0 ? "auto" : pg_fit_log_name(monitor);
}

int64_t pg_early_stop_format(const pg_early_stop *es, const char *min_delta,
                             const char *restore_best, char *out, int64_t cap)
{
    pg_early_stop_params p;
    int rc = !min_delta || !restore_best
        ? pg_fail(PG_STATUS_ERR_ARG, "pg_early_stop_format(): NULL argument")
        : pg_early_stop_params_get(es, &p);
    if (rc) return -rc;
    pg_sbuf b = {out, out ? cap : 0, 0};
    pg_sbuf_printf(
        &b,
        "ag_early_stopping | patience=%lld | min_delta=%s | restore_best=%s | monitor=%s | "
        "mode=%s",
        (long long)p.patience, min_delta, restore_best, monitor_shown(p.monitor),
        pg_monitor_mode_name(p.mode));
    return done(&b, out, cap);
}

int64_t pg_checkpoint_format(const pg_checkpoint *c, const char *path, const char *yes, char *out,
                             int64_t cap)
{
    pg_checkpoint_params p;
    int rc = !path || !yes ? pg_fail(PG_STATUS_ERR_ARG, "pg_checkpoint_format(): NULL argument")
                           : pg_checkpoint_params_get(c, &p);
    if (rc) return -rc;
    pg_sbuf b = {out, out ? cap : 0, 0};
    pg_sbuf_printf(&b, "ag_model_checkpoint | path=%s | every=%lld", path, (long long)p.every);
    if (p.best_only)
        pg_sbuf_printf(&b, " | save_best_only=%s | monitor=%s | mode=%s", yes,
                       monitor_shown(p.monitor), pg_monitor_mode_name(p.mode));
    return done(&b, out, cap);
}

/* ---- a checkpoint's history, as one JSON object ---- */

int64_t pg_fit_ckpt_history_json(const pg_fit_ckpt *c, char *out, int64_t cap)
{
    if (!c) return -pg_fail(PG_STATUS_ERR_ARG, "pg_fit_ckpt_history_json(): NULL handle");
    const int64_t n = pg_fit_ckpt_epochs(c);
    double *col = malloc(sizeof(double) * (size_t)(n + 1));
    if (!col) return -pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory");
    pg_sbuf b = {out, out ? cap : 0, 0};
    if (out && cap > 0) out[0] = '\0';
    pg_sbuf_printf(&b, "{");
    for (int64_t j = 0; j < pg_fit_ckpt_columns(c); j++) {
        const char *name = pg_fit_ckpt_column_name(c, j);
        char *s = pj_quoted(name);
        if (!s) return free(col), -pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory");
        pg_sbuf_printf(&b, "%s%s: [", j ? ", " : "", s);
        free(s);
        pg_fit_ckpt_column(c, j, col);
        for (int64_t i = 0; i < n; i++) {
            if (i) pg_sbuf_printf(&b, ", ");
            put_num(&b, col[i], j == 0); /* epochs are whole */
        }
        pg_sbuf_printf(&b, "]");
    }
    free(col);
    pg_sbuf_printf(&b, ", \"stopped_epoch\": ");
    put_num(&b, pg_fit_ckpt_stopped_epoch(c), 1);
    pg_sbuf_printf(&b, ", \"best_epoch\": ");
    put_num(&b, pg_fit_ckpt_best_epoch(c), 1);
    pg_sbuf_printf(&b, "}");
    return done(&b, out, cap);
}

int64_t pg_fit_ckpt_state_json(const pg_fit_ckpt *c, char *out, int64_t cap)
{
    const int64_t hn = pg_fit_ckpt_history_json(c, NULL, 0);
    char *h = hn < 0 ? NULL : malloc((size_t)hn + 1);
    if (hn < 0) return hn;
    if (!h) return -pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory");
    pg_fit_ckpt_history_json(c, h, hn + 1);
    int32_t rng[PG_RNG_STATE_LEN];
    pg_fit_ckpt_rng_state(c, rng);
    pg_sbuf b = {out, out ? cap : 0, 0};
    if (out && cap > 0) out[0] = '\0';
    pg_sbuf_printf(&b, "{\"epoch\": %lld, \"history\": %s, \"rng_state\": [",
                   (long long)pg_fit_ckpt_epoch(c), h);
    free(h);
    for (int i = 0; i < PG_RNG_STATE_LEN; i++) pg_sbuf_printf(&b, i ? ", %d" : "%d", (int)rng[i]);
    pg_sbuf_printf(&b, "], \"callbacks\": [");
    for (int64_t i = 0; i < pg_fit_ckpt_callbacks(c); i++) {
        const char *t = pg_fit_ckpt_callback_state(c, i);
        pg_sbuf_printf(&b, "%s%s", i ? ", " : "", t ? t : "null");
    }
    pg_sbuf_printf(&b, "]}");
    return done(&b, out, cap);
}

/* ---- ag_fit(progress =) ---- */

int pg_fit_progress_parse(const char *name, const char *shown, int silent, int *mode)
{
    if (!shown || !mode)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_progress_parse(): NULL argument");
    static const char *const NAMES[] = {"none", "lines", "auto", "bar"};
    for (int i = 0; name && i < 4; i++)
        if (!strcmp(name, NAMES[i])) {
            *mode = silent ? PG_FIT_PROGRESS_NONE : i < 2 ? i : PG_FIT_PROGRESS_BAR;
            return PG_STATUS_OK;
        }
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "ag_fit: progress must be \"auto\", \"bar\" or \"none\", got %s", shown);
}
