test_that("ag_gradcheck restores inputs exactly, leaves $grad, reports", {
  local_f64()
  set.seed(2)
  v <- matrix(runif(6), 2, 3)
  p <- ag_param(v)
  out <- capture.output(res <- ag_gradcheck(function(i) ag_sum(ag_exp(i$p)), list(p = p)))
  expect_true(res)
  expect_identical(p$data, v)
  expect_null(p$grad)
  expect_match(out[1], "^\\[gradcheck\\] 'p': max_err = .*PASS$")
  expect_equal(out[2], "[gradcheck] Overall: PASS")
  # a wrong analytical gradient fails: stop-gradient through ag_no_grad
  expect_false(ag_gradcheck(function(i) ag_sum(ag_mul(i$p, ag_no_grad(ag_scale(i$p, 1)))),
                            list(p = p), quiet = TRUE))
})

test_that("ag_gradcheck on f32 models with the default arguments (the core's dtype-aware defaults)",
          {
  set.seed(1)
  W <- ag_param(matrix(rnorm(12), 4, 3))
  expect_identical(W$dtype, "f32")
  expect_true(ag_gradcheck(function(i) ag_sum(ag_relu(i$W)), list(W = W), quiet = TRUE))
  set.seed(2)
  W1 <- ag_param(matrix(rnorm(24), 6, 4))
  W2 <- ag_param(matrix(rnorm(18), 3, 6))
  x <- matrix(seq(-1, 1, length.out = 20), 4, 5)
  y <- c(0L, 2L, 1L, 1L, 0L)
  expect_true(ag_gradcheck(function(i) ag_softmax_cross_entropy_loss(ag_matmul(i$W2,
      ag_tanh(ag_matmul(i$W1, x))), y),
                           list(W1 = W1, W2 = W2), quiet = TRUE))
  # f(W) = sum(W * W) with a constant second factor: backward gives W, not 2W -> must fail
  for (dt in c("f32", "f64")) {
    old <- ag_dtype(dt)
    set.seed(5)
    V <- ag_param(matrix(rnorm(9), 3, 3))
    expect_false(ag_gradcheck(function(i) ag_sum(ag_mul(i$V, ag_tensor(i$V$data))), list(V = V),
                              quiet = TRUE))
    ag_dtype(old)
  }
  before <- W$data
  expect_error(ag_gradcheck(function(i) ag_sum(i$W), list(W = W), eps = 0, quiet = TRUE),
               "eps must be a finite number > 0")
  expect_error(ag_gradcheck(function(i) ag_sum(i$W), list(W = W), eps = 1e-12, quiet = TRUE),
               "below the resolution of f32")
  expect_identical(W$data, before)
})
