# ag_predict / ag_evaluate / ag_accuracy, ag_tape_memory, the seed and the settings refuse hostile
# input as Python does (issue 29): the same class, the same words, no base R error. Python's
# tests/train/test_drift_misc.py has the same cases.

misc_refused <- function(expr, cls, text) {
  e <- tryCatch({ expr; NULL }, error = identity)
  expect_s3_class(e, cls)  # nolint: object_usage_linter.
  expect_identical(conditionMessage(e), text)  # nolint: object_usage_linter.
}

misc_model <- function() {
  ggml_set_seed(1)
  ag_linear(3, 2)
}

# a model whose output rows follow the batch: 3 rows, then 1 for the last sample
misc_square <- function(x) ag_tensor(matrix(1, ncol(x$data), ncol(x$data)))

test_that("ag_predict's batches keep their rows (cbind's simpleError before)", {
  rows <- paste0(": the model returned 3 rows for the first batch but 1 for a later one ",
                 "(batch_size 3); its outputs must have the same rows for every batch")
  x <- matrix(1, 3, 4)
  y <- c(0, 1, 1, 0)
  misc_refused(ag_predict(misc_square, x, batch_size = 3), "pyggmlr_shape_error",
               paste0("ag_predict", rows))
  misc_refused(ag_evaluate(misc_square, x, y, batch_size = 3, loss = "mse"),
               "pyggmlr_shape_error", paste0("ag_evaluate", rows))
  misc_refused(ag_accuracy(misc_square, x, y, batch_size = 3), "pyggmlr_shape_error",
               paste0("ag_accuracy", rows))
  expect_identical(dim(ag_predict(misc_square, x, batch_size = 4)), c(4L, 4L))
  expect_identical(dim(ag_predict(function(x) x, x, batch_size = 3)), c(3L, 4L))
})

test_that("a threshold must be finite; NaN is a number, NA is not", {
  x <- matrix(1, 3, 4)
  y <- c(0, 1, 1, 0)
  fin <- "%s: threshold must be a finite number, got %s"
  misc_refused(ag_evaluate(misc_model(), x, y, threshold = 1e400, metrics = "accuracy"),
               "pyggmlr_value_error", sprintf(fin, "ag_evaluate", "Inf"))
  misc_refused(ag_evaluate(misc_model(), x, y, threshold = NaN, metrics = "accuracy"),
               "pyggmlr_value_error", sprintf(fin, "ag_evaluate", "NaN"))
  misc_refused(ag_accuracy(misc_model(), x, y, threshold = -1e400), "pyggmlr_value_error",
               sprintf(fin, "ag_accuracy", "-Inf"))  # R said -inf (the core's %g)
  misc_refused(ag_accuracy(misc_model(), x, y, threshold = NaN), "pyggmlr_value_error",
               sprintf(fin, "ag_accuracy", "NaN"))
  misc_refused(ag_evaluate(misc_model(), x, y, threshold = NaN), "pyggmlr_argument_error",
               "ag_evaluate: give loss, metrics or both")
  misc_refused(ag_accuracy(misc_model(), x, y, threshold = NA), "pyggmlr_argument_error",
               "ag_accuracy: threshold must be a number or NULL, got NA")
  onehot <- diag(2)[, y + 1]  # a finite threshold reads each output: 0/1 targets of its shape
  expect_identical(ag_evaluate(misc_model(), x, onehot, threshold = 0, metrics = "accuracy"),
                   list(accuracy = 0.5))
  expect_identical(ag_accuracy(misc_model(), x, onehot, threshold = 0), 0.5)
  # a threshold with class ids: ag_evaluate's error named ag_accuracy
  misc_refused(ag_evaluate(misc_model(), x, y, threshold = 0, metrics = "accuracy"),
               "pyggmlr_shape_error", paste0("ag_evaluate: the model's output is [2x4] but y has ",
                                             "1 rows: give 0/1 targets of the output's shape"))
})

test_that("ag_set_blas refuses a name that is not a string as an argument error", {
  rule <- "ag_set_blas(): name must be one of 'default', 'r', 'builtin', 'openblas', got "
  before <- ag_blas_name()
  misc_refused(ag_set_blas(1), "pyggmlr_argument_error", paste0(rule, "1"))
  misc_refused(ag_set_blas(NULL), "pyggmlr_argument_error", paste0(rule, "NULL"))
  misc_refused(ag_set_blas(c("r", "builtin")), "pyggmlr_argument_error",
               paste0(rule, "c(\"r\", \"builtin\")"))
  misc_refused(ag_set_blas("foo"), "pyggmlr_value_error", paste0(rule, "\"foo\""))
  expect_identical(ag_blas_name(), before)  # a failed call changes nothing
})

test_that("ag_to_device names what it got", {
  misc_refused(ag_to_device(1, "cpu"), "pyggmlr_argument_error",
               "ag_to_device(): tensor must be an ag_tensor, got numeric")
  misc_refused(ag_to_device(matrix(1), "cpu"), "pyggmlr_argument_error",
               "ag_to_device(): tensor must be an ag_tensor, got matrix")
})

test_that("ag_tape_memory checks top, quiet, then compiled", {
  misc_refused(ag_tape_memory(quiet = "a"), "pyggmlr_argument_error",
               "ag_tape_memory: quiet must be TRUE or FALSE, got \"a\"")
  misc_refused(ag_tape_memory(top = -1, compiled = 1), "pyggmlr_value_error",
               "ag_tape_memory: top must be an integer >= 0, got -1")
  misc_refused(ag_tape_memory(quiet = 1, compiled = 1), "pyggmlr_argument_error",
               "ag_tape_memory: quiet must be TRUE or FALSE, got 1")
})

test_that("a seed past a double is Inf, refused as in Python", {
  misc_refused(ggml_set_seed(1e400), "pyggmlr_value_error",
               "ggml_set_seed: supplied seed is not a valid integer, got Inf")
  misc_refused(ag_dataloader(matrix(1, 3, 4), seed = 1e400), "pyggmlr_value_error",
               "ag_dataloader: supplied seed is not a valid integer, got Inf")
})

test_that("the optimizers' lines write numbers as cat() does, as Python's now do", {
  p <- list(w = ag_param(matrix(1)))
  expect_identical(capture.output(print(optimizer_sgd(p, lr = 1e-4, momentum = 0.9))),
                   "SGD optimizer | lr = 1e-04 | momentum = 0.9 | params: 1 ")
  expect_identical(capture.output(print(optimizer_adam(p, lr = 123456789, beta2 = 0.9999))),
                   paste0("Adam optimizer | lr = 123456789 | beta1 = 0.9 | beta2 = 0.9999 | ",
                          "step = 0 | params: 1 "))
  expect_identical(capture.output(print(ag_early_stopping(min_delta = 1e-4))),
                   paste0("ag_early_stopping | patience=5 | min_delta=1e-04 | restore_best=TRUE | ",
                          "monitor=auto | mode=auto"))
  expect_identical(capture.output(print(ag_linear(3, 2, "relu"))),
                   "ag_linear: linear(3, 2, relu) (8 parameters)")
})

test_that("batch_size 2^31 - 1 runs one batch (R's integer sum overflowed to NA)", {
  big <- 2147483647
  d <- ag_dataloader(matrix(as.double(1:3), 1, 3), batch_size = big, drop_last = FALSE,
                     shuffle = FALSE)
  expect_identical(d$next_batch()$x$data, matrix(as.double(1:3), 1, 3))
  expect_false(d$has_next())
  expect_identical(length(ag_dataloader(matrix(1, 1, 3), batch_size = big)$epoch()), 0L)
  m <- misc_model()
  expect_identical(ag_predict(m, matrix(1, 3, 4), batch_size = big),
                   ag_predict(m, matrix(1, 3, 4)))
})
