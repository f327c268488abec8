# Memory reports: what the tape holds (measured by the core) and a training budget estimate.

ag_tape_memory <- function(top = 10L, quiet = FALSE) {
  top <- .arg_int(top, "ag_tape_memory", "top", 0L)  # as Python's: a whole number >= 0
  quiet <- .arg_flag(quiet, "ag_tape_memory", "quiet")
  # handles R no longer reaches still hold their tensors until collected: collect first, so the
  # core's count of what only the tape keeps alive is exactly what ag_tape_clear() frees
  invisible(gc(verbose = FALSE, full = TRUE))
  r <- .Call(R_pg_tape_memory)
  tot <- r[[1L]]
  by_op <- data.frame(op = r[[2L]], nodes = r[[3L]], mb = r[[4L]] / 1024^2,
                      stringsAsFactors = FALSE)
  res <- list(nodes = as.integer(tot[1L]), bytes_total = tot[2L], bytes_snapshots = tot[3L],
              bytes_fields = tot[4L], bytes_inputs = tot[5L], by_op = by_op)
  if (!quiet) {
    n <- res$nodes
    cat(sprintf("Gradient tape: %d node%s, %.2f MB held alive\n", n, if (n == 1L) "" else "s",
                res$bytes_total / 1024^2))
    if (n == 0L)
      cat(paste0("  (empty -- the tape is cleared by zero_grad(), so call this between ",
                 "backward() and the step)\n"))
    cat(sprintf("  operands (outlive the tape)     : %8.2f MB\n", res$bytes_inputs / 1024^2))
    cat(sprintf("  activations (freed by clearing) : %8.2f MB\n", res$bytes_snapshots / 1024^2))
    cat(sprintf("  graph-path fields (beyond those): %8.2f MB\n", res$bytes_fields / 1024^2))
    top <- as.integer(top)
    if (top > 0L && nrow(by_op) > 0L) {
      k <- min(top, nrow(by_op))
      cat(sprintf("\n  by operation (top %d):\n", k))
      cat(sprintf("    %-20s %7s  %8s\n", "op", "nodes", "MB"))
      for (i in seq_len(k)) cat(sprintf("    %-20s %7d  %8.2f\n", by_op$op[i], by_op$nodes[i],
                                        by_op$mb[i]))
    }
  }
  invisible(res)
}

# ggmlR's budget from shapes, counted at the dtype the core stores (4 bytes f32, 8 f64), or with
# model = measured (memory_model.R); the texts are Python's (pyggmlr/graph/memory.py)
ag_estimate_training_memory <- function(shapes = NULL, batch_size = 32L,
                                        optimizer = c("adam", "sgd", "sgd_plain"),
                                        activation_frac = 0.01, quiet = FALSE, dtype = NULL,
                                        model = NULL,
                                        x = NULL, input_shape = NULL, y = NULL, loss_fn = NULL) {
  fn <- "ag_estimate_training_memory()"
  ok <- .optimizer_k(optimizer)
  k <- ok$k
  if (!is.null(model)) {
    if (is.null(x) &&
        is.null(input_shape))
      .arg_stop(sprintf("%s: with model =, give x = (a batch) or input_shape =", fn))
    if (is.null(dtype)) {
      p <- .mem_model_params(model)
      dtype <- if (length(p)) p[[1L]]$dtype else ag_default_dtype()
    }
  } else {
    if (is.numeric(shapes) && !is.list(shapes)) shapes <- list(shapes)  # one bare vector
    params <- .Call(R_pg_estimate_params, shapes)  # the core's rule and texts (as Python's)
  }
  dtype <- .dtype_name(.dtype_code(dtype, fn))
  batch_size <- .arg_int(batch_size, "ag_estimate_training_memory", "batch_size", 0L)
  activation_frac <- .arg_num(activation_frac, "ag_estimate_training_memory", "activation_frac", 0)
  quiet <- .arg_flag(quiet, "ag_estimate_training_memory", "quiet")
  bps <- if (dtype == "f32") 4 else 8
  store <- sprintf(paste0("weights, gradients and optimizer state are counted at %s, the dtype ",
                          "the core stores them in (%d bytes per scalar, %s precision)"),
                   dtype, as.integer(bps), if (dtype == "f32") "single" else "double")
  if (!is.null(model)) {
    m <- .measure_step(model, x, input_shape, y, loss_fn, as.integer(batch_size), dtype)
    res <- list(params = m$params, weights = m$weights, gradients = m$gradients,
                optimizer = m$gradients * k,
                activations = m$activations)
    note <- sprintf(paste0("%s; activations measured from one forward and backward pass on a ",
                           "batch of %d (tape, gradients of intermediates, loss, input and ",
                           "target)."),
                    store, as.integer(m$batch))
    batch_size <- m$batch
  } else {
    weights <- bps * params
    res <- list(params = params, weights = weights, gradients = bps * params,
                optimizer = bps * params * k,
                activations = weights * activation_frac * batch_size)
    note <- sprintf("%s; activations are a guess: activation_frac x weights per unit of batch.",
                    store)
  }
  res$total <- res$weights + res$gradients + res$optimizer + res$activations
  res$bytes_per_scalar <- bps
  res$note <- note
  if (!quiet) {
    mb <- function(x) sprintf("%8.2f MB", x / 1024^2)
    cat(sprintf("Training memory estimate (%s, batch %d)\n", ok$name, as.integer(batch_size)))
    cat("  parameters      : ", format(res$params, big.mark = " "), "\n", sep = "")
    cat("  weights         : ", mb(res$weights), "\n", sep = "")
    cat("  gradients       : ", mb(res$gradients), "\n", sep = "")
    cat(sprintf("  optimizer (x%d)  : %s\n", as.integer(k), mb(res$optimizer)))
    cat("  activations     : ", mb(res$activations), "\n", sep = "")
    cat("  total           : ", mb(res$total), "\n", sep = "")
    cat("  note: ", res$note, "\n", sep = "")
  }
  invisible(res)
}
