# The R side of the drifts the cross-language fuzzer (tests/r/test_fuzz_refusal_parity.py,
# issue 29) found, with exact classes and texts (Python's:
# tests/hostile/test_hostile_fuzz_drifts.py).

refused_as <- function(expr, cls, text) {
  e <- tryCatch({ expr; NULL }, error = function(e) e)
  testthat::expect_s3_class(e, cls)
  testthat::expect_identical(class(e)[[1L]], cls)
  testthat::expect_identical(conditionMessage(e), text)
}

test_that("ag_matmul_precision refuses as match.arg, in both languages' words", {
  one_of <- "ag_matmul_precision: 'arg' should be one of \u201cdefault\u201d, \u201cf32\u201d"
  refused_as(ag_matmul_precision(NULL), "pyggmlr_argument_error",
             paste(one_of, "(precision = NULL)"))
  refused_as(ag_matmul_precision("x"), "pyggmlr_value_error", paste(one_of, "(precision = \"x\")"))
  expect_identical(ag_matmul_precision(), "default")
})

test_that("clip_grad_value's bad clip_value names the function and the value (the core's text)", {
  w <- ag_param(matrix(1, 2, 2))
  refused_as(clip_grad_value(list(w), clip_value = -1), "pyggmlr_value_error",
             "clip_grad_value: clip_value must be a single positive finite number, got -1")
  refused_as(clip_grad_value(list(w), clip_value = NaN), "pyggmlr_value_error",
             "clip_grad_value: clip_value must be a single positive finite number, got NaN")
})

test_that("ag_gather checks x before the index", {
  refused_as(ag_gather(NULL, c(0, 1)), "pyggmlr_dtype_error",
             "ag_gather: expected a numeric matrix, vector or ag_tensor, got NULL")
  refused_as(ag_gather("a", c(0, 1)), "pyggmlr_dtype_error",
             "ag_gather: expected a numeric matrix, vector or ag_tensor, got character")
  # the index checks keep ggmlR's order and texts
  refused_as(ag_gather(matrix(1, 2, 2), 0), "pyggmlr_shape_error",
             "ag_gather: index has length 1, x has 2 columns")
})

test_that("a vector is no parameter list, a list no tensor data (Python's array, ragged list)", {
  refused_as(optimizer_sgd(c(1, 2)), "pyggmlr_argument_error",
             paste0("optimizer_sgd: is.list(params) is not TRUE (params must be a list of ",
                    "ag_tensors or a model, got c(1, 2))"))
  refused_as(clip_grad_norm(c(1, 2), max_norm = 1), "pyggmlr_argument_error",
             "clip_grad_norm: params must be a list of ag_tensors, got c(1, 2)")
  refused_as(ag_tensor(list(1, list(2))), "pyggmlr_dtype_error",
             "ag_tensor: expected a numeric matrix, vector or ag_tensor, got list")
  refused_as(ag_dataloader(list(1, list(2)), batch_size = 2), "pyggmlr_argument_error",
             "ag_dataloader: x must be numeric, got list")
})

test_that("a named list is no size (as Python's dict); an unnamed one (JSON's) still is", {
  refused_as(ag_conv2d(1, 2, list(a = 1)), "pyggmlr_argument_error",
             "ag_conv2d: kernel_size must be a number or a pair c(H, W), got list(a = 1)")
  refused_as(ag_conv1d(1, 2, list(a = 3)), "pyggmlr_argument_error",
             "ag_conv1d: kernel_size must be a number, got list(a = 3)")
  refused_as(ag_max_pool2d(list(a = 1)), "pyggmlr_argument_error",
             paste("ag_max_pool2d: kernel_size must be a number or a pair c(H, W) of numbers,",
                   "got list(a = 1)"))
  expect_s3_class(ag_conv2d(1, 2, list(3, 3)), "ag_conv2d")
  expect_s3_class(ag_max_pool2d(list(2, 2)), "ag_max_pool2d")
})

test_that("ag_fit shows a bad progress value as every argument check does", {
  ggml_set_seed(1)
  m <- ag_sequential(ag_linear(2, 3))
  fit <- function(p) ag_fit(m, matrix(1, 2, 4), c(0, 1, 2, 0), nepoch = 1, batch_size = 2,
                            silent = TRUE, optimizer = "sgd", progress = p)
  refused_as(fit(c(1, 2)), "pyggmlr_value_error",
             'ag_fit: progress must be "auto", "bar" or "none", got c(1, 2)')
  refused_as(fit(NULL), "pyggmlr_value_error",
             'ag_fit: progress must be "auto", "bar" or "none", got NULL')
  refused_as(fit("yes"), "pyggmlr_value_error",
             'ag_fit: progress must be "auto", "bar" or "none", got yes')
})
