# Negative padding in ag_pad2d_op / ag_pad1d_op and the layers (torch's F.pad: a negative pad
# crops that side, mixed signs, every mode): known values from torch, gradcheck, configs, and
# the classed refusals with the core's texts.

test_that("negative pads crop as torch's F.pad in every mode", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  x <- matrix(c(0, 1, 2, 3, 4), ncol = 1)
  # torch 2.13: F.pad(arange(5), p, mode)
  expect_equal(ag_pad1d_op(x, c(-2, 3), value = 9, input_shape = c(1, 5))$data[, 1],
               c(2, 3, 4, 9, 9, 9))
  expect_equal(ag_pad1d_op(x, c(-2, 3), mode = "reflect", input_shape = c(1, 5))$data[, 1],
               c(2, 3, 4, 3, 2, 1))
  expect_equal(ag_pad1d_op(x, c(-2, 3), mode = "replicate", input_shape = c(1, 5))$data[, 1],
               c(2, 3, 4, 4, 4, 4))
  expect_equal(ag_pad1d_op(x, c(-7, 4), mode = "reflect", input_shape = c(1, 5))$data[, 1],
               c(1, 0))
  expect_equal(ag_pad1d_op(x, c(-5, 1), input_shape = c(1, 5))$data[, 1], 0)
  img <- matrix(as.double(1:12), ncol = 1)  # one 1x3x4 image, rows 1:4, 5:8, 9:12
  y <- ag_pad2d_op(img, c(-1, 1, 0, -1), input_shape = c(1, 3, 4))
  expect_equal(ag_image_shape(y), c(1L, 2L, 4L))
  expect_equal(y$data[, 1], c(2, 3, 4, 0, 6, 7, 8, 0))
})

test_that("the gradient of a crop passes finite differences", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(3)
  x <- ag_param(matrix(rnorm(2 * 4 * 5 * 2), 40, 2))
  for (mode in c("constant", "reflect", "replicate")) {
    f <- function(i) {
      y <- ag_pad2d_op(i$x, c(2, -3, -1, 1), mode = mode, input_shape = c(2, 4, 5))
      ag_sum(y * y)
    }
    expect_true(ag_gradcheck(f, list(x = x), quiet = TRUE))
  }
})

test_that("the layers and their configs keep negative pads", {
  l <- ag_pad2d(c(-1, 2, 0, -1), mode = "replicate")
  expect_equal(l$padding, c(-1L, 2L, 0L, -1L))
  x <- ag_images(array(rnorm(2 * 16), c(2, 1, 4, 4)))
  expect_equal(ag_image_shape(l$forward(x)), c(1L, 3L, 5L))
  m <- ag_module_from_config(ag_to_config(ag_sequential(l, ag_pad1d(-1))))
  expect_equal(m$layers[[1]]$padding, c(-1L, 2L, 0L, -1L))
  expect_equal(m$layers[[1]]$forward(x)$data, l$forward(x)$data)
})

test_that("crops that empty the result or exceed the input are classed refusals", {
  x <- ag_tensor(matrix(0, 5, 2))
  expect_error(ag_pad1d_op(x, c(-6, 3), input_shape = c(1, 5)), class = "pyggmlr_shape_error",
               paste0("ag_pad1d_op: padding (left -6, right 3) crops more than the input ",
                      "(C 1, L 5) holds; x is [5x2] f32"), fixed = TRUE)
  expect_error(ag_pad1d_op(x, c(-3, -2), mode = "reflect", input_shape = c(1, 5)),
               class = "pyggmlr_shape_error",
               "leaves an empty output (L 0) of the input (C 1, L 5)", fixed = TRUE)
  expect_error(ag_pad2d(-1.5), class = "pyggmlr_value_error",
               "ag_pad2d: padding must be a whole number (negative: crop)", fixed = TRUE)
})
