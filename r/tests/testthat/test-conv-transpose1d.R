# ag_conv_transpose1d_op / ag_conv_transpose1d: against a direct scatter in R (torch's
# definition) over stride, padding, output_padding, dilation and groups; gradients by finite
# differences; the layer (init draws, configs, model files, ag_fit static = eager); the classed
# errors with the core's texts in (C, L) terms.

# torch's conv_transpose1d: x array c(N, C, L), w c(C, Co/g, k)
direct_convt1 <- function(x, w, b, s, p, op, d, g) {
  N <- dim(x)[1]; C <- dim(x)[2]; L <- dim(x)[3]
  Cog <- dim(w)[2]; k <- dim(w)[3]; Co <- Cog * g; Cig <- C %/% g
  OL <- (L - 1) * s - 2 * p + d * (k - 1) + op + 1
  out <- array(rep(b, each = N), c(N, Co, OL))
  for (n in seq_len(N)) for (ci in seq_len(C)) for (il in seq_len(L)) {
    gi <- (ci - 1) %/% Cig
    for (oc in seq_len(Cog)) for (kk in seq_len(k)) {
      ol <- (il - 1) * s - p + (kk - 1) * d + 1
      if (ol >= 1 && ol <= OL)
        out[n, gi * Cog + oc, ol] <- out[n, gi * Cog + oc, ol] + x[n, ci, il] * w[ci, oc, kk]
    }
  }
  out
}

cols1 <- function(a) matrix(aperm(a, c(3, 2, 1)), ncol = dim(a)[1])
wmat1 <- function(w) t(matrix(aperm(w, c(3, 2, 1)), ncol = dim(w)[1]))

test_that("ag_conv_transpose1d_op matches the direct scatter", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(1)
  cases <- list(list(C = 1, Co = 2, k = 3, s = 1, p = 0, op = 0, d = 1, g = 1),
                list(C = 2, Co = 4, k = 2, s = 2, p = 1, op = 1, d = 1, g = 2),
                list(C = 3, Co = 3, k = 3, s = 1, p = 2, op = 1, d = 2, g = 3),
                list(C = 2, Co = 2, k = 4, s = 3, p = 1, op = 2, d = 1, g = 1))
  for (cs in cases) {
    x <- array(rnorm(2 * cs$C * 5), c(2, cs$C, 5))
    w <- array(rnorm(cs$C * cs$Co / cs$g * cs$k), c(cs$C, cs$Co / cs$g, cs$k))
    b <- rnorm(cs$Co)
    y <- ag_conv_transpose1d_op(ag_images(x, dtype = "f64"), wmat1(w), matrix(b),
                                stride = cs$s, padding = cs$p, output_padding = cs$op,
                                groups = cs$g, dilation = cs$d)
    ref <- direct_convt1(x, w, b, cs$s, cs$p, cs$op, cs$d, cs$g)
    expect_equal(y$data, cols1(ref), tolerance = 1e-12)
    expect_equal(ag_image_shape(y), c(as.integer(dim(ref)[2]), 1L, as.integer(dim(ref)[3])))
  }
})

test_that("gradients of x, weight and bias pass finite differences", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(2)
  x <- ag_param(matrix(rnorm(2 * 4 * 2), 8, 2))
  w <- ag_param(matrix(rnorm(2 * 2 * 3), 2, 6))
  b <- ag_param(matrix(rnorm(4), 4, 1))
  wt <- ag_tensor(matrix(rnorm(4 * 10 * 2), 40, 2))
  f <- function(i) ag_sum(ag_conv_transpose1d_op(i$x, i$w, i$b, stride = 2, padding = 0,
                                                 output_padding = 1, groups = 2,
                                                 input_shape = c(2, 4)) * wt)
  expect_true(ag_gradcheck(f, list(x = x, w = w, b = b), quiet = TRUE))
})

decoder1 <- function(seed = 11) {
  ggml_set_seed(seed)
  ag_sequential(ag_conv1d(2, 3, 3, stride = 2, padding = 1, input_shape = c(2, 8)),
                ag_conv_transpose1d(3, 2, 3, stride = 2, padding = 1, output_padding = 1,
                                    activation = "tanh"),
                ag_flatten(), ag_linear(16, 3))
}

test_that("the layer's init, config, model file and ag_fit static = eager", {
  ggml_set_seed(7)
  l <- ag_conv_transpose1d(4, 6, 3, groups = 2)
  ggml_set_seed(7)
  bound <- 1 / sqrt(3 * 3)
  u <- runif(4 * 9 + 6, -bound, bound)
  expect_equal(l$weight$data, matrix(u[1:36], 4, 9), tolerance = 1e-7)
  expect_equal(drop(l$bias$data), u[37:42], tolerance = 1e-7)
  expect_identical(capture.output(print(l)),
                   "ag_conv_transpose1d: conv_transpose1d(4, 6, 3) (42 parameters, train mode)")
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(5)
  x <- matrix(rnorm(16 * 12), 16, 12)
  y <- matrix(rnorm(3 * 12), 3, 12)
  m <- decoder1()
  cfg <- ag_to_config(m)$layers[[2]]
  expect_equal(cfg$type, "conv_transpose1d")
  expect_equal(cfg[c("kernel_size", "stride", "padding", "output_padding", "dilation")],
               list(kernel_size = 3L, stride = 2L, padding = 1L, output_padding = 1L,
                    dilation = 1L))
  m1 <- ag_module_from_config(ag_to_config(m))
  expect_equal(m1$layers[[2]]$to_config(), m$layers[[2]]$to_config())
  path <- tempfile(fileext = ".gguf")
  on.exit(unlink(path), add = TRUE)
  ag_save_model(m, path)
  expect_identical(ag_predict(ag_load_model(path), x), ag_predict(m, x))
  expect_fit_static_equals_eager(decoder1, x, y)
})

test_that("refusals are classed and name the function, the argument and the shapes", {
  x <- ag_tensor(matrix(0, 5, 2))
  w <- ag_tensor(matrix(0, 1, 6))
  b <- ag_tensor(matrix(0, 2, 1))
  expect_error(ag_conv_transpose1d_op(x, w, b),
               paste0("ag_conv_transpose1d_op: x [5x2] f32 carries no image shape; give ",
                      "input_shape = (C, L)"),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose1d_op(x, w, b, output_padding = 1, input_shape = c(1, 5)),
               paste0("ag_conv_transpose1d_op: output_padding (1) must be smaller than the ",
                      "stride (1) or the dilation (1)"),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose1d_op(x, w, b, padding = 4, input_shape = c(1, 5)),
               "the output (L -1) would be empty", fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(ag_conv_transpose1d_op(x, w, b, output_padding = c(1, 1), input_shape = c(1, 5)),
               "output_padding must be a number", class = "pyggmlr_argument_error")
  expect_error(ag_conv_transpose1d(1, 2, 3, stride = 2, output_padding = 2),
               "^ag_conv_transpose1d: output_padding \\(2\\) must be smaller than the stride",
               class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose1d(1, 2, 3, padding = "same"),
               "ConvTranspose1d takes no", class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose1d(1, 2, 3, input_shape = c(1, 4))$forward(x),
               "^ag_conv_transpose1d: input_shape \\(C 1, L 4\\) needs C \\* L rows",
               class = "pyggmlr_shape_error")
})
