# dp_train: ggmlR's in-process data parallelism, replicas matched by identity, all replicas'
# gradients cleared every step.

dp_data <- function(n = 6, seed = 1) {
  set.seed(seed)
  lapply(seq_len(n),
         function(i) list(x = matrix(rnorm(3 * 4), 3, 4), y = matrix(rnorm(2 * 4), 2, 4)))
}
dp_fns <- list(forward_fn = function(m, s) m$forward(s$x), target_fn = function(s) s$y,
               loss_fn = function(out, y) ag_mse_loss(out, y))

test_that("dp_train returns params, loss_history, model; 1 replica converges; verbose lines", {
  data <- dp_data()
  make <- function() ag_sequential(ag_linear(3, 8, "tanh"), ag_linear(8, 2))
  set.seed(2)
  out <- capture.output(res <- dp_train(make, data, loss_fn = dp_fns$loss_fn,
                                        forward_fn = dp_fns$forward_fn,
                                        target_fn = dp_fns$target_fn, n_iter = 60, lr = 0.02,
                                        verbose = 20))
  expect_named(res, c("params", "loss_history", "model"))
  expect_length(res$loss_history, 60L)
  expect_true(all(is.finite(res$loss_history)))
  expect_lt(mean(res$loss_history[55:60]), mean(res$loss_history[1:6]))
  expect_identical(names(res$params), names(res$model$parameters()))
  expect_equal(out,
               sprintf("[dp_train] iter %4d / 60  loss = %.6f", c(1, 20, 40, 60),
                       res$loss_history[c(1, 20, 40, 60)]))
  expect_silent(dp_train(make, data, loss_fn = dp_fns$loss_fn, forward_fn = dp_fns$forward_fn,
                         target_fn = dp_fns$target_fn, n_iter = 2, verbose = FALSE))
})

test_that("2 replicas equal one model trained on the mean loss of the same samples (f64, Adam)", {
  local_f64()
  data <- dp_data(4, seed = 3)
  made <- list()
  make <- function() {
    m <- ag_sequential(ag_linear(3, 5, "tanh"), ag_linear(5, 2))
    made[[length(made) + 1L]] <<- m
    m
  }
  set.seed(4)
  res <- dp_train(make, data, loss_fn = dp_fns$loss_fn, forward_fn = dp_fns$forward_fn,
                  target_fn = dp_fns$target_fn,
                  n_replicas = 2, n_iter = 5, lr = 0.05, max_norm = 0.5, verbose = FALSE)
  expect_length(made, 2L)
  expect_identical(res$model, made[[1]])
  # reference: replica 1's initial weights, one model, loss = mean of the two replicas' losses
  set.seed(4)
  ref <- ag_sequential(ag_linear(3, 5, "tanh"), ag_linear(5, 2))
  opt <- optimizer_adam(ref$parameters(), lr = 0.05)
  hist <- numeric(5)
  for (it in 1:5) {
    base <- ((it - 1) * 2) %% 4
    s1 <- data[[base + 1]]
    s2 <- data[[base + 2]]
    with_grad_tape({
      l1 <- ag_mse_loss(ref$forward(s1$x), s1$y)
      l2 <- ag_mse_loss(ref$forward(s2$x), s2$y)
      l <- ag_scale(ag_add(l1, l2), 0.5)
    })
    hist[it] <- l$data[1, 1]
    g <- backward(l)
    clip_grad_norm(ref$parameters(), g, 0.5)
    opt$step(g)
    opt$zero_grad()
  }
  expect_equal(res$loss_history, hist, tolerance = 1e-12)
  pr <- ref$parameters()
  for (k in names(pr)) {
    expect_equal(res$params[[k]]$data, pr[[k]]$data, tolerance = 1e-12, info = k)
    # replica 2 holds replica 1's weights after every step
    expect_identical(made[[2]]$parameters()[[k]]$data, res$params[[k]]$data, info = k)
  }
  # every replica's gradients are cleared (ggmlR 0.8.2 left replicas 2..N accumulating)
  for (r in 1:2) for (p in made[[r]]$parameters()) expect_null(p$grad)
})

test_that("replicas are matched by position, not by name (unnamed parameter lists work)", {
  local_f64()
  data <- dp_data(2, seed = 5)
  make <- function() {
    e <- new.env()
    e$W <- ag_param(matrix(0.1, 2, 3))
    e$V <- ag_param(matrix(0.2, 2, 3))
    e$forward <- function(x) ag_add(ag_matmul(e$W, x), ag_matmul(e$V, x))
    e$parameters <- function() list(e$W, e$V)   # no names: ggmlR 0.8.2 would update nothing
    e
  }
  res <- dp_train(make, data, loss_fn = dp_fns$loss_fn, forward_fn = dp_fns$forward_fn,
                  target_fn = dp_fns$target_fn,
                  n_replicas = 2, n_iter = 3, lr = 0.1, verbose = FALSE)
  expect_false(isTRUE(all.equal(res$model$W$data, matrix(0.1, 2, 3))))
  expect_false(isTRUE(all.equal(res$model$V$data, matrix(0.2, 2, 3))))
})

test_that("dp_train: loss_fn = NULL uses the forward result; data as tensors; errors", {
  set.seed(6)
  xs <- lapply(1:3, function(i) matrix(rnorm(4), 2, 2))
  make <- function() ag_linear(2, 1)
  res <- dp_train(make, xs, forward_fn = function(m, s) ag_mean(ag_pow(m$forward(s), 2)),
                  n_replicas = 3,
                  n_iter = 20, lr = 0.05, verbose = FALSE)
  expect_lt(res$loss_history[20], res$loss_history[1])
  res2 <- dp_train(function() { l <- ag_linear(2,
                                               2)
                                               list(forward = function(x) ag_sum(l$forward(x)),
                                                    parameters = l$params) },
                   lapply(xs, ag_tensor), n_replicas = 2, n_iter = 2, verbose = FALSE)
  expect_length(res2$loss_history, 2L)
  shared <- ag_linear(2, 1)
  expect_error(dp_train(function() shared, xs, n_replicas = 2, verbose = FALSE),
               "share a parameter")
  expect_error(dp_train(make, list(), verbose = FALSE), "data is empty")
  expect_error(dp_train(make, xs, n_replicas = 0, verbose = FALSE),
               "n_replicas must be an integer in \\[1, 1024\\], got 0")
  k <- 0
  grow <- function() { k <<- k + 1; ag_linear(2, k) }
  expect_error(dp_train(grow, xs, n_replicas = 2, verbose = FALSE), "same architecture|dp_train")
})

test_that("the distributed helpers' bad arguments are argument errors with Python's texts", {
  cases <- list(
    list(quote(ag_parameters_spread(1)), paste0("ag_parameters_spread: expected a model, a list ",
                                                "of ag_tensors or an ag_tensor, got numeric")),
    list(quote(ag_parameters_spread(list(ag_param(matrix(1)), 2))),
         "ag_parameters_spread: parameter 2 is not an ag_tensor"),
    list(quote(ag_allreduce_gradients(ag_linear(2, 1), 5)),
         paste0("ag_allreduce_gradients: grads must be the environment returned by backward() ",
                "or NULL, got numeric")))
  for (cs in cases) {
    e <- tryCatch(eval(cs[[1L]]), error = function(e) e)  # was pyggmlr_distributed_error
    expect_s3_class(e, "pyggmlr_argument_error")
    expect_identical(conditionMessage(e), cs[[2L]])
  }
})
