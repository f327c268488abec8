# dp_train: ggmlR's synchronous data parallelism with replicas in one R process (spec 7.2), with
# two corrections: replicas are matched by identity (position in parameters(), never names) and
# every replica's gradients are cleared after each step. Gradient averaging and weight copies
# run in the C core (native/pg_api_dist.h), the same code as the Python package's dp_train.

# the one integer rule; replicas are each a whole model, bounded by the core's limit
.dp_int <- function(v, name, lo) {
  hi <- if (name %in% c("n_replicas", "n_gpu")) .pg$code$limit[["DP_MAX_REPLICAS"]] else .INT_MAX
  .arg_int(v, "dp_train", name, lo, hi)
}

.dp_every <- function(verbose) {
  if (is.null(verbose) || isFALSE(verbose)) return(0L)
  if (isTRUE(verbose)) return(1L)
  # the wrong kind an argument error, NaN or +/-Inf a bad value (as.integer(Inf) warned, then
  # failed unclassed: issue 29); past R's integers the largest: the core's rule and text
  # (pg_arg_clamp, as Python's _verbose_every)
  kind <- is.numeric(verbose) && !is.factor(verbose) && length(verbose) == 1L
  .Call(R_pg_arg_clamp, "dp_train", "verbose", if (kind) as.double(verbose) else NaN, 0, .INT_MAX,
        "TRUE/FALSE or an integer", .arg_show(verbose), !kind)
}

dp_train <- function(make_model, data, loss_fn = NULL, forward_fn = NULL, target_fn = NULL,
                     n_replicas = NULL,
                     n_iter = 10L, lr = 1e-3, max_norm = Inf, verbose = 10L, n_gpu = NULL) {
  if (!is.function(make_model))
    .arg_stop("dp_train: make_model must be a function returning a model, got ",
              class(make_model)[[1L]])  # the class, as Python's type name
  if (!is.list(data) || is.data.frame(data))
    .arg_stop(sprintf("dp_train: data must be a list of samples, got %s", class(data)[[1L]]))
  if (!length(data)) .arg_stop("dp_train: data is empty", kind = "value")
  # ggmlR's n_gpu is the number of replicas (0.8.6 spec s10.2); on the CPU they are CPU replicas
  if (!is.null(n_gpu)) {
    n_gpu <- .dp_int(n_gpu, "n_gpu", 1L)
    if (!is.null(n_replicas) && !identical(.dp_int(n_replicas, "n_replicas", 1L), n_gpu))
      .arg_stop(sprintf(paste0("dp_train: n_gpu (%d) and n_replicas (%s) both give the number of ",
                          "replicas; pass one"), n_gpu,
                   format(n_replicas)), kind = "value")
    n_replicas <- n_gpu
  }
  n_rep <- if (is.null(n_replicas)) 1L else .dp_int(n_replicas, "n_replicas", 1L)
  n_iter <- .dp_int(n_iter, "n_iter", 0L)
  every <- .dp_every(verbose)
  # the wrong kind an argument error, NaN or a negative a bad value (Python's check_real)
  if (!is.numeric(max_norm) || is.factor(max_norm) || length(max_norm) != 1L)
    .arg_stop("dp_train: max_norm must be a number, got ", .arg_show(max_norm))
  if (is.na(max_norm) || max_norm < 0)
    .arg_stop("dp_train: max_norm must be >= 0 (Inf: no clipping), got ", .arg_show(max_norm),
              kind = "value")
  fns <- list(loss_fn = loss_fn, forward_fn = forward_fn, target_fn = target_fn)
  for (nm in names(fns)) {
    f <- fns[[nm]]
    if (!is.null(f) && !is.function(f))
      .arg_stop(sprintf("dp_train: %s must be a function or NULL, got %s", nm, class(f)[[1L]]))
  }

  replicas <- lapply(seq_len(n_rep), function(i) make_model())
  plists <- lapply(seq_len(n_rep), function(r) {
    m <- replicas[[r]]
    if (is.null(forward_fn) && !((is.environment(m) || is.list(m)) && is.function(m$forward)))
      .arg_fail("argument", paste0("dp_train: make_model() must return a model with $forward ",
                                   "(replica %d is a %s); or give forward_fn"), r, class(m)[[1L]])
    if (!.is_model(m))
      .arg_fail("argument", paste0("dp_train: make_model() must return a model with $parameters() ",
                                   "(replica %d is a %s)"), r, class(m)[[1L]])
    p <- .layer_params(m)
    for (i in seq_along(p)) if (!is_ag_tensor(p[[i]]))
      .arg_fail("argument", "dp_train: parameter %d of replica %d is not an ag_tensor", i, r)
    unname(.dedup(p))
  })
  n_par <- length(plists[[1L]])
  if (n_par == 0L) .arg_stop("dp_train: the model has no parameters", kind = "value")
  for (r in seq_len(n_rep)) {
    if (length(plists[[r]]) != n_par)
      .arg_fail("value", paste0("dp_train: replica %d has %d parameters, replica 1 has %d; ",
                                "make_model() must build the same architecture"),
                r, length(plists[[r]]), n_par)
    if (r > 1L) for (t in plists[[r]]) for (q in plists[[1L]]) if (.same(t, q))
      .arg_fail("value", paste0("dp_train: replicas 1 and %d share a parameter tensor; ",
                                "make_model() must return a new model each call"), r)
  }
  handles <- lapply(plists, function(l) lapply(l, function(t) t$.ptr))
  flat <- unlist(handles, recursive = FALSE)
  sync <- function() for (r in seq_len(n_rep)[-1L]) .Call(R_pg_dist_copy, handles[[r]],
                                                          handles[[1L]])

  sync()
  opt <- optimizer_adam(plists[[1L]], lr = lr)
  history <- numeric(n_iter)
  nd <- length(data)
  on.exit(ag_tape_clear(), add = TRUE)
  for (it in seq_len(n_iter)) {
    base <- ((it - 1L) * n_rep) %% nd
    grads <- vector("list", n_rep)
    losses <- numeric(n_rep)
    for (i in seq_len(n_rep)) {
      model <- replicas[[i]]
      s <- data[[(base + i - 1L) %% nd + 1L]]
      with_grad_tape({
        out <- if (!is.null(forward_fn)) forward_fn(model, s)
               else model$forward(if (is_ag_tensor(s)) s else ag_tensor(s))
        loss <- if (!is.null(loss_fn)) loss_fn(out, if (!is.null(target_fn)) target_fn(s) else s)
                else out
      })
      if (!is_ag_tensor(loss))
        .arg_stop("dp_train: the loss must be an ag_tensor, got ", class(loss)[[1L]])
      grads[[i]] <- backward(loss)
      losses[i] <- loss$data[1L, 1L]
      rm(out, loss)
    }
    .Call(R_pg_dist_average, flat, n_par, lapply(grads, function(g) g$.map))
    ok <- !is.nan(losses) & !is.na(losses)
    history[it] <- if (any(ok)) mean(losses[ok]) else NaN
    if (is.finite(max_norm)) clip_grad_norm(plists[[1L]], grads[[1L]], max_norm)
    opt$step(grads[[1L]])
    rm(grads)
    .Call(R_pg_dist_zero_grad, flat)  # every replica, not only the first
    ag_tape_clear()
    sync()
    if (every > 0L && (it == 1L || it %% every == 0L))
      cat(sprintf("[dp_train] iter %4d / %d  loss = %.6f\n", it, n_iter, history[it]))
  }
  model0 <- replicas[[1L]]
  list(params = .layer_params(model0), loss_history = history, model = model0)
}
