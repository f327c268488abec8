# A training script as a ggmlR 0.8.6 user writes it (gradient accumulation with the $grad idiom,
# a checkpoint of weights + optimizer state through saveRDS, resume), run unchanged here.

test_that(paste0("ggmlR 0.8.6 script: accumulate 4 micro-batches = one batch; checkpoint and ",
                 "resume continue identically"), {
  set.seed(42)
  n <- 64
  X <- matrix(rnorm(4 * n), 4, n)
  Y <- matrix(sin(colSums(X)), 1, n)
  make_model <- function() ag_sequential(ag_linear(4, 8, activation = "tanh"), ag_linear(8, 1))

  train_epoch <- function(model, opt, batch) {
    for (s in seq(1, n, by = batch)) {
      idx <- s:(s + batch - 1)
      with_grad_tape({
        out <- model$forward(ag_tensor(X[, idx, drop = FALSE]))
        loss <- ag_mse_loss(out, ag_tensor(Y[, idx, drop = FALSE]))
      })
      backward(loss)
      if (opt$step()) opt$zero_grad()
    }
  }
  weights <- function(model) lapply(model$parameters(), function(p) p$data)

  set.seed(1)
  m_big <- make_model()
  set.seed(1)
  m_acc <- make_model()
  opt_big <- optimizer_adam(m_big$parameters(), lr = 0.01)
  opt_acc <- optimizer_adam(m_acc$parameters(), lr = 0.01, accumulate_steps = 4L)
  train_epoch(m_big, opt_big, 16)
  train_epoch(m_acc, opt_acc, 4)
  expect_equal(opt_acc$t, opt_big$t)
  expect_equal(opt_acc$t, 4L)
  expect_equal(weights(m_acc), weights(m_big), tolerance = 1e-4)

  # checkpoint after epoch 1, then epoch 2
  f <- tempfile(fileext = ".rds")
  saveRDS(list(weights = weights(m_acc), opt = opt_acc$state()), f)
  train_epoch(m_acc, opt_acc, 4)
  final <- weights(m_acc)

  # resume in a fresh model with other weights
  set.seed(99)
  m2 <- make_model()
  ck <- readRDS(f)
  p2 <- m2$parameters()
  for (nm in names(p2)) p2[[nm]]$data <- ck$weights[[nm]]
  opt2 <- optimizer_adam(m2$parameters(), lr = 0.01, accumulate_steps = 4L)
  opt2$load_state(ck$opt)
  expect_equal(opt2$t, 4L)
  train_epoch(m2, opt2, 4)
  expect_identical(weights(m2), final)
  unlink(f)
})
