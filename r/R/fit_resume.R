# ag_fit's checkpoints: ag_model_checkpoint() and ag_fit(resume_from =). A checkpoint is a model
# file (weights, optimizer state, epoch) whose `extra` holds the run's settings, history, random
# state and callback states in the same layout as Python's, so a run saved by either language
# resumes in the other, exactly as the uninterrupted run would continue.

# Which epochs save is the core's rule (fit_stop.c: every, the last one, save_best_only's monitor)
ag_model_checkpoint <- function(path, every = 1L, save_best_only = FALSE, monitor = NULL,
                                mode = "auto") {
  fn <- "ag_model_checkpoint"
  # the arguments in the signature's order, as Python's: path (its kind, then the core's rule,
  # checked now rather than after the first epoch: {epoch}, {{ }}, the directory), every,
  # save_best_only, then monitor and mode (the core's pg_monitor_args)
  .path_string(path, fn)  # "": the core's text (below)
  .Call(R_pg_checkpoint_path, path.expand(path), NULL)
  every <- .arg_int(every, fn, "every", 1L)
  save_best_only <- .arg_flag(save_best_only, fn, "save_best_only")
  e <- .cb_env(.Call(R_pg_checkpoint_new, every, save_best_only, mode, monitor), FALSE)
  e$path <- path
  e$saved <- character(0)
  e$on_train_begin <- function(fit) {
    .cb_run(fit, fn, "on_train_begin", c("nepoch", "save_checkpoint"))
    nepoch <- .arg_int(fit$nepoch, fn, "nepoch", 1L)
    # a run on a non-default RNGkind() without seed = has no stream state to save: refused
    # before the first epoch, not at the first save (Python's streams always have one)
    if (isFALSE(fit$has_rng_state))
      .pg_stop("state", paste0("ag_model_checkpoint: the run's random stream has no state to ",
                               "save (RNGkind() is not R's default); pass ag_fit(seed = ) or ",
                               "use RNGkind(\"default\", \"default\")"))
    m <- .cb_measures(fit, fn)
    .Call(R_pg_checkpoint_begin, e$.ptr, nepoch, m[[1L]], m[[2L]])
    e$fit <- fit
  }
  e$on_epoch_end <- function(epoch, logs) {
    epoch <- .cb_epoch(epoch, logs, "ag_model_checkpoint")  # as Python's
    if (.Call(R_pg_checkpoint_update, e$.ptr, epoch, logs, .arg_show)) {
      p <- .Call(R_pg_checkpoint_path, e$path, epoch)
      e$fit$save_checkpoint(p, epoch)
      e$saved <- c(e$saved, p)
    }
    NULL
  }
  # (a save_best_only run's best goes into the checkpoint, so a resumed run compares with it)
  class(e) <- c("ag_model_checkpoint", "ag_callback")
  e
}

print.ag_model_checkpoint <- function(x, ...) {
  cat(.Call(R_pg_callback_format, x$.ptr, FALSE, x$path, "TRUE"), "\n", sep = "")
  invisible(x)
}
