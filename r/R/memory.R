# Memory reports: what the tape holds (measured by the core) and a training budget estimate.

ag_tape_memory <- function(top = 10L, quiet = FALSE, compiled = NULL) {
  top <- .arg_int(top, "ag_tape_memory", "top", 0L)  # as Python's: a whole number >= 0
  quiet <- .arg_flag(quiet, "ag_tape_memory", "quiet")
  if (!is.null(compiled) && (!inherits(compiled, "ag_compiled") ||
                             typeof(attr(compiled, "graph")) != "externalptr"))
    .arg_fail("argument", "ag_tape_memory: compiled must be a step from ag_compile, got %s",
              class(compiled)[[1L]])
  # handles R no longer reaches still hold their tensors until collected: collect first, so the
  # core's count of what only the tape keeps alive is exactly what ag_tape_clear() frees
  if (is.null(compiled)) invisible(gc(verbose = FALSE, full = TRUE))
  r <- .memory_report(compiled, top)
  if (!quiet) cat(r$text, "\n", sep = "")
  invisible(r$res)
}

# the core's walk and text (Python's too) of the tape, or of a compiled step's planned buffers
.memory_report <- function(compiled, top) {
  g <- if (!is.null(compiled)) attr(compiled, "graph")
  build <- if (!is.null(g)) attr(compiled, "build") else ""
  nd <- if (!is.null(g)) .Call(R_pg_graph_dropout_masks, g) else 0L  # redrawn per call
  r <- .Call(R_pg_memory_report, g, as.integer(top), build, as.integer(nd))
  tot <- r[[1L]]
  res <- list(nodes = as.integer(tot[1L]), bytes_total = tot[2L], bytes_snapshots = tot[3L],
              bytes_fields = tot[4L], bytes_inputs = tot[5L])
  if (!is.null(g)) res$bytes_gradients <- tot[6L]
  res$by_op <- data.frame(op = r[[2L]], nodes = r[[3L]], mb = r[[4L]] / 1024^2,
                          bytes = r[[4L]], stringsAsFactors = FALSE)
  if (!is.null(g))
    res <- c(res, list(outputs = r[[6L]][1L], saved = r[[6L]][2L], gradients = r[[6L]][3L],
                       build = build))
  list(res = res, text = r[[5L]])
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
    if (!is.null(x) && !is.null(input_shape))  # input_shape was ignored
      .arg_stop(sprintf("%s: with model =, give x = (a batch) or input_shape =, not both", fn))
    if (!is.null(shapes))  # shapes were ignored: the model's parameters are counted
      .arg_stop(sprintf("%s: with model =, the parameters are the model's; leave shapes = out", fn))
    if (is.null(dtype)) {
      p <- .mem_model_params(model)
      dtype <- if (length(p)) p[[1L]]$dtype else ag_default_dtype()
    }
  } else {
    if (is.numeric(shapes) && !is.list(shapes)) shapes <- list(shapes)  # one bare vector
    params <- .Call(R_pg_estimate_params, shapes)  # the core's rule and texts (as Python's)
  }
  dcode <- .dtype_code(dtype, fn)
  if (!is.null(model)) {  # dtype, and x / y tensors, are the model's (the core's rule and text)
    p <- .mem_model_params(model)
    tcode <- function(t) if (is_ag_tensor(t)) .dtype_code(t$dtype) else -1L
    .Call(R_pg_mem_model_dtypes,
          as.integer(c(if (length(p)) .dtype_code(p[[1L]]$dtype) else -1L, dcode, tcode(x),
                       tcode(y))))
  }
  batch_size <- .arg_int(batch_size, fn, "batch_size", 0L)  # fn as Python's: with "()"
  activation_frac <- .arg_num(activation_frac, fn, "activation_frac", 0)
  quiet <- .arg_flag(quiet, fn, "quiet")
  static <- .arg_flag(static, fn, "static")
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
