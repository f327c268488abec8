# ag_estimate_training_memory(model =): parameters from the model, activations measured by one
# real forward + loss + backward on a private tape (as Python's _measure_step,
# pyggmlr/graph/estimate.py):
# activations = the peak bytes the core held above the weights and the parameters' gradients.

# (enum pg_mem_optim, accumulates) from a name (the core's match.arg rule and text) or an
# optimizer object (k + 1 with gradient accumulation)
.optimizer_k <- function(optimizer) {
  code <- .pg$code$mem_optim
  if (inherits(optimizer, c("ag_optimizer_adam", "ag_optimizer_sgd"))) {
    nm <- if (inherits(optimizer, "ag_optimizer_adam")) "ADAM"
          else if (optimizer$momentum > 0) "SGD" else "SGD_PLAIN"
    return(list(optim = code[[nm]], accumulate = optimizer$accumulate_steps > 1L))
  }
  if (identical(optimizer, c("adam", "sgd", "sgd_plain"))) optimizer <- "adam"  # match.arg's
  list(optim = .Call(R_pg_mem_optim_parse, optimizer, .arg_show(optimizer)), accumulate = FALSE)
}

.nbytes <- function(t) prod(as.double(dim(t))) * if (identical(t$dtype, "f32")) 4 else 8

.mem_model_params <- function(model) {
  if (!(is.environment(model) || is.list(model)) ||
      !(is.function(model$parameters) || is.function(model$params)))
    .Call(R_pg_fit_model_fail, "ag_estimate_training_memory()", TRUE, class(model)[[1L]])
  .dedup(.layer_params(model))
}

.measure_step <- function(model, x, input_shape, y, loss_fn, batch_size, dtype, static = FALSE) {
  fn <- "ag_estimate_training_memory()"
  params <- .mem_model_params(model)
  weights <- sum(vapply(params, .nbytes, numeric(1)))
  n_params <- sum(vapply(params, function(t) prod(as.double(dim(t))), numeric(1)))
  mse <- is.null(loss_fn)  # the default loss: y must have the output's shape (the core's check)
  if (mse) loss_fn <- ag_mse_loss
  if (!is.function(loss_fn))
    .arg_fail("argument", "%s: loss_fn must be a function(out, y) or NULL, got %s", fn,
              class(loss_fn)[[1L]])
  extra <- 0  # caller-owned input / target: live in training, allocated before the measurement
  if (is.null(x)) {
    shp <- if (is.list(input_shape) && is.null(names(input_shape)) &&  # (a dict in Python)
               all(vapply(input_shape, is.numeric,
                          logical(1)))) unlist(input_shape) else input_shape
    # the rule and its text are the core's (as Python's): a flag is no size (c(TRUE, batch_size)
    # was c(1, batch_size)), Inf and past R's integers are refused (matrix() warned: issue 29)
    shp <- .Call(R_pg_mem_input_shape, if (is.numeric(shp)) as.double(shp) else NaN,
                 as.double(batch_size), paste(deparse(input_shape), collapse = " "))
  }
  buffers <- lapply(.layer_buffers(model), function(t) list(t = t, v = t$data))
  saved <- lapply(params, function(t) t$grad)  # the caller's .grad, put back afterwards
  for (t in params) t$grad <- NULL
  .Call(R_pg_tape_stash, TRUE)
  on.exit({
    .Call(R_pg_tape_stash, FALSE)
    for (b in buffers) b$t$data <- b$v
    for (i in seq_along(params)) params[[i]]$grad <- saved[[i]]
  }, add = TRUE)
  gc(verbose = FALSE)
  base <- .Call(R_pg_memory_stats)[["total"]]
  .Call(R_pg_memory_reset_peak)
  if (!is.null(x)) {
    if (is_ag_tensor(x)) { xt <- x; extra <- extra + .nbytes(x) } else xt <- ag_tensor(x,
        dtype = dtype)
  } else xt <- ag_tensor(matrix(0, shp[1L], shp[2L]), dtype = dtype)
  batch <- dim(xt)[2L]
  if (static) {  # the compiled step: record a "grad" graph, run it once (plans its buffers)
    yt <- if (is.null(y)) NULL
          else if (is_ag_tensor(y)) { extra <- extra + .nbytes(y); y }
          else ag_tensor(y, dtype = if (length(params)) params[[1L]]$dtype else dtype)
    step_fn <- function(xa, ya = NULL) {
      out <- .fit_forward(model, xa, fn)
      if (is.null(ya)) {  # a zeros target made while recording: a constant of the graph
        od <- dim(out)
        ya <- ag_tensor(matrix(0, od[1L], od[2L]), dtype = out$dtype)
      } else if (mse) .Call(R_pg_mem_target_shape, as.double(c(dim(out), dim(ya))))
      loss_fn(out, ya)
    }
    g <- attr(do.call(ag_compile, c(list(step_fn, xt), if (!is.null(yt)) list(yt),
                                    list(build = "grad"))), "graph")
    .Call(R_pg_graph_run, g)
    peak <- .Call(R_pg_memory_stats)[["peak"]] - base
    ids <- names(.Call(R_pg_graph_grads, g))  # tensor ids, "%lld"
    .Call(R_pg_graph_free, g)  # now, as Python's: not at R's next collection
    has <- function(t) sprintf("%.0f", t$id) %in% ids
  } else {
    with_grad_tape({
      out <- .fit_forward(model, xt, fn)
      od <- dim(out)
      yt <- if (is.null(y)) ag_tensor(matrix(0, od[1L], od[2L]), dtype = out$dtype)
            else if (is_ag_tensor(y)) { extra <- extra + .nbytes(y); y } else ag_tensor(y,
                dtype = out$dtype)
      # else ag_mse_loss's words: the estimate's, with both shapes
      if (mse) .Call(R_pg_mem_target_shape, as.double(c(od, dim(yt))))
      loss <- loss_fn(out, yt)
    })
    grads <- backward(loss)
    peak <- .Call(R_pg_memory_stats)[["peak"]] - base
    m <- get(".map", envir = grads, inherits = FALSE)
    has <- function(t) !is.null(.Call(R_pg_gradmap_get, m, t$id))
  }
  gradients <- sum(vapply(params, function(t) if (has(t)) .nbytes(t) else 0, numeric(1)))
  list(weights = weights, gradients = gradients, activations = peak - gradients + extra,
       batch = batch, params = n_params)
}
