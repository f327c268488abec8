# A call that fails draws nothing: ag_fit drew its split and first shuffle before checking
# class_weight, ag_load_model built the model (drawing its weights) before checking the file's
# optimizer state and names, ag_module_from_config built layers before a later one's refusal.
# The stream now ends where it began (tests/r/test_failed_draws_parity.py: the same in Python).

new_model <- function() ag_sequential(ag_linear(4, 8, activation = "relu"), ag_linear(8, 3))

test_that("a refused ag_fit, ag_load_model or ag_module_from_config draws nothing", {
  draws_after <- function(call) {  # runif(4) after set.seed(11) and the refused call
    set.seed(11)
    expect_error(call, class = "pyggmlr_value_error")
    runif(4)
  }
  set.seed(11)
  clean <- runif(4)
  x <- matrix(1:40 / 40, 4)
  y <- c(0, 1, 2, 0, 1, 2, 0, 1, 2, 0)
  m <- new_model()
  for (cw in list(c(1, 1, 1, 1), c(-1, 1, 1)))
    expect_identical(draws_after(ag_fit(m, x, y, nepoch = 1, batch_size = 4, silent = TRUE,
                                        class_weight = cw)), clean)
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f, optimizer = optimizer_adam(m$parameters()))
  sgd <- optimizer_sgd(new_model()$parameters(), lr = 0.1)
  expect_identical(draws_after(ag_load_model(f, optimizer = sgd)), clean)
  expect_identical(draws_after(ag_load_model(f, model_fn = function() ag_linear(4, 3))), clean)
  cfg <- m$to_config()
  cfg$layers[[2]]$in_features <- -3
  expect_identical(draws_after(ag_module_from_config(cfg)), clean)
  # a call that succeeds still draws (the load rebuilds the model from its config)
  set.seed(11)
  ag_load_model(f)
  expect_false(identical(runif(4), clean))
  # the optimizer-state refusals name the file, as the loader's other file refusals do
  expect_error(ag_load_model(f, model = m, optimizer = optimizer_sgd(m$parameters())),
               paste0(f, ": optimizer state mismatch: the file's state is for adam"), fixed = TRUE)
})

test_that("ag_fit refuses y of other rows than the model's outputs before training", {
  x <- matrix(1:40 / 40, 4)
  ids <- c(0, 1, 2, 0, 1, 2, 0, 1, 2, 0)
  set.seed(1)
  m <- ag_sequential(ag_linear(4, 8, activation = "relu"), ag_batch_norm(8), ag_dropout(0.3),
                     ag_linear(8, 3))
  before <- ag_state_dict(m)
  set.seed(11)
  clean <- runif(4)
  text <- paste0("ag_fit: y has %s but the model gives 3 outputs per sample; the \"%s\" %s ",
                 "needs %sy as [3, n] (one row per output)")
  fit <- function(...) ag_fit(m, x, nepoch = 1, batch_size = 4, silent = TRUE, ...)
  for (case in list(list(ids, "mse", NULL, "1 row", "mse", "loss", ""),
                    list(matrix(0, 2, 10), "huber", NULL, "2 rows", "huber", "loss", ""),
                    list(matrix(0, 2, 10), "cross_entropy", NULL, "2 rows", "cross_entropy", "loss",
                         "class ids (one row) or "),
                    list(ids, "cross_entropy", c("f1", "rmse"), "1 row", "rmse", "metric", ""))) {
    set.seed(11)
    expect_error(fit(y = case[[1]], loss = case[[2]], metrics = case[[3]]),
                 do.call(sprintf, c(list(text), case[4:7])), fixed = TRUE,
                 class = "pyggmlr_shape_error")
    expect_identical(runif(4), clean)  # no dropout mask, no shuffle drawn
  }
  expect_identical(ag_state_dict(m), before)  # batch norm's running statistics too
})

test_that("ag_fit refuses bad validation ids, metrics, nbatch_logical, optimizer first", {
  x <- matrix(1:40 / 40, 4)
  ids <- c(0, 1, 2, 0, 1, 0, 1, 2, 0, 1)
  set.seed(1)
  m <- ag_sequential(ag_linear(4, 8, activation = "relu"), ag_batch_norm(8), ag_linear(8, 3))
  before <- ag_state_dict(m)
  fit <- function(...) ag_fit(m, x, nepoch = 1, batch_size = 4, silent = TRUE, ...)
  set.seed(11)
  s0 <- .Random.seed
  expect_error(fit(y = ids, validation_data = list(x, ids + 3)), paste0(
    "ag_fit: validation_data y holds class id 3 (sample 1) but the model has 3 outputs; ids ",
    "are 0-based, in [0, 3)"), fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(fit(y = matrix(0, 3, 10), loss = "binary_cross_entropy",
                   metrics = c("binary_accuracy", "auc")),
               paste0("ag_fit: metrics: \"auc\" needs a 1-output binary model and 0/1 ",
                      "targets [1, n]; the model gives 3 outputs per sample"),
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(fit(y = ids, nbatch_logical = 3),
               "ag_fit: nbatch_logical (3) must be a multiple of batch_size (4)", fixed = TRUE,
               class = "pyggmlr_value_error")
  expect_error(fit(y = ids, optimizer = optimizer_sgd(ag_linear(4, 3))),
               paste0("ag_fit: the optimizer updates none of the model's parameters (its 2 are ",
                      "not among the model's 6); build it on this model's parameters"),
               fixed = TRUE, class = "pyggmlr_value_error")
  set.seed(11)  # the optimizer's layer drew
  s0 <- .Random.seed
  expect_error(fit(y = ids, nbatch_logical = 3), "nbatch_logical (3)", fixed = TRUE)
  expect_identical(.Random.seed, s0)
  expect_identical(ag_state_dict(m), before)
})

test_that("ag_fit refuses x of rows a built-in layer would refuse, before training", {
  # (pg_layer_shape_check, Python's texts: tests/train/test_fit_target_rows.py)
  y <- c(0, 1, 2, 0, 1, 2)
  first <- paste0("ag_fit: x has %d rows but the model's first layer (%s) takes %s per ",
                  "sample%s; x is [features, n], one column per sample")
  for (case in list(
    list(function() list(ag_linear(4, 3)), 5L, sprintf(first, 5L, "linear", "4 inputs", "")),
    list(function() list(ag_lstm(3, 5), ag_linear(5, 3)), 7L,
         sprintf(first, 7L, "lstm", "a multiple of 3 inputs", " (input_size 3 per time step)")),
    list(function() list(ag_conv2d(3, 2, 3, input_shape = c(3, 4, 4)), ag_flatten(),
                         ag_linear(8, 3)), 50L,
         sprintf(first, 50L, "conv2d", "48 inputs", " (input_shape C 3, H 4, W 4)")),
    list(function() list(ag_dropout(0.5), ag_batch_norm(4), ag_linear(4, 3)), 5L,
         paste0("ag_fit: the model's layer 2 (batch_norm) takes 4 inputs per sample but the ",
                "layers before it give 5 (x has 5 rows)")))) {
    set.seed(1)
    m <- ag_sequential(case[[1]]())
    before <- ag_state_dict(m)
    x <- matrix(seq(-1, 1, length.out = case[[2]] * 6), case[[2]])
    s0 <- .Random.seed
    expect_error(ag_fit(m, x, y, nepoch = 1, batch_size = 3, silent = TRUE), case[[3]],
                 fixed = TRUE, class = "pyggmlr_shape_error")
    expect_identical(.Random.seed, s0)  # no split, shuffle or dropout mask drawn
    expect_identical(ag_state_dict(m), before)  # batch norm's running statistics too
    ag_eval(m)  # the refusal is the forward's own: never a false one
    expect_error(m$forward(ag_tensor(x)), class = "pyggmlr_shape_error")
  }
  # ag_predict / ag_evaluate / ag_accuracy report the refusal in ag_fit's words, naming themselves
  m <- ag_sequential(ag_linear(4, 8), ag_linear(8, 3))
  x <- matrix(1, 5, 6)
  for (fn in c("ag_predict", "ag_evaluate", "ag_accuracy"))
    expect_error(switch(fn, ag_predict = ag_predict(m, x),
                        ag_evaluate = ag_evaluate(m, x, rep(0, 6), loss = "cross_entropy"),
                        ag_accuracy = ag_accuracy(m, x, rep(0, 6))),
                 sub("ag_fit", fn, sprintf(first, 5L, "linear", "4 inputs", ""), fixed = TRUE),
                 fixed = TRUE, class = "pyggmlr_shape_error")
  expect_identical(dim(ag_predict(m, matrix(1, 4, 6))), c(3L, 6L))
  # rows that fit train; a sequential whose forward is its own is not walked
  h <- ag_fit(ag_sequential(ag_lstm(3, 5), ag_linear(5, 3)), matrix(1, 6, 6), y, nepoch = 1,
              batch_size = 3, silent = TRUE)
  expect_true(is.finite(h$loss[[1]]))
  m <- ag_sequential(ag_linear(4, 3))
  m$forward <- function(x) m$layers[[1]]$forward(ag_tensor(x$data[1:4, , drop = FALSE]))
  h <- ag_fit(m, matrix(1, 5, 6), y, nepoch = 1, batch_size = 3, silent = TRUE)
  expect_true(is.finite(h$loss[[1]]))
  inner <- ag_sequential(ag_linear(4, 4))  # its walk would give 4 rows; its forward 2
  inner$forward <- function(x) ag_tensor(x$data[1:2, , drop = FALSE])
  h <- ag_fit(ag_sequential(inner, ag_linear(2, 3)), matrix(1, 5, 6), y, nepoch = 1,
              batch_size = 3, silent = TRUE)
  expect_true(is.finite(h$loss[[1]]))
})
