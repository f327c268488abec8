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
  expect_false(ag_gradcheck(function(i) ag_sum(ag_mul(i$p, ag_no_grad(ag_scale(i$p, 1)))), list(p = p), quiet = TRUE))
})
