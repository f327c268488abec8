# Drifts from Python fixed in the core once (issue 29); the same cases in both languages are
# tests/r/test_api_drift_parity.py and tests/r/test_saveargs_parity.py.

test_that("a model without forward(x): the core's text naming the function", {
  x <- matrix(c(1, 4, 2, 3, 3, 2, 4, 1), 2)
  nf <- list(parameters = function() list(W = ag_param(matrix(1, 2, 2))))
  expect_error(ag_predict(3, x), "ag_predict: model must have forward(x), got numeric",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_fit(nf, x, x, nepoch = 1L, batch_size = 2L, silent = TRUE),
               "ag_fit: model must have forward(x), got list", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_evaluate(nf, x, x, loss = "mse"),
               "ag_evaluate: model must have forward(x), got list", fixed = TRUE,
               class = "pyggmlr_argument_error")
})

test_that("best is the direction's start before any fit once the mode is known", {
  expect_identical(ag_early_stopping(monitor = "val_accuracy")$best, -Inf)
  expect_identical(ag_early_stopping(mode = "max")$best, -Inf)
  expect_identical(ag_early_stopping(monitor = "val_loss")$best, Inf)
  expect_identical(ag_model_checkpoint("unused.safetensors", monitor = "accuracy")$best, -Inf)
})

test_that("ag_load_model checks its arguments before the file", {
  f <- tempfile(fileext = ".safetensors")  # never written
  expect_error(ag_load_model(f, model = 3),
               paste("ag_load_model(): `model` must be an ag_sequential or ag_* layer (an",
                     "object with parameters()), got numeric"),
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_load_model(f, dtype = "f8"), "'dtype' should be one of", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_load_model(f, optimizer = 3),
               "ag_load_model(): optimizer must be an optimizer object, got numeric",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_false(file.exists(f))
})

test_that("ag_fit's static of the wrong kind is an argument error, as shuffle's", {
  x <- matrix(rnorm(8), 2, 4)
  expect_error(ag_fit(ag_linear(2, 2), x, x, loss = "mse", nepoch = 1L, silent = TRUE,
                      static = 1),
               "ag_fit: static must be TRUE, FALSE or NULL", fixed = TRUE,
               class = "pyggmlr_argument_error")
})

test_that("the hunt's drifts: the same texts and classes as Python's", {
  x <- matrix(c(1, 4, 2, 3, 3, 2, 4, 1), 2)
  expect_error(ag_estimate_training_memory(model = 3, x = x),
               "ag_estimate_training_memory(): model must have parameters(), got numeric",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_estimate_training_memory(list(c(2, 2)), static = "a"),
               'ag_estimate_training_memory(): static must be TRUE or FALSE, got "a"',
               fixed = TRUE, class = "pyggmlr_argument_error")
  # a logical is no learning rate (it was taken as 1)
  expect_error(optimizer_adam(ag_linear(2, 2)$params(), lr = TRUE),
               "optimizer_adam: lr must be a single number, got TRUE", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_fit(ag_linear(2, 2), x, x, batch_size = 2L, verbose = "a"),
               'got "a"', fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_predict(ag_linear(2, 2), NULL), "ag_predict: x must be numeric, got NULL",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_predict(ag_linear(2, 3), matrix(1, 4, 2)),
               paste0("; x looks row-major (4 rows, one per sample): pyggmlr data are [features, ",
                      "samples] with one column per sample, so pass t(x)"),
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(ag_device("xx"), 'ag_device(): device must be "cpu" or "gpu", got "xx"',
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_fit(ag_linear(2, 2), x, x, batch_size = 2L, sample_weight = "a", silent = TRUE),
               "ag_fit: sample_weight must be numeric, got character", fixed = TRUE,
               class = "pyggmlr_argument_error")
})
