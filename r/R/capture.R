# ggmlR 0.8.6's captured functions and steps (spec §11). On a GPU ggmlR records them into a
# replayable graph; this engine computes on the CPU, so a captured function runs fn eagerly with
# ggmlR's argument handling, checks and outputs (its `captures` environment stays empty).

.capture_params <- function(params, where) {
  if (!is.null(params) && (!is.list(params) || !all(vapply(params, is_ag_tensor, logical(1)))))
    .arg_stop(sprintf("%s: params must be a list of ag_tensors", where))
}

# named, unique arguments -> ag_tensors of double matrices (a vector is one column)
.capture_args <- function(args, where) {
  nm <- names(args)
  if (length(args) && (is.null(nm) || any(nm == "") || anyDuplicated(nm)))
    .arg_stop(sprintf("%s: call the captured function with named arguments", where))
  out <- lapply(names(args), function(nm) {
    a <- args[[nm]]
    if (!is_ag_tensor(a) && !is.numeric(a) && !is.logical(a))
      .arg_stop(sprintf("%s: argument '%s' must be numeric (a matrix or a vector), got %s", where,
                        nm, class(a)[[1L]]))
    m <- if (is_ag_tensor(a)) as.matrix(a) else if (is.null(dim(a))) matrix(a,
        ncol = 1L) else as.matrix(a)
    storage.mode(m) <- "double"
    ag_tensor(m)
  })
  names(out) <- names(args)
  out
}

.capture_out <- function(v) if (is_ag_tensor(v)) as.matrix(v) else v

ag_capture <- function(fn, params = NULL) {
  if (!is.function(fn))  # ggmlR's stopifnot text, with the function and what was given
    .arg_fail("argument", "ag_capture: is.function(fn) is not TRUE (got %s)", .arg_show(fn))
  .capture_params(params, "ag_capture")
  f <- function(...) {
    out <- do.call(fn, .capture_args(list(...), "ag_capture"))
    # the spec's "as.matrix of the result or a list of matrices": a plain number is a 1x1
    # matrix (lapply made it list(3)), as Python's
    if (is_ag_tensor(out)) as.matrix(out) else if (is.list(out)) lapply(out, .capture_out)
    else as.matrix(out)
  }
  structure(f, class = c("ag_captured", "function"), captures = new.env(parent = emptyenv()))
}

.check_max_norm <- function(v, fn) {  # the core's rule and text (pg_arg_real, as Python's)
  if (!is.null(v))
    .Call(R_pg_arg_real, fn, "max_grad_norm",
          if (is.numeric(v) && length(v) == 1L) as.double(v) else NaN, 0, TRUE,
          "one positive finite number", .arg_show(v), FALSE)
  v
}

.shape_list <- function(args) paste(sprintf("%s:%s", names(args),
                                            vapply(args, function(a) paste(dim(a), collapse = "x"),
                                                                          character(1))),
                                    collapse = ", ")

ag_capture_step <- function(fn, params = NULL, optimizer, max_grad_norm = NULL) {
  .check_max_norm(max_grad_norm, "ag_capture_step")
  .capture_params(params, "ag_capture_step")
  if (missing(optimizer) || !inherits(optimizer, "ag_optimizer_adam"))
    .arg_stop("ag_capture_step: only optimizer_adam() is supported")
  if (!is.function(fn))  # Python's order and text (R called it at the first step)
    .arg_fail("argument", "ag_capture_step: fn must be a function")
  st <- new.env(parent = emptyenv())
  st$limit <- max_grad_norm
  st$clipping <- !is.null(max_grad_norm)
  st$shapes <- NULL
  f <- function(...) {
    args <- .capture_args(list(...), "ag_capture_step")
    shapes <- .shape_list(args)
    if (!is.null(st$shapes) && !identical(shapes, st$shapes))
      .arg_fail("shape", paste0("ag_capture_step: inputs (%s) differ from the first call (%s); ",
                                "shapes are fixed by the recording -- pad the batch or run this ",
                                "step uncaptured"),
                shapes, st$shapes)
    optimizer$zero_grad()
    res <- with_grad_tape(do.call(fn, args))
    # res[["loss"]]: an exact name (res$loss took a "lossx" element by partial matching)
    loss <- if (is_ag_tensor(res)) res else if (is.list(res) &&
                                                is_ag_tensor(res[["loss"]])) res[["loss"]] else
      .arg_stop("ag_capture_step: fn must return the loss, or a named list with an element 'loss'",
                kind = "value")
    grads <- backward(loss)
    outs <- if (is_ag_tensor(res)) list(loss = res) else res
    if (st$clipping) {
      norm <- clip_grad_norm(optimizer$params, grads, Inf)
      if (!is.finite(norm))
        .arg_stop("ag_capture_step: the gradient norm is NaN; the update was not applied ",
                  "(weights, moments and the step counter are unchanged)", kind = "value")
      clip_grad_norm(optimizer$params, grads, st$limit)
      outs$grad_norm <- matrix(norm, 1L, 1L)
    }
    optimizer$step(grads)
    if (is.null(st$shapes)) st$shapes <- shapes  # fixed by the first call that succeeds
    if (is_ag_tensor(res) && !st$clipping) return(as.matrix(res))
    lapply(outs, .capture_out)
  }
  structure(f, class = c("ag_captured", "function"), captures = new.env(parent = emptyenv()),
            ag_capture_step = st)
}

ag_capture_set <- function(f, max_grad_norm) {
  st <- attr(f, "ag_capture_step", exact = TRUE)
  if (!is.function(f) ||
      !is.environment(st)) .arg_stop("ag_capture_set: not a function from ag_capture_step()")
  if (!st$clipping)
    .arg_stop("ag_capture_set: this step was created without max_grad_norm; create it with one to ",
              "clip", kind = "state")
  # checked before it replaces the limit: a refusal changes nothing
  v <- .check_max_norm(max_grad_norm, "ag_capture_set")
  if (is.null(v)) .arg_stop("ag_capture_set: max_grad_norm must be one positive finite number, ",
                            "got NULL", kind = "value")  # what was given, as Python's
  st$limit <- v
  invisible(f)
}

ag_capture_free <- function(f) {
  caps <- attr(f, "captures", exact = TRUE)
  if (!is.environment(caps)) .arg_stop("ag_capture_free: not a captured function")
  rm(list = ls(caps, all.names = TRUE), envir = caps)
  invisible(f)
}
