# Optimizer $state() / $load_state() in ggmlR 0.8.6's layout, with its checks and messages (the
# same texts as Python's optim_state.py); and the layout this project's model files store (io.R).

.ST_SLOTS <- list(sgd = "velocity", adam = c("m", "v"))
.ST_HYPER <- list(sgd = c("lr", "momentum"), adam = c("lr", "beta1", "beta2", "eps"))
# this project's extra hyper-parameters: in the state only when not at their default
.ST_EXTRA <- list(sgd = list(nesterov = FALSE, weight_decay = 0), adam = list(weight_decay = 0))

.opt_hyper <- function(e) {
  h <- lapply(.ST_HYPER[[e$kind]], function(k) get(k, envir = e))
  names(h) <- .ST_HYPER[[e$kind]]
  ex <- .ST_EXTRA[[e$kind]]
  for (k in names(ex)) { v <- get(k,
                                  envir = e)
                                  if (!identical(as.numeric(v), as.numeric(ex[[k]]))) h[[k]] <- v }
  h
}

.opt_state <- function(e) {
  kind <- e$kind
  ac <- e$accum_count
  if (ac > 0L)
    warning(sprintf(paste0("optimizer state(): taken mid-accumulation (%d of %d backward ",
                           "passes); the accumulated gradients live in the parameters' ",
                           "$grad and are not part of the state"),
                    ac, e$accumulate_steps), call. = FALSE)
  slots <- lapply(seq_along(.ST_SLOTS[[kind]]), function(s) e$.slot(s - 1L))
  names(slots) <- .ST_SLOTS[[kind]]
  list(format = "ggmlR.ag_opt_state", version = 1L, type = kind,
       t = if (kind == "adam") e$t else 0L,
       accum_count = ac, names = names(e$params), slots = slots, hyper = .opt_hyper(e))
}

.ls_fail <- function(msg) .pg_stop("value", paste0("optimizer load_state(): ", msg))  # as Python's
.is_count <- function(x) is.numeric(x) && length(x) == 1L && is.finite(x) && x >= 0 && x == floor(x)

.opt_hyper_warn <- function(e, sh) {
  if (!is.list(sh)) sh <- list()
  changed <- list()
  for (k in .ST_HYPER[[e$kind]]) if (!is.null(sh[[k]])) {
    cur <- get(k, envir = e)
    if (!isTRUE(all.equal(cur, sh[[k]]))) changed[[k]] <- list(current = cur, state = sh[[k]])
  }
  ex <- .ST_EXTRA[[e$kind]]
  for (k in names(ex)) {
    cur <- get(k, envir = e)
    sv <- if (is.null(sh[[k]])) ex[[k]] else sh[[k]]
    if (!isTRUE(all.equal(cur, sv))) changed[[k]] <- list(current = cur, state = sv)
  }
  if (length(changed)) {
    parts <- vapply(names(changed),
                    function(k) sprintf("%s = %s (state %s)", k, format(changed[[k]]$current),
                                                         format(changed[[k]]$state)), "")
    w <- structure(class = c("ggmlR_opt_hyper_warning", "warning", "condition"),
                   list(message = paste0("optimizer load_state(): hyperparameters differ ",
                                         "from the state's and are NOT restored: ",
                                         paste(parts, collapse = ", ")), call = NULL,
                        changed = changed))
    warning(w)
  }
}

# ggmlR's 8 checks, in order; nothing is written unless all pass
.opt_load_state <- function(e, state) {
  kind <- e$kind
  if (!is.list(state) || !identical(state[["format"]], "ggmlR.ag_opt_state"))
    .ls_fail("not an optimizer state (from opt$state())")
  if (is.null(state[["type"]]) && !is.null(state[["kind"]]) && is.list(state[["params"]])) {
    # a state() of pyggmlr before ggmlR 0.8.6's layout: checked, then loaded as a model file's
    if (!identical(state[["kind"]], kind))
      .ls_fail(sprintf("state is for a '%s' optimizer, this one is '%s'",
                       paste(format(state[["kind"]]), collapse = " "), kind))
    if (length(state$params) != length(e$params))
      .ls_fail(sprintf("state has %d parameters, optimizer has %d", length(state$params),
                       length(e$params)))
    for (i in seq_along(state$params)) for (s in .SLOTS[[kind]]) {
      v <- state$params[[i]][[s]]
      if (!is.null(v) &&
          (!is.numeric(v) || !identical(as.integer(dim(v)), as.integer(dim(e$params[[i]]$data)))))
        .ls_fail(sprintf("slot '%s' of parameter %d has shape %s, expected %s", s, i,
                         paste(dim(v), collapse = "x"),
                         paste(dim(e$params[[i]]$data), collapse = "x")))
    }
    .opt_load_file_state(e, state)
    return(invisible(TRUE))
  }
  ver <- state[["version"]]
  if (!identical(ver, 1L))
    .ls_fail(sprintf("unsupported state version %s (this ggmlR reads version 1)",
                     if (is.null(ver)) "NULL" else paste(format(ver), collapse = " ")))
  if (!identical(state[["type"]], kind))
    .ls_fail(sprintf("state is for a '%s' optimizer, this one is '%s'",
                     paste(format(state[["type"]]), collapse = " "), kind))
  n <- length(e$params)
  sl <- state[["slots"]]
  for (s in .ST_SLOTS[[kind]]) {
    len <- length(if (is.list(sl)) sl[[s]] else NULL)
    if (len != n) .ls_fail(sprintf("state has %d parameters, optimizer has %d", len, n))
  }
  mine <- names(e$params)
  theirs <- state[["names"]]
  if (!is.null(mine) && !is.null(theirs) && !identical(as.character(theirs), mine))
    .ls_fail(paste0("parameter names differ from the state's (position is the key, names ",
                    "are the check)",
                    "\n  optimizer: ", paste(mine, collapse = ", "), "\n  state:     ",
                    paste(theirs, collapse = ", ")))
  vals <- list()
  for (s in .ST_SLOTS[[kind]]) for (i in seq_len(n)) {
    v <- sl[[s]][[i]]
    d <- dim(e$params[[i]]$data)
    if (!is.numeric(v) || !identical(as.integer(dim(v)), as.integer(d)) || length(dim(v)) != 2L)
      .ls_fail(sprintf("slot '%s' of parameter %d has shape %s, expected %s", s, i,
                       paste(dim(v), collapse = "x"),
                       paste(d, collapse = "x")))
    if (!all(is.finite(v))) .ls_fail(sprintf("slot '%s' of parameter %d is not finite", s, i))
    storage.mode(v) <- "double"
    vals[[length(vals) + 1L]] <- v
  }
  if (!.is_count(state[["t"]]) ||
      !.is_count(state[["accum_count"]])) .ls_fail("t / accum_count are not counts")
  .opt_hyper_warn(e, state[["hyper"]])
  .Call(R_pg_optim_load, e$.h, vals, as.double(state[["t"]]), as.double(state[["accum_count"]]))
  invisible(TRUE)
}

# ---- the layout of this project's model files (ag_save_model(optimizer =), ag_fit checkpoints)
# ----

.opt_file_state <- function(e) {
  kind <- e$kind
  slots <- .SLOTS[[kind]]
  per <- lapply(seq_along(e$params), function(i) {
    s <- lapply(seq_along(slots), function(k) .Call(R_pg_optim_state, e$.h, i - 1, k - 1L))
    names(s) <- slots
    s
  })
  names(per) <- names(e$params)
  hp <- lapply(.HYPER[[kind]], function(k) get(k, envir = e))
  names(hp) <- .HYPER[[kind]]
  list(format = "ggmlR.ag_opt_state", version = 1L, kind = kind, t = e$t,
       accum_count = e$accum_count,
       hyper = hp, params = per)
}

# The core checks every value (finite, within the dtype's range, Adam's v >= 0) and the counters,
# then swaps all the slots in at once; check_only: the checks alone (io.R runs them before it
# writes any weight). Shapes were checked by the caller.
.opt_load_file_state <- function(e, state, check_only = FALSE) {
  kind <- e$kind
  slots <- .SLOTS[[kind]]
  vals <- list()
  for (i in seq_along(state$params)) for (k in seq_along(slots)) {
    v <- state$params[[i]][[slots[[k]]]]
    if (!is.null(v)) storage.mode(v) <- "double"
    vals[length(vals) + 1L] <- list(v)
  }
  t <- if (is.null(state$t)) 0 else as.double(state$t)
  ac <- if (is.null(state$accum_count)) 0 else as.double(state$accum_count)
  if (!check_only) {
    .Call(R_pg_optim_load_file, e$.h, vals, t, ac, TRUE)
    hp <- state$hyper
    .opt_hyper_warn(e, hp[intersect(names(hp), c(.ST_HYPER[[kind]], names(.ST_EXTRA[[kind]])))])
  }
  .Call(R_pg_optim_load_file, e$.h, vals, t, ac, check_only)
  invisible(e)
}
