# Rules both front ends wrote and now call once in the core (issue 29): whole-number ids
# (pg_arg_whole_ids: ag_embedding's ids), ag_gather's index (pg_gather_f64: the length, NA, whole
# numbers and range, in ggmlR's order), dp_train's verbose (pg_arg_clamp) and ag_linear's gain
# (pg_arg_gain). Python's
# tests/core/test_rules_once.py has the same cases; tests/r/test_core_rules_parity.py runs both.

.refuses <- function(expr, text, class) {
  e <- tryCatch({ expr; NULL }, error = identity)
  testthat::expect_true(inherits(e, class), info = paste(class(e), collapse = "/"))
  testthat::expect_identical(conditionMessage(e), text)
}

.emb <- function() { set.seed(1); ag_embedding(10, 4) }
.IDS <- "ag_embedding: ids must be whole numbers (0-based), got non-integer values"

test_that("embedding ids that are no whole numbers are refused by the core's rule", {
  e <- .emb()
  for (bad in list(NaN, NA_real_, NA_integer_, Inf, -Inf, 2.5, -0.5, 1e-300))
    .refuses(e$forward(c(2, bad)), .IDS, "pyggmlr_value_error")
  .refuses(e$forward(matrix(c(2, 0.5), 2, 1)), .IDS, "pyggmlr_value_error")
  # the core's rule itself, as Python's _class_ids calls it
  .refuses(.Call(pyggmlr:::R_pg_arg_whole_ids, "f", "class ids", c(0, 2.5)),
           "f: class ids must be whole numbers (0-based), got non-integer values",
           "pyggmlr_value_error")
  expect_null(.Call(pyggmlr:::R_pg_arg_whole_ids, "f", "ids", double()))  # empty
})

test_that("whole embedding ids are kept; the kinds keep their texts", {
  e <- .emb()
  w <- e$weight$data
  expect_identical(e$forward(c(2, 9, -0))$data, w[, c(3L, 10L, 1L)])
  expect_identical(e$forward(c(3L, 1L))$data, w[, c(4L, 2L)])
  expect_identical(dim(e$forward(double())$data), c(4L, 0L))
  .refuses(e$forward(c(2, 1e300)), paste(
    "ag_embedding: id 1e+300 at position 2 is out of range [0, 10) for weight [4x10] f32",
    "(ids are 0-based)"), "pyggmlr_value_error")
  .refuses(e$forward(c(TRUE, FALSE)), "ag_embedding: ids must be 0-based integers, got booleans",
           "pyggmlr_argument_error")
})

.X <- matrix(1:6, 3, 2)
.NA <- "ag_gather: index contains NA"
.WHOLE <- "ag_gather: index must be whole numbers (0-based)"
.RANGE <- "ag_gather: index out of range 0..2 (indices are 0-based)"

test_that("ag_gather's index: the core's checks in ggmlR's order", {
  .refuses(ag_gather(.X, c(0, 1, 2)), "ag_gather: index has length 3, x has 2 columns",
           "pyggmlr_shape_error")
  .refuses(ag_gather(.X, double()), "ag_gather: index has length 0, x has 2 columns",
           "pyggmlr_shape_error")
  .refuses(ag_gather(.X, c(NaN, 1e300)), .NA, "pyggmlr_value_error")   # NA first
  .refuses(ag_gather(.X, c(0.5, NA)), .NA, "pyggmlr_value_error")
  .refuses(ag_gather(.X, c(NA_integer_, 0L)), .NA, "pyggmlr_value_error")
  .refuses(ag_gather(.X, c(Inf, 2.5)), .WHOLE, "pyggmlr_value_error")  # before the range
  .refuses(ag_gather(.X, c(-0.5, 0)), .WHOLE, "pyggmlr_value_error")
  for (bad in list(c(Inf, 0), c(0, -Inf), c(1e300, 0), c(2^31, 0), c(3, 0), c(0L, -1L)))
    .refuses(ag_gather(.X, bad), .RANGE, "pyggmlr_value_error")
  .refuses(ag_gather(.X, "a"), "ag_gather: index must be numeric (0-based integers)",
           "pyggmlr_argument_error")
})

test_that("ag_gather keeps whole indices, empty ones too", {
  expect_identical(ag_gather(.X, c(2, -0))$data, matrix(c(3, 4), 1, 2))
  expect_identical(ag_gather(.X, matrix(c(0L, 2L), 1, 2))$data, matrix(c(1, 6), 1, 2))
  expect_identical(dim(ag_gather(matrix(0, 3, 0), double())$data), c(1L, 0L))
  .refuses(ag_gather(matrix(0, 0, 2), c(0, 0)),
           "ag_gather: index out of range 0..-1 (indices are 0-based)", "pyggmlr_value_error")
})

.V <- "dp_train: verbose must be TRUE/FALSE or an integer, got "

test_that("dp_train's verbose: the core's clamp and refusals", {
  every <- pyggmlr:::.dp_every
  kept <- list(list(NULL, 0L), list(FALSE, 0L), list(TRUE, 1L), list(10L, 10L), list(2.9, 2L),
               list(-0.5, 0L), list(-3, 0L), list(1e300, .Machine$integer.max),
               list(2^31, .Machine$integer.max), list(7.5, 7L))
  for (k in kept) expect_identical(every(k[[1L]]), k[[2L]])
  for (bad in list(NaN, Inf, -Inf, NA_real_, NA_integer_))
    .refuses(every(bad), paste0(.V, pyggmlr:::.arg_show(bad)), "pyggmlr_value_error")
  for (bad in list("x", c(1, 2), NA))
    .refuses(every(bad), paste0(.V, pyggmlr:::.arg_show(bad)), "pyggmlr_argument_error")
  make <- function() ag_sequential(ag_linear(2, 2))
  .refuses(dp_train(make, list(matrix(0, 2, 1)), loss_fn = function(o, s) ag_sum(o), n_iter = 1L,
                    verbose = -Inf), paste0(.V, "-Inf"), "pyggmlr_value_error")
})

test_that("ag_linear's gain: the core's rule, a bad value for the wrong kind too", {
  txt <- "ag_linear: gain must be a single finite number"
  for (g in list(NaN, NA, NA_real_, NA_integer_, Inf, -Inf, TRUE, "a", NULL, c(1, 2), factor("a")))
    .refuses(ag_linear(2, 3, gain = g), txt, "pyggmlr_value_error")
  set.seed(1)
  w1 <- ag_linear(2, 3)$W$data
  for (g in list(2.5, 2L, -3, 0)) {
    set.seed(1)
    l <- ag_linear(2, 3, gain = g)
    expect_identical(l$to_config()$gain, as.double(g))
    expect_equal(l$W$data, w1 * g, tolerance = 1e-6)
  }
})
