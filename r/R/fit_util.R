# ag_fit's helpers: data and targets, losses, snapshots, the optimizer set-up
# and the compiled steps (fit.R runs the loop).

# an argument of the wrong kind (a pg_fit_kind name): the core's text (pg_fit_kind_fail)
.fit_kind_fail <- function(what, shown, epoch = 0) .Call(R_pg_fit_kind_fail, what, shown, epoch)

# the model's forward function (a model with forward(x), or a function), or a classed error
.fit_forward_fn <- function(model, fn = "ag_fit") {
  if ((is.environment(model) || is.list(model)) && isTRUE(model$return_state))  # core's text
    .Call(R_pg_fit_return_state, fn, paste(model$name))
  if ((is.environment(model) || is.list(model)) && is.function(model$forward)) return(model$forward)
  if (is.function(model)) return(model)
  .Call(R_pg_fit_model_fail, fn, FALSE, class(model)[[1L]])  # the core's text, as Python's
}

.fit_forward <- function(model, x, fn = "ag_fit") .fit_out(.fit_forward_fn(model, fn)(x), fn)

# a number from forward() would reach the loss as a constant (R's losses take numbers)
.fit_out <- function(out, fn = "ag_fit") {
  if (!is_ag_tensor(out))
    .arg_fail("argument", "%s: model forward returned a %s, not a tensor", fn, class(out)[[1L]])
  out
}

# x, y as [features, n] double matrices (samples are columns). A data.frame has one row per
# sample and is transposed; a vector is one row.
.fit_cols <- function(v, name, fn = "ag_fit", samples = FALSE) {
  if (is_ag_tensor(v)) v <- v$data
  # a tampered dim must not reach R's `[` (it trusts dim); named after the public caller
  # (an internal caller such as .fit_targets is not named: fn, ag_fit by default, is)
  if (sys.nframe() > 1L) {  # (no tryCatch: it was a quarter of this function's time)
    caller <- sys.call(-1L)[[1L]]
    if (is.name(caller) && startsWith(as.character(caller), "ag_")) fn <- as.character(caller)
  }
  .check_dims(v, fn, name)
  if (is.data.frame(v)) {
    ok <- vapply(v, function(col) is.numeric(col) || is.logical(col), logical(1))
    if (!all(ok)) .arg_fail("argument", "%s: %s: data.frame column '%s' is not numeric", fn,
                            name, names(v)[!ok][1L])
    v <- t(as.matrix(v))
  }
  # the kind before the shape, as Python's (NULL: a wrong kind, not "no samples")
  if (!is.numeric(v) && !is.logical(v))
    .arg_fail("argument", "%s: %s must be numeric, got %s", fn, name, class(v)[[1L]])
  # the [features, n] rule and its text (a vector: one row) are the core's (pg_fit_cols)
  .Call(R_pg_fit_cols, fn, name, v, samples)
  if (length(dim(v)) != 2L) v <- matrix(v, nrow = 1L)
  # touched only when needed: either would copy the whole data set (pages faulted in every run)
  if (!is.double(v)) storage.mode(v) <- "double"
  if (!is.null(dimnames(v))) dimnames(v) <- NULL
  v
}

# y as [rows, n] doubles (a factor: 0-based ids, its levels kept), checked by the core
# (pg_fit_targets): the samples against x's, arg-max ids against the model's outputs (read from
# its layer configs; 1-based ids get R's hint) and a factor's levels
.fit_targets <- function(y, loss, X, classify, model, code = NULL, metrics = integer(),
                         yv = NULL) {
  if (is.null(y)) {  # x's rows against the layers all the same
    .fit_input_rows(model, nrow(X), cols = ncol(X))
    return(list(Y = NULL))
  }
  lev <- if (is.factor(y)) levels(y)
  if (is.factor(y)) {  # levels in order -> 0-based class ids; missing labels, then the loss
    y <- as.integer(y) - 1L
    .Call(R_pg_fit_labels_check, loss, length(lev), y)  # the core's rules and texts
  }
  Y <- .fit_cols(y, "y")
  # the samples first (a row-major x gets its hint, not a layer's refusal), then x's rows
  # against the layers, whose outputs k the classes and y's rows are checked against
  .Call(R_pg_fit_targets, dim(X), Y, 0L, NULL, NULL)
  k <- .fit_input_rows(model, nrow(X), cols = ncol(X))
  # and the classes for class_weight's check (the outputs when known, else the levels')
  nclass <- .Call(R_pg_fit_targets, dim(X), Y, classify, if (classify == 1L) k,
                  if (!is.null(lev)) length(lev))
  # y's rows, the metrics and validation_data's class ids against the outputs for a built-in
  # loss (code; NULL: a function), before training
  ids <- classify == 1L && !is.null(yv) && nrow(yv) == 1L
  .Call(R_pg_fit_outputs_check, if (is.null(code)) -1L else code, as.integer(metrics), nrow(Y),
        if (ids) as.double(yv) else double(), k)
  list(Y = Y, levels = lev, classes = nclass)
}

# x's rows against the model's built-in layers, before training: the first layer whose forward
# would refuse the rows it gets is a classed shape error now, not in the first batch's forward
# after batch norm and dropout have run (the core's rule and text, pg_layer_shape_check, as
# Python's _input_rows). The checks stop at the first layer that is not built-in (a custom
# layer, a sequential with its own forward); cols: x's samples, for the row-major hint. The
# model's output rows per sample (NA: unknown).
.fit_input_rows <- function(model, rows, fn = "ag_fit", cols = -1) {
  w <- new.env(parent = emptyenv())
  w$i <- 0L
  w$checked <- TRUE
  visit <- function(l, st) {
    if (inherits(l, "ag_sequential") && is.function(l$forward) &&
        identical(body(l$forward), .SEQ_FORWARD)) {
      for (s in l$layers) st <- visit(s, st)
      return(st)
    }
    w$i <- w$i + 1L
    cfg <- tryCatch(if (is.function(l[["to_config"]])) .cfg_json(l[["to_config"]]()),
                    error = function(e) NULL)
    w$checked <- w$checked && !is.null(cfg) && !inherits(l, "ag_sequential") && .builtin_model(l)
    .Call(R_pg_layer_shape, cfg, st, if (w$checked) list(fn, w$i, rows, cols))
  }
  r <- visit(model, c(as.double(rows), -1, -1, -1))[[1L]]
  if (r < 0) NA_integer_ else as.integer(r)
}

# (fn, name): a function as given, else the core's loss of that name (native/fit_loss.c)
.fit_loss <- function(loss) {
  if (is.function(loss)) return(list(fn = loss, name = "callable"))
  if (!is.character(loss) || length(loss) != 1L || is.na(loss))
    .fit_kind_fail("LOSS", .arg_show(loss))
  code <- .Call(R_pg_fit_loss_parse, loss)
  list(fn = function(out, y = NULL, w = NULL) {  # w: the batch's weight row (sample weights)
    if (is.null(w)) .Call(R_pg_fit_loss, code, out, y)
    else .Call(R_pg_fit_loss_weighted, code, out, y, w)
  }, name = loss, code = code)
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

# opt_params(epoch)'s list set on opt by the core (pg_fit_opt_params: ggmlR's aliases, the
# optimizer's names, the values and their ranges; all or nothing)
.apply_hyper <- function(opt, hp, epoch) {
  if (is.null(hp)) return(invisible())
  if (!is.list(hp) || (length(hp) && is.null(names(hp))))
    .fit_kind_fail("OPT_PARAMS", class(hp)[[1L]], epoch)
  vals <- lapply(hp, function(v) if (is.null(v)) list(NULL, "NULL") else .st_val(v, show = TRUE))
  .Call(R_pg_fit_opt_params, opt$.h, enc2utf8(names(hp)), vals, as.double(epoch))
  invisible()
}

.make_fit_optimizer <- function(optimizer, params, lr) {
  if (.is_optimizer(optimizer)) {  # another model's optimizer: refused before training (the core)
    .Call(R_pg_fit_optim_check, optimizer$.h, lapply(params, function(p) p$.ptr))
    return(optimizer)
  }
  # the core's names and text (pg_fit_optim_parse)
  name <- if (is.character(optimizer) && length(optimizer) == 1L && !is.na(optimizer)) optimizer
  kind <- .Call(R_pg_fit_optim_parse, name, if (is.null(name)) .arg_show(optimizer) else "")
  if (kind == .pg$code$optim[["ADAM"]]) optimizer_adam(params, lr = lr)
  else optimizer_sgd(params, lr = lr)
}

# ---------------------------------------------------------------------------------------------
# static (compiled) steps

# TRUE when every layer is a built-in one (the core's layer table, .BUILDERS: their forwards run
# wholly in ops a compiled graph replays), so ag_fit compiles its step by default (ag_embedding
# reads its ids from the batch tensor in the core, so a replay refills them).
.builtin_model <- function(model) {
  if (is.environment(model)) {
    if (inherits(model, "ag_sequential"))
      return(length(model$layers) > 0L && all(vapply(model$layers, .builtin_model, logical(1))))
    return(inherits(model, .BUILDERS))  # ag_linear is a list (below)
  }
  # ag_linear is a (classed) list
  is.list(model) && (!is.object(model) || inherits(model, "ag_linear")) && identical(names(model),
      c("W", "b", "forward", "params", "to_config")) &&
    is_ag_tensor(model$W) && is.function(model$to_config) && identical(model$to_config()$type,
        "linear")
}

# ag_fit's compiled graphs: one "opt" graph for the training batches (all of batch_size columns)
# recorded in training mode at the first batch, and "forward" graphs for validation recorded in
# eval mode, one per batch width (the full one and the last partial batch). Recording leaves the
# model as it was: no optimizer step, no random draws (ag_compile restores R's stream) and the
# buffers (batch-norm running statistics) put back, so the run equals the eager one bit for bit.
.static_steps <- function(model, lossfn, opt, has_y) {
  s <- new.env(parent = emptyenv())
  s$fn <- function(holder, weighted) function(x, ...) {  # (x, y), (x, y, w), (x, w)
    yw <- list(...)
    out <- .fit_forward(model, x)
    holder$out <- out
    y <- if (has_y) yw[[1L]]
    if (!weighted) lossfn(out, y) else lossfn(out, y, yw[[length(yw)]])
  }
  s$ins <- function(xv, yv, wv) {  # the plan's batch tensors: each gather refills the inputs
    ins <- list(xv)
    if (has_y) ins[[2L]] <- yv
    if (!is.null(wv)) ins[[length(ins) + 1L]] <- wv  # the weight row: pg_fit_run_static's input
    ins
  }
  s$bufs <- function() lapply(.layer_buffers(model), function(t) t$data)
  s$put_back <- function(bufs) {
    if (!length(bufs)) return(invisible())  # nothing saved: nothing to put back (no walk)
    b <- .layer_buffers(model)
    for (k in names(b)) if (!is.null(bufs[[k]])) b[[k]]$data <- bufs[[k]]
  }
  s$compile <- function(build, ins, fn) {  # ag_compile, the buffers put back afterwards
    bufs <- s$bufs()
    on.exit(s$put_back(bufs))
    do.call(ag_compile, c(list(fn), ins, list(build = build, optimizer = if (build == "opt") opt)))
  }
  # the step for a batch's width, recorded on the plan's batch tensors (training: build "opt" in
  # training mode; validation: "forward" in eval mode): list(step, out) for the session
  s$record <- function(val, xv, yv, wv = NULL) {
    holder <- new.env(parent = emptyenv())
    rec <- function() s$compile(if (val) "forward" else "opt", s$ins(xv, yv, wv),
                                s$fn(holder, !is.null(wv)))
    step <- if (val) ag_no_grad(rec()) else rec()
    list(step = step, out = holder$out)
  }
  # static = NULL's probe (the session's PROBE, Python's _StaticSteps.probe): a forward graph
  # recorded on the training batch the tensors hold, then c(eager, replay): the losses the eager
  # forward and that graph's replay give on training batch `other`, for the session's verdict.
  # The buffers and the random stream end as they were.
  s$probe <- function(plan, other, xv, yv, wv) {
    ins <- s$ins(xv, yv, wv)
    fn <- s$fn(new.env(parent = emptyenv()), !is.null(wv))
    fwd <- s$compile("forward", ins, fn)
    .Call(R_pg_fit_batch, plan, FALSE, other)  # refills the same tensors (and the weight row)
    bufs <- s$bufs()
    seed <- .rng_save()
    back <- function() {
      s$put_back(bufs)
      .rng_restore(seed)
    }
    on.exit(back())
    with_grad_tape(eager <- do.call(fn, ins)$data[1L, 1L])
    back()
    r <- do.call(fwd, ins)
    c(eager, (if (is_ag_tensor(r)) r$data else r)[1L, 1L])
  }
  s
}
