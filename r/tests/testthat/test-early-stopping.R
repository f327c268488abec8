# ag_early_stopping: the core's rule (native/fit_stop.c), as Python's (its tests:
# test_early_stopping.py)

# keras' EarlyStopping on a column of values: c(best epoch, stopped epoch or NA)
keras_rule <- function(values, patience, maximize) {
  best <- if (maximize) -Inf else Inf
  best_epoch <- NA_integer_
  wait <- 0L
  for (e in seq_along(values)) {
    v <- values[[e]]
    if (if (maximize) v > best else v < best) {
      best <- v
      best_epoch <- e
      wait <- 0L
    } else {
      wait <- wait + 1L
      if (wait >= patience) return(c(best_epoch, e))
    }
  }
  c(best_epoch, NA)
}

climbing_fit <- function(m, x, callbacks = list()) {
  ag_fit(m, x, iris$Species, lr = 0.01, nepoch = 25L, batch_size = 16L, val_split = 0.3, seed = 4L,
         silent = TRUE, callbacks = callbacks)
}

mlp <- function() {
  ggml_set_seed(0)
  ag_sequential(ag_linear(4, 8, "relu"), ag_linear(8, 3))
}

test_that("monitor = \"val_accuracy\" is maximised in auto and max modes, minimised in min", {
  local_f64()
  acc <- climbing_fit(mlp(), iris_x())$val_accuracy
  expect_gt(acc[length(acc)], acc[1L])
  for (mode in c("auto", "max", "min")) {
    want <- keras_rule(acc, 3L, mode != "min")
    m <- mlp()
    snaps <- list()
    es <- ag_early_stopping(patience = 3L, monitor = "val_accuracy", mode = mode)
    h <- climbing_fit(m, iris_x(), list(function(epoch, logs) {
      snaps[[epoch]] <<- lapply(m$parameters(), function(t) t$data)
      NULL
    }, es))
    expect_identical(c(h$best_epoch, if (is.null(h$stopped_epoch)) NA else h$stopped_epoch),
                     as.integer(want), info = mode)
    expect_identical(es$best, acc[want[1L]])
    expect_identical(es$mode, mode)
    for (k in names(snaps[[1L]]))
      expect_identical(m$parameters()[[k]]$data, snaps[[want[1L]]][[k]], info = paste(mode, k))
  }
})

test_that("only restore_best snapshots the best epoch (the core's SNAPSHOT action)", {
  local_f64()
  for (rb in c(TRUE, FALSE)) {
    m <- mlp()
    last <- NULL
    es <- ag_early_stopping(patience = 3L, monitor = "val_accuracy", restore_best = rb)
    h <- climbing_fit(m, iris_x(), list(function(epoch, logs) {
      last <<- lapply(m$parameters(), function(t) t$data)
      NULL
    }, es))
    expect_identical(is.null(es$state()$arrays), !rb)
    if (!rb) for (k in names(last)) expect_identical(m$parameters()[[k]]$data, last[[k]])
  }
})

test_that("a reused ag_early_stopping starts afresh", {
  local_f64()
  es <- ag_early_stopping(patience = 2L, monitor = "val_accuracy")
  a <- climbing_fit(mlp(), iris_x(), list(es))
  b <- climbing_fit(mlp(), iris_x(), list(es))
  expect_identical(b$val_loss, a$val_loss)
  expect_identical(b$stopped_epoch, a$stopped_epoch)
})

test_that("names are checked when the callback is built; unmeasured monitors before training", {
  err <- expect_error(ag_early_stopping(monitor = "val_los"), class = "pyggmlr_value_error")
  expect_match(conditionMessage(err), '^ag_early_stopping: monitor must be "loss", "loss_unc",')
  expect_match(conditionMessage(err),
               paste0("\"time_val\" (or an ag_fit(metrics =) column such as \"auc\" or ",
                      "\"val_f1\"), got \"val_los\""),
               fixed = TRUE)
  expect_error(ag_early_stopping(mode = "up"), 'mode must be "auto", "min" or "max", got "up"',
               fixed = TRUE, class = "pyggmlr_value_error")
  # the core's texts (pg_monitor_arg_fail), Python's words in Python
  expect_error(ag_early_stopping(monitor = 3),
               paste("ag_early_stopping: monitor must be NULL or a single string such as",
                     "\"val_loss\", got numeric"), fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_model_checkpoint(tempfile(), mode = NULL),
               "ag_model_checkpoint: mode must be a single string such as \"max\", got NULL",
               fixed = TRUE, class = "pyggmlr_argument_error")
  # the path's kind first, Python's words with R's class names; "" is the core's
  for (bad in list(3, NULL, c("a", "b"), NA_character_))
    expect_error(ag_model_checkpoint(bad, every = 0L),
                 paste("ag_model_checkpoint: path must be a file name (a single string), got",
                       class(bad)[[1L]]), fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_model_checkpoint(""), "path must be a file name, got ''", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(ag_early_stopping(restore_best = NA), "restore_best",
               class = "pyggmlr_argument_error")
  m <- mlp()
  w0 <- lapply(m$parameters(), function(t) t$data)
  expect_error(ag_fit(m, iris_x(), iris$Species, nepoch = 2L, silent = TRUE,
                      callbacks = list(ag_early_stopping(monitor = "val_loss"))),
               'monitor "val_loss" is measured only with validation data',
               class = "pyggmlr_value_error")
  expect_error(ag_fit(m, iris_x(), t(diag(3)[as.integer(iris$Species), ]), loss = "mse",
                      val_split = 0.2, nepoch = 2L, silent = TRUE,
                      callbacks = list(ag_early_stopping(monitor = "accuracy"))),
               'monitor "accuracy" is measured only when ag_fit counts accuracy',
               class = "pyggmlr_value_error")
  expect_identical(lapply(m$parameters(), function(t) t$data), w0)
})

test_that("settings read back from the core; checkpoint state checked", {
  es <- ag_early_stopping(patience = 4L, min_delta = 0.5, restore_best = FALSE, mode = "max")
  expect_identical(list(es$patience, es$min_delta, es$restore_best, es$monitor, es$mode),
                   list(4L, 0.5, FALSE, NULL, "max"))
  expect_identical(list(es$best, es$best_epoch, es$wait, es$stopped_epoch),
                   list(-Inf, NULL, 0L, NULL))  # mode "max": its start (issue 29)
  expect_output(print(es), "| monitor=auto | mode=max", fixed = TRUE)
  expect_error(es$load_state(list(best = 1, best_epoch = -1, wait = 0)),
               "callback state is not usable", class = "pyggmlr_value_error")
  es$load_state(list(best = 0.25, best_epoch = 3, wait = 1))
  expect_identical(es$state()$js, list(best = 0.25, best_epoch = 3L, wait = 1L))
})

test_that("ag_model_checkpoint(save_best_only = TRUE) saves the improving epochs", {
  local_f64()
  d <- tempfile()
  dir.create(d)
  m <- mlp()
  snaps <- list()
  ck <- ag_model_checkpoint(file.path(d, "best.safetensors"), save_best_only = TRUE,
                            monitor = "val_accuracy")
  expect_identical(list(ck$every, ck$save_best_only, ck$monitor, ck$mode),
                   list(1L, TRUE, "val_accuracy", "auto"))
  h <- climbing_fit(m, iris_x(), list(ck, function(epoch, logs) {
    snaps[[epoch]] <<- lapply(m$parameters(), function(t) t$data)
    NULL
  }))
  improved <- which(h$val_accuracy > c(-Inf, cummax(h$val_accuracy)[-length(h$val_accuracy)]))
  expect_length(ck$saved, length(improved))
  expect_identical(ck$best, max(h$val_accuracy))
  expect_equal(ag_model_info(ck$saved[[length(ck$saved)]])$epoch, improved[length(improved)])
  loaded <- ag_load_model(ck$saved[[length(ck$saved)]])
  expect_identical(lapply(loaded$parameters(), function(t) t$data),
                   snaps[[improved[length(improved)]]])
  ck2 <- ag_model_checkpoint(file.path(d, "e{epoch}.safetensors"), every = 5L,
                             save_best_only = TRUE, monitor = "val_accuracy", mode = "min")
  climbing_fit(mlp(), iris_x(), list(ck2))
  expect_identical(basename(ck2$saved), "e5.safetensors")
  expect_output(print(ck2), "| save_best_only=TRUE | monitor=val_accuracy | mode=min", fixed = TRUE)
  expect_error(ag_model_checkpoint(file.path(d, "x"), monitor = "acc"),
               'ag_model_checkpoint: monitor must be "loss"', class = "pyggmlr_value_error")
  expect_error(ag_model_checkpoint(file.path(d, "x"), save_best_only = "yes"), "save_best_only",
               class = "pyggmlr_argument_error")
  expect_error(ag_fit(mlp(), iris_x(), iris$Species, nepoch = 1L, silent = TRUE,
                      callbacks = list(ag_model_checkpoint(file.path(d, "x"), save_best_only = TRUE,
                                                           monitor = "val_loss"))),
               "only with validation data", class = "pyggmlr_value_error")
})

test_that("ag_model_checkpoint's path and every refusals and an empty plot are classed", {
  expect_error(ag_model_checkpoint(file.path(tempdir(), "a{x}.safetensors")),
               "has a placeholder other than {epoch}", fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_model_checkpoint(file.path(tempdir(), "no", "such", "a.safetensors")),
               "does not exist", class = "pyggmlr_value_error")
  expect_error(ag_model_checkpoint("a.safetensors", every = 0), "every must be an integer >= 1",
               class = "pyggmlr_value_error")
  expect_error(ag_model_checkpoint("a.safetensors", every = "a"), "every must be an integer",
               class = "pyggmlr_argument_error")
  h <- ag_fit(ag_linear(4, 3), iris_x(), iris$Species, nepoch = 1L, silent = TRUE)
  h$epoch <- integer(0)
  expect_error(plot(h), "plot.ag_history: no epochs to plot", class = "pyggmlr_value_error")
})

test_that("a hand-edited history prints without failing (NA epoch, odd stopped/best)", {
  h <- structure(list(epoch = c(1, NA), loss = c(0.5, 0.25), loss_unc = c(NA, NA),
                      accuracy = c(NaN, NaN), accuracy_unc = c(NA, NA), val_loss = c(NaN, NaN),
                      val_loss_unc = c(NA, NA), val_accuracy = c(NaN, NaN),
                      val_accuracy_unc = c(NA, NA), lr = c(0.1, 0.1), time_train = c(0, 0),
                      time_val = c(0, 0), stopped_epoch = NA, best_epoch = "x"),
                 class = "ag_history")
  out <- suppressWarnings(capture.output(print(h)))
  expect_identical(out[1], "<ag_history: 2 epochs>")
  expect_match(out[4], "^    -    0.25000")
  expect_length(out, 4L)
  h$loss <- 1
  h$best_epoch <- NULL
  expect_error(print(h), "print.ag_history: the history's columns",
               class = "pyggmlr_argument_error")
})

test_that("a callback state is a named list (a JSON object), as Python's dict", {
  # a checkpoint's [] or [1, 2] (jsonlite: an unnamed list) had been read as a state
  for (st in list(jsonlite::parse_json("[]"), list(1, 2), list(best = 1, 2)))
    for (cb in list(ag_early_stopping(), ag_model_checkpoint(tempfile(fileext = ".st"))))
      expect_error(cb$check_state(st), "the checkpoint's callback state is not usable",
                   fixed = TRUE, class = "pyggmlr_value_error")
  e <- ag_early_stopping()
  expect_silent(e$check_state(jsonlite::parse_json("{}")))  # every field absent: the defaults
  e$load_state(list(best = 0.5, best_epoch = 2, wait = 1))
  expect_identical(c(e$best, e$best_epoch, e$wait), c(0.5, 2, 1))
})

test_that("the callbacks' hooks refuse a fit that is not a run object, and have every hook", {
  # (a hand-written loop's mistake had been `$`'s error, or accepted) Python's rule and text
  es <- ag_early_stopping()
  expect_error(es$on_train_begin(2.5), paste0("ag_early_stopping: on_train_begin(fit): fit has ",
               "no model (ag_fit's run object has model)"), fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(es$on_train_end(list(model = ag_linear(2, 1))), "fit has no logs", fixed = TRUE,
               class = "pyggmlr_argument_error")
  mc <- ag_model_checkpoint(tempfile(fileext = ".st"))
  expect_error(mc$on_train_begin(ag_linear(4, 3)), "fit has no nepoch", fixed = TRUE,
               class = "pyggmlr_argument_error")
  run <- list(nepoch = 3, save_checkpoint = function(p, e) 0, model = ag_linear(2, 1))
  expect_error(mc$on_train_begin(modifyList(run, list(nepoch = 0))), "nepoch must be",
               class = "pyggmlr_value_error")
  for (cb in list(es, mc)) {
    expect_true(all(vapply(c("on_train_begin", "on_batch_end", "on_epoch_end", "on_train_end"),
                           function(h) is.function(cb[[h]]), TRUE)))
    expect_null(cb$on_batch_end(1L, list(loss = 1)))
  }
  mc$on_train_begin(run)
  expect_null(mc$on_train_end(run))
})
