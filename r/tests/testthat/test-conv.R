# Convolution (issue 30): ag_conv2d_op / ag_conv1d_op against a direct sum in R (torch's
# definition) and gradients by finite differences (ag_gradcheck), ag_images' layouts and the image
# shape, the layers (init draws, configs, model files, ag_fit static = eager) and the classed
# errors with the core's texts.

# torch's conv2d, one output element at a time: x array c(N, C, H, W), w c(Co, C/g, kh, kw)
direct_conv <- function(x, w, b, s, p, d, g) {
  N <- dim(x)[1]; H <- dim(x)[3]; W <- dim(x)[4]
  Co <- dim(w)[1]; Cg <- dim(w)[2]; kh <- dim(w)[3]; kw <- dim(w)[4]
  OH <- (H + 2 * p - d * (kh - 1) - 1) %/% s + 1
  OW <- (W + 2 * p - d * (kw - 1) - 1) %/% s + 1
  out <- array(0, c(N, Co, OH, OW))
  for (n in seq_len(N)) for (o in seq_len(Co)) for (oy in seq_len(OH)) for (ox in seq_len(OW)) {
    gi <- (o - 1) %/% (Co %/% g)
    acc <- if (is.null(b)) 0 else b[o]
    for (ci in seq_len(Cg)) for (ky in seq_len(kh)) for (kx in seq_len(kw)) {
      iy <- (oy - 1) * s - p + (ky - 1) * d + 1
      ix <- (ox - 1) * s - p + (kx - 1) * d + 1
      if (iy >= 1 && iy <= H && ix >= 1 && ix <= W)
        acc <- acc + x[n, gi * Cg + ci, iy, ix] * w[o, ci, ky, kx]
    }
    out[n, o, oy, ox] <- acc
  }
  out
}

# an array c(N, C, H, W) as the [C*H*W, N] matrix (numpy's (C, H, W) order per column)
as_cols <- function(a) {
  d <- dim(a)
  matrix(aperm(a, c(4, 3, 2, 1)), ncol = d[1])
}

# torch's weight c(Co, Cg, kh, kw) as [Co, Cg*kh*kw] (C-order within a row)
as_wmat <- function(w) {
  d <- dim(w)
  t(matrix(aperm(w, c(4, 3, 2, 1)), ncol = d[1]))
}

test_that("ag_conv2d_op matches the direct sum (stride, padding, dilation, groups)", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(1)
  cases <- list(list(C = 1, Co = 2, k = 3, s = 1, p = 0, d = 1, g = 1),
                list(C = 2, Co = 4, k = 2, s = 2, p = 1, d = 1, g = 2),
                list(C = 3, Co = 3, k = 3, s = 1, p = 2, d = 2, g = 3))
  for (cs in cases) {
    x <- array(rnorm(2 * cs$C * 7 * 6), c(2, cs$C, 7, 6))
    w <- array(rnorm(cs$Co * cs$C / cs$g * cs$k^2), c(cs$Co, cs$C / cs$g, cs$k, cs$k))
    b <- rnorm(cs$Co)
    y <- ag_conv2d_op(ag_images(x, dtype = "f64"), as_wmat(w), matrix(b), stride = cs$s,
                      padding = cs$p, dilation = cs$d, groups = cs$g)
    ref <- direct_conv(x, w, b, cs$s, cs$p, cs$d, cs$g)
    expect_equal(y$data, as_cols(ref), tolerance = 1e-12)
    expect_equal(ag_image_shape(y), as.integer(dim(ref)[2:4]))
  }
})

test_that("gradients of x, weight and bias pass finite differences", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(2)
  x <- ag_param(matrix(rnorm(2 * 5 * 5 * 2), 50, 2))
  w <- ag_param(matrix(rnorm(4 * 9), 4, 9))
  b <- ag_param(matrix(rnorm(4), 4, 1))
  wt <- ag_tensor(matrix(rnorm(4 * 25 * 2), 100, 2))
  f <- function(i) ag_sum(ag_conv2d_op(i$x, i$w, i$b, input_shape = c(2, 5, 5), padding = "same",
                                       groups = 2) * wt)
  expect_true(ag_gradcheck(f, list(x = x, w = w, b = b), quiet = TRUE))
  w1 <- ag_param(matrix(rnorm(3 * 2 * 3), 3, 6))
  x1 <- ag_param(matrix(rnorm(2 * 9 * 3), 18, 3))
  f1 <- function(i) ag_sum(ag_relu(ag_conv1d_op(i$x, i$w, input_shape = c(2, 9), stride = 2,
                                                dilation = 2)))
  expect_true(ag_gradcheck(f1, list(x = x1, w = w1), quiet = TRUE))
})

test_that("ag_images reads NCHW, NHWC and signals; the image shape is set, kept and cleared", {
  a <- array(seq_len(2 * 3 * 2 * 4), c(2, 3, 2, 4))
  t1 <- ag_images(a, dtype = "f64")
  expect_equal(t1$data, as_cols(a))
  expect_equal(ag_image_shape(t1), c(3L, 2L, 4L))
  t2 <- ag_images(aperm(a, c(1, 3, 4, 2)), layout = "NHWC", dtype = "f64")
  expect_equal(t2$data, t1$data)
  s <- ag_images(array(rnorm(2 * 3 * 5), c(2, 3, 5)))
  expect_equal(ag_image_shape(s), c(3L, 1L, 5L))
  z <- ag_tensor(matrix(0, 12, 2))
  expect_null(ag_image_shape(z))
  ag_image_shape(z) <- c(3, 2, 2)
  expect_equal(ag_image_shape(ag_relu(z)), c(3L, 2L, 2L))
  ag_image_shape(z) <- NULL
  expect_null(ag_image_shape(z))
  expect_error(ag_image_shape(z) <- c(5, 2, 2), "needs W \\* H \\* C rows, but x is \\[12x2\\]",
               class = "pyggmlr_value_error")
  expect_error(ag_images(a, layout = "CHW"), "layout must be 'NCHW' or 'NHWC'",
               class = "pyggmlr_value_error")
  expect_error(ag_images(matrix(0, 2, 2)), "ag_images: x must be a 4-d array",
               class = "pyggmlr_shape_error")
})

test_that("errors name the function, the argument and the shapes", {
  x <- ag_tensor(matrix(0, 36, 2))
  w <- ag_tensor(matrix(0, 2, 9))
  expect_error(ag_conv2d_op(x, w), paste0("ag_conv2d_op: x [36x2] f32 carries no image shape; ",
                                          "give input_shape = (C, H, W)"),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 5, 6)),
               "input_shape (C 1, H 5, W 6) needs C * H * W rows", fixed = TRUE,
               class = "pyggmlr_shape_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 6, 6), stride = 0),
               "ag_conv2d_op: stride must be whole numbers >= 1, got 0", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 6, 6), dilation = 3),
               "the kernel (dilated size (7, 7)) is larger than the padded input (C 1, H 6, W 6)",
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 6, 6), groups = 2),
               "groups = 2 must divide the input channels (1)", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 6, 6), padding = "same", stride = 2),
               "padding = \"same\" needs stride 1", fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv2d_op(x, w, input_shape = c(1, 6, 6), stride = "2"),
               "ag_conv2d_op: stride must be a number or a pair", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_conv2d(3, 4, 3, groups = 2),
               "ag_conv2d: in_channels (3) and out_channels (4) must be divisible by groups (2)",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv2d(1, 4, 0), "ag_conv2d: kernel_size must be an integer >= 1",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_conv2d(1, 2, 3)$forward(x), "ag_conv2d: x [36x2] f32 carries no image shape",
               fixed = TRUE, class = "pyggmlr_value_error")
})

small_cnn <- function(seed = 11) {
  ggml_set_seed(seed)
  ag_sequential(ag_conv2d(1, 3, 3, stride = 2, padding = 1, input_shape = c(1, 6, 6)),
                ag_conv2d(3, 4, 2), ag_linear(16, 3))
}

test_that("the layer's init is one runif(fan_in bound) draw, weight then bias", {
  ggml_set_seed(7)
  l <- ag_conv2d(2, 4, c(3, 2), groups = 2)
  ggml_set_seed(7)
  bound <- 1 / sqrt(6)
  u <- runif(4 * 6 + 4, -bound, bound)
  expect_equal(l$weight$data, matrix(u[1:24], 4, 6), tolerance = 1e-7)
  expect_equal(drop(l$bias$data), u[25:28], tolerance = 1e-7)
  expect_named(l$parameters(), c("weight", "bias"))
  expect_named(ag_conv1d(2, 3, 3, bias = FALSE)$parameters(), "weight")
})

test_that("configs, model files and ag_fit static = eager", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(5)
  x <- matrix(rnorm(36 * 12), 36, 12)
  y <- matrix(rnorm(3 * 12), 3, 12)
  m <- small_cnn()
  cfg <- ag_to_config(m)
  expect_equal(cfg$layers[[1]]$kernel_size, list(3L, 3L))
  expect_equal(cfg$layers[[1]]$input_shape, list(1L, 6L, 6L))
  path <- tempfile(fileext = ".gguf")
  on.exit(unlink(path), add = TRUE)
  ag_save_model(m, path)
  m2 <- ag_load_model(path)
  expect_identical(ag_predict(m2, x), ag_predict(m, x))
  expect_fit_static_equals_eager(small_cnn, x, y)
})

test_that("the memory estimate of a compiled step with convolutions equals the measured peak", {
  # x and y as tensors made before the baseline (an R matrix's conversion inside the step would
  # add a temporary to the peak): the peak is the estimate less the weights, x and y
  set.seed(6)
  x <- ag_tensor(matrix(rnorm(36 * 16), 36, 16))
  y <- ag_tensor(matrix(rnorm(3 * 16), 3, 16))
  m <- small_cnn()
  r <- estimate_and_peak(m, x, y)
  est <- r$est
  expect_equal(est$params, 3 * 9 + 3 + 4 * 12 + 4 + 16 * 3 + 3)
  expect_equal(r$peak, est$total - est$weights - 4 * (36 * 16 + 3 * 16))
})

test_that("activation is applied, keeps the image shape, goes through files and is checked", {
  x <- ag_tensor(matrix(rnorm(2 * 5 * 5 * 3), 50, 3))
  set.seed(3)
  plain <- ag_conv2d(2, 4, 3, padding = 1, input_shape = c(2, 5, 5))
  for (act in c("relu", "tanh", "sigmoid")) {
    set.seed(3)
    cv <- ag_conv2d(2, 4, 3, padding = 1, input_shape = c(2, 5, 5), activation = act)
    y <- cv$forward(x)
    f <- switch(act, relu = ag_relu, tanh = ag_tanh, sigmoid = ag_sigmoid)
    expect_identical(y$data, f(plain$forward(x))$data)
    expect_identical(ag_image_shape(y), c(4L, 5L, 5L))
    expect_identical(cv$to_config()$activation, act)
  }
  m <- ag_sequential(cv, ag_max_pool2d(2), ag_flatten(), ag_linear(16, 2))
  path <- tempfile(fileext = ".safetensors")
  ag_save_model(m, path)
  m2 <- ag_load_model(path)
  expect_identical(ag_predict(m2, x), ag_predict(m, x))
  expect_error(ag_conv1d(1, 2, 3, activation = "swish"), "^ag_conv1d: activation must be one of",
               class = "pyggmlr_value_error")
})
