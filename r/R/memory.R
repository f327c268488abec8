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
                                        x = NULL, input_shape = NULL, y = NULL, loss_fn = NULL,
                                        static = FALSE) {
  fn <- "ag_estimate_training_memory()"
  ok <- .optimizer_k(optimizer)
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
  dcode <- .dtype_code(dtype, fn)
  batch_size <- .arg_int(batch_size, "ag_estimate_training_memory", "batch_size", 0L)
  activation_frac <- .arg_num(activation_frac, "ag_estimate_training_memory", "activation_frac", 0)
  quiet <- .arg_flag(quiet, "ag_estimate_training_memory", "quiet")
  static <- .arg_flag(static, "ag_estimate_training_memory", "static")
  src <- .pg$code$mem_source
  m <- if (is.null(model)) list(weights = 0, gradients = 0, activations = 0, batch = batch_size,
                                params = params)
       else .measure_step(model, x, input_shape, y, loss_fn, as.integer(batch_size),
                          .dtype_name(dcode), static)
  # the budget, its note and the printed report are the core's (Python prints the same)
  r <- .Call(R_pg_mem_estimate,
             as.integer(c(ok$optim, ok$accumulate, dcode,
                          if (is.null(model)) src[["GUESS"]] else if (static) src[["COMPILED"]]
                          else src[["TAPE"]], m$batch)),
             as.double(c(m$params, activation_frac, m$weights, m$gradients, m$activations)))
  res <- r[c("params", "weights", "gradients", "optimizer", "activations", "total",
             "bytes_per_scalar", "note")]
  if (!quiet) cat(r$text, "\n", sep = "")
  invisible(res)
}
