# The gradient tape and backward().

# The scopes open, evaluate expr in the caller's frame (forcing the promise) and close in C
# (R_pg_scoped, src/r_scope.c): an on.exit handler is R code that an interrupt can abandon
# half-way, which left the tape open in about one Ctrl-C of ten. Nested tapes keep the outer
# tape's nodes; the outermost one empties it on entry.
with_grad_tape <- function(expr) .Call(R_pg_scoped, .pg$code$scoped[["TAPE"]], NULL,
                                       quote(expr), environment())

ag_tape_clear <- function() invisible(.Call(R_pg_tape, .pg$code$tape[["CLEAR"]]))

ag_no_grad <- function(expr) .Call(R_pg_scoped, .pg$code$scoped[["NO_GRAD"]], NULL, quote(expr),
                                   environment())

# Gradient map: an environment of class "ag_grads" holding the core map's handle in `.map`, with
# one active binding per leaf tensor (parameters, inputs), keyed by as.character(id) as in ggmlR,
# that reads (and on assignment writes) the core's map lazily. Made in C (src/r_util.c): each
# binding is a `function(value)` whose body calls .gb_grad(.map, <id>, value) and whose enclosure
# is the gradient environment. Every gradient in the map, op results' included, is read with
# grads[[id]], grads[[tensor]] or grads$`id`.
.gb_grad <- function(map, id, value) {
  if (missing(value)) .Call(R_pg_gradmap_get, map, id)
  else .Call(R_pg_gradmap_set, map, id, if (is_ag_tensor(value)) value$data else value)
}
.gb_formals <- function(value) NULL  # (the formals r_util.c's env_init takes: used from C)

.grad_key <- function(i) {
  if (is_ag_tensor(i)) return(i$id)
  if ((is.numeric(i) || is.character(i)) && length(i) == 1L) {
    id <- suppressWarnings(as.numeric(i))
    if (!is.na(id)) return(id)
  }
  NULL
}

`[[.ag_grads` <- function(x, i, ...) {
  id <- .grad_key(i)
  if (is.null(id)) {
    if (!is.character(i) || length(i) != 1L || is.na(i))
      .arg_stop("gradients are keyed by tensor id (one number or string) or the tensor itself")
    return(get0(i, envir = x, inherits = FALSE))
  }
  .Call(R_pg_gradmap_get, get(".map", envir = x, inherits = FALSE), id)
}
`$.ag_grads` <- function(x, name) x[[name]]
`[[<-.ag_grads` <- function(x, i, ..., value) {
  id <- .grad_key(i)
  if (is.null(id)) .arg_stop("gradients are keyed by tensor id (or the tensor itself)")
  .Call(R_pg_gradmap_set, get(".map", envir = x, inherits = FALSE), id,
        if (is_ag_tensor(value)) value$data else value)
  x
}
# nolint start: object_name_linter. (an S3 method of a symbol generic)
`$<-.ag_grads` <- function(x, name, value) `[[<-.ag_grads`(x, name, value = value)
# nolint end
print.ag_grads <- function(x, ...) {
  ids <- .Call(R_pg_gradmap_ids, get(".map", envir = x, inherits = FALSE))
  cat(sprintf("ag_grads: %d gradient(s), %d bound by id (leaves: %s)\n", length(ids),
              length(ls(x)), paste(utils::head(ls(x), 8), collapse = ", ")))
  invisible(x)
}

.map_handle <- function(grads, where) {
  if (is.null(grads)) return(NULL)
  if (is.environment(grads)) {
    m <- get0(".map", envir = grads, inherits = FALSE)
    if (!is.null(m)) return(m)
  }
  .arg_stop(sprintf("%s: grads must be the environment returned by backward() or NULL, got %s",
                    where, class(grads)[[1L]]))  # what was given, as Python's (issue 29)
}

backward <- function(loss) invisible(.Call(R_pg_backward_env, loss))
