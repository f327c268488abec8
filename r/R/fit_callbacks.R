# ag_fit's callbacks (ag_early_stopping; ag_model_checkpoint is in fit_resume.R).


.fn_callback <- function(fn) list(on_epoch_end = fn)

# The rule (which value, which direction, improved, stop, restore) is the core's (fit_stop.c);
# the environment keeps the best weights' snapshot and reads its fields from the core.
ag_early_stopping <- function(patience = 5L, min_delta = 0, restore_best = TRUE, monitor = NULL,
                              mode = "auto") {
  fn <- "ag_early_stopping"
  patience <- .arg_int(patience, fn, "patience", 1L)
  min_delta <- .arg_num(min_delta, fn, "min_delta", 0)
  restore_best <- .arg_flag(restore_best, fn, "restore_best")
  e <- new.env(parent = emptyenv())
  e$.ptr <- .Call(R_pg_early_stop_new, patience, min_delta, restore_best, mode, monitor)
  for (f in c("patience", "min_delta", "restore_best", "monitor", "mode", "best", "best_epoch",
              "wait", "stopped_epoch"))
    makeActiveBinding(f, local({
      f <- f
      function() .Call(R_pg_early_stop_info, e$.ptr)[[f]]
    }), e)
  e$best_weights <- NULL
  e$fit <- NULL
  e$on_train_begin <- function(fit) {
    # (a hand-written loop's run object may not say: then every value counts as measured)
    .Call(R_pg_early_stop_begin, e$.ptr, !isFALSE(fit$has_val), .monitor_mask(fit$has_accuracy))
    e$fit <- fit
    e$best_weights <- NULL
  }
  e$on_epoch_end <- function(epoch, logs) {
    act <- .Call(R_pg_early_stop_update, e$.ptr, epoch, logs)
    if (act == .pg$code$early_stop[["IMPROVED"]] && e$restore_best)
      e$best_weights <- .snapshot(e$fit$model)
    if (act == .pg$code$early_stop[["STOP"]]) FALSE else NULL
  }
  e$on_train_end <- function(fit) {
    fit$best_epoch <- e$best_epoch
    last <- if (length(fit$logs)) fit$logs[[length(fit$logs)]]$epoch else 0L
    if (.Call(R_pg_early_stop_end, e$.ptr, last) && !is.null(e$best_weights))
      .restore(fit$model, e$best_weights)
    e$fit <- NULL
  }
  e$state <- function() list(js = list(best = e$best, best_epoch = e$best_epoch, wait = e$wait),
                             arrays = e$best_weights)
  e$check_state <- function(st) .early_stop_state(st)  # ag_fit asks before it writes on resume
  # from a checkpoint (either language's), checked first (types here, values by the core)
  e$load_state <- function(st, arrays = NULL) {
    v <- .early_stop_state(st)
    .Call(R_pg_early_stop_set_state, e$.ptr, v[[1L]], v[[2L]], v[[3L]])
    if (!is.null(arrays)) e$best_weights <- arrays
  }
  class(e) <- c("ag_early_stopping", "ag_callback")
  e
}

# c(best, best_epoch, wait) of a checkpoint's callback state, or the core's classed refusal
# (pg_callback_state_parse: the same rule and text as Python's)
.early_stop_state <- function(st, fn = "ag_early_stopping") {
  m <- is.list(st)
  vals <- lapply(c("best", "best_epoch", "wait"), function(k) .st_val(if (m) st[[k]]))
  .Call(R_pg_callback_state_parse, fn, m, vals)
}

print.ag_early_stopping <- function(x, ...) {
  cat(sprintf(paste0("ag_early_stopping | patience=%d | min_delta=%s | restore_best=%s | ",
                     "monitor=%s | mode=%s\n"),
              x$patience, format(x$min_delta), if (x$restore_best) "TRUE" else "FALSE",
              if (is.null(x$monitor)) "auto" else x$monitor, x$mode))
  invisible(x)
}
