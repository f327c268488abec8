# ag_fit: the high-level training loop (the same semantics as pyggmlr/fit/loop.py).
#
# Per epoch: shuffle the training part, walk it in logical batches of `nbatch_logical` samples
# made of `nbatch_logical / batch_size` micro-batches whose gradients the optimizer accumulates
# (its accumulate_steps) and applies once per logical batch, then evaluate the held-out part in
# eval mode. Loss/accuracy and their uncertainties follow ggml_opt_result_loss /
# ggml_opt_result_accuracy. Shuffles and dropout draw from R's stream, or with `seed` from a run
# stream of their own seeded as set.seed(seed) (R's .Random.seed is then left alone).

# ---------------------------------------------------------------------------------------------
# the loop

ag_fit <- function(model, x, y = NULL, loss = "cross_entropy", optimizer = "adamw",
                   opt_params = NULL,
                   nepoch = 30L, batch_size = 32L, nbatch_logical = NULL, val_split = 0.0,
                   shuffle = TRUE,
                   callbacks = list(), silent = FALSE, seed = NULL, lr = 1e-3, resume_from = NULL,
                   static = NULL,
                   progress = "auto", distributed = FALSE, validation_data = NULL, verbose = NULL,
                   class_weight = NULL, sample_weight = NULL, data = NULL, metrics = NULL) {
  # fit_data.R: loaders, validation_data, verbose (as Python's)
  # the arguments are checked in Python's order (the first bad one is named in both languages)
  v <- .fit_verbosity(verbose, progress, silent)
  flag <- function(v) is.logical(v) && length(v) == 1L && !is.na(v)
  .Call(R_pg_fit_flags_check, flag(distributed), is.null(static) || flag(static))  # core's texts
  fm <- .fit_formula(x, y, data)  # fit_formula.R: y ~ ., data = df; factor columns of a df x
  d <- .fit_data(fm$x, fm$y, validation_data, batch_size, shuffle, seed)
  y <- d$y
  batch_size <- d$batch_size
  shuffle <- d$shuffle
  seed <- d$seed
  pmode <- .fit_progress_mode(v$progress, v$silent)
  L <- .fit_loss(loss)
  nepoch <- .arg_int(nepoch, "ag_fit", "nepoch", 1L)
  batch_size <- .arg_int(batch_size, "ag_fit", "batch_size", 1L)
  shuffle <- .arg_flag(shuffle, "ag_fit", "shuffle")
  nbatch_logical <- .arg_int(if (is.null(nbatch_logical)) batch_size else nbatch_logical,
                             "ag_fit", "nbatch_logical", 1L)
  # the rest of the rules (a multiple of batch_size, val_split in [0, 1)) are the core's
  # (pg_fit_new), one text in both languages
  if (!is.numeric(val_split) || is.factor(val_split) || length(val_split) != 1L)
    .arg_fail("argument", "ag_fit: val_split must be a number, got %s", .arg_show(val_split))
  if (!is.null(opt_params) && !is.function(opt_params)) .fit_kind_fail("OPT_PARAMS_FN", "")

  X <- .fit_cols(d$x, "x")
  # how accuracy is counted: 0 none, 1 arg-max, 2 / 3 binary (BCE); per_datapoint: the setup's
  classify <- .Call(R_pg_fit_loss_rules, if (is.null(L$code)) -1L else L$code, !is.null(y))[[1L]]
  mcodes <- .fit_metric_codes(metrics, classify, !is.null(y))  # evaluate.R, before training
  SW <- .fit_sample_weight(sample_weight)  # fit_weight.R; the values are the core's to check
  CW <- .fit_class_weight(class_weight, y)
  # the samples, the classes and the rows against the outputs
  tg <- .fit_targets(y, L$name, X, classify, model, L$code, mcodes, d$yv)
  n <- ncol(X)  # with validation_data: its columns last, in the plan, held out exactly by the
  if (d$fixed) {  # val_split the core's rules give (pg_fit_val_join)
    dims <- lapply(list(X, tg$Y, d$xv, d$yv), function(m) if (!is.null(m)) as.list(dim(m)))
    val_split <- .Call(R_pg_fit_val_join, dims, val_split)
    n <- n + ncol(d$xv)
  }

  if (!((is.environment(model) || is.list(model)) &&
        (is.function(model$parameters) || is.function(model$params))))
    .fit_kind_fail("MODEL", class(model)[[1L]])  # the core's texts, Python's too
  params <- .layer_params(model)
  if (!length(params)) .fit_kind_fail("NO_PARAMS", "")
  dtype <- params[[1L]]$dtype
  opt <- .make_fit_optimizer(optimizer, params, lr)
  # a setup that fails (bad ids, a refused resume, ...) leaves the optimizer as it was, put back
  # before a calling handler sees the error (the exiting handler below, as Python's except);
  # on.exit covers an interrupt
  opt_before <- c(opt$accumulate_steps, opt$accum_count)
  started <- FALSE
  prev_rng <- NULL
  rng_before <- .rng_save()  # the split and first shuffle are drawn before the weights are checked
  restore <- function() {
    opt$accumulate_steps <- opt_before[[1]]
    opt$accum_count <- opt_before[[2]]
    if (!is.null(prev_rng)) .Call(R_pg_rng_use, prev_rng)
    .rng_restore(rng_before)
  }
  on.exit(if (!started) restore(), add = TRUE)

  tryCatch({
    # one callback (a function, an environment or named list with an on_epoch_end function),
    # else a list of them: the core's rule (pg_fit_callback_plan), Python's too
    plan <- function(cb, top) .Call(R_pg_fit_callback_plan, .cb_value(cb), top, class(cb)[[1L]])
    if (plan(callbacks, TRUE) == "one") callbacks <- list(callbacks)
    cbs <- lapply(callbacks, function(cb) if (plan(cb, FALSE) == "wrap") .fn_callback(cb) else cb)

    # static / distributed, the batch sizes over ranks and the run's settings (kept for the resume
    # check and the checkpoints) are the core's (native/fit_setup.c), Python's too
    su <- .Call(R_pg_fit_setup_new, list(
      static_mode = static, distributed = isTRUE(distributed), n = n, batch_size = batch_size,
      builtin = .builtin_model(model), metrics = as.integer(mcodes),
      nbatch_logical = nbatch_logical, val_split = val_split, shuffle = isTRUE(shuffle),
      loss = L$name, weighted = !is.null(SW) || !is.null(CW)))
    sync <- NULL
    if (isTRUE(distributed)) {  # MPI over Rmpi: the same collectives as Python's (distributed.R)
      sync <- .fit_sync(model, params)
      .Call(R_pg_fit_setup_world, su, sync$world)
      if (sync$rank != 0L) pmode <- "none"  # only rank 0 prints
    }
    if (!is.null(seed)) .Call(R_pg_fit_setup_seed, su, .seed_int(seed, "ag_fit"))
    info <- .Call(R_pg_fit_setup_info, su)
    opt$accumulate_steps <- info$accum  # nbatch_logical / batch_size (the core's)
    opt$accum_count <- 0
    # the compiled steps (ag_compile of the forward and the loss); when to record, probe or fall
    # back is the session's (native/fit_session.c)
    ss <- .static_steps(model, L$fn, opt, !is.null(tg$Y))
    res <- NULL
    if (!is.null(resume_from)) {  # weights, optimizer, then the run's own state from the checkpoint
      if (!is.character(resume_from) || length(resume_from) != 1L || is.na(resume_from))
        .Call(R_pg_fit_resume_from_fail, .arg_show(resume_from))  # the core's text
      .model_info(resume_from, "ag_fit: resume_from")  # a model file, checked as one
      # checked against the run's settings, whose seed and split state become the checkpoint's;
      # its history as the run's logs (the core's R_pg_fit_ckpt_read), nothing written
      res <- .Call(R_pg_fit_ckpt_read, su, resume_from)
      res$callbacks <- lapply(res$callbacks, .mf_json)  # each state's JSON, or NULL
      for (i in seq_len(min(length(cbs), length(res$callbacks))))  # the callbacks' own checks
        if (!is.null(res$callbacks[[i]]) && is.function(cbs[[i]]$check_state))
          cbs[[i]]$check_state(res$callbacks[[i]])
      info <- .Call(R_pg_fit_setup_info, su)
    }
    if (!is.null(info$seed)) {  # the whole run (shuffles, dropout) on a stream of its own
      run_rng <- .rng_stream(info$seed)
      prev_rng <- .Call(R_pg_rng_current)   # restore registered before the switch
      on.exit(.Call(R_pg_rng_use, prev_rng), add = TRUE)
      .Call(R_pg_rng_use, run_rng)
    }
    # the split, the shuffles, the batches and the statistics live in the core (native/fit.c)
    # the tensors as ag_tensor() makes them, but no wrapper: only the core's handles are used
    dcode <- .dtype_code(dtype, "ag_tensor")
    tn <- function(m) if (!is.null(m)) .Call(R_pg_tensor_new, m, dcode, FALSE)
    plan <- .Call(R_pg_fit_new, tn(X), tn(tg$Y), classify, su, tn(d$xv), tn(d$yv))
    .Call(R_pg_fit_set_weights, plan, if (is.null(L$code)) -1L else L$code, SW, CW, tg$classes,
          tg$levels)
    .Call(R_pg_fit_metrics, plan, mcodes)  # before the shard: refused when distributed
    if (!is.null(sync)) .Call(R_pg_fit_shard, plan, sync$rank, sync$world)
    # the run is set up: now the weights and optimizer, then the stream (all checked)
    if (!is.null(res)) {
      # this run's hyper-parameters stay (as in Python): no warning that the file's differ
      res$arrays <- .Call(R_pg_fit_ckpt_arrays, withCallingHandlers(
        .load_model(resume_from, model = model, optimizer = opt, more = TRUE),
        ggmlR_opt_hyper_warning = function(w) invokeRestart("muffleWarning"))$tensors, length(cbs))
      opt$accumulate_steps <- info$accum
      .ckpt_rng_load(res$rng_state)
    }
    sz <- .Call(R_pg_fit_sizes, plan)  # (.., .., n_val, ..)
    # the run's state shared with callbacks; has_val, has_accuracy (the core's monitor mask): what
    # the run measures (callbacks' monitors); has_rng_state: not on R's non-default RNGkind()
    fit <- list2env(parent = emptyenv(), list(
      model = model, optimizer = opt, nepoch = nepoch, stop = FALSE, best_epoch = NULL,
      logs = if (is.null(res)) list() else res$logs, has_val = sz[[3L]] > 0L,
      has_rng_state = .Call(R_pg_fit_setup_info, su)$has_split_state,
      has_accuracy = .Call(R_pg_fit_monitor_mask, plan),
      metrics = .fit_metric_columns(mcodes, sz[[3L]] > 0L),
      file_dtype = if (identical(dtype, "f64")) "F64" else "F32"))
    # ag_model_checkpoint's save: the layout, the history's columns and the callback tensors'
    # names are the core's (native/fit_ckpt.c), Python's too; the glue reads logs and settings
    fit$save_checkpoint <- function(path, epoch) {
      states <- more <- list()
      for (i in seq_along(cbs)) {
        # state(): a JSON-able value (a named list), or the built-ins' list(js =, arrays =)
        st <- .cb_state_form(if (is.function(cbs[[i]]$state)) cbs[[i]]$state())
        states[i] <- list(if (!is.null(st$js)) .to_json(st$js, "extra"))
        more <- c(more, .Call(R_pg_fit_ckpt_more, i - 1L, st$arrays, fit$file_dtype))
      }
      extra <- .Call(R_pg_fit_ckpt_extra, su, fit$logs, as.character(fit$metrics),
                     .ckpt_rng_state(), states)
      .save_model(fit$model, path, optimizer = fit$optimizer, epoch = epoch,
                  extra = structure(extra, class = "json"), more = more)
    }
    for (cb in cbs) if (is.function(cb$on_train_begin)) cb$on_train_begin(fit)
    for (i in seq_len(min(length(cbs), length(res$callbacks))))
      if (!is.null(res$callbacks[[i]]) && is.function(cbs[[i]]$load_state)) {
        # the callback's tensors too when the checkpoint has some (as Python's)
        if (is.null(res$arrays[[i]])) cbs[[i]]$load_state(res$callbacks[[i]])
        else cbs[[i]]$load_state(res$callbacks[[i]], res$arrays[[i]])
      }

    on.exit({
      opt$zero_grad()
      ag_tape_clear()
      ag_eval(model)
    }, add = TRUE)
    first <- if (is.null(res)) 1L else res$epoch + 1L
    prog <- .fit_progress(pmode, plan, .Call(R_pg_fit_total_batches, plan, nepoch, first), nepoch)
    on.exit(prog$close(), add = TRUE)
    batch_cbs <- Filter(function(cb) is.function(cb$on_batch_end) &&
                          !identical(cb$on_batch_end, .cb_pass_batch), cbs)
    # an optimizer of this package whose step is its own: eager batches are answered in C
    core_step <- is.null(sync) &&
      inherits(opt, c("ag_optimizer_sgd", "ag_optimizer_adam")) &&
      identical(environment(opt$step), environment(opt$zero_grad))
    fwd <- .fit_forward_fn(model)  # looked up once: the loop calls them by value
    lossfn <- L$fn
    # the loop is the core's (native/fit_session.c): this answers only what calls R code
    s <- .Call(R_pg_session_new, plan, su, nepoch, first, prog$ticks || length(batch_cbs))
    cfwd <- if (core_step) fwd
    oh <- opt$.h
    # how the outputs are read, for ag_predict(type =) and model files (checkpoints included)
    .set_target(model, if (is.null(L$code)) NULL else L$name, tg$levels)
    if (is.environment(model)) model$x_terms <- fm$terms  # predict() on a data.frame (predict.R)
  }, error = function(e) {  # the same condition object: its class and message
    restore()
    stop(e)
  })
  started <- TRUE
  repeat {
    ev <- .Call(R_pg_session_next, s, cfwd, if (is.null(L$code)) lossfn else L$code, oh)
    at <- .Call(R_pg_session_where, s)  # (epoch, batch, step, stopped, loss, other batch)
    switch(ev,
      train_batch = {
        bt <- .Call(R_pg_session_batch, s)  # (x, y, a weighted run's weight row)
        with_grad_tape({
          out <- .fit_out(fwd(bt[[1L]]))
          lv <- if (is.null(bt[[3L]])) lossfn(out, bt[[2L]]) else lossfn(out, bt[[2L]], bt[[3L]])
        })
        if (!is_ag_tensor(lv)) .fit_kind_fail("LOSS_VALUE", class(lv)[[1L]])  # the core's text
        # the gradients pass through R: MPI's all-reduce, a user's step()
        grads <- backward(lv)
        if (!is.null(sync)) sync$grads(grads, ncol(bt[[1L]]))
        opt$step(grads, sum_grads = TRUE)  # one environment per micro-batch: the optimizer sums
        opt$zero_grad()
        grads <- NULL
        .Call(R_pg_fit_record, plan, FALSE, lv$data[1L, 1L], out)  # accuracy counted in C
        ag_tape_clear()
        out <- bt <- lv <- NULL  # drop the references
      },
      probe = , record = , record_val = {  # the compiled steps: the session asks, runs, decides
        val <- ev == "record_val"
        bt <- .Call(R_pg_session_batch, s)
        tryCatch(if (ev == "probe") {
          .Call(R_pg_session_probe, s, ss$probe(plan, at[[6L]], bt[[1L]], bt[[2L]], bt[[3L]]))
        } else {
          g <- ss$record(val, bt[[1L]], bt[[2L]], bt[[3L]])
          .Call(R_pg_session_set_static, s, val, ncol(bt[[1L]]), attr(g$step, "graph"), g$out)
        }, pyggmlr_error = function(e) {
          if (.Call(R_pg_session_static_fail, s, conditionMessage(e))) stop(e)
        })
        bt <- g <- NULL
      },
      notice = message(.Call(R_pg_session_notice, s)),  # static = NULL runs eagerly
      batch_end = {
        if (prog$on) prog$tick()
        for (cb in batch_cbs)
          cb$on_batch_end(as.integer(at[[3L]]),
                          list(epoch = as.integer(at[[1L]]), batch = as.integer(at[[2L]]) + 1L,
                               loss = at[[5L]]))
      },
      epoch_begin = {
        epoch <- as.integer(at[[1L]])
        if (!is.null(opt_params)) .apply_hyper(opt, opt_params(epoch), epoch)
        .Call(R_pg_session_set_lr, s, as.double(opt$lr))
        ag_train(model)
        prog$epoch_begin(epoch)
      },
      train_end = if (!is.null(sync)) sync$stats(plan),
      val_begin = ag_eval(model),
      val_batch = {
        bt <- .Call(R_pg_session_batch, s)
        ag_no_grad({
          out <- .fit_forward(model, bt[[1L]])
          .Call(R_pg_fit_record, plan, TRUE, L$fn(out, bt[[2L]])$data[1L, 1L], out)
        })
        out <- bt <- NULL
      },
      val_end = ag_train(model),
      epoch_end = {
        logs <- .Call(R_pg_session_logs, s)  # NaN / Inf loss: warn, and the run ends
        diverged <- attr(logs, "diverged")
        attr(logs, "diverged") <- NULL
        fit$logs[[length(fit$logs) + 1L]] <- logs
        prog$epoch_end(logs)
        stop_now <- FALSE
        for (cb in cbs) if (identical(cb$on_epoch_end(epoch, logs), FALSE)) stop_now <- TRUE
        if (!is.null(diverged))
          warning(warningCondition(diverged, class = "pyggmlr_nonfinite_loss_warning"))
        if (stop_now || isTRUE(fit$stop)) .Call(R_pg_session_stop, s)
      },
      done = break)
  }
  stopped <- at[[4L]]
  for (cb in cbs) if (is.function(cb$on_train_end)) cb$on_train_end(fit)
  h <- .make_history(fit$logs, if (stopped > 0) as.integer(stopped), fit$best_epoch, fit$metrics)
  if (!is.null(tg$levels)) attr(h, "levels") <- tg$levels  # a factor y's classes, in id order
  h
}

# the first parameter's dtype; the default one for a model without parameters (a plain function)
.model_dtype <- function(model) {
  p <- .layer_params(model)
  if (length(p)) p[[1L]]$dtype else ag_default_dtype()
}

# ag_predict (predict.R)'s work; fn: the user-facing function its errors name (ag_accuracy
# calls it too)
.predict <- function(model, x, batch_size, fn) {
  .fit_forward_fn(model, fn)  # no forward(x) or a return_state layer: refused, as Python's
  X <- .fit_cols(x, "x", fn, samples = TRUE)  # none: the core's text
  batch_size <- .arg_int(batch_size, fn, "batch_size", 1L)
  dtype <- .model_dtype(model)
  was_training <- (is.environment(model) && isTRUE(model$training))
  on.exit(if (was_training) ag_train(model), add = TRUE)
  ag_eval(model)
  outs <- list()
  # x's rows a layer refused: ag_fit's text naming it, when the rules know (walked only then)
  rows_refused <- function(e) {
    .fit_input_rows(model, nrow(X), fn, ncol(X))
    stop(e)
  }
  withCallingHandlers(pyggmlr_shape_error = rows_refused, ag_no_grad({
    for (s0 in seq(1L, ncol(X), by = batch_size)) {
      idx <- s0:min(s0 - 1 + batch_size, ncol(X))  # double: batch_size may be 2^31 - 1
      o <- .fit_forward(model, ag_tensor(X[, idx, drop = FALSE], dtype = dtype), fn)$data
      # one output column per sample: the core's rule and text, as Python's
      .Call(R_pg_predict_batch_cols, fn, nrow(o), ncol(o), length(idx), batch_size)
      if (length(outs))  # cbind would fail in R's words (Python's in numpy's): the core's text
        .Call(R_pg_predict_batch_rows, fn, nrow(outs[[1L]]), nrow(o), batch_size)
      outs[[length(outs) + 1L]] <- o
    }
  }))
  do.call(cbind, outs)
}
