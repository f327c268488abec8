# ggmlR 0.8.6 selection and sampling ops (spec §2.1-2.6, draws §12): golden values in f64 at 1e-9,
# ggmlR's messages in its order, and the draws R's own runif/rnorm would make.

nodes <- function() ag_tape_memory(quiet = TRUE)$nodes
# .Random.seed after set.seed(s) and then `draw` (evaluated lazily, after the seed)
# nolint start: object_usage_linter.
seed_after <- function(s, draw) { set.seed(s); force(draw); .Random.seed }
# nolint end

test_that("ag_argmax: first index on ties, NaN/NA as -Inf, +Inf wins, empty column 0", {
  local_f64()
  expect_identical(ag_argmax(matrix(c(1, 3, 3, 5, 2, 5), 3, 2)), c(1L, 0L))
  expect_identical(ag_argmax(ag_tensor(matrix(c(1, 3, 3, 5, 2, 5), 3, 2))), c(1L, 0L))
  x <- matrix(c(NaN, 2, 1,  -Inf, -Inf, -Inf,  NaN, -Inf, NaN,  1, Inf, Inf,  NA, 0, 0,  -1e4, 1e4,
                1e4), 3)
  expect_identical(ag_argmax(x), c(1L, 0L, 0L, 1L, 1L, 1L))
  expect_identical(ag_argmax(c(0.5, 2, -1)), 1L)                 # a vector is one column
  expect_identical(ag_argmax(matrix(c(1L, NA, 7L, 7L), 2)), c(0L, 0L))
  # f64 default: no rounding to a tie
  expect_identical(ag_argmax(matrix(c(1, 1 + 1e-12), 2)), 1L)
  # against R's own max.col over sizes 1..1000, with ties, NaN and -Inf mixed in
  set.seed(3)
  s0 <- .Random.seed
  for (n in c(1:20, 50, 127, 128, 129, 500, 999, 1000)) {
    x <- matrix(round(rnorm(n * 7), 1), n, 7)
    x[sample.int(n * 7, n)] <- NaN
    x[sample.int(n * 7, n)] <- -Inf
    x[, 7] <- -Inf
    ref <- x
    ref[is.nan(ref)] <- -Inf
    want <- max.col(t(ref), "first") - 1L
    want[apply(ref, 2, function(v) all(v == -Inf))] <- 0L
    expect_identical(ag_argmax(x), as.integer(want))
  }
  s1 <- .Random.seed
  with_grad_tape({ n0 <- nodes(); ag_argmax(ag_param(matrix(1:6, 3))); n1 <- nodes() })
  expect_identical(n1, n0)                                         # records nothing
  expect_identical(.Random.seed, s1)                               # draws nothing
})

test_that("ag_log_softmax: golden values and gradient", {
  local_f64()
  x <- ag_param(matrix(c(1, 2, 3, 0, -1e4, 0), 3, 2))
  W <- matrix(c(1, 0, 0, 0, 0.5, 0.5), 3, 2)
  with_grad_tape(y <- ag_log_softmax(x))
  expect_equal(y$data, rbind(c(-2.4076059644, -0.6931471806), c(-1.4076059644, -10000.6931471806),
                            c(-0.4076059644, -0.6931471806)), tolerance = 1e-9)
  expect_true(isTRUE(y$requires_grad))
  expect_false(isTRUE(ag_log_softmax(matrix(1:3))$requires_grad))
  with_grad_tape(l <- ag_sum(ag_mul(ag_log_softmax(x), W)))
  g <- backward(l)
  expect_equal(gradof(g, x),
               rbind(c(0.9099694268, -0.5), c(-0.2447284711, 0.5), c(-0.6652409558, 0)),
               tolerance = 1e-9)
  expect_equal(colSums(exp(ag_log_softmax(matrix(c(3, -2, 0.5, 1e3, 1e3 + 1, -1e3), 3))$data)),
               c(1, 1),
               tolerance = 1e-12)
  expect_equal(ag_log_softmax(matrix(c(5, -7), 1))$data, matrix(0, 1, 2))   # one row
  # masking: -1e4 stays finite (an all-masked column is uniform); -Inf gives -Inf, all -Inf NaN
  y <- ag_log_softmax(matrix(c(0, -Inf, 1, -Inf, -Inf, -Inf, -1e4, -1e4, -1e4), 3))$data
  expect_equal(y[, 1], c(-log1p(exp(1)), -Inf, 1 - log1p(exp(1))), tolerance = 1e-12)
  expect_true(all(is.nan(y[, 2])))
  expect_equal(y[, 3], rep(-log(3), 3), tolerance = 1e-12)
})

test_that("ag_log_softmax backward matches central differences (h 1e-6, tol 1e-6)", {
  local_f64()
  set.seed(11)
  x0 <- matrix(rnorm(15), 5, 3)
  W <- matrix(rnorm(15), 5, 3)
  f <- function(m) sum(W * ag_log_softmax(m)$data)
  x <- ag_param(x0)
  with_grad_tape(l <- ag_sum(ag_mul(ag_log_softmax(x), W)))
  an <- gradof(backward(l), x)
  h <- 1e-6
  num <- x0
  for (i in seq_along(x0)) {
    p <- x0
    p[i] <- p[i] + h
    m <- x0
    m[i] <- m[i] - h
    num[i] <- (f(p) - f(m)) / (2 * h)
  }
  expect_lt(max(abs(an - num)), 1e-6)
})

test_that("ag_gather: golden values, gradient at the picked entries, ggmlR's checks in order", {
  local_f64()
  m <- matrix(c(1, 5, 5, -2, 0, 7, 4, 4, 4, -1e4, 3, -1e4), 3, 4)
  idx <- c(2, 0, 1, 1)
  expect_equal(ag_gather(m, idx)$data, matrix(c(5, -2, 4, 3), 1, 4), tolerance = 1e-9)
  expect_equal(ag_gather(m, as.integer(idx))$data, matrix(c(5, -2, 4, 3), 1, 4))
  x <- ag_param(m)
  w <- c(0.5, -1, 2, 3)
  with_grad_tape(l <- ag_sum(ag_mul(ag_gather(x, idx), matrix(w, 1, 4))))
  want <- matrix(0, 3, 4)
  want[cbind(idx + 1, 1:4)] <- w
  expect_equal(gradof(backward(l), x), want, tolerance = 1e-9)
  x2 <- matrix(1:6, 3, 2)
  expect_error(ag_gather(x2, c(TRUE, FALSE)),
               "^ag_gather: index must be numeric \\(0-based integers\\)$")
  expect_error(ag_gather(x2, c("0", "1")), "index must be numeric", fixed = TRUE)
  expect_error(ag_gather(x2, "0"), "index must be numeric", fixed = TRUE)          # 1 before 2
  expect_error(ag_gather(x2, 1), "ag_gather: index has length 1, x has 2 columns", fixed = TRUE)
  # 3 before 4
  expect_error(ag_gather(x2, c(NA, 9.5)), "ag_gather: index contains NA", fixed = TRUE)
  expect_error(ag_gather(x2, c(0.5, 9)), "ag_gather: index must be whole numbers (0-based)",
               fixed = TRUE)
  expect_error(ag_gather(x2, c(3, 0)), "ag_gather: index out of range 0..2 (indices are 0-based)",
               fixed = TRUE)
  expect_error(ag_gather(x2, c(0, -1)), "out of range 0..2", fixed = TRUE)
  expect_error(ag_gather(x2, c(0, 1e300)), "out of range 0..2", fixed = TRUE)
  expect_error(ag_gather(ag_tensor(x2), 1:3), "index has length 3, x has 2 columns", fixed = TRUE)
  cnd <- tryCatch(ag_gather(x2, 1), error = identity)
  expect_null(conditionCall(cnd))                                  # no call in the message
})

test_that("ag_max: golden values and the whole gradient on the first maximum", {
  local_f64()
  m <- matrix(c(1, 5, 5, -2, 0, 7, 4, 4, 4, -1e4, 3, -1e4), 3, 4)
  expect_identical(ag_argmax(m), c(1L, 2L, 0L, 1L))
  expect_equal(ag_max(m)$data, matrix(c(5, 7, 4, 3), 1, 4), tolerance = 1e-9)
  x <- ag_param(m)
  with_grad_tape(l <- ag_sum(ag_max(x)))
  want <- matrix(0, 3, 4)
  want[cbind(c(2, 3, 1, 2), 1:4)] <- 1
  expect_equal(gradof(backward(l), x), want, tolerance = 1e-9)
})

test_that("ag_sample_categorical: goldens, one runif(n * batch), masked entries never drawn", {
  local_f64()
  x1 <- matrix(c(0, 0, -1e4, 5, 0, 0), 3, 2)
  set.seed(1)
  expect_identical(ag_sample_categorical(x1), c(1L, 0L))
  expect_identical(.Random.seed, seed_after(1, runif(6)))
  x2 <- matrix(c(1, 0, -1, 2), 4, 5)
  set.seed(42)
  expect_identical(ag_sample_categorical(x2), c(3L, 0L, 3L, 3L, 0L))
  expect_identical(.Random.seed, seed_after(42, runif(20)))
  set.seed(42)
  expect_identical(ag_sample_categorical(ag_tensor(x2)), c(3L, 0L, 3L, 3L, 0L))
  # the Gumbel-max rule on R's own uniforms, column by column
  set.seed(5)
  got <- ag_sample_categorical(x2)
  set.seed(5)
  u <- matrix(runif(20), 4, 5)
  expect_identical(got, as.integer(max.col(t(x2 - log(-log(u))), "first") - 1L))
  # masked by -1e4: never drawn while one entry is unmasked
  xm <- matrix(c(-1e4, 0.3, -1e4, -1e4, 0, 1.5), 3, 200)
  set.seed(9)
  d <- ag_sample_categorical(xm)
  expect_true(all(d[c(TRUE, FALSE)] == 1L))
  expect_true(all(d[c(FALSE, TRUE)] %in% c(1L, 2L)))
  # frequencies within 4 standard errors for 20000 draws
  logits <- c(0.5, -1, 2, 0, 1)
  p <- exp(logits) / sum(exp(logits))
  set.seed(42)
  d <- ag_sample_categorical(matrix(logits, 5, 20000))
  f <- tabulate(d + 1L, 5) / 20000
  expect_true(all(abs(f - p) < 4 * sqrt(p * (1 - p) / 20000)))
  # reproducible; not differentiable and no tape node
  set.seed(42)
  expect_identical(ag_sample_categorical(matrix(logits, 5, 20000)), d)
  with_grad_tape({ n0 <- nodes(); ag_sample_categorical(ag_param(x2)); n1 <- nodes() })
  expect_identical(n1, n0)
})

test_that("ag_sample_normal: golden, gradients, shape error draws nothing, f32", {
  local_f64()
  set.seed(1)
  out <- ag_sample_normal(matrix(0, 2, 3), matrix(log(0.5), 2, 1))
  eps <- rbind(c(-0.6264538107, -0.8356286124, 0.3295077718),
               c(0.1836433242, 1.5952808021, -0.8204683841))
  expect_equal(out$data, 0.5 * eps, tolerance = 1e-9)
  expect_equal(out$data, rbind(c(-0.3132269054, -0.4178143062, 0.1647538859),
                              c(0.0918216621, 0.7976404011, -0.4102341921)), tolerance = 1e-9)
  expect_identical(.Random.seed, seed_after(1, rnorm(6)))
  # d mu = 1, d log_std = rowSums(eps) with log_std = 0 and loss sum(out)
  mu <- ag_param(matrix(c(1, -2, 3, 0.5, 0, 4), 2, 3))
  ls <- ag_param(matrix(0, 2, 1))
  set.seed(7)
  with_grad_tape(l <- ag_sum(ag_sample_normal(mu, ls)))
  set.seed(7)
  e <- matrix(rnorm(6), 2, 3)
  g <- backward(l)
  expect_equal(gradof(g, mu), matrix(1, 2, 3), tolerance = 1e-9)
  expect_equal(gradof(g, ls), matrix(rowSums(e), 2, 1), tolerance = 1e-9)
  # [n, batch] log_std: d log_std = eps * exp(log_std)
  ls2 <- ag_param(matrix(c(0.1, -0.3, 0.2, 0, 0.5, -1), 2, 3))
  set.seed(8)
  with_grad_tape(l2 <- ag_sum(ag_sample_normal(mu, ls2)))
  set.seed(8)
  e2 <- matrix(rnorm(6), 2, 3)
  expect_equal(gradof(backward(l2), ls2), e2 * exp(ls2$data), tolerance = 1e-9)
  # the shape check comes first: nothing drawn
  set.seed(3)
  s3 <- .Random.seed
  expect_error(ag_sample_normal(matrix(0, 2, 3), matrix(0, 3, 1)),
               "ag_sample_normal: log_std is [3, 1], expected [2, 3] or [2, 1]", fixed = TRUE)
  expect_identical(.Random.seed, s3)
  expect_error(ag_sample_normal(ag_tensor(matrix(0, 2, 3)), ag_tensor(matrix(0, 2, 2))),
               "log_std is [2, 2]",
               fixed = TRUE)
  expect_identical(.Random.seed, s3)
  # f32 works too
  ag_dtype("f32")
  set.seed(1)
  o32 <- ag_sample_normal(ag_tensor(matrix(0, 2, 3)), matrix(log(0.5), 2, 1))
  expect_identical(o32$dtype, "f32")
  expect_equal(o32$data, 0.5 * eps, tolerance = 1e-6)
  expect_identical(.Random.seed, seed_after(1, rnorm(6)))
  set.seed(1)
  expect_identical(ag_sample_categorical(ag_tensor(matrix(c(0, 0, -1e4, 5, 0, 0), 3, 2))),
                   c(1L, 0L))
})

test_that("a compiled forward with ag_sample_normal redraws eps from R's stream each replay", {
  local_f64()
  mu <- matrix(c(1, 2, 3, 4), 2, 2)
  ls <- matrix(c(0, -1), 2, 1)
  set.seed(4)
  e1 <- ag_sample_normal(mu, ls)$data
  e2 <- ag_sample_normal(mu, ls)$data
  set.seed(4)
  fw <- ag_compile(function(m) ag_sample_normal(m, ls), ag_tensor(mu), build = "forward")
  expect_equal(fw(mu)$data, e1, tolerance = 1e-12)
  expect_equal(fw(mu)$data, e2, tolerance = 1e-12)
  expect_identical(.Random.seed, seed_after(4, rnorm(8)))
})

test_that("plain numbers of the integer-result ops are read as doubles, as ggmlR ranks them", {
  old <- ag_dtype("f32")
  on.exit(ag_dtype(old), add = TRUE)
  # a tie in f32, not in R's doubles
  expect_identical(ag_argmax(matrix(c(1, 1 + 1e-12), 2, 1)), 1L)
})
