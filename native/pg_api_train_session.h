/* pyggmlr C core: ag_fit's training session (fit_session.c), ggml_opt_fit's loop once for R and
 * Python. Named to sort after pg_api_train.h (it drives a pg_fit).
 *
 * The session walks the epochs, the training batches, validation and the epoch's end, times
 * them, runs compiled steps itself, counts steps, computes each epoch's logs (statistics, lr,
 * times, the divergence guard) and decides when the run ends. The host's loop is a short
 * `while (pg_session_next(...))` that does only what calls user code: the forward pass and a
 * user loss (TRAIN_BATCH, VAL_BATCH), hyper-parameters from opt_params and the model's mode
 * (EPOCH_BEGIN, VAL_BEGIN, VAL_END), progress and callbacks (BATCH_END, EPOCH_END), MPI's
 * statistics all-reduce (TRAIN_END). */
typedef struct pg_session pg_session;

/* The session's settings, ggml_opt_params-style: start from pg_session_default_params() and set
 * what differs (defaults in brackets). nepoch: the last epoch, >= 0 [30]. first_epoch: >= 1;
 * resuming, the checkpoint's epoch + 1 [1]. per_datapoint: the loss is a mean per sample; 0: a
 * sum (ggml's totals) [1]. batch_events: a BATCH_END event after every training batch, also the
 * ones the session runs itself (progress display, on_batch_end callbacks) [0]. static_step,
 * auto_static: the setup's (pg_fit_setup_info): the session asks for the compiled steps (RECORD,
 * RECORD_VAL), first for static = None's probe (PROBE) [0, 0]. r_spelling: the fallback
 * notice in R's words ("static = NULL"), else Python's [0]. setup: the run's set-up, read once
 * by pg_session_new: static_step, auto_static and per_datapoint are then its (its loss's), so no
 * front end passes them [NULL: as given]. */
typedef struct pg_session_params {
    int64_t nepoch;
    int64_t first_epoch;
    int per_datapoint;
    int batch_events;
    int static_step, auto_static;
    int r_spelling;
    const struct pg_fit_setup *setup; /* struct: this header sorts before the setup's (cdef) */
} pg_session_params;
pg_session_params pg_session_default_params(void);

/* f: the run's data plan, borrowed (it must outlive the session). Errors name ag_fit. */
pg_session *pg_session_new(pg_fit *f, const pg_session_params *params);
void pg_session_free(pg_session *s);

enum pg_session_event {
    PG_SESSION_DONE = 0,        /* the run is over (last epoch, a stop, or a diverged loss) */
    PG_SESSION_EPOCH_BEGIN = 1, /* host: opt_params, the model in train mode; pg_session_set_lr */
    PG_SESSION_TRAIN_BATCH = 2, /* host: forward + loss on pg_fit_batch(f, 0, batch), then
                                   pg_fit_train_step, or its own step and pg_fit_record */
    PG_SESSION_BATCH_END = 3,   /* (batch_events) a training batch is done: progress, callbacks */
    PG_SESSION_TRAIN_END = 4,   /* the epoch's training batches are done (MPI: all-reduce) */
    PG_SESSION_VAL_BEGIN = 5,   /* host: the model in eval mode (only with validation data) */
    PG_SESSION_VAL_BATCH = 6,   /* host: forward + loss on pg_fit_batch(f, 1, batch), then
                                   pg_fit_record */
    PG_SESSION_VAL_END = 7,     /* host: the model back in train mode */
    PG_SESSION_EPOCH_END = 8,   /* host: pg_session_logs, History, callbacks; pg_session_stop */
    /* the compiled steps (static_step), each on the plan's batch tensors, answered by
       pg_session_set_static / pg_session_probe, or pg_session_static_fail with the host's error */
    PG_SESSION_PROBE = 9,       /* host: a forward graph recorded on training batch `batch`, the
                                   eager forward and its replay on batch `other` (the model's
                                   buffers and random stream put back); pg_session_probe */
    PG_SESSION_RECORD = 10,     /* host: the training step ("opt") recorded on training batch
                                   `batch`; pg_session_set_static(val 0) hands the batch back */
    PG_SESSION_RECORD_VAL = 11, /* host: the validation forward (eval mode) recorded on validation
                                   batch `batch`; pg_session_set_static(val 1) */
    PG_SESSION_NOTICE = 12,     /* host: say pg_session_notice once (static = None ran eagerly) */
    PG_SESSION_EVENT_COUNT
};
const char *pg_session_event_name(int event); /* "epoch_begin", ...; NULL out of range */

/* The next event into *event. A batch event must be answered before the next call: recorded
 * (pg_fit_record / pg_fit_train_step), or handed back by registering a compiled step for it
 * (pg_session_set_static); an unanswered batch is PG_STATUS_ERR_STATE. */
int pg_session_next(pg_session *s, int *event);

/* A compiled step (ag_compile) the session runs itself from now on, recorded on the plan's batch
 * tensors (inputs 0 and 1: x and y): val 0 the training step ("opt"), val 1 the validation
 * forward for batches of width `width` (the full one and the last partial one each get one).
 * g and out (its model output) are borrowed: they must outlive the session. Registered during
 * that batch's event, the batch itself is handed back: the session runs it. */
int pg_session_set_static(pg_session *s, int val, int64_t width, pg_graph *g, pg_tensor *out);

/* At PROBE: the eager forward's loss on batch `other` and the probe graph's replay there. The same
 * bits: the session asks for RECORD next; else the run is eager, with the notice after the first
 * eager step. */
int pg_session_probe(pg_session *s, double eager, double replay);
/* At PROBE, RECORD or RECORD_VAL: the host's recording failed with text why. Returns 1 when the
 * run must end with that error (static = TRUE, or a built-in model: the host raises it), 0 when
 * it goes on eagerly (static = None: the training batch again as TRAIN_BATCH and the notice after
 * it; validation at once: NOTICE, then VAL_BATCH for this batch and the rest), < 0 on error. */
int pg_session_static_fail(pg_session *s, const char *why);
/* At NOTICE: the fallback notice (pg_fit_static_notice's text) into buf (cap bytes); returns
 * the whole text's length, or -status. */
int64_t pg_session_notice(const pg_session *s, char *buf, int64_t cap);

/* Where the run is: epoch (1-based), batch (0-based, of the current part), step (training
 * batches done in this run), loss (the last recorded training batch's), stopped_epoch (0: not
 * stopped; set by pg_session_stop or a diverged loss), other (at PROBE: the training batch the
 * probe replays, the last one, or the first when batch is the last). */
typedef struct pg_session_pos {
    int64_t epoch, batch, step, stopped_epoch;
    double loss;
    int64_t other;
} pg_session_pos;
int pg_session_where(const pg_session *s, pg_session_pos *out);
/* At a batch event (TRAIN_BATCH, PROBE, RECORD: training batch `batch`; VAL_BATCH, RECORD_VAL:
 * validation batch `batch`): that batch as pg_fit_batch gathers it, and *wb the weight row of a
 * training batch of a weighted plan (pg_fit_batch_weights), else NULL. Returns the width, < 0 on
 * error (PG_STATUS_ERR_STATE at another event). */
int64_t pg_session_batch(pg_session *s, pg_tensor **xb, pg_tensor **yb, pg_tensor **wb);

/* The epoch's lr for its logs (EPOCH_BEGIN, after opt_params; NaN when not set). */
int pg_session_set_lr(pg_session *s, double lr);

/* At EPOCH_END: logs gets the epoch's PG_FIT_LOG_COUNT values in enum pg_fit_log order (NaN
 * where not measured). Returns 1 when its training or validation loss is NaN or infinite (the
 * run then ends after this epoch) with ag_fit's warning in msg (n bytes), 0 when finite, < 0 on
 * error. */
int pg_session_logs(const pg_session *s, double *logs, char *msg, int64_t n);
/* The History's columns after "epoch", once for R and Python: lr, time_train, loss ... val_accuracy_unc,
 * time_val, then each of ag_fit(metrics =)'s metrics (the plan's, set before the session) and,
 * with validation, its val_ column. pg_session_log_name: column i's name (NULL out of range). */
int64_t pg_session_log_count(const pg_session *s);
const char *pg_session_log_name(const pg_session *s, int64_t i);
/* pg_session_logs in those columns' order, the metrics over the whole epoch included: nlogs
 * must be pg_session_log_count's; the same return and msg. */
int pg_session_epoch_logs(const pg_session *s, double *logs, int64_t nlogs, char *msg, int64_t n);

/* At EPOCH_END: the run ends after this epoch (a callback asked). */
int pg_session_stop(pg_session *s);

/* static = NULL's probe verdict: eager is the loss the eager forward gives on training batch
 * `batch` (1-based), replay what a replay of the step recorded on another batch gives there.
 * Returns 0 when they are the same bits (or both NaN), else writes why the step cannot be
 * compiled safely into buf (cap bytes, NUL-terminated) and returns that text's length. */
int64_t pg_fit_probe_why(double eager, double replay, int64_t batch, char *buf, int64_t cap);
