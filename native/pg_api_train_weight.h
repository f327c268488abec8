/* pyggmlr C core: ag_fit(sample_weight =, class_weight =), keras' semantics, once for R and
 * Python (fit_weight.c, fit_wloss.c). cdef-clean like pg_api.h.
 *
 * Each training sample's loss is multiplied by its weight and a batch's loss is the sum of the
 * weighted per-sample losses divided by the batch size (keras' "sum_over_batch_size"): for the
 * element-mean losses (mse, binary_cross_entropy, bce_with_logits, huber, mae, mean) every term
 * of sample j is multiplied by w[j] and the total divided by numel as before; cross_entropy's
 * per-column terms by w[j], divided by the batch size; sum's by w[j], not divided. Validation
 * stays unweighted (keras without validation sample weights). */

/* Attach weights to plan f (after pg_fit_new, before the first batch), for the run's loss (a
 * PG_FIT_LOSS_* code; -1, a user's function, is refused: it gets no weights).
 * sw: nsw sample weights (NULL: none), one per sample the caller gave (x's columns; with
 *   validation_data, x's own columns only), finite and >= 0.
 * cw: ncw class weights (NULL: none) for the 0-based class ids cw_id (NULL: 0 .. ncw - 1),
 *   whole numbers in [0, 2^24], each once; a class not given weighs 1 (keras); each weight
 *   finite and >= 0. Only for class-id targets: loss cross_entropy (ids or one-hot: the first
 *   maximum) or a binary loss with one 0/1 row.
 * nclass: cross_entropy's number of classes when the host knows it (the model's outputs, else
 *   the labels' count: a factor's levels, a Categorical's categories), < 1: from y (one-hot y's
 *   rows, else the largest id + 1); the binary losses have 2 (ids 0 and 1). A class id given
 *   that is not one of them is PG_STATUS_ERR_VALUE (keras refuses such keys).
 * Both: multiplied. Every weight 0 is an error. Errors name ag_fit and the argument, and a class
 * by its label when labels (y's nlabels labels in id order; NULL: class-id y) has it. */
int pg_fit_set_weights(pg_fit *f, int loss, const double *sw, int64_t nsw, const double *cw_id,
                       const double *cw, int64_t ncw, int64_t nclass, const char *const *labels,
                       int64_t nlabels);
/* class_weight's keys as 0-based class ids (ids[n]), once for R and Python: keys are strings
 * (R's names, Python's dict keys as text; NULL: a missing key, R's NA, Python's None). Labels y
 * (classes: y's nclasses labels in id order): each key must be one of them, each once (a key is
 * never read as an id: "0" may be a label). Class-id y (nclasses < 0): each key must be a
 * number's text (pg_fit_set_weights checks it is a whole number >= 0). PG_STATUS_ERR_VALUE
 * naming the key (and the labels); 0 on success. */
int pg_fit_class_keys(const char *const *keys, int64_t n, const char *const *classes,
                      int64_t nclasses, double *ids);
/* sample_weight's shape dims [ndim], before its values are read: a vector, or a one-row /
 * one-column matrix, else PG_STATUS_ERR_SHAPE naming ag_fit and the shape ("2x3"). */
int pg_fit_weight_shape(const int64_t *dims, int ndim);
/* The weight row [1, width] of the training batch pg_fit_batch gathered last (a new reference,
 * reused like the batch tensors), NULL when the plan is unweighted (no error). */
pg_tensor *pg_fit_batch_weights(pg_fit *f);
/* The loss of pg_fit_loss with each sample (column of out) weighted by w [1, width] (a
 * constant in out's dtype, read again by every replay of a compiled graph); NULL w: pg_fit_loss.
 * One tape node with the exact derivative (f32 and f64). */
pg_tensor *pg_fit_loss_weighted(int loss, pg_tensor *out, pg_tensor *y, pg_tensor *w);
