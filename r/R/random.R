# Every random draw of the package goes through the core's copy of R's generator (src/r_rng.c).
# It reads and writes .Random.seed around each draw, so set.seed(), ggml_set_seed(), runif() and
# the package share ONE stream, as in ggmlR; a run stream (ag_fit(seed =)) is drawn from instead.

.rng_runif <- function(n, min = 0, max = 1) .Call(R_pg_rng_runif, n, min, max)

.rng_rnorm <- function(n, mean = 0, sd = 1) .Call(R_pg_rng_rnorm, n, mean, sd)

# sample.int() with R's signature and defaults (R >= 3.6)
.rng_sample_int <- function(n, size = n, replace = FALSE, prob = NULL,
                            useHash = (n > 1e7 && !replace && is.null(prob) && size <= n / 2)) {
  stopifnot(length(n) == 1L)
  if (useHash) stopifnot(is.null(prob), !replace)
  .Call(R_pg_rng_sample, n, size, replace, prob, useHash)
}

# A run stream seeded as set.seed(seed) seeds R's (NULL: from the clock).
.rng_stream <- function(seed = NULL) .Call(R_pg_rng_new, seed)

# Evaluate expr with `stream` as the current stream (NULL: leave the current one), restored on exit.
.with_stream <- function(stream, expr) {
  if (is.null(stream)) return(expr)
  .Call(R_pg_scoped, .pg$code$scoped[["STREAM"]], stream, quote(expr), environment())  # r_scope.c
}

# A seed argument as an integer (NULL stays NULL); `what` names it in the error.
.seed_int <- function(seed, what = "`seed`") {
  if (is.null(seed)) return(NULL)
  if (length(seed) != 1L || is.na(seed))
    stop(sprintf("%s must be a single non-NA integer (or NULL).", what), call. = FALSE)
  s <- as.integer(seed)
  if (is.na(s)) stop("supplied seed is not a valid integer", call. = FALSE)
  s
}
