# ag_evaluate and ag_fit(metrics =)'s names: every value comes from the core (native/metrics.c,
# r/src/r_metrics.c), the same calls as Python's pyggmlr/fit/evaluate.py.

# the core's codes of metrics (NULL or a character vector), checked against the task
.metric_codes <- function(metrics, fn, classify, in_fit) {
  if (is.null(metrics)) return(integer())
  if (!is.character(metrics))
    .arg_fail("argument", "%s: metrics must be NULL or a character vector of metric names, got %s",
              fn, .arg_show(metrics))
  .Call(R_pg_metric_codes, fn, metrics, as.integer(classify), in_fit)
}

.metric_name <- function(code) .Call(R_pg_metric_name, as.integer(code))

# ag_accuracy's and ag_evaluate's threshold: a number or NULL (Python's check_threshold)
.check_threshold <- function(threshold, fn) {
  if (!is.null(threshold) && (!is.numeric(threshold) || length(threshold) != 1L ||
                              is.na(threshold)))
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
  storage.mode(Y) <- "double"
  storage.mode(out) <- "double"
  lc <- .Call(R_pg_metric_read, fn, loss, !is.null(threshold), dim(out), ncol(Y))  # the core's
  classify <- lc[[2L]]
  codes <- .metric_codes(metrics, fn, classify, FALSE)
  thr <- if (is.null(threshold)) NA_real_ else as.double(threshold)
  res <- list()
  if (!is.null(loss)) res$loss <- .Call(R_pg_metric_loss_value, fn, lc[[1L]], out, Y)
  for (code in codes) {
    nm <- .metric_name(code)
    v <- .Call(R_pg_metric_value, fn, code, classify, thr, out, Y)
    if (is.matrix(v)) {  # confusion_matrix: rows the true class, columns the predicted one
      lab <- if (!is.null(levels) && length(levels) == nrow(v)) levels else
        as.character(seq_len(nrow(v)) - 1L)
      dimnames(v) <- list(true = lab, predicted = lab)
    }
    res[[nm]] <- v
  }
  res
}

# ---- ag_fit(metrics =): the plan keeps the epoch's outputs, the core computes at epoch end ----

# ag_fit's metric codes, checked before training; "accuracy" is the History's own column
.fit_metric_codes <- function(metrics, classify, has_y) {
  .Call(R_pg_fit_metric_codes_fit, .metric_codes(metrics, "ag_fit", classify, TRUE), has_y)
}

# the History's metric columns: each name, then val_<name> with validation data
.fit_metric_columns <- function(codes, has_val) {
  nm <- vapply(codes, .metric_name, "")
  c(nm, if (has_val && length(nm)) paste0("val_", nm))
}

# the monitors' has_accuracy: the run's mask (bit 0 accuracy, bit c metric code c); -1 for a
# hand-written loop's run that does not say (everything counts as measured); FALSE / TRUE as 0 / 1
.monitor_mask <- function(a) if (is.null(a)) -1L else as.integer(a)
