# Gradient checkpointing (ggmlR 0.8.5): ag_checkpoint(fn, ...) runs fn(...) without recording and
# replays it in backward() on the core's host node (src/r_host.c, native/host.c). The core walks
# the replay into backward()'s own gradients, so the caller's inputs and the segment's
# parameters get the plain tape's gradients, in the returned environment and in $grad.

# The state of the stream the next draw uses: a run stream (ag_fit(seed =)) or .Random.seed
# (made as a draw would make it, without drawing).
.ckpt_rng_state <- function() {
  s <- .Call(R_pg_rng_current)
  if (!is.null(s)) return(.Call(R_pg_rng_get_state, s))
  .Call(R_pg_ckpt_tape, .pg$code$ckpt[["SEED"]])
  get(".Random.seed", envir = globalenv(), inherits = FALSE)
}

.ckpt_rng_load <- function(state) {
  s <- .Call(R_pg_rng_current)
  if (!is.null(s)) .Call(R_pg_rng_set_state, s, state)
  else assign(".Random.seed", state, envir = globalenv())
  invisible(NULL)
}

ag_checkpoint <- function(fn, ...) {
  # the refusals' texts are the core's (pg_checkpoint_fail), Python's too
  if (missing(fn) || !is.function(fn)) .Call(R_pg_ckpt_fail, NULL, FALSE)
  if (!.Call(R_pg_tape, .pg$code$tape[["ENABLED"]])) return(fn(...))
  args <- list(...)
  handles <- lapply(Filter(is_ag_tensor, args), function(t) t$.ptr)  # the node's inputs, in order
  rng <- .ckpt_rng_state()
  ok <- FALSE
  on.exit(if (!ok) .ckpt_rng_load(rng))   # a failed call leaves the stream where it was
  # fn(...) on an empty tape that records nothing; the caller's tape is given back in C whatever
  # way fn leaves (r_scope.c)
  value <- .Call(R_pg_scoped, .pg$code$scoped[["STASH"]], NULL,
                 quote(do.call(fn, args, quote = TRUE)), environment())
  if (!is_ag_tensor(value)) .Call(R_pg_ckpt_fail, class(value)[1L], FALSE)
  seg <- list2env(list(fn = fn, args = args, rng = rng), parent = emptyenv())
  # called by the core (through src/r_host.c) when backward() reaches the segment's node: fn
  # again, from the forward's random state, on the core's private tape; the caller's state is
  # put back. Its environment holds only the segment.
  seg$replay <- local(function() {
    caller <- .ckpt_rng_state()
    on.exit(.ckpt_rng_load(caller))
    .ckpt_rng_load(seg$rng)
    y <- do.call(seg$fn, seg$args, quote = TRUE)
    if (!is_ag_tensor(y)) .Call(R_pg_ckpt_fail, class(y)[1L], TRUE)
    .Call(R_pg_ckpt_replay, y)
    invisible(NULL)
  }, list2env(list(seg = seg), parent = asNamespace("pyggmlr")))
  out <- .Call(R_pg_ckpt_record, value, unname(handles), seg)
  ok <- TRUE
  out
}
