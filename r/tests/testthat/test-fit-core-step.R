# ag_fit's eager micro-batch in one core call (R_pg_fit_train_step) when the optimizer's step is
# the package's; a user's step keeps the gradients in R. Both give the same bits (Python's test:
# test_fit_core_step.py).

test_that("the core step equals the R step, bit for bit", {
  local_f64()
  runs <- lapply(c(FALSE, TRUE), function(user_step) {
    ggml_set_seed(0)
    m <- ag_sequential(ag_linear(4, 8, "relu"), ag_linear(8, 3))
    opt <- optimizer_adam(m$parameters(), lr = 0.01)
    calls <- 0L
    if (user_step) {
      pkg_step <- opt$step
      opt$step <- function(grads = NULL, sum_grads = FALSE) {
        calls <<- calls + 1L
        pkg_step(grads, sum_grads)
      }
    }
    h <- ag_fit(m, iris_x(), iris$Species, optimizer = opt, nepoch = 3L, batch_size = 16L,
                nbatch_logical = 32L, val_split = 0.2, seed = 2L, silent = TRUE, static = FALSE)
    list(h = h, w = lapply(m$parameters(), function(t) t$data), t = opt$t, calls = calls)
  })
  expect_identical(runs[[1L]]$calls, 0L)
  expect_gt(runs[[2L]]$calls, 0L)
  expect_identical(runs[[1L]]$t, runs[[2L]]$t)
  expect_identical(runs[[1L]]$h$loss, runs[[2L]]$h$loss)
  expect_identical(runs[[1L]]$h$val_accuracy, runs[[2L]]$h$val_accuracy)
  expect_identical(runs[[1L]]$w, runs[[2L]]$w)
})

test_that("a loss that is not a tensor, or not 1x1, is refused naming ag_fit", {
  m <- ag_linear(4, 3)
  y <- as.integer(iris$Species) - 1L
  expect_error(ag_fit(m, iris_x(), y, loss = function(out, y) 1, nepoch = 1L,
                      silent = TRUE),
               "ag_fit: the loss must be a 1x1 ag_tensor, got numeric", fixed = TRUE,
               class = "pyggmlr_value_error")
  m <- ag_sequential(ag_linear(4, 3))
  opt <- optimizer_adam(m$parameters())  # a user's step: the host's path, the core's text too
  opt$step <- function(grads = NULL, sum_grads = FALSE) NULL
  expect_error(ag_fit(m, iris_x(), y, loss = function(out, y) "a", optimizer = opt, nepoch = 1L,
                      silent = TRUE, static = FALSE),
               "ag_fit: the loss must be a 1x1 ag_tensor, got character", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_fit(m, iris_x(), y, loss = function(out, y) out, nepoch = 1L,
                      silent = TRUE, static = FALSE),
               "ag_fit: the loss must be a 1x1 tensor, got [3x", fixed = TRUE,
               class = "pyggmlr_shape_error")
})

test_that("a forward that returns no tensor is refused naming the function, tape closed", {
  lin <- ag_linear(4, 3)
  m <- list(parameters = function() list(W = lin$W, b = lin$b), forward = function(x) 3)
  y <- matrix(0, 3, 150)
  w0 <- lin$W$data
  for (loss in list("mse", function(out, y) ag_sum(out))) for (static in c(FALSE, TRUE)) {
    expect_error(ag_fit(m, iris_x(), y, loss = loss, nepoch = 1L, silent = TRUE,
                        static = static),
                 "^ag_fit: model forward returned a numeric, not a tensor$",
                 class = "pyggmlr_argument_error")
    expect_equal(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["DEPTH"]]), 0L)  # closed
  }
  expect_identical(lin$W$data, w0)
  expect_error(ag_predict(m, iris_x()), "^ag_predict: model forward returned a numeric",
               class = "pyggmlr_argument_error")
  expect_error(ag_accuracy(m, iris_x(), rep(0, 150)), "^ag_accuracy: model forward returned",
               class = "pyggmlr_argument_error")
})

test_that("an error in the model's forward during an eager step closes the tape, in C", {
  calls <- 0L
  lin <- ag_linear(4, 3)
  model <- list(forward = function(x) {
    calls <<- calls + 1L
    if (calls == 3L) stop("boom in forward")
    lin$forward(x)
  }, parameters = function() list(W = lin$W, b = lin$b))
  depth <- function() .Call(pyggmlr:::R_pg_scope, pyggmlr:::.pg$code$scope[["DEPTH"]], 0L)
  expect_error(ag_fit(model, iris_x(), as.integer(iris$Species) - 1L, nepoch = 1L,
                      batch_size = 10L, silent = TRUE, static = FALSE), "boom in forward")
  expect_identical(calls, 3L)
  expect_identical(depth(), 0L)
})
