# Training helpers: dataloader and finite-difference gradient check.

# a numeric matrix [features, n], never a 3-D array flattened nor a list (as.matrix of a ragged
# list is a list matrix); a vector is one row [1, n] (one value per sample, e.g. class ids) in
# either layout, a matrix is transposed when not col_major: as Python's _as_data
.loader_data <- function(v, name, col_major) {
  if (is_ag_tensor(v)) v <- v$data
  if (length(dim(v)) > 2L)
    .arg_fail("shape", "ag_dataloader: %s must be a matrix or a vector, got a %s array", name,
              paste(dim(v), collapse = "x"))
  if (is.data.frame(v)) v <- as.matrix(v)
  if (!(is.numeric(v) || is.logical(v)) || is.factor(v))
    .arg_fail("argument", "ag_dataloader: %s must be numeric, got %s", name, class(v)[[1L]])
  if (is.null(dim(v))) return(matrix(v, nrow = 1L))
  if (col_major) as.matrix(v) else t(v)
}

# seed: the loader shuffles from a stream of its own, seeded as set.seed(seed) would seed R's
# (R's .Random.seed is left alone); NULL: from R's stream. drop_last (ggmlR: TRUE) keeps only
# complete batches; FALSE also gives the last partial one. How many batches an epoch has is the
# core's rule (pg_batch_count), which Python's loader calls too. Batches are tensors of the
# default dtype, or of x's (y's) dtype when it is an ag_tensor.
ag_dataloader <- function(x, y = NULL, batch_size = 32L, shuffle = TRUE, col_major = TRUE,
                          drop_last = TRUE, seed = NULL) {  # Python's order
  # checked in Python's order (the first bad argument is named in both languages)
  col_major <- .arg_flag(col_major, "ag_dataloader", "col_major")
  .check_dims(x, "ag_dataloader", "x")  # a tampered dim must not reach as.matrix / `[`
  xdt <- if (is_ag_tensor(x)) x$dtype else NULL
  x <- .loader_data(x, "x", col_major)
  ydt <- if (is_ag_tensor(y)) y$dtype else NULL
  if (!is.null(y)) {
    .check_dims(y, "ag_dataloader", "y")
    y <- .loader_data(y, "y", col_major)
  }
  # the samples agree, else the core's text and row-major hint, R's spellings
  if (!is.null(y)) .Call(R_pg_loader_check_samples, dim(x), dim(y))
  batch_size <- .arg_int(batch_size, "ag_dataloader", "batch_size", 1L)
  shuffle <- .arg_flag(shuffle, "ag_dataloader", "shuffle")
  drop_last <- .arg_flag(drop_last, "ag_dataloader", "drop_last")
  seed <- .seed_int(seed, "ag_dataloader")
  e <- new.env(parent = emptyenv())
  e$x <- x
  e$y <- y
  e$n <- ncol(x)
  e$batch_size <- batch_size
  e$shuffle <- isTRUE(shuffle)
  e$drop_last <- drop_last
  e$seed <- seed
  e$.rng <- if (is.null(seed)) NULL else .rng_stream(seed)
  e$order <- seq_len(e$n)
  e$pos <- 1L
  e$reset <- function() {
    e$order <- if (e$shuffle) .with_stream(e$.rng, .rng_sample_int(e$n)) else seq_len(e$n)
    e$pos <- 1L
    invisible(e)
  }
  e$n_batches <- function() .Call(R_pg_batch_count, e$n, e$batch_size, e$drop_last)
  # the samples an epoch covers: order[1 .. end], batch_size at a time
  end <- function() min(e$n, as.double(e$n_batches()) * e$batch_size)  # no integer overflow
  e$has_next <- function() e$pos <= end()
  e$next_batch <- function() {
    last <- end()
    if (e$pos > last)
      .pg_stop("state", "ag_dataloader: No more batches. Call $reset() to start a new epoch.")
    idx <- e$order[e$pos:min(e$pos - 1 + e$batch_size, last)]  # double: batch_size may be 2^31 - 1
    e$pos <- e$pos + length(idx)
    xb <- ag_tensor(e$x[, idx, drop = FALSE], dtype = xdt)
    if (is.null(e$y)) return(list(x = xb))
    list(x = xb, y = ag_tensor(e$y[, idx, drop = FALSE], dtype = ydt))
  }
  e$epoch <- function() {
    e$reset()
    out <- list()
    while (e$has_next()) out[[length(out) + 1L]] <- e$next_batch()
    out
  }
  class(e) <- "ag_dataloader"
  e$reset()
  e
}

# the batches an epoch gives, as Python's len() (length() of the environment counted its fields)
length.ag_dataloader <- function(x) x$n_batches()

print.ag_dataloader <- function(x, ...) {
  cat(sprintf("ag_dataloader | n=%d | batch_size=%d | n_batches=%d | shuffle=%s\n",
              x$n, x$batch_size, x$n_batches(), if (x$shuffle) "TRUE" else "FALSE"))
  invisible(x)
}

.loss_value <- function(fn, inputs) {
  out <- ag_no_grad(fn(inputs))
  if (!is_ag_tensor(out)) .arg_stop("ag_gradcheck(): fn must return a 1x1 ag_tensor, got ",
                                    class(out)[[1L]])
  out$data[1L, 1L]
}

# Central differences for every named input that requires grad; the step, the quotient and the
# pass rule are the core's (gradcheck.c, shared with Python). eps / atol / rtol NULL: the checked
# dtype's defaults (f64: ggmlR's 1e-5 / 1e-4 / 0; f32: 5e-3 / 1e-3 / 1e-2). Inputs are restored
# exactly (the saved values are written back) and their $grad is left as it was.
ag_gradcheck <- function(fn, inputs, eps = NULL, atol = NULL, verbose = FALSE, quiet = FALSE,
                         rtol = NULL) {
  # what was given, as Python's (the class for its type name)
  if (!is.function(fn)) .arg_stop("ag_gradcheck(): fn must be a function, got ", class(fn)[[1L]])
  if (!is.list(inputs))
    .arg_stop("ag_gradcheck(): inputs must be a named list, got ", class(inputs)[[1L]])
  for (nm in c("verbose", "quiet")) {  # if (!quiet) as ggmlR's: one non-NA logical or number
    v <- get(nm)
    if (!(is.logical(v) || is.numeric(v)) || is.factor(v) || length(v) != 1L || is.na(v))
      .arg_fail("argument", "ag_gradcheck(): %s must be TRUE or FALSE, got %s", nm, .arg_show(v))
  }
  nms <- names(inputs)
  if (is.null(nms)) nms <- rep("", length(inputs))
  check <- which(nms != "" & vapply(inputs, function(v) is_ag_tensor(v) && isTRUE(v$requires_grad),
                                    logical(1)))
  codes <- vapply(inputs[check], function(v) .dtype_code(v$dtype), integer(1))
  f32 <- .pg$code$dtype[["F32"]]
  code <- if (any(codes == f32)) f32 else .pg$code$dtype[["F64"]]  # any f32 input: f32 defaults
  d <- .Call(R_pg_gradcheck_defaults, code)
  num1 <- function(v, nm, dflt) {
    if (is.null(v)) return(dflt)
    if (!is.numeric(v) ||
        length(v) != 1L)
      .arg_stop(sprintf("ag_gradcheck(): %s must be a single number or NULL, got %s", nm,
                        class(v)[[1L]]))  # the class, as Python's type name
    as.double(v)
  }
  eps <- num1(eps, "eps", d[1L])
  atol <- num1(atol, "atol", d[2L])
  rtol <- num1(rtol, "rtol", d[3L])
  saved_grad <- lapply(inputs[check], function(v) v$grad)
  loss <- with_grad_tape(fn(inputs))
  if (!is_ag_tensor(loss)) .arg_stop("ag_gradcheck(): fn must return a 1x1 ag_tensor, got ",
                                     class(loss)[[1L]])
  grads <- backward(loss)
  analytical <- lapply(inputs[check],
                       function(v) get0(as.character(v$id), envir = grads, inherits = FALSE))
  for (k in seq_along(check)) inputs[[check[k]]]$grad <- saved_grad[[k]]
  originals <- lapply(inputs[check], function(v) v$data)
  on.exit(for (k in seq_along(check)) inputs[[check[k]]]$data <- originals[[k]], add = TRUE)
  ok_all <- TRUE
  for (k in seq_along(check)) {
    tt <- inputs[[check[k]]]
    nm <- nms[check[k]]
    orig <- originals[[k]]
    storage.mode(orig) <- "double"
    pts <- .Call(R_pg_gradcheck_points, codes[[k]], as.vector(orig), eps)
    fp <- fm <- numeric(length(orig))
    work <- orig
    for (e in seq_along(orig)) {
      work[e] <- pts[[1L]][e]
      tt$data <- work
      fp[e] <- .loss_value(fn, inputs)
      work[e] <- pts[[2L]][e]
      tt$data <- work
      fm[e] <- .loss_value(fn, inputs)
      work[e] <- orig[e]
    }
    tt$data <- originals[[k]]
    a <- analytical[[k]]
    if (!is.null(a) && !identical(dim(a), dim(orig))) a <- NULL
    j <- .Call(R_pg_gradcheck_judge, codes[[k]], if (is.null(a)) NULL else as.double(a), fp, fm,
               pts[[1L]], pts[[2L]],
               atol, rtol)
    ok <- j[[1L]]
    err <- j[[2L]]
    num <- matrix(j[[3L]], nrow(orig), ncol(orig))
    ok_all <- ok_all && ok
    if (!quiet) {
      cat(sprintf("[gradcheck] '%s': max_err = %.2e  %s\n", nm, err, if (ok) "PASS" else "FAIL"))
      if (verbose) {
        cat("  analytical:\n")
        print(if (is.null(a)) NULL else round(a, 6))
        cat("  numerical:\n")
        print(round(num, 6))
      }
    }
  }
  if (!quiet) cat(sprintf("[gradcheck] Overall: %s\n", if (ok_all) "PASS" else "FAIL"))
  invisible(ok_all)
}
