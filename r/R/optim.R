# Optimizers (state and updates in the C core) and gradient helpers; schedulers are in sched.R.

.param_list <- function(params, where) {
  if (.is_model(params)) params <- .layer_params(params)  # ag_linear's list too, as Python's
  if (is_ag_tensor(params)) params <- list(params)
  if (!is.list(params)) .arg_fail("argument", "%s: params must be a list of ag_tensors, got %s",
                                  where, .arg_show(params))
  nms <- names(params)
  if (is.null(nms)) nms <- rep("", length(params))
  nms[nms == ""] <- as.character(seq_along(params))[nms == ""]
  for (i in seq_along(params))
    if (!is_ag_tensor(params[[i]]))
      .arg_fail("argument", "%s: parameter '%s' is not an ag_tensor", where, nms[[i]])
  names(params) <- nms
  params
}

# TRUE at the first occurrence of each tensor (by identity, not by name)
.first_of_each <- function(params) .Call(R_pg_first_of_each, params)

.dedup <- function(params) params[.first_of_each(params)]

# the layout of this project's model files (io.R): slots incl. the accumulator, all
# hyper-parameters; by kind, read from the core's tables at load (zzz.R)
.HYPER <- NULL

# ggmlR 0.8.6: params must be a list (a model or one tensor accepted too), walked by position,
# names kept as given (NULL, empty or duplicated); the same tensor twice is kept once.
.opt_params <- function(params, where) {
  if (.is_model(params)) params <- .layer_params(params)  # ag_linear's list too, as Python's
  if (is_ag_tensor(params)) params <- list(params)
  if (!is.list(params))  # ggmlR's stopifnot text, with the function and what was given
    .arg_fail("argument", paste0("%s: is.list(params) is not TRUE (params must be a list of ",
                                 "ag_tensors or a model, got %s)"), where, .arg_show(params))
  # as Python's (and torch's): an optimizer over nothing would train nothing silently
  if (!length(params))
    .arg_fail("value",
              paste0("%s: got no parameters to optimize (an empty model or list); pass the ",
                     "model's parameters()"), where)
  for (i in seq_along(params))
    if (!is_ag_tensor(params[[i]]))
      .arg_fail("argument", "%s: parameter %d is not an ag_tensor", where, i)
  keep <- .first_of_each(params)
  if (any(!keep))
    warning(sprintf(paste0("optimizer: %d parameter(s) listed more than once (same tensor); ",
                           "keeping the first occurrence of each."),
                    sum(!keep)), call. = FALSE)
  params[keep]
}

# step()'s gradients as a core map: backward()'s environment as it is; any other environment
# keyed by as.character(id) (a user-built one) copied into a new map
.step_map <- function(grads, params) {
  if (is.null(grads)) return(NULL)
  m <- get0(".map", envir = grads, inherits = FALSE)
  if (!is.null(m)) return(m)
  vals <- lapply(params, function(p) {
    v <- get0(as.character(p$id), envir = grads, inherits = FALSE)
    if (is_ag_tensor(v)) v$data else v
  })
  has <- !vapply(vals, is.null, logical(1))
  .Call(R_pg_gradmap_build, lapply(params[has], function(p) p$.ptr), vals[has])
}

# step()'s grads: NULL or an environment keyed by tensor id (backward()'s, or one built by hand);
# an ag_tensor is an environment too, and read as a map it held no gradient
.step_grads_fail <- function(grads, where) {
  .arg_fail("argument", paste0("%s step(): grads must be an environment keyed by tensor id (the ",
                               "one backward() returns) or NULL, got %s"), where,
            if (is_ag_tensor(grads)) "an ag_tensor (pass backward(loss)'s result, not the loss)"
            else .arg_show(grads))
}

# how a hyper-parameter reads back from the core (the rest: as the core gives it)
.OPT_CONV <- list(nesterov = as.logical, average = as.logical, t = as.integer,
                  accum_count = as.integer, accumulate_steps = as.integer)

# opt$<key>: read from core optimizer h, or written there (the core checks the range). A
# function rather than local(): an optimizer's twelve bindings were a third of its set-up.
.opt_binding <- function(e, key, h, where) {
  conv <- .OPT_CONV[[key]]
  if (is.null(conv)) conv <- identity
  makeActiveBinding(key, function(value) {
    if (missing(value)) return(conv(.Call(R_pg_optim_get, h, key)))
    .opt_set(h, key, value, where)
  }, e)
}

# opt$<key> <- value: one number (the kind checked here, the range by the core)
.opt_set <- function(h, key, value, where) {
  flag <- key %in% c("nesterov", "average")  # the flags; a logical is no number (Python's rule)
  if ((!is.numeric(value) && !(flag && is.logical(value))) || length(value) != 1L)
    .arg_fail("argument", "%s: %s must be a single number, got %s", where, key, .arg_show(value))
  .Call(R_pg_optim_set, h, key, value)
}

.make_optimizer <- function(kind, params, hyper, cls, where) {
  params <- .opt_params(params, where)
  # ggmlR's as.integer() truncation (1.9 -> 1): the core's rule and text, as Python's
  hyper$accumulate_steps <- .arg_as_integer(hyper$accumulate_steps, where, "accumulate_steps",
                                            "a positive integer")
  hyper$average <- isTRUE(hyper$average)
  # .subset2: a tensor's `$` dispatches (a third of an optimizer's set-up in ag_fit)
  res <- .Call(R_pg_optim_new, .pg$code$optim[[toupper(kind)]], lapply(params, .subset2, ".ptr"))
  h <- res[[1L]]
  e <- new.env(parent = emptyenv())
  e$.h <- h
  e$kind <- kind
  e$params <- params
  bound <- c(.HYPER[[kind]], "t", "accum_count")
  for (nm in bound) .opt_binding(e, nm, h, where)
  # moments / velocity: one double matrix per parameter, by position, named like params (zeros
  # before use)
  slot_list <- function(s) {
    v <- lapply(seq_along(e$params), function(i) {
      m <- .Call(R_pg_optim_state, h, i - 1, s)
      if (is.null(m)) matrix(0, nrow(e$params[[i]]$data), ncol(e$params[[i]]$data)) else m
    })
    names(v) <- names(e$params)
    v
  }
  e$.slot <- slot_list
  if (kind == "sgd") makeActiveBinding("velocity", function() slot_list(0L), e)
  else {
    makeActiveBinding("m", function() slot_list(0L), e)
    makeActiveBinding("v", function() slot_list(1L), e)
    e$resident <- FALSE
  }
  for (nm in names(hyper))  # a bound key's set, as assign() through its binding would run it
    if (nm %in% bound) .opt_set(h, nm, hyper[[nm]], where) else assign(nm, hyper[[nm]], envir = e)
  # ggmlR 0.8.6: with accumulate_steps k, calls 1..k-1 only count (nothing read); call k reads
  # grads (or each $grad) / k and applies. sum_grads = TRUE (this project's): every call's grads
  # are summed by the optimizer, for loops that pass one environment per micro-batch.
  e$step <- function(grads = NULL, sum_grads = FALSE) {
    # a counting call too: what it would read must be a map
    if (!is.null(grads) && (!is.environment(grads) || inherits(grads, "ag_tensor")))
      .step_grads_fail(grads, where)
    sum_grads <- isTRUE(sum_grads)
    k <- .subset2(e, "accumulate_steps")  # (`$` on a classed environment looks for a method)
    if (!sum_grads && k > 1L && .subset2(e, "accum_count") + 1L < k) grads <- NULL
    m <- .step_map(grads, .subset2(e, "params"))
    invisible(.Call(if (sum_grads) R_pg_optim_step_sum else R_pg_optim_step, h, m))
  }
  e$zero_grad <- function() invisible(.Call(R_pg_optim_zero_grad, h))
  e$state <- function() .opt_state(e)
  e$load_state <- function(state) .opt_load_state(e, state)
  class(e) <- cls
  e
}

optimizer_sgd <- function(params, lr = 0.01, momentum = 0.0, accumulate_steps = 1L, average = TRUE,
                          nesterov = FALSE, weight_decay = 0) {
  .make_optimizer("sgd", params,
                  list(lr = lr, momentum = momentum, nesterov = nesterov,
                       weight_decay = weight_decay,
                       accumulate_steps = accumulate_steps, average = average),
                  "ag_optimizer_sgd", "optimizer_sgd")
}

optimizer_adam <- function(params, lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8,
                           accumulate_steps = 1L,
                           average = TRUE, weight_decay = 0) {
  .make_optimizer("adam", params,
                  list(lr = lr, beta1 = beta1, beta2 = beta2, eps = eps,
                       weight_decay = weight_decay,
                       accumulate_steps = accumulate_steps, average = average),
                  "ag_optimizer_adam", "optimizer_adam")
}

print.ag_optimizer_sgd <- function(x, ...) {
  cat("SGD optimizer | lr =", x$lr, "| momentum =", x$momentum, "| params:", length(x$params), "\n")
  invisible(x)
}

print.ag_optimizer_adam <- function(x, ...) {
  cat("Adam optimizer | lr =", x$lr, "| beta1 =", x$beta1, "| beta2 =", x$beta2,
      "| step =", x$t, "| params:", length(x$params), "\n")
  invisible(x)
}

clip_grad_norm <- function(params, grads, max_norm) {
  if (missing(params)) .arg_missing("clip_grad_norm", "params")
  if (missing(max_norm)) max_norm <- NULL  # Python's None: its text, "got NULL"
  params <- .param_list(params, "clip_grad_norm")
  if (!is.numeric(max_norm) || is.factor(max_norm) || length(max_norm) != 1L)  # Python's order
    .arg_fail("argument", "clip_grad_norm: max_norm must be a number, got %s",
              class(max_norm)[[1L]])
  m <- if (missing(grads)) NULL else .map_handle(grads, "clip_grad_norm")
  invisible(.Call(R_pg_clip_grad_norm, lapply(params, function(p) p$.ptr), m, max_norm))
}

# The errors of a gradient helper's core call, raised with the helper's call (as ggmlR's stop())
.core_with_call <- function(expr, call) {
  tryCatch(expr, error = function(e) {
    e$call <- call  # the class (pyggmlr_value_error, ...) is kept
    stop(e)
  })
}

clip_grad_value <- function(params, grads, clip_value) {
  call <- sys.call()
  if (missing(clip_value)) clip_value <- NULL  # Python's None: its text, "got NULL"
  if (!is.numeric(clip_value) || length(clip_value) != 1L)
    .arg_fail("value", "%s: clip_value must be a single positive finite number, got %s",
              "clip_grad_value", .arg_show(clip_value))
  if (missing(params)) .arg_missing("clip_grad_value", "params")
  params <- .param_list(params, "clip_grad_value")
  m <- if (missing(grads)) NULL else .map_handle(grads, "clip_grad_value")
  invisible(.core_with_call(.Call(R_pg_clip_grad_value, lapply(params, function(p) p$.ptr), m,
                                  clip_value), call))
}

check_grad_anomaly <- function(params, grads, action = c("warn", "stop", "silent"),
                               max_abs = NULL) {
  action <- .arg_match(action, c("warn", "stop", "silent"), "check_grad_anomaly", "action")
  if (!is.null(max_abs) && (!is.numeric(max_abs) || length(max_abs) != 1L || is.na(max_abs)))
    .arg_fail(if (is.numeric(max_abs) && length(max_abs) == 1L) "value" else "argument",
              "check_grad_anomaly: max_abs must be NULL or a single number, got %s",
              .arg_show(max_abs))
  if (missing(params)) .arg_missing("check_grad_anomaly", "params")
  params <- .param_list(params, "check_grad_anomaly")
  m <- if (missing(grads)) NULL else .map_handle(grads, "check_grad_anomaly")
  r <- .core_with_call(.Call(R_pg_grad_anomaly, lapply(params, function(p) p$.ptr), m), sys.call())
  found <- r[[1L]]
  n_nan <- ifelse(found, as.integer(r[[2L]]), NA_integer_)
  n_inf <- ifelse(found, as.integer(r[[3L]]), NA_integer_)
  mx <- r[[4L]]
  mx[is.nan(mx)] <- NA_real_   # no finite entry (or no gradient): NA as ggmlR, not NaN
  large <- if (is.null(max_abs)) logical(length(mx)) else !is.na(mx) & mx > max_abs
  status <- ifelse(!found, "missing",
            ifelse(n_nan > 0L & n_inf > 0L, "nan+inf",
            ifelse(n_nan > 0L, "nan", ifelse(n_inf > 0L, "inf", ifelse(large, "large", "ok")))))
  rep <- data.frame(param = as.character(names(params)), n_nan = as.integer(n_nan),
                    n_inf = as.integer(n_inf),
                    max_abs = as.numeric(mx), status = as.character(status),
                    stringsAsFactors = FALSE)
  bad <- !(rep$status %in% c("ok", "missing"))
  if (any(bad) && action != "silent") {
    b <- rep[bad, , drop = FALSE]
    lines <- sprintf("  %-20s status=%-8s n_nan=%d n_inf=%d max_abs=%s", b$param, b$status, b$n_nan,
                     b$n_inf,  # each %.4g, as Python's (format() gave the column common digits)
                     vapply(b$max_abs, function(v) if (is.na(v)) "NA" else sprintf("%.4g", v), ""))
    msg <- paste0(sprintf("gradient anomaly detected in %d parameter(s):\n", sum(bad)),
                  paste(lines, collapse = "\n"))
    if (action == "warn") warning(msg, call. = FALSE) else .pg_stop("value", msg)  # as Python's
  }
  invisible(rep)
}
