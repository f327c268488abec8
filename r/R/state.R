# ggmlR 0.8.6's model-state API (0.8.6 spec s9): in-memory state dicts, ggmlR's ag_save_model /
# ag_load_model arguments over this package's safetensors files (io.R), the import of a ggmlR
# RDS container, and the internals ggmlR's examples reach with `:::`. The state dict's and the
# container's rules and writes are the C core's (native/state_dict.c, shared with Python).

# `[[` rather than `$`: a list's `$` matches partially (a field "params_x" would answer $params)
.fn_field <- function(x, nm) {
  if (is_ag_tensor(x) || !(is.environment(x) || is.list(x))) return(NULL)
  f <- x[[nm]]
  if (is.function(f)) f else NULL
}

# parameters() first, else params() (a bare ag_linear, list(params = function() ...))
.state_params <- function(model, caller) {
  f <- .fn_field(model, "parameters")
  if (is.null(f)) f <- .fn_field(model, "params")
  # the refusals' texts are the core's (pg_state_dict_model_fail), Python's too
  if (is.null(f)) .Call(R_pg_state_dict_model_fail, caller, 0L, NULL, "")
  p <- f()
  if (is.null(p)) p <- list()
  if (!is.list(p)) .Call(R_pg_state_dict_model_fail, caller, -1L, NULL, class(p)[[1L]])
  for (i in seq_along(p)) if (!is_ag_tensor(p[[i]]))
    .Call(R_pg_state_dict_model_fail, caller, i, names(p)[i], class(p[[i]])[[1L]])
  p
}

# the test for a sub-layer (so the fields of a lone ag_linear are not descended): an environment
# or a list with forward(), parameters() or params(), Python's rule (an ag_layer has forward)
.is_layer_like <- function(x) {
  (is.environment(x) || is.list(x)) && !is_ag_tensor(x) &&
    (is.function(x[["forward"]]) || is.function(x[["parameters"]]) || is.function(x[["params"]]))
}

# Buffers (batch-norm running statistics) as named tensors, with ggmlR 0.8.5's nested keys: a
# layer's own buffers() (ag_batch_norm, ag_sequential: already nested), else the `layer<i>_`
# prefixed buffers of its $layers when every element is layer-like.
.state_buffers <- function(model, prefix = "", depth = 0L) {
  f <- .fn_field(model, "buffers")
  if (!is.null(f)) {
    b <- f()
    if (length(b)) names(b) <- paste0(prefix, names(b))
    return(if (is.null(b)) list() else b)
  }
  layers <- if (is.environment(model) || is.list(model)) model[["layers"]] else NULL
  if (depth > 64L || !is.list(layers) || !length(layers) ||
      !all(vapply(layers, .is_layer_like, logical(1))))
    return(list())
  do.call(c, lapply(seq_along(layers), function(i)
    .state_buffers(layers[[i]], paste0(prefix, "layer", i, "_"), depth + 1L)))
}

ag_state_dict <- function(model) {
  params <- .state_params(model, "ag_state_dict()")
  list(format = .Call(R_pg_state_dict_format), version = 1L,
       parameters = lapply(params, function(p) p$data),
       param_dtypes = vapply(params, function(p) { d <- p$dtype; if (is.null(d)) "f32" else d },
                             character(1L)),
       buffers = lapply(.state_buffers(model), function(b) b$data))
}

ag_load_state_dict <- function(model, state, strict = TRUE) {
  caller <- "ag_load_state_dict()"
  sp <- if (is.list(state)) state[["parameters"]]
  sb <- if (is.list(state)) state[["buffers"]]
  .Call(R_pg_state_dict_check_args, caller, is.list(sp),
        is.logical(strict) && length(strict) == 1L && !is.na(strict), is.null(sb) || is.list(sb))
  params <- .state_params(model, caller)
  # the rules (names, then each used value's shape and finiteness, then the dtype's range) and the
  # write into the same tensors, all or nothing, are the C core's (native/state_dict.c), shared
  # with Python; its refusals come back classed (shape, value)
  .Call(R_pg_state_dict_load, list(params, .state_buffers(model)),
        list(sp, if (is.null(sb)) list() else sb), strict, caller)
  invisible(model)
}

# ---------------------------------------------------------------------------------------------
# ag_save_model / ag_load_model with ggmlR's arguments (the file format is io.R's)

ag_save_model <- function(model, path, model_fn = NULL, optimizer = NULL, epoch = NULL,
                          extra = NULL) {
  .path_string(path, "ag_save_model()")
  if (!.is_model(model)) .model_params(model, "ag_save_model()")  # its error
  .Call(R_pg_mf_builder_args, FALSE, model_fn, FALSE)  # the core's rule and text
  # model_fn is checked, not stored: a safetensors file holds no code (the architecture is its
  # JSON config); pass the builder again to ag_load_model for models without to_config()
  invisible(.save_model(model, path, optimizer = optimizer, epoch = epoch, extra = extra))
}

# the default dtype is put back in C whatever way f() leaves (r_scope.c)
.with_dtype <- function(dtype, f) .Call(R_pg_scoped, .pg$code$scoped[["DTYPE"]],
                                        .dtype_code(dtype), quote(f()), environment())

ag_load_model <- function(path, model_fn = NULL, device = NULL, dtype = NULL, model = NULL,
                          optimizer = NULL, trust = FALSE) {
  if (!is.logical(trust) || length(trust) != 1L || is.na(trust))
    .pg_stop("argument", sprintf("ag_load_model(): trust must be TRUE or FALSE, got %s",
                                 .arg_show(trust)))
  # pyggmlr's earlier ag_load_model(path, model): a model object where ggmlR has model_fn
  if (!is.null(model_fn) && !is.function(model_fn) && is.null(model) && .is_model(model_fn)) {
    model <- model_fn
    model_fn <- NULL
  }
  # every argument before the file, as Python's: path, model, then model_fn (ag_save_model's
  # order), dtype ("f32" / "f64": match.arg's rule, f16 / bf16 refused), device, optimizer
  .path_string(path, "ag_load_model()")
  if (!is.null(model) && !.is_model(model)) .model_params(model, "ag_load_model()")  # its error
  .Call(R_pg_mf_builder_args, TRUE, model_fn, !is.null(model))  # the core's rules and texts
  dt <- if (!is.null(dtype)) .Call(R_pg_mf_load_dtype, dtype, .arg_show(dtype))
  if (!is.null(device)) {
    old <- ag_default_device()
    on.exit(ag_device(old), add = TRUE)
    ag_device(device)
  }
  .mf_opt_arg(optimizer, TRUE)
  .model_path(path, "ag_load_model()")  # 0L / TRUE / a FIFO or device: refused before any read
  # R serialization (saveRDS) rather than safetensors: the core's sniff (pg_file_is_rds); a load
  # refused after the model was built draws nothing
  .keep_rng_on_error(
    if (.Call(R_pg_file_is_rds, path)) .load_ggmlr_container(path, model_fn, dtype, model, trust)
    else .load_model(path, model = model, model_fn = model_fn, optimizer = optimizer,
                     dtype = dt)$model)
}

# A ggmlR ag_save_model() file (s9.3 / s9.4): readRDS, checks with ggmlR's messages, then
# everything validated before the first write. The closure ggmlR stores as model_fn is code from
# the file: it is run only with trust = TRUE (PyTorch's weights_only, the other way round);
# otherwise the builder must be the caller's (model_fn =, model =) and only data is read.
.load_ggmlr_container <- function(path, model_fn, dtype, model, trust = FALSE) {
  box <- tryCatch(readRDS(path), error = function(e)  # a corrupt file: as Python's
    .pg_stop("value", sprintf("ag_load_model(): cannot read '%s' as an R data file (%s)", path,
                              conditionMessage(e))))
  # ggmlR's checks in order, with its texts, are the core's (native/state_dict.c): the format, the
  # version, a stored closure (run only with trust = TRUE), a builder, the dtype, the parameters
  pd <- if (is.list(box)) box[["param_dtypes"]]  # all "f64": built in f64 when none is asked
  f64 <- (is.atomic(pd) || is.list(pd)) && length(pd) > 0L && all(pd %in% "f64")
  d <- .Call(R_pg_sd_container, box, path,
             if (is.list(box)) paste(format(box[["version"]]), collapse = " "),
             c(!is.null(model), !is.null(model_fn), trust, f64),
             dtype, .arg_show(dtype))
  if (identical(d$status, .pg$code$status[["STATE"]]))
    .pg_stop("untrusted", d$message, fields = list(path = path))
  if (!is.null(d$status)) .mf_fail(d, path)
  builder <- if (!is.null(model_fn)) model_fn else box[["model_fn"]]
  saved <- box[["parameters"]]
  if (is.null(model)) {
    model <- .with_dtype(d$build, builder)
    .mf_built_arg(model)  # io.R
  }
  params <- .model_params(model, "ag_load_model()")
  sb <- box[["buffers"]]
  # the rules (names, then each value's shape and finiteness, then the dtype's range, then the
  # builder's dtype) and the write, all or nothing, are the core's (native/state_dict.c), with
  # ggmlR's texts
  .Call(R_pg_state_dict_load_file, list(params, .state_buffers(model)),
        list(saved, if (is.list(sb)) sb else list()), "ag_load_model()", d$asked)
  ag_eval(model)
  model
}

# a ggmlR container read with readRDS prints as in ggmlR (its cat() calls, spacing included)
print.ggmlR_ag_state <- function(x, ...) {
  cat("<ggmlR ag_state>\n")
  cat("  format:        ", x$format, " v", x$version, "\n", sep = "")
  cat("  parameters:    ", length(x$parameters), "\n", sep = "")
  cat("  buffers:       ", length(x$buffers), "\n", sep = "")
  cat("  model_fn saved:", !is.null(x$model_fn), "\n")
  cat("  ggmlR version: ", format(x$ggmlR_version), "\n", sep = "")
  cat("  created:       ", format(x$created), "\n", sep = "")
  invisible(x)
}

# ---------------------------------------------------------------------------------------------
# internals ggmlR's examples and tests reach with ggmlR:::

.ag_data <- function(t) if (is_ag_tensor(t)) t$data else t
.ag_as_matrix <- function(x) x  # ggmlR: a GPU handle -> its matrix; there are no handles here
# rows from..to, 1-based
.ag_row_slice <- function(x, from, to) ag_slice_rows(x, from - 1L, to - from + 1L)
.ag_row_concat <- function(tensors) Reduce(ag_concat_rows, tensors)  # one tensor: itself

# ggmlR returns the vendored ggml library's version; this is the C core's (pg_version()), the
# same string in R and Python
ggml_version <- function() .Call(R_pg_version)
