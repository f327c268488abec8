# Static graphs: record a step once, replay it in the C core (ggml-opt's static mode).

.BUILDS <- c("forward", "grad", "opt")  # the core's codes by name: .pg$code$build

# x * an inverted-dropout mask, one core op (pg_dropout): the mask is drawn from R's stream (or a
# run stream) when the op runs, eagerly or at every replay of a compiled graph; transpose: drawn
# as ggmlR draws attention weights ([queries, keys]).
.dropout_mul <- function(x, rate, transpose = FALSE) {
  .Call(R_pg_dropout, .need_tensor(x, "ag_dropout")$.ptr, rate, transpose)
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
  if (!is.null(saved$stream)) return(invisible(.Call(R_pg_rng_set_state, saved$stream,
                                                     saved$state)))
  g <- globalenv()
  if (!is.null(saved$state)) assign(".Random.seed", saved$state, envir = g)
  else if (exists(".Random.seed", envir = g, inherits = FALSE)) rm(".Random.seed", envir = g)
  invisible()
}

ag_compile <- function(fn, ..., build = "opt", optimizer = NULL) {
  if (!is.function(fn))  # what was given, as Python's (issue 29)
    .arg_stop("ag_compile(): fn must be a function, got ", class(fn)[[1L]])
  if (!is.character(build) || length(build) != 1L || !(build %in% .BUILDS))
    .arg_stop(sprintf("ag_compile(): build must be \"opt\", \"grad\" or \"forward\", got %s",
                 paste(deparse(build), collapse = "")), kind = "value")
  if (build == "opt" && !inherits(optimizer, c("ag_optimizer_sgd", "ag_optimizer_adam")))
    .arg_stop("ag_compile(): build = \"opt\" needs optimizer = (optimizer_adam / optimizer_sgd)")
  inputs <- lapply(list(...), function(x) if (is_ag_tensor(x)) x else ag_tensor(x))
  seed <- .rng_save()
  # whatever way fn leaves (error, interrupt, a caught warning's unwinding, invokeRestart,
  # callCC), the recorder is closed and the tape emptied in C (r_scope.c); the handler covers
  # the few steps from fn's return to R_pg_graph_record_end and aborts only a recording opened
  # above the depth seen here
  d <- .Call(R_pg_scope, .pg$code$scope[["DEPTH"]], 0L)
  on.exit({
    .Call(R_pg_scope, .pg$code$scope[["ABORT"]], d)
    .rng_restore(seed)
  })
  out <- .Call(R_pg_scoped, .pg$code$scoped[["RECORD"]], NULL, quote(do.call(fn, inputs)),
               environment())
  .rng_restore(seed)
  if (!is_ag_tensor(out))
    .arg_stop("ag_compile(): fn must return an ag_tensor, got ", class(out)[1L])
  # the recorded inputs' handles, read once: a replay fed its own input tensors (ag_fit's batch
  # tensors, refilled in the core) copies nothing, and the check costs no `$` dispatch per call
  in_ptrs <- lapply(inputs, .subset2, ".ptr")
  g <- .Call(R_pg_graph_record_end, .subset2(out, ".ptr"), in_ptrs,
             .pg$code$build[[toupper(build)]],
             if (build == "opt") optimizer$.h else NULL)
  n_in <- length(inputs)
  step <- function(...) {
    if (...length() != n_in)
      .arg_stop(sprintf("compiled step: expected %d inputs, got %d", n_in, ...length()))
    for (i in seq_len(n_in)) {
      v <- ...elt(i)
      if (inherits(v, "ag_tensor")) {
        if (identical(.subset2(v, ".ptr"), in_ptrs[[i]])) next
        v <- v$data
      }
      .Call(R_pg_graph_set_input, g, i - 1L, v)
    }
    loss <- .Call(R_pg_graph_run, g)
    switch(build,
           forward = .Call(R_pg_graph_output, g),
           grad = list(loss = loss, grads = .Call(R_pg_graph_grads, g)),
           opt = loss)
  }
  structure(step, class = "ag_compiled", build = build, graph = g, inputs = inputs,
            output = out, optimizer = optimizer)
}

print.ag_compiled <- function(x, ...) {
  ag_tape_memory(top = 0L, compiled = x)  # the core's text, as Python's memory()
  invisible(x)
}
