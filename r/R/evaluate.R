# ag_evaluate and ag_fit(metrics =)'s names: every value is computed and assembled in the core
# (native/metrics.c, native/evaluate.c), the same calls as Python's pyggmlr/fit/evaluate.py.

# metrics: NULL or a character vector of names (the core checks the names against the task)
.metric_names <- function(metrics, fn) {
  if (!is.null(metrics) && !is.character(metrics))
    .arg_fail("argument", "%s: metrics must be NULL or a character vector of metric names, got %s",
              fn, .arg_show(metrics))
  metrics
}

# ag_accuracy's and ag_evaluate's threshold: a number or NULL (Python's check_threshold)
.check_threshold <- function(threshold, fn) {
  # NaN is a number (the core refuses it, as Python's float('nan')); NA is not
  if (!is.null(threshold) && (!is.numeric(threshold) || length(threshold) != 1L ||
                              (is.na(threshold) && !is.nan(threshold))))
    .arg_fail("argument", "%s: threshold must be a number or NULL, got %s", fn,
              .arg_show(threshold))
}

ag_evaluate <- function(model, x, y, metrics = NULL, batch_size = 256L, loss = NULL,
                        threshold = NULL) {
  fn <- "ag_evaluate"
  .check_threshold(threshold, fn)
  if (!is.null(loss) && !(is.character(loss) && length(loss) == 1L && !is.na(loss)))
    .arg_fail("argument", "%s: loss must be NULL or a loss name such as \"mse\", got %s", fn,
              .arg_show(loss))
  tg <- .model_target(model)  # what ag_fit recorded (model files keep it)
  if (is.null(loss)) loss <- tg$loss
  .Call(R_pg_metric_asked, fn, !is.null(loss), !is.null(metrics))
  levels <- if (is.factor(y)) levels(y)
  if (!is.null(tg$classes) && (is.factor(y) || is.character(y))) {  # labels: the model's codes
    levels <- tg$classes
    y <- .code_labels(y, tg$classes, fn, "y", "the model's classes")
  }
  if (is.factor(y)) y <- as.integer(y) - 1L
  Y <- .fit_cols(y, "y", fn)
  out <- .predict(model, x, batch_size, fn)
  storage.mode(out) <- "double"
  # the reading, the loss and each metric: the core's (pg_evaluate)
  res <- .Call(R_pg_evaluate, fn, loss, threshold, .metric_names(metrics, fn), out, Y)
  cm <- res$confusion_matrix  # rows the true class, columns the predicted one
  if (!is.null(cm)) {
    lab <- if (length(levels) == nrow(cm)) levels else as.character(seq_len(nrow(cm)) - 1L)
    dimnames(res$confusion_matrix) <- list(true = lab, predicted = lab)
  }
  res
}

# ---- ag_fit(metrics =): the plan keeps the epoch's outputs, the core computes at epoch end ----

# ag_fit's metric codes, checked before training; "accuracy" is the History's own column
.fit_metric_codes <- function(metrics, classify, has_y) {
  codes <- if (!is.null(metrics))
    .Call(R_pg_metric_codes, "ag_fit", .metric_names(metrics, "ag_fit"), classify, TRUE)
  .Call(R_pg_fit_metric_codes_fit, as.integer(codes), has_y)
}

# the History's metric columns: each name, then val_<name> with validation data
.fit_metric_columns <- function(codes, has_val) {
  nm <- vapply(codes, function(c) .Call(R_pg_metric_name, c), "")
  c(nm, if (has_val && length(nm)) paste0("val_", nm))
}
