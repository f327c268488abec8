# ag_fit(static = NULL) on models that are not all built-in: compiled when ag_compile records the
# step and the probe's replay equals the eager step (the numbers of static = TRUE, bit for bit);
# otherwise eager (the numbers of static = FALSE) with exactly one message giving the reason.

custom_model <- function(fw) {
  e <- new.env()
  e$lin <- ag_linear(4L, 3L)
  e$lin$W$data <- matrix(seq(-0.5, 0.6, length.out = 12L), 3L, 4L)
  e$lin$b$data <- matrix(c(0.1, -0.2, 0.05), 3L, 1L)
  e$calls <- 0L
  e$forward <- function(x) {
    e$calls <- e$calls + 1L
    fw(e, x)
  }
  e$parameters <- function() list(W = e$lin$W, b = e$lin$b)
  e
}
# a custom layer built from ag ops only
replayable <- function(e, x) ag_tanh(e$lin$forward(x)) * 2
# reads the batch's values in R: a recorded graph would keep the first batch
host_read <- function(e, x) e$lin$forward(ag_tensor(x$data * 1))
ckpt <- function(e, x) ag_checkpoint(function(z) e$lin$forward(z), x)

fit_auto <- function(fw, static, val_split = 0.25) {
  set.seed(4)
  x <- matrix(rnorm(4L * 48L), 4L, 48L)
  y <- matrix(rnorm(3L * 48L), 3L, 48L)
  m <- custom_model(fw)
  msgs <- character()
  h <- withCallingHandlers(
    ag_fit(m, x, y, loss = "mse", nepoch = 2L, batch_size = 6L, shuffle = FALSE,
           val_split = val_split, static = static, silent = TRUE),
    message = function(cnd) {
      msgs <<- c(msgs, conditionMessage(cnd))
      invokeRestart("muffleMessage")
    })
  list(hist = unclass(h)[c("loss", "val_loss")], w = m$lin$W$data, calls = m$calls, msgs = msgs)
}

test_that("a custom layer of ag ops is compiled by static = NULL, as static = TRUE", {
  a <- fit_auto(replayable, NULL)
  b <- fit_auto(replayable, TRUE)
  e <- fit_auto(replayable, FALSE)
  expect_identical(a$msgs, character())
  expect_identical(a$hist, b$hist)
  expect_identical(a$w, b$w)
  expect_identical(a$hist, e$hist)  # replay equals eager
  # compiled: the forward ran for the recordings and the probe only, not per batch
  expect_lt(a$calls, 8L)
  expect_gt(e$calls, 12L)
})

test_that("a forward that reads values in R falls back with one message, as static = FALSE", {
  a <- fit_auto(host_read, NULL)
  f <- fit_auto(host_read, FALSE)
  t <- fit_auto(host_read, TRUE)
  expect_length(a$msgs, 1L)
  expect_match(a$msgs, paste0("ag_fit: static = NULL runs this model eagerly .*a replay of the ",
                              "recorded step gives loss .* where the eager step gives .*",
                              "static = FALSE silences this notice"))
  expect_identical(a$hist, f$hist)
  expect_identical(a$w, f$w)
  expect_false(identical(t$hist, f$hist))  # what static = TRUE does wrong, silently
  expect_identical(f$msgs, character())
})

test_that("a step ag_compile refuses falls back with the core's reason", {
  a <- fit_auto(ckpt, NULL, val_split = 0)
  f <- fit_auto(ckpt, FALSE, val_split = 0)
  expect_length(a$msgs, 1L)
  expect_match(a$msgs, "fn calls ag_checkpoint\\(\\), whose segment a compiled graph cannot replay")
  expect_identical(a$hist, f$hist)
  expect_identical(f$msgs, character())
  expect_error(fit_auto(ckpt, TRUE, val_split = 0), "ag_checkpoint", class = "pyggmlr_error")
})

test_that("a validation forward that cannot be compiled falls back with one message", {
  # ag_checkpoint in eval mode only: the training step compiles, validation does not
  eval_ckpt <- function(e, x)
    if (isFALSE(e$training)) ag_checkpoint(function(z) e$lin$forward(z), x) else e$lin$forward(x)
  a <- fit_auto(eval_ckpt, NULL)
  f <- fit_auto(eval_ckpt, FALSE)
  expect_identical(a$hist, f$hist)
  expect_identical(a$w, f$w)
  expect_length(a$msgs, 1L)
  expect_match(a$msgs, "fn calls ag_checkpoint()", fixed = TRUE)
  expect_lt(a$calls, f$calls)
  expect_error(fit_auto(eval_ckpt, TRUE), "ag_checkpoint", class = "pyggmlr_error")
})

test_that("built-in layers with a loss function are probed: one that reads y in R falls back", {
  set.seed(4)
  x <- matrix(rnorm(4L * 48L), 4L, 48L)
  y <- matrix(rnorm(3L * 48L), 3L, 48L)
  run <- function(static) {
    m <- ag_linear(4L, 3L)
    m$W$data <- matrix(seq(-0.5, 0.6, length.out = 12L), 3L, 4L)
    expect_true(pyggmlr:::.builtin_model(m))  # the model alone would compile unprobed
    msgs <- character()
    h <- withCallingHandlers(
      ag_fit(m, x, y, loss = function(o, t) ag_mse_loss(o, ag_tensor(t$data * 1)), nepoch = 1L,
             batch_size = 6L, shuffle = FALSE, static = static, silent = TRUE),
      message = function(cnd) {
        msgs <<- c(msgs, conditionMessage(cnd))
        invokeRestart("muffleMessage")
      })
    list(loss = h$loss, msgs = msgs)
  }
  a <- run(NULL)
  f <- run(FALSE)
  expect_length(a$msgs, 1L)
  expect_match(a$msgs, "ag_fit: static = NULL runs this model eagerly .*a replay of the recorded")
  expect_identical(a$loss, f$loss)
})
