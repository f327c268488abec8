/* pyggmlr C core: losses beyond ggmlR's three (ops_loss2.c), as PyTorch defines them. cdef-clean
 * like pg_api.h. Each returns a 1x1 tensor, the mean over all numel(pred) elements (the reduction
 * of pg_mse_loss), sums in double; only pred / logits receive a gradient, target and weight are
 * constants of pred's dtype and shape (weight: or broadcast, see below). */

/* Binary cross-entropy on probabilities (torch BCELoss): -(t log p + (1 - t) log(1 - p)) with each
 * log clamped to >= -100; pred and target must lie in [0, 1] (soft labels allowed). Gradient: the
 * exact derivative of that, -t / p + (1 - t) / (1 - p), each term 0 where its log is clamped. */
pg_tensor *pg_bce_loss(pg_tensor *pred, pg_tensor *target);
/* Binary cross-entropy on logits (torch BCEWithLogitsLoss), stable form
 * max(x, 0) - x t + log1p(exp(-|x|)); target in [0, 1]. Gradient sigmoid(x) - t. */
pg_tensor *pg_bce_logits_loss(pg_tensor *logits, pg_tensor *target);
/* Huber (torch HuberLoss): d = pred - target, 0.5 d^2 where |d| < delta, else
 * delta (|d| - 0.5 delta); delta finite and > 0. Gradient d clipped to [-delta, delta]. */
pg_tensor *pg_huber_loss(pg_tensor *pred, pg_tensor *target, double delta);
/* Mean absolute error (torch L1Loss): |pred - target|; gradient sign(d), 0 at d == 0. */
pg_tensor *pg_mae_loss(pg_tensor *pred, pg_tensor *target);
/* Weighted MSE: sum(w (pred - target)^2) / numel(pred); gradient 2 w (pred - target) / numel.
 * weight: pred's shape, a [rows, 1] column, a [1, cols] row or [1, 1]; finite, >= 0, no grad.
 * With weight 1 it gives pg_mse_loss's bits. */
pg_tensor *pg_weighted_mse_loss(pg_tensor *pred, pg_tensor *target, pg_tensor *weight);
/* The two BCE losses with torch's pos_weight (binary_cross_entropy_with_logits(pos_weight=)): the
 * positive term of row i weighted by pos_weight[i]; pos_weight holds one value per row of pred
 * (a [rows, 1] column or a [1, rows] row) or one value, finite, >= 0, pred's dtype, no grad.
 * Logits: (1 - t) x + (1 + (pw - 1) t) (log1p(exp(-|x|)) + max(-x, 0)), gradient
 * (1 - t) sigmoid(x) - pw t sigmoid(-x). Probabilities (torch has no pos_weight there; the same
 * rule): -(pw t log p + (1 - t) log(1 - p)), logs clamped as pg_bce_loss. NULL pos_weight: the
 * plain loss's bits. Mean over all elements. */
pg_tensor *pg_bce_loss_pw(pg_tensor *pred, pg_tensor *target, pg_tensor *pos_weight);
pg_tensor *pg_bce_logits_loss_pw(pg_tensor *logits, pg_tensor *target, pg_tensor *pos_weight);
/* Softmax cross-entropy with torch's options (F.cross_entropy, reduction "mean"); target as
 * pg_softmax_ce_loss_any (target_ids 1: class ids whatever its shape, as _ids). weight: NULL or
 * one value per class (a [K, 1] column or [1, K] row of the logits' dtype, finite, >= 0, no
 * grad); has_ignore: ignore_index (a whole number, any value) marks class ids whose columns add
 * nothing; label_smoothing in [0, 1). Class ids: the sum over kept columns of
 * (1 - ls) w[y] (-log p[y]) + ls / K sum_c w[c] (-log p[c]), divided by the sum of w[y] over the
 * kept columns (their count without weight). Matrix targets are torch's probability targets:
 * -sum_c w[c] ((1 - ls) t[c] + ls / K) log p[c], mean over the columns; ignore_index is refused
 * there (as torch). No options: pg_softmax_ce_loss_any's bits. */
pg_tensor *pg_softmax_ce_loss_opt(pg_tensor *logits, pg_tensor *target, int target_ids,
                                  pg_tensor *weight, int has_ignore, double ignore_index,
                                  double label_smoothing);
