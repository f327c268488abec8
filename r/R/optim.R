# Optimizers (state and updates in the C core) and gradient helpers; schedulers are in sched.R.

.param_list <- function(params, where) {
  if (is.environment(params) && is.function(params$parameters)) params <- params$parameters()
  if (is_ag_tensor(params)) params <- list(params)
  if (!is.list(params)) stop(sprintf("%s: params must be a list of ag_tensors", where), call. = FALSE)
  nms <- names(params)
  if (is.null(nms)) nms <- rep("", length(params))
  nms[nms == ""] <- as.character(seq_along(params))[nms == ""]
  for (i in seq_along(params))
    if (!is_ag_tensor(params[[i]]))
      stop(sprintf("%s: parameter '%s' is not an ag_tensor", where, nms[[i]]), call. = FALSE)
  names(params) <- nms
  params
}

.dedup <- function(params) {
  keep <- logical(length(params))
  seen <- list()
  for (i in seq_along(params)) {
    p <- params[[i]]$.ptr
    dup <- FALSE
    for (q in seen) if (.Call(R_pg_same_tensor, p, q)) { dup <- TRUE; break }
    keep[i] <- !dup
    if (!dup) seen[[length(seen) + 1L]] <- p
  }
  params[keep]
}

.SLOTS <- list(sgd = c("velocity", "accum"), adam = c("m", "v", "accum"))
.HYPER <- list(sgd = c("lr", "momentum", "nesterov", "weight_decay", "accumulate_steps", "average"),
               adam = c("lr", "beta1", "beta2", "eps", "weight_decay", "accumulate_steps", "average"))

.make_optimizer <- function(kind, params, hyper, cls, where) {
  params <- .param_list(params, where)
  res <- .Call(R_pg_optim_new, if (kind == "sgd") 0L else 1L, lapply(params, function(p) p$.ptr))
  h <- res[[1L]]
  if (res[[2L]] > 0)
    warning(sprintf("%s: %d duplicate parameter tensor(s) dropped (parameters are matched by identity)",
                    where, as.integer(res[[2L]])), call. = FALSE)
  e <- new.env(parent = emptyenv())
  e$.h <- h
  e$kind <- kind
  e$params <- .dedup(params)
  for (nm in c(.HYPER[[kind]], "t", "accum_count")) {
    local({
      key <- nm
      conv <- if (key %in% c("nesterov", "average")) as.logical
              else if (key %in% c("t", "accum_count", "accumulate_steps")) as.integer else identity
      makeActiveBinding(key, function(value) {
        if (missing(value)) conv(.Call(R_pg_optim_get, h, key))
        else .Call(R_pg_optim_set, h, key, value)
      }, e)
    })
  }
  for (nm in names(hyper)) assign(nm, hyper[[nm]], envir = e)
  e$step <- function(grads = NULL) invisible(.Call(R_pg_optim_step, h, grads))
  e$zero_grad <- function() invisible(.Call(R_pg_optim_zero_grad, h))
  e$state <- function() {
    slots <- .SLOTS[[kind]]
    per <- lapply(seq_along(e$params), function(i) {
      s <- lapply(seq_along(slots), function(k) .Call(R_pg_optim_state, h, i - 1, k - 1L))
      names(s) <- slots
      s
    })
    names(per) <- names(e$params)
    hp <- lapply(.HYPER[[kind]], function(k) get(k, envir = e))
    names(hp) <- .HYPER[[kind]]
    list(format = "ggmlR.ag_opt_state", version = 1L, kind = kind, t = e$t,
         accum_count = e$accum_count, hyper = hp, params = per)
  }
  e$load_state <- function(state) {
    if (!is.list(state) || !identical(state$format, "ggmlR.ag_opt_state"))
      stop("load_state(): not an optimizer state (format 'ggmlR.ag_opt_state')", call. = FALSE)
    if (!is.null(state$kind) && !identical(state$kind, kind))
      stop(sprintf("load_state(): state is for %s, this optimizer is %s", state$kind, kind), call. = FALSE)
    per <- state$params
    if (length(per) != length(e$params))
      stop(sprintf("load_state(): state has %d parameters, optimizer has %d", length(per), length(e$params)),
           call. = FALSE)
    hp <- state$hyper
    diff <- names(hp)[vapply(names(hp), function(k)
      k %in% .HYPER[[kind]] && !isTRUE(all.equal(as.numeric(get(k, envir = e)), as.numeric(hp[[k]]))), logical(1))]
    if (length(diff))
      warning(sprintf("load_state(): hyper-parameters differ from the saved ones and are kept: %s",
                      paste(diff, collapse = ", ")), call. = FALSE)
    slots <- .SLOTS[[kind]]
    for (i in seq_along(per)) for (k in seq_along(slots))
      .Call(R_pg_optim_set_state, h, i - 1, k - 1L, per[[i]][[slots[[k]]]])
    e$t <- if (is.null(state$t)) 0 else state$t
    e$accum_count <- if (is.null(state$accum_count)) 0 else state$accum_count
    invisible(e)
  }
  class(e) <- cls
  e
}

optimizer_sgd <- function(params, lr = 0.01, momentum = 0.0, nesterov = FALSE, weight_decay = 0,
                          accumulate_steps = 1L, average = TRUE) {
  o <- .make_optimizer("sgd", params,
                       list(lr = lr, momentum = momentum, nesterov = nesterov, weight_decay = weight_decay,
                            accumulate_steps = accumulate_steps, average = average),
                       "ag_optimizer_sgd", "optimizer_sgd")
  makeActiveBinding("velocity", function() {
    v <- lapply(seq_along(o$params), function(i) .Call(R_pg_optim_state, o$.h, i - 1, 0L))
    names(v) <- names(o$params)
    v
  }, o)
  o
}

optimizer_adam <- function(params, lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0,
                           accumulate_steps = 1L, average = TRUE) {
  .make_optimizer("adam", params,
                  list(lr = lr, beta1 = beta1, beta2 = beta2, eps = eps, weight_decay = weight_decay,
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
  params <- .param_list(params, "clip_grad_norm")
  m <- if (missing(grads)) NULL else .map_handle(grads, "clip_grad_norm")
  invisible(.Call(R_pg_clip_grad_norm, lapply(params, function(p) p$.ptr), m, max_norm))
}

# The errors of a gradient helper's core call, raised with the helper's call (as ggmlR's stop())
.core_with_call <- function(expr, call) {
  tryCatch(expr, error = function(e) stop(simpleError(conditionMessage(e), call)))
}

clip_grad_value <- function(params, grads, clip_value) {
  call <- sys.call()
  if (!is.numeric(clip_value) || length(clip_value) != 1L)
    stop("clip_value must be a single positive finite number")
  params <- .param_list(params, "clip_grad_value")
  m <- if (missing(grads)) NULL else .map_handle(grads, "clip_grad_value")
  invisible(.core_with_call(.Call(R_pg_clip_grad_value, lapply(params, function(p) p$.ptr), m, clip_value), call))
}

check_grad_anomaly <- function(params, grads, action = c("warn", "stop", "silent"), max_abs = NULL) {
  action <- match.arg(action)
  if (!is.null(max_abs) && (!is.numeric(max_abs) || length(max_abs) != 1L || is.na(max_abs)))
    stop("max_abs must be NULL or a single number")
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
  rep <- data.frame(param = as.character(names(params)), n_nan = as.integer(n_nan), n_inf = as.integer(n_inf),
                    max_abs = as.numeric(mx), status = as.character(status), stringsAsFactors = FALSE)
  bad <- !(rep$status %in% c("ok", "missing"))
  if (any(bad) && action != "silent") {
    b <- rep[bad, , drop = FALSE]
    lines <- sprintf("  %-20s status=%-8s n_nan=%d n_inf=%d max_abs=%s", b$param, b$status, b$n_nan, b$n_inf,
                     format(b$max_abs, digits = 4))
    msg <- paste0(sprintf("gradient anomaly detected in %d parameter(s):\n", sum(bad)), paste(lines, collapse = "\n"))
    if (action == "warn") warning(msg, call. = FALSE) else stop(msg, call. = FALSE)
  }
  invisible(rep)
}
