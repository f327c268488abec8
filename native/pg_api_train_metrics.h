/* pyggmlr C core: ag_fit(metrics =) on the data plan (fit.c, fit_metrics.c). Named to sort after
 * pg_api_train.h (it uses pg_fit); cdef-clean like pg_api.h.
 *
 * Metrics such as AUC or F1 are not means over batches: with metrics set, the plan keeps every
 * recorded batch's outputs (as doubles) and targets for the epoch, per part (the training
 * batches as the model saw them, in training mode, as keras; validation), and computes each
 * metric (pg_metric_value, the plan's classify) over the whole epoch at its end. Refused on a
 * sharded plan (distributed): each rank keeps only its shard and these metrics do not
 * all-reduce. */
/* codes: n pg_metric_code values (checked by the front end against the loss; CONFUSION_MATRIX is
 * refused); n 0 turns keeping off. */
int pg_fit_metrics(pg_fit *f, int64_t n, const int *codes);
/* The epoch's value of each metric (n of them, in codes' order) for the training part (val 0)
 * or validation (1); NaN where the part recorded no batch. */
int pg_fit_metrics_epoch(const pg_fit *f, int val, double *values);
/* The codes set by pg_fit_metrics (borrowed, in their order) and their count; 0 when none. */
int64_t pg_fit_metric_codes(const pg_fit *f, const int **codes);
/* The monitors' mask for pg_early_stop_begin / pg_checkpoint_begin (pg_api_metrics.h), once the
 * metrics are set: bit 0 accuracy is counted (a classify code), bit c metric code c is a column.
 * Returns -status on error. */
int pg_fit_monitor_mask(const pg_fit *f);
/* The History's metric columns as both front ends print them below the main table: ncol columns
 * named names[c] with values[c * n + i] for epoch[i] (NaN: "-"), 4 decimals. As
 * pg_fit_history_format: at most cap bytes (NUL included) to out, NULL to measure; returns the
 * length the whole text needs, or a negative status. ncol 0: "". */
int64_t pg_fit_metrics_format(int64_t ncol, const char *const *names, const double *values,
                              const double *epoch, int64_t n, char *out, int64_t cap);
