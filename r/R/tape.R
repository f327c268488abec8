# The gradient tape and backward().

with_grad_tape <- function(expr) {
  .Call(R_pg_tape, 0L)          # outermost scope empties the tape; nested scopes keep it
  on.exit(.Call(R_pg_tape, 1L))
  eval.parent(substitute(expr)) # evaluated in the caller's frame
}

ag_tape_clear <- function() invisible(.Call(R_pg_tape, 2L))

ag_no_grad <- function(expr) {
  prev <- .Call(R_pg_tape_set_enabled, FALSE)
  on.exit(.Call(R_pg_tape_set_enabled, prev))
  eval.parent(substitute(expr))
}

# Gradient map: an environment keyed by as.character(id) whose entries read the core's map
# lazily (active bindings made in C, src/r_util.c, from .gb_grad; their enclosure holds `.map`
# and `.id`); the map handle lives in `.map` (optimizers and clip_grad_norm use it directly).
.gb_grad <- function(value) {
  if (missing(value)) .Call(R_pg_gradmap_get, .map, .id)
  else .Call(R_pg_gradmap_set, .map, .id, if (is_ag_tensor(value)) value$data else value)
}

.map_handle <- function(grads, where) {
  if (is.null(grads)) return(NULL)
  if (is.environment(grads)) {
    m <- get0(".map", envir = grads, inherits = FALSE)
    if (!is.null(m)) return(m)
  }
  stop(sprintf("%s: grads must be the environment returned by backward() or NULL", where), call. = FALSE)
}

backward <- function(loss) {
  if (!is_ag_tensor(loss)) stop("backward() requires an ag_tensor", call. = FALSE)
  invisible(.Call(R_pg_backward_env, loss))
}
