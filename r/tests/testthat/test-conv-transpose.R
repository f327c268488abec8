# Transposed convolution (issue 30): ag_conv_transpose2d_op against a direct scatter in R
# (torch's definition) over stride, padding, output_padding, dilation and groups; gradients by
# finite differences; the layer (init draws, configs, model files, ag_fit static = eager, the
# memory estimate); the classed errors with the core's texts, shared by the conv layers.

# torch's conv_transpose2d: x array c(N, C, H, W), w c(C, Co/g, kh, kw); each input pixel
# scatters its kernel onto the output
direct_convt <- function(x, w, b, s, p, op, d, g) {
  N <- dim(x)[1]; C <- dim(x)[2]; H <- dim(x)[3]; W <- dim(x)[4]
  Cog <- dim(w)[2]; kh <- dim(w)[3]; kw <- dim(w)[4]; Co <- Cog * g; Cig <- C %/% g
  OH <- (H - 1) * s - 2 * p + d * (kh - 1) + op + 1
  OW <- (W - 1) * s - 2 * p + d * (kw - 1) + op + 1
  out <- array(rep(if (is.null(b)) 0 else b, each = N), c(N, Co, OH, OW))
  for (n in seq_len(N)) for (ci in seq_len(C)) for (iy in seq_len(H)) for (ix in seq_len(W)) {
    gi <- (ci - 1) %/% Cig
    for (oc in seq_len(Cog)) for (ky in seq_len(kh)) for (kx in seq_len(kw)) {
      oy <- (iy - 1) * s - p + (ky - 1) * d + 1
      ox <- (ix - 1) * s - p + (kx - 1) * d + 1
      if (oy >= 1 && oy <= OH && ox >= 1 && ox <= OW)
        out[n, gi * Cog + oc, oy, ox] <- out[n, gi * Cog + oc, oy, ox] +
          x[n, ci, iy, ix] * w[ci, oc, ky, kx]
    }
  }
  out
}

as_cols <- function(a) matrix(aperm(a, c(4, 3, 2, 1)), ncol = dim(a)[1])
as_wmat <- function(w) t(matrix(aperm(w, c(4, 3, 2, 1)), ncol = dim(w)[1]))

test_that("ag_conv_transpose2d_op matches the direct scatter", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(1)
  cases <- list(list(C = 1, Co = 2, k = 3, s = 1, p = 0, op = 0, d = 1, g = 1),
                list(C = 2, Co = 4, k = 2, s = 2, p = 1, op = 1, d = 1, g = 2),
                list(C = 3, Co = 3, k = 3, s = 1, p = 2, op = 1, d = 2, g = 3))
  for (cs in cases) {
    x <- array(rnorm(2 * cs$C * 4 * 3), c(2, cs$C, 4, 3))
    w <- array(rnorm(cs$C * cs$Co / cs$g * cs$k^2), c(cs$C, cs$Co / cs$g, cs$k, cs$k))
    b <- rnorm(cs$Co)
    y <- ag_conv_transpose2d_op(ag_images(x, dtype = "f64"), as_wmat(w), matrix(b),
                                stride = cs$s, padding = cs$p, output_padding = cs$op,
                                groups = cs$g, dilation = cs$d)
    ref <- direct_convt(x, w, b, cs$s, cs$p, cs$op, cs$d, cs$g)
    expect_equal(y$data, as_cols(ref), tolerance = 1e-12)
    expect_equal(ag_image_shape(y), as.integer(dim(ref)[2:4]))
  }
})

test_that("gradients of x, weight and bias pass finite differences", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(2)
  x <- ag_param(matrix(rnorm(2 * 3 * 3 * 2), 18, 2))
  w <- ag_param(matrix(rnorm(2 * 2 * 9), 2, 18))
  b <- ag_param(matrix(rnorm(4), 4, 1))
  wt <- ag_tensor(matrix(rnorm(4 * 8 * 8 * 2), 256, 2))
  f <- function(i) ag_sum(ag_conv_transpose2d_op(i$x, i$w, i$b, stride = 2, padding = 0,
                                                 output_padding = 1, groups = 2,
                                                 input_shape = c(2, 3, 3)) * wt)
  expect_true(ag_gradcheck(f, list(x = x, w = w, b = b), quiet = TRUE))
})

decoder <- function(seed = 11) {
  ggml_set_seed(seed)
  ag_sequential(ag_conv2d(1, 3, 3, stride = 2, padding = 1, input_shape = c(1, 6, 6)),
                ag_conv_transpose2d(3, 2, 3, stride = 2, padding = 1, output_padding = 1,
                                    activation = "relu"),
                ag_flatten(), ag_linear(72, 3))
}

test_that("the layer's init is one runif draw with torch's fan_in, weight then bias", {
  ggml_set_seed(7)
  l <- ag_conv_transpose2d(4, 6, c(3, 2), groups = 2)
  ggml_set_seed(7)
  bound <- 1 / sqrt(3 * 3 * 2)
  u <- runif(4 * 18 + 6, -bound, bound)
  expect_equal(l$weight$data, matrix(u[1:72], 4, 18), tolerance = 1e-7)
  expect_equal(drop(l$bias$data), u[73:78], tolerance = 1e-7)
  expect_named(ag_conv_transpose2d(2, 3, 3, bias = FALSE)$parameters(), "weight")
})

test_that("configs, model files, ag_fit static = eager and the memory estimate", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(5)
  x <- matrix(rnorm(36 * 12), 36, 12)
  y <- matrix(rnorm(3 * 12), 3, 12)
  m <- decoder()
  cfg <- ag_to_config(m)$layers[[2]]
  expect_equal(cfg$type, "conv_transpose2d")
  expect_equal(cfg$output_padding, list(1L, 1L))
  m1 <- ag_module_from_config(ag_to_config(m))
  expect_equal(m1$layers[[2]]$to_config(), m$layers[[2]]$to_config())
  path <- tempfile(fileext = ".gguf")
  on.exit(unlink(path), add = TRUE)
  ag_save_model(m, path)
  expect_identical(ag_predict(ag_load_model(path), x), ag_predict(m, x))
  expect_fit_static_equals_eager(decoder, x, y)
  ag_dtype("f32")
  xt <- ag_tensor(matrix(rnorm(36 * 16), 36, 16))
  yt <- ag_tensor(matrix(rnorm(3 * 16), 3, 16))
  m <- decoder()
  r <- estimate_and_peak(m, xt, yt)
  est <- r$est
  expect_equal(est$params, 3 * 9 + 3 + 3 * 18 + 2 + 72 * 3 + 3)
  expect_equal(r$peak, est$total - est$weights - 4 * (36 * 16 + 3 * 16))
})

test_that("refusals are classed and name the function, the argument and the shapes", {
  x <- ag_tensor(matrix(0, 9, 2))
  w <- ag_tensor(matrix(0, 1, 18))
  b <- ag_tensor(matrix(0, 2, 1))
  expect_error(ag_conv_transpose2d_op(x, w, b), "ag_conv_transpose2d_op: x [9x2] f32 carries no",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d_op(x, w, b, output_padding = 1, input_shape = c(1, 3, 3)),
               paste0("ag_conv_transpose2d_op: output_padding (1, 1) must be smaller than the ",
                      "stride (1, 1) or the dilation (1, 1)"),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d_op(x, w, b, stride = 0, input_shape = c(1, 3, 3)),
               "stride must be whole numbers >= 1, got 0", class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d_op(ag_tensor(matrix(0, 27, 2)), w, b,
                                      input_shape = c(3, 3, 3)),
               "weight [1x18] f32 must have C_in = 3 rows", fixed = TRUE,
               class = "pyggmlr_shape_error")
  expect_error(ag_conv_transpose2d_op(x, w, b, stride = "2", input_shape = c(1, 3, 3)),
               "stride must be a number or a pair", class = "pyggmlr_argument_error")
  expect_error(ag_conv_transpose2d(1, 2, 3, stride = 2, output_padding = 2),
               "^ag_conv_transpose2d: output_padding \\(2, 2\\) must be smaller than the stride",
               class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d(3, 4, 3, groups = 2),
               "ag_conv_transpose2d: in_channels (3) and out_channels (4) must be divisible by",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d(1, 2, 2.5),
               "^ag_conv_transpose2d: kernel_size must be an integer >= 1, got 2.5",
               class = "pyggmlr_value_error")
  expect_error(ag_conv_transpose2d("1", 2, 3),
               "^ag_conv_transpose2d: in_channels must be an integer",
               class = "pyggmlr_argument_error")
  expect_error(ag_conv_transpose2d(1, 2, 3, input_shape = c(2, 4, 4)),
               "input_shape (2, 4, 4) has 2 channels but in_channels = 1", fixed = TRUE,
               class = "pyggmlr_value_error")
  # the plain convolutions share the core's check
  expect_error(ag_conv1d(0, 2, 3), "^ag_conv1d: in_channels must be an integer >= 1, got 0",
               class = "pyggmlr_value_error")
  expect_error(ag_conv2d(1, 2, 3, stride = 2, padding = "same"),
               "^ag_conv2d: padding = \"same\" needs stride 1", class = "pyggmlr_value_error")
})
