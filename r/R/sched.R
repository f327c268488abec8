# Learning-rate schedulers (ggmlR 0.8.6). The formulas and the value checks are the C core's
# (sched.c, shared with Python); a scheduler keeps the core's `par` and `st` vectors and shows them
# as ggmlR's named fields, refreshed after every step.


# ggmlR's fields per kind, read from par / st (layouts in native/pg_api_sched.h)
.SCHED_SYNC <- list(
  step = function(e) e$last_epoch <- as.integer(e$st[[1L]]),
  cosine = function(e) {
    e$last_epoch <- as.integer(e$st[[1L]])
    e$T_cur <- as.integer(e$st[[2L]])
    e$cycle_pos <- as.integer(e$st[[3L]])
  },
  cyclic = function(e) e$last_step <- as.integer(e$st[[1L]]),
  onecycle = function(e) e$last_step <- as.integer(e$st[[1L]]),
  warmup_cosine = function(e) e$last_step <- as.integer(e$st[[1L]]),
  warmup = function(e) e$last_epoch <- as.integer(e$st[[1L]]))

.sched_num <- function(x) if ((is.numeric(x) || is.logical(x)) &&
                              length(x) == 1L) as.numeric(x) else NA_real_

# arguments ggmlR does not check (they would fail later, inside a step): checked here, up front
.sched_need_num <- function(x, name, call) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x))  # classed as Python's (PyggmlrValueError)
    .pg_stop("value", sprintf("%s must be a single number, got %s", name, .arg_show(x)), call)
  x
}

# each argument's kind before the core's values, in Python's order (check_number: NA passes, the
# core checks it): "a" or TRUE was NA and named by its range text (issue 29)
.sched_kinds <- function(call, ...) {
  args <- list(...)
  for (nm in names(args)) {
    x <- args[[nm]]
    if (!is.numeric(x) || is.factor(x) || length(x) != 1L)
      .pg_stop("value", sprintf("%s must be a single number, got %s", nm, .arg_show(x)), call)
  }
}

# pg_sched_init: checks par and fills the derived entries; its error is raised with the call of
# the constructor, as ggmlR's stop() is
.sched_init <- function(kind, par, optimizer, call) {
  # a tensor is an environment too, but without lr (issue 19: it was taken as an optimizer)
  if (!is.environment(optimizer) || is_ag_tensor(optimizer) ||
      is.null(get0("lr", envir = optimizer, inherits = FALSE)))
    .pg_stop("argument", sprintf(paste0("optimizer must be an optimizer (optimizer_sgd() or ",
                                        "optimizer_adam()), got %s"),  # Python's words too
                                 if (is_ag_tensor(optimizer)) "an ag_tensor"
                                 else class(optimizer)[[1L]]), call)
  par <- c(par, rep(0, .pg$code$sched[["NPAR"]] - length(par)))
  r <- tryCatch(.Call(R_pg_sched_init, .pg$code$sched[[toupper(kind)]], par, optimizer$lr),
                error = function(e) e)
  # the core's classed condition, with the call
  if (inherits(r, "error")) { r$call <- call; stop(r) }
  r
}

.sched_make <- function(kind, cls, optimizer, r, fields) {
  e <- new.env(parent = emptyenv())
  e$optimizer <- optimizer
  for (nm in names(fields)) assign(nm, fields[[nm]], envir = e)
  e$par <- r[[1L]]
  e$st <- r[[2L]]
  sync <- .SCHED_SYNC[[kind]]
  k <- .pg$code$sched[[toupper(kind)]]
  # the momentum (SGD) or beta1 (Adam) a one-cycle schedule drives; NULL: none
  set_mom <- function(m) {
    f <- get0("mom_field", envir = e, inherits = FALSE)
    if (!is.null(f) && !is.nan(m)) e$optimizer[[f]] <- m
  }
  if (!is.nan(r[[3L]])) optimizer$lr <- r[[3L]]
  set_mom(r[[4L]])
  sync(e)
  e$step <- function() {
    out <- .Call(R_pg_sched_step, k, e$par, e$st, e$optimizer$lr)
    e$st <- out[3:5]
    # NaN: the schedule leaves the rate (warmup's hand-over)
    if (!is.nan(out[[1L]])) e$optimizer$lr <- out[[1L]]
    set_mom(out[[2L]])
    sync(e)
    invisible(out[[1L]])
  }
  e$get_lr <- function() e$optimizer$lr
  class(e) <- cls
  e
}

lr_scheduler_step <- function(optimizer, step_size, gamma = 0.1) {
  call <- sys.call()
  .sched_kinds(call, gamma = gamma, step_size = step_size)
  # the counts: as.integer's truncation and NA in the core (pg_sched_init), once for both
  r <- .sched_init("step", c(step_size, .sched_num(gamma)), optimizer, call)
  .sched_need_num(gamma, "gamma", call)
  .sched_make("step", "lr_scheduler_step", optimizer, r,
              list(step_size = as.integer(r[[1L]][[1L]]), gamma = gamma))
}

print.lr_scheduler_step <- function(x, ...) {
  cat(sprintf("lr_scheduler_step | step_size=%d | gamma=%.4f | epoch=%d | lr=%.6f\n",
              x$step_size, x$gamma, x$last_epoch, x$optimizer$lr))
  invisible(x)
}

# nolint start: object_name_linter. (T_max, T_mult: ggmlR's argument names)
lr_scheduler_cosine <- function(optimizer, T_max, lr_min = 0, restart = FALSE, T_mult = 1) {
  call <- sys.call()
  .sched_kinds(call, lr_min = lr_min)
  restart <- .arg_flag(restart, "lr_scheduler_cosine", "restart")
  .sched_kinds(call, T_max = T_max)  # T_mult: ggmlR's text says its kind (the core's)
  r <- .sched_init("cosine", c(T_max, .sched_num(lr_min), restart, .sched_num(T_mult)),
                   optimizer, call)
  T_max <- as.integer(r[[1L]][[1L]])
  # nolint end
  .sched_need_num(lr_min, "lr_min", call)
  .sched_make("cosine", "lr_scheduler_cosine", optimizer, r,
              list(T_max = T_max, lr_min = lr_min, lr_max = r[[1L]][[5L]], restart = restart,
                   T_mult = T_mult))
}

print.lr_scheduler_cosine <- function(x, ...) {
  cat(sprintf("lr_scheduler_cosine | T_max=%d | lr_max=%.6f | lr_min=%.6f | epoch=%d | lr=%.6f\n",
              x$T_max, x$lr_max, x$lr_min, x$last_epoch, x$optimizer$lr))
  invisible(x)
}

lr_scheduler_cyclic <- function(optimizer, base_lr, max_lr, step_size_up = 2000L,
                                step_size_down = NULL,
                                mode = c("triangular", "triangular2", "exp_range"), gamma = 1) {
  call <- sys.call()
  mode <- .arg_match(mode, c("triangular", "triangular2", "exp_range"), "lr_scheduler_cyclic",
                     "mode")
  .sched_kinds(call, step_size_up = step_size_up)
  if (!is.null(step_size_down)) .sched_kinds(call, step_size_down = step_size_down)
  .sched_kinds(call, base_lr = base_lr, max_lr = max_lr, gamma = gamma)
  if (is.null(step_size_down)) step_size_down <- step_size_up
  par <- c(.sched_num(base_lr), .sched_num(max_lr), step_size_up, step_size_down,
           match(mode, c("triangular", "triangular2", "exp_range")) - 1L, .sched_num(gamma))
  r <- .sched_init("cyclic", par, optimizer, call)
  .sched_need_num(gamma, "gamma", call)
  .sched_make("cyclic", "lr_scheduler_cyclic", optimizer, r,
              list(base_lr = base_lr, max_lr = max_lr, step_size_up = as.integer(r[[1L]][[3L]]),
                   step_size_down = as.integer(r[[1L]][[4L]]), mode = mode, gamma = gamma))
}

print.lr_scheduler_cyclic <- function(x, ...) {
  cat(sprintf("lr_scheduler_cyclic | mode=%s | base_lr=%.6f | max_lr=%.6f | step=%d | lr=%.6f\n",
              x$mode, x$base_lr, x$max_lr, x$last_step, x$optimizer$lr))
  invisible(x)
}

lr_scheduler_onecycle <- function(optimizer, max_lr, total_steps, pct_start = 0.3, div_factor = 25,
                                  final_div_factor = 1e4, anneal_strategy = c("cos", "linear"),
                                  cycle_momentum = TRUE, base_momentum = 0.85,
                                  max_momentum = 0.95) {
  call <- sys.call()
  anneal_strategy <- .arg_match(anneal_strategy, c("cos", "linear"), "lr_scheduler_onecycle",
                                "anneal_strategy")
  cycle_momentum <- .arg_flag(cycle_momentum, "lr_scheduler_onecycle", "cycle_momentum")
  .sched_kinds(call, max_lr = max_lr, base_momentum = base_momentum, max_momentum = max_momentum,
               total_steps = total_steps, pct_start = pct_start, div_factor = div_factor,
               final_div_factor = final_div_factor)
  par <- c(.sched_num(max_lr), total_steps, .sched_num(pct_start), .sched_num(div_factor),
           .sched_num(final_div_factor), anneal_strategy == "linear", .sched_num(base_momentum),
           .sched_num(max_momentum))
  r <- .sched_init("onecycle", par, optimizer, call)
  for (nm in c("max_lr", "div_factor", "final_div_factor", "base_momentum", "max_momentum"))
    .sched_need_num(get(nm), nm, call)
  mom_field <- if (!cycle_momentum) NULL
               else if (inherits(optimizer, "ag_optimizer_sgd")) "momentum"
               else if (inherits(optimizer, "ag_optimizer_adam")) "beta1"
  p <- r[[1L]]
  .sched_make("onecycle", "lr_scheduler_onecycle", optimizer, r,
              list(max_lr = max_lr, total_steps = as.integer(p[[2L]]), initial_lr = p[[3L]],
                   final_lr = p[[4L]],
                   anneal_strategy = anneal_strategy, step_up = as.integer(p[[5L]]),
                   mom_field = mom_field,
                   base_momentum = base_momentum, max_momentum = max_momentum))
}

print.lr_scheduler_onecycle <- function(x, ...) {
  cat(sprintf("lr_scheduler_onecycle | max_lr=%.6f | total_steps=%d | step=%d | lr=%.6f\n",
              x$max_lr, x$total_steps, x$last_step, x$optimizer$lr))
  invisible(x)
}

lr_scheduler_warmup_cosine <- function(optimizer, warmup_steps, total_steps, lr_min = 0,
                                       warmup_start_lr = 0) {
  call <- sys.call()
  .sched_kinds(call, lr_min = lr_min, warmup_start_lr = warmup_start_lr,
               warmup_steps = warmup_steps, total_steps = total_steps)
  r <- .sched_init("warmup_cosine",
                   c(warmup_steps, total_steps, 0, .sched_num(lr_min), .sched_num(warmup_start_lr)),
                   optimizer, call)
  .sched_need_num(lr_min, "lr_min", call)
  .sched_need_num(warmup_start_lr, "warmup_start_lr", call)
  .sched_make("warmup_cosine", "lr_scheduler_warmup_cosine", optimizer, r,
              list(warmup_steps = as.integer(r[[1L]][[1L]]),
                   total_steps = as.integer(r[[1L]][[2L]]), lr_max = r[[1L]][[3L]],
                   lr_min = lr_min, warmup_start_lr = warmup_start_lr))
}

print.lr_scheduler_warmup_cosine <- function(x, ...) {
  cat(sprintf(paste0("lr_scheduler_warmup_cosine | warmup=%d | total=%d | lr_max=%.6f | step=%d ",
                     "| lr=%.6f\n"),
              x$warmup_steps, x$total_steps, x$lr_max, x$last_step, x$optimizer$lr))
  invisible(x)
}

# Linear warmup over warmup_steps calls from base_lr * start_factor to base_lr (the optimizer's lr,
# or `after`'s lr_max when it is a cosine schedule), then `after` steps (if given); the same
# formula as Python's, in the core.
lr_scheduler_warmup <- function(optimizer, warmup_steps, after = NULL, start_factor = 0) {
  call <- sys.call()
  .sched_kinds(call, start_factor = start_factor, warmup_steps = warmup_steps)
  base <- if (inherits(after, "lr_scheduler_cosine")) after$lr_max
          else if (is.environment(optimizer)) optimizer$lr else NA
  r <- .sched_init("warmup", c(warmup_steps, .sched_num(base), .sched_num(start_factor)), optimizer,
                   call)
  .sched_need_num(start_factor, "start_factor", call)
  e <- .sched_make("warmup", "lr_scheduler_warmup", optimizer, r,
                   list(warmup_steps = as.integer(r[[1L]][[1L]]), after = after,
                        start_factor = start_factor, base_lr = base))
  warm <- e$step
  e$step <- function() {
    warm()
    if (e$last_epoch > e$warmup_steps && !is.null(e$after)) e$after$step()
    invisible(e$optimizer$lr)
  }
  e
}

print.lr_scheduler_warmup <- function(x, ...) {
  cat(sprintf("lr_scheduler_warmup | warmup_steps=%d | epoch=%d | lr=%.6f\n", x$warmup_steps,
              x$last_epoch, x$optimizer$lr))
  invisible(x)
}
