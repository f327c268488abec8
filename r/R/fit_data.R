# What ag_fit accepts as data besides matrices, as Python's fit_data.py (same rules, same texts):
# an ag_dataloader as x (its data, batch_size, shuffle and seed become the fit's), validation_data
# = list(x_val, y_val) (or a loader) in place of val_split, and keras' verbose levels. The batching
# stays in the core's plan: validation columns go after the training ones and are held out as
# the plan's validation part, with the split fixed (pg_fit_set_shuffle).

.fit_data <- function(x, y, validation_data, batch_size, shuffle, seed, val_split,
                      loader_args_given) {
  d <- list(x = x, y = y, batch_size = batch_size, shuffle = shuffle, seed = seed,
            val_split = val_split, fixed = FALSE)
  if (inherits(x, "ag_dataloader")) {
    if (!is.null(y))
      .arg_fail("argument",
                paste0("ag_fit: x is an ag_dataloader, which holds the targets: pass y to ",
                       "ag_dataloader(x, y), not to ag_fit"))
    if (loader_args_given)
      .arg_fail("argument",
                paste0("ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's; ",
                       "set them on ag_dataloader(), not on ag_fit"))
    d$batch_size <- x$batch_size
    d$shuffle <- x$shuffle
    if (is.null(seed)) d$seed <- x$seed
    d$x <- x$x
    d$y <- x$y
  }
  if (is.null(validation_data)) return(d)
  if (!isTRUE(all.equal(as.double(val_split), 0)))
    .arg_fail("argument", "ag_fit: give either val_split or validation_data, not both")
  if (inherits(validation_data, "ag_dataloader")) {
    xv <- validation_data$x
    yv <- validation_data$y
  } else if (is.list(validation_data) && length(validation_data) %in% 1:2) {
    xv <- .fit_cols(validation_data[[1L]], "validation_data")
    yv <- if (length(validation_data) == 1L ||
              is.null(validation_data[[2L]])) NULL else validation_data[[2L]]
  } else {
    .arg_fail("argument",
              paste0("ag_fit: validation_data must be a list (x_val, y_val), (x_val) or an ",
                     "ag_dataloader, got %s"), class(validation_data)[[1L]])
  }
  X <- .fit_cols(d$x, "x")
  if (is.factor(yv)) yv <- as.integer(yv) - 1L
  Y <- if (is.null(d$y)) NULL else .fit_cols(if (is.factor(d$y)) as.integer(d$y) - 1L else d$y, "y")
  yv <- if (is.null(yv)) NULL else .fit_cols(yv, "validation_data")
  if (is.null(Y) != is.null(yv))
    .arg_fail("argument",
              paste0("ag_fit: validation_data needs targets exactly when the training data have ",
                     "them (training y %s, validation y %s)"),
              if (is.null(Y)) "absent" else "given", if (is.null(yv)) "absent" else "given")
  if (nrow(xv) != nrow(X)) .arg_fail("shape",
                                     "ag_fit: validation_data x has %d features (rows), x has %d",
                                     nrow(xv), nrow(X))
  if (!is.null(Y)) {
    if (ncol(yv) != ncol(xv)) .arg_fail("shape",
                                        paste0("ag_fit: validation_data x has %d samples ",
                                               "(columns) but y has %d"), ncol(xv), ncol(yv))
    if (nrow(yv) != nrow(Y)) .arg_fail("shape", "ag_fit: validation_data y has %d rows, y has %d",
                                       nrow(yv), nrow(Y))
  }
  n <- ncol(X)
  nv <- ncol(xv)
  if (nv < 1L || n < 1L) .arg_fail("value",
                                   paste0("ag_fit: validation_data and x need at least one ",
                                          "sample each, got %d and %d"), nv, n)
  d$x <- cbind(X, xv)
  if (!is.null(Y)) d$y <- cbind(Y, yv)
  d$val_split <- nv / (n + nv)  # the plan holds out round(val_split * total) = nv at the end
  d$fixed <- TRUE
  d
}

# keras' verbose: 0 silent, 1 the progress bar, 2 one line per epoch; NULL: progress / silent as
# given
.fit_verbosity <- function(verbose, progress, silent) {
  silent <- .arg_flag(silent, "ag_fit", "silent")
  if (is.null(verbose)) return(list(progress = progress, silent = silent))
  if (!is.numeric(verbose) || length(verbose) != 1L || is.na(verbose) || !verbose %in% 0:2)
    .arg_fail("value",
              paste0("ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per ",
                     "epoch) or NULL, got %s"),
              paste(format(verbose), collapse = " "))
  list(progress = c("none", "bar", "lines")[verbose + 1L], silent = isTRUE(silent) || verbose == 0)
}
