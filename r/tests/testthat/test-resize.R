# Padding and upsampling (issue 30): the ops against a plain-R reference (torch's index rules),
# gradients by finite differences (ag_gradcheck), the image tag read by the layers, configs and
# model files, ag_fit(static = TRUE) against the eager run, the memory estimate, and the classed
# errors.

# source index (0-based) of padded position i (shifted by the leading pad) in [0, n), -1: fill
pad_src <- function(i, n, mode) {
  if (i >= 0 && i < n) return(i)
  if (mode == "constant") return(-1)
  if (mode == "replicate") return(if (i < 0) 0 else n - 1)
  if (i < 0) -i else 2 * (n - 1) - i
}

pad_ref <- function(x, shape, lrtb, value, mode) {
  C <- shape[[1L]]; H <- shape[[2L]]; W <- shape[[3L]]
  Ho <- H + lrtb[[3L]] + lrtb[[4L]]; Wo <- W + lrtb[[1L]] + lrtb[[2L]]
  out <- matrix(0, C * Ho * Wo, ncol(x))
  for (n in seq_len(ncol(x))) for (c in seq_len(C)) for (oh in 0:(Ho - 1)) for (ow in 0:(Wo - 1)) {
    ih <- pad_src(oh - lrtb[[3L]], H, mode); iw <- pad_src(ow - lrtb[[1L]], W, mode)
    out[(c - 1) * Ho * Wo + oh * Wo + ow + 1, n] <-
      if (ih < 0 || iw < 0) value else x[(c - 1) * H * W + ih * W + iw + 1, n]
  }
  out
}

# torch's linear source index with scale_factor s, align_corners FALSE
lin <- function(o, n, s) {
  src <- max((o + 0.5) / s - 0.5, 0)
  i0 <- floor(src)
  list(i0 = i0, i1 = i0 + (i0 < n - 1), l1 = src - i0)
}

up_ref <- function(x, shape, s, mode) {
  C <- shape[[1L]]; H <- shape[[2L]]; W <- shape[[3L]]
  Ho <- H * s[[1L]]; Wo <- W * s[[2L]]
  out <- matrix(0, C * Ho * Wo, ncol(x))
  for (n in seq_len(ncol(x))) for (c in seq_len(C)) for (oh in 0:(Ho - 1)) for (ow in 0:(Wo - 1)) {
    at <- function(h, w) x[(c - 1) * H * W + h * W + w + 1, n]
    v <- if (mode == "nearest") at(oh %/% s[[1L]], ow %/% s[[2L]]) else {
      a <- lin(oh, H, s[[1L]]); b <- lin(ow, W, s[[2L]])
      (1 - a$l1) * ((1 - b$l1) * at(a$i0, b$i0) + b$l1 * at(a$i0, b$i1)) +
        a$l1 * ((1 - b$l1) * at(a$i1, b$i0) + b$l1 * at(a$i1, b$i1))
    }
    out[(c - 1) * Ho * Wo + oh * Wo + ow + 1, n] <- v
  }
  out
}

test_that("padding matches the reference in every mode and passes gradcheck", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(1)
  x <- matrix(rnorm(2 * 4 * 5 * 3), ncol = 3L)
  cases <- list(list(1, c(1, 1, 1, 1)), list(c(2, 1), c(1, 1, 2, 2)),
                list(c(1, 3, 0, 2), c(1, 3, 0, 2)))
  for (cs in cases) for (mode in c("constant", "reflect", "replicate")) {
    v <- if (mode == "constant") 1.5 else 0
    y <- ag_pad2d_op(x, cs[[1L]], v, mode, input_shape = c(2, 4, 5))
    expect_identical(y$data, pad_ref(x, c(2, 4, 5), cs[[2L]], v, mode))
    w <- matrix(rnorm(length(y$data)), nrow(y$data))
    expect_true(ag_gradcheck(function(i) ag_sum(ag_pad2d_op(i$x, cs[[1L]], v, mode,
                                                            input_shape = c(2, 4, 5)) * w),
                             list(x = ag_param(x)), quiet = TRUE))
  }
  # 1-D: (left, right) on an image with H = 1
  z <- matrix(rnorm(3 * 6 * 2), ncol = 2L)
  y <- ag_pad1d_op(z, c(3, 1), mode = "reflect", input_shape = c(3, 6))
  expect_identical(y$data, pad_ref(z, c(3, 1, 6), c(3, 1, 0, 0), 0, "reflect"))
  expect_identical(drop(ag_pad1d_op(c(1, 2, 3), c(2, 1), 9, input_shape = c(1, 3))$data),
                   c(9, 9, 1, 2, 3, 9))
})

test_that("upsampling matches the reference (nearest, bilinear) and passes gradcheck", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(2)
  x <- matrix(rnorm(2 * 3 * 4 * 2), ncol = 2L)
  for (s in list(2, c(2, 3), c(1, 3))) for (mode in c("nearest", "bilinear")) {
    y <- ag_upsample2d_op(x, s, mode, input_shape = c(2, 3, 4))
    expect_equal(y$data, up_ref(x, c(2, 3, 4), rep_len(s, 2L), mode), tolerance = 1e-14)
    w <- matrix(rnorm(length(y$data)), nrow(y$data))
    expect_true(ag_gradcheck(function(i) ag_sum(ag_upsample2d_op(i$x, s, mode,
                                                                 input_shape = c(2, 3, 4)) * w),
                             list(x = ag_param(x)), quiet = TRUE))
  }
  # a 2x2 image: bilinear's first row is 1 1.25 1.75 2
  y <- ag_upsample2d_op(c(1, 2, 3, 4), 2, "bilinear", input_shape = c(1, 2, 2))
  expect_identical(y$data[1:4, 1], c(1, 1.25, 1.75, 2))
})

test_that("1-D upsampling (nearest, linear) matches the reference, configs and model files", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(5)
  x <- matrix(rnorm(3 * 7 * 2), ncol = 2L)
  for (s in c(1, 2, 3)) for (mode in c("nearest", "linear")) {
    y <- ag_upsample1d_op(x, s, mode, input_shape = c(3, 7))
    expect_equal(y$data, up_ref(x, c(3, 1, 7), c(1, s), mode), tolerance = 1e-14)
    expect_identical(ag_image_shape(y), c(3L, 1L, 7L * as.integer(s)))
    # the 2-D op on H = 1 with scale c(1, s), bit for bit
    m2 <- if (mode == "linear") "bilinear" else mode
    expect_identical(y$data, ag_upsample2d_op(x, c(1, s), m2, input_shape = c(3, 1, 7))$data)
    w <- matrix(rnorm(length(y$data)), nrow(y$data))
    expect_true(ag_gradcheck(function(i) ag_sum(ag_upsample1d_op(i$x, s, mode,
                                                                 input_shape = c(3, 7)) * w),
                             list(x = ag_param(x)), quiet = TRUE))
  }
  # torch's nn.Upsample(scale_factor = 2, mode = "linear") on 1 2 3
  expect_identical(drop(ag_upsample1d_op(c(1, 2, 3), 2, "linear", input_shape = c(1, 3))$data),
                   c(1, 1.25, 1.75, 2.25, 2.75, 3))
  z <- ag_tensor(x)
  ag_image_shape(z) <- c(3, 1, 7)
  l <- ag_upsample1d(2, "linear")
  expect_identical(l$scale_factor, 2L)
  expect_identical(ag_image_shape(l$forward(z)), c(3L, 1L, 14L))
  set.seed(6)
  m <- ag_sequential(ag_conv1d(2L, 3L, 3L, input_shape = c(2, 8)), ag_upsample1d(2, "linear"),
                     ag_pad1d(1), ag_upsample1d(3), ag_flatten(), ag_linear(126L, 2L))
  cfg <- ag_to_config(m)
  expect_identical(cfg$layers[[2L]], list(type = "upsample1d", scale_factor = 2L, mode = "linear"))
  expect_identical(ag_to_config(ag_module_from_config(cfg)), cfg)
  f <- tempfile(fileext = ".gguf")
  ag_save_model(m, f)
  back <- ag_load_model(f)
  unlink(f)
  u <- matrix(rnorm(16 * 5), ncol = 5L)
  expect_identical(back$forward(u)$data, m$forward(u)$data)
  expect_identical(summary(m)$layers$output_shape[1:4],
                   c("[18 x batch] (3, 1, 6)", "[36 x batch] (3, 1, 12)",
                     "[42 x batch] (3, 1, 14)", "[126 x batch] (3, 1, 42)"))
  expect_output(print(m), "upsample1d\\(2, linear\\)")
  expect_error(ag_upsample1d(2, "bilinear"), class = "pyggmlr_value_error",
               "ag_upsample1d: mode must be \"nearest\" or \"linear\", got \"bilinear\"")
  expect_error(ag_upsample1d_op(x, 0, input_shape = c(3, 7)), class = "pyggmlr_value_error",
               "ag_upsample1d_op: scale_factor must be a whole number >= 1, got 0")
  expect_error(ag_upsample1d(c(2, 2)), class = "pyggmlr_argument_error",
               "ag_upsample1d: scale_factor must be a number, got")
  expect_error(ag_upsample1d_op(x, 2, input_shape = c(3, 5)), class = "pyggmlr_shape_error",
               "ag_upsample1d_op: input_shape")
})

test_that("ag_fit trains a 1-D upsampling model eagerly and compiled alike", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(7)
  x <- matrix(rnorm(16 * 24), ncol = 24L)
  y <- matrix(rnorm(48), 2L)
  expect_fit_static_equals_eager(function() {
    set.seed(8)
    ag_sequential(ag_conv1d(2L, 3L, 3L, input_shape = c(2, 8)), ag_upsample1d(2, "linear"),
                  ag_upsample1d(2), ag_flatten(), ag_linear(72L, 2L))
  }, x, y, batch_size = 8L)
})

tagger <- function(shape) {
  structure(list(forward = function(x) ag_pad2d_op(x, 0, input_shape = shape),
                 parameters = function() list()), class = "resize_tagger")
}

cnn <- function() {
  list(ag_conv2d(2L, 3L, 3L, activation = "relu"), ag_pad2d(1, mode = "reflect"),
       ag_upsample2d(2, "bilinear"), ag_max_pool2d(2), ag_pad2d(c(0, 1, 1, 0), value = 0.5),
       ag_upsample2d(c(1, 2)), ag_flatten(), ag_linear(216L, 2L))
}

test_that("the layers read the tag, tag their output, and go into configs and model files", {
  set.seed(3)
  x <- ag_tensor(matrix(rnorm(2 * 4 * 5 * 3), ncol = 3L))
  ag_image_shape(x) <- c(2, 4, 5)
  y <- ag_pad2d(c(1, 2))$forward(x)
  expect_identical(dim(y), c(2L * 6L * 9L, 3L))
  expect_identical(ag_image_shape(y), c(2L, 6L, 9L))
  expect_identical(ag_pad2d(c(1, 2))$padding, c(2L, 2L, 1L, 1L))
  expect_identical(ag_image_shape(ag_upsample2d(c(2, 1), "bilinear")$forward(y)), c(2L, 12L, 9L))
  m <- do.call(ag_sequential, c(cnn(), list(ag_pad1d(c(1, 2), mode = "replicate"))))
  cfg <- ag_to_config(m)
  expect_identical(cfg$layers[[2L]], list(type = "pad2d", padding = c(1L, 1L, 1L, 1L), value = 0,
                                          mode = "reflect"))
  expect_identical(cfg$layers[[3L]], list(type = "upsample2d", scale_factor = c(2L, 2L),
                                          mode = "bilinear"))
  expect_identical(ag_to_config(ag_module_from_config(cfg)), cfg)
  seq <- do.call(ag_sequential, cnn())
  f <- tempfile(fileext = ".gguf")
  ag_save_model(seq, f)
  back <- ag_load_model(f)
  unlink(f)
  x <- ag_tensor(matrix(rnorm(50 * 4), ncol = 4L))
  ag_image_shape(x) <- c(2, 5, 5)
  expect_identical(back$forward(x)$data, seq$forward(x)$data)
  expect_output(print(seq), "pad2d\\(1, 1, 1, 1, reflect\\)")
})

test_that("ag_fit trains eagerly and compiled alike; the estimate equals the peak", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(4)
  x <- matrix(rnorm(50 * 24), ncol = 24L)
  y <- matrix(rnorm(48), 2L)
  expect_fit_static_equals_eager(function() {
    set.seed(12)
    do.call(ag_sequential, c(list(tagger(c(2, 5, 5))), cnn()))
  }, x, y, batch_size = 8L)
  set.seed(5)
  m <- do.call(ag_sequential, c(list(ag_linear(50L, 50L), tagger(c(2, 5, 5))), cnn()))
  xs <- x[, 1:16]
  ys <- y[, 1:16]
  r <- estimate_and_peak(m, xs, ys)
  est <- r$est
  expect_equal(est$params, 50 * 50 + 50 + 3 * 18 + 3 + 216 * 2 + 2)
  expect_equal(r$peak, est$total - est$weights)
})

test_that("errors name the function, the argument and the shapes", {
  x <- ag_tensor(matrix(1, 48L, 2L))
  expect_error(ag_pad2d_op(x, 1), class = "pyggmlr_shape_error",
               "ag_pad2d_op: x \\[48x2\\] f.. carries no image shape; give input_shape")
  expect_error(ag_pad2d_op(x, c(1, 4), mode = "reflect", input_shape = c(3, 4, 4)),
               class = "pyggmlr_shape_error",
               paste0("ag_pad2d_op: reflect padding \\(left 4, right 4, top 1, bottom 1\\) must ",
                      "be less than the input's W 4 \\(left, right\\) and H 4 \\(top, bottom\\)"))
  expect_error(ag_upsample2d_op(x, 2, input_shape = c(3, 4, 5)), class = "pyggmlr_shape_error",
               "input_shape \\(C 3, H 4, W 5\\) needs 60 rows \\(C \\* H \\* W\\), but x is")
  expect_error(ag_pad2d(c(1, 1, 1)), class = "pyggmlr_value_error",
               "ag_pad2d: padding must be a whole number \\(negative: crop\\), a pair \\(H, W\\)")
  expect_error(ag_pad1d(c(1, -0.5)), class = "pyggmlr_value_error", "got \\(1, -0.5\\)")
  expect_error(ag_pad2d(1, mode = "circular"), class = "pyggmlr_value_error",
               paste0("ag_pad2d: mode must be \"constant\", \"reflect\" or \"replicate\", ",
                      "got \"circular\""))
  expect_error(ag_pad2d_op(x, 1, 2, "replicate", c(3, 4, 4)), class = "pyggmlr_value_error",
               paste0("ag_pad2d_op: value \\(2\\) applies to mode \"constant\" only, ",
                      "got mode \"replicate\""))
  expect_error(ag_pad2d(1, value = Inf), class = "pyggmlr_value_error",
               "ag_pad2d: value must be a finite number, got Inf")
  expect_error(ag_upsample2d(1.5), class = "pyggmlr_value_error",
               paste0("ag_upsample2d: scale_factor must be one or two \\(H, W\\) whole numbers ",
                      ">= 1, got \\(1.5, 1.5\\)"))
  expect_error(ag_upsample2d(2, "bicubic"), class = "pyggmlr_value_error",
               "ag_upsample2d: mode must be \"nearest\" or \"bilinear\", got \"bicubic\"")
  expect_error(ag_pad2d("1"), class = "pyggmlr_argument_error", "ag_pad2d: padding must be")
  expect_error(ag_upsample2d_op(x, 2, 2), class = "pyggmlr_argument_error",
               "ag_upsample2d_op: mode must be a string, got 2")
  expect_error(ag_module_from_config(list(type = "pad2d", padding = c(1, 1, 1))),
               class = "pyggmlr_value_error",
               "bad arguments for a 'pad2d' layer: padding must be a whole number or a list")
})

test_that("summary() shows the rows and image shapes of image layers (torch's sizes)", {
  m <- ag_sequential(ag_conv2d(1L, 16L, 3L, padding = 1L, input_shape = c(1, 8, 8)),
                     ag_max_pool2d(2), ag_pad2d(c(0, 1, 1, 0)), ag_upsample2d(2),
                     ag_conv2d(16L, 4L, 3L, stride = 2L, dilation = 2L),
                     ag_avg_pool2d(2, padding = 1), ag_flatten(), ag_linear(16L, 10L))
  expect_identical(summary(m)$layers$output_shape,
                   c("[1024 x batch] (16, 8, 8)", "[256 x batch] (16, 4, 4)",
                     "[400 x batch] (16, 5, 5)", "[1600 x batch] (16, 10, 10)",
                     "[36 x batch] (4, 3, 3)", "[16 x batch] (4, 2, 2)", "[16 x batch]",
                     "[10 x batch]"))
  m <- ag_sequential(ag_conv1d(3L, 8L, 5L, input_shape = c(3, 32)), ag_max_pool1d(2, padding = 1),
                     ag_pad1d(c(1, 2)), ag_global_avg_pool(), ag_linear(8L, 2L))
  expect_identical(summary(m)$layers$output_shape,
                   c("[224 x batch] (8, 1, 28)", "[120 x batch] (8, 1, 15)",
                     "[144 x batch] (8, 1, 18)", "[8 x batch]", "[2 x batch]"))
  same <- ag_conv2d(1L, 2L, 3L, padding = "same", input_shape = c(1, 5, 5))
  expect_identical(summary(same)$layers$output_shape, "[50 x batch] (2, 5, 5)")
  # no input_shape on the first convolution: unknown until a layer sets the size
  m <- ag_sequential(ag_conv2d(1L, 4L, 3L), ag_flatten(), ag_linear(36L, 2L))
  expect_identical(summary(m)$layers$output_shape, c("?", "?", "[2 x batch]"))
  expect_identical(summary(ag_lstm(3L, 5L, return_sequences = TRUE))$layers$output_shape, "?")
  expect_output(print(summary(m)), "conv2d\\(1, 4, 3x3\\) \\(ag_conv2d\\)")
  # the core's rules (native/layer_shape.c): the transposed convolution, (n-1)s - 2p + d(k-1) +
  # output_padding + 1; norms keep the image shape as the tensors do
  m <- ag_sequential(ag_conv_transpose2d(2L, 3L, 3L, stride = 2L, padding = 1L,
                                         output_padding = 1L, input_shape = c(2, 4, 4)),
                     ag_batch_norm(192L), ag_max_pool2d(2), ag_global_max_pool())
  expect_identical(summary(m)$layers$output_shape,
                   c("[192 x batch] (3, 8, 8)", "[192 x batch] (3, 8, 8)",
                     "[48 x batch] (3, 4, 4)", "[3 x batch]"))
  x <- ag_tensor(matrix(runif(32 * 2), 32, 2))
  ag_image_shape(x) <- c(2, 4, 4)
  expect_identical(dim(m$layers[[1L]]$forward(x)), c(192L, 2L))
  # recurrent: [input_size * T, batch] in; per step with return_sequences (x2 bidirectional)
  r <- ag_sequential(ag_linear(4L, 12L), ag_lstm(3L, 5L, bidirectional = TRUE,
                                                  return_sequences = TRUE), ag_gru(10L, 4L))
  expect_identical(summary(r)$layers$output_shape, c("[12 x batch]", "[40 x batch]",
                                                     "[4 x batch]"))
  expect_identical(pyggmlr:::.fit_input_rows(r, 4L), 4L)
  expect_identical(pyggmlr:::.fit_input_rows(ag_sequential(list(forward = identity)), 4L),
                   NA_integer_)
})
