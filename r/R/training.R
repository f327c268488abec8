# Training helpers: dataloader and finite-difference gradient check.

# seed: the loader shuffles from a stream of its own, seeded as set.seed(seed) would seed R's
# (R's .Random.seed is left alone); NULL: from R's stream.
ag_dataloader <- function(x, y = NULL, batch_size = 32L, shuffle = TRUE, col_major = TRUE, seed = NULL) {
  seed <- .seed_int(seed, "ag_dataloader(): seed")
  x <- as.matrix(if (is_ag_tensor(x)) x$data else x)
  if (!is.null(y)) y <- as.matrix(if (is_ag_tensor(y)) y$data else y)
  if (!isTRUE(col_major)) {
    x <- t(x)
    if (!is.null(y)) y <- t(y)
  }
  if (!is.null(y) && ncol(x) != ncol(y))
    stop("x and y must have the same number of samples (columns in col-major)", call. = FALSE)
  batch_size <- as.integer(batch_size)
  if (is.na(batch_size) || batch_size < 1L) stop("ag_dataloader(): batch_size must be >= 1", call. = FALSE)
  e <- new.env(parent = emptyenv())
  e$x <- x
  e$y <- y
  e$n <- ncol(x)
  e$batch_size <- batch_size
  e$shuffle <- isTRUE(shuffle)
  e$seed <- seed
  e$.rng <- if (is.null(seed)) NULL else .rng_stream(seed)
  e$order <- seq_len(e$n)
  e$pos <- 1L
  e$reset <- function() {
    e$order <- if (e$shuffle) .with_stream(e$.rng, .rng_sample_int(e$n)) else seq_len(e$n)
    e$pos <- 1L
    invisible(e)
  }
  e$has_next <- function() e$pos + e$batch_size - 1L <= e$n
  e$next_batch <- function() {
    if (!e$has_next()) stop("No more batches. Call $reset() to start a new epoch.", call. = FALSE)
    idx <- e$order[e$pos:(e$pos + e$batch_size - 1L)]
    e$pos <- e$pos + e$batch_size
    xb <- ag_tensor(e$x[, idx, drop = FALSE])
    if (is.null(e$y)) return(list(x = xb))
    list(x = xb, y = ag_tensor(e$y[, idx, drop = FALSE]))
  }
  e$epoch <- function() {
    e$reset()
    out <- list()
    while (e$has_next()) out[[length(out) + 1L]] <- e$next_batch()
    out
  }
  e$n_batches <- function() e$n %/% e$batch_size
  class(e) <- "ag_dataloader"
  e$reset()
  e
}

print.ag_dataloader <- function(x, ...) {
  cat(sprintf("ag_dataloader | n=%d | batch_size=%d | n_batches=%d | shuffle=%s\n",
              x$n, x$batch_size, x$n_batches(), if (x$shuffle) "TRUE" else "FALSE"))
  invisible(x)
}

.loss_value <- function(fn, inputs) {
  out <- ag_no_grad(fn(inputs))
  if (!is_ag_tensor(out)) stop("ag_gradcheck(): fn must return a 1x1 ag_tensor", call. = FALSE)
  out$data[1L, 1L]
}

# Central differences for every named input that requires grad; inputs are restored exactly
# (the saved values are written back) and their $grad is left as it was.
ag_gradcheck <- function(fn, inputs, eps = 1e-5, atol = 1e-4, verbose = FALSE, quiet = FALSE) {
  if (!is.function(fn)) stop("ag_gradcheck(): fn must be a function", call. = FALSE)
  if (!is.list(inputs)) stop("ag_gradcheck(): inputs must be a named list", call. = FALSE)
  nms <- names(inputs)
  if (is.null(nms)) nms <- rep("", length(inputs))
  check <- which(nms != "" & vapply(inputs, function(v) is_ag_tensor(v) && isTRUE(v$requires_grad), logical(1)))
  saved_grad <- lapply(inputs[check], function(v) v$grad)
  loss <- with_grad_tape(fn(inputs))
  if (!is_ag_tensor(loss)) stop("ag_gradcheck(): fn must return a 1x1 ag_tensor", call. = FALSE)
  grads <- backward(loss)
  analytical <- lapply(inputs[check], function(v) get0(as.character(v$id), envir = grads, inherits = FALSE))
  for (k in seq_along(check)) inputs[[check[k]]]$grad <- saved_grad[[k]]
  ok_all <- TRUE
  for (k in seq_along(check)) {
    tt <- inputs[[check[k]]]
    nm <- nms[check[k]]
    orig <- tt$data
    num <- matrix(0, nrow(orig), ncol(orig))
    work <- orig
    for (j in seq_len(ncol(orig))) for (i in seq_len(nrow(orig))) {
      work[i, j] <- orig[i, j] + eps; tt$data <- work; fp <- .loss_value(fn, inputs)
      work[i, j] <- orig[i, j] - eps; tt$data <- work; fm <- .loss_value(fn, inputs)
      work[i, j] <- orig[i, j]
      num[i, j] <- (fp - fm) / (2 * eps)
    }
    tt$data <- orig
    a <- analytical[[k]]
    err <- if (is.null(a) || !identical(dim(a), dim(num))) Inf else max(abs(a - num))
    ok <- is.finite(err) && err < atol
    ok_all <- ok_all && ok
    if (!quiet) {
      cat(sprintf("[gradcheck] '%s': max_err = %.2e  %s\n", nm, err, if (ok) "PASS" else "FAIL"))
      if (verbose) {
        cat("  analytical:\n"); print(if (is.null(a)) NULL else round(a, 6))
        cat("  numerical:\n"); print(round(num, 6))
      }
    }
  }
  if (!quiet) cat(sprintf("[gradcheck] Overall: %s\n", if (ok_all) "PASS" else "FAIL"))
  invisible(ok_all)
}
