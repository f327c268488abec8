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

test_that("ag_set_threads needs one whole number", {
  expect_error(ag_set_threads(NA), "one whole number")
  expect_error(ag_set_threads(1.5), "one whole number")
  expect_error(ag_set_threads("2"), "one whole number")
  expect_error(ag_set_threads(-1), ">= 1")
})
