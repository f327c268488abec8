/* .Call glue: ag_early_stopping's rule (the core's fit_stop.c). */
#include <string.h>
#include "r_util.h"

static const char *const FN = "ag_early_stopping";

/* x as one string (NULL: it is none; *shown then R's class of it, or NULL for a NULL that
 * null_ok allows) */
static const char *str_arg(SEXP x, int null_ok, const char **shown)
{
    *shown = NULL;
    if (TYPEOF(x) == STRSXP && XLENGTH(x) == 1 && STRING_ELT(x, 0) != NA_STRING)
        return Rf_translateCharUTF8(STRING_ELT(x, 0));
    if (null_ok && Rf_isNull(x)) return NULL;
    SEXP k = Rf_eval(PROTECT(Rf_lang2(Rf_install("class"), x)), R_BaseEnv); /* class(x) */
    PROTECT(k);
    const char *c = CHAR(STRING_ELT(k, 0));
    char *copy = R_alloc(strlen(c) + 1, 1); /* outlives k, to the .Call's end */
    *shown = strcpy(copy, c);
    UNPROTECT(2);
    return NULL;
}

/* the mode and monitor arguments as the core's codes (monitor NULL: -1), by the core's rule */
static void monitor_args(const char *fn, SEXP mode, SEXP monitor, int *mode_code, int *log)
{
    const char *ms, *ns, *m = str_arg(mode, 0, &ms), *n = str_arg(monitor, 1, &ns);
    r_check(pg_monitor_args(fn, m, ms, n, ns, 1, mode_code, log));
}

/* a count for the core: one finite number in int64 range, else -1 (the core refuses it) */
static int64_t count_arg(SEXP x)
{
    const double d = (Rf_isNumeric(x) || Rf_isLogical(x)) && XLENGTH(x) == 1 ? Rf_asReal(x) : -1;
    return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : -1;
}

SEXP R_pg_early_stop_new(SEXP patience, SEXP min_delta, SEXP restore_best, SEXP mode, SEXP monitor)
{
    pg_early_stop_params p = pg_early_stop_default_params();
    p.patience = count_arg(patience);
    p.min_delta = r_num(min_delta, "ag_early_stopping: min_delta");
    p.restore_best = Rf_asLogical(restore_best) == 1;
    monitor_args(FN, mode, monitor, &p.mode, &p.monitor);
    return r_wrap(pg_early_stop_new(&p), R_EARLY_STOP);
}

SEXP R_pg_early_stop_begin(SEXP h, SEXP has_val, SEXP has_accuracy)
{
    r_check(pg_early_stop_begin(r_get(h, R_EARLY_STOP), Rf_asLogical(has_val) == 1,
                                Rf_asInteger(has_accuracy))); /* the run's mask, -1 unknown */
    return R_NilValue;
}

/* x as the core's host value: NULL absent; one logical (NA: NaN), integer or double without a
 * class a flag or number; one string text; anything else other. The text (R's display, show(x):
 * .arg_show; NULL: none) for the kinds the core refuses, and for every kind when always is set. */
static void host_of(SEXP x, SEXP show, int always, pg_host_value *v)
{
    memset(v, 0, sizeof *v);
    const int one = !Rf_isNull(x) && XLENGTH(x) == 1 && !OBJECT(x);
    if (Rf_isNull(x)) v->kind = PG_HOST_ABSENT;
    else if (one && TYPEOF(x) == LGLSXP)
        v->kind = PG_HOST_BOOL, v->num = LOGICAL(x)[0] == NA_LOGICAL ? R_NaN : LOGICAL(x)[0] != 0;
    else if (one && (TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP))
        v->kind = TYPEOF(x) == INTSXP ? PG_HOST_INT : PG_HOST_NUM, v->num = Rf_asReal(x);
    else v->kind = one && TYPEOF(x) == STRSXP ? PG_HOST_TEXT : PG_HOST_OTHER;
    if (!Rf_isNull(show) && (always || v->kind == PG_HOST_TEXT || v->kind == PG_HOST_OTHER)) {
        SEXP q = PROTECT(Rf_lang2(Rf_install("quote"), x));
        SEXP t = PROTECT(Rf_eval(PROTECT(Rf_lang2(show, q)), R_GlobalEnv));
        const char *c = Rf_isString(t) && XLENGTH(t) ? Rf_translateCharUTF8(STRING_ELT(t, 0)) : "?";
        v->text = strcpy(R_alloc(strlen(c) + 1, 1), c); /* to the .Call's end */
        UNPROTECT(3);
    }
}

/* logs: the epoch's named list, read by the core's names and rule into v (NaN where absent;
 * fn's refusal naming the key for a value that is no number, shown by show) */
static void log_values(const char *fn, SEXP logs, SEXP show, double *v)
{
    SEXP nm = Rf_getAttrib(logs, R_NamesSymbol);
    pg_host_value h[PG_FIT_LOG_ALL];
    for (int k = 0; k < PG_FIT_LOG_ALL; k++) { /* ag_fit(metrics =)'s columns too */
        SEXP e = R_NilValue;
        for (R_xlen_t i = 0; TYPEOF(logs) == VECSXP && !Rf_isNull(nm) && i < XLENGTH(logs); i++)
            if (strcmp(CHAR(STRING_ELT(nm, i)), pg_fit_log_name(k)) == 0) {
                e = VECTOR_ELT(logs, i);
                break;
            }
        host_of(e, show, 0, &h[k]);
    }
    r_check(pg_fit_log_values(fn, h, 1, v));
}

/* a run object's has_val / has_accuracy by the core's rule (fn's refusal, shown by show):
 * list(has_val, the monitor mask) for the callbacks' begin */
SEXP R_pg_fit_run_measures(SEXP fn, SEXP has_val, SEXP has_accuracy, SEXP show)
{
    pg_host_value v, a;
    host_of(has_val, show, 1, &v);
    host_of(has_accuracy, show, 1, &a);
    int val, mask;
    r_check(pg_fit_run_measures(Rf_translateCharUTF8(STRING_ELT(fn, 0)), &v, &a, 1, &val, &mask));
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
    SET_VECTOR_ELT(out, 0, Rf_ScalarLogical(val));
    SET_VECTOR_ELT(out, 1, Rf_ScalarInteger(mask));
    UNPROTECT(1);
    return out;
}

/* the action code (enum pg_early_stop_action) of the epoch's logs */
SEXP R_pg_early_stop_update(SEXP h, SEXP epoch, SEXP logs, SEXP show)
{
    pg_early_stop *es = r_get(h, R_EARLY_STOP);
    double v[PG_FIT_LOG_ALL];
    log_values(FN, logs, show, v);
    int action;
    r_check(pg_early_stop_update(es, count_arg(epoch), v, &action));
    return Rf_ScalarInteger(action);
}

/* TRUE when the host puts back the best epoch's weights */
SEXP R_pg_early_stop_end(SEXP h, SEXP last_epoch)
{
    int restore;
    r_check(pg_early_stop_end(r_get(h, R_EARLY_STOP), count_arg(last_epoch), &restore));
    return Rf_ScalarLogical(restore);
}

/* ---- ag_model_checkpoint's rule ---- */

SEXP R_pg_checkpoint_new(SEXP every, SEXP best_only, SEXP mode, SEXP monitor)
{
    pg_checkpoint_params p = pg_checkpoint_default_params();
    p.every = count_arg(every);
    p.best_only = Rf_asLogical(best_only) == 1;
    monitor_args("ag_model_checkpoint", mode, monitor, &p.mode, &p.monitor);
    return r_wrap(pg_checkpoint_new(&p), R_CHECKPOINT);
}

SEXP R_pg_checkpoint_begin(SEXP h, SEXP nepoch, SEXP has_val, SEXP has_accuracy)
{
    r_check(pg_checkpoint_begin(r_get(h, R_CHECKPOINT), count_arg(nepoch),
                                Rf_asLogical(has_val) == 1, Rf_asInteger(has_accuracy)));
    return R_NilValue;
}

/* TRUE when this epoch writes the checkpoint */
SEXP R_pg_checkpoint_update(SEXP h, SEXP epoch, SEXP logs, SEXP show)
{
    double v[PG_FIT_LOG_ALL];
    log_values("ag_model_checkpoint", logs, show, v);
    int save;
    r_check(pg_checkpoint_update(r_get(h, R_CHECKPOINT), count_arg(epoch), v, &save));
    return Rf_ScalarLogical(save);
}

/* ag_model_checkpoint's path rule (fit_ckpt_path.c): with epoch NULL the check when the callback
 * is made (NULL, or a classed error), else epoch's file name. path: one string, already
 * path.expand()ed by R (R's idiom; Python leaves "~" alone, as open() does). */
SEXP R_pg_checkpoint_path(SEXP path, SEXP epoch)
{
    if (!Rf_isString(path) || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
        r_stopf(PG_STATUS_ERR_ARG, "ag_model_checkpoint: path must be a single file name");
    const char *p = Rf_translateChar(STRING_ELT(path, 0));
    if (Rf_isNull(epoch)) {
        r_check(pg_checkpoint_path_check(p));
        return R_NilValue;
    }
    const int64_t e = count_arg(epoch), n = pg_checkpoint_path(p, e, NULL, 0);
    if (n < 0) r_check((int)-n);
    char *buf = R_alloc((size_t)n + 1, 1);
    pg_checkpoint_path(p, e, buf, n + 1);
    return Rf_mkString(buf);
}

/* the history's per-epoch columns after "epoch", in the core's log order (R's .HIST_KEYS) */
SEXP R_pg_fit_log_names(void)
{
    SEXP out = PROTECT(Rf_allocVector(STRSXP, PG_FIT_LOG_COUNT));
    for (int i = 0; i < PG_FIT_LOG_COUNT; i++)
        SET_STRING_ELT(out, i, Rf_mkChar(pg_fit_log_name(i)));
    UNPROTECT(1);
    return out;
}

/* print.ag_history's text: the core's History table (pg_fit_history_format). logs: the
 * per-epoch values in the core's log order, one column per log (epochs x PG_FIT_LOG_COUNT). */
SEXP R_pg_fit_history_format(SEXP name, SEXP epoch, SEXP logs, SEXP stopped, SEXP best, SEXP pm,
                             SEXP metrics, SEXP values)
{
    R_xlen_t n = XLENGTH(epoch), nm_ = XLENGTH(metrics);
    if (TYPEOF(epoch) != REALSXP || TYPEOF(logs) != REALSXP ||
        XLENGTH(logs) != n * PG_FIT_LOG_COUNT)
        r_stopf(PG_STATUS_ERR_ARG,
                "print.ag_history: the history's columns are not %d numeric "
                "vectors of one length per epoch",
                PG_FIT_LOG_COUNT + 1);
    if (TYPEOF(metrics) != STRSXP || TYPEOF(values) != REALSXP || XLENGTH(values) != nm_ * n)
        r_stopf(PG_STATUS_ERR_ARG,
                "print.ag_history: the metric columns are not numeric vectors "
                "of one length per epoch");
    const char *nm = Rf_isNull(name) ? NULL : CHAR(STRING_ELT(name, 0));
    const char *p = Rf_translateCharUTF8(STRING_ELT(pm, 0));
    const char **mk = (const char **)R_alloc((size_t)nm_ + 1, sizeof(char *));
    for (R_xlen_t i = 0; i < nm_; i++) mk[i] = Rf_translateCharUTF8(STRING_ELT(metrics, i));
    /* NULL / NA / not a number: none */
    double st = Rf_length(stopped) == 1 ? Rf_asReal(stopped) : NA_REAL;
    double be = Rf_length(best) == 1 ? Rf_asReal(best) : NA_REAL;
    int64_t need = pg_fit_history_text(nm, REAL(epoch), REAL(logs), n, st, be, p, nm_, mk,
                                       REAL(values), NULL, 0);
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    pg_fit_history_text(nm, REAL(epoch), REAL(logs), n, st, be, p, nm_, mk, REAL(values), buf,
                        need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}

/* ag_fit's loss by name: its code in the core's table (an unknown name: the core's error) */
SEXP R_pg_fit_loss_parse(SEXP name)
{
    int code = -1;
    r_check(pg_fit_loss_parse(Rf_translateCharUTF8(STRING_ELT(name, 0)), &code));
    return Rf_ScalarInteger(code);
}

/* c(classify, per_datapoint) of the run's loss (code -1: the user's function) as integers:
 * classify a pg_fit_classify code; a built-in loss that needs targets without them: the core's
 * error */
SEXP R_pg_fit_loss_rules(SEXP code, SEXP has_y)
{
    int cl = 0, pd = 0;
    r_check(pg_fit_loss_rules(Rf_asInteger(code), Rf_asLogical(has_y) == 1, &cl, &pd));
    SEXP out = Rf_allocVector(INTSXP, 2);
    INTEGER(out)[0] = cl;
    INTEGER(out)[1] = pd;
    return out;
}

/* ag_fit's optimizer name (NULL: no string; shown: how R prints the value): its kind */
SEXP R_pg_fit_optim_parse(SEXP name, SEXP shown)
{
    int kind = -1;
    const char *n = Rf_isNull(name) ? NULL : Rf_translateCharUTF8(STRING_ELT(name, 0));
    r_check(pg_fit_optim_parse(n, Rf_translateCharUTF8(STRING_ELT(shown, 0)), &kind));
    return Rf_ScalarInteger(kind);
}

/* the loss `code` of out against y (NULL: none), a new ag_tensor */
SEXP R_pg_fit_loss(SEXP code, SEXP out, SEXP y)
{
    pg_tensor *o = r_get(r_handle(out), R_TENSOR);
    pg_tensor *t = Rf_isNull(y) ? NULL : r_get(r_handle(y), R_TENSOR);
    return r_wrap_tensor(pg_fit_loss(Rf_asInteger(code), o, t));
}

/* a core text measured, then written (R_alloc'd) */
static SEXP core_text(int64_t need, int64_t (*write)(void *, char *, int64_t), void *ctx)
{
    if (need < 0) r_fail();
    char *buf = R_alloc((size_t)need + 1, 1);
    write(ctx, buf, need + 1);
    return Rf_ScalarString(Rf_mkCharCE(buf, CE_UTF8));
}

typedef struct {
    const double *logs, *last;
    int64_t epoch, nepoch;
    double loss, acc;
} line_ctx;

static int64_t epoch_line(void *c, char *buf, int64_t cap)
{
    line_ctx *x = c;
    return pg_fit_epoch_line(x->logs, x->epoch, x->nepoch, buf, cap);
}

static int64_t status_line(void *c, char *buf, int64_t cap)
{
    line_ctx *x = c;
    return pg_fit_status_line(x->loss, x->acc, x->last, buf, cap);
}

/* the line printed after an epoch (pg_fit_epoch_line) from its logs list */
SEXP R_pg_fit_epoch_line(SEXP logs, SEXP epoch, SEXP nepoch)
{
    double v[PG_FIT_LOG_ALL];
    log_values("ag_fit", logs, R_NilValue, v); /* ag_fit's own: numbers */
    line_ctx x = {v, NULL, count_arg(epoch), count_arg(nepoch), 0, 0};
    return core_text(epoch_line(&x, NULL, 0), epoch_line, &x);
}

/* the bar's status (pg_fit_status_line): running c(loss, accuracy), the last epoch's logs list
 * or NULL */
SEXP R_pg_fit_status_line(SEXP running, SEXP last)
{
    double v[PG_FIT_LOG_ALL];
    if (!Rf_isNull(last)) log_values("ag_fit", last, R_NilValue, v);
    if (TYPEOF(running) != REALSXP || XLENGTH(running) != 2)
        Rf_error("internal: bad running values for the status line");
    line_ctx x = {NULL, Rf_isNull(last) ? NULL : v, 0, 0, REAL(running)[0], REAL(running)[1]};
    return core_text(status_line(&x, NULL, 0), status_line, &x);
}

/* a built-in callback (ag_early_stopping when early_stop, else ag_model_checkpoint) for the
 * core's state and print texts (fit_cb.c) */
typedef struct {
    pg_early_stop *es;
    pg_checkpoint *ck;
    const char *a, *b;
} cb_ctx;

static cb_ctx cb_of(SEXP h, SEXP early_stop)
{
    cb_ctx x = {NULL, NULL, NULL, NULL};
    if (Rf_asLogical(early_stop) == 1) x.es = Rf_isNull(h) ? NULL : r_get(h, R_EARLY_STOP);
    else x.ck = Rf_isNull(h) ? NULL : r_get(h, R_CHECKPOINT);
    return x;
}

static int64_t cb_json(void *c, char *buf, int64_t cap)
{
    cb_ctx *x = c;
    return x->es ? pg_early_stop_state_json(x->es, buf, cap)
                 : pg_checkpoint_state_json(x->ck, buf, cap);
}

/* vals NULL: the callback's checkpoint state as JSON text; else a state (is_map; vals: three
 * .st_val pairs best, best_epoch, wait) checked by the core (h NULL: only checked) and set */
SEXP R_pg_callback_state(SEXP h, SEXP early_stop, SEXP is_map, SEXP vals)
{
    cb_ctx x = cb_of(h, early_stop);
    if (Rf_isNull(vals)) return core_text(cb_json(&x, NULL, 0), cb_json, &x);
    if (TYPEOF(vals) != VECSXP || XLENGTH(vals) != 3)
        Rf_error("internal: bad callback state for the core");
    pg_host_value v[3];
    for (int k = 0; k < 3; k++) r_host_value(VECTOR_ELT(vals, k), &v[k]);
    const int m = Rf_asLogical(is_map) == TRUE;
    r_check(Rf_asLogical(early_stop) == 1 ? pg_early_stop_state_load(x.es, m, v)
                                          : pg_checkpoint_state_load(x.ck, m, v));
    return R_NilValue;
}

/* the callback's fields, named as the core's table (pg_early_stop_field / pg_checkpoint_field):
 * INT as integer, NUM real, BOOL logical, TEXT a string, ABSENT NULL */
SEXP R_pg_callback_info(SEXP h, SEXP early_stop)
{
    cb_ctx x = cb_of(h, early_stop);
    int n = 0;
    while (x.es ? pg_early_stop_field(NULL, n, NULL) : pg_checkpoint_field(NULL, n, NULL)) n++;
    const char **names = (const char **)R_alloc((size_t)n, sizeof(char *));
    pg_host_value v[16];
    for (int k = 0; k < n && k < 16; k++)
        names[k] = x.es ? pg_early_stop_field(x.es, k, &v[k]) : pg_checkpoint_field(x.ck, k, &v[k]);
    SEXP out = PROTECT(r_named_list(names, n));
    for (int k = 0; k < n && k < 16; k++)
        SET_VECTOR_ELT(out, k,
                       v[k].kind == PG_HOST_INT        ? Rf_ScalarInteger((int)v[k].num)
                           : v[k].kind == PG_HOST_NUM  ? Rf_ScalarReal(v[k].num)
                           : v[k].kind == PG_HOST_BOOL ? Rf_ScalarLogical(v[k].num != 0)
                           : v[k].kind == PG_HOST_TEXT ? Rf_mkString(v[k].text)
                                                       : R_NilValue);
    UNPROTECT(1);
    return out;
}

/* the state's keys in the order R_pg_callback_state takes its values (the core's table) */
SEXP R_pg_callback_state_keys(void) { return r_name_table(pg_callback_state_key); }

static int64_t cb_format(void *c, char *buf, int64_t cap)
{
    cb_ctx *x = c;
    return x->es ? pg_early_stop_format(x->es, x->a, x->b, buf, cap)
                 : pg_checkpoint_format(x->ck, x->a, x->b, buf, cap);
}

/* how the callback prints: a, b its early-stopping min_delta and restore_best, or its
 * checkpoint path and "TRUE", in R's spelling */
SEXP R_pg_callback_format(SEXP h, SEXP early_stop, SEXP a, SEXP b)
{
    cb_ctx x = cb_of(h, early_stop);
    x.a = Rf_translateCharUTF8(STRING_ELT(a, 0));
    x.b = Rf_translateCharUTF8(STRING_ELT(b, 0));
    return core_text(cb_format(&x, NULL, 0), cb_format, &x);
}

/* ag_fit(progress =) by the core's rule: "none", "lines" or "bar" (where R can redraw one) */
SEXP R_pg_fit_progress_parse(SEXP progress, SEXP shown, SEXP silent)
{
    const int one =
        Rf_isString(progress) && XLENGTH(progress) == 1 && STRING_ELT(progress, 0) != NA_STRING;
    int m;
    r_check(pg_fit_progress_parse(one ? Rf_translateCharUTF8(STRING_ELT(progress, 0)) : NULL,
                                  Rf_translateCharUTF8(STRING_ELT(shown, 0)),
                                  Rf_asLogical(silent) == 1, &m));
    return Rf_mkString(m == PG_FIT_PROGRESS_BAR         ? "bar"
                           : m == PG_FIT_PROGRESS_LINES ? "lines"
                                                        : "none");
}
