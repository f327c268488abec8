# Losses, gradients and the f32 Adam step at saturated, special and extreme values (issue 28);
# tests/core/test_extremes.py checks the same in Python and against PyTorch.
grad_at <- function(f, x, dtype = "f64") {
  t <- ag_param(x, dtype = dtype)
  with_grad_tape(l <- f(t))
  g <- backward(l)
  list(loss = l$data[1, 1], grad = get0(as.character(t$id), envir = g, inherits = FALSE))
}

test_that("an f32 Adam step forms 1 - beta in double: the first step is lr", {
  w <- ag_param(matrix(0), dtype = "f32")
  opt <- optimizer_adam(list(w = w), lr = 1)
  with_grad_tape(l <- ag_sum(w))
  opt$step(backward(l))
  expect_lte(abs(w$data[1, 1] + 1), 1.2e-7) # was -1.0000067
})

test_that("softmax cross-entropy is the exact log-sum-exp, not capped at -log(1e-7)", {
  for (dt in c("f32", "f64")) {
    r <- grad_at(function(t) ag_softmax_cross_entropy_loss(t, 1L), matrix(c(50, 0), 2), dt)
    expect_equal(r$loss, 50, tolerance = 1e-7, info = dt) # ggmlR 0.8.6: 16.118
    p1 <- exp(-50) / (1 + exp(-50))
    expect_equal(r$grad, matrix(c(1 - p1, p1 - 1), 2), tolerance = 1e-6, info = dt)
  }
  z <- matrix(c(300, -400, 0, -7, 5, 1000, 0, 0, 0), 3)
  r <- grad_at(function(t) ag_softmax_cross_entropy_loss(t, c(1L, 0L, 2L)), z)
  expect_equal(r$loss, (700 + 1007 + log(3)) / 3, tolerance = 1e-15)
})

test_that("unnormalised soft targets get the derivative of the loss reported", {
  z <- matrix(c(0.3, -1.2, 0.8, 2.0, 0.1, -0.4, 1.5, 0.0, -2.0, 0.7, 0.2, 0.9), 4)
  tg <- matrix(c(0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.1, 0.2, 0.05, 0.15), 4) # sums 0, 2, 0.5
  r <- grad_at(function(t) ag_softmax_cross_entropy_loss(t, tg), z)
  p <- apply(z, 2, function(v) exp(v - max(v)) / sum(exp(v - max(v))))
  expect_equal(r$grad, sweep(p, 2, colSums(tg), `*`) / 3 - tg / 3, tolerance = 1e-14)
  expect_identical(r$grad[, 1], rep(0, 4)) # a masked column neither costs nor pulls
  ce <- function(ins) ag_softmax_cross_entropy_loss(ins[[1]], tg)
  expect_true(ag_gradcheck(ce, list(ag_param(z))))
})

test_that("cross-entropy's gradient is 0 where its clamp holds p", {
  p <- matrix(c(1e-9, 1, 0.3, 0.7), 2)
  tg <- matrix(c(1, 0, 0, 1), 2)
  r <- grad_at(function(t) ag_cross_entropy_loss(t, tg), p)
  expect_equal(r$loss, (-log(1e-7) - log(0.7)) / 2, tolerance = 1e-15)
  expect_identical(r$grad[, 1], c(0, 0)) # ggmlR 0.8.6: -5e6 there
  expect_equal(r$grad[2, 2], -1 / 0.7 / 2, tolerance = 1e-15)
})

test_that("gradients at extreme magnitudes and NaN follow PyTorch", {
  local_f64()
  b <- ag_param(matrix(c(1e160, 1e-160), 1))
  with_grad_tape(l <- ag_sum(ag_div(ag_tensor(matrix(c(1e300, 1e-300), 1)), b)))
  expect_equal(gradof(backward(l), b), matrix(c(-1e-20, -1e20), 1), tolerance = 1e-15)
  r <- grad_at(function(t) ag_sum(ag_relu(t)), matrix(c(NaN, -1, 0, 2), 1))
  expect_identical(r$grad, matrix(c(1, 0, 0, 1), 1)) # NaN passes its gradient
  for (p in c(0.5, 1.5, -0.5)) { # R's own `^` is the reference, as in ggmlR
    x <- c(-0, -Inf, -4, 4, Inf)
    expect_identical(as.vector(ag_pow(ag_tensor(matrix(x, 1)), p)$data), x^p, info = p)
  }
})

test_that("ag_fit never diverges silently: a NaN or Inf epoch loss warns and stops", {
  set.seed(0)
  x <- matrix(rnorm(3 * 40), 3, 40)
  y <- x[1L, , drop = FALSE] * 2
  model <- function() {
    ggml_set_seed(0)
    ag_sequential(ag_linear(3, 4, activation = "relu"), ag_linear(4, 1))
  }
  fit <- function(...) ag_fit(model(), loss = "mse", nepoch = 10L, batch_size = 8L,
                              silent = TRUE, shuffle = FALSE, ...)
  expect_warning(h <- fit(x, y, optimizer = "sgd", lr = 1e20),
                 "^ag_fit: the training loss of epoch 1 is",
                 class = "pyggmlr_nonfinite_loss_warning")
  expect_identical(h$stopped_epoch, 1L)
  expect_length(h$loss, 1L)
  expect_no_warning(h <- fit(x, y, optimizer = "sgd", lr = 0.01))
  expect_length(h$loss, 10L)
  xn <- x  # non-finite data are refused before training (pg_fit_new), naming the first one
  xn[2L, 6L] <- NaN
  expect_error(fit(xn, y),
               "^ag_fit: x has 1 non-finite value \\(NaN or Inf\\), the first at row 2, column 6;",
               class = "pyggmlr_value_error")
  expect_warning(fit(x, y, validation_data = list(x[, 1:8] * 1e30, y[, 1:8, drop = FALSE])),
                 "validation loss of epoch 1 is Inf.*scale x and y",
                 class = "pyggmlr_nonfinite_loss_warning")
})
