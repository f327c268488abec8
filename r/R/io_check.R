# Checks that keep a model file round-trip safe (issue 19, "nothing lost"), as Python's
# pyggmlr/io/check.py: what ag_save_model would write is checked against what ag_load_model
# accepts before the old file is touched, and what a load would write into the user's objects is
# checked before the first write.

.MAX_EPOCH <- 1e12  # the loader reads at most 12 digits (.load_model)

.check_save_epoch <- function(epoch)
  sprintf("%.0f", .arg_int(epoch, "ag_save_model()", "epoch", 0, .MAX_EPOCH - 1,
                           rule = "an integer in [0, 1e12) (what ag_load_model reads back)"))

# Evaluate expr, then put back the random state it drew from (the core's current stream, or
# R's .Random.seed when the R generator is in use): a save draws nothing.
.keep_rng <- function(expr) {
  s <- .Call(R_pg_rng_current)
  if (!is.null(s)) {
    st <- .Call(R_pg_rng_get_state, s)
    on.exit(.Call(R_pg_rng_set_state, s, st), add = TRUE)
  }
  had <- exists(".Random.seed", envir = globalenv(), inherits = FALSE)
  old <- if (had) get(".Random.seed", envir = globalenv(), inherits = FALSE) else NULL
  on.exit(if (had) assign(".Random.seed", old, envir = globalenv())
          else if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) rm(".Random.seed",
              envir = globalenv()),
          add = TRUE)
  expr
}

# The architecture as the loader will rebuild it: the core's plausibility checks with the budget
# of this file's tensors (.rebuild's), then a rebuild whose parameter and buffer names and
# shapes must be the model's.
.check_save_config <- function(text, params, bufs) {
  pre <- "ag_save_model(): the model's architecture config would not load back"
  all_t <- c(params, bufs)
  key <- paste(text,
               paste(names(all_t),
                     vapply(all_t, function(t) paste(c(dim(t), t$dtype), collapse = "x"), ""),
                           collapse = ";"), sep = "\n")
  # ag_fit's checkpoints save it every epoch
  if (key %in% .pg$checked_configs) return(invisible(NULL))
  budget <- 16 * sum(vapply(all_t, function(t) prod(dim(t)), numeric(1))) + 65536
  bad <- .Call(R_pg_json_check, enc2utf8(text), "metadata 'config'", as.double(budget))
  if (!is.null(bad)) .pg_stop("value", sprintf("%s (%s); nothing was written", pre, bad))
  dts <- unique(vapply(params, function(t) t$dtype, ""))
  built <- tryCatch(.keep_rng(.with_dtype(if (identical(dts, "f64")) "f64" else "f32", function() {
    m <- ag_module_from_config(jsonlite::parse_json(text, simplifyVector = FALSE))
    list(p = .model_params(m, "ag_save_model()"), b = .model_buffers(m))
  })), error = function(e) .pg_stop("value", sprintf("%s (%s); nothing was written", pre,
                                                     conditionMessage(e))))
  shapes <- function(l) {
    if (!length(l)) return(character(0))
    v <- vapply(l, function(t) paste(dim(t), collapse = "x"), "")
    v[order(names(v))]
  }
  for (kind in c("parameter", "buffer")) {
    mine <- shapes(if (kind == "parameter") params else bufs)
    back <- shapes(if (kind == "parameter") built$p else built$b)
    if (!identical(mine, back))
      .pg_stop("value", sprintf("%s: it rebuilds %ss %s, the model has %s; nothing was written",
                                pre, kind, paste(names(back), back, collapse = ", "),
                                paste(names(mine), mine, collapse = ", ")))
  }
  .pg$checked_configs <- utils::tail(c(.pg$checked_configs, key), 16L)
  invisible(NULL)
}

# NULL when value (doubles) fits tensor t's dtype, else the core's message (a finite double
# beyond the f32 range would become Inf there).
.check_fits <- function(t, value, what) {
  if (!identical(t$dtype, "f32") || !length(value)) return(NULL)
  .Call(R_pg_values_fit, as.double(value), TRUE, what)
}
