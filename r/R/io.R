# Model files: weights in safetensors format, the architecture as JSON in its metadata. The same
# format as the Python package (pyggmlr/io.py, docs/model-format.md), so a file written by one
# language loads in the other:
#   8-byte little-endian header length N, N bytes of UTF-8 JSON header (space padded to a
#   multiple of 8), then the raw little-endian data. Entries {"dtype": "F32"|"F64",
#   "shape": [rows, cols], "data_offsets": [begin, end]}; values row-major (an R matrix m is
#   written as as.vector(t(m)) and read with matrix(v, rows, cols, byrow = TRUE)).
# Reading never evaluates or unserializes anything: every size, offset, dtype and JSON field is
# checked, and any problem is an R error naming the file.

.IO_FORMAT <- "pyggmlr.ag_model"
.IO_VERSION <- "1"
# the core's limit (native/codec.c); state.R sniffs files with it
.IO_MAX_HEADER <- 100 * 1024 * 1024

.io_bad <- function(path, msg) .pg_stop("value", sprintf("%s: %s", path, msg))

# the core's PG_STATUS_ERR_IO: a pyggmlr_io_error naming the path, with the system's errno
# (2 ENOENT, 13 EACCES, ...) and the path as fields, as Python's OSError subclasses carry them
.io_fail <- function(res, path) {
  msg <- res$message
  if (!grepl(path, msg, fixed = TRUE)) msg <- sprintf("%s (path '%s')", msg, path)
  .pg_stop("io", msg, fields = list(path = path, errno = if (is.null(res$errno)) 0L else res$errno))
}

# ---------------------------------------------------------------------------------------------
# JSON helpers (jsonlite; strict: no NaN / Inf, non-finite numbers become null)

.json_str <- function(s) as.character(jsonlite::toJSON(jsonlite::unbox(enc2utf8(as.character(s)))))

# what: what is written ("extra", "the model's architecture config"); refusals classed and worded
# as Python's io_check.clean and ag_save_model's extra check
.json_clean <- function(v, what, depth = 0L) {
  if (is.factor(v)) v <- as.character(v)
  if (!is.null(v) && !(is.list(v) && !is.data.frame(v)) && !is.logical(v) && !is.numeric(v) &&
      !is.character(v))
    .pg_stop("argument", sprintf("ag_save_model(): %s must be JSON-serialisable (a %s cannot be %s",
                                 what, class(v)[[1L]], "written as JSON)"))
  if (is.list(v)) {
    if (depth >= .pg$code$limit[["JSON_DEPTH"]])  # what the loader reads (the core's parser)
      .pg_stop("value", sprintf("ag_save_model(): %s is nested deeper than %d levels %s", what,
                                .pg$code$limit[["JSON_DEPTH"]], "(what ag_load_model reads)"))
    nm <- names(v)
    out <- lapply(v, .json_clean, what = what, depth = depth + 1L)
    names(out) <- nm
    return(out)
  }
  if (is.double(v)) {
    v <- as.list(v)
    v <- lapply(v, function(x) if (is.finite(x)) .json_num(x) else NULL)
    return(if (length(v) == 1L) v[[1L]] else v)
  }
  v
}

# A finite double as the shortest of 15-17 significant digits that reads back as the same double
# (jsonlite stops at 15, so histories and hyper-parameters lost their last bits); written verbatim.
.json_num <- function(x) {
  for (d in 15:17) {
    s <- sprintf("%.*g", d, x)
    if (as.numeric(s) == x) break
  }
  structure(s, class = "json")
}

# config / extra / optimizer info -> JSON text. Named lists are objects, unnamed lists arrays,
# length-1 atomic vectors scalars, longer atomic vectors arrays.
.to_json <- function(v, what = "a value") {
  as.character(jsonlite::toJSON(.json_clean(v, what), auto_unbox = TRUE, null = "null", na = "null",
                                digits = NA, json_verbatim = TRUE))
}

.json_names <- function(x) as.character(jsonlite::toJSON(as.character(x)))  # always an array

# A metadata JSON text: the core checks it first (strict syntax, limits, no duplicate keys;
# with budget, the architecture's plausible sizes: native/codec_meta.c), then jsonlite reads it.
.parse_json <- function(text, what, path, budget = 0) {
  bad <- .Call(R_pg_json_check, enc2utf8(text), what, as.double(budget))
  if (!is.null(bad)) .io_bad(path, bad)
  tryCatch(jsonlite::parse_json(text, simplifyVector = FALSE),
           error = function(e) .io_bad(path,
                                       sprintf("%s is not valid JSON (%s)", what,
                                               substr(conditionMessage(e), 1L, 120L))))
}

.is_obj <- function(v) is.list(v) && (length(v) == 0L ||
                                      (!is.null(names(v)) && all(names(v) != "")))
.is_arr <- function(v) is.list(v) && is.null(names(v))
.is_str <- function(v) is.character(v) && length(v) == 1L && !is.na(v)
# a JSON integer: jsonlite gives integers for small whole numbers written without a fraction,
# doubles for "4.0" (rejected, as in Python) and for integers beyond 32 bits (accepted)
.is_int <- function(v) {
  if (!is.numeric(v) || length(v) != 1L || is.na(v)) return(FALSE)
  if (is.integer(v)) return(TRUE)
  is.finite(v) && v == floor(v) && abs(v) >= 2^31 && abs(v) <= 2^53
}

# ---------------------------------------------------------------------------------------------
# safetensors writer / reader: the C core's codec (native/codec*.c, r/src/r_codec.c), shared
# with the Python package, so both write the same bytes and refuse the same files

# the core's answer list(status, message): a file's content (status VALUE) names the file
.codec_fail <- function(res, path, fn = NULL) {
  if (identical(res$status,
                .pg$code$status[["VALUE"]])) .io_bad(if (is.null(fn)) path else sprintf("%s: %s",
                    fn, path), res$message)
  .status_stop(res$status, res$message)
}

# tensors: list of list(name, matrix, dtype "F32"/"F64"); metadata: named character or list.
# Written atomically by the core: a temp file in the same directory, fsynced, renamed over path.
.write_safetensors <- function(path, tensors, metadata) {
  path <- path.expand(path)
  values <- lapply(tensors, function(t) {
    v <- as.matrix(t$value)
    if (!is.double(v)) storage.mode(v) <- "double"
    v
  })
  given <- path
  res <- .Call(R_pg_st_write, path, vapply(tensors, function(t) enc2utf8(as.character(t$name)), ""),
               vapply(tensors, function(t) identical(t$dtype, "F64"), logical(1)), values,
               enc2utf8(as.character(names(metadata))),
               enc2utf8(vapply(metadata, as.character, "")))
  if (identical(res$status, .pg$code$status[["IO"]])) .io_fail(res, given)
  if (!identical(res$status, .pg$code$status[["OK"]])) .status_stop(res$status, res$message)
  invisible(path)
}

# Validate and read a safetensors file: list(tensors = named list of matrices (file order) with
# attribute "dtype" ("F32"/"F64"), meta = named list of strings).
# A file refused on its framing or header names fn too ("ag_load_model(): <path>: header length
# ...").
.read_safetensors <- function(path, fn = "ag_load_model()") {
  if (!is.character(path) || length(path) != 1L || is.na(path))
    .pg_stop("argument", "ag_load_model(): path must be a single file name")
  .model_path(path, "ag_load_model()")
  res <- .Call(R_pg_st_read, path.expand(path))
  if (identical(res$status, .pg$code$status[["IO"]])) .io_fail(res, path)
  if (!is.null(res$status)) .codec_fail(res, path, fn)
  res
}

# ---------------------------------------------------------------------------------------------
# model parts

.is_model <- function(model) {
  (is.environment(model) && is.function(model$parameters)) ||
    (is.list(model) && !is.environment(model) &&
     (is.function(model$params) || is.function(model$parameters)))
}

.model_params <- function(model, where) {
  if (!.is_model(model))
    .pg_stop("argument",
             sprintf(paste0("%s: `model` must be an ag_sequential or ag_* layer (an object with ",
                        "parameters()), got %s"),
                 where, class(model)[[1L]]))
  p <- .layer_params(model)
  .check_named_tensors(p, where, "parameter")
}

.model_buffers <- function(model,
                           where = "ag_save_model()") .check_named_tensors(.layer_buffers(model),
                               where, "buffer")

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

.opt_names <- function(opt, params) {
  vapply(seq_along(opt$params), function(i) {
    t <- opt$params[[i]]
    for (k in names(params)) if (.same(params[[k]], t)) return(k)
    paste0("#", i)
  }, "")
}

.is_optimizer <- function(o) inherits(o, c("ag_optimizer_sgd", "ag_optimizer_adam"))

.file_dtype <- function(t) if (identical(t$dtype, "f64")) "F64" else "F32"

.save_model <- function(model, path, optimizer = NULL, epoch = NULL, extra = NULL, more = list()) {
  if (!is.character(path) || length(path) != 1L || is.na(path) || !nzchar(path))
    .pg_stop("argument", "ag_save_model(): path must be a single file name")
  params <- .model_params(model, "ag_save_model()")
  bufs <- .model_buffers(model)
  clash <- intersect(names(params), names(bufs))
  if (length(clash))
    .pg_stop("value", sprintf("ag_save_model(): names used by both a parameter and a buffer: %s",
                 paste(clash, collapse = ", ")))
  meta <- c(format = .IO_FORMAT, format_version = .IO_VERSION,
            created_by = sprintf("pyggmlr (R) %s", as.character(utils::packageVersion("pyggmlr"))),
            parameters = .json_names(names(params)), buffers = .json_names(names(bufs)))
  tc <- if (is.function(model$to_config)) model$to_config else NULL
  if (!is.null(tc)) {
    cfg <- tryCatch(tc(), error = function(e) {
      warning(sprintf(paste0("ag_save_model(): saving the weights without the architecture (%s); ",
                             "load with ag_load_model(path, model = ...)"),
                      conditionMessage(e)), call. = FALSE)
      NULL
    })
    if (!is.null(cfg)) {
      meta[["config"]] <- .to_json(cfg, "the model's architecture config")
      .check_save_config(meta[["config"]], params, bufs)  # whatever is saved must load
    }
  }
  tensors <- c(lapply(names(params),
                      function(k) list(name = k, value = params[[k]]$data,
                                       dtype = .file_dtype(params[[k]]))),
               lapply(names(bufs),
                      function(k) list(name = k, value = bufs[[k]]$data,
                                       dtype = .file_dtype(bufs[[k]]))))
  if (!is.null(epoch)) meta[["epoch"]] <- .check_save_epoch(epoch)
  if (!is.null(optimizer)) {
    if (!.is_optimizer(optimizer))
      .pg_stop("argument", sprintf("ag_save_model(): optimizer must be an optimizer object, got %s",
                   class(optimizer)[[1L]]))
    st <- .opt_file_state(optimizer)  # this file's layout (ggmlR's state() has another)
    names_o <- .opt_names(optimizer, params)
    slots <- sort(unique(unlist(lapply(st$params,
                                       function(e) names(e)[!vapply(e, is.null, logical(1))]))))
    hyper <- lapply(st$hyper, function(v) if (is.logical(v)) v else as.double(v))
    info <- list(kind = st$kind, t = as.integer(st$t), accum_count = as.integer(st$accum_count),
                 hyper = hyper,
                 params = as.list(names_o), slots = as.list(as.character(slots)))
    meta[["optimizer"]] <- .to_json(info, "the optimizer state")
    for (i in seq_along(names_o)) {
      dt <- .file_dtype(optimizer$params[[i]])
      for (s in names(st$params[[i]])) {
        v <- st$params[[i]][[s]]
        if (!is.null(v)) tensors[[length(tensors) + 1L]] <- list(name = sprintf("optimizer.%s.%s",
            s, names_o[[i]]),
                                                                 value = as.matrix(v), dtype = dt)
      }
    }
  }
  if (!is.null(extra)) {
    js <- .to_json(extra, "extra")
    bad <- .Call(R_pg_json_check, enc2utf8(js), "metadata 'extra'", 0)  # whatever is saved loads
    if (!is.null(bad)) .pg_stop("value", sprintf("ag_save_model(): %s; nothing was written", bad))
    meta[["extra"]] <- js
  }
  .write_safetensors(path, c(tensors, more), as.list(meta))  # more: ag_fit's callback arrays
}

# ag_save_model(): state.R (ggmlR's arguments)

# ---------------------------------------------------------------------------------------------
# loading

.meta_json <- function(meta, key, path, check = NULL, what = NULL, budget = 0) {
  if (is.null(meta[[key]])) return(NULL)
  v <- .parse_json(meta[[key]], sprintf("metadata '%s'", key), path, budget)
  if (!is.null(check) && !check(v))
    .io_bad(path, sprintf("metadata '%s' has the wrong type (%s expected)", key, what))
  v
}

.meta_names <- function(meta, key, tensors, path) {
  v <- .meta_json(meta, key, path, .is_arr, "a list")
  if (is.null(v)) return(NULL)
  if (!all(vapply(v, .is_str, logical(1))) || anyDuplicated(unlist(v)))
    .io_bad(path, sprintf("metadata '%s' must list distinct names", key))
  v <- as.character(unlist(v))
  missing <- setdiff(v, names(tensors))
  if (length(missing))
    .io_bad(path, sprintf("metadata '%s' names tensors that are not in the file: %s", key,
                          paste(utils::head(missing, 5L), collapse = ", ")))
  v
}

.files_dtype <- function(tensors, pnames) {
  dts <- unique(vapply(if (is.null(pnames)) names(tensors) else pnames,
                       function(n) attr(tensors[[n]], "dtype"), ""))
  if (length(dts) == 1L && dts == "F64") "f64" else "f32"
}

.rebuild <- function(meta, tensors, pnames, path, dtype = NULL, bnames = NULL) {
  # the budget: the most elements one layer may ask for (the product of its integer fields), from
  # the file's own tensors, so a hostile config cannot make the rebuild allocate gigabytes
  budget <- 16 * sum(vapply(tensors, length, numeric(1))) + 65536
  cfg <- .meta_json(meta, "config", path, .is_obj, "an object", budget = budget)
  if (is.null(cfg))
    .io_bad(path,
            paste0("the file has no architecture (metadata 'config'); pass model = or model_fn = ",
                   "to load its weights into a model"))
  # every built-in layer's tensors must be in the file with the config's shapes before any layer
  # is built (the budget alone let a 900-byte file ask for a 2 GB attention layer)
  nms <- if (is.null(pnames)) names(tensors) else c(pnames, bnames)
  why <- .Call(R_pg_config_match, enc2utf8(meta[["config"]]), enc2utf8(nms),
               vapply(nms, function(k) as.double(nrow(tensors[[k]])), 0),
               vapply(nms, function(k) as.double(ncol(tensors[[k]])), 0))
  if (!is.null(why)) .pg_stop("value", sprintf("ag_load_model(): %s: %s", path, why))
  want <- if (is.null(dtype)) .files_dtype(tensors, pnames) else dtype
  prev <- ag_default_dtype()
  on.exit(ag_dtype(prev), add = TRUE)
  ag_dtype(want)
  tryCatch(ag_module_from_config(cfg), error = function(e)
    .io_bad(path,
            sprintf("cannot rebuild the model from its architecture config: %s",
                    conditionMessage(e))))
}

.shape_str <- function(d) sprintf("%dx%d", d[1L], d[2L])

.match_tensors <- function(kind, model_d, file_names, tensors) {
  m <- names(model_d)
  if (!setequal(m, file_names)) {
    miss <- setdiff(m, file_names)
    extra <- setdiff(file_names, m)
    .pg_stop("value",
             sprintf(paste0("%s mismatch between saved state and model. missing in file: %s; ",
                            "not in model: %s"),
                 kind,
                 if (length(miss)) paste(miss, collapse = ", ") else "(none)",
                 if (length(extra)) paste(extra, collapse = ", ") else "(none)"))
  }
  lapply(m, function(k) {
    a <- tensors[[k]]
    d <- dim(model_d[[k]])
    if (!identical(as.integer(d), as.integer(dim(a))))
      .pg_stop("value",
               sprintf("shape mismatch for %s '%s': model %s vs file %s", kind, k, .shape_str(d),
                   .shape_str(dim(a))))
    list(t = model_d[[k]], a = a)
  })
}

.opt_state_from_file <- function(meta, tensors, optimizer, params, path) {
  info <- .meta_json(meta, "optimizer", path, .is_obj, "an object")
  if (is.null(info)) .io_bad(path, "the file has no optimizer state")
  names_f <- info$params
  slots <- info$slots
  if (!.is_arr(names_f) || !all(vapply(names_f, .is_str, logical(1))) ||
      !.is_arr(slots) || !all(vapply(slots, .is_str, logical(1))))
    .io_bad(path, "optimizer metadata: params and slots must be lists of names")
  names_f <- as.character(unlist(names_f))
  slots <- as.character(unlist(slots))
  t <- info$t
  ac <- info$accum_count
  if (!(.is_int(t) && t >= 0 && .is_int(ac) && ac >= 0))
    .io_bad(path, "optimizer metadata: t and accum_count must be integers >= 0")
  hyper <- if (is.null(info$hyper)) list() else info$hyper
  if (!.is_obj(hyper) ||
      !all(vapply(hyper, function(v) is.null(v) ||
                  ((is.numeric(v) || is.logical(v)) && length(v) == 1L), logical(1))))
    .io_bad(path, "optimizer metadata: hyper must map names to numbers")
  kind <- info$kind
  if (!identical(kind, optimizer$kind))
    .pg_stop("value",
             sprintf("optimizer state mismatch: the file's state is for %s, this optimizer is %s",
                 if (.is_str(kind)) kind else "(unknown)", optimizer$kind))
  mine <- .opt_names(optimizer, params)
  if (!identical(sort(mine), sort(names_f)))
    .pg_stop("value",
             sprintf("optimizer state mismatch: the optimizer's parameters are %s; the file has %s",
                 paste(mine, collapse = ", "), paste(names_f, collapse = ", ")))
  per <- lapply(seq_along(mine), function(i) {
    nm <- mine[[i]]
    p <- optimizer$params[[i]]
    entry <- list()
    for (s in .SLOTS[[optimizer$kind]]) {
      a <- if (s %in% slots) tensors[[sprintf("optimizer.%s.%s", s, nm)]] else NULL
      if (!is.null(a) && !identical(as.integer(dim(a)), as.integer(dim(p))))
        .io_bad(path,
                sprintf("optimizer state '%s' for '%s' is %s, the parameter is %s", s, nm,
                        .shape_str(dim(a)),
                              .shape_str(dim(p))))
      if (!is.null(a)) attr(a, "dtype") <- NULL
      entry[s] <- list(a)
    }
    entry
  })
  hyper <- hyper[!vapply(hyper, is.null, logical(1))]
  list(format = "ggmlR.ag_opt_state", version = 1L, kind = kind, t = t, accum_count = ac,
       hyper = hyper, params = per)
}

.load_model <- function(path, model = NULL, model_fn = NULL, optimizer = NULL, dtype = NULL) {
  if (!is.null(model_fn) && !is.function(model_fn))
    .pg_stop("argument",
             "ag_load_model(): model_fn must be a function returning the model, or NULL")
  if (!is.null(optimizer) && !.is_optimizer(optimizer))
    .pg_stop("argument", sprintf("ag_load_model(): optimizer must be an optimizer object, got %s",
                 class(optimizer)[[1L]]))
  f <- .read_safetensors(path)
  tensors <- f$tensors
  meta <- f$meta
  fmt <- meta$format
  if (!is.null(fmt) && fmt != .IO_FORMAT) .io_bad(path,
                                                  sprintf("not a pyggmlr model file (format %s)",
                                                          .json_str(fmt)))
  if (!is.null(fmt) && !identical(meta$format_version, .IO_VERSION))
    .io_bad(path, sprintf("unsupported model file version %s (this pyggmlr reads %s)",
                          if (is.null(meta$format_version)) "None"
                          else .json_str(meta$format_version), .IO_VERSION))
  if (is.null(fmt) && is.null(model) && is.null(model_fn))
    .io_bad(path,
            paste0("not a pyggmlr model file (no 'format' metadata); pass model = (or model_fn ",
                   "=) to load its tensors by name"))
  pnames <- .meta_names(meta, "parameters", tensors, path)
  bnames <- .meta_names(meta, "buffers", tensors, path)
  epoch <- meta$epoch
  if (!is.null(epoch)) {
    if (!grepl("^[0-9]{1,12}$", epoch))
      .io_bad(path,
              sprintf("metadata 'epoch' is not a non-negative integer: %s",
                      .json_str(substr(epoch, 1L, 20L))))
    epoch <- as.numeric(epoch)
  }
  extra <- .meta_json(meta, "extra", path)
  # built in `dtype`, else the file's (ggmlR: param_dtypes)
  if (is.null(model) && !is.null(model_fn)) {
    model <- .with_dtype(if (is.null(dtype)) .files_dtype(tensors, pnames) else dtype, model_fn)
    if (!.is_model(model))
      .pg_stop("argument",
               sprintf(paste0("ag_load_model(): `model_fn` must return an ag_sequential or ag_* ",
                          "layer (got class: %s)."),
                   paste(class(model), collapse = "/")))
  }
  if (is.null(model)) {
    model <- .rebuild(meta, tensors, pnames, path, dtype, bnames)
    params <- tryCatch(.model_params(model, "ag_load_model()"), error = function(e)
      .io_bad(path, sprintf("the rebuilt model is not usable: %s", conditionMessage(e))))
  } else {
    params <- .model_params(model, "ag_load_model()")
  }
  .check_built_dtype(params, dtype)
  bufs <- .model_buffers(model, "ag_load_model()")
  if (is.null(pnames))  # a foreign safetensors file: take the model's names
    pnames <- if (all(names(params) %in% names(tensors))) intersect(names(params),
        names(tensors)) else names(tensors)
  if (is.null(bnames)) bnames <- intersect(names(bufs), names(tensors))
  writes <- c(.match_tensors("parameter", params, pnames, tensors),
              .match_tensors("buffer", bufs, bnames, tensors))
  ostate <- if (!is.null(optimizer)) .opt_state_from_file(meta, tensors, optimizer, params,
                                                          path) else NULL
  if (!is.null(ostate))
    tryCatch(.opt_load_file_state(optimizer, ostate, check_only = TRUE),
             error = function(e) .io_bad(path, conditionMessage(e)))
  wn <- c(names(params), names(bufs))
  for (i in seq_along(writes)) {
    bad <- .check_fits(writes[[i]]$t, writes[[i]]$a, sprintf("tensor '%s'", wn[[i]]))
    if (!is.null(bad)) .io_bad(path, bad)
  }
  for (w in writes) {  # everything checked: now write
    a <- w$a
    attr(a, "dtype") <- NULL
    w$t$data <- a
  }
  if (!is.null(ostate)) .opt_load_file_state(optimizer, ostate)
  ag_eval(model)
  list(model = model, epoch = epoch, extra = extra, tensors = tensors, meta = meta)
}

# ag_load_model(): state.R (ggmlR's arguments, and ggmlR's RDS containers)

ag_model_info <- function(path) {
  .model_path(path, "ag_model_info()")
  f <- .read_safetensors(path, "ag_model_info()")
  tensors <- f$tensors
  meta <- f$meta
  desc <- function(nms) {
    out <- lapply(nms, function(k) list(shape = dim(tensors[[k]]),
                                        dtype = if (attr(tensors[[k]],
                                                         "dtype") == "F64") "f64" else "f32"))
    names(out) <- nms
    out
  }
  pn <- .meta_names(meta, "parameters", tensors, path)
  bn <- .meta_names(meta, "buffers", tensors, path)
  opt <- .meta_json(meta, "optimizer", path, .is_obj, "an object")
  ep <- meta$epoch
  list(format = meta$format, format_version = meta$format_version, parameters = desc(pn),
       buffers = desc(bn),
       config = .meta_json(meta, "config", path, .is_obj, "an object"),
       epoch = if (!is.null(ep) && grepl("^[0-9]{1,12}$", ep)) as.numeric(ep) else NULL,
       optimizer = if (is.null(opt)) NULL else opt$kind, extra = .meta_json(meta, "extra", path))
}
