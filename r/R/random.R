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

# Evaluate expr; when it fails, put back the stream it drew from (.rng_save, compile.R): a call
# that fails draws nothing (a model built part-way before a refusal). Python's keep_rng_on_error.
.keep_rng_on_error <- function(expr) {
  saved <- .rng_save()
  done <- FALSE
  on.exit(if (!done) .rng_restore(saved))
  value <- expr
  done <- TRUE
  value
}

# A run stream seeded as set.seed(seed) seeds R's (NULL: from the clock).
.rng_stream <- function(seed = NULL) .Call(R_pg_rng_new, seed)

# Evaluate expr with `stream` as the current stream (NULL: leave the current one), restored on exit.
.with_stream <- function(stream, expr) {
  if (is.null(stream)) return(expr)
  .Call(R_pg_scoped, .pg$code$scoped[["STREAM"]], stream, quote(expr), environment())  # r_scope.c
}

# A seed argument as an integer (NULL stays NULL), as ggmlR's as.integer(): 1.5 -> 1, "42" -> 42;
# `fn` names the function in the error. The rule and its texts are the core's (pg_seed_parse, as
# Python's): R only says what it got (one number, one string, or something else).
.seed_int <- function(seed, fn, arg = "`seed`") {
  if (is.null(seed)) return(NULL)
  one <- (is.numeric(seed) || is.character(seed)) && !is.factor(seed) && length(seed) == 1L &&
    length(dim(seed)) <= 1L
  str <- one && is.character(seed) && !is.na(seed)
  kind <- .pg$code$seed[[if (!one) "OTHER" else if (str) "STRING" else "NUMBER"]]
  shown <- if (!one || (is.na(seed) && !is.nan(seed))) .arg_show(seed)  # NA, not NaN
  # a plain number converts without a warning (suppressWarnings costs more than the rest)
  num <- if (!one || str) NaN else if (is.numeric(seed) && !is.object(seed)) as.double(seed)
         else suppressWarnings(as.double(seed))
  .Call(R_pg_seed_parse, fn, arg, kind, num,
        if (str) enc2utf8(seed), shown)
}
