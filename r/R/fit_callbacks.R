# ag_fit's callbacks (ag_early_stopping; ag_model_checkpoint is in fit_resume.R).


.fn_callback <- function(fn) list(on_epoch_end = fn)

ag_early_stopping <- function(patience = 5L, min_delta = 0, restore_best = TRUE, monitor = NULL) {
  patience <- .arg_int(patience, "ag_early_stopping", "patience", 1L)
  min_delta <- .arg_num(min_delta, "ag_early_stopping", "min_delta", 0)
  if (!is.null(monitor) && (!is.character(monitor) || length(monitor) != 1L))
    .arg_stop(paste0("ag_early_stopping: monitor must be NULL or the name of a logged value ",
                "(\"loss\", \"val_loss\", ...)"))
  e <- new.env(parent = emptyenv())
  e$patience <- as.integer(patience)
  e$min_delta <- as.double(min_delta)
  e$restore_best <- isTRUE(restore_best)
  e$monitor <- monitor
  e$best <- Inf
  e$best_epoch <- NULL
  e$wait <- 0L
  e$stopped_epoch <- NULL
  e$best_weights <- NULL
  e$fit <- NULL
  e$on_train_begin <- function(fit) {
    e$fit <- fit
    e$best <- Inf
    e$best_epoch <- NULL
    e$wait <- 0L
    e$stopped_epoch <- NULL
    e$best_weights <- NULL
  }
  e$on_epoch_end <- function(epoch, logs) {
    key <- if (!is.null(e$monitor)) e$monitor
           else if (!is.nan(logs$val_loss)) "val_loss" else "loss"
    v <- logs[[key]]
    if (is.null(v)) stop(sprintf("ag_early_stopping: nothing logged under '%s'", key),
                         call. = FALSE)
    if (!is.na(v) && v < e$best - e$min_delta) {
      e$best <- v
      e$best_epoch <- epoch
      e$wait <- 0L
      if (e$restore_best) e$best_weights <- .snapshot(e$fit$model)
    } else {
      e$wait <- e$wait + 1L
      if (e$wait >= e$patience) {
        e$stopped_epoch <- epoch
        return(FALSE)
      }
    }
    NULL
  }
  e$on_train_end <- function(fit) {
    fit$best_epoch <- e$best_epoch
    last <- if (length(fit$logs)) fit$logs[[length(fit$logs)]]$epoch else NULL
    if (e$restore_best && !is.null(e$best_weights) && !identical(e$best_epoch, last))
      .restore(fit$model, e$best_weights)
    e$fit <- NULL
  }
  e$state <- function() list(js = list(best = e$best, best_epoch = e$best_epoch, wait = e$wait),
                             arrays = e$best_weights)
  e$check_state <- function(st) {  # ag_fit asks before it writes anything on resume
    one <- function(v, lo = -Inf) is.null(v) || (is.numeric(v) && length(v) == 1L && !is.na(v) &&
                                                 v >= lo)
    if (!is.list(st) || !one(st$best) || !one(st$best_epoch, 0) || !one(st$wait, 0))
      stop(paste0("ag_early_stopping: the checkpoint's callback state is not usable (best, ",
                  "best_epoch, wait)"), call. = FALSE)
  }
  # from a checkpoint (either language's), checked first
  e$load_state <- function(st, arrays = NULL) {
    e$check_state(st)
    e$best <- if (is.null(st$best)) Inf else as.double(st$best)
    e$best_epoch <- if (is.null(st$best_epoch)) NULL else as.integer(st$best_epoch)
    e$wait <- if (is.null(st$wait)) 0L else as.integer(st$wait)
    if (!is.null(arrays)) e$best_weights <- arrays
  }
  class(e) <- c("ag_early_stopping", "ag_callback")
  e
}

print.ag_early_stopping <- function(x, ...) {
  cat(sprintf("ag_early_stopping | patience=%d | min_delta=%s | restore_best=%s\n", x$patience,
              format(x$min_delta), if (x$restore_best) "TRUE" else "FALSE"))
  invisible(x)
}
