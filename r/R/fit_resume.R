# ag_fit's checkpoints: ag_model_checkpoint() and ag_fit(resume_from =). A checkpoint is a model
# file (weights, optimizer state, epoch) whose `extra` holds the run's settings, history, random
# state and callback states in the same layout as Python's, so a run saved by either language
# resumes in the other, exactly as the uninterrupted run would continue.

# Which epochs save is the core's rule (fit_stop.c: every, the last one, save_best_only's monitor)
ag_model_checkpoint <- function(path, every = 1L, save_best_only = FALSE, monitor = NULL,
                                mode = "auto") {
  fn <- "ag_model_checkpoint"
  if (!is.character(path) || length(path) != 1L || is.na(path))  # "": the core's text
    .arg_fail("argument", "%s: path must be a file name (a single string), got %s", fn,
              paste(class(path), collapse = "/"))
  every <- .arg_int(every, fn, "every", 1L)
  save_best_only <- .arg_flag(save_best_only, fn, "save_best_only")
  # checked now rather than after the first epoch: the core's rule ({epoch}, {{ }}, the directory)
  .Call(R_pg_checkpoint_path, path.expand(path), NULL)
  e <- .cb_env(.Call(R_pg_checkpoint_new, every, save_best_only, mode, monitor), FALSE)
  e$path <- path
  e$saved <- character(0)
  e$on_train_begin <- function(fit) {
    # a run on a non-default RNGkind() without seed = has no stream state to save: refused
    # before the first epoch, not at the first save (Python's streams always have one)
    if (isFALSE(fit$has_rng_state))
      .pg_stop("state", paste0("ag_model_checkpoint: the run's random stream has no state to ",
                               "save (RNGkind() is not R's default); pass ag_fit(seed = ) or ",
                               "use RNGkind(\"default\", \"default\")"))
    .Call(R_pg_checkpoint_begin, e$.ptr, fit$nepoch, !isFALSE(fit$has_val),
          .monitor_mask(fit$has_accuracy))
    e$fit <- fit
  }
  e$on_epoch_end <- function(epoch, logs) {
    if (.Call(R_pg_checkpoint_update, e$.ptr, epoch, logs)) {
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

# the per-epoch logs of a checkpoint's history columns (epoch, the logs, the metric columns)
.history_logs <- function(cols) {
  lapply(seq_along(cols$epoch), function(i) {
    l <- lapply(cols, `[[`, i)
    l$epoch <- as.integer(l$epoch)
    l
  })
}

# the run's state for the checkpoint callback: fit$save_checkpoint(path, epoch). The layout and
# the callback tensors' names are the core's (native/fit_ckpt.c), Python's too.
.fit_saver <- function(fit, setup, cbs) {
  function(path, epoch) {
    states <- list()
    more <- list()
    for (i in seq_along(cbs)) {
      st <- if (is.function(cbs[[i]]$state)) cbs[[i]]$state() else NULL
      states[i] <- list(if (!is.null(st$js)) .to_json(st$js, "extra"))
      for (kind in 1:2) for (k in names(st$arrays[[c("params", "buffers")[kind]]]))
        more[[length(more) + 1L]] <- list(
          name = .Call(R_pg_fit_ckpt_tensor_name, i - 1L, kind - 1L, enc2utf8(k)),
          value = st$arrays[[c("params", "buffers")[kind]]][[k]], dtype = fit$file_dtype)
    }
    keys <- c(.HIST_KEYS, fit$metrics)
    h <- .make_history(fit$logs, NULL, NULL, fit$metrics)
    extra <- .Call(R_pg_fit_ckpt_extra, .Call(R_pg_fit_setup_settings, setup),
                   as.double(unlist(h[keys])), length(fit$logs), as.character(fit$metrics),
                   NULL, NULL, .ckpt_rng_state(), states)
    .save_model(fit$model, path, optimizer = fit$optimizer, epoch = epoch,
                extra = structure(extra, class = "json"), more = more)
  }
}

# A checkpoint checked against this run, writing nothing: the core checks its settings (the
# set-up's, which takes the seed and split state), epoch, history and random state, the callbacks
# their states. Returns its run state (the core's R_pg_fit_ckpt_read); .fit_resume_load writes
# the weights and the optimizer later, once the run is set up (a refused checkpoint changes
# nothing).
.fit_resume <- function(path, setup, cbs) {
  .model_info(path, "ag_fit: resume_from")  # a model file, checked as one
  r <- .Call(R_pg_fit_ckpt_read, setup, path)
  r$callbacks <- lapply(r$callbacks, function(t)
    if (!is.null(t)) jsonlite::parse_json(t, simplifyVector = FALSE))
  for (i in seq_len(min(length(cbs), length(r$callbacks))))
    if (!is.null(r$callbacks[[i]]) && is.function(cbs[[i]]$check_state))
      cbs[[i]]$check_state(r$callbacks[[i]])
  r
}

# The checkpoint's weights and optimizer state (all checked before the first write); its tensors.
.fit_resume_load <- function(path, model, opt) {
  # this run's hyper-parameters stay (as in Python): no warning that the file's differ
  r <- withCallingHandlers(.load_model(path, model = model, optimizer = opt, more = TRUE),
                           ggmlR_opt_hyper_warning = function(w) invokeRestart("muffleWarning"))
  r$tensors
}

# callback i's arrays saved in the checkpoint: list(params, buffers) or NULL
.fit_cb_arrays <- function(tensors, i) {
  p <- .Call(R_pg_fit_ckpt_tensor_parse, enc2utf8(as.character(names(tensors))))
  mine <- which(p$callback == i - 1L)
  if (!length(mine)) return(NULL)
  out <- list(params = list(), buffers = list())
  for (j in mine) out[[p$kind[[j]] + 1L]][[p$name[[j]]]] <- `attr<-`(tensors[[j]], "dtype", NULL)
  out
}
