# ag_fit's progress as keras prints it (issue 31): verbose 0/1/2, the default a live bar only in
# a console that redraws and one line per epoch elsewhere (scripts' logs, R CMD check, knitr);
# times in us / ms / s / m (the core's text, as Python's); whole epochs on the plot's x axis.

fp_fit <- function(...) {
  set.seed(1)
  x <- t(scale(as.matrix(iris[, 1:4])))  # iris_x() (a helper: not visible to lintr here)
  ag_fit(ag_linear(4, 3), x, iris$Species, nepoch = 3, batch_size = 30, val_split = 0.2, seed = 1,
         ...)
}

# the core's epoch lines, one message each, no carriage returns
expect_epoch_lines <- function(msgs, h) {
  testthat::expect_length(msgs, 3L)
  testthat::expect_false(any(grepl("\r", msgs, fixed = TRUE)))
  for (e in 1:3)
    testthat::expect_true(startsWith(msgs[[e]], sprintf(
      "epoch %4d/3  loss=%.5f  acc=%.4f  val_loss=%.5f  val_acc=%.4f  (", e, h$loss[e],
      h$accuracy[e], h$val_loss[e], h$val_accuracy[e])))
  testthat::expect_match(msgs, "\\([0-9.]+(us|ms|s)\\)\n$")
  testthat::expect_false(any(grepl("0.00s", msgs, fixed = TRUE)))
}

test_that("outside a console that redraws, the default and a forced bar print one line per epoch", {
  # testthat sets cli.dynamic = FALSE: a log, as Rscript x.R > log or R CMD check
  for (args in list(list(), list(verbose = NULL), list(verbose = "auto"), list(verbose = 1L),
                    list(progress = "bar"), list(verbose = 2L))) {
    h <- NULL
    msgs <- testthat::capture_messages(h <- do.call(fp_fit, args))
    expect_epoch_lines(msgs, h)
  }
  msgs <- testthat::capture_messages(
    expect_identical(capture.output(h <- fp_fit(verbose = 2L), type = "output"), character()))
  expect_epoch_lines(msgs, h)  # all on the message stream
})

test_that("in a console that redraws, the default and verbose = 1 draw the cli bar", {
  old <- options(cli.dynamic = TRUE, cli.progress_show_after = 0)
  on.exit(options(old))
  for (args in list(list(), list(verbose = 1L))) {
    h <- NULL
    txt <- paste(testthat::capture_messages(with_cli_ticks(h <- do.call(fp_fit, args))),
                 collapse = "")
    expect_match(txt, "12/12 ETA")  # one bar over 3 epochs x 4 batches, its last update
    # the core's line as it is, aligned (cli would collapse its spaces)
    expect_true(grepl(sprintf("epoch    3/3  loss=%.5f  acc=%.4f  val_loss=%.5f  val_acc=%.4f  (",
                              h$loss[3], h$accuracy[3], h$val_loss[3], h$val_accuracy[3]),
                      txt, fixed = TRUE))
  }
  h <- NULL
  expect_epoch_lines(testthat::capture_messages(h <- fp_fit(verbose = 2L)), h)
  for (args in list(list(verbose = 0L), list(silent = TRUE), list(verbose = 2L, silent = TRUE),
                    list(progress = "none")))
    expect_silent(do.call(fp_fit, args))
  # knitr puts messages into the document: lines, never a bar
  options(knitr.in.progress = TRUE)
  on.exit(options(knitr.in.progress = NULL), add = TRUE)
  expect_identical(pyggmlr:::.fit_progress_mode("auto", FALSE), "lines")
})

test_that("times print in keras' units, the core's text (the History's column and the line)", {
  h <- list(epoch = 1:4, loss = rep(0.5, 4), time_train = c(0.0004, 0.0126, 1.5, 125),
            time_val = rep(0, 4))
  for (k in setdiff(pyggmlr:::.HIST_KEYS, names(h))) h[[k]] <- rep(NaN, 4)
  h$stopped_epoch <- h$best_epoch <- NaN
  class(h) <- "ag_history"
  out <- capture.output(print(h))
  expect_match(out[2], "   time$")
  expect_identical(trimws(substring(out[3:6], nchar(out[2]) - 6L)),
                   c("400us", "13ms", "1.50s", "2m 05s"))
  expect_identical(unique(nchar(out[2:6])), nchar(out[2]))
  logs <- list(epoch = 1L, loss = 0.5, accuracy = NaN, val_loss = NaN, val_accuracy = NaN,
               time_train = 0.0126, time_val = 0)
  expect_identical(pyggmlr:::.fit_epoch_line(logs, 1L), "epoch    1/1  loss=0.50000  (13ms)")
})

test_that("the history plot labels whole epochs", {
  ticks <- pyggmlr:::.epoch_ticks
  expect_identical(ticks(1:3), c(1, 2, 3))  # R's own axis puts 1.5 and 2.5 between them
  expect_identical(ticks(1:2), c(1, 2))
  expect_identical(ticks(1L), c(0, 1))  # one epoch: its tick (and 0, off the plotted range)
  expect_identical(ticks(1:50), seq(0, 50, 10))
  h <- list(epoch = 1:3, loss = c(1, 0.5, 0.25), accuracy = c(0.5, 0.7, 0.9),
            time_train = rep(0.1, 3))
  for (k in setdiff(pyggmlr:::.HIST_KEYS, names(h))) h[[k]] <- rep(NaN, 3)
  class(h) <- "ag_history"
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(h), h)
})

test_that("the history plot has a panel per ag_fit(metrics =) metric, as Python's", {
  h <- list(epoch = 1:3, loss = c(1, 0.5, 0.25), accuracy = c(0.5, 0.7, 0.9),
            time_train = rep(0.1, 3))
  for (k in setdiff(pyggmlr:::.HIST_KEYS, names(h))) h[[k]] <- rep(NaN, 3)
  h[c("auc", "val_auc", "mae")] <- list(c(0.6, 0.7, 0.8), c(0.55, 0.65, 0.7), c(3, 2, 1))
  class(h) <- "ag_history"
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  grDevices::dev.control("enable")
  expect_identical(plot(h), h)
  calls <- grDevices::recordPlot()[[1L]]
  titles <- unlist(lapply(calls, function(e) if (identical(e[[2L]][[1L]]$name, "C_title"))
    e[[2L]][[2L]]))
  expect_identical(titles, c("loss", "accuracy", "auc", "mae"))
})

test_that("only a bar asks the session for each batch (the lines keep static one-call epochs)", {
  ticks <- function(mode) pyggmlr:::.fit_progress(mode, NULL, 10L, 2L)$ticks
  expect_identical(c(ticks("bar"), ticks("lines"), ticks("none")), c(TRUE, FALSE, FALSE))
})
