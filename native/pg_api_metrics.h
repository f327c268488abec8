/* pyggmlr C core: ag_fit(metrics =) and ag_evaluate's metrics (metrics.c), once for R and Python.
 * cdef-clean like pg_api.h.
 *
 * Operands: out [k, n] (the model's outputs, column-major doubles) and y [yrows, n]; classify
 * (enum pg_fit_classify) says how out is read:
 *   ARGMAX: the prediction is a column's first maximum; y is [1, n] 0-based ids in [0, k) or
 *     [k, n] one-hot (its first maximum). k classes.
 *   PROBS / LOGITS: out [k, n] scores against y [k, n] 0/1 labels (1 when above 0.5); an output
 *     above threshold (NaN: 0.5 on PROBS, 0 on LOGITS) predicts 1. 2 classes; auc, precision,
 *     recall, f1 and confusion_matrix need k == 1.
 *   NONE: regression, only mae, mse, rmse, r2.
 * Regression metrics take y of out's shape under any classify and compare raw outputs.
 * Definitions follow scikit-learn 1.9 (docs/metrics.md): auc is roc_auc_score (average ranks
 * for ties; ARGMAX: one-vs-rest macro over the softmax of the outputs, classes present in y and
 * absent from it both required per class, else skipped; NaN when no class qualifies);
 * precision / recall / f1 on a 1-output model are the positive class 1's, on a multi-output
 * one macro averages over the classes seen in y or the predictions (sklearn's labels=None);
 * _micro / _macro choose; a 0/0 is 0 (zero_division=0); mae / mse / r2 average over outputs
 * uniformly, rmse is the mean over outputs of each one's root (root_mean_squared_error); r2 of
 * a constant target is 1 when predicted exactly, else 0 (force_finite). */
enum pg_metric {
    PG_METRIC_ACCURACY = 1,
    PG_METRIC_BINARY_ACCURACY = 2,
    PG_METRIC_AUC = 3,
    PG_METRIC_PRECISION = 4,
    PG_METRIC_PRECISION_MACRO = 5,
    PG_METRIC_PRECISION_MICRO = 6,
    PG_METRIC_RECALL = 7,
    PG_METRIC_RECALL_MACRO = 8,
    PG_METRIC_RECALL_MICRO = 9,
    PG_METRIC_F1 = 10,
    PG_METRIC_F1_MACRO = 11,
    PG_METRIC_F1_MICRO = 12,
    PG_METRIC_CONFUSION_MATRIX = 13,
    PG_METRIC_MAE = 14,
    PG_METRIC_MSE = 15,
    PG_METRIC_RMSE = 16,
    PG_METRIC_R2 = 17
};
/* The code of a metric name (> 0), checked against the task: fn (ag_fit / ag_evaluate) and the
 * argument `metrics` are named; an unknown name lists the valid ones; a metric that does not fit
 * classify (auc on regression) or, with in_fit, confusion_matrix (not a History column) is
 * PG_STATUS_ERR_VALUE. Returns -status on error. */
int pg_metric_code(const char *fn, const char *name, int classify, int in_fit);
/* The canonical name of a code ("" when out of range). */
const char *pg_metric_name(int code);
/* 1 for the metrics that compare outputs with targets of the same shape (mae, mse, rmse, r2) */
int pg_metric_regression(int code);
/* Which way is better for early stopping's mode "auto": 1 larger (accuracy, auc, precision,
 * recall, f1*, r2), -1 smaller (mae, mse, rmse), 0 not a metric name. name may carry "val_". */
int pg_metric_mode(const char *name);
/* One metric's value (any code but CONFUSION_MATRIX) of out against y, as the header says. */
int pg_metric_value(const char *fn, int code, int classify, double threshold, const double *out,
                    int64_t k, int64_t n, const double *y, int64_t yrows, double *value);
/* The confusion matrix's side: k under ARGMAX, 2 under PROBS / LOGITS, < 0 otherwise. */
int64_t pg_metric_nclass(int classify, int64_t k);
/* The confusion matrix [c, c] (c = pg_metric_nclass), column-major counts: row = true class,
 * column = predicted (sklearn's and R's table(true, pred) orientation). */
int pg_confusion_matrix(const char *fn, int classify, double threshold, const double *out,
                        int64_t k, int64_t n, const double *y, int64_t yrows, int64_t *counts);
/* ag_evaluate's loss = name: the PG_FIT_LOSS_* code and how it reads the outputs (a
 * pg_fit_classify code), ag_fit's names and rules with fn's name in the errors. */
int pg_metric_loss(const char *fn, const char *name, int *loss, int *classify);
/* ag_evaluate asks for something: a loss (given or recorded on the model), metrics or both,
 * else PG_STATUS_ERR_ARG naming fn. */
int pg_metric_asked(const char *fn, int has_loss, int has_metrics);
/* ag_evaluate's reading of out [rows, n] against y of yn samples (they must agree:
 * PG_STATUS_ERR_SHAPE "x has n samples but y has yn"): with a loss name, pg_metric_loss's; with
 * none (NULL) *loss -1 and the outputs read as probabilities for one output or a threshold
 * (has_threshold), else by arg-max. */
int pg_metric_read(const char *fn, const char *name, int has_threshold, int64_t rows, int64_t n,
                   int64_t yn, int *loss, int *classify);
/* ag_evaluate's loss: the built-in loss (a PG_FIT_LOSS_* code) of out [k, n] against y
 * [yrows, n] over all samples at once, in f64 (mean and sum read out alone). */
int pg_metric_loss_value(const char *fn, int loss, const double *out, int64_t k, int64_t n,
                         const double *y, int64_t yrows, double *value);
/* The distinct codes of n metric names (pg_metric_code's rules and texts, a name given twice
 * counted once, in the order given) into codes (room for n); the count or -status. */
int64_t pg_metric_codes(const char *fn, const char *const *names, int64_t n, int classify,
                        int in_fit, int *codes);
/* ag_evaluate's results, assembled once for R and Python: out [k, n] against y [yrows, yn] read
 * as pg_metric_read says (loss a name or NULL; has_threshold 0: the reading's default; one
 * given must be finite, else PG_STATUS_ERR_VALUE),
 * then the n_names metric names (pg_metric_codes). Writes the loss's value over all samples to
 * *loss_value (NaN without a loss) and each metric's code and value to codes / values (room for
 * n_names); CONFUSION_MATRIX's value is its side c, its c * c counts (column-major, row the true
 * class) go to cm (room for cm_room counts; max(k, 2)^2 holds any). Returns the number of
 * metrics, or -status. */
int64_t pg_evaluate(const char *fn, const char *loss, int has_threshold, double threshold,
                    const char *const *names, int64_t n_names, const double *out, int64_t k,
                    int64_t n, const double *y, int64_t yrows, int64_t yn, double *loss_value,
                    int *codes, double *values, int64_t *cm, int64_t cm_room);
/* ag_early_stopping / ag_model_checkpoint's monitor may name a History metric column ("auc",
 * "val_f1"): pg_fit_log_parse gives it the code PG_FIT_LOG_COUNT + 2 * (metric - 1) + val, and
 * the logs arrays the callbacks' updates read then hold PG_FIT_LOG_ALL values: the History's
 * PG_FIT_LOG_COUNT, then per metric code its value and its val_ value (NaN where not measured).
 * pg_early_stop_begin / pg_checkpoint_begin's has_accuracy is then a mask: bit 0 accuracy is
 * counted, bit c metric code c is in ag_fit(metrics =); -1: unknown, all count as measured. */
enum { PG_FIT_LOG_ALL = 45 };
