# What ag_fit accepts as data besides matrices, as Python's fit/data.py (same rules, same texts):
# an ag_dataloader as x (its data, batch_size, shuffle and seed become the fit's), validation_data
# = list(x_val, y_val) (or a loader) in place of val_split, and keras' verbose levels. The batching
# stays in the core's plan: validation columns go after the training ones and are held out as
# the plan's validation part, with the split fixed; the rules on their shapes are the core's
# (pg_fit_val_join), which appends them in the plan (pg_fit_new).

.fit_data <- function(x, y, validation_data, batch_size, shuffle, seed) {
  d <- list(x = x, y = y, batch_size = batch_size, shuffle = shuffle, seed = seed, fixed = FALSE)
  if (inherits(x, "ag_dataloader")) {
    # only ag_fit's defaults exactly (32, TRUE) leave the loader's settings alone (core's rule)
    .Call(R_pg_fit_loader_check, !is.null(y), batch_size, isTRUE(shuffle))
    d$batch_size <- x$batch_size
    d$shuffle <- x$shuffle
    if (is.null(seed)) d$seed <- x$seed
    d$x <- x$x
    d$y <- x$y
  }
  d$y <- .labels_factor(d$y)
  if (is.null(validation_data)) return(d)
  if (inherits(validation_data, "ag_dataloader")) {
    xv <- validation_data$x
    yv <- validation_data$y
  } else if (is.list(validation_data) && length(validation_data) %in% 1:2) {
    xv <- validation_data[[1L]]
    yv <- if (length(validation_data) == 1L) NULL else validation_data[[2L]]
  } else {
    .fit_kind_fail("VALIDATION_DATA", class(validation_data)[[1L]])
  }
  d$xv <- .fit_cols(xv, "validation_data")
  y <- d$y
  if (is.factor(y) && (is.factor(yv) || is.character(yv)))
    yv <- .code_labels(yv, levels(y), "ag_fit", "validation_data's y", "y's labels", TRUE)
  else if (is.factor(yv)) yv <- as.integer(yv) - 1L
  d$yv <- if (is.null(yv)) NULL else .fit_cols(yv, "validation_data")
  d$fixed <- TRUE
  d
}

# a character y (a vector, or a one-row / one-column matrix: the core's rule) as labels, as
# Python's strings:
# the classes are the distinct strings in code-point order (the core's, pg_labels_classes: bytes
# of UTF-8, never the locale's collation); NA is a missing label. Anything else as given.
.labels_factor <- function(y) {
  if (!is.character(y)) return(y)
  .Call(R_pg_labels_shape, y)  # one label a sample
  y <- enc2utf8(as.vector(y))
  factor(y, levels = y[.Call(R_pg_labels_classes, y)])
}

# labels (a factor or characters) as 0-based ids of classes (validation_data's y: y's levels,
# ag_evaluate's y: the model's classes): the core's rules and texts, as Python's fit/labels.py
.code_labels <- function(y, classes, fn, what, whose, validation = FALSE)
  .Call(R_pg_labels_code, fn, what, whose, as.character(y), as.character(classes), validation)

# keras' verbose: 0 silent, 1 the live bar, 2 one line per epoch (the core's rule,
# pg_fit_verbosity); NULL or "auto" (keras' default): progress / silent as given, so
# progress = "auto" picks 1 or 2 (.fit_progress_mode)
.fit_verbosity <- function(verbose, progress, silent) {
  silent <- .arg_flag(silent, "ag_fit", "silent")
  if (is.null(verbose) || identical(verbose, "auto"))
    return(list(progress = progress, silent = silent))
  num <- is.numeric(verbose) && length(verbose) == 1L && !is.na(verbose)
  shown <- .arg_show(verbose)  # "a" quoted, as Python's repr
  m <- .Call(R_pg_fit_verbosity, num, if (num) verbose else 0, shown)
  list(progress = c("none", "bar", "lines")[m + 1L], silent = silent || m == 0L)
}
