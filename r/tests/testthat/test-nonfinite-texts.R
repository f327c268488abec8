# Non-finite and huge user values in the core's texts in R's words (issue 29): Inf / -Inf / NaN /
# NA (pg_fmt_num; Python's inf / nan: tests/core/test_nonfinite_texts.py, both side by side in
# tests/r/test_nonfinite_parity.py); match.arg's unique prefix; the estimate's y and shapes.

.nf_model <- function() {
  ggml_set_seed(1)
  ag_linear(3, 4)
}

test_that("the core's texts print R's Inf / -Inf / NaN / NA", {
  x <- matrix(1, 3, 8)
  expect_error(ag_max_pool2d(kernel_size = c(Inf, NA)),
               "kernel_size must be one or two (H, W) whole numbers >= 1, got (Inf, NA)",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_avg_pool1d(kernel_size = 2, stride = -Inf), "got -Inf", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_accuracy(.nf_model(), x, rep(0, 8), threshold = -Inf),
               "ag_accuracy: threshold must be a finite number, got -Inf", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_accuracy(.nf_model(), x, rep(0, 8), threshold = NaN),
               "ag_accuracy: threshold must be a finite number, got NaN", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_fit(.nf_model(), x, rep(0, 8), nepoch = 1, verbose = 0, batch_size = 8,
                      class_weight = c(1, NA, 1, 1)),
               "ag_fit: class_weight must be finite and >= 0; class 1 has NA", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_fit(.nf_model(), x, rep(0, 8), nepoch = 1, verbose = 0, batch_size = 8,
                      sample_weight = c(1, NA, rep(1, 6))),
               "ag_fit: sample_weight must be finite and >= 0; position 2 has NA", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_fit(.nf_model(), x, rep(0, 8), nepoch = 1, verbose = 0, batch_size = 8,
                      class_weight = c(`16777217` = 1)),
               "ag_fit: class_weight's class id 16777217 is above 16777216",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ggml_set_seed(-1e400), "supplied seed is not a valid integer, got -Inf",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_upsample2d(scale_factor = 2^70),
               "got (1180591620717411303424, 1180591620717411303424)", fixed = TRUE,
               class = "pyggmlr_value_error")
})

test_that("match.arg's unique prefix names the choice; an ambiguous one is refused", {
  o <- optimizer_sgd(list(ag_param(matrix(1, 2, 2))))
  expect_identical(lr_scheduler_cyclic(o, 0, 1, mode = "exp")$mode, "exp_range")
  expect_identical(lr_scheduler_cyclic(o, 0, 1, mode = "triangular")$mode, "triangular")
  expect_error(lr_scheduler_cyclic(o, 0, 1, mode = "tri"), "'arg' should be one of",
               fixed = TRUE, class = "pyggmlr_value_error")
  prev <- ag_matmul_precision("f")
  expect_identical(ag_matmul_precision("d"), "f32")
  ag_matmul_precision(prev)
})

test_that("the estimate refuses a y of the wrong shape and shapes with a model up front", {
  x <- matrix(1, 3, 8)
  expect_error(ag_estimate_training_memory(model = .nf_model(), x = x, y = matrix(1, 2, 8)),
               paste("ag_estimate_training_memory(): y is [2x8] but the model's output is",
                     "[4x8]; with the default loss_fn (ag_mse_loss) y must have the output's",
                     "shape [outputs, batch]"), fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(ag_estimate_training_memory(shapes = list(c(3, 4)), model = .nf_model(), x = x),
               paste("ag_estimate_training_memory(): with model =, the parameters are the",
                     "model's; leave shapes = out"), fixed = TRUE,
               class = "pyggmlr_argument_error")
  est <- ag_estimate_training_memory(model = .nf_model(), x = x, y = matrix(1, 2, 8),
                                     quiet = TRUE, loss_fn = function(out, y) ag_mean(out))
  expect_equal(est$params, 16)
})
