# A ggmlR 0.8.6 user's script (schedules and gradient helpers), written as it would be for
# library(ggmlR) and run unchanged on pyggmlr: one-cycle SGD with momentum, value clipping and
# the anomaly check in the loop, then warm-up cosine Adam; the rates follow ggmlR's formulas.

test_that("ggmlR-style script: one-cycle SGD + clip_grad_value + check_grad_anomaly", {
  set.seed(42)
  x <- matrix(rnorm(4 * 64), 4, 64)
  y <- as.integer(colSums(x[1:2, ]) > 0)
  model <- ag_sequential(ag_linear(4, 16, activation = "relu"), ag_linear(16, 2))
  opt <- optimizer_sgd(model$parameters(), lr = 0.01, momentum = 0.9)
  sched <- lr_scheduler_onecycle(opt, max_lr = 0.2, total_steps = 40)
  lrs <- numeric(0)
  moms <- numeric(0)
  losses <- numeric(0)
  for (step in 1:40) {
    with_grad_tape({
      logits <- model$forward(ag_tensor(x))
      loss <- ag_softmax_cross_entropy_loss(logits, y)
    })
    grads <- backward(loss)
    clip_grad_value(model$parameters(), grads, 1.0)
    report <- check_grad_anomaly(model$parameters(), grads, action = "stop")
    expect_true(all(report$status %in% c("ok", "missing")))
    opt$step(grads)
    opt$zero_grad()
    sched$step()
    lrs <- c(lrs, opt$lr)
    moms <- c(moms, opt$momentum)
    losses <- c(losses, loss$data[1, 1])
  }
  # ggmlR's one-cycle: starts at max_lr / 25, peaks at step 12 (30% of 40), ends at max_lr / 1e4
  expect_equal(max(lrs), 0.2, tolerance = 1e-12)
  expect_equal(which.max(lrs), 12L)
  expect_equal(tail(lrs, 1), 0.2 / 1e4, tolerance = 1e-12)
  expect_equal(min(moms), 0.85, tolerance = 1e-12)  # momentum cycles against the rate
  expect_lt(mean(tail(losses, 5)), losses[1])
  acc <- mean(apply(model$forward(ag_tensor(x))$data, 2, which.max) - 1L == y)
  expect_gt(acc, 0.9)
})

test_that("ggmlR-style script: warm-up cosine Adam and cyclic rates", {
  set.seed(1)
  W <- ag_param(matrix(rnorm(6), 2, 3))
  opt <- optimizer_adam(list(W = W), lr = 0.05)
  sched <- lr_scheduler_warmup_cosine(opt, warmup_steps = 5, total_steps = 20, lr_min = 0.001)
  lrs <- numeric(0)
  for (i in 1:20) {
    with_grad_tape(loss <- ag_mse_loss(ag_matmul(W, matrix(1, 3, 4)), matrix(0, 2, 4)))
    opt$step(backward(loss))
    opt$zero_grad()
    sched$step()
    lrs <- c(lrs, opt$lr)
  }
  expect_equal(lrs[5], 0.05, tolerance = 1e-12)       # the end of the warm-up is the peak
  expect_equal(lrs[20], 0.001, tolerance = 1e-12)     # lr_min at total_steps
  expect_true(all(diff(lrs[5:20]) <= 0))
  opt2 <- optimizer_sgd(list(W = W), lr = 0.1)
  cyc <- lr_scheduler_cyclic(opt2, base_lr = 0.01, max_lr = 0.1, step_size_up = 4)
  r <- vapply(1:8, function(i) { cyc$step(); opt2$lr }, numeric(1))
  expect_equal(r[4], 0.1, tolerance = 1e-12)
  expect_equal(r[8], 0.01, tolerance = 1e-12)
})
