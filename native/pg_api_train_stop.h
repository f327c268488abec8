/* pyggmlr C core: ag_early_stopping's rule (fit_stop.c), once for R and Python, in ggml-opt's
 * parameter style (a struct with a defaults constructor). Named to sort after pg_api_train.h.
 *
 * The core decides which logged value is watched and in which direction, when an epoch improves
 * on the best, when training stops and whether the best epoch's weights go back; the host keeps
 * the weights' snapshot (taken when an epoch improves) and puts it back at the end. */

/* The History's per-epoch values after `epoch`, in its column order: the names both front ends
 * use for their logs, their History and the monitor argument. */
enum pg_fit_log {
    PG_FIT_LOG_LOSS = 0,
    PG_FIT_LOG_LOSS_UNC = 1,
    PG_FIT_LOG_ACCURACY = 2,
    PG_FIT_LOG_ACCURACY_UNC = 3,
    PG_FIT_LOG_VAL_LOSS = 4,
    PG_FIT_LOG_VAL_LOSS_UNC = 5,
    PG_FIT_LOG_VAL_ACCURACY = 6,
    PG_FIT_LOG_VAL_ACCURACY_UNC = 7,
    PG_FIT_LOG_LR = 8,
    PG_FIT_LOG_TIME_TRAIN = 9,
    PG_FIT_LOG_TIME_VAL = 10,
    PG_FIT_LOG_COUNT
};
/* the log's name ("val_loss", ...); NULL out of range */
const char *pg_fit_log_name(int log);

/* The direction of improvement: AUTO is MAX for accuracy values, MIN for the rest. */
enum pg_monitor_mode {
    PG_MONITOR_MODE_AUTO = 0,
    PG_MONITOR_MODE_MIN = 1,
    PG_MONITOR_MODE_MAX = 2,
    PG_MONITOR_MODE_COUNT
};
const char *pg_monitor_mode_name(int mode);

typedef struct pg_early_stop_params {
    int64_t patience; /* epochs without improvement before training stops, >= 1 (5) */
    double min_delta; /* an improvement must exceed this, >= 0 (0) */
    int restore_best; /* put back the best epoch's weights at the end (1) */
    int mode;         /* enum pg_monitor_mode (AUTO) */
    int monitor;      /* enum pg_fit_log, or -1: val_loss when the fit has validation data,
                          else loss (-1) */
} pg_early_stop_params;
pg_early_stop_params pg_early_stop_default_params(void);
/* name to code for the front ends' string arguments; errors name `fn` and the accepted names */
int pg_fit_log_parse(const char *fn, const char *arg, const char *name, int *log);
int pg_monitor_mode_parse(const char *fn, const char *name, int *mode);
/* A mode or monitor argument (arg) that is no single string: always PG_STATUS_ERR_ARG naming fn
 * and arg, showing what was given (shown: Python's type, R's class), in the language's words
 * (r_spelling: NULL, "max"; else None, 'max'); monitor may also be None / NULL. */
int pg_monitor_arg_fail(const char *fn, const char *arg, const char *shown, int r_spelling);
/* ag_early_stopping's / ag_model_checkpoint's (fn) mode and monitor arguments as the core's codes,
 * both checked here in this order: each its string, or NULL when it is no single string (shown:
 * the host's display of it, pg_monitor_arg_fail's error); monitor and monitor_shown both NULL: no
 * monitor asked for (*log -1, resolved when a fit begins). */
int pg_monitor_args(const char *fn, const char *mode, const char *mode_shown, const char *monitor,
                    const char *monitor_shown, int r_spelling, int *mode_code, int *log);

typedef struct pg_early_stop pg_early_stop;
/* checked (errors name ag_early_stopping and the argument); NULL on error */
pg_early_stop *pg_early_stop_new(const pg_early_stop_params *params);
void pg_early_stop_free(pg_early_stop *es);
int pg_early_stop_params_get(const pg_early_stop *es, pg_early_stop_params *out);

/* A new fit: the last fit's best, wait and stop are forgotten and the watched value is resolved.
 * has_val: the fit has validation data; has_accuracy: it counts accuracy (classification). A
 * monitor the fit never measures (val_* without validation data, accuracy without classes) is
 * PG_STATUS_ERR_VALUE before training starts. */
int pg_early_stop_begin(pg_early_stop *es, int has_val, int has_accuracy);

enum pg_early_stop_action {
    PG_EARLY_STOP_CONTINUE = 0,
    PG_EARLY_STOP_IMPROVED = 1, /* a new best (without restore_best) */
    PG_EARLY_STOP_STOP = 2,     /* patience exhausted: training stops after this epoch */
    PG_EARLY_STOP_SNAPSHOT = 3  /* a new best with restore_best: the host snapshots the weights */
};
/* One epoch (after pg_early_stop_begin): logs holds PG_FIT_LOG_COUNT values in enum pg_fit_log
 * order (NaN where not measured; a NaN is never an improvement). *action: enum
 * pg_early_stop_action. */
int pg_early_stop_update(pg_early_stop *es, int64_t epoch, const double *logs, int *action);

typedef struct pg_early_stop_state {
    double best;           /* best value so far (+Inf for MIN, -Inf for MAX before any) */
    int64_t best_epoch;    /* 0: none yet */
    int64_t wait;          /* epochs since the best */
    int64_t stopped_epoch; /* 0: not stopped */
    int monitor;           /* the watched enum pg_fit_log; -1 before pg_early_stop_begin */
    int maximize;          /* the resolved direction */
} pg_early_stop_state;
int pg_early_stop_get_state(const pg_early_stop *es, pg_early_stop_state *out);
/* A checkpoint's counters (resuming, after pg_early_stop_begin): all checked before any is set
 * (best not NaN; best_epoch, wait >= 0). */
int pg_early_stop_set_state(pg_early_stop *es, double best, int64_t best_epoch, int64_t wait);
/* A checkpoint's callback state as the host read it from the file's JSON (ag_early_stopping's
 * and ag_model_checkpoint's: best, best_epoch, wait): best a number or absent (+Inf), best_epoch
 * and wait whole numbers in [0, 2^62) or absent (0); is_map 0: the state is no object. A refusal
 * is PG_STATUS_ERR_VALUE naming fn and showing the three values as JSON. */
int pg_callback_state_parse(const char *fn, int is_map, const pg_host_value *v, double *best,
                            int64_t *best_epoch, int64_t *wait);
/* End of training at last_epoch: *restore 1 when the host puts back the best epoch's weights
 * (restore_best, a best epoch was seen and it is not the last one). */
int pg_early_stop_end(const pg_early_stop *es, int64_t last_epoch, int *restore);

/* ag_model_checkpoint's rule: which epochs save. Every `every`-th epoch and the last one are
 * looked at; with best_only, one of them saves only when the monitored value (as
 * ag_early_stopping's monitor and mode) beats the best of the epochs looked at before. */
typedef struct pg_checkpoint_params {
    int64_t every; /* >= 1 (1) */
    int best_only; /* (0) */
    int mode;      /* enum pg_monitor_mode (AUTO) */
    int monitor;   /* enum pg_fit_log, or -1: val_loss with validation data, else loss (-1) */
} pg_checkpoint_params;
pg_checkpoint_params pg_checkpoint_default_params(void);
typedef struct pg_checkpoint pg_checkpoint;
pg_checkpoint *pg_checkpoint_new(const pg_checkpoint_params *params);
void pg_checkpoint_free(pg_checkpoint *c);
int pg_checkpoint_params_get(const pg_checkpoint *c, pg_checkpoint_params *out);
/* A new fit of nepoch epochs (the last one is always looked at); with best_only, a monitor the
 * fit never measures is PG_STATUS_ERR_VALUE, as pg_early_stop_begin. */
int pg_checkpoint_begin(pg_checkpoint *c, int64_t nepoch, int has_val, int has_accuracy);
/* One epoch's logs (as pg_early_stop_update): *save 1 when this epoch writes the checkpoint. */
int pg_checkpoint_update(pg_checkpoint *c, int64_t epoch, const double *logs, int *save);
/* the monitor's best (best, best_epoch; the other fields as pg_early_stop's) */
int pg_checkpoint_get_state(const pg_checkpoint *c, pg_early_stop_state *out);
/* resuming: the best of the checkpoint's run, checked as pg_early_stop_set_state */
int pg_checkpoint_set_state(pg_checkpoint *c, double best, int64_t best_epoch);
/* ag_model_checkpoint's path (fit_ckpt_path.c): "{epoch}" or "{epoch:<width>d}" ("{epoch:03d}":
 * zero-padded) is the epoch, "{{" and "}}" literal braces, anything else in braces is refused
 * (PG_STATUS_ERR_VALUE). pg_checkpoint_path writes epoch's file name (at most cap bytes, NUL
 * included) and returns its length, or -status; pg_checkpoint_path_check also requires the first
 * epoch's directory to exist and be writable (checked when the callback is made). */
int64_t pg_checkpoint_path(const char *path, int64_t epoch, char *out, int64_t cap);
int pg_checkpoint_path_check(const char *path);

/* ag_fit(resume_from = path): the checkpoint's training state checked against this run before
 * anything is written (fit_resume.c). The file's metadata 'extra' and 'epoch' are read here (the
 * front end has checked the file as a model file); settings: this run's settings as a JSON
 * object (n, batch_size, nbatch_logical, val_split, shuffle, loss: each must equal the
 * checkpoint's). Then the saved seed / split_state (null, or an integer / PG_RNG_STATE_LEN
 * 32-bit integers), the history (per-epoch arrays of numbers or nulls) and the random stream's
 * state (one R's default generator takes). PG_STATUS_ERR_VALUE naming ag_fit and the path. */
int pg_fit_resume_check(const char *path, const char *settings, int64_t settings_len);

/* ag_model_checkpoint's run state, one layout for both front ends (fit_ckpt.c): the model file's
 * metadata 'extra' {"fit": {"settings": settings, "history": {...}, "rng_state": [...],
 * "callbacks": [...]}}. settings: the run's settings as a JSON object text; hist[c * n + i]:
 * epoch i's column c, the columns epoch, then enum pg_fit_log's (pg_fit_log_name), then the
 * n_metrics named ag_fit(metrics =) columns (not finite: null); stopped / best epoch (NaN:
 * null); rng: the run's stream state (PG_RNG_STATE_LEN, one R's default generator takes); cb:
 * the n_cb callbacks' state JSON texts (NULL: null). Writes at most cap bytes (NUL included) to
 * out (NULL: measure); returns the text's length, or -status (naming ag_model_checkpoint). */
int64_t pg_fit_ckpt_extra(const char *settings, const double *hist, int64_t n, int64_t n_metrics,
                          const char *const *metrics, double stopped_epoch, double best_epoch,
                          const int32_t *rng, int64_t n_cb, const char *const *cb, char *out,
                          int64_t cap);
/* The file's name of callback callback's (0-based) tensor name, kind PG_FIT_CKPT_PARAM or
 * PG_FIT_CKPT_BUFFER: "callback<i>.param.<name>" (as pg_fit_ckpt_extra: out, cap, length or
 * -status). pg_fit_ckpt_tensor_parse: 1 when name is one (callback, kind and the offset of its
 * own name after the prefix set), else 0. */
enum { PG_FIT_CKPT_PARAM = 0, PG_FIT_CKPT_BUFFER = 1 };
int64_t pg_fit_ckpt_tensor_name(int64_t callback, int kind, const char *name, char *out,
                                int64_t cap);
int pg_fit_ckpt_tensor_parse(const char *name, int64_t *callback, int *kind, int64_t *rest);
/* ag_fit(resume_from = path): the checkpoint checked (pg_fit_resume_check, nothing written) and
 * its run state handed out (fit_resume.c): its epoch; the saved seed and split_state (1 when
 * present, copied to out: PG_RNG_STATE_LEN integers for the states); the stream's state; the
 * history (n epochs; columns epoch, enum pg_fit_log's, then the file's other columns in file
 * order, null and absent as NaN); stopped / best epoch (NaN: none); each callback's state as
 * JSON text (NULL: null). Texts live as long as the handle. */
typedef struct pg_fit_ckpt pg_fit_ckpt;
int pg_fit_ckpt_open(const char *path, const char *settings, int64_t settings_len,
                     pg_fit_ckpt **out);
void pg_fit_ckpt_free(pg_fit_ckpt *c);
int64_t pg_fit_ckpt_epoch(const pg_fit_ckpt *c);
int pg_fit_ckpt_seed(const pg_fit_ckpt *c, int32_t *seed);
int pg_fit_ckpt_split_state(const pg_fit_ckpt *c, int32_t *out);
void pg_fit_ckpt_rng_state(const pg_fit_ckpt *c, int32_t *out);
int64_t pg_fit_ckpt_epochs(const pg_fit_ckpt *c);
int64_t pg_fit_ckpt_columns(const pg_fit_ckpt *c);
const char *pg_fit_ckpt_column_name(const pg_fit_ckpt *c, int64_t j);
void pg_fit_ckpt_column(const pg_fit_ckpt *c, int64_t j, double *out);
double pg_fit_ckpt_stopped_epoch(const pg_fit_ckpt *c);
double pg_fit_ckpt_best_epoch(const pg_fit_ckpt *c);
int64_t pg_fit_ckpt_callbacks(const pg_fit_ckpt *c);
const char *pg_fit_ckpt_callback_state(const pg_fit_ckpt *c, int64_t i);

/* The built-in callbacks' state in a checkpoint (fit_cb.c), from and to their handles: the JSON
 * text {"best": b, "best_epoch": e, "wait": w} (ag_model_checkpoint's without wait; best not
 * finite and best_epoch 0 as null), as pg_fit_ckpt_extra writes (out, cap; length or -status).
 * *_state_load: a state the host read (is_map, v: best, best_epoch, wait) checked by
 * pg_callback_state_parse's rule and text naming the callback, then set; a NULL handle checks
 * only. */
int64_t pg_early_stop_state_json(const pg_early_stop *es, char *out, int64_t cap);
int64_t pg_checkpoint_state_json(const pg_checkpoint *c, char *out, int64_t cap);
int pg_early_stop_state_load(pg_early_stop *es, int is_map, const pg_host_value *v);
int pg_checkpoint_state_load(pg_checkpoint *c, int is_map, const pg_host_value *v);
/* The state's keys in v's order (0 "best", 1 "best_epoch", 2 "wait"; NULL past them): the
 * names both hosts look up in a state they read, and the JSON text's. */
const char *pg_callback_state_key(int k);
/* A run object's has_val / has_accuracy as the built-in callbacks' on_train_begin read them
 * (ag_fit's, or a hand-written loop's; fn names the callback): absent (None / NULL) is unknown,
 * *val 1 (validation counted as measured) and *mask -1 (every value measured); has_val a flag or
 * a number (not 0: true); has_accuracy a whole number from -1 (the monitor mask: bit 0 accuracy,
 * bit c metric code c) or a flag. Another kind is PG_STATUS_ERR_ARG, a fraction, NaN or a number
 * out of range PG_STATUS_ERR_VALUE, naming fn and the field and showing v's text. */
int pg_fit_run_measures(const char *fn, const pg_host_value *has_val,
                        const pg_host_value *has_accuracy, int r_spelling, int *val, int *mask);
/* An epoch's logs as the built-in callbacks' on_epoch_end read them (fn names the callback):
 * v[k] the value named pg_fit_log_name(k), PG_FIT_LOG_ALL of them; absent (None / NULL, or not in
 * the logs) is not measured (NaN), a number or a flag its value into out[k]; anything else (a
 * string, a list) PG_STATUS_ERR_ARG naming fn and the key, showing v[k].text. */
int pg_fit_log_values(const char *fn, const pg_host_value *v, int r_spelling, double *out);
/* The settings and counters a built-in callback shows, one table for both front ends' fields
 * (ag_early_stopping: patience, min_delta, restore_best, monitor, mode, best, best_epoch, wait,
 * stopped_epoch; ag_model_checkpoint: every, save_best_only, monitor, mode, best, best_epoch):
 * field k's name, NULL past the last; with a handle and out, its value as a host value: INT,
 * NUM, BOOL or TEXT, ABSENT for none (an auto monitor, an epoch 0: no best or stop yet). */
const char *pg_early_stop_field(const pg_early_stop *es, int k, pg_host_value *out);
const char *pg_checkpoint_field(const pg_checkpoint *c, int k, pg_host_value *out);
/* How the callbacks print: "ag_early_stopping | patience=5 | min_delta=0 | restore_best=True |
 * monitor=auto | mode=auto", "ag_model_checkpoint | path=p | every=1" (with best_only: " |
 * save_best_only=True | monitor=... | mode=..."); min_delta, restore_best and yes in the host's
 * own spelling (R: TRUE). out, cap, length or -status as above. */
int64_t pg_early_stop_format(const pg_early_stop *es, const char *min_delta,
                             const char *restore_best, char *out, int64_t cap);
int64_t pg_checkpoint_format(const pg_checkpoint *c, const char *path, const char *yes, char *out,
                             int64_t cap);
/* A checkpoint's history as one JSON object: each column (pg_fit_ckpt_column order) an array,
 * epoch's numbers whole, the rest real (NaN: null), then stopped_epoch and best_epoch (null:
 * none). */
int64_t pg_fit_ckpt_history_json(const pg_fit_ckpt *c, char *out, int64_t cap);
/* A checkpoint's run state as one JSON object, for a host that reads JSON at once: {"epoch": e,
 * "history": pg_fit_ckpt_history_json's, "rng_state": [...], "callbacks": [each state's JSON text
 * or null]} (out, cap; length or -status). */
int64_t pg_fit_ckpt_state_json(const pg_fit_ckpt *c, char *out, int64_t cap);
/* ag_fit(progress =): name "auto", "bar", "lines" or "none" (NULL: no single string) into *mode;
 * silent wins (NONE). BAR: a bar where the host can redraw one, else LINES. Another is
 * PG_STATUS_ERR_VALUE "ag_fit: progress must be ..., got <shown>" (shown: the host's display). */
enum pg_fit_progress {
    PG_FIT_PROGRESS_NONE = 0,
    PG_FIT_PROGRESS_LINES = 1,
    PG_FIT_PROGRESS_BAR = 2
};
int pg_fit_progress_parse(const char *name, const char *shown, int silent, int *mode);

/* ag_fit's History as both front ends print it (fit_history.c): n epochs, epoch[i] their
 * numbers (not finite: "-"), logs[k * n + i] epoch i's enum pg_fit_log value k (NaN: not
 * measured). Columns
 * loss, accuracy, val_loss, val_accuracy (each with its uncertainty; accuracy and val_* only
 * when measured), then the epoch's time. name: NULL for the table alone; else a title line
 * "<name: 3 epochs, stopped at epoch 3>" first (stopped_epoch <= 0 or NaN: none) and "best epoch: 2"
 * last (<= 0 or NaN: none). pm: the "±" separator (R writes " +- " outside UTF-8). Writes
 * at most cap bytes (NUL included) to out; returns the length the whole text needs (without the
 * NUL), or a negative status. */
int64_t pg_fit_history_format(const char *name, const double *epoch, const double *logs, int64_t n,
                              double stopped_epoch, double best_epoch, const char *pm, char *out,
                              int64_t cap);
/* The History as both front ends print it: pg_fit_history_format's table, then (n_metrics > 0)
 * a line break and pg_fit_metrics_format's table of the ag_fit(metrics =) columns (metrics[c]
 * with values[c * n + i]); out, cap and the length as above. */
int64_t pg_fit_history_text(const char *name, const double *epoch, const double *logs, int64_t n,
                            double stopped_epoch, double best_epoch, const char *pm,
                            int64_t n_metrics, const char *const *metrics, const double *values,
                            char *out, int64_t cap);
/* ag_fit's progress texts, one format for both languages (as pg_fit_history_format: at most cap
 * bytes to buf, NULL to measure; returns the length the whole text needs, or a negative status).
 * pg_fit_epoch_line: the line printed after an epoch from its logs (PG_FIT_LOG_ALL values: enum
 * pg_fit_log order, then ag_fit(metrics =)'s columns, pg_api_metrics.h; each metric measured is
 * shown as "  auc=0.8440" before the time): "epoch    3/10  loss=0.12345  acc=0.9500  val_loss=...
 * (12ms)".
 * Times (here and in the History's time column) as keras: "850us", "12ms", "1.23s", "2m 05s".
 * pg_fit_status_line: the bar's status from the running loss and accuracy (NaN: none) and the
 * last epoch's logs (NULL before the first): "loss 0.1234 acc 0.950 | val_loss 0.2345 ...". */
int64_t pg_fit_epoch_line(const double *logs, int64_t epoch, int64_t nepoch, char *buf,
                          int64_t cap);
int64_t pg_fit_status_line(double loss, double accuracy, const double *last, char *buf,
                           int64_t cap);

/* ag_fit's built-in losses by name (fit_loss.c): ggml-opt's four, then the ones beyond it. */
enum pg_fit_loss {
    PG_FIT_LOSS_CROSS_ENTROPY = 0, /* softmax + cross-entropy, any target form */
    PG_FIT_LOSS_MSE = 1,
    PG_FIT_LOSS_MEAN = 2, /* the output's mean (no targets) */
    PG_FIT_LOSS_SUM = 3,  /* the output's sum (no targets) */
    PG_FIT_LOSS_BINARY_CROSS_ENTROPY = 4,
    PG_FIT_LOSS_BCE_WITH_LOGITS = 5,
    PG_FIT_LOSS_HUBER = 6, /* delta 1 */
    PG_FIT_LOSS_MAE = 7,
    PG_FIT_LOSS_COUNT
};
const char *pg_fit_loss_name(int loss); /* "cross_entropy", ...; NULL out of range */
/* name to code; an unknown name is PG_STATUS_ERR_VALUE naming ag_fit and every accepted name */
int pg_fit_loss_parse(const char *name, int *loss);
/* What the loss means for a run: loss a PG_FIT_LOSS_* code, or -1 for the user's function;
 * has_y: targets were given. *classify: how accuracy is counted, a pg_fit_classify code
 * (cross_entropy: ARGMAX; binary_cross_entropy: PROBS; bce_with_logits: LOGITS; else NONE);
 * *per_datapoint: the
 * loss is a mean per sample (all but sum). A built-in loss that needs targets (all but mean and
 * sum) without them is PG_STATUS_ERR_VALUE naming ag_fit and the loss. */
int pg_fit_loss_rules(int loss, int has_y, int *classify, int *per_datapoint);
/* ag_fit's optimizer names: "adamw" (or "adam") and "sgd", in any case, into *kind
 * (PG_OPTIM_KIND_*). name: NULL when the argument is no string, shown then says what it is. An
 * unknown one is PG_STATUS_ERR_VALUE naming ag_fit and the accepted names. */
int pg_fit_optim_parse(const char *name, const char *shown, int *kind);
/* ag_fit's opt_params(epoch) result for optimizer o, all or nothing: each name through ggmlR's
 * aliases (alpha: lr, wd: weight_decay) one of o's hyper-parameters (PG_OPTIM_NAMES_FILE_HYPER),
 * else PG_STATUS_ERR_VALUE; each value a number (nesterov / average: a flag too; v[i].text: the
 * host's display), else PG_STATUS_ERR_ARG; then pg_optim_set's range check as each is set, a
 * refusal undoing the ones before (PG_STATUS_ERR_VALUE). At most 64 entries. */
int pg_fit_opt_params(pg_optim *o, int64_t n, const char *const *names, const pg_host_value *v,
                      int64_t epoch);
/* the loss of out against y (NULL for mean / sum), on the tape like the op it calls */
pg_tensor *pg_fit_loss(int loss, pg_tensor *out, pg_tensor *y);
