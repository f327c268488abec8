# ggmlR 0.8.6's ag_capture family on the CPU (spec section 11)

test_that("ag_capture: named arguments, double matrices, matrix outputs", {
  local_f64()
  W <- ag_param(matrix(c(1, 2, 3, 4, 5, 6), 2, 3))
  f <- ag_capture(function(x) ag_matmul(W, x), params = list(W))
  expect_s3_class(f, "ag_captured")
  expect_true(is.environment(attr(f, "captures")))
  expect_equal(f(x = c(1, 0, 1)), matrix(c(6, 8), 2, 1))  # a vector is one column
  expect_equal(f(x = matrix(1L, 3, 2)), W$data %*% matrix(1, 3, 2))
  expect_error(f(c(1, 0, 1)), "ag_capture: call the captured function with named arguments",
               fixed = TRUE)
  expect_error(f(x = 1, x = 2), "call the captured function with named arguments", fixed = TRUE)
  g <- ag_capture(function(a, b) list(s = ag_add(a, b), d = ag_sub(a, b)))
  expect_equal(g(a = matrix(3, 1, 1), b = matrix(1, 1, 1)),
               list(s = matrix(4, 1, 1), d = matrix(2, 1, 1)))
  expect_error(ag_capture(1), "is.function(fn) is not TRUE", fixed = TRUE)
  expect_error(ag_capture(identity, params = list(1)),
               "ag_capture: params must be a list of ag_tensors", fixed = TRUE)
  expect_identical(ag_capture_free(f), f)
  expect_error(ag_capture_free(identity), "ag_capture_free: not a captured function", fixed = TRUE)
})

test_that("ag_capture_step equals the plain Adam step; clipping; fixed shapes; errors", {
  local_f64()
  mk <- function() ag_param(matrix(c(0.5, -0.2, 0.1, 0.3, 0.9, -1), 2, 3))
  x <- matrix(seq(-1, 1, length.out = 12), 3, 4)
  y <- matrix(c(1, 0, 0, 1, 1, 1, 0, 0), 2, 4)
  W1 <- mk()
  o1 <- optimizer_adam(list(W = W1), lr = 0.05)
  step <- ag_capture_step(function(x, y) ag_mse_loss(ag_matmul(W1, x), y), optimizer = o1)
  W2 <- mk()
  o2 <- optimizer_adam(list(W = W2), lr = 0.05)
  for (i in 1:3) {
    l1 <- step(x = x, y = y)
    with_grad_tape(l2 <- ag_mse_loss(ag_matmul(W2, x), y))
    o2$step(backward(l2))
    o2$zero_grad()
    expect_identical(l1, l2$data)
    expect_identical(W1$data, W2$data)
  }
  expect_error(step(x = x[, 1:2], y = y[, 1:2]),
               paste0("ag_capture_step: inputs (x:3x2, y:2x2) differ from the first call (x:3x4, ",
                      "y:2x4); shapes are fixed by the recording -- pad the batch or run ",
                      "this step uncaptured"),
               fixed = TRUE)
  W3 <- mk()
  o3 <- optimizer_adam(list(W = W3), lr = 0.05)
  cs <- ag_capture_step(function(x, y) list(loss = ag_mse_loss(ag_matmul(W3, x), y),
                                            out = ag_matmul(W3, x)),
                        optimizer = o3, max_grad_norm = 0.01)
  r <- cs(x = x, y = y)
  expect_identical(names(r), c("loss", "out", "grad_norm"))
  expect_true(r$grad_norm[1, 1] > 0.01)
  expect_identical(ag_capture_set(cs, 5), cs)
  expect_error(ag_capture_set(step, 1),
               paste0("ag_capture_set: this step was created without max_grad_norm; create it ",
                      "with one to clip"), fixed = TRUE, class = "pyggmlr_state_error")
  expect_error(ag_capture_set(identity, 1), "ag_capture_set: not a function from ag_capture_step()",
               fixed = TRUE)
  expect_error(ag_capture_set(cs, -1), "max_grad_norm must be one positive finite number",
               fixed = TRUE)
  expect_error(ag_capture_step(identity, optimizer = o3, max_grad_norm = Inf),
               "max_grad_norm must be one positive finite number", fixed = TRUE)
  expect_error(ag_capture_step(identity, optimizer = optimizer_sgd(list(W3))),
               "ag_capture_step: only optimizer_adam() is supported", fixed = TRUE)
  expect_error(ag_capture_step(identity, params = "W", optimizer = o3),
               "ag_capture_step: params must be a list of ag_tensors", fixed = TRUE)
  nl <- ag_capture_step(function(x) list(out = ag_matmul(W3, x)), optimizer = o3)
  expect_error(nl(x = x),
               "ag_capture_step: fn must return the loss, or a named list with an element 'loss'",
               fixed = TRUE)
  # a NaN gradient norm: nothing applied
  W4 <- mk()
  o4 <- optimizer_adam(list(W = W4), lr = 0.05)
  ns <- ag_capture_step(function(x) ag_sum(ag_mul(ag_matmul(W4, x), NaN)), optimizer = o4,
                        max_grad_norm = 1)
  before <- W4$data
  expect_error(ns(x = x), "ag_capture_step: the gradient norm is NaN; the update was not applied",
               fixed = TRUE)
  expect_identical(W4$data, before)
  expect_identical(o4$t, 0L)
})

test_that(paste0("a failed captured step fixes no shape; non-numeric arguments and negative ",
                 "tolerances are refused"), {
  W <- ag_param(matrix(1, 3, 4))
  opt <- optimizer_adam(list(W = W), lr = 0.1)
  st <- ag_capture_step(function(x) ag_sum(ag_matmul(W, x)), optimizer = opt)
  expect_error(st(x = matrix(1, 5, 2)), "ag_matmul")
  expect_error(st(x = matrix(1, 4, 2)), NA)
  expect_error(st(x = matrix(1, 4, 3)), "differ from the first call (x:4x2)", fixed = TRUE)
  expect_error(st(x = "abc"), "argument 'x' must be numeric", fixed = TRUE)
  expect_error(ag_gradcheck(function(i) ag_sum(i$W), list(W = ag_param(matrix(1, 2, 2))), atol = -1,
                            quiet = TRUE),
               "atol and rtol must be >= 0", fixed = TRUE)
})

test_that("a captured step takes the element named exactly loss; ag_capture_set(NULL) says so", {
  w <- ag_param(matrix(1, 2, 1))
  s <- ag_capture_step(function(x) list(lossx = ag_sum(ag_mul(w, x))),
                       optimizer = optimizer_adam(list(w)))
  e <- tryCatch(s(x = c(1, 1)), error = function(e) e)  # res$loss took lossx and trained
  expect_s3_class(e, "pyggmlr_value_error")
  expect_identical(conditionMessage(e), paste0("ag_capture_step: fn must return the loss, or a ",
                                               "named list with an element 'loss'"))
  expect_identical(as.vector(w$data), c(1, 1))
  s2 <- ag_capture_step(function(x) ag_sum(ag_mul(w, x)), optimizer = optimizer_adam(list(w)),
                        max_grad_norm = 1)
  e <- tryCatch(ag_capture_set(s2, NULL), error = function(e) e)
  expect_s3_class(e, "pyggmlr_value_error")
  expect_identical(conditionMessage(e), paste0("ag_capture_set: max_grad_norm must be one ",
                                               "positive finite number, got NULL"))
  out <- ag_capture(function(x) 3)(x = c(1, 1))  # as.matrix of the result (was list(3))
  expect_true(is.matrix(out))
  expect_identical(dim(out), c(1L, 1L))
  expect_error(ag_capture(function(x) x)(x = NULL),
               "must be numeric (a matrix or a vector), got NULL", fixed = TRUE,
               class = "pyggmlr_argument_error")
})
