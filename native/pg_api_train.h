/* pyggmlr C core: ag_fit's data plan and statistics (fit.c), ggml-opt's dataset model, once for
 * R and Python. cdef-clean like pg_api.h; named to sort after pg_api_rng.h (it uses pg_rng).
 *
 * A pg_fit holds the data as core tensors (x [F, n], y [K, n] or none, in the model's dtype),
 * draws the split and the shuffles from a stream of the core's generator in ggmlR's order
 * (sample.int(n) once when shuffling; sample.int(n_train) per epoch), gathers each batch into
 * reused tensors (no copy through the host) and keeps the per-epoch statistics of
 * ggml_opt_result_loss / ggml_opt_result_accuracy. The host runs the model, the loss and the
 * optimizer between pg_fit_batch and pg_fit_record. */
typedef struct pg_fit pg_fit;

/* The plan's settings, ggml_opt_params-style: start from pg_fit_default_params() and set what
 * differs (ag_fit's defaults in brackets).
 * classify: a pg_fit_classify code [0]: ARGMAX: targets are class ids (K == 1: whole numbers
 *   >= 0, checked) or one-hot columns, and arg-max accuracy is counted; PROBS / LOGITS: targets
 *   are 0/1 labels (in [0, 1], checked) and binary accuracy is counted per element (keras'
 *   binary_accuracy: output above 0.5 / 0, target above 0.5). batch_size: samples per micro-batch, >= 1 [32]. nbatch_logical:
 *   samples per optimizer step, a multiple of batch_size; 0: batch_size [0]. val_split: in
 *   [0, 1), round(val_split * n) samples (at least 1 when > 0) held out at the end of the order
 *   [0]. shuffle: a new order of the training part each epoch [1]. rng: the stream to draw from,
 *   NULL the current one (borrowed, must outlive the fit) [NULL]. split_state: NULL, or a state
 *   (PG_RNG_STATE_LEN, copied) loaded into rng before the split is drawn (resuming) [NULL].
 * fixed_split: the validation part is the last columns as given (validation_data): no shuffle
 *   before the split; the training part is still reshuffled every epoch when shuffle [0].
 * xv, yv: validation_data's x [F, m] and y [K, m] (y exactly when the plan has y; borrowed,
 *   in x's dtype), appended after x / y's columns as the plan's validation part (fixed_split
 *   implied; val_split then pg_fit_val_join's) [NULL]. */
enum pg_fit_classify {
    PG_FIT_CLASSIFY_NONE = 0,   /* no accuracy (regression, mean / sum, the user's loss) */
    PG_FIT_CLASSIFY_ARGMAX = 1, /* cross_entropy: arg-max against the class */
    PG_FIT_CLASSIFY_PROBS = 2,  /* binary_cross_entropy: probabilities, threshold 0.5 */
    PG_FIT_CLASSIFY_LOGITS = 3  /* bce_with_logits: logits, threshold 0 */
};
typedef struct pg_fit_params {
    int classify;
    int64_t batch_size;
    int64_t nbatch_logical;
    double val_split;
    int shuffle;
    pg_rng *rng;
    const int32_t *split_state;
    int fixed_split;
    pg_tensor *xv, *yv;
} pg_fit_params;
pg_fit_params pg_fit_default_params(void);
/* x, y: retained (y may be NULL). Errors name ag_fit and the argument. */
pg_fit *pg_fit_new(pg_tensor *x, pg_tensor *y, const pg_fit_params *params);
void pg_fit_free(pg_fit *f);
/* The batching rule of ag_fit's plan and of ag_dataloader: batches of batch_size samples taken
 * in order, batch b holding samples b * batch_size .. min(n, (b + 1) * batch_size) - 1. With
 * drop_last only complete ones (n / batch_size: ggmlR's dataloader, the plan's training part),
 * else ceil(n / batch_size), the last one partial (the plan's validation part). -status (fn
 * named) when n < 0 or batch_size < 1. */
int64_t pg_batch_count(const char *fn, int64_t n, int64_t batch_size, int drop_last);
/* Data parallelism: batch b of every rank is the same global batch; this rank takes chunk
 * `rank` of `world` consecutive chunks (sizes differ by at most one, as numpy's array_split). */
int pg_fit_shard(pg_fit *f, int64_t rank, int64_t world);
/* The plan's sizes. */
typedef struct pg_fit_dims {
    int64_t n, n_train, n_val;
    int64_t n_batches;     /* training batches per epoch */
    int64_t accum;         /* micro-batches per logical batch */
    int64_t n_val_batches; /* validation batches */
} pg_fit_dims;
int pg_fit_sizes(const pg_fit *f, pg_fit_dims *out);
/* The training batches a run from first_epoch to nepoch walks (0 when none), this rank's: the
 * progress display's total, in both front ends. Negative: -status (a NULL plan). */
int64_t pg_fit_total_batches(const pg_fit *f, int64_t nepoch, int64_t first_epoch);
/* The stream's state just before the split was drawn (PG_RNG_STATE_LEN integers);
 * PG_STATUS_ERR_STATE when the run's stream is external (it has none). */
int pg_fit_split_state(const pg_fit *f, int32_t *out);
/* Start an epoch: a new order of the training part when shuffling; clears the statistics. */
int pg_fit_epoch_begin(pg_fit *f);
/* ag_fit(validation_data =): x, y, xv, yv are [rows, columns] shapes (y, yv NULL without
 * targets). Checks that xv / yv can follow x / y as their last columns (same rows; targets on
 * both or neither; a sample each at least; val_split, the caller's argument, exactly 0) and sets
 * *val_split_out to the fraction that holds out exactly xv's columns. The host passes xv / yv
 * to pg_fit_new (pg_fit_params), which appends them. Errors name ag_fit and validation_data. */
/* The commonest data mistake, row-major data (one row per sample), guessed from the shapes of x
 * [xr, xc] and y [yr, yc] whose sample counts (columns) disagree, for ag_fit's hint (below)
 * and ag_dataloader's (pg_check_samples): x looks row-major (its rows match
 * y's samples), y does (its rows match x's samples, and it is not square), both do (same row
 * counts), or none. */
enum pg_row_major {
    PG_ROW_MAJOR_NONE = 0,
    PG_ROW_MAJOR_X = 1,
    PG_ROW_MAJOR_Y = 2,
    PG_ROW_MAJOR_BOTH = 3
};
int pg_row_major_guess(int64_t xr, int64_t xc, int64_t yr, int64_t yc);
/* ag_fit's check that y has x's samples (columns): PG_STATUS_ERR_SHAPE naming both counts, with
 * the row-major hint (pg_row_major_guess) in one text for both languages; tx / ty are how the
 * language spells x and y transposed ("t(x)", "x.T"). */
int pg_fit_check_samples(int64_t xr, int64_t xc, int64_t yr, int64_t yc, const char *tx,
                         const char *ty);
/* The same check and text for function fn (ag_dataloader): both, when not NULL, is how the
 * language spells fn's argument that transposes x and y ("col_major=False"), the fix it offers
 * first; NULL offers tx / ty only (ag_fit). */
int pg_check_samples(const char *fn, int64_t xr, int64_t xc, int64_t yr, int64_t yc, const char *tx,
                     const char *ty, const char *both);
/* ag_fit / ag_predict / ag_evaluate's data as a [features, n] matrix, once for R and Python: a
 * value of ndim dims (dims[i]) that has one (a vector: one row of n samples) or two ([rows, n])
 * writes rows and n; anything else is PG_STATUS_ERR_SHAPE naming fn, what and the dims, and so is
 * n 0 with samples (ag_predict's x). */
int pg_fit_cols(const char *fn, const char *what, const int64_t *dims, int ndim, int samples,
                int64_t *rows, int64_t *n);
/* ag_fit's targets y [yr, yc] before training: pg_fit_check_samples against x [xr, xc], then,
 * with classify PG_FIT_CLASSIFY_ARGMAX and class ids (yr 1, y's yc values),
 * pg_fit_check_ids(y, yc, outputs, nlevels, one_based). On success *nclass (if not NULL) is the
 * run's classes for class_weight's check (pg_fit_set_weights): the outputs when known (> 0),
 * else the labels' count (nlevels > 0), else -1 (the core's count from y). */
int pg_fit_targets(int64_t xr, int64_t xc, int64_t yr, int64_t yc, const double *y, int classify,
                   int64_t outputs, int64_t nlevels, int one_based, const char *tx, const char *ty,
                   int64_t *nclass);
/* ag_fit's targets and metrics against the model's outputs per sample (outputs: the layers'
 * shape rules, <= 0 unknown: nothing checked), before training, in this order: y's rows yr for a
 * built-in loss that compares y with the output element by element (cross_entropy unless y is
 * class ids; not mean / sum, not a loss function, -1), then for the metrics (PG_METRIC_* codes)
 * that do (pg_metric_regression), PG_STATUS_ERR_SHAPE naming both and the loss or metric; a
 * binary loss's per-class metrics (auc, precision, recall, f1) with more than one output,
 * PG_STATUS_ERR_SHAPE; validation_data's class ids yv (nv of them; NULL / 0 when not ids) at or
 * past the outputs, PG_STATUS_ERR_VALUE naming the first. */
int pg_fit_outputs_check(int loss, const int *metrics, int64_t nmetrics, int64_t yr,
                         const double *yv, int64_t nv, int64_t outputs);
/* ag_fit's optimizer object against the model's n parameters, before training: none of its
 * parameters among them (another model's optimizer, whose first step would find no gradient)
 * is PG_STATUS_ERR_VALUE; one or more is fine (a part of the model trained). */
int pg_fit_optim_check(pg_optim *o, pg_tensor *const *params, int64_t n);
int pg_fit_val_join(const int64_t *x, const int64_t *y, const int64_t *xv, const int64_t *yv,
                    double val_split, double *val_split_out);
/* keras' verbose onto ag_fit's progress (fit_data.c): number 0 (not a number) or v other than
 * 0, 1, 2 is PG_STATUS_ERR_VALUE showing `shown`, with "None" or (r_spelling) "NULL" as the other
 * choice; else *mode = v: 0 silent ("none"), 1 the live bar ("bar"), 2 a line per epoch
 * ("lines"). The host handles "auto" / no verbose (progress and silent as given). */
int pg_fit_verbosity(int number, double v, const char *shown, int r_spelling, int *mode);
/* ag_fit's distributed and static flags: distributed_ok 0 (not one flag) or static_ok 0 (not
 * a flag nor None / NULL) is PG_STATUS_ERR_ARG in the language's spelling (r_spelling),
 * distributed first. */
int pg_fit_flags_check(int distributed_ok, int static_ok, int r_spelling);
/* ag_fit(resume_from =) that is not one file name: PG_STATUS_ERR_ARG showing `shown`; always
 * fails (the host checks the kind). */
int pg_fit_resume_from_fail(const char *shown);
/* ag_fit's refusal of an argument of the wrong kind (what: a pg_fit_kind code), showing what
 * was given (shown: Python's type or repr, R's class or value) in the language's words
 * (r_spelling); epoch: opt_params' epoch. Always fails: PG_STATUS_ERR_VALUE for the loss, its
 * value and NO_PARAMS, PG_STATUS_ERR_ARG for the others. */
enum pg_fit_kind {
    PG_FIT_KIND_VALIDATION_DATA = 0, /* not a tuple / list of 1 or 2, nor an ag_dataloader */
    PG_FIT_KIND_LOSS = 1,            /* not a loss name nor a function */
    PG_FIT_KIND_OPT_PARAMS = 2,      /* opt_params(epoch) returned no dict / named list */
    PG_FIT_KIND_OPT_PARAMS_FN = 3,   /* opt_params is not a function / callable nor NULL */
    PG_FIT_KIND_MODEL = 4,           /* the model has no parameters() */
    PG_FIT_KIND_NO_PARAMS = 5,       /* parameters() is empty (PG_STATUS_ERR_VALUE) */
    PG_FIT_KIND_CALLBACKS = 6,       /* callbacks is not a list */
    PG_FIT_KIND_CALLBACK = 7,        /* one callback is neither an object nor a function */
    PG_FIT_KIND_LOSS_VALUE = 8       /* the loss function returned no tensor */
};
int pg_fit_kind_fail(int what, const char *shown, int64_t epoch, int r_spelling);
/* ag_fit(callbacks =), one value at a time (R's rule and Python's, once): value says what the
 * front end sees (a pg_fit_cb_value: an object / environment / dict / named list whose
 * on_epoch_end is a function is HOOKS before a function / callable is FUNCTION; a list / tuple /
 * dict / named list of values is LIST); top: the argument itself, else one of its items.
 * *action (a pg_fit_cb_action): the argument: ONE (a list of this one callback) or ITEMS (each
 * item in turn); an item: WRAP (a function: its on_epoch_end) or KEEP (its hooks). Anything else
 * is PG_FIT_KIND_CALLBACKS' refusal (the argument: a string is no list) or PG_FIT_KIND_CALLBACK's
 * (an item), showing shown. */
enum pg_fit_cb_value {
    PG_FIT_CB_OTHER = 0,
    PG_FIT_CB_FUNCTION = 1,
    PG_FIT_CB_HOOKS = 2,
    PG_FIT_CB_LIST = 3
};
enum pg_fit_cb_action {
    PG_FIT_CB_ONE = 0,
    PG_FIT_CB_ITEMS = 1,
    PG_FIT_CB_WRAP = 2,
    PG_FIT_CB_KEEP = 3
};
int pg_fit_callback_plan(int value, int top, const char *shown, int r_spelling, int *action);
/* Batch b (0-based) of the training part (val 0) or the validation part (val 1), gathered into
 * tensors the fit owns and reuses (new references; their values change at the next call of the
 * same width). *yb is NULL without y. Returns the batch's width (samples on this rank), < 0 on
 * error. */
int64_t pg_fit_batch(pg_fit *f, int val, int64_t b, pg_tensor **xb, pg_tensor **yb);
/* Record the loss of the batch just gathered and, when classifying, the number of columns of
 * out [C, width] whose arg-max is the batch's class (ARGMAX), or of out's elements whose side of
 * the threshold is their target's (PROBS / LOGITS: out must be y's shape [K, width]). */
int pg_fit_record(pg_fit *f, int val, double loss, pg_tensor *out);
/* For the progress display: *loss the mean training loss so far, *accuracy the accuracy so far
 * (NaN when not classifying or nothing recorded). */
int pg_fit_running(const pg_fit *f, double *loss, double *accuracy);
/* One part's epoch statistics (NaN where not measured). */
typedef struct pg_fit_result {
    double loss, loss_unc, accuracy, accuracy_unc;
} pg_fit_result;
/* The epoch's statistics of the training batches and of validation (NaN without).
 * per_datapoint 0: a sum loss (ggml's totals). */
int pg_fit_epoch_end(const pg_fit *f, int per_datapoint, pg_fit_result *train, pg_fit_result *val);
/* ag_fit's guard on a diverged run (as keras' TerminateOnNaN), on the epoch's statistics r[0]
 * (training) and r[1] (validation) from pg_fit_epoch_end: 1 when the training loss or a measured
 * validation loss is NaN or +-Inf, with the warning that ag_fit gives (naming the epoch, why
 * training stops, what to try) in msg (n bytes); 0 when finite; < 0 on error. */
int pg_fit_loss_diverged(const pg_fit *f, const pg_fit_result *r, int64_t epoch, char *msg,
                         int64_t n);
/* Batches b0 .. b1 - 1 of a part through a compiled step g (ag_compile) recorded on the plan's
 * batch tensors of their width (inputs 0 and 1: x and y), all in C: gather, replay, record the
 * loss and, when classifying, the hits of out (the graph's model output). Returns the count
 * run, < 0 on error (the batches before it stay recorded). */
int64_t pg_fit_run_static(pg_fit *f, int val, int64_t b0, int64_t b1, pg_graph *g, pg_tensor *out);
/* One eager training micro-batch after the host's forward and loss (the host closed the tape):
 * backward from the 1x1 loss, the optimizer's summed step (accumulate_steps counts the micro-
 * batches), zero grad, the loss and accuracy of out recorded, the tape cleared; *lval the loss.
 * An error in backward (an ag_checkpoint replay's included) changes nothing. */
int pg_fit_train_step(pg_fit *f, pg_tensor *loss, pg_tensor *out, pg_optim *o, double *lval);
/* Data parallelism: the epoch's training statistics as sums to all-reduce (SUM) across ranks,
 * then read back, so every rank's epoch_end describes all ranks' samples (each global batch's
 * loss the width-weighted mean of its shards'). Layout (pg_fit_stats_len values): per batch
 * width * loss, then per batch width, then correct count, sample count. Import refuses a
 * buffer of another length or a global batch without samples. */
int64_t pg_fit_stats_len(const pg_fit *f);
int pg_fit_stats_export(const pg_fit *f, double *buf, int64_t len);
int pg_fit_stats_import(pg_fit *f, const double *buf, int64_t len);
/* ag_accuracy's count: columns of out [classes, n] (column-major doubles) whose first maximum is
 * y's class; y is [1, n] 0-based class ids (whole numbers in [0, classes), else PG_STATUS_ERR_VALUE
 * naming the position) or [classes, n] one-hot / scores (their first maximum). */
int pg_accuracy_count(const double *out, int64_t classes, int64_t n, const double *y, int64_t krows,
                      int64_t *ncorrect);
/* ag_accuracy's binary count (fit_binary.c): elements of out [rows, n] above threshold (0.5 for
 * probabilities, 0 for logits) that match y [rows, n] (0/1 labels: a target counts as 1 above
 * 0.5; one outside [0, 1] is PG_STATUS_ERR_VALUE naming its row and column); *ndata = rows * n.
 * A multi-label output counts each element, as keras' binary_accuracy. Errors name fn (NULL:
 * "ag_accuracy"; ag_evaluate's metrics count here too). */
int pg_binary_count(const char *fn, const double *out, int64_t rows, int64_t n, const double *y,
                    int64_t yrows, double threshold, int64_t *ncorrect, int64_t *ndata);
/* ag_accuracy's value, once for R and Python (fn names the caller): out [k, n] against y
 * [yrows, yn] (samples must agree: PG_STATUS_ERR_SHAPE). A 1-output model, or any model given a
 * threshold (has_threshold), is scored per element (pg_binary_count; 0.5 without one), else
 * by arg-max (pg_accuracy_count), where booleans (bools: y was a logical / bool vector) are
 * PG_STATUS_ERR_ARG. *acc: the share of hits. */
int pg_accuracy(const char *fn, const double *out, int64_t k, int64_t n, const double *y,
                int64_t yrows, int64_t yn, int has_threshold, double threshold, int bools,
                double *acc);
/* ag_fit's class count before training (fit_binary.c): nclass classes in cross_entropy targets
 * (levels 1: labels' classes, R's factor levels or Python's categories / distinct strings, unused
 * ones counted, which must equal the model's outputs; 0: the largest id + 1,
 * which must not exceed them: a class absent from the data is fine, as in PyTorch and keras)
 * against the model's outputs (< 1: unknown, nothing checked). PG_STATUS_ERR_VALUE names both
 * numbers. */
int pg_fit_check_classes(int64_t nclass, int64_t outputs, int levels);
/* ag_fit's cross_entropy class ids y [1, n] before training, once for R and Python: with
 * one_based (R's idiom) and no labels, ids 1..outputs are refused first with
 * pg_fit_one_based_hint's text; then pg_fit_check_classes with nlevels (>= 0: the labels' count,
 * a factor's levels or a Categorical's categories) or the largest id + 1. Ids that
 * are not whole numbers >= 0 (or not finite) pass: pg_fit_new's checks name the sample. */
int pg_fit_check_ids(const double *y, int64_t n, int64_t outputs, int64_t nlevels, int one_based);
/* ag_fit(x = an ag_dataloader): y given (has_y), or batch_size / shuffle other than ag_fit's
 * defaults exactly (pg_fit_default_params'; batch_size: the number given, NaN when not a
 * number; shuffle_true: shuffle is the language's TRUE), is PG_STATUS_ERR_ARG: the loader's
 * are the fit's. */
int pg_fit_loader_check(int has_y, double batch_size, int shuffle_true);
/* Missing class labels (R's NA, Python's None / NaN) of y, or of validation_data's y when
 * validation: nmissing of them, the first at 0-based column first, are PG_STATUS_ERR_VALUE worded
 * as the non-finite check; none is 0. */
int pg_fit_labels_missing(int validation, int64_t nmissing, int64_t first);
/* Labels (NULL: a missing one, R's NA, Python's None) as 0-based ids (doubles) of classes, the
 * known labels (y's in ag_fit, the model's in ag_evaluate), once for R and Python. With
 * validation (validation_data's y) missing labels are first pg_fit_labels_missing's error; then
 * a label not among classes (a missing one shown as NA) is PG_STATUS_ERR_VALUE naming fn, what
 * (e.g. "validation_data's y") and whose labels, with the first 10 classes; labels shown to 40
 * code points (UTF-8). Equal class names: the first wins. */
int pg_labels_code(const char *fn, const char *what, const char *whose, const char *const *labels,
                   int64_t n, const char *const *classes, int64_t nclasses, int validation,
                   double *ids);
/* ag_fit's labels y given as strings hold one label a sample: a vector, or a matrix of one row or
 * one column (dims, ndim); anything else is PG_STATUS_ERR_VALUE naming the dims. */
int pg_labels_shape(const int64_t *dims, int ndim);
/* ag_fit's labels given as strings (R's character y, Python's str values; NULL: missing), once
 * for R and Python: the classes are the distinct labels in code-point order (their UTF-8 bytes).
 * Writes each label's 0-based class id to ids (-1: missing) and the index of each class's first
 * label to first (room for n); returns the number of classes, or -status. */
int64_t pg_labels_classes(const char *const *labels, int64_t n, int64_t *ids, int64_t *first);
/* ag_fit's class labels (R's factor y, Python's strings or Categorical) as n 0-based ids (NaN
 * or negative: missing): missing ones are PG_STATUS_ERR_VALUE as the non-finite check words them
 * (their count, the first's column); then the loss must be "cross_entropy", or with nlabels 2 one
 * of the BCE losses (factor: R's wording). */
int pg_fit_labels_check(const char *loss, int64_t nlabels, const double *ids, int64_t n,
                        int factor);
/* static = None's one notice of a run that falls back to the eager step, with the core's reason
 * (why); r_spelling: R's "static = NULL" / "static = FALSE", else Python's "static=None". As
 * pg_fit_probe_why: at most cap bytes to buf; returns the whole text's length, or -status. */
int64_t pg_fit_static_notice(const char *why, int r_spelling, char *buf, int64_t cap);
/* A model whose recurrent layer has return_state set (its forward returns a list): always
 * PG_STATUS_ERR_ARG naming fn and the model. */
int pg_fit_return_state(const char *fn, const char *model);
/* A model with no forward(x) that is not a function either (params 0), or with no parameters()
 * (params 1); got: its class / type name. Always PG_STATUS_ERR_ARG naming fn (ag_predict,
 * ag_evaluate, ag_estimate_training_memory(), ...). */
int pg_fit_model_fail(const char *fn, int params, const char *got);
/* ag_fit(metrics =)'s codes (pg_metric_code's, n of them) without "accuracy" (the History's own
 * column), in place; the count left, or -PG_STATUS_ERR_ARG when any is left without targets. */
int64_t pg_fit_metric_codes_fit(int *codes, int64_t n, int has_y);
/* R's hint for class ids that look 1-based (finite, min 1, max k >= 1): the text, else NULL. */
const char *pg_fit_one_based_hint(const double *ids, int64_t n, int64_t k);
