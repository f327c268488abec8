# A ggmlR 0.8.6 user's checkpoint script, written against ggmlR's API only (no pyggmlr extras):
# build, train a few steps, snapshot with ag_state_dict() + opt$state() through saveRDS, rebuild
# with other weights, ag_load_state_dict() + opt$load_state(), continue: the same numbers, bit for
# bit, as continuing without the snapshot (ggmlR's test-ag-state-dict property on the CPU).

test_that("a ggmlR checkpoint script resumes exactly", {
  set.seed(501L)
  x <- matrix(rnorm(4 * 16), 4, 16)
  y <- matrix(rnorm(2 * 16), 2, 16)

  build <- function(seed, h = 8L) {
    set.seed(seed)
    ag_sequential(ag_linear(4L, h, "relu"), ag_batch_norm(h), ag_linear(h, 2L))
  }
  train <- function(model, opt, k) {
    ag_train(model)
    losses <- numeric(k)
    for (i in seq_len(k)) {
      with_grad_tape({
        loss <- ag_mse_loss(model$forward(ag_tensor(x)), ag_tensor(y))
      })
      opt$step(backward(loss))
      opt$zero_grad()
      losses[i] <- loss$data[1, 1]
    }
    losses
  }
  weights <- function(model) {
    sd <- ag_state_dict(model)
    c(sd$parameters, sd$buffers)
  }

  for (maker in list(function(m) optimizer_adam(m$parameters(), lr = 0.01),
                     function(m) optimizer_sgd(m$parameters(), lr = 0.05, momentum = 0.9))) {
    m1 <- build(1L)
    o1 <- maker(m1)
    train(m1, o1, 3L)
    f <- tempfile(fileext = ".rds")
    saveRDS(list(model = ag_state_dict(m1), opt = o1$state()), f)
    cont_losses <- train(m1, o1, 3L)
    cont <- weights(m1)

    snap <- readRDS(f)
    unlink(f)
    m2 <- build(999L)                          # different initial weights
    o2 <- maker(m2)
    ag_load_state_dict(m2, snap$model)
    o2$load_state(snap$opt)
    res_losses <- train(m2, o2, 3L)
    expect_identical(res_losses, cont_losses)
    expect_identical(weights(m2), cont)
  }

  # a target network, as in ggmlR's docs
  online <- build(3L)
  target <- build(4L)
  ag_load_state_dict(target, ag_state_dict(online))
  ag_eval(online)
  ag_eval(target)
  expect_identical(target$forward(ag_tensor(x))$data, online$forward(ag_tensor(x))$data)

  # ggmlR's save/load with a stored builder keeps working on a ggmlR-style path
  f <- tempfile(fileext = ".rds")
  ag_save_model(online, f, model_fn = function() build(5L))
  back <- ag_load_model(f, model_fn = function() build(6L))
  expect_identical(back$forward(ag_tensor(x))$data, online$forward(ag_tensor(x))$data)
  unlink(f)
})
