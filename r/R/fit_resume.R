# ag_fit's checkpoints: ag_model_checkpoint() and ag_fit(resume_from =). A checkpoint is a model
# file (weights, optimizer state, epoch) whose `extra` holds the run's settings, history, random
# state and callback states in the same layout as Python's, so a run saved by either language
# resumes in the other, exactly as the uninterrupted run would continue.

# Which epochs save is the core's rule (fit_stop.c: every, the last one, save_best_only's monitor)
ag_model_checkpoint <- function(path, every = 1L, save_best_only = FALSE, monitor = NULL,
                                mode = "auto") {
  fn <- "ag_model_checkpoint"
  if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
    .arg_stop("ag_model_checkpoint: path must be a single file name")
  every <- .arg_int(every, fn, "every", 1L)
  save_best_only <- .arg_flag(save_best_only, fn, "save_best_only")
  # checked now rather than after the first epoch: the core's rule ({epoch}, {{ }}, the directory)
  .Call(R_pg_checkpoint_path, path.expand(path), NULL)
  e <- new.env(parent = emptyenv())
  e$.ptr <- .Call(R_pg_checkpoint_new, every, save_best_only, mode, monitor)
  e$path <- path
  for (f in c("every", "save_best_only", "monitor", "mode", "best"))
    makeActiveBinding(f, local({
      f <- f
      function() .Call(R_pg_checkpoint_info, e$.ptr)[[f]]
    }), e)
  e$saved <- character(0)
  e$fit <- NULL
  e$on_train_begin <- function(fit) {
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
  # a save_best_only run's best goes into the checkpoint, so a resumed run compares with it
  e$state <- function() {
    info <- .Call(R_pg_checkpoint_info, e$.ptr)
    list(js = list(best = info$best, best_epoch = info$best_epoch), arrays = NULL)
  }
  e$check_state <- function(st) .early_stop_state(st, fn)
  e$load_state <- function(st, arrays = NULL) {
    v <- .early_stop_state(st, fn)
    .Call(R_pg_checkpoint_set_state, e$.ptr, v[[1L]], v[[2L]])
  }
  class(e) <- c("ag_model_checkpoint", "ag_callback")
  e
}

print.ag_model_checkpoint <- function(x, ...) {
  best <- if (x$save_best_only) sprintf(" | save_best_only=TRUE | monitor=%s | mode=%s",
                                         if (is.null(x$monitor)) "auto" else x$monitor, x$mode)
          else ""
  cat(sprintf("ag_model_checkpoint | path=%s | every=%d%s\n", x$path, x$every, best))
  invisible(x)
}

# JSON arrays (lists with NULL for NaN) <-> R vectors
.num_vec <- function(v) vapply(v, function(x) if (is.null(x)) NaN else as.double(x), 0)

.history_dict <- function(logs, stopped, best) {
  d <- lapply(.HIST_KEYS, function(k) as.list(vapply(logs, function(l) as.double(l[[k]]), 0)))
  names(d) <- .HIST_KEYS
  c(d, list(stopped_epoch = stopped, best_epoch = best))
}

.history_logs <- function(d) {
  cols <- lapply(.HIST_KEYS, function(k) .num_vec(d[[k]]))
  names(cols) <- .HIST_KEYS
  lapply(seq_along(cols$epoch), function(i) {
    l <- lapply(cols, `[[`, i)
    l$epoch <- as.integer(l$epoch)
    l
  })
}

# the run's state for the checkpoint callback: fit$save_checkpoint(path, epoch)
.fit_saver <- function(fit, settings, cbs) {
  function(path, epoch) {
    states <- list()
    more <- list()
    for (i in seq_along(cbs)) {
      st <- if (is.function(cbs[[i]]$state)) cbs[[i]]$state() else NULL
      states[i] <- list(st$js)
      for (kind in c("params", "buffers")) for (k in names(st$arrays[[kind]])) {
        a <- st$arrays[[kind]][[k]]
        more[[length(more) + 1L]] <- list(name = sprintf("callback%d.%s.%s", i - 1L,
                                                         substr(kind, 1L, nchar(kind) - 1L), k),
                                          value = a, dtype = fit$file_dtype)
      }
    }
    extra <- list(fit = list(settings = settings(), history = .history_dict(fit$logs, NULL, NULL),
                             rng_state = as.list(.ckpt_rng_state()), callbacks = states))
    .save_model(fit$model, path, optimizer = fit$optimizer, epoch = epoch, extra = extra,
                more = more)
  }
}

# Check a checkpoint against this run, writing nothing: the core checks its settings, epoch,
# history and random state. Returns list(epoch, fit = the saved fit state); .fit_resume_load
# writes the weights and the optimizer later, once the run is set up (a refused checkpoint
# changes nothing).
.fit_resume <- function(path, settings) {
  info <- ag_model_info(path)  # a model file, checked as one
  keys <- c("n", "batch_size", "nbatch_logical", "val_split", "shuffle", "loss", "weighted")
  js <- .to_json(settings[keys], "the run's settings")  # numbers to the last bit, as saved
  .Call(R_pg_fit_resume_check, path, enc2utf8(as.character(js)))
  list(epoch = as.integer(info$epoch), fit = info$extra$fit)
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
  pre <- sprintf("callback%d.", i - 1L)
  keys <- names(tensors)[startsWith(names(tensors), pre)]
  if (!length(keys)) return(NULL)
  out <- list(params = list(), buffers = list())
  for (k in keys) {
    rest <- substring(k, nchar(pre) + 1L)
    kind <- sub("\\..*$", "", rest)
    nm <- sub("^[^.]*\\.", "", rest)
    a <- tensors[[k]]
    attr(a, "dtype") <- NULL
    if (kind == "param") out$params[[nm]] <- a else if (kind == "buffer") out$buffers[[nm]] <- a
  }
  out
}
