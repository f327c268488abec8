# Drifts from Python in the layer and tensor constructors and their forward calls (issue 29); the
# same cases in both languages are tests/r/test_layer_drift_parity.py.

refuses <- function(expr, text, class) expect_error(expr, text, fixed = TRUE, class = class)

test_that("embedding ids past R's integers are named by the core, as Python's", {
  set.seed(1)
  e <- ag_embedding(10, 4)
  txt <- paste("ag_embedding: id %s at position 2 is out of range [0, 10) for weight [4x10] f32",
               "(ids are 0-based)")
  for (v in list(c(3e9, "3e+09"), c(-3e9, "-3e+09"), c(1e300, "1e+300"), c(11, "11")))
    refuses(e$forward(c(2, as.double(v[[1L]]))), sprintf(txt, v[[2L]]), "pyggmlr_value_error")
  refuses(e$forward(c(2L, NA)),
          "ag_embedding: ids must be whole numbers (0-based), got non-integer values",
          "pyggmlr_value_error")
  expect_identical(e$forward(c(2L, 9L))$data, e$weight$data[, c(3L, 10L)])  # integers as before
})

test_that("ag_linear's gain and init refusals are value errors, as Python's and the core's", {
  refuses(ag_linear(2, 3, gain = "a"), "ag_linear: gain must be a single finite number",
          "pyggmlr_value_error")
  refuses(ag_linear(2, 3, init = matrix(1, 3, 2), gain = 2),
          "ag_linear: gain applies to string inits only; scale a function or matrix init yourself",
          "pyggmlr_value_error")
  refuses(ag_linear(2, 3, init = TRUE),
          paste("ag_linear: init must be \"glorot_uniform\", \"orthogonal\", a function(out, in)",
                "or a numeric matrix"), "pyggmlr_value_error")
})

test_that("a bad device names the function and shows the value, classed as Python's", {
  refuses(ag_param(1, device = "tpu"), "ag_param(): device must be \"cpu\" or \"gpu\", got \"tpu\"",
          "pyggmlr_value_error")
  refuses(ag_tensor(1, device = c("a", "b")),
          "ag_tensor(): device must be \"cpu\" or \"gpu\", got c(\"a\", \"b\")",
          "pyggmlr_value_error")
  refuses(ag_tensor(1, device = "gpu"), "No ggml backend available", "pyggmlr_device_error")
})

test_that("an array of more than 2 dims is named by its shape, as in Python", {
  refuses(ag_tensor(array(1, c(2, 3, 4))),
          "ag_tensor: tensors are 2-D matrices [features, batch]; got a 2x3x4 array",
          "pyggmlr_shape_error")
  refuses(ag_max_pool2d(2)$forward(array(1, c(2, 1, 4, 4))),
          "ag_max_pool2d: tensors are 2-D matrices [features, batch]; got a 2x1x4x4 array",
          "pyggmlr_shape_error")
})

test_that("refused constructors change nothing (the random stream, the default dtype)", {
  set.seed(3)
  before <- .Random.seed
  expect_error(ag_dropout(TRUE), class = "pyggmlr_argument_error")
  expect_error(ag_linear(2, 3, init = "xavier"), class = "pyggmlr_value_error")
  expect_error(ag_conv1d(1, 2, NULL), class = "pyggmlr_argument_error")
  expect_identical(.Random.seed, before)
  dt <- ag_default_dtype()
  expect_error(ag_dtype("f16"), class = "pyggmlr_dtype_error")
  expect_identical(ag_default_dtype(), dt)
})

test_that("a transposed convolution op checks dilation before output_padding, as Python", {
  refuses(ag_conv_transpose1d_op(matrix(1, 4, 1), matrix(1, 1, 1), output_padding = TRUE,
                                 dilation = TRUE),
          "ag_conv_transpose1d_op: dilation must be a number, got TRUE", "pyggmlr_argument_error")
})

test_that("huge layer counts are refused at once, the sizes shown as Python's", {
  for (f in list(ag_lstm, ag_gru, ag_rnn))  # the count in closed form, not a loop
    expect_error(f(2, 3, num_layers = 2^31 - 1, bidirectional = TRUE),
                 "num_layers = 2147483647 (", fixed = TRUE, class = "pyggmlr_memory_error")
  expect_error(ag_conv_transpose2d(1, 2^31 - 1, 65535),  # said [1xNA]
               "for a [1x9223090559730712576] weight", fixed = TRUE,
               class = "pyggmlr_memory_error")
  for (f in c("ag_conv1d", "ag_conv2d", "ag_conv_transpose1d", "ag_conv_transpose2d"))
    for (kw in c("kernel_size", "stride", "padding", "dilation")) {  # the op's limit, at once
      a <- list(1, 1, kernel_size = 3)
      a[[kw]] <- 65536
      expect_error(do.call(f, a),
                   paste0(f, ": kernel_size, stride, padding and dilation must be at most 65535"),
                   fixed = TRUE, class = "pyggmlr_value_error")
    }
})
