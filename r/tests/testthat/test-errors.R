test_that("bad inputs raise R errors with the core's message (never crash R)", {
  expect_error(ag_matmul(ag_tensor(matrix(1, 2, 3)), ag_tensor(matrix(1, 2, 2))), "ag_matmul")
  expect_error(ag_add(ag_tensor(matrix(1, 2, 3)), matrix(1, 3, 2)), "ag_add")
  expect_error(ag_relu("a"), "ag_relu")
  expect_error(ag_tensor(list(1, 2)), "")
  expect_error(ag_tensor(array(1, c(2, 2, 2))), "2-D")
  expect_error(ag_scale(ag_tensor(1), "x"), "single number")
  expect_error(ag_pow(ag_tensor(1), c(1, 2)), "single number")
  expect_error(ag_sum(ag_tensor(1), dim = 3), "dim")
  expect_error(ag_reshape(ag_tensor(1:6), 4, -1), "")
  expect_error(ag_reshape(ag_tensor(1:6), -1, -1), "")
  expect_error(ag_mse_loss(ag_tensor(matrix(1, 2, 2)), matrix(1, 3, 3)), "ag_mse_loss")
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 2)), c(0.5, 1)), "whole")
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 2)), matrix(0, 2, 2)),
               "one-hot")
  expect_error(optimizer_sgd(list(1, 2)), "not an ag_tensor")
  p <- ag_param(1)
  o <- optimizer_sgd(list(p))
  expect_error(o$step(list()), "grads")
  expect_error(o$lr <- "a", "number")
  expect_error(clip_grad_norm(list(p), NULL, -1), "max_norm")
  expect_error(.Call(pyggmlr:::R_pg_tensor_info, 1), "pg_tensor")
  expect_error(.Call(pyggmlr:::R_pg_optim_step, p$.ptr, NULL), "pg_optim")
})

test_that("the error bridge leaves no stale error behind", {
  expect_error(ag_relu("a"))
  expect_equal(ag_relu(ag_tensor(c(-1, 1)))$data, matrix(c(0, 1), 2, 1))
})

test_that("unloading the DLL with tensors alive and the GEMM pool running does not crash R", {
  out <- run_rscript(c(
    "library(pyggmlr)",
    "ag_set_threads(2L); ag_set_blas('builtin')",
    "W <- ag_tensor(matrix(runif(512 * 512), 512)); Z <- ag_matmul(W, W)",
    "x <- ag_relu(ag_tensor(matrix(-1:2, 2)))",
    "unloadNamespace('pyggmlr')",
    "library.dynam.unload('pyggmlr', system.file(package = 'pyggmlr'))",
    "rm(x, W, Z); invisible(gc())",
    "library(pyggmlr); z <- ag_relu(ag_tensor(matrix(-1:2, 2)))",
    "cat('result', z$data, '\\n')"))
  expect_null(attr(out, "status"))
  expect_true(any(grepl("^result 0 0 1 2", out)))
})

test_that("ag_set_threads needs one whole number (the one integer rule, issue 29)", {
  rule <- "ag_set_threads(): n must be an integer in [1, 1024], got "
  expect_error(ag_set_threads(NA_real_), paste0(rule, "NA"), fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_set_threads(NA), paste0(rule, "NA"), fixed = TRUE,  # a logical: the wrong kind
               class = "pyggmlr_argument_error")
  expect_error(ag_set_threads(1.5), paste0(rule, "1.5"), fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_set_threads("2"), paste0(rule, "\"2\""), fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_set_threads(TRUE), rule, fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_set_threads(-1), paste0(rule, "-1"), fixed = TRUE, class = "pyggmlr_value_error")
  n0 <- ag_get_threads()
  # the previous count comes back (invisibly), as in Python; a whole double is an integer
  expect_identical(withVisible(ag_set_threads(2)), list(value = n0, visible = FALSE))
  expect_identical(ag_get_threads(), 2L)
  expect_identical(ag_set_threads(n0), 2L)
})

test_that("one integer rule (.arg_int), as Python's check_int: texts and classes (issue 29)", {
  ai <- pyggmlr:::.arg_int
  expect_identical(ai(3, "f", "n", 1L), 3L)  # any numeric type with a whole value
  expect_identical(ai(4L, "f", "n", 0L), 4L)
  expect_identical(ai(1e11, "f", "n", 0, 1e12), 1e11)  # past R's integers: a double
  expect_error(ai(0, "ag_fit", "nepoch", 1L), "^ag_fit: nepoch must be an integer >= 1, got 0$",
               class = "pyggmlr_value_error")
  expect_error(ai(1.5, "fn", "top", 0L), "^fn: top must be an integer >= 0, got 1.5$",
               class = "pyggmlr_value_error")
  expect_error(ai("a", "ag_linear", "in_features", 1L),
               "^ag_linear: in_features must be an integer >= 1, got \"a\"$",
               class = "pyggmlr_argument_error")
  expect_error(ai(TRUE, "f", "n", 1L), "^f: n must be an integer >= 1, got TRUE$",
               class = "pyggmlr_argument_error")
  expect_error(ai(5, "f", "n", 0L, 4L), "^f: n must be an integer in \\[0, 4\\], got 5$",
               class = "pyggmlr_value_error")
  expect_error(ai(5, "f", "n", NULL, 4L), "^f: n must be an integer in \\[-Inf, 4\\]",
               class = "pyggmlr_value_error")
  expect_error(ai(3e9, "f", "n", 1L), "an integer >= 1 and <= 2147483647 \\(R's integer range\\)",
               class = "pyggmlr_value_error")
  expect_error(ai(NaN, "f", "n", 0L, rule = "one of the words"),
               "^f: n must be one of the words, got NaN$", class = "pyggmlr_value_error")
  for (gone in c(".check_count", ".PG_MAX_THREADS"))
    expect_false(exists(gone, asNamespace("pyggmlr")))
})
