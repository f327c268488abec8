# Losses beyond ggmlR's (and ggml-opt's) mse / cross-entropy, with PyTorch's definitions; thin
# .Call wrappers (forward, exact backward and the compiled-graph replay live in
# native/ops_loss2.c). Each is a 1x1 ag_tensor, the mean over all elements of pred (ag_mse_loss's
# reduction); only pred / logits get a gradient, target and weight are constants.

# torch's BCELoss: -(t log p + (1 - t) log(1 - p)), each log clamped to >= -100; pred and target in
# [0, 1]; pos_weight (one per row, or one): -(pw t log p + (1 - t) log(1 - p))
ag_binary_cross_entropy_loss <- function(pred, target, pos_weight = NULL) {
  if (is.null(pos_weight)) return(.Call(R_pg_bce_loss, pred, target))
  .Call(R_pg_bce_loss_pw, pred, target,
        .loss_weights(pos_weight, "ag_binary_cross_entropy_loss", "pos_weight"))
}

# torch's BCEWithLogitsLoss: max(x, 0) - x t + log1p(exp(-|x|)); target in [0, 1]; pos_weight as
# torch's (one per row, or one); the core checks its length and values
ag_bce_with_logits_loss <- function(logits, target, pos_weight = NULL) {
  if (is.null(pos_weight)) return(.Call(R_pg_bce_logits_loss, logits, target))
  .Call(R_pg_bce_logits_loss_pw, logits, target,
        .loss_weights(pos_weight, "ag_bce_with_logits_loss", "pos_weight"))
}

# a loss's weights: an ag_tensor, or numbers as a column (the core checks length and values)
.loss_weights <- function(v, op, arg) {
  if (is_ag_tensor(v)) return(v)
  # R's NA is logical: a missing number (the core refuses it as Python's NaN), not a boolean
  if (is.logical(v) && !all(is.na(v)))
    .arg_fail("argument", "%s: %s must be numbers, got booleans", op, arg)
  if (!is.numeric(v) && !is.logical(v))  # Python's text (as_numeric)
    .arg_fail("argument", "%s: %s must be numeric, got %s", op, arg, class(v)[1L])
  matrix(as.double(v), ncol = 1L)
}

# a loss's number option (a non-number gets the core's text for a bad value)
.loss_number <- function(v, op, arg, rule) {
  if (!is.numeric(v) || length(v) != 1L || !is.null(dim(v)))  # no 1x1 matrix, as Python's
    .arg_fail("value", "%s: %s must be %s, got %s", op, arg, rule, deparse(v)[1L])
  as.double(v)
}

# torch's HuberLoss: 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); d = pred - target
ag_huber_loss <- function(pred, target, delta = 1) {
  # a number goes to the core, which checks it (finite, > 0) with Python's message
  if (!is.numeric(delta) || length(delta) != 1L || !is.null(dim(delta)))
    .arg_fail("value", "ag_huber_loss: delta must be a finite number > 0, got %s",
              deparse(delta)[1L])
  .Call(R_pg_huber_loss, pred, target, as.double(delta))
}

# torch's L1Loss: |pred - target|; gradient sign(d), 0 at d == 0
ag_mae_loss <- function(pred, target) .Call(R_pg_mae_loss, pred, target)

# sum(weight (pred - target)^2) / length(pred); weight: pred's shape, [rows, 1], [1, cols] or [1, 1]
ag_weighted_mse_loss <- function(pred, target, weight) .Call(R_pg_weighted_mse_loss, pred, target,
                                                             weight)
