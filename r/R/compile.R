# Static graphs: record a step once, replay it in the C core (ggml-opt's static mode).

.BUILDS <- c(forward = 0L, grad = 1L, opt = 2L)

# Dropout masks of the graphs being recorded: a stack (one entry per ag_compile in progress) of
# environments holding a list of masks. While a graph records, the dropout layers draw their mask
# as in an eager step, put it in a tensor and register it here; every replay of the compiled step
# draws each registered mask anew, in registration order (the order an eager step draws them).
.compile_state <- new.env(parent = emptyenv())
.compile_state$stack <- list()

.recording <- function() length(.compile_state$stack) > 0L

# mask: the ag_tensor the graph multiplies by; rate: the dropout rate; transpose: the mask is drawn
# as the transpose of its shape (ggmlR's draw order for attention weights).
.register_mask <- function(mask, rate, transpose = FALSE) {
  n <- length(.compile_state$stack)
  if (n) {
    s <- .compile_state$stack[[n]]
    s$masks[[length(s$masks) + 1L]] <- list(t = mask, rate = rate, transpose = transpose)
  }
  invisible()
}

# An inverted-dropout mask [nr, nc] of dtype as the eager layers draw it (the core's
# pg_rng_dropout_mask): (u > rate) / (1 - rate), u = runif(nr * nc) in column order; transpose:
# drawn as [nc, nr] and transposed. into: a mask tensor to refill instead of a new tensor.
.draw_mask <- function(nr, nc, rate, dtype, transpose = FALSE, into = NULL) {
  m <- .Call(R_pg_rng_dropout_mask, nr, nc, rate, .dtype_code(dtype), transpose, into)
  if (is.null(into)) m else invisible(into)
}

# x * dropout mask (a tensor of x's dtype, off the tape); while ag_compile records, the mask is
# registered with the recording so every replay redraws it.
.dropout_mul <- function(x, rate, transpose = FALSE) {
  x <- .as_t(x)
  d <- dim(x)
  mt <- .draw_mask(d[1L], d[2L], rate, x$dtype, transpose)
  if (.recording()) .register_mask(mt, rate, transpose)
  ag_mul(x, mt)
}

# The stream draws come from, to put back after recording (recording draws nothing an eager step
# would): the active run stream's state, else R's .Random.seed (NULL when unset).
.rng_save <- function() {
  s <- .Call(R_pg_rng_current)
  if (!is.null(s)) return(list(stream = s, state = .Call(R_pg_rng_get_state, s)))
  g <- globalenv()
  list(stream = NULL, state = get0(".Random.seed", envir = g, inherits = FALSE))
}

.rng_restore <- function(saved) {
  if (!is.null(saved$stream)) return(invisible(.Call(R_pg_rng_set_state, saved$stream, saved$state)))
  g <- globalenv()
  if (!is.null(saved$state)) assign(".Random.seed", saved$state, envir = g)
  else if (exists(".Random.seed", envir = g, inherits = FALSE)) rm(".Random.seed", envir = g)
  invisible()
}

ag_compile <- function(fn, ..., build = "opt", optimizer = NULL) {
  if (!is.function(fn)) stop("ag_compile(): fn must be a function", call. = FALSE)
  if (!is.character(build) || length(build) != 1L || !(build %in% names(.BUILDS)))
    stop(sprintf("ag_compile(): build must be \"opt\", \"grad\" or \"forward\", got %s",
                 paste(deparse(build), collapse = "")), call. = FALSE)
  if (build == "opt" && !inherits(optimizer, c("ag_optimizer_sgd", "ag_optimizer_adam")))
    stop("ag_compile(): build = \"opt\" needs optimizer = (optimizer_adam / optimizer_sgd)", call. = FALSE)
  inputs <- lapply(list(...), function(x) if (is_ag_tensor(x)) x else ag_tensor(x))
  rec <- new.env(parent = emptyenv())
  rec$masks <- list()
  seed <- .rng_save()
  .Call(R_pg_graph_record_begin)
  depth <- length(.compile_state$stack)
  .compile_state$stack[[depth + 1L]] <- rec
  out <- tryCatch(do.call(fn, inputs), error = function(e) {
    .Call(R_pg_graph_record_abort)
    stop(e)
  }, finally = {
    .compile_state$stack <- .compile_state$stack[seq_len(depth)]
    .rng_restore(seed)
  })
  if (!is_ag_tensor(out)) {
    .Call(R_pg_graph_record_abort)
    stop(sprintf("ag_compile(): fn must return an ag_tensor, got %s", class(out)[1L]), call. = FALSE)
  }
  g <- .Call(R_pg_graph_record_end, out$.ptr, lapply(inputs, function(t) t$.ptr), .BUILDS[[build]],
             if (build == "opt") optimizer$.h else NULL)
  n_in <- length(inputs)
  masks <- rec$masks
  step <- function(...) {
    vals <- list(...)
    if (length(vals) != n_in)
      stop(sprintf("compiled step: expected %d inputs, got %d", n_in, length(vals)), call. = FALSE)
    for (i in seq_len(n_in)) {
      v <- vals[[i]]
      if (is_ag_tensor(v)) {
        if (identical(v$.ptr, inputs[[i]]$.ptr)) next
        v <- v$data
      }
      .Call(R_pg_graph_set_input, g, i - 1L, v)
    }
    for (m in masks) {  # new dropout masks, drawn as an eager step draws them
      d <- dim(m$t)
      .draw_mask(d[1L], d[2L], m$rate, m$t$dtype, m$transpose, into = m$t)
    }
    loss <- .Call(R_pg_graph_run, g)
    switch(build,
           forward = .Call(R_pg_graph_output, g),
           grad = list(loss = loss, grads = .Call(R_pg_graph_grads, g)),
           opt = loss)
  }
  structure(step, class = "ag_compiled", build = build, graph = g, inputs = inputs,
            output = out, optimizer = optimizer, masks = masks)
}

print.ag_compiled <- function(x, ...) {
  m <- .Call(R_pg_graph_memory, attr(x, "graph"))
  nm <- length(attr(x, "masks"))
  cat(sprintf("Compiled graph (%s): %d nodes, %.2f MB planned%s\n", attr(x, "build"), as.integer(m[1L]),
              m[2L] / 1024^2, if (nm) sprintf(", %d dropout mask%s redrawn per call", nm, if (nm == 1L) "" else "s")
              else ""))
  cat(sprintf("  operands (outlive the graph)    : %8.2f MB\n", m[5L] / 1024^2))
  cat(sprintf("  activations (planned buffers)   : %8.2f MB\n", m[3L] / 1024^2))
  cat(sprintf("  gradients (planned buffers)     : %8.2f MB\n", m[6L] / 1024^2))
  cat(sprintf("  graph-path fields (beyond those): %8.2f MB\n", m[4L] / 1024^2))
  invisible(x)
}
