test_that("dataloader: batches, coverage, shuffle with sample(), errors, print", {
  x <- matrix(1:20, 2, 10); y <- matrix(1:10, 1, 10)
  dl <- ag_dataloader(x, y, batch_size = 4, shuffle = FALSE)
  expect_equal(dl$n_batches(), 2L)
  b <- dl$next_batch()
  expect_equal(dim(b$x$data), c(2L, 4L))
  expect_equal(b$y$data, matrix(1:4, 1, 4) + 0)
  expect_true(dl$has_next()); dl$next_batch(); expect_false(dl$has_next())
  expect_error(dl$next_batch(), "No more batches")
  expect_equal(length(dl$epoch()), 2L)
  set.seed(42)
  ds <- ag_dataloader(x, y, batch_size = 5)
  set.seed(42)
  expect_equal(ds$order, sample(10))
  expect_equal(ds$next_batch()$y$data[1, ], as.double(sample_order <- ds$order[1:5]))
  dr <- ag_dataloader(t(x), batch_size = 5, shuffle = FALSE, col_major = FALSE)
  expect_equal(dr$next_batch()$x$data, x[, 1:5] + 0)
  expect_error(ag_dataloader(x, matrix(1, 1, 3)), "same number of samples")
  expect_equal(capture.output(print(dl)), "ag_dataloader | n=10 | batch_size=4 | n_batches=2 | shuffle=FALSE")
})

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

test_that("ggml_set_seed seeds R's RNG", {
  ggml_set_seed(5); a <- runif(3)
  set.seed(5); expect_equal(a, runif(3))
  expect_null(ggml_set_seed(NULL))
})

test_that("XOR-ish training loop lowers the loss", {
  set.seed(1)
  x <- matrix(c(0, 0, 0, 1, 1, 0, 1, 1), 2, 4); y <- matrix(c(0, 1, 1, 0), 1, 4)
  l1 <- ag_linear(2, 8, "tanh"); l2 <- ag_linear(8, 1, "sigmoid")
  opt <- optimizer_adam(c(l1$params(), l2$params()), lr = 0.05)
  losses <- numeric(50)
  for (i in 1:50) {
    with_grad_tape(l <- ag_mse_loss(l2$forward(l1$forward(x)), y))
    losses[i] <- l$data[1, 1]
    opt$step(backward(l)); opt$zero_grad()
  }
  expect_lt(mean(losses[41:50]), mean(losses[1:10]))
})
