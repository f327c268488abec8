# ag_fit's callbacks (ag_early_stopping; ag_model_checkpoint is in fit_resume.R).


.fn_callback <- function(fn) list(on_epoch_end = fn)

# what ag_fit(callbacks =) sees in one value, as the core's pg_fit_cb_value codes (Python's the
# same): hooks (an environment or list whose on_epoch_end is a function) 2, a function 1, a list 3
.cb_value <- function(cb) {
  if ((is.environment(cb) || is.list(cb)) && is.function(cb[["on_epoch_end"]])) return(2L)
  if (is.function(cb)) 1L else if (is.list(cb)) 3L else 0L
}

# a callback's state() as a checkpoint keeps it: the built-ins' list(js =, arrays =) as it is,
# any other value (a JSON-able named list) the state itself, without tensors (as Python's)
.cb_state_form <- function(st) {
  if (is.list(st) && identical(names(st), c("js", "arrays"))) st else list(js = st, arrays = NULL)
}

# a run object's has_val / has_accuracy (NULL: unknown) by the core's rule and text
.cb_measures <- function(fit, fn) .Call(R_pg_fit_run_measures, fn, fit$has_val, fit$has_accuracy,
                                        .arg_show)

# The rule (which value, which direction, improved, stop, restore) is the core's (fit_stop.c);
# the environment keeps the best weights' snapshot and reads its fields from the core.
ag_early_stopping <- function(patience = 5L, min_delta = 0, restore_best = TRUE, monitor = NULL,
                              mode = "auto") {
  fn <- "ag_early_stopping"
  patience <- .arg_int(patience, fn, "patience", 1L)
  min_delta <- .arg_num(min_delta, fn, "min_delta", 0)
  restore_best <- .arg_flag(restore_best, fn, "restore_best")
  e <- .cb_env(.Call(R_pg_early_stop_new, patience, min_delta, restore_best, mode, monitor), TRUE)
  e$on_train_begin <- function(fit) {
    .cb_run(fit, fn, "on_train_begin", "model")
    # (a hand-written loop's run object may not say, or say NULL: every value counts as measured)
    m <- .cb_measures(fit, fn)
    .Call(R_pg_early_stop_begin, e$.ptr, m[[1L]], m[[2L]])
    e$fit <- fit
    e$best_weights <- NULL
  }
  e$on_epoch_end <- function(epoch, logs) {
    epoch <- .cb_epoch(epoch, logs, fn)  # as Python's
    act <- .Call(R_pg_early_stop_update, e$.ptr, epoch, logs, .arg_show)
    if (act == .pg$code$early_stop[["SNAPSHOT"]])  # a new best with restore_best (the core's)
      e$best_weights <- .snapshot(e$fit$model)
    if (act == .pg$code$early_stop[["STOP"]]) FALSE else NULL
  }
  e$on_train_end <- function(fit) {
    .cb_run(fit, fn, "on_train_end", c("model", "logs"))
    fit$best_epoch <- e$best_epoch
    last <- if (length(fit$logs)) fit$logs[[length(fit$logs)]]$epoch else 0L
    if (.Call(R_pg_early_stop_end, e$.ptr, last) && !is.null(e$best_weights))
      .restore(fit$model, e$best_weights)
    e$fit <- NULL
  }
  class(e) <- c("ag_early_stopping", "ag_callback")
  e
}

# the run object a hook reads (ag_fit's, or a hand-written loop's own environment or list with
# these fields): one without them is refused before anything is counted (Python's rule and text)
.cb_run <- function(fit, fn, hook, fields) {
  for (f in fields)
    if (!(is.environment(fit) || is.list(fit)) || is.null(fit[[f]]))
      .arg_fail("argument", "%s: %s(fit): fit has no %s (ag_fit's run object has %s)", fn, hook, f,
                paste(fields, collapse = ", "))
}

# on_epoch_end's arguments: the 1-based epoch (0 is the core's "none") under the one integer rule
# and a named list of the epoch's values, as Python's (a dict)
.cb_epoch <- function(epoch, logs, fn) {
  epoch <- .arg_int(epoch, fn, "epoch", 1L)
  if (!is.list(logs) || (length(logs) && is.null(names(logs))))
    .arg_fail("argument", "%s: logs must be a named list of the epoch's values, got %s", fn,
              .arg_show(logs))
  epoch
}

# the hooks a built-in callback does not use, as Python's Callback base class has them: a
# hand-written loop may call every hook of every callback
.cb_pass_batch <- function(step, logs) invisible(NULL)
.cb_pass_end <- function(fit) invisible(NULL)

# a built-in callback's environment on its core handle (early_stop: ag_early_stopping, else
# ag_model_checkpoint): its settings and counters read from the core, and state() /
# check_state() / load_state(): the core writes the state's JSON text and checks one (fit_cb.c),
# with Python's rule and text
.cb_env <- function(ptr, early_stop) {
  e <- new.env(parent = emptyenv())
  e$.ptr <- ptr
  for (f in names(.Call(R_pg_callback_info, ptr, early_stop)))  # the core's field table
    makeActiveBinding(f, local({
      f <- f
      function() .Call(R_pg_callback_info, e$.ptr, early_stop)[[f]]
    }), e)
  e$fit <- NULL
  e$on_batch_end <- .cb_pass_batch  # the hooks Python's Callback has (ag_fit skips these)
  e$on_train_end <- .cb_pass_end
  e$state <- function() list(js = jsonlite::parse_json(.Call(R_pg_callback_state, e$.ptr,
                                                               early_stop, NULL, NULL)),
                             arrays = e$best_weights)
  # a state is a named list (a JSON object, as Python's dict): a file's [] or [1, 2] is refused
  obj <- function(st) is.list(st) && !is.null(names(st)) && all(names(st) != "")
  vals <- function(st) lapply(.Call(R_pg_callback_state_keys), function(k) {  # the core's keys
    v <- if (obj(st)) st[[k]]
    if (is.list(v)) list(NA, as.character(jsonlite::toJSON(v, auto_unbox = TRUE, digits = NA)))
    else .st_val(v)  # a list shown as compact JSON, as Python's
  })
  e$check_state <- function(st) .Call(R_pg_callback_state, NULL, early_stop, obj(st), vals(st))
  e$load_state <- function(st, arrays = NULL) {  # all checked before the first is set
    .Call(R_pg_callback_state, e$.ptr, early_stop, obj(st), vals(st))
    if (!is.null(arrays)) e$best_weights <- arrays
  }
  e
}

print.ag_early_stopping <- function(x, ...) {
  cat(.Call(R_pg_callback_format, x$.ptr, TRUE, format(x$min_delta), format(x$restore_best)), "\n",
      sep = "")
  invisible(x)
}
