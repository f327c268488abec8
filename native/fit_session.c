/* ag_fit's training session (pg_api_train_session.h): the epoch / batch / validation loop of
 * ggml_opt_fit as a state machine, so R and Python run the same loop and only answer the events
 * that call user code. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "pg.h"

static const char *const OP = "ag_fit";

/* metric code c's log (pg_fit_log_name's numbering): its column, or val_'s */
static int metric_log(int code, int val) { return PG_FIT_LOG_COUNT + 2 * (code - 1) + val; }
static const char *const EVENT_NAMES[PG_SESSION_EVENT_COUNT] = {
    "done",    "epoch_begin", "train_batch", "batch_end", "train_end",  "val_begin", "val_batch",
    "val_end", "epoch_end",   "probe",       "record",    "record_val", "notice"};

typedef struct {
    int64_t width;
    pg_graph *g;
    pg_tensor *out;
} compiled;

struct pg_session {
    pg_fit *f; /* borrowed */
    pg_session_params p;
    pg_fit_dims d;
    int ev;                     /* the last event returned (-1 before the first) */
    int64_t epoch, batch, step; /* batch: 0-based within the current part */
    int64_t stopped_epoch;
    int64_t recorded; /* the part's records when the current batch event was returned */
    double lr, t0, t1, logs[PG_FIT_LOG_ALL]; /* enum pg_fit_log's, then the metric columns */
    int cols[PG_FIT_LOG_ALL];                /* the History's columns after epoch, as logs' */
    int64_t ncol;
    int diverged;
    char msg[512];
    compiled train, val[2]; /* val: one per width (full, last partial) */
    /* the compiled steps: st 0 eager, 1 recorded when asked, 2 probed first (static = None);
     * val_off: eval mode's forward could not be recorded; reply: the host's answer to PROBE /
     * RECORD* (1 the probe agreed, 2 fell back); notice: the fallback notice to say after the
     * eager step (1) or at once before validation's (2); why: its reason */
    int st, val_off, reply, notice;
    int64_t other;
    char why[1024];
};

const char *pg_session_event_name(int event)
{
    return event >= 0 && event < PG_SESSION_EVENT_COUNT ? EVENT_NAMES[event] : NULL;
}

pg_session_params pg_session_default_params(void)
{
    pg_session_params p = {30, 1, 1, 0, 0, 0, 0, NULL};
    return p;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

pg_session *pg_session_new(pg_fit *f, const pg_session_params *params)
{
    if (!f || !params) {
        pg_fail(PG_STATUS_ERR_ARG, "%s: NULL plan or parameters", OP);
        return NULL;
    }
    if (params->nepoch < 0 || params->first_epoch < 1) {
        pg_fail(PG_STATUS_ERR_VALUE,
                "%s: nepoch must be >= 0 and the first epoch >= 1, got %lld "
                "and %lld",
                OP, (long long)params->nepoch, (long long)params->first_epoch);
        return NULL;
    }
    pg_session *s = calloc(1, sizeof *s);
    if (!s) {
        pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for the session", OP);
        return NULL;
    }
    s->f = f;
    s->p = *params;
    pg_fit_setup_info si;
    if (params->setup && pg_fit_setup_get(params->setup, &si)) {
        free(s);
        return NULL;
    }
    if (params->setup) {
        s->p.static_step = si.static_step, s->p.auto_static = si.auto_static;
        s->p.per_datapoint = si.per_datapoint;
    }
    s->ev = -1;
    s->epoch = params->first_epoch - 1;
    s->st = s->p.static_step ? 1 + (s->p.auto_static != 0) : 0;
    if (pg_fit_sizes(f, &s->d)) {
        free(s);
        return NULL;
    }
    /* the order the History has always had, then each metric, then its val_ column */
    static const int MAIN[PG_FIT_LOG_COUNT] = {
        PG_FIT_LOG_LR, PG_FIT_LOG_TIME_TRAIN, 0, 1, 2, 3, 4, 5, 6, 7, PG_FIT_LOG_TIME_VAL};
    memcpy(s->cols, MAIN, sizeof MAIN);
    s->ncol = PG_FIT_LOG_COUNT;
    const int *codes;
    const int64_t nm = pg_fit_metric_codes(f, &codes);
    if (nm > PG_METRIC_R2) { /* each code once (the front ends' lists): a column each */
        free(s);
        pg_fail(PG_STATUS_ERR_VALUE, "%s: %lld metrics, more than there are", OP, (long long)nm);
        return NULL;
    }
    for (int v = 0; v < (s->d.n_val ? 2 : 1); v++)
        for (int64_t i = 0; i < nm; i++) s->cols[s->ncol++] = metric_log(codes[i], v);
    return s;
}

void pg_session_free(pg_session *s) { free(s); }

int64_t pg_session_log_count(const pg_session *s) { return s ? s->ncol : 0; }

const char *pg_session_log_name(const pg_session *s, int64_t i)
{
    return s && i >= 0 && i < s->ncol ? pg_fit_log_name(s->cols[i]) : NULL;
}

static compiled *graph_for(pg_session *s, int val, int64_t width)
{
    if (!val) return s->train.g ? &s->train : NULL;
    for (int k = 0; k < 2; k++)
        if (s->val[k].g && s->val[k].width == width) return &s->val[k];
    return NULL;
}

int pg_session_set_static(pg_session *s, int val, int64_t width, pg_graph *g, pg_tensor *out)
{
    if (!s || !g || !out)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or compiled step", OP);
    compiled *c = val ? graph_for(s, 1, width) : &s->train;
    if (!c && val) c = !s->val[0].g ? &s->val[0] : (!s->val[1].g ? &s->val[1] : NULL);
    if (!c || width < 1)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: no slot for a compiled validation step of width "
                       "%lld",
                       OP, (long long)width);
    c->width = width;
    c->g = g;
    c->out = out;
    return 0;
}

/* the batch event just answered: recorded by the host, or handed back with a compiled step */
static int answered(pg_session *s, int val)
{
    if (pg_fit_nrecorded(s->f, val, NULL) > s->recorded) return 0;
    const compiled *c = graph_for(s, val, pg_fit_width(s->f, val, s->batch));
    if (c) return pg_fit_run_static(s->f, val, s->batch, s->batch + 1, c->g, c->out) < 0 ? -1 : 0;
    return pg_fail(PG_STATUS_ERR_STATE,
                   "%s: %s batch %lld of epoch %lld was neither recorded nor "
                   "handed back",
                   OP, val ? "validation" : "training", (long long)s->batch + 1,
                   (long long)s->epoch);
}

static int emit(pg_session *s, int ev, int *event)
{
    const int val = ev == PG_SESSION_VAL_BATCH || ev == PG_SESSION_RECORD_VAL;
    if (val || ev == PG_SESSION_TRAIN_BATCH || ev == PG_SESSION_RECORD)
        s->recorded = pg_fit_nrecorded(s->f, val, NULL);
    s->ev = ev;
    *event = ev;
    return 0;
}

static int epoch_end(pg_session *s, int *event)
{
    pg_fit_result r[2];
    if (pg_fit_epoch_end(s->f, s->p.per_datapoint, &r[0], &r[1])) return -1;
    const int rc = pg_fit_loss_diverged(s->f, r, s->epoch, s->msg, sizeof s->msg);
    if (rc < 0) return -1;
    for (int k = 0; k < 2; k++) {
        double *l = s->logs + 4 * k; /* loss, its unc, accuracy, its unc; then the val_ ones */
        l[0] = r[k].loss;
        l[1] = r[k].loss_unc;
        l[2] = r[k].accuracy;
        l[3] = r[k].accuracy_unc;
    }
    s->logs[PG_FIT_LOG_LR] = s->lr;
    const int *codes;
    const int64_t nm = pg_fit_metric_codes(s->f, &codes);
    double mv[PG_METRIC_R2 + 1];
    for (int v = 0; v < (s->d.n_val ? 2 : 1) && nm; v++) { /* over the whole epoch's outputs */
        if (pg_fit_metrics_epoch(s->f, v, mv)) return -1;
        for (int64_t i = 0; i < nm; i++) s->logs[metric_log(codes[i], v)] = mv[i];
    }
    s->logs[PG_FIT_LOG_TIME_VAL] = now() - s->t1;
    s->diverged = rc;
    if (rc) s->stopped_epoch = s->epoch;
    return emit(s, PG_SESSION_EPOCH_END, event);
}

/* the next training batch: run by the session when it has the compiled step, else the host's */
static int train_batch(pg_session *s, int *event)
{
    for (; s->batch < s->d.n_batches; s->batch++) {
        if (!s->train.g && s->st == 2) { /* probe on this batch, replaying another one */
            s->other = s->batch != s->d.n_batches - 1 ? s->d.n_batches - 1 : 0;
            return emit(s, PG_SESSION_PROBE, event);
        }
        if (!s->train.g) return emit(s, s->st ? PG_SESSION_RECORD : PG_SESSION_TRAIN_BATCH, event);
        const int64_t b1 = s->p.batch_events ? s->batch + 1 : s->d.n_batches;
        const int64_t n = pg_fit_run_static(s->f, 0, s->batch, b1, s->train.g, s->train.out);
        if (n < 0) return -1;
        s->step += n;
        if (s->p.batch_events) return emit(s, PG_SESSION_BATCH_END, event);
        s->batch = b1 - 1;
    }
    return emit(s, PG_SESSION_TRAIN_END, event);
}

static int val_batch(pg_session *s, int *event)
{
    for (; s->batch < s->d.n_val_batches; s->batch++) {
        const compiled *c = graph_for(s, 1, pg_fit_width(s->f, 1, s->batch));
        if (!c)
            return emit(s, s->st && !s->val_off ? PG_SESSION_RECORD_VAL : PG_SESSION_VAL_BATCH,
                        event);
        if (pg_fit_run_static(s->f, 1, s->batch, s->batch + 1, c->g, c->out) < 0) return -1;
    }
    return emit(s, PG_SESSION_VAL_END, event);
}

static int epoch_begin(pg_session *s, int *event)
{
    if (s->epoch >= s->p.nepoch || s->stopped_epoch) return emit(s, PG_SESSION_DONE, event);
    if (pg_fit_epoch_begin(s->f)) return -1;
    s->epoch++;
    s->batch = 0;
    s->lr = NAN;
    s->diverged = 0;
    for (int k = 0; k < PG_FIT_LOG_ALL; k++) s->logs[k] = NAN;
    return emit(s, PG_SESSION_EPOCH_BEGIN, event);
}

/* after a training batch: its BATCH_END event, or the next batch */
static int train_next(pg_session *s, int *event)
{
    if (s->p.batch_events) return emit(s, PG_SESSION_BATCH_END, event);
    s->batch++;
    return train_batch(s, event);
}

/* after PROBE: the step recorded next when the probe agreed, else this batch eagerly */
static int probed(pg_session *s, int *event)
{
    const int r = s->reply;
    s->reply = 0;
    if (!r)
        return pg_fail(PG_STATUS_ERR_STATE,
                       "%s: the probe on training batch %lld was neither reported nor failed", OP,
                       (long long)s->batch + 1);
    return emit(s, r == 1 ? PG_SESSION_RECORD : PG_SESSION_TRAIN_BATCH, event);
}

int pg_session_next(pg_session *s, int *event)
{
    if (!s || !event) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or event", OP);
    switch (s->ev) {
    case -1:
    case PG_SESSION_EPOCH_END: return epoch_begin(s, event);
    case PG_SESSION_EPOCH_BEGIN: s->t0 = now(); return train_batch(s, event);
    case PG_SESSION_PROBE: return probed(s, event);
    case PG_SESSION_RECORD:
        if (s->reply) { /* fell back: this batch again, eagerly */
            s->reply = 0;
            return emit(s, PG_SESSION_TRAIN_BATCH, event);
        }
        /* fall through: the compiled step has the batch */
    case PG_SESSION_TRAIN_BATCH:
        if (answered(s, 0)) return -1;
        s->step++;
        if (s->notice == 1) return emit(s, PG_SESSION_NOTICE, event); /* once the eager step ran */
        return train_next(s, event);
    case PG_SESSION_NOTICE:
        if (s->notice == 2) { /* validation's fallback: this batch, eagerly */
            s->notice = 0;
            return val_batch(s, event);
        }
        s->notice = 0;
        return train_next(s, event);
    case PG_SESSION_BATCH_END: s->batch++; return train_batch(s, event);
    case PG_SESSION_TRAIN_END: /* the training time includes MPI's statistics all-reduce */
        s->logs[PG_FIT_LOG_TIME_TRAIN] = now() - s->t0;
        s->t1 = now();
        if (!s->d.n_val) return epoch_end(s, event);
        s->batch = 0;
        return emit(s, PG_SESSION_VAL_BEGIN, event);
    case PG_SESSION_VAL_BEGIN: return val_batch(s, event);
    case PG_SESSION_RECORD_VAL:
        if (s->reply) {
            s->reply = 0;
            return emit(s, PG_SESSION_NOTICE, event);
        }
        /* fall through */
    case PG_SESSION_VAL_BATCH:
        if (answered(s, 1)) return -1;
        s->batch++;
        return val_batch(s, event);
    case PG_SESSION_VAL_END: return epoch_end(s, event);
    default: return emit(s, PG_SESSION_DONE, event);
    }
}

int pg_session_where(const pg_session *s, pg_session_pos *out)
{
    if (!s || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or output", OP);
    out->epoch = s->epoch;
    out->batch = s->batch;
    out->step = s->step;
    out->stopped_epoch = s->stopped_epoch;
    out->other = s->other;
    pg_fit_nrecorded(s->f, 0, &out->loss);
    return 0;
}

int64_t pg_session_batch(pg_session *s, pg_tensor **xb, pg_tensor **yb, pg_tensor **wb)
{
    if (!s || !xb || !yb || !wb)
        return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or output", OP);
    *xb = *yb = *wb = NULL;
    const int ev = s->ev, val = ev == PG_SESSION_VAL_BATCH || ev == PG_SESSION_RECORD_VAL;
    if (!val && ev != PG_SESSION_TRAIN_BATCH && ev != PG_SESSION_PROBE && ev != PG_SESSION_RECORD)
        return -pg_fail(PG_STATUS_ERR_STATE, "%s: no batch at this session event", OP);
    const int64_t w = pg_fit_batch(s->f, val, s->batch, xb, yb);
    if (w >= 0 && !val) *wb = pg_fit_batch_weights(s->f);
    return w;
}

int pg_session_set_lr(pg_session *s, double lr)
{
    if (!s) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session", OP);
    s->lr = lr;
    return 0;
}

int pg_session_logs(const pg_session *s, double *logs, char *msg, int64_t n)
{
    if (!s || !logs || !msg || n < 1)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or output", OP);
    if (s->ev != PG_SESSION_EPOCH_END)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: an epoch's logs are read at its end", OP);
    memcpy(logs, s->logs, PG_FIT_LOG_COUNT * sizeof *logs);
    snprintf(msg, (size_t)n, "%s", s->diverged ? s->msg : "");
    return s->diverged;
}

int pg_session_epoch_logs(const pg_session *s, double *logs, int64_t nlogs, char *msg, int64_t n)
{
    double v[PG_FIT_LOG_COUNT];
    const int rc = pg_session_logs(s, v, msg, n);
    if (rc < 0) return rc;
    if (!logs || nlogs != s->ncol)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: the logs take %lld values, got room for %lld", OP,
                       (long long)s->ncol, (long long)nlogs);
    for (int64_t i = 0; i < s->ncol; i++) logs[i] = s->logs[s->cols[i]];
    return rc;
}

int pg_session_stop(pg_session *s)
{
    if (!s) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session", OP);
    if (s->ev != PG_SESSION_EPOCH_END)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: a run stops at an epoch's end", OP);
    s->stopped_epoch = s->epoch;
    return 0;
}

int pg_session_probe(pg_session *s, double eager, double replay)
{
    if (!s) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session", OP);
    if (s->ev != PG_SESSION_PROBE || s->reply)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: a probe is reported once, at its event", OP);
    if (pg_fit_probe_why(eager, replay, s->other + 1, s->why, 512) == 0) {
        s->reply = 1;
        return 0;
    }
    s->st = 0; /* the replay differs: eager from now on, saying why after the first step */
    s->notice = 1;
    s->reply = 2;
    return 0;
}

int pg_session_static_fail(pg_session *s, const char *why)
{
    if (!s || !why) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session or reason", OP);
    const int ev = s->ev;
    if ((ev != PG_SESSION_PROBE && ev != PG_SESSION_RECORD && ev != PG_SESSION_RECORD_VAL) ||
        s->reply)
        return pg_fail(PG_STATUS_ERR_STATE, "%s: a compiled step fails at its event, once", OP);
    if (!s->p.auto_static) return 1; /* static = TRUE (or built-in): the host's error ends it */
    snprintf(s->why, sizeof s->why, "%s", why);
    if (ev == PG_SESSION_RECORD_VAL) s->val_off = 1; /* eval mode's forward cannot be replayed */
    else s->st = 0;
    s->notice = ev == PG_SESSION_RECORD_VAL ? 2 : 1;
    s->reply = 2;
    return 0;
}

int64_t pg_session_notice(const pg_session *s, char *buf, int64_t cap)
{
    if (!s) return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL session", OP);
    if (s->ev != PG_SESSION_NOTICE)
        return -pg_fail(PG_STATUS_ERR_STATE, "%s: the notice is read at its event", OP);
    return pg_fit_static_notice(s->why, s->p.r_spelling, buf, cap);
}

static void put_loss(pg_text *t, double v) /* every digit, as both languages print them */
{
    char b[32];
    if (isfinite(v)) pg_text_put(t, "%.17g", v);
    else pg_text_put(t, "%s", pg_fmt_num(b, sizeof b, v));
}

int64_t pg_fit_probe_why(double eager, double replay, int64_t batch, char *buf, int64_t cap)
{
    if (eager == replay || (isnan(eager) && isnan(replay))) return 0; /* as == and identical() */
    pg_text t = {buf, buf ? cap : 0, 0};
    pg_text_put(&t, "a replay of the recorded step gives loss ");
    put_loss(&t, replay);
    pg_text_put(&t, " where the eager step gives ");
    put_loss(&t, eager);
    pg_text_put(&t,
                " on batch %lld (the forward reads tensor values in host code or branches on "
                "them)",
                (long long)batch);
    return t.len;
}
