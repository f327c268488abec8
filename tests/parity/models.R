# The R halves of the training-loop, ag_fit, dp_train, model-file and ag_gradcheck cases
# (tests/parity/cases_models.py calls each with the inputs drawn in Python). Uses helpers.R.
# Alone: Rscript tests/parity/models.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# a hand-written training loop: adamw, a step schedule, clipping; one record per step
parity_script_mlp <- function(dtype, steps, x, y, W1_0, b1_0, W2_0, b2_0) {
  with_dtype(dtype, function() {
    p <- list(W1 = ag_param(W1_0), b1 = ag_param(b1_0), W2 = ag_param(W2_0), b2 = ag_param(b2_0))
    opt <- optimizer_adam(p, lr = 0.01, weight_decay = 0.05)
    sched <- lr_scheduler_step(opt, step_size = 2, gamma = 0.5)
    out <- list()
    for (s in seq_len(steps)) {
      loss <- with_grad_tape({
        h <- ag_tanh(ag_add(ag_matmul(p$W1, x), p$b1))
        ag_mse_loss(ag_add(ag_matmul(p$W2, h), p$b2), y)
      })
      g <- backward(loss)
      rec <- list(loss = loss$data)
      for (nm in names(p)) rec[[paste("grad", nm)]] <- get0(as.character(p[[nm]]$id), envir = g)
      rec$norm <- clip_grad_norm(unname(p), g, 0.5)
      opt$step(g)
      opt$zero_grad()
      rec$lr <- sched$step()
      for (nm in names(p)) rec[[nm]] <- p[[nm]]$data
      out[[s]] <- rec
    }
    out
  })
}

# ag_fit from given weights (shuffle off): history, per-epoch weights, per-batch losses
parity_fit <- function(dtype, arch, init, binit, x, y, opt_kind, lr, wd, schedule, loss, nepoch,
                       batch_size, nbatch_logical, val_split, hist_keys) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    opt <- switch(opt_kind,
                  sgd = "sgd",
                  adamw = optimizer_adam(m$parameters(), lr = lr, weight_decay = wd),
                  adamw_str = "adamw")
    sched <- if (schedule) function(epoch) list(lr = lr / epoch) else NULL
    fit_records(m, x, y, hist_keys, loss = loss, optimizer = opt, opt_params = sched,
                nepoch = nepoch, batch_size = batch_size, nbatch_logical = nbatch_logical,
                val_split = val_split, lr = lr)
  })
}

# ag_fit(m, x, y, ...) recording every epoch's weights and every batch's (epoch, loss); then
# ag_predict's outputs and the buffers
fit_records <- function(m, x, y, hist_keys, ..., more_callbacks = list()) {
  rec <- new.env()
  rec$w <- list()
  rec$b <- list()
  cb <- list(on_epoch_end = function(epoch, logs) {
    rec$w[[epoch]] <- values_of(m$parameters())
    NULL
  }, on_batch_end = function(step, logs) rec$b[[step]] <- c(logs$epoch, logs$loss))
  h <- ag_fit(m, x, y, ..., shuffle = FALSE, callbacks = c(list(cb), more_callbacks),
              silent = TRUE)
  ep <- function(v) if (is.null(v)) 0 else as.double(v)
  list(h = unclass(h)[hist_keys], se = c(ep(h$stopped_epoch), ep(h$best_epoch)), w = rec$w,
       b = do.call(rbind, rec$b),
       pred = ag_predict(m, x), buffers = values_of(m$buffers()))
}

# dp_train, 2 replicas; `replicas` names the argument that says so (n_replicas or n_gpu)
parity_dp_train <- function(dtype, arch, init, binit, x, y, n_samples, per, n_iter, lr, max_norm,
                            replicas = "n_replicas") {
  with_dtype(dtype, function() {
    make <- function() build_arch(arch, init, binit)
    data <- lapply(seq_len(n_samples), function(j) {
      cols <- ((j - 1L) * per + 1L):(j * per)
      list(x = x[, cols, drop = FALSE], y = y[, cols, drop = FALSE])
    })
    args <- list(make, data, loss_fn = ag_mse_loss,
                 forward_fn = function(m, s) m$forward(ag_tensor(s$x)),
                 target_fn = function(s) s$y, n_iter = n_iter, lr = lr, max_norm = max_norm,
                 verbose = FALSE)
    args[[replicas]] <- 2L
    res <- do.call(dp_train, args)
    list(loss_history = res$loss_history, params = values_of(res$params),
         buffers = values_of(res$model$buffers()))
  })
}

# n_train Adam steps of mse on (x, y), with a new optimizer unless one is given
adam_steps <- function(m, x, y, n, opt = NULL) {
  if (is.null(opt)) opt <- optimizer_adam(m$parameters(), lr = 0.01, weight_decay = 0.05)
  for (s in seq_len(n)) {
    loss <- with_grad_tape(ag_mse_loss(m$forward(ag_tensor(x)), y))
    opt$step(backward(loss))
    opt$zero_grad()
  }
  opt
}

# a model file written by R: the model trained n_train steps, with the optimizer's state
parity_io_save <- function(dtype, arch, init, binit, x, y, n_train, path) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    opt <- if (n_train > 0L) adam_steps(m, x, y, n_train) else NULL
    ag_save_model(m, path, optimizer = opt, epoch = n_train)
    TRUE
  })
}

# a model file read by R: its values and outputs, then n_more steps resumed from its state
parity_io_load <- function(dtype, x, y_target, n_more, path) {
  with_dtype(dtype, function() {
    m <- ag_load_model(path)
    out <- list(loaded = values_of(m$parameters()), loaded_buffers = values_of(m$buffers()),
                dtype = m$parameters()[[1L]]$dtype, y = ag_predict(m, x),
                epoch = ag_model_info(path)$epoch)
    if (n_more > 0L) {
      opt <- optimizer_adam(m$parameters(), lr = 0.01, weight_decay = 0.05)
      ag_load_model(path, model = m, optimizer = opt)
      out$t <- opt$t
      ag_train(m)
      adam_steps(m, x, y_target, n_more, opt)
      out$trained <- values_of(m$parameters())
      out$trained_buffers <- values_of(m$buffers())
      out$y_after <- ag_predict(m, x)
    }
    out
  })
}

# ag_gradcheck's report (as printed), verdict and the inputs afterwards; q's gradient is wrong
parity_gradcheck <- function(dtype, p0, q0, c0, w) {
  with_dtype(dtype, function() {
    p <- ag_param(p0)
    q <- ag_param(q0)
    cst <- ag_tensor(c0)
    fn <- function(i) {
      ag_add(ag_sum(ag_mul(ag_tanh(ag_matmul(i$p, i$c)), w)),
             ag_sum(ag_mul(i$q, ag_no_grad(ag_scale(i$q, 1)))))
    }
    out <- capture.output(
      ok <- ag_gradcheck(fn, list(p = p, q = q, c = cst), eps = 1e-3, atol = 1e-3)
    )
    list(ok = ok, out = out, p = p$data, q = q$data,
         grads_unset = c(is.null(p$grad), is.null(q$grad)))
  })
}

# ag_fit with ag_early_stopping(es) and ag_model_checkpoint(ckpt) (named lists of their
# arguments, or NULL); refit: the same callback objects train a second model from the same values,
# whose records are returned, with the files the checkpoint saved
parity_fit_es <- function(dtype, arch, init, binit, x, y, es, ckpt, refit, nepoch, batch_size,
                          val_split, lr, hist_keys) {
  with_dtype(dtype, function() {
    cbs <- if (is.null(es)) list() else list(do.call(ag_early_stopping, es))
    d <- tempfile()
    dir.create(d)
    on.exit(unlink(d, recursive = TRUE))
    if (!is.null(ckpt))
      cbs <- c(cbs, list(do.call(ag_model_checkpoint,
                                 c(list(file.path(d, "e{epoch}.safetensors")), ckpt))))
    for (i in seq_len(if (refit) 2L else 1L))
      out <- fit_records(build_arch(arch, init, binit), x, y, hist_keys, nepoch = nepoch,
                         batch_size = batch_size, val_split = val_split, lr = lr,
                         more_callbacks = cbs)
    if (!is.null(ckpt)) out$saved <- cbs[[length(cbs)]]$saved
    out
  })
}

# ag_save_model's check that the config loads back (native/modelfile_check.c): a linear layer
# whose config says out_features = out, with extra buffers bufs (a named list of matrices);
# list(class, message) of the refusal
parity_save_config_refusal <- function(dtype, out, bufs) {
  with_dtype(dtype, function() {
    lin <- ag_linear(2L, 3L)
    b <- lapply(bufs, ag_tensor)
    m <- list(parameters = lin$params, buffers = function() b,
              to_config = function() list(type = "linear", in_features = 2L, out_features = out))
    e <- tryCatch({
      ag_save_model(m, tempfile(fileext = ".st"))
      NULL
    }, error = function(e) e)
    if (is.null(e)) return(list(cls = "", msg = ""))
    list(cls = class(e)[[1L]], msg = conditionMessage(e))
  })
}
