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
