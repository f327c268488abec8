# ag_normalization (keras3's layer_normalization + adapt): the core's statistics against R's
# scale() (population variance: scale()'s sd times sqrt((n - 1) / n)), the exact backward, the
# buffers in state dicts and model files, ag_fit eager vs compiled, and the classed errors.

norm_data <- function(n = 40L) {
  set.seed(11)
  x <- matrix(rnorm(4L * n), 4L, n) * c(1, 10, 0.1, 3) + c(5, -20, 0.5, 0)
  x
}

test_that("adapt and forward match scale() with the population variance", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  x <- norm_data()
  n <- ncol(x)
  l <- ag_normalization(x)
  expect_equal(drop(l$mean$data), rowMeans(x), tolerance = 1e-13)
  expect_equal(drop(l$variance$data), apply(x, 1L, var) * (n - 1) / n, tolerance = 1e-13)
  ref <- t(scale(t(x))) / sqrt((n - 1) / n)
  attributes(ref) <- list(dim = dim(x))
  expect_equal(l$forward(x)$data, ref, tolerance = 1e-12)
  expect_length(l$parameters(), 0L)
  expect_named(l$buffers(), c("mean", "variance"))
})

test_that("the backward is g / max(sqrt(variance), eps)", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  x <- norm_data(10L)
  l <- ag_normalization(x)
  w <- matrix(seq(-1, 1, length.out = 40L), 4L, 10L)
  xt <- ag_param(x)
  with_grad_tape({
    loss <- ag_sum(l$forward(xt) * ag_tensor(w))
  })
  g <- backward(loss)
  expect_equal(gradof(g, xt), w / sqrt(drop(l$variance$data)), tolerance = 1e-13)
})

test_that("given statistics, a constant feature and the identity", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  l <- ag_normalization(mean = c(1, 2), variance = c(4, 0))
  expect_identical(l$forward(matrix(c(3, 2, -1, 2.5), 2L))$data,
                   matrix(c(1, 0, -1, 0.5 / 1e-7), 2L))
  id <- ag_normalization(features = 3L)
  expect_identical(id$forward(diag(3))$data, diag(3))
  id$adapt(matrix(0:5, 3L))
  expect_identical(drop(id$variance$data), rep(2.25, 3L))
})

test_that("errors are classed and name the function, argument and shapes", {
  x <- matrix(1, 3L, 5L)
  x[2L, 3L] <- NA
  expect_error(ag_normalization(x), class = "pyggmlr_value_error",
               "ag_normalization: x \\[3x5\\] f32 has 1 non-finite value.*row 2, column 3")
  expect_error(ag_normalization(mean = c(0, 0), variance = c(1, 1, 1)),
               class = "pyggmlr_shape_error", "mean has 2 values but variance has 3")
  expect_error(ag_normalization(mean = c(0, 0), variance = c(1, -1)),
               class = "pyggmlr_value_error", "variance must be >= 0, got -1 at feature 2")
  expect_error(ag_normalization(mean = c(0, 0), variance = c(1, 1), features = 3L),
               class = "pyggmlr_shape_error", "have 2 values but x has 3")
  expect_error(ag_normalization(mean = 0), class = "pyggmlr_argument_error",
               "give both mean and variance")
  expect_error(ag_normalization(), class = "pyggmlr_argument_error",
               "give x, mean and variance, or features")
  expect_error(ag_normalization(features = 2L)$forward(matrix(1, 3L, 4L)),
               class = "pyggmlr_shape_error", "expected 2 features \\(rows\\), x is \\[3x4\\]")
})

norm_model <- function(x) {
  set.seed(3)
  ag_sequential(ag_normalization(x), ag_linear(4L, 5L, "relu"), ag_linear(5L, 2L))
}

test_that("state dicts and model files keep the statistics", {
  for (dt in c("f32", "f64")) {
    old <- ag_dtype(dt)
    x <- norm_data()
    m <- norm_model(x)
    sd <- ag_state_dict(m)
    expect_true(all(c("layer1_mean", "layer1_variance") %in% names(sd$buffers)))
    expect_identical(ag_to_config(m)$layers[[1L]],
                     list(type = "normalization", features = 4L, eps = 1e-7))
    f <- tempfile(fileext = ".gguf")
    ag_save_model(m, f)
    m2 <- ag_load_model(f)
    expect_identical(m2$layers[[1L]]$mean$data, m$layers[[1L]]$mean$data)
    expect_identical(m2$layers[[1L]]$variance$data, m$layers[[1L]]$variance$data)
    expect_identical(ag_predict(m2, x), ag_predict(m, x))
    unlink(f)
    ag_dtype(old)
  }
})

test_that("ag_fit trains it eagerly and compiled alike, statistics untouched", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  x <- norm_data(24L)
  set.seed(5)
  y <- matrix(rnorm(48L), 2L)
  runs <- lapply(c(FALSE, TRUE), function(st) {
    m <- norm_model(x)
    before <- m$layers[[1L]]$mean$data
    h <- ag_fit(m, x, y, nepoch = 3L, batch_size = 6L, shuffle = FALSE, static = st,
                silent = TRUE)
    expect_identical(m$layers[[1L]]$mean$data, before)
    list(h$loss, ag_predict(m, x))
  })
  expect_identical(runs[[1L]], runs[[2L]])
})

test_that("the memory estimate of a compiled step with it equals the measured peak", {
  x <- norm_data(32L)
  m <- norm_model(x)
  set.seed(5)
  y <- matrix(rnorm(64L), 2L)
  r <- estimate_and_peak(m, x, y)
  est <- r$est
  expect_equal(est$params, 4 * 5 + 5 + 5 * 2 + 2)  # the statistics are no parameters
  expect_equal(r$peak, est$total - est$weights)
})
