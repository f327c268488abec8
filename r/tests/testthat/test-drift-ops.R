# The functional ops and losses refuse hostile input as Python does (issue 29): the same class, the
# same words, the same first error. Python's tests/core/test_drift_ops.py has the same cases.

ops_x <- function() ag_param(matrix(as.double(1:6), 2, 3))

ops_refused <- function(expr, cls, text) {
  e <- tryCatch({ expr; NULL }, error = identity)
  expect_s3_class(e, cls)  # nolint: object_usage_linter.
  expect_identical(conditionMessage(e), text)  # nolint: object_usage_linter.
}

test_that("the losses take plain pred data (Python freed its temporary)", {
  expect_equal(ag_mse_loss(matrix(1, 2, 3), ops_x())$data, matrix(mean((1 - 1:6)^2)),
               tolerance = 1e-6)
  expect_equal(ag_cross_entropy_loss(matrix(0.5, 2, 3), matrix(1, 2, 3))$data,
               matrix(-2 * log(0.5)), tolerance = 1e-6)
})

test_that("scalar arguments name the value given", {
  x <- ops_x()
  ops_refused(ag_scale(x, "a"), "pyggmlr_argument_error",
              "ag_scale: 'scalar' must be a single number, got \"a\"")
  ops_refused(ag_scale(x, NULL), "pyggmlr_argument_error",
              "ag_scale: 'scalar' must be a single number, got NULL")
  ops_refused(ag_pow(x, c(1, 2)), "pyggmlr_argument_error",
              "ag_pow: 'p' must be a single number, got c(1, 2)")
  ops_refused(ag_clamp(x, 1, NULL), "pyggmlr_argument_error",
              "ag_clamp: 'hi' must be a single number, got NULL")
  ops_refused(ag_scale(x, NA), "pyggmlr_value_error",
              "ag_scale: 'scalar' must be a single number, got NA")
})

test_that("`^` has its own rule and text, as Python's `**`", {
  x <- ops_x()
  txt <- paste0("ag_tensor: '^' needs a tensor base and a single-number exponent (x ^ p); for ",
                "b ^ x use ag_exp(x * log(b))")
  for (f in list(function() x ^ "a", function() x ^ c(1, 2), function() x ^ x, function() 2 ^ x))
    ops_refused(f(), "pyggmlr_argument_error", txt)
  expect_equal((x ^ 2)$data, x$data ^ 2)
  expect_equal((x ^ TRUE)$data, x$data)
  expect_equal((x ^ NaN)$data, x$data ^ NaN)  # NaN reaches ag_pow, as Python's
})

test_that("dim of ag_sum / ag_mean is the one integer rule", {
  rule <- "ag_sum: dim must be NULL (all), 1 (per row) or 2 (per column), got "
  ops_refused(ag_sum(ops_x(), 3), "pyggmlr_value_error", paste0(rule, "3"))
  ops_refused(ag_sum(ops_x(), 1.5), "pyggmlr_value_error", paste0(rule, "1.5"))
  ops_refused(ag_sum(ops_x(), "a"), "pyggmlr_argument_error", paste0(rule, "\"a\""))
  ops_refused(ag_mean(ops_x(), TRUE), "pyggmlr_argument_error",
              paste0(sub("sum", "mean", rule), "TRUE"))
  expect_identical(ag_sum(ops_x(), 1L)$data, matrix(c(9, 12), 2, 1))
  expect_identical(ag_mean(ops_x(), 2)$data, matrix(c(1.5, 3.5, 5.5), 1, 3))
})

test_that("a shape of the wrong length is refused as Python's", {
  ops_refused(ag_reshape(ops_x(), c(3, 2, 1)), "pyggmlr_value_error",
              "ag_reshape: a shape must be c(nrow, ncol), got c(3, 2, 1)")
  ops_refused(ag_reshape(ops_x(), c(3, 2), 5), "pyggmlr_argument_error",
              paste0("ag_reshape: nrow must be an integer within +/-2147483647 (-1: inferred ",
                     "from x's size), got c(3, 2)"))
  expect_identical(dim(ag_reshape(ops_x(), c(3, 2))), c(3L, 2L))
})

test_that("ag_gather keeps ggmlR's order and classes", {
  x <- ops_x()
  ops_refused(ag_gather(x, c(0, 1)), "pyggmlr_shape_error",
              "ag_gather: index has length 2, x has 3 columns")
  ops_refused(ag_gather(x, "a"), "pyggmlr_argument_error",
              "ag_gather: index must be numeric (0-based integers)")
  ops_refused(ag_gather(x, c(0, 1, Inf)), "pyggmlr_value_error",
              "ag_gather: index out of range 0..1 (indices are 0-based)")
  ops_refused(ag_gather(x, c(-Inf, 1, 0.5)), "pyggmlr_value_error",
              "ag_gather: index must be whole numbers (0-based)")
})

test_that("the softmax CE names what a target is", {
  x <- ops_x()
  op <- "ag_softmax_cross_entropy_loss"
  ops_refused(ag_softmax_cross_entropy_loss(x, "a"), "pyggmlr_argument_error",
              paste0(op, ": target must be numeric, got character"))
  ops_refused(ag_softmax_cross_entropy_loss(x, factor(c("a", "b", "a"))),
              "pyggmlr_argument_error", paste0(op, ": target must be numeric, got factor"))
  ops_refused(ag_softmax_cross_entropy_loss(x, array(1, c(2, 3, 2))), "pyggmlr_shape_error",
              paste0(op, ": logits are [2x3] but target is a 2x3x2 array; give a one-hot ",
                     "matrix of the logits' shape or one class id per column"))
})

test_that("loss weights: Python's words, NA a missing number", {
  x <- ops_x()
  ops_refused(ag_softmax_cross_entropy_loss(x, c(0, 1, 1), weight = "a"),
              "pyggmlr_argument_error",
              "ag_softmax_cross_entropy_loss: weight must be numeric, got character")
  ops_refused(ag_bce_with_logits_loss(x, matrix(1, 2, 3), pos_weight = NA),
              "pyggmlr_value_error",
              paste0("ag_bce_with_logits_loss: pos_weight must be finite and >= 0, got NaN at ",
                     "position 1 of [1x1] f32"))
  ops_refused(ag_bce_with_logits_loss(x, matrix(1, 2, 3), pos_weight = c(TRUE, NA)),
              "pyggmlr_argument_error",
              "ag_bce_with_logits_loss: pos_weight must be numbers, got booleans")
})

test_that("1e400 is Inf, as Python's 10**400 now is", {
  x <- ops_x()
  expect_true(all(ag_scale(x, 1e400)$data == Inf))
  expect_identical(ag_clamp(x, -1e400, 3)$data, pmin(matrix(as.double(1:6), 2, 3), 3))
  ops_refused(ag_huber_loss(x, matrix(1, 2, 3), delta = 1e400), "pyggmlr_value_error",
              "ag_huber_loss: delta must be a finite number > 0, got Inf")
  ops_refused(ag_softmax_cross_entropy_loss(x, c(0, 1, 1), ignore_index = -1e400),
              "pyggmlr_value_error",
              "ag_softmax_cross_entropy_loss: ignore_index must be a whole number, got -Inf")
})
