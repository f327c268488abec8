# The package's draws go through the core's copy of R's generator; these tests hold it to R's
# own generator bit for bit (identical()), and check that R and the package share one stream.

runif_c <- pyggmlr:::.rng_runif
rnorm_c <- pyggmlr:::.rng_rnorm
sample_c <- pyggmlr:::.rng_sample_int
SEEDS <- c(0L, 1L, -1L, .Machine$integer.max, 42L)

# core draw and R's draw after the same seed: same values, and the same stream left behind
same_draw <- function(seed, core, base) {
  set.seed(seed)
  a <- core
  sa <- .Random.seed  # nolint: object_usage_linter.
  set.seed(seed)
  b <- base
  sb <- .Random.seed  # nolint: object_usage_linter.
  expect_identical(a, b)  # nolint: object_usage_linter.
  expect_identical(sa, sb)  # nolint: object_usage_linter.
}

test_that("uniforms equal R's runif bit for bit (10^6 draws, recycling, degenerate args)", {
  for (s in SEEDS) {
    same_draw(s, runif_c(1e6), runif(1e6))
    same_draw(s, runif_c(1e5, -2, 3), runif(1e5, -2, 3))
  }
  same_draw(7, runif_c(1001, c(0, 10, -5), c(11, 20)), runif(1001, c(0, 10, -5), c(11, 20)))
  same_draw(7, runif_c(c(5, 5, 5)), runif(c(5, 5, 5)))            # length(n) > 1: that many
  same_draw(7, runif_c(6, 2, 2), runif(6, 2, 2))                   # min == max: no draw
  same_draw(7, runif_c(0), runif(0))
  same_draw(7, runif_c(4, 1L, 3L), runif(4, 1L, 3L))
  # non-finite or reversed bounds: NaN with R's warning, the others still drawn
  expect_warning(a <- { set.seed(8); runif_c(5, c(0, -Inf, 1, NA, 0), c(1, 1, 0, 1, 1)) },
                 "NAs produced")
  expect_warning(b <- { set.seed(8); runif(5, c(0, -Inf, 1, NA, 0), c(1, 1, 0, 1, 1)) },
                 "NAs produced")
  expect_identical(a, b)
  expect_warning(a <- runif_c(3, numeric(0)), "NAs produced")
  expect_identical(a, rep(NA_real_, 3))
  expect_error(runif_c(-1), "invalid arguments")
  expect_error(runif_c(2, "a"), "invalid arguments")
})

test_that("normals equal R's rnorm bit for bit (10^5 draws, mean/sd vectors, sd = 0)", {
  for (s in SEEDS) same_draw(s, rnorm_c(1e5), rnorm(1e5))
  same_draw(3, rnorm_c(1e4, c(-1, 0, 5), c(1, 2)), rnorm(1e4, c(-1, 0, 5), c(1, 2)))
  same_draw(3, rnorm_c(10, 2, 0), rnorm(10, 2, 0))
  same_draw(3, rnorm_c(5, c(1, Inf), 1), rnorm(5, c(1, Inf), 1))
  expect_warning(a <- { set.seed(4); rnorm_c(4, 0, c(1, -1)) }, "NAs produced")
  expect_warning(b <- { set.seed(4); rnorm(4, 0, c(1, -1)) }, "NAs produced")
  expect_identical(a, b)
  set.seed(1)
  expect_equal(rnorm_c(4),
               c(-0.626453810742332, 0.183643324222082, -0.835628612410047, 1.59528080213779),
               tolerance = 1e-14)
})

test_that("sample.int equals R's: permutations, replacement, integer/double results, hash path", {
  for (s in SEEDS) {
    for (n in c(1, 2, 3, 10, 1000, 2^16, 2^16 + 1)) {
      same_draw(s, sample_c(n), sample.int(n))
      same_draw(s, sample_c(n, 50, replace = TRUE), sample.int(n, 50, replace = TRUE))
    }
    for (n in c(2^31 - 1, 2^31, 3e9)) {
      same_draw(s, sample_c(n, 20, replace = TRUE), sample.int(n, 20, replace = TRUE))
      same_draw(s, sample_c(n, 7), sample.int(n, 7))                 # hashed, no replacement
    }
    same_draw(s, sample_c(1e7 + 1, 5), sample.int(1e7 + 1, 5))      # hash path by default
    same_draw(s, sample_c(1e7 + 1, 5, useHash = FALSE), sample.int(1e7 + 1, 5, useHash = FALSE))
    same_draw(s, sample_c(1000, 10, useHash = TRUE), sample.int(1000, 10, useHash = TRUE))
  }
  expect_type(sample_c(2^31 - 1, 3, replace = TRUE), "integer")
  expect_type(sample_c(2^31, 3, replace = TRUE), "double")
  expect_type(sample_c(3e9, 3), "double")
  expect_identical(sample_c(0), integer(0))
  set.seed(42)
  expect_identical(sample_c(10), c(1L, 5L, 10L, 8L, 2L, 4L, 6L, 9L, 7L, 3L))
})

test_that("weighted sample.int equals R's (sorted weights, Walker alias, no replacement, ties)", {
  w_small <- c(3, 1, 2, 2, 0, 5, 1, 1, 4, 2)                       # ties and a zero
  w_big <- rep(c(1, 2, 2, 3, 0.5), 60)                              # 300 weights: Walker's alias
  for (s in SEEDS) {
    same_draw(s, sample_c(10, 500, TRUE, w_small), sample.int(10, 500, TRUE, w_small))
    same_draw(s, sample_c(10, 9, FALSE, w_small), sample.int(10, 9, FALSE, w_small))
    same_draw(s, sample_c(300, 2000, TRUE, w_big), sample.int(300, 2000, TRUE, w_big))
    same_draw(s, sample_c(300, 120, FALSE, w_big), sample.int(300, 120, FALSE, w_big))
    same_draw(s, sample_c(300, 2000, TRUE, 1:300), sample.int(300, 2000, TRUE, 1:300))
  }
  expect_type(sample_c(10, 3, TRUE, w_small), "integer")
})

test_that("bad sample arguments give R's messages as R errors", {
  expect_error(sample_c(5, 10),
               "cannot take a sample larger than the population when 'replace = FALSE'")
  expect_error(sample_c(5, 2, prob = 1:4), "incorrect number of probabilities")
  expect_error(sample_c(3, 2, TRUE, c(1, -1, 1)), "negative probability")
  expect_error(sample_c(3, 2, TRUE, c(1, NA, 1)), "NA in probability vector")
  expect_error(sample_c(3, 3, FALSE, c(1, 0, 1)), "too few positive probabilities")
  expect_error(sample_c(Inf, 1, replace = TRUE), "invalid first argument")
  expect_error(sample_c(5, -1), "invalid 'size' argument")
  expect_error(sample_c(5, 2, replace = NA), "invalid 'replace' argument")
  expect_error(sample_c(5, 2, useHash = TRUE, replace = TRUE))     # stopifnot, as sample.int
  # draws too large for memory fail (an R error, not an OOM kill of the session)
  expect_error(pyggmlr:::.rng_runif(1e15),
               "runif: .* GiB needed, more than the .* GiB of memory available")
  expect_error(sample_c(4e15, 3, useHash = FALSE), "the pool of a sample without replacement")
  expect_error(sample_c(4e9, 1e6, useHash = FALSE),
               "the pool of a sample without replacement, and the result")
  expect_error(ag_linear(60000, 60000, init = "orthogonal"), "orthogonal init\\): .* GiB needed")
  expect_error(ag_linear(1e6, 1e6), "GiB needed")
  # a failed call leaves the stream where it was
  set.seed(9)
  r0 <- .Random.seed
  try(sample_c(5, 10), silent = TRUE)
  try(pyggmlr:::.rng_runif(1e15), silent = TRUE)
  expect_identical(.Random.seed, r0)
})

test_that("one stream: R's runif continues after a core draw, and the core after R's", {
  set.seed(3)
  a <- c(runif_c(5), runif(5))
  set.seed(3)
  expect_identical(a, runif(10))
  set.seed(3)
  a <- c(runif(5), runif_c(5), sample(4), sample_c(4), rnorm_c(2), rnorm(2))
  set.seed(3)
  expect_identical(a, c(runif(5), runif(5), sample(4), sample(4), rnorm(2), rnorm(2)))
  # no .Random.seed yet: R seeds itself and the draw continues that stream
  if (exists(".Random.seed", envir = globalenv())) rm(".Random.seed", envir = globalenv())
  runif_c(1)
  expect_true(exists(".Random.seed", envir = globalenv()))
  r0 <- .Random.seed
  a <- runif_c(3)
  assign(".Random.seed", r0, envir = globalenv())
  expect_identical(a, runif(3))
})

test_that("another RNGkind falls back to R's own generator", {
  on.exit(RNGkind("default", "default", "default"), add = TRUE)
  RNGkind("Wichmann-Hill")
  same_draw(11, runif_c(1000), runif(1000))
  same_draw(11, rnorm_c(1000), rnorm(1000))
  same_draw(11, sample_c(50), sample.int(50))
  same_draw(11, sample_c(20, 30, TRUE, 1:20), sample.int(20, 30, TRUE, 1:20))
  RNGkind("Mersenne-Twister", "Box-Muller")
  same_draw(12, rnorm_c(101), rnorm(101))
  suppressWarnings(RNGkind("default", "default", "Rounding"))
  same_draw(13, sample_c(100), sample.int(100))
  RNGkind("default", "default", "default")
  same_draw(14, runif_c(10), runif(10))
  expect_identical(.Random.seed[1L], 10403L)
})

test_that("run streams: seeded as set.seed, .Random.seed untouched, restored on exit", {
  set.seed(1)
  r0 <- .Random.seed
  s <- pyggmlr:::.rng_stream(7)
  x <- pyggmlr:::.with_stream(s, c(sample_c(10), runif_c(3)))
  expect_identical(.Random.seed, r0)
  set.seed(7)
  expect_identical(x, c(sample.int(10), runif(3)))
  expect_null(.Call(pyggmlr:::R_pg_rng_current))
  expect_error(pyggmlr:::.with_stream(s, stop("boom")), "boom")
  expect_null(.Call(pyggmlr:::R_pg_rng_current))
  # state round trip: a stream's state is a .Random.seed
  set.seed(7)
  sample.int(10)
  runif(3)
  expect_identical(.Call(pyggmlr:::R_pg_rng_get_state, s), .Random.seed)
  .Call(pyggmlr:::R_pg_rng_set_state, s, r0)
  expect_identical(pyggmlr:::.with_stream(s, runif_c(4)), { set.seed(1); runif(4) })
  expect_error(.Call(pyggmlr:::R_pg_rng_set_state, s, 1:10), "626")
  expect_error(pyggmlr:::.rng_stream(NA), "not a valid integer")
})

test_that("layers draw ggmlR's calls from R's stream (glorot, orthogonal, embedding, attention)", {
  local_f64()
  set.seed(1)
  runif(3)
  W <- ag_linear(4, 2)$W$data
  set.seed(1)
  runif(3)
  a <- sqrt(6 / 6)
  expect_identical(W, matrix(runif(8, -a, a), 2, 4))
  set.seed(1)
  W <- ag_linear(3, 2, init = "orthogonal")$W$data
  gold <- rbind(c(-0.5907722096, 0.1731833546, -0.7880328179),
                c(0.8042142009, 0.2051024658, -0.5578283765))
  expect_equal(W, gold, tolerance = 1e-9)
  expect_equal(W %*% t(W), diag(2), tolerance = 1e-12)
  set.seed(1)
  expect_identical(ag_linear(2, 3, init = "orthogonal")$W$data, t(W))
  set.seed(1)
  ag_linear(3, 2, init = "orthogonal")
  x <- runif(2)
  set.seed(1)
  rnorm(6)
  expect_identical(x, runif(2))             # one rnorm(max * min)
  set.seed(2)
  E <- ag_embedding(5, 3)$weight$data
  set.seed(2)
  expect_identical(E, matrix(runif(15, -sqrt(1 / 5), sqrt(1 / 5)), 3, 5))
  set.seed(3)
  m <- ag_multihead_attention(4, 2)
  set.seed(3)
  a <- sqrt(6 / 8)
  for (nm in c("W_q", "W_k", "W_v", "W_o")) expect_identical(m[[nm]]$data,
                                                             matrix(runif(16, -a, a), 4, 4))
})

test_that("dropout masks are (runif(n) > rate) / (1 - rate), attention's drawn transposed", {
  local_f64()
  x <- ag_tensor(matrix(1, 3, 4))
  set.seed(5)
  m <- pyggmlr:::.dropout_mul(x, 0.3)$data
  set.seed(5)
  expect_identical(m, matrix((runif(12) > 0.3) / 0.7, 3, 4))
  set.seed(5)
  m <- pyggmlr:::.dropout_mul(x, 0.3, transpose = TRUE)$data
  set.seed(5)
  expect_identical(m, t(matrix((runif(12) > 0.3) / 0.7, 4, 3)))
  d <- ag_dropout(0.5)
  ag_train(d)
  set.seed(6)
  y <- d$forward(ag_tensor(matrix(2, 2, 5)))$data
  set.seed(6)
  expect_identical(y, 2 * matrix((runif(10) > 0.5) / 0.5, 2, 5))
  # one op on the tape; its gradient is g * mask
  x <- ag_param(matrix(1:12, 3, 4))
  w <- matrix(seq(-1, 1, length.out = 12), 3, 4)
  set.seed(5)
  with_grad_tape({ y <- ag_dropout(0.4)$forward(x); loss <- ag_sum(ag_mul(y, w)) })
  g <- backward(loss)
  set.seed(5)
  mask <- matrix((runif(12) > 0.4) / 0.6, 3, 4)
  expect_identical(y$data, matrix(1:12, 3, 4) * mask)
  expect_identical(x$grad, w * mask)
  expect_error(pyggmlr:::.dropout_mul(x, 1), "ag_dropout: rate must be in \\[0, 1\\)")
})

test_that("dataloader: reset() draws sample(n); with seed, from a stream of its own", {
  x <- matrix(as.double(1:40), 2, 20)
  set.seed(4)
  dl <- ag_dataloader(x, batch_size = 5)
  set.seed(4)
  expect_identical(dl$order, sample(20))
  set.seed(4)
  dl <- ag_dataloader(x, batch_size = 5)
  dl$reset()
  set.seed(4)
  sample(20)
  expect_identical(dl$order, sample(20))
  set.seed(1)
  r0 <- .Random.seed
  dl <- ag_dataloader(x, batch_size = 5, seed = 7)
  o1 <- dl$order
  dl$reset()
  o2 <- dl$order
  expect_identical(.Random.seed, r0)
  set.seed(7)
  expect_identical(list(o1, o2), list(sample(20), sample(20)))
  expect_error(ag_dataloader(x, seed = c(1, 2)), "`seed` must be a single non-NA integer")
})

fit_run <- function(seed, static, ...) {
  set.seed(100)
  m <- ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.2), ag_linear(8, 3))
  x <- t(scale(as.matrix(iris[, 1:4])))
  h <- ag_fit(m, x, iris$Species, nepoch = 3, batch_size = 10, val_split = 0.2, seed = seed,
              lr = 0.01,
              silent = TRUE, static = static, ...)
  h$time_train <- h$time_val <- NULL
  list(h = unclass(h), w = lapply(m$parameters(), function(p) p$data))
}

test_that("ag_fit(seed =) runs on its own stream: reproducible, .Random.seed unchanged", {
  for (static in c(FALSE, TRUE)) {
    set.seed(2)
    a <- fit_run(5, static)
    r_a <- .Random.seed
    b <- fit_run(5, static)
    expect_identical(a, b)
    set.seed(100)
    m <- ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.2), ag_linear(8, 3))
    expect_identical(r_a, .Random.seed)                             # fit drew nothing from R's
    # the same run on R's stream after set.seed(5) draws the same numbers
    c5 <- local({
      set.seed(100)
      m <- ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.2), ag_linear(8, 3))
      set.seed(5)
      h <- ag_fit(m, t(scale(as.matrix(iris[, 1:4]))), iris$Species, nepoch = 3, batch_size = 10,
                  val_split = 0.2, lr = 0.01, silent = TRUE, static = static)
      h$time_train <- h$time_val <- NULL
      list(h = unclass(h), w = lapply(m$parameters(), function(p) p$data))
    })
    expect_identical(a, c5)
  }
  expect_identical(fit_run(5, FALSE), fit_run(5, TRUE))              # static replay = eager
  expect_null(.Call(pyggmlr:::R_pg_rng_current))
})

test_that("ggml_set_seed: NULL no-op, one integer seeds R's stream, else an error", {
  set.seed(3)
  r0 <- .Random.seed
  expect_null(ggml_set_seed(NULL))
  expect_identical(.Random.seed, r0)
  expect_invisible(ggml_set_seed(1L))
  expect_identical(ggml_set_seed(3.9), 3L)
  a <- runif_c(3)
  set.seed(3)
  expect_identical(a, runif(3))
  expect_error(ggml_set_seed(c(1L, 2L)), "`seed` must be a single non-NA integer (or NULL).",
               fixed = TRUE)
  expect_error(ggml_set_seed(NA_integer_), "single")
  expect_error(suppressWarnings(ggml_set_seed("a")), "supplied seed is not a valid integer")
})
