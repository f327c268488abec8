# Model files: weights in safetensors format, the architecture as JSON in its metadata. The same
# format as the Python package (pyggmlr/io/modelfile.py, docs/model-format.md), so a file
# written by one language loads in the other:
#   8-byte little-endian header length N, N bytes of UTF-8 JSON header (space padded to a
#   multiple of 8), then the raw little-endian data. Entries {"dtype": "F32"|"F64",
#   "shape": [rows, cols], "data_offsets": [begin, end]}; values row-major (an R matrix m is
#   written as as.vector(t(m)) and read with matrix(v, rows, cols, byrow = TRUE)).
# Reading never evaluates or unserializes anything. The codec and the schema (every size, offset,
# dtype, metadata rule, name and shape match, and the save rules) are the core's
# (native/codec*.c, native/modelfile*.c); this converts R values and raises classed errors.

# config / extra / callback states -> JSON text: the glue's writer (r/src/r_cfg_json.c: named
# lists are objects, unnamed lists arrays, length-1 vectors scalars, NA / NaN / Inf null, doubles
# exact); what: what is written, in the refusals, classed and worded by the core as Python's
.to_json <- function(v, what = "a value") {
  js <- .Call(R_pg_to_json, v, what)
  if (is.list(js)) .mf_fail(js, "")
  js
}

.is_obj <- function(v) is.list(v) && (length(v) == 0L ||
                                      (!is.null(names(v)) && all(names(v) != "")))
.is_str <- function(v) is.character(v) && length(v) == 1L && !is.na(v)

# ---------------------------------------------------------------------------------------------
# safetensors writer / reader: the C core's codec (native/codec*.c, r/src/r_codec.c), shared
# with the Python package, so both write the same bytes and refuse the same files

# the core's answer list(status, message, errno) as a classed condition: its texts already name
# the file (native/modelfile.c); PG_STATUS_ERR_IO is a pyggmlr_io_error naming the path, with the
# system's errno (2 ENOENT, 13 EACCES, ...) and the path as fields, as Python's OSErrors carry them
.mf_fail <- function(res, path) {
  if (is.null(res)) return(invisible(NULL))
  msg <- res$message
  if (identical(res$status, .pg$code$status[["IO"]]))
    .pg_stop("io", if (grepl(path, msg, fixed = TRUE)) msg else sprintf("%s (path '%s')", msg,
                                                                         path),
             fields = list(path = path, errno = if (is.null(res$errno)) 0L else res$errno))
  if (identical(res$status, .pg$code$status[["VALUE"]])) .pg_stop("value", msg)
  .status_stop(res$status, msg)
}

# An open model file (the core's pg_mf, an external pointer): the path (guard.R) and the framing
# checked by the core; the caller closes it (on.exit(.Call(R_pg_mf_close, f))).
.mf_open <- function(path, fn) {
  .model_path(path, fn)
  f <- .Call(R_pg_mf_open, path.expand(path), fn)
  if (is.list(f)) .mf_fail(f, path)
  f
}

# A metadata JSON text the core has checked (its parser is the stricter), as R values, as
# Python's json.loads takes it
.mf_json <- function(text) if (!is.null(text)) jsonlite::parse_json(text, simplifyVector = FALSE)

# ---------------------------------------------------------------------------------------------
# model parts

.is_model <- function(model) {
  (is.environment(model) && (is.function(model$parameters) || is.function(model$params))) ||
    (is.list(model) && !is.environment(model) &&
     (is.function(model$params) || is.function(model$parameters)))
}

# where: "ag_save_model()" or "ag_load_model()"; a model that is none: the core's text
.model_params <- function(model, where) {
  if (!.is_model(model)) .Call(R_pg_mf_arg_fail, identical(where, "ag_load_model()"),
                               .pg$code$mf_bad[["MODEL"]], class(model)[[1L]])
  .check_named_tensors(.layer_params(model), where, "parameter")
}

.model_buffers <- function(model, where = "ag_save_model()")
  .check_named_tensors(.layer_buffers(model), where, "buffer")

.check_named_tensors <- function(p, where, kind) {
  if (!length(p)) return(list())
  nm <- names(p)
  if (is.null(nm) || any(is.na(nm) | nm == ""))
    .pg_stop("value", sprintf("%s: every %s needs a name", where, kind))
  for (k in nm) if (!is_ag_tensor(p[[k]]))
    .pg_stop("argument", sprintf("%s: model entry '%s' is a %s, not an ag_tensor", where, k,
                                 class(p[[k]])[[1L]]))
  if (anyDuplicated(nm))
    .pg_stop("value", sprintf("%s: duplicate %s name '%s'", where, kind, nm[anyDuplicated(nm)]))
  p
}

.same <- function(a, b) isTRUE(.Call(R_pg_same_tensor, a$.ptr, b$.ptr))

.is_optimizer <- function(o) inherits(o, c("ag_optimizer_sgd", "ag_optimizer_adam"))

# a given optimizer that is none: the core's text (pg_mf_arg_fail), naming R's class
.mf_opt_arg <- function(optimizer, load) if (!is.null(optimizer) && !.is_optimizer(optimizer))
  .Call(R_pg_mf_arg_fail, load, .pg$code$mf_bad[["OPTIMIZER"]], class(optimizer)[[1L]])

# what model_fn built must be a model: the core's text (pg_mf_arg_fail, ggmlR's)
.mf_built_arg <- function(model) if (!.is_model(model))
  .Call(R_pg_mf_arg_fail, TRUE, .pg$code$mf_bad[["BUILT"]], paste(class(model), collapse = "/"))


# a model's named tensors and its optimizer as the core's description (pg_mf_model)
.mf_model <- function(params, bufs, optimizer = NULL) {
  list(enc2utf8(as.character(names(params))), unname(params), enc2utf8(as.character(names(bufs))),
       unname(bufs), if (!is.null(optimizer)) optimizer$.h)
}

# list(names, f64, values) of ag_fit's callback arrays (list(name, value, dtype) entries)
.more_group <- function(more) {
  list(enc2utf8(vapply(more, function(e) as.character(e$name), "")),
       vapply(more, function(e) identical(e$dtype, "F64"), logical(1)),
       lapply(more, function(e) {
         v <- as.matrix(e$value)
         if (!is.double(v)) storage.mode(v) <- "double"
         v
       }))
}

# The save rules and the metadata map are the core's (native/modelfile_write.c); this converts
# the model, checks what only R can (the config rebuilds, the arguments) and raises classed.
# An empty path is the core's refusal at the write (pg_st_write), after every other check, as
# in Python.
.save_model <- function(model, path, optimizer = NULL, epoch = NULL, extra = NULL, more = list()) {
  params <- .model_params(model, "ag_save_model()")
  bufs <- .model_buffers(model)
  .mf_opt_arg(optimizer, FALSE)  # after the model's parts, as Python's
  m <- .mf_model(params, bufs, optimizer)
  .mf_fail(.Call(R_pg_mf_names_check, m[[1L]], m[[3L]]), path)
  fields <- c(sprintf("pyggmlr (R) %s", as.character(utils::packageVersion("pyggmlr"))),
              NA_character_, NA_character_, NA_character_)  # created_by, config, extra, target
  if (is.function(model$to_config)) {
    # a pyggmlr value error (a layer without a config) saves the weights alone, with the core's
    # note; any other error is a fault in to_config() and propagates, as in Python
    cfg <- tryCatch(model$to_config(), pyggmlr_value_error = function(e) {
      warning(.Call(R_pg_mf_no_config_note, conditionMessage(e)), call. = FALSE)
      NULL
    })
    if (!is.null(cfg)) {
      fields[[2L]] <- .to_json(cfg, "the model's architecture config")
      .check_save_config(fields[[2L]], m)  # whatever is saved must load
    }
  }
  ep <- if (!is.null(epoch)) .arg_int(epoch, "ag_save_model()", "epoch", core = R_pg_mf_epoch_arg)
  # the core checks it loads back; a "json" text (ag_fit's checkpoints) as it is
  if (!is.null(extra)) fields[[3L]] <- if (inherits(extra, "json")) extra
                                       else .to_json(extra, "extra")
  # the core copies the tensors and the optimizer's state; more: ag_fit's callback arrays
  .mf_fail(.Call(R_pg_mf_save, path.expand(path), m, .more_group(more), enc2utf8(fields), ep,
                 .target_meta(model)), path)  # .target_meta: predict.R
  invisible(path.expand(path))
}

# ag_save_model(): state.R (ggmlR's arguments)

# ---------------------------------------------------------------------------------------------
# loading

# more: ag_fit's callback arrays are read too (list(model, tensors))
.load_model <- function(path, model = NULL, model_fn = NULL, optimizer = NULL, dtype = NULL,
                        more = FALSE) {
  .mf_opt_arg(optimizer, TRUE)  # (the builder arguments: ag_load_model's, state.R)
  f <- .mf_open(path, "ag_load_model()")
  on.exit(.Call(R_pg_mf_close, f), add = TRUE)
  # format, name lists, epoch, extra; the config too when the model is rebuilt from it
  .mf_fail(.Call(R_pg_mf_check_load, f, !is.null(model) || !is.null(model_fn), FALSE,
                 is.null(model) && is.null(model_fn), dtype), path)
  v <- .Call(R_pg_mf_values, f)
  # built in `dtype`, else the file's (ggmlR: param_dtypes); the core checks the parameters' dtype
  if (is.null(model) && !is.null(model_fn)) {
    model <- .with_dtype(v$dtype, model_fn)
    .mf_built_arg(model)
  }
  # rebuilt from the file's config (checked, and matched against its tensors, by the core's
  # pg_mf_check_load before anything is built): a failure to build, or a model that is none, is
  # a bad file
  rebuild <- function(how, expr) tryCatch(expr, error = function(e)
    .mf_fail(.Call(R_pg_mf_rebuild_fail, f, .pg$code$rebuild[[how]], conditionMessage(e)), path))
  rebuilt <- is.null(model)
  if (rebuilt) model <- rebuild("LOAD", .with_dtype(v$dtype, function()
    ag_module_from_config(.mf_json(v$config))))
  params <- if (rebuilt) rebuild("UNUSABLE", .model_params(model, "ag_load_model()"))
            else .model_params(model, "ag_load_model()")
  bufs <- .model_buffers(model, "ag_load_model()")
  # names, shapes, the optimizer's state, every value: all checked before anything is written
  d <- .Call(R_pg_mf_load_check, f, .mf_model(params, bufs, optimizer))
  if (!is.null(d$status)) .mf_fail(d, path)
  if (!is.null(d)) .opt_hyper_warn(optimizer, d)
  .mf_fail(.Call(R_pg_mf_load_commit, f), path)
  if (!is.null(v$target)) .set_target(model, v$target$loss, v$target$classes)  # predict.R
  ag_eval(model)
  rd <- if (more) .Call(R_pg_mf_read, f)  # from the open file: no second open and check
  if (!is.null(rd$status)) .mf_fail(rd, path)
  list(model = model, tensors = rd$tensors)
}

# ag_load_model(): state.R (ggmlR's arguments, and ggmlR's RDS containers)

ag_model_info <- function(path) .model_info(path, "ag_model_info()")

# ag_model_info's answer, its errors naming fn (ag_fit's resume_from checks its file so): the
# core's checks and JSON (pg_mf_info_json, as Python's), in R's types
.model_info <- function(path, fn) {
  f <- .mf_open(path, fn)
  on.exit(.Call(R_pg_mf_close, f), add = TRUE)
  js <- .Call(R_pg_mf_info_json, f)
  if (is.list(js)) .mf_fail(js, path)
  info <- .mf_json(js)
  for (k in c("parameters", "buffers"))
    info[[k]] <- lapply(info[[k]], function(d) list(shape = as.integer(unlist(d$shape)),
                                                    dtype = d$dtype))
  if (!is.null(info$epoch)) info$epoch <- as.double(info$epoch)
  if (!is.null(info$target$classes)) info$target$classes <- unlist(info$target$classes)
  info
}
