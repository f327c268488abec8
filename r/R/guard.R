# Hostile input (issue 19): classed errors raised from R, data arguments whose dim disagrees
# with their length, model paths that are not regular files. The checks
# themselves are the core's (native/pg_api_bounds.h, pg_file_kind) where there is one.

# The one way R code raises a classed error: kind as Python's exception (see r_guard.c), call NULL
# (the message names the function) or the caller's call where ggmlR's stop() keeps it; fields:
# more entries of the condition (an io error's path and errno)
.pg_stop <- function(kind, msg, call = NULL, fields = list())
  stop(structure(class = c(sprintf("pyggmlr_%s_error", kind), "pyggmlr_error", "simpleError",
                           "error", "condition"),
                 c(list(message = msg, call = call), fields)))

# a core status code (.pg$code$status) and its message, raised with the class r_guard.c gives it
.status_stop <- function(status, msg) {
  kinds <- c(SHAPE = "shape", DTYPE = "dtype", VALUE = "value", NOMEM = "memory", STATE = "state",
             ARG = "argument", IO = "io", MODIFIED = "modified")
  nm <- names(.pg$code$status)[match(status, .pg$code$status)]
  .pg_stop(if (length(nm) != 1L || is.na(kinds[nm])) "value" else kinds[[nm]], msg)
}

# x's dim against its length (R's own `[` trusts dim: a tampered serialize() payload would make
# it read past the end); data frames and lists pass through
.check_dims <- function(x, fn, arg) {
  if (is.atomic(x) && !is.null(attr(x, "dim"))) .Call(R_pg_check_dims, x, fn, arg)
  invisible(x)
}

# a file path argument of fn: one string (0L / TRUE / NA are not paths)
.path_string <- function(path, fn) {
  if (!is.character(path) || length(path) != 1L || is.na(path))
    .pg_stop("argument", sprintf("%s: path must be a file name (a single string), got %s", fn,
                                 paste(class(path), collapse = "/")))
}

# a model file path: one string naming a regular file (a FIFO or a device would block
# readBin/readRDS or never end; a directory is refused as such)
.model_path <- function(path, fn) {
  .path_string(path, fn)
  # classed as Python's FileNotFoundError / IsADirectoryError (pyggmlr_io_error, with the path
  # and errno); a FIFO or device refused: the core's rules and texts (pg_mf_path_check)
  res <- .Call(R_pg_mf_path_check, path, fn)
  if (!is.null(res)) .mf_fail(res, path)
  invisible(path)
}
