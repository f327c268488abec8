/* ag_early_stopping's rule (keras' EarlyStopping semantics), once for R and Python. */
#include "pg.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const OP = "ag_early_stopping";
static const char *const LOG_NAMES[PG_FIT_LOG_COUNT] = {
    "loss",         "loss_unc",         "accuracy", "accuracy_unc", "val_loss", "val_loss_unc",
    "val_accuracy", "val_accuracy_unc", "lr",       "time_train",   "time_val"};
static const char *const MODE_NAMES[PG_MONITOR_MODE_COUNT] = {"auto", "min", "max"};

struct pg_early_stop {
    pg_early_stop_params p;
    pg_early_stop_state s;
};

_Static_assert(PG_FIT_LOG_ALL == PG_FIT_LOG_COUNT + 2 * PG_METRIC_R2, "metric log layout");

const char *pg_fit_log_name(int log)
{
    static const char *const VAL[PG_METRIC_R2 + 1] = {"",
                                                      "val_accuracy",
                                                      "val_binary_accuracy",
                                                      "val_auc",
                                                      "val_precision",
                                                      "val_precision_macro",
                                                      "val_precision_micro",
                                                      "val_recall",
                                                      "val_recall_macro",
                                                      "val_recall_micro",
                                                      "val_f1",
                                                      "val_f1_macro",
                                                      "val_f1_micro",
                                                      "",
                                                      "val_mae",
                                                      "val_mse",
                                                      "val_rmse",
                                                      "val_r2"};
    if (log >= PG_FIT_LOG_COUNT && log < PG_FIT_LOG_ALL) { /* a metric column */
        const int c = (log - PG_FIT_LOG_COUNT) / 2 + 1;
        return (log - PG_FIT_LOG_COUNT) % 2 ? VAL[c] : pg_metric_name(c);
    }
    return log >= 0 && log < PG_FIT_LOG_COUNT ? LOG_NAMES[log] : NULL;
}

const char *pg_monitor_mode_name(int mode)
{
    return mode >= 0 && mode < PG_MONITOR_MODE_COUNT ? MODE_NAMES[mode] : NULL;
}

pg_early_stop_params pg_early_stop_default_params(void)
{
    pg_early_stop_params p = {5, 0.0, 1, PG_MONITOR_MODE_AUTO, -1};
    return p;
}

/* "a", "b" or "c" into buf, for messages listing the accepted names */
static const char *name_list(char *buf, size_t n, const char *const *names, int count)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < count && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s\"%s\"",
                               i == 0 ? "" : (i == count - 1 ? " or " : ", "), names[i]);
    return buf;
}

static int parse(const char *fn, const char *arg, const char *name, const char *const *names,
                 int count, int *out)
{
    char list[256];
    if (!fn || !arg || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg parse: NULL argument");
    for (int i = 0; name && i < count; i++)
        if (strcmp(name, names[i]) == 0) return (*out = i, PG_STATUS_OK);
    return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must be %s, got %s%s%s", fn, arg,
                   name_list(list, sizeof list, names, count), name ? "\"" : "",
                   name ? name : "nothing", name ? "\"" : "");
}

int pg_fit_log_parse(const char *fn, const char *arg, const char *name, int *log)
{
    /* metric columns; "accuracy" / "val_accuracy" stay the History's own */
    for (int m = PG_FIT_LOG_COUNT + 2; name && log && m < PG_FIT_LOG_ALL; m++)
        if (*pg_fit_log_name(m) && !strcmp(name, pg_fit_log_name(m))) return (*log = m, 0);
    if (!name || !log || !fn || !arg) return parse(fn, arg, name, LOG_NAMES, PG_FIT_LOG_COUNT, log);
    for (int i = 0; i < PG_FIT_LOG_COUNT; i++)
        if (!strcmp(name, LOG_NAMES[i])) return (*log = i, PG_STATUS_OK);
    char list[256];
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: %s must be %s (or an ag_fit(metrics =) column such as \"auc\" or "
                   "\"val_f1\"), got \"%s\"",
                   fn, arg, name_list(list, sizeof list, LOG_NAMES, PG_FIT_LOG_COUNT), name);
}

int pg_monitor_mode_parse(const char *fn, const char *name, int *mode)
{
    return parse(fn, "mode", name, MODE_NAMES, PG_MONITOR_MODE_COUNT, mode);
}

int pg_monitor_arg_fail(const char *fn, const char *arg, const char *shown, int r_spelling)
{
    const int mon = arg && !strcmp(arg, "monitor");
    const char *q = r_spelling ? "\"" : "'";
    return pg_fail(PG_STATUS_ERR_ARG, "%s: %s must be %sa single string such as %s%s%s, got %s",
                   fn ? fn : "?", arg ? arg : "?",
                   !mon             ? ""
                       : r_spelling ? "NULL or "
                                    : "None or ",
                   q, mon ? "val_loss" : "max", q, shown ? shown : "?");
}

int pg_monitor_args(const char *fn, const char *mode, const char *mode_shown, const char *monitor,
                    const char *monitor_shown, int r_spelling, int *mode_code, int *log)
{
    if (!mode_code || !log) return pg_fail(PG_STATUS_ERR_ARG, "pg_monitor_args(): NULL argument");
    if (!mode) return pg_monitor_arg_fail(fn, "mode", mode_shown, r_spelling);
    int rc = pg_monitor_mode_parse(fn, mode, mode_code);
    *log = -1;
    if (rc || (!monitor && !monitor_shown)) return rc;
    return monitor ? pg_fit_log_parse(fn, "monitor", monitor, log)
                   : pg_monitor_arg_fail(fn, "monitor", monitor_shown, r_spelling);
}

static int check_params(const pg_early_stop_params *p)
{
    if (!p) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL parameters", OP);
    if (p->patience < 1)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: patience must be >= 1, got %lld", OP,
                       (long long)p->patience);
    if (!(p->min_delta >= 0) || isinf(p->min_delta))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: min_delta must be a finite number >= 0, got %s",
                       OP, pg_num(p->min_delta));
    if (p->mode < 0 || p->mode >= PG_MONITOR_MODE_COUNT)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: mode code %d is not a monitor mode", OP, p->mode);
    if (p->monitor < -1 || p->monitor >= PG_FIT_LOG_ALL ||
        (p->monitor >= 0 && !*pg_fit_log_name(p->monitor)))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: monitor code %d is not a logged value", OP,
                       p->monitor);
    return PG_STATUS_OK;
}

/* accuracy values improve upwards; their uncertainties, losses, lr and times downwards */
static int is_accuracy(int log)
{
    if (log >= PG_FIT_LOG_COUNT) return pg_metric_mode(pg_fit_log_name(log)) > 0;
    return log == PG_FIT_LOG_ACCURACY || log == PG_FIT_LOG_VAL_ACCURACY;
}

/* a fit's start; the direction is known before any fit when the mode is max or the monitor is
 * named (auto: accuracy-like names maximize), so best reads that direction's start */
static void reset(pg_early_stop *es)
{
    es->s.best_epoch = es->s.wait = es->s.stopped_epoch = 0;
    es->s.monitor = -1;
    es->s.maximize = es->p.mode == PG_MONITOR_MODE_MAX ||
        (es->p.mode == PG_MONITOR_MODE_AUTO && es->p.monitor >= 0 && is_accuracy(es->p.monitor));
    es->s.best = es->s.maximize ? -INFINITY : INFINITY;
}

pg_early_stop *pg_early_stop_new(const pg_early_stop_params *params)
{
    if (check_params(params)) return NULL;
    pg_early_stop *es = calloc(1, sizeof *es);
    if (!es) return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", OP);
    es->p = *params;
    es->p.restore_best = params->restore_best != 0;
    reset(es);
    return es;
}

void pg_early_stop_free(pg_early_stop *es) { free(es); }

int pg_early_stop_params_get(const pg_early_stop *es, pg_early_stop_params *out)
{
    if (!es || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", OP);
    *out = es->p;
    return PG_STATUS_OK;
}

/* a new fit for the monitor (errors name fn) */
static int monitor_begin(pg_early_stop *es, const char *fn, int has_val, int has_accuracy)
{
    int m = es->p.monitor;
    if (m < 0) m = has_val ? PG_FIT_LOG_VAL_LOSS : PG_FIT_LOG_LOSS;
    const int metric = m >= PG_FIT_LOG_COUNT ? (m - PG_FIT_LOG_COUNT) / 2 + 1 : 0;
    const int val = (m >= PG_FIT_LOG_VAL_LOSS && m <= PG_FIT_LOG_VAL_ACCURACY_UNC) ||
        (metric && (m - PG_FIT_LOG_COUNT) % 2);
    const int acc = m == PG_FIT_LOG_ACCURACY || m == PG_FIT_LOG_ACCURACY_UNC ||
        m == PG_FIT_LOG_VAL_ACCURACY || m == PG_FIT_LOG_VAL_ACCURACY_UNC;
    if (metric && has_accuracy != -1 && !(has_accuracy & (1 << metric)))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: monitor \"%s\" is measured only when ag_fit's metrics names \"%s\"", fn,
                       pg_fit_log_name(m), pg_metric_name(metric));
    if (val && !has_val)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: monitor \"%s\" is measured only with validation data (ag_fit's "
                       "val_split > 0 or validation_data)",
                       fn, pg_fit_log_name(m));
    if (acc && !(has_accuracy & 1))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: monitor \"%s\" is measured only when ag_fit counts accuracy (loss "
                       "\"cross_entropy\", \"binary_cross_entropy\" or \"bce_with_logits\")",
                       fn, LOG_NAMES[m]);
    reset(es);
    es->s.monitor = m;
    es->s.maximize =
        es->p.mode == PG_MONITOR_MODE_MAX || (es->p.mode == PG_MONITOR_MODE_AUTO && is_accuracy(m));
    es->s.best = es->s.maximize ? -INFINITY : INFINITY;
    return PG_STATUS_OK;
}

int pg_early_stop_begin(pg_early_stop *es, int has_val, int has_accuracy)
{
    if (!es) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", OP);
    return monitor_begin(es, OP, has_val, has_accuracy);
}

int pg_early_stop_update(pg_early_stop *es, int64_t epoch, const double *logs, int *action)
{
    if (!es || !logs || !action) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL argument", OP);
    if (es->s.monitor < 0)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: an epoch ended before the fit began", OP);
    const double v = logs[es->s.monitor], d = es->p.min_delta;
    /* NaN compares false: never an improvement */
    const int better = es->s.maximize ? v - d > es->s.best : v + d < es->s.best;
    if (better) {
        es->s.best = v;
        es->s.best_epoch = epoch;
        es->s.wait = 0;
        *action = es->p.restore_best ? PG_EARLY_STOP_SNAPSHOT : PG_EARLY_STOP_IMPROVED;
    } else if (++es->s.wait >= es->p.patience) {
        es->s.stopped_epoch = epoch;
        *action = PG_EARLY_STOP_STOP;
    } else {
        *action = PG_EARLY_STOP_CONTINUE;
    }
    return PG_STATUS_OK;
}

int pg_early_stop_get_state(const pg_early_stop *es, pg_early_stop_state *out)
{
    if (!es || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", OP);
    *out = es->s;
    return PG_STATUS_OK;
}

int pg_early_stop_set_state(pg_early_stop *es, double best, int64_t best_epoch, int64_t wait)
{
    if (!es) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", OP);
    if (isnan(best) || best_epoch < 0 || wait < 0)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: the checkpoint's callback state is not usable (best, best_epoch, "
                       "wait = %s, %lld, %lld)",
                       OP, pg_num(best), (long long)best_epoch, (long long)wait);
    /* no best yet: the direction's start, whatever the file wrote for it */
    es->s.best = best_epoch ? best : (es->s.maximize ? -INFINITY : INFINITY);
    es->s.best_epoch = best_epoch;
    es->s.wait = wait;
    return PG_STATUS_OK;
}

int pg_early_stop_end(const pg_early_stop *es, int64_t last_epoch, int *restore)
{
    if (!es || !restore) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL argument", OP);
    *restore = es->p.restore_best && es->s.best_epoch > 0 && es->s.best_epoch != last_epoch;
    return PG_STATUS_OK;
}

/* ---- ag_model_checkpoint's rule: a monitor that never stops, and the epochs it looks at ---- */

static const char *const CK = "ag_model_checkpoint";

struct pg_checkpoint {
    pg_checkpoint_params p;
    pg_early_stop m; /* the monitor (its patience never runs out) */
    int64_t nepoch;
};

pg_checkpoint_params pg_checkpoint_default_params(void)
{
    pg_checkpoint_params p = {1, 0, PG_MONITOR_MODE_AUTO, -1};
    return p;
}

pg_checkpoint *pg_checkpoint_new(const pg_checkpoint_params *params)
{
    if (!params) return pg_fail_null(PG_STATUS_ERR_ARG, "%s: NULL parameters", CK);
    if (params->every < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: every must be an integer >= 1, got %lld", CK,
                            (long long)params->every);
    pg_early_stop_params m = {INT64_MAX, 0.0, 0, params->mode, params->monitor};
    if (check_params(&m)) return NULL;
    pg_checkpoint *c = calloc(1, sizeof *c);
    if (!c) return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", CK);
    c->p = *params;
    c->p.best_only = params->best_only != 0;
    c->m.p = m;
    reset(&c->m);
    return c;
}

void pg_checkpoint_free(pg_checkpoint *c) { free(c); }

int pg_checkpoint_params_get(const pg_checkpoint *c, pg_checkpoint_params *out)
{
    if (!c || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", CK);
    *out = c->p;
    return PG_STATUS_OK;
}

int pg_checkpoint_begin(pg_checkpoint *c, int64_t nepoch, int has_val, int has_accuracy)
{
    if (!c) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", CK);
    c->nepoch = nepoch;
    /* without best_only the monitor is not used: nothing the fit lacks is asked for */
    return c->p.best_only ? monitor_begin(&c->m, CK, has_val, has_accuracy)
                          : monitor_begin(&c->m, CK, 1, -1);
}

int pg_checkpoint_update(pg_checkpoint *c, int64_t epoch, const double *logs, int *save)
{
    if (!c || !logs || !save) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL argument", CK);
    *save = epoch % c->p.every == 0 || epoch == c->nepoch;
    if (!*save || !c->p.best_only) return PG_STATUS_OK;
    int act;
    if (pg_early_stop_update(&c->m, epoch, logs, &act)) return -1;
    *save = act == PG_EARLY_STOP_IMPROVED; /* its monitor has no restore_best */
    return PG_STATUS_OK;
}

int pg_checkpoint_get_state(const pg_checkpoint *c, pg_early_stop_state *out)
{
    if (!c) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", CK);
    return pg_early_stop_get_state(&c->m, out);
}

int pg_checkpoint_set_state(pg_checkpoint *c, double best, int64_t best_epoch)
{
    if (!c) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL handle", CK);
    if (isnan(best) || best_epoch < 0)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: the checkpoint's callback state is not usable (best, best_epoch = "
                       "%s, %lld)",
                       CK, pg_num(best), (long long)best_epoch);
    return pg_early_stop_set_state(&c->m, best, best_epoch, 0);
}

/* a checkpoint value as the refusal shows it: JSON's null, a number to the last bit, a string
 * quoted, else the host's display */
static const char *shown(char *buf, size_t n, const pg_host_value *v)
{
    if (v->kind == PG_HOST_ABSENT) snprintf(buf, n, "null");
    else if ((v->kind == PG_HOST_NUM || v->kind == PG_HOST_INT) && isnan(v->num))
        snprintf(buf, n, "NaN"); /* as R shows it */
    else if (v->kind == PG_HOST_NUM || v->kind == PG_HOST_INT) {
        for (int d = 15; d <= 17; d++) {
            snprintf(buf, n, "%.*g", d, v->num);
            if (strtod(buf, NULL) == v->num) break;
        }
    } else if (v->kind == PG_HOST_TEXT) snprintf(buf, n, "\"%.40s\"", v->text ? v->text : "");
    else snprintf(buf, n, "%.40s", v->text ? v->text : "?");
    return buf;
}

int pg_callback_state_parse(const char *fn, int is_map, const pg_host_value *v, double *best,
                            int64_t *best_epoch, int64_t *wait)
{
    if (!v || !best || !best_epoch || !wait)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_callback_state_parse(): NULL argument");
    int ok = is_map;
    for (int k = 0; k < 3 && ok; k++) {
        const int num = v[k].kind == PG_HOST_NUM || v[k].kind == PG_HOST_INT;
        ok = v[k].kind == PG_HOST_ABSENT || (num && !isnan(v[k].num));
        if (k && num) /* a count: whole, in [0, 2^62) */
            ok = ok && v[k].num >= 0 && v[k].num < 4611686018427387904.0 &&
                v[k].num == floor(v[k].num);
    }
    if (!ok) {
        char a[64] = "?", b[64] = "?", c[64] = "?";
        if (is_map) shown(a, sizeof a, &v[0]), shown(b, sizeof b, &v[1]), shown(c, sizeof c, &v[2]);
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: the checkpoint's callback state is not usable (best, best_epoch, "
                       "wait = %s, %s, %s)",
                       fn ? fn : "ag_fit", a, b, c);
    }
    *best = v[0].kind == PG_HOST_ABSENT ? INFINITY : v[0].num;
    *best_epoch = v[1].kind == PG_HOST_ABSENT ? 0 : (int64_t)v[1].num;
    *wait = v[2].kind == PG_HOST_ABSENT ? 0 : (int64_t)v[2].num;
    return 0;
}
