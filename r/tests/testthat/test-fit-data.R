# ag_fit's data besides matrices, as Python's (fit_data.R / pyggmlr/fit_data.py): a loader as x,
# validation_data, keras' verbose levels.

fd_data <- function() {
  set.seed(3)
  list(x = matrix(rnorm(4 * 40), 4, 40), y = floor(runif(40) * 3))
}
fd_fit <- function(...) {
  ggml_set_seed(5)
  m <- ag_sequential(ag_linear(4, 6, activation = "tanh"), ag_linear(6, 3))
  h <- ag_fit(m, ..., nepoch = 3L, seed = 2L, silent = TRUE, static = FALSE)
  list(h = unclass(h)[c("loss", "accuracy", "val_loss", "val_accuracy")],
       w = lapply(m$parameters(), function(t) t$data))
}

test_that("an ag_dataloader as x is the fit of its data, batch_size and shuffle", {
  d <- fd_data()
  a <- fd_fit(d$x, d$y, batch_size = 8L, shuffle = TRUE)
  b <- fd_fit(ag_dataloader(d$x, matrix(d$y, 1), batch_size = 8L, shuffle = TRUE))
  expect_identical(a, b)
  expect_error(fd_fit(ag_dataloader(d$x, matrix(d$y, 1)), d$y), "which holds the targets",
               fixed = TRUE)
  expect_error(fd_fit(ag_dataloader(d$x, matrix(d$y, 1)), batch_size = 4L),
               class = "pyggmlr_argument_error")
  expect_error(fd_fit(ag_dataloader(d$x, matrix(d$y, 1)), batch_size = c(32, 32)),
               paste("ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's;",
                     "set them on ag_dataloader(), not on ag_fit"), fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_silent(fd_fit(ag_dataloader(d$x, matrix(d$y, 1)), batch_size = 32))  # the defaults
})

test_that("validation_data is held out as given: unshuffled it equals val_split on the joined data",
          {
  d <- fd_data()
  a <- fd_fit(d$x[, 1:30], d$y[1:30], validation_data = list(d$x[, 31:40], d$y[31:40]),
              batch_size = 5L, shuffle = FALSE)
  b <- fd_fit(d$x, d$y, val_split = 0.25, batch_size = 5L, shuffle = FALSE)
  expect_identical(a, b)
  expect_true(all(is.finite(a$h$val_loss)))
  # shuffled: the validation columns never enter training (scrambling them leaves the weights alone)
  s1 <- fd_fit(d$x[, 1:30], d$y[1:30], validation_data = list(d$x[, 31:40], d$y[31:40]),
               batch_size = 5L)
  s2 <- fd_fit(d$x[, 1:30], d$y[1:30], validation_data = list(d$x[, 40:31], rev(d$y[31:40]) * 0),
               batch_size = 5L)
  expect_identical(s1$w, s2$w)
  expect_error(fd_fit(d$x, d$y, val_split = 0.2, validation_data = list(d$x, d$y)), "not both",
               fixed = TRUE)
  expect_error(fd_fit(d$x, d$y, validation_data = list(d$x[1:3, ], d$y)),
               class = "pyggmlr_shape_error")
})

test_that("verbose: 0 silent, 2 one line per epoch (no bar), anything else an error", {
  d <- fd_data()
  ggml_set_seed(1)
  m <- ag_sequential(ag_linear(4, 3))
  msgs <- testthat::capture_messages(ag_fit(m, d$x, d$y, nepoch = 2L, batch_size = 8L,
                                            verbose = 2L))
  expect_length(msgs, 2L)
  expect_match(msgs[[1L]], "^epoch    1/2  loss=")
  expect_silent(ag_fit(m, d$x, d$y, nepoch = 1L, batch_size = 8L, verbose = 0L))
  expect_error(ag_fit(m, d$x, d$y, nepoch = 1L, verbose = 3L),
               paste0("ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per ",
                      "epoch), \"auto\" or NULL, got 3"), fixed = TRUE)
})
