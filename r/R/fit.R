# ag_fit: the high-level training loop (the same semantics as pyggmlr/fit.py).
#
# Per epoch: shuffle the training part, walk it in logical batches of `nbatch_logical` samples
# made of `nbatch_logical / batch_size` micro-batches whose gradients the optimizer accumulates
# (its accumulate_steps) and applies once per logical batch, then evaluate the held-out part in
# eval mode. Loss/accuracy and their uncertainties follow ggml_opt_result_loss /
# ggml_opt_result_accuracy. Shuffles and dropout draw from R's stream, or with `seed` from a run
# stream of their own seeded as set.seed(seed) (R's .Random.seed is then left alone).

.fit_stop <- function(...) stop(sprintf(...), call. = FALSE)

.fit_int <- function(v, name, lo = 1L) {
  if (!is.numeric(v) || length(v) != 1L || is.na(v) || v != floor(v) || v < lo)
    .fit_stop("ag_fit: %s must be an integer >= %d, got %s", name, lo, paste(format(v), collapse = " "))
  as.integer(v)
}

.fit_forward <- function(model, x) {
  if ((is.environment(model) || is.list(model)) && is.function(model$forward)) return(model$forward(x))
  if (is.function(model)) return(model(x))
  .fit_stop("ag_fit: model must have a forward(x) function")
}

# x, y as [features, n] double matrices (samples are columns). A data.frame has one row per
# sample and is transposed; a vector is one row.
.fit_cols <- function(v, name) {
  if (is_ag_tensor(v)) v <- v$data
  if (is.data.frame(v)) {
    ok <- vapply(v, function(col) is.numeric(col) || is.logical(col), logical(1))
    if (!all(ok)) .fit_stop("ag_fit: %s: data.frame column '%s' is not numeric", name, names(v)[!ok][1L])
    v <- t(as.matrix(v))
  }
  if (is.null(dim(v))) {
    if (!is.numeric(v) && !is.logical(v)) .fit_stop("ag_fit: %s must be numeric", name)
    v <- matrix(as.double(v), nrow = 1L)
  }
  if (length(dim(v)) != 2L) .fit_stop("ag_fit: %s must be a [features, n] matrix (samples are columns)", name)
  if (!is.numeric(v) && !is.logical(v)) .fit_stop("ag_fit: %s must be numeric", name)
  # touched only when needed: either would copy the whole data set (pages faulted in every run)
  if (!is.double(v)) storage.mode(v) <- "double"
  if (!is.null(dimnames(v))) dimnames(v) <- NULL
  v
}

.fit_targets <- function(y, loss, n) {
  if (is.null(y)) return(list(Y = NULL, ids = NULL))
  if (is.factor(y)) {
    if (loss != "cross_entropy") .fit_stop("ag_fit: a factor y needs loss = \"cross_entropy\"")
    if (anyNA(y)) .fit_stop("ag_fit: y has missing values")
    y <- as.integer(y) - 1L  # levels in order -> 0-based class ids
  }
  Y <- .fit_cols(y, "y")
  if (ncol(Y) != n) .fit_stop("ag_fit: x has %d samples (columns) but y has %d", n, ncol(Y))
  if (anyNA(Y)) .fit_stop("ag_fit: y has missing values")
  ids <- NULL
  if (loss == "cross_entropy" && nrow(Y) == 1L) {
    if (any(Y != round(Y)) || any(Y < 0))
      .fit_stop("ag_fit: cross_entropy targets must be 0-based class ids (whole numbers >= 0), a factor or a one-hot matrix")
    ids <- as.integer(Y[1L, ])
  }
  list(Y = Y, ids = ids)
}

.fit_loss <- function(loss) {
  if (is.function(loss)) return(list(fn = loss, tensor = TRUE, name = "callable"))
  if (!is.character(loss) || length(loss) != 1L)
    .fit_stop("ag_fit: loss must be \"cross_entropy\", \"mse\", \"mean\", \"sum\" or a function(output, y)")
  switch(loss,
         cross_entropy = list(fn = ag_softmax_cross_entropy_loss, tensor = FALSE, name = loss),
         mse = list(fn = ag_mse_loss, tensor = TRUE, name = loss),
         mean = list(fn = function(out, y) ag_mean(out), tensor = TRUE, name = loss),
         sum = list(fn = function(out, y) ag_sum(out), tensor = TRUE, name = loss),
         if (loss %in% names(.FIT_EXTRA_LOSSES)) list(fn = .FIT_EXTRA_LOSSES[[loss]], tensor = TRUE, name = loss)
         else .fit_stop("ag_fit: unknown loss \"%s\"; use \"cross_entropy\", \"mse\", \"mean\", \"sum\", %s or a function(output, y) returning a 1x1 ag_tensor",
                        loss, paste0("\"", names(.FIT_EXTRA_LOSSES), "\"", collapse = ", ")))
}

# the losses beyond ggml-opt's (loss.R), each against y of the output's shape
.FIT_EXTRA_LOSSES <- list(binary_cross_entropy = function(out, y) ag_binary_cross_entropy_loss(out, y),
                          bce_with_logits = function(out, y) ag_bce_with_logits_loss(out, y),
                          huber = function(out, y) ag_huber_loss(out, y),
                          mae = function(out, y) ag_mae_loss(out, y))

# loss statistics as ggml reports them (mean of the per-batch losses weighted by batch size, or
# the total for a sum loss, and the standard error of the per-batch values), computed by the core
# (pg_loss_stats), the same function Python's ag_fit calls, so the histories agree to the bit
.loss_stats <- function(v, w, per_datapoint) .Call(R_pg_loss_stats, as.double(v), as.double(w), isTRUE(per_datapoint))

.acc_stats <- function(ncorrect, ndata) {
  if (is.null(ncorrect)) return(c(NaN, NaN))
  .Call(R_pg_acc_stats, ncorrect, ndata)  # ggml_opt_result_accuracy, the core's (fit.c)
}


.snapshot <- function(model) {
  list(params = lapply(.layer_params(model), function(t) t$data),
       buffers = lapply(.layer_buffers(model), function(t) t$data))
}

.restore <- function(model, snap) {
  p <- .layer_params(model)
  for (k in names(p)) p[[k]]$data <- snap$params[[k]]
  b <- .layer_buffers(model)
  for (k in names(b)) b[[k]]$data <- snap$buffers[[k]]
  invisible(model)
}

.HYPER_ALIASES <- c(alpha = "lr", wd = "weight_decay")

.apply_hyper <- function(opt, hp, epoch) {
  if (is.null(hp)) return(invisible())
  if (!is.list(hp) || (length(hp) && is.null(names(hp))))
    .fit_stop("ag_fit: opt_params(epoch) must return a named list, got %s at epoch %d", class(hp)[[1L]], epoch)
  for (k in names(hp)) {
    nm <- if (k %in% names(.HYPER_ALIASES)) .HYPER_ALIASES[[k]] else k
    if (!nm %in% .HYPER[[opt$kind]])
      .fit_stop("ag_fit: opt_params returned unknown hyper-parameter '%s' for %s", k, class(opt)[[1L]])
    assign(nm, hp[[k]], envir = opt)
  }
  invisible()
}

.make_fit_optimizer <- function(optimizer, params, lr) {
  if (.is_optimizer(optimizer)) return(optimizer)
  if (is.character(optimizer) && length(optimizer) == 1L) {
    o <- tolower(optimizer)
    if (o %in% c("adamw", "adam")) return(optimizer_adam(params, lr = lr))
    if (o == "sgd") return(optimizer_sgd(params, lr = lr))
  }
  .fit_stop("ag_fit: unknown optimizer %s; use \"adamw\", \"sgd\" or an optimizer object",
            paste(format(optimizer), collapse = " "))
}

# ---------------------------------------------------------------------------------------------
# static (compiled) steps

# TRUE when every layer is a built-in one whose whole forward runs in ops a compiled graph
# replays, so ag_fit compiles its step by default (ag_embedding reads its ids from the batch
# tensor in the core, so a replay refills them).
.builtin_model <- function(model) {
  if (is.environment(model)) {
    if (inherits(model, "ag_sequential"))
      return(length(model$layers) > 0L && all(vapply(model$layers, .builtin_model, logical(1))))
    return(inherits(model, c("ag_dropout", "ag_batch_norm", "ag_layer_norm", "ag_multihead_attention",
                              "ag_embedding")))
  }
  # ag_linear is a plain list
  is.list(model) && !is.object(model) && identical(names(model), c("W", "b", "forward", "params", "to_config")) &&
    is_ag_tensor(model$W) && is.function(model$to_config) && identical(model$to_config()$type, "linear")
}

# ag_fit's compiled graphs: one "opt" graph for the training batches (all of batch_size columns)
# recorded in training mode at the first batch, and "forward" graphs for validation recorded in
# eval mode, one per batch width (the full one and the last partial batch). Recording leaves the
# model as it was: no optimizer step, no random draws (ag_compile restores R's stream) and the
# buffers (batch-norm running statistics) put back, so the run equals the eager one bit for bit.
.static_steps <- function(model, lossfn, opt, has_y) {
  s <- new.env(parent = emptyenv())
  s$train <- NULL
  s$val <- list()
  record <- function(xv, yv, build) {
    holder <- new.env(parent = emptyenv())
    fn <- function(x, y = NULL) {
      out <- .fit_forward(model, x)
      holder$out <- out
      lossfn(out, y)
    }
    bufs <- lapply(.layer_buffers(model), function(t) t$data)
    on.exit({
      b <- .layer_buffers(model)
      for (k in names(b)) if (!is.null(bufs[[k]])) b[[k]]$data <- bufs[[k]]
    })
    ins <- list(xv)  # the plan's batch tensors: each gather refills the graph's inputs
    if (has_y) ins[[2L]] <- yv
    step <- do.call(ag_compile, c(list(fn), ins, list(build = build, optimizer = if (build == "opt") opt)))
    list(step = step, out = holder$out)
  }
  run <- function(g, xv, yv) list(loss = if (has_y) g$step(xv, yv) else g$step(xv), out = g$out)
  # the loss of one replayed training step; its output tensor (a reused buffer) is s$train$out
  s$train_step <- function(xv, yv) {
    if (is.null(s$train)) s$train <- record(xv, yv, "opt")
    if (has_y) s$train$step(xv, yv) else s$train$step(xv)
  }
  s$val_step <- function(xv, yv) {
    w <- as.character(dim(xv)[2L])
    if (is.null(s$val[[w]])) s$val[[w]] <- record(xv, yv, "forward")
    r <- run(s$val[[w]], xv, yv)
    r$loss <- as.matrix(r$loss$data)[1L, 1L]
    r
  }
  s
}

# ---------------------------------------------------------------------------------------------
# callbacks

.fn_callback <- function(fn) list(on_epoch_end = fn)

ag_early_stopping <- function(patience = 5L, min_delta = 0, restore_best = TRUE, monitor = NULL) {
  if (!is.numeric(patience) || length(patience) != 1L || is.na(patience) || patience != floor(patience) || patience < 1)
    stop(sprintf("ag_early_stopping: patience must be an integer >= 1, got %s", paste(format(patience), collapse = " ")),
         call. = FALSE)
  if (!is.numeric(min_delta) || length(min_delta) != 1L || is.na(min_delta))
    stop("ag_early_stopping: min_delta must be a number", call. = FALSE)
  if (!is.null(monitor) && (!is.character(monitor) || length(monitor) != 1L))
    stop("ag_early_stopping: monitor must be NULL or the name of a logged value (\"loss\", \"val_loss\", ...)", call. = FALSE)
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
    e$best <- Inf; e$best_epoch <- NULL; e$wait <- 0L; e$stopped_epoch <- NULL; e$best_weights <- NULL
  }
  e$on_epoch_end <- function(epoch, logs) {
    key <- if (!is.null(e$monitor)) e$monitor else if (!is.nan(logs$val_loss)) "val_loss" else "loss"
    v <- logs[[key]]
    if (is.null(v)) stop(sprintf("ag_early_stopping: nothing logged under '%s'", key), call. = FALSE)
    if (!is.na(v) && v < e$best - e$min_delta) {
      e$best <- v; e$best_epoch <- epoch; e$wait <- 0L
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
  e$state <- function() list(js = list(best = e$best, best_epoch = e$best_epoch, wait = e$wait), arrays = e$best_weights)
  e$load_state <- function(st, arrays = NULL) {  # from a checkpoint (either language's)
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

# ---------------------------------------------------------------------------------------------
# history

.HIST_KEYS <- c("epoch", "loss", "loss_unc", "accuracy", "accuracy_unc", "val_loss", "val_loss_unc",
                "val_accuracy", "val_accuracy_unc", "lr", "time_train", "time_val")

.make_history <- function(logs, stopped_epoch, best_epoch) {
  h <- lapply(.HIST_KEYS, function(k) vapply(logs, function(l) as.double(l[[k]]), 0))
  names(h) <- .HIST_KEYS
  h$epoch <- as.integer(h$epoch)
  h$stopped_epoch <- stopped_epoch
  h$best_epoch <- best_epoch
  class(h) <- "ag_history"
  h
}

as.data.frame.ag_history <- function(x, ...) as.data.frame(unclass(x)[.HIST_KEYS])

.pm_sym <- function() if (isTRUE(l10n_info()[["UTF-8"]])) " \u00b1 " else " +- "

.pm <- function(v, u) {
  if (is.nan(v) || is.na(v)) return(formatC("-", width = 18))
  if (is.na(u)) sprintf("%9.5f%9s", v, "") else paste0(sprintf("%9.5f", v), .pm_sym(), formatC(sprintf("%.5f", u), width = -7))
}

.pm_pct <- function(v, u) {
  if (is.nan(v) || is.na(v)) return(formatC("-", width = 17))
  paste0(sprintf("%6.2f%%", 100 * v), .pm_sym(), sprintf("%5.2f%%", 100 * (if (is.na(u)) 0 else u)))
}

print.ag_history <- function(x, ...) {
  n <- length(x$epoch)
  if (n == 0L) { cat("<ag_history: no epochs>\n"); return(invisible(x)) }
  has_val <- any(!is.nan(x$val_loss))
  has_acc <- any(!is.nan(x$accuracy))
  cat(sprintf("<ag_history: %d epoch%s%s>\n", n, if (n == 1L) "" else "s",
              if (!is.null(x$stopped_epoch)) sprintf(", stopped at epoch %d", x$stopped_epoch) else ""))
  head <- sprintf("%5s  %18s", "epoch", "loss")
  if (has_acc) head <- paste0(head, sprintf("  %17s", "accuracy"))
  if (has_val) {
    head <- paste0(head, sprintf("  %18s", "val_loss"))
    if (has_acc) head <- paste0(head, sprintf("  %17s", "val_accuracy"))
  }
  cat(head, sprintf("  %7s", "time"), "\n", sep = "")
  for (i in seq_len(n)) {
    s <- sprintf("%5d  %s", x$epoch[i], .pm(x$loss[i], x$loss_unc[i]))
    if (has_acc) s <- paste0(s, "  ", .pm_pct(x$accuracy[i], x$accuracy_unc[i]))
    if (has_val) {
      s <- paste0(s, "  ", .pm(x$val_loss[i], x$val_loss_unc[i]))
      if (has_acc) s <- paste0(s, "  ", .pm_pct(x$val_accuracy[i], x$val_accuracy_unc[i]))
    }
    cat(s, sprintf("  %6.2fs", x$time_train[i] + x$time_val[i]), "\n", sep = "")
  }
  if (!is.null(x$best_epoch)) cat(sprintf("best epoch: %d\n", x$best_epoch))
  invisible(x)
}

plot.ag_history <- function(x, y, ...) {
  ep <- x$epoch
  if (!length(ep)) stop("plot.ag_history: no epochs to plot", call. = FALSE)
  has_acc <- any(!is.nan(x$accuracy))
  has_val <- any(!is.nan(x$val_loss))
  op <- graphics::par(mfrow = c(1L, if (has_acc) 2L else 1L))
  on.exit(graphics::par(op))
  band <- function(v, u, col) {
    u[is.na(u)] <- 0
    ok <- !is.na(v)
    if (sum(ok) > 1L)
      graphics::polygon(c(ep[ok], rev(ep[ok])), c(v[ok] - u[ok], rev(v[ok] + u[ok])),
                        col = grDevices::adjustcolor(col, alpha.f = 0.2), border = NA)
  }
  lo <- c(x$loss - ifelse(is.na(x$loss_unc), 0, x$loss_unc), if (has_val) x$val_loss - ifelse(is.na(x$val_loss_unc), 0, x$val_loss_unc))
  hi <- c(x$loss + ifelse(is.na(x$loss_unc), 0, x$loss_unc), if (has_val) x$val_loss + ifelse(is.na(x$val_loss_unc), 0, x$val_loss_unc))
  graphics::plot(ep, x$loss, type = "l", col = "steelblue", lwd = 2, xlab = "epoch", ylab = "loss",
                 ylim = range(c(lo, hi), finite = TRUE), main = "loss", ...)
  band(x$loss, x$loss_unc, "steelblue")
  leg <- "train"; cols <- "steelblue"
  if (has_val) {
    graphics::lines(ep, x$val_loss, col = "darkorange", lwd = 2)
    band(x$val_loss, x$val_loss_unc, "darkorange")
    leg <- c(leg, "validation"); cols <- c(cols, "darkorange")
  }
  graphics::legend("topright", legend = leg, col = cols, lwd = 2, bty = "n")
  if (has_acc) {
    yl <- range(c(x$accuracy, if (has_val) x$val_accuracy), finite = TRUE)
    graphics::plot(ep, x$accuracy, type = "l", col = "steelblue", lwd = 2, xlab = "epoch", ylab = "accuracy",
                   ylim = yl, main = "accuracy")
    if (has_val) graphics::lines(ep, x$val_accuracy, col = "darkorange", lwd = 2)
    graphics::legend("bottomright", legend = leg, col = cols, lwd = 2, bty = "n")
  }
  invisible(x)
}

# ---------------------------------------------------------------------------------------------
# the loop

ag_fit <- function(model, x, y = NULL, loss = "cross_entropy", optimizer = "adamw", opt_params = NULL,
                   nepoch = 30L, batch_size = 32L, nbatch_logical = NULL, val_split = 0.0, shuffle = TRUE,
                   callbacks = list(), silent = FALSE, seed = NULL, lr = 1e-3, resume_from = NULL, static = NULL,
                   progress = "auto") {
  L <- .fit_loss(loss)
  pmode <- .fit_progress_mode(progress, silent)
  per_datapoint <- L$name != "sum"
  nepoch <- .fit_int(nepoch, "nepoch")
  batch_size <- .fit_int(batch_size, "batch_size")
  nbatch_logical <- if (is.null(nbatch_logical)) batch_size else .fit_int(nbatch_logical, "nbatch_logical")
  if (nbatch_logical %% batch_size != 0L)
    .fit_stop("ag_fit: nbatch_logical (%d) must be a multiple of batch_size (%d)", nbatch_logical, batch_size)
  accum <- nbatch_logical %/% batch_size
  if (!is.numeric(val_split) || length(val_split) != 1L || is.na(val_split) || val_split < 0 || val_split >= 1)
    .fit_stop("ag_fit: val_split must be in [0, 1), got %s", paste(format(val_split), collapse = " "))
  if (!is.null(opt_params) && !is.function(opt_params))
    .fit_stop("ag_fit: opt_params must be a function(epoch) returning a named list, or NULL")
  if (!is.null(seed) && (!is.numeric(seed) || length(seed) != 1L || is.na(seed)))
    .fit_stop("ag_fit: seed must be a single number or NULL")
  if (!is.null(static) && (!is.logical(static) || length(static) != 1L || is.na(static)))
    .fit_stop("ag_fit: static must be TRUE, FALSE or NULL")

  X <- .fit_cols(x, "x")
  n <- ncol(X)
  if (is.null(y) && L$name %in% c("cross_entropy", "mse", names(.FIT_EXTRA_LOSSES))) .fit_stop("ag_fit: loss \"%s\" needs targets y", L$name)
  tg <- .fit_targets(y, L$name, n)
  classify <- L$name == "cross_entropy"

  params <- .layer_params(model)
  if (!length(params)) .fit_stop("ag_fit: the model has no parameters to train")
  dtype <- params[[1L]]$dtype
  opt <- .make_fit_optimizer(optimizer, params, lr)
  opt$accumulate_steps <- accum
  opt$accum_count <- 0

  if (is.function(callbacks) || inherits(callbacks, "ag_callback")) callbacks <- list(callbacks)
  if (!is.list(callbacks)) .fit_stop("ag_fit: callbacks must be a list of callbacks or functions")
  cbs <- lapply(callbacks, function(cb) {
    if (is.function(cb)) return(.fn_callback(cb))
    if ((is.environment(cb) || is.list(cb)) && is.function(cb$on_epoch_end)) return(cb)
    .fit_stop("ag_fit: callbacks must be ag_early_stopping() objects, lists/environments with on_epoch_end, or functions(epoch, logs)")
  })

  if (is.null(static)) static <- is.character(loss) && .builtin_model(model)
  ss <- if (static) .static_steps(model, L$fn, opt, !is.null(tg$Y)) else NULL

  settings <- list(n = n, batch_size = batch_size, nbatch_logical = nbatch_logical, val_split = val_split,
                   shuffle = isTRUE(shuffle), loss = L$name, seed = if (is.null(seed)) NULL else .seed_int(seed),
                   split_state = NULL)
  res <- NULL
  if (!is.null(resume_from)) {  # weights, optimizer, then the run's own state from the checkpoint
    if (!is.character(resume_from) || length(resume_from) != 1L) .fit_stop("ag_fit: resume_from must be a file name")
    res <- .fit_resume(resume_from, model, opt, settings)
    opt$accumulate_steps <- accum
    settings$seed <- if (is.null(res$fit$settings$seed)) NULL else as.integer(res$fit$settings$seed)
  }
  if (!is.null(settings$seed)) {  # the whole run (shuffles, dropout) on a stream of its own
    prev_rng <- .Call(R_pg_rng_use, .rng_stream(settings$seed))
    on.exit(.Call(R_pg_rng_use, prev_rng), add = TRUE)
  }
  # the split, the shuffles, the batches and the statistics live in the core (native/fit.c)
  plan <- .Call(R_pg_fit_new, ag_tensor(X, dtype = dtype)$.ptr, if (is.null(tg$Y)) NULL else ag_tensor(tg$Y, dtype = dtype)$.ptr,
                classify, batch_size, nbatch_logical, val_split, isTRUE(shuffle),
                if (is.null(res)) NULL else as.integer(.num_vec(res$fit$settings$split_state)))
  settings$split_state <- as.list(.Call(R_pg_fit_split_state, plan))
  if (!is.null(res)) .ckpt_rng_load(as.integer(.num_vec(res$fit$rng_state)))
  sz <- .Call(R_pg_fit_sizes, plan)
  n_val <- sz[[3L]]; nb <- sz[[4L]]; n_valb <- sz[[6L]]

  fit <- new.env(parent = emptyenv())
  fit$model <- model; fit$optimizer <- opt; fit$nepoch <- nepoch; fit$stop <- FALSE
  fit$logs <- if (is.null(res)) list() else .history_logs(res$fit$history); fit$best_epoch <- NULL
  fit$file_dtype <- if (identical(dtype, "f64")) "F64" else "F32"
  fit$save_checkpoint <- .fit_saver(fit, function() settings, cbs)
  for (cb in cbs) if (is.function(cb$on_train_begin)) cb$on_train_begin(fit)
  if (!is.null(res)) for (i in seq_along(cbs)) {
    st <- res$fit$callbacks[i]
    if (length(st) && !is.null(st[[1L]]) && is.function(cbs[[i]]$load_state))
      cbs[[i]]$load_state(st[[1L]], .fit_cb_arrays(res$tensors, i))
  }

  on.exit({
    opt$zero_grad()
    ag_tape_clear()
    ag_eval(model)
  }, add = TRUE)
  stopped <- NULL
  step <- 0L
  first <- if (is.null(res)) 1L else res$epoch + 1L
  todo <- max(0L, nepoch - first + 1L)
  prog <- .fit_progress(pmode, plan, todo * nb, nepoch)
  on.exit(prog$close(), add = TRUE)
  batch_cbs <- Filter(function(cb) is.function(cb$on_batch_end), cbs)
  replay <- !is.null(ss) && !prog$on && !length(batch_cbs)
  for (epoch in seq(first, length.out = todo)) {
    if (!is.null(opt_params)) .apply_hyper(opt, opt_params(epoch), epoch)
    logs <- list(epoch = epoch, lr = as.double(opt$lr))
    .Call(R_pg_fit_epoch_begin, plan)
    ag_train(model)
    t0 <- proc.time()[["elapsed"]]
    prog$epoch_begin(epoch)
    for (b in seq_len(nb)) {
      if (replay && !is.null(ss$train)) {  # nothing to do between batches: the rest of the epoch in one core call
        .Call(R_pg_fit_run_static, plan, FALSE, b - 1L, nb, attr(ss$train$step, "graph"), ss$train$out)
        step <- step + (nb - b + 1L)
        break
      }
      bt <- .Call(R_pg_fit_batch, plan, FALSE, b - 1L)
      if (!is.null(ss)) {  # one replay of the compiled step
        lval <- ss$train_step(bt[[1L]], bt[[2L]])
        out <- ss$train$out
      } else {
        with_grad_tape({
          out <- .fit_forward(model, bt[[1L]])
          lv <- L$fn(out, bt[[2L]])
        })
        if (!is_ag_tensor(lv)) .fit_stop("ag_fit: the loss must be a 1x1 ag_tensor")
        grads <- backward(lv)
        opt$step(grads, sum_grads = TRUE)  # one environment per micro-batch: the optimizer sums them
        opt$zero_grad()
        grads <- NULL
        lval <- lv$data[1L, 1L]
        lv <- NULL
      }
      .Call(R_pg_fit_record, plan, FALSE, lval, out)  # accuracy: arg-max in C, no copy of out
      out <- bt <- NULL  # drop the references (rm() itself costs ~10 us a call, a step's worth)
      if (is.null(ss)) ag_tape_clear()
      step <- step + 1L
      if (prog$on) prog$tick()
      for (cb in batch_cbs) cb$on_batch_end(step, list(epoch = epoch, batch = b, loss = lval))
    }
    logs$time_train <- proc.time()[["elapsed"]] - t0
    t1 <- proc.time()[["elapsed"]]
    if (n_val > 0L) {
      ag_eval(model)
      ag_no_grad({
        for (b in seq_len(n_valb)) {
          w <- as.character(min(batch_size, n_val - (b - 1L) * batch_size))
          if (!is.null(ss) && !is.null(ss$val[[w]])) {  # recorded: gather, replay and record in C
            .Call(R_pg_fit_run_static, plan, TRUE, b - 1L, b, attr(ss$val[[w]]$step, "graph"), ss$val[[w]]$out)
            next
          }
          bt <- .Call(R_pg_fit_batch, plan, TRUE, b - 1L)
          if (!is.null(ss)) {
            r <- ss$val_step(bt[[1L]], bt[[2L]])
            out <- r$out; lval <- r$loss
          } else {
            out <- .fit_forward(model, bt[[1L]])
            lval <- L$fn(out, bt[[2L]])$data[1L, 1L]
          }
          .Call(R_pg_fit_record, plan, TRUE, lval, out)
        }
      })
      out <- bt <- NULL
      ag_train(model)
    }
    st <- .Call(R_pg_fit_epoch_end, plan, per_datapoint)
    logs$loss <- st[1L]; logs$loss_unc <- st[2L]; logs$accuracy <- st[3L]; logs$accuracy_unc <- st[4L]
    logs$val_loss <- st[5L]; logs$val_loss_unc <- st[6L]; logs$val_accuracy <- st[7L]; logs$val_accuracy_unc <- st[8L]
    logs$time_val <- proc.time()[["elapsed"]] - t1
    fit$logs[[length(fit$logs) + 1L]] <- logs
    prog$epoch_end(logs)
    stop_now <- FALSE
    for (cb in cbs) if (identical(cb$on_epoch_end(epoch, logs), FALSE)) stop_now <- TRUE
    if (stop_now || isTRUE(fit$stop)) {
      stopped <- epoch
      break
    }
  }
  for (cb in cbs) if (is.function(cb$on_train_end)) cb$on_train_end(fit)
  .make_history(fit$logs, stopped, fit$best_epoch)
}

ag_predict <- function(model, x, batch_size = 256L) {
  X <- .fit_cols(x, "x")
  batch_size <- .fit_int(batch_size, "batch_size")
  if (ncol(X) == 0L) stop("ag_predict: x has no samples", call. = FALSE)
  p <- .layer_params(model)
  dtype <- if (length(p)) p[[1L]]$dtype else ag_default_dtype()
  was_training <- (is.environment(model) && isTRUE(model$training))
  ag_eval(model)
  on.exit(if (was_training) ag_train(model), add = TRUE)
  outs <- list()
  ag_no_grad({
    for (s0 in seq(1L, ncol(X), by = batch_size)) {
      idx <- s0:min(s0 + batch_size - 1L, ncol(X))
      outs[[length(outs) + 1L]] <- .fit_forward(model, ag_tensor(X[, idx, drop = FALSE], dtype = dtype))$data
    }
  })
  do.call(cbind, outs)
}
