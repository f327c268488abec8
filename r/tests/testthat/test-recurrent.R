# ag_lstm, ag_gru, ag_rnn: forwards against the recurrences written out in R, gradients against
# central differences (ag_gradcheck), stacked and bidirectional layers, configs and model files,
# ag_fit eager vs compiled, the init's range and the classed errors.

seq_data <- function(f, steps, n, seed = 1L) {
  set.seed(seed)
  matrix(rnorm(f * steps * n), f * steps, n)
}

test_that("the tanh RNN and the LSTM equal their recurrences written out", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(2)
  x <- seq_data(2L, 4L, 3L)
  r <- ag_rnn(2L, 3L, return_sequences = TRUE)
  p <- lapply(r$parameters(), function(t) t$data)
  h <- matrix(0, 3L, 3L)
  want <- NULL
  for (t in 1:4) {
    xt <- x[(2L * t - 1L):(2L * t), , drop = FALSE]
    h <- tanh(p$W_ih_l0 %*% xt + drop(p$b_ih_l0) + p$W_hh_l0 %*% h + drop(p$b_hh_l0))
    want <- rbind(want, h)
  }
  expect_equal(r$forward(x)$data, want, tolerance = 1e-13)

  l <- ag_lstm(2L, 3L)
  p <- lapply(l$parameters(), function(t) t$data)
  sig <- function(v) 1 / (1 + exp(-v))
  h <- cc <- matrix(0, 3L, 3L)
  for (t in 1:4) {
    a <- p$W_ih_l0 %*% x[(2L * t - 1L):(2L * t), , drop = FALSE] + drop(p$b_ih_l0) +
      p$W_hh_l0 %*% h + drop(p$b_hh_l0)
    cc <- sig(a[4:6, ]) * cc + sig(a[1:3, ]) * tanh(a[7:9, ])
    h <- sig(a[10:12, ]) * tanh(cc)
  }
  expect_equal(l$forward(x)$data, h, tolerance = 1e-13)
})

test_that("gradients of inputs, weights and initial states pass ag_gradcheck", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  for (kind in c("lstm", "gru", "rnn")) {
    set.seed(3)
    mk <- get(paste0("ag_", kind))
    l <- mk(2L, 3L, num_layers = 2L, bidirectional = TRUE, return_sequences = TRUE)
    x <- ag_param(seq_data(2L, 3L, 2L))
    h0 <- ag_param(matrix(rnorm(12L * 2L), 12L, 2L))
    c0 <- ag_param(matrix(rnorm(12L * 2L), 12L, 2L))
    w <- ag_tensor(matrix(rnorm(18L * 2L), 18L, 2L))
    inputs <- c(list(x = x, h0 = h0), if (kind == "lstm") list(c0 = c0), l$parameters())
    f <- function(inp) {
      y <- if (kind == "lstm") l$forward(inp$x, inp$h0, inp$c0) else l$forward(inp$x, inp$h0)
      ag_sum(y * w)
    }
    expect_true(isTRUE(ag_gradcheck(f, inputs, quiet = TRUE)))
  }
})

test_that("the init is U(-1/sqrt(hidden), 1/sqrt(hidden)) from R's stream, torch's names", {
  set.seed(11)
  a <- ag_gru(3L, 16L, num_layers = 2L)
  set.seed(11)
  b <- ag_gru(3L, 16L, num_layers = 2L)
  expect_named(a$parameters(), c("W_ih_l0", "W_hh_l0", "b_ih_l0", "b_hh_l0", "W_ih_l1",
                                 "W_hh_l1", "b_ih_l1", "b_hh_l1"))
  expect_identical(dim(a$parameters()$W_ih_l1), c(48L, 16L))
  for (k in names(a$parameters())) {
    v <- a$parameters()[[k]]$data
    expect_identical(v, b$parameters()[[k]]$data)
    expect_true(max(abs(v)) <= 0.25 && max(abs(v)) > 0.2)
  }
})

test_that("model files, configs and ag_fit(static = TRUE) equal to eager", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  for (kind in c("lstm", "gru", "rnn")) {
    set.seed(8)
    m <- ag_sequential(get(paste0("ag_", kind))(2L, 6L, num_layers = 2L, bidirectional = TRUE,
                                                dropout = 0.25), ag_linear(12L, 1L))
    x <- seq_data(2L, 5L, 16L, 9L)
    y <- matrix(rnorm(16L), 1L)
    cfg <- ag_to_config(m)$layers[[1L]]
    expect_identical(cfg$type, kind)
    expect_true(cfg$bidirectional)
    path <- tempfile(fileext = ".gguf")
    ag_eval(m)
    ag_save_model(m, path)
    m2 <- ag_load_model(path)
    unlink(path)
    expect_identical(ag_predict(m2, x), ag_predict(m, x))
    runs <- lapply(c(FALSE, TRUE), function(st) {
      set.seed(10)
      mm <- ag_module_from_config(ag_to_config(m))
      h <- ag_fit(mm, x, y, nepoch = 2L, batch_size = 8L, shuffle = FALSE, static = st,
                  loss = "mse", silent = TRUE)
      list(h$loss, ag_predict(mm, x))
    })
    expect_identical(runs[[1L]], runs[[2L]])
  }
})

test_that("errors are classed and name the layer, the argument and the shapes", {
  l <- ag_lstm(3L, 4L)
  expect_error(l$forward(matrix(1, 10L, 2L)), class = "pyggmlr_shape_error",
               "ag_lstm: x is \\[10x2\\], its rows are not a multiple of input_size = 3")
  expect_error(l$forward(matrix(1, 9L, 2L), h0 = matrix(1, 3L, 2L), c0 = matrix(1, 3L, 2L)),
               class = "pyggmlr_shape_error", "ag_lstm: h0 is \\[3x2\\] but must be \\[4, 2\\]")
  expect_error(l$forward(matrix(1, 9L, 2L), h0 = matrix(1, 4L, 2L)),
               class = "pyggmlr_argument_error", "ag_lstm: give both h0 and c0, or neither")
  expect_error(ag_gru(3L, 4L)$forward(matrix(1, 9L, 2L), c0 = matrix(1, 4L, 2L)),
               class = "pyggmlr_argument_error", "ag_gru: c0 .* is for ag_lstm only")
  expect_error(ag_rnn(3L, 4L, num_layers = 2L)$forward(matrix(1, 9L, 2L),
                                                       h0 = list(matrix(1, 4L, 2L))),
               class = "pyggmlr_shape_error", "ag_rnn: h0 has 1 states, expected 2")
  expect_error(l$forward(ag_tensor(matrix(1, 9L, 2L), dtype = "f64")),
               class = "pyggmlr_dtype_error", "ag_lstm")
  expect_error(ag_rnn(3L, 4L, nonlinearity = "sigmoid"), class = "pyggmlr_value_error",
               "ag_rnn: nonlinearity must be 'tanh' or 'relu'")
  expect_error(ag_gru(3L, 0L), class = "pyggmlr_value_error", "ag_gru: hidden_size")
  expect_error(ag_lstm(3L, 4L, dropout = 1), class = "pyggmlr_value_error", "dropout")
  expect_error(ag_module_from_config(list(type = "lstm", input_size = 3L)),
               class = "pyggmlr_value_error", "bad arguments for a 'lstm'")
})

test_that("the memory estimate of a compiled step equals the measured peak", {
  set.seed(15)
  m <- ag_sequential(ag_lstm(3L, 8L, bidirectional = TRUE), ag_linear(16L, 2L))
  x <- seq_data(3L, 8L, 16L, 14L)
  y <- matrix(rnorm(32L), 2L)
  r <- estimate_and_peak(m, x, y)
  est <- r$est
  expect_equal(est$params, 2 * 4 * 8 * (3 + 8 + 2) + 16 * 2 + 2)
  expect_equal(r$peak, est$total - est$weights)
})

test_that("the layers print as Python's (the name with only the options that are set)", {
  expect_identical(ag_gru(1, 32)$name, "gru(1, 32)")
  expect_identical(ag_lstm(2, 3, num_layers = 2, bidirectional = TRUE, dropout = 0.25)$name,
                   "lstm(2, 3, num_layers=2, bidirectional, dropout=0.25)")
  expect_identical(ag_rnn(4, 5)$name, "rnn(4, 5)")
  expect_identical(ag_rnn(4, 5, nonlinearity = "relu", return_sequences = TRUE,
                          return_state = TRUE)$name,
                   "rnn(4, 5, relu, return_sequences, return_state)")
  out <- capture.output(print(ag_sequential(ag_gru(1, 32), ag_linear(32, 1))))
  expect_identical(out[2:3], c("  [1] gru(1, 32)", "  [2] linear(32, 1)"))
  # alone: the core's line with the same name, as Python's repr (tests/parity/cases_summary.py)
  expect_identical(capture.output(print(ag_lstm(2, 3, num_layers = 2, bidirectional = TRUE,
                                                dropout = 0.25))),
                   paste("ag_lstm: lstm(2, 3, num_layers=2, bidirectional, dropout=0.25)",
                         "(432 parameters, train mode)"))
  g <- ag_gru(1, 32)
  ag_eval(g)
  expect_identical(capture.output(print(g)), "ag_gru: gru(1, 32) (3360 parameters, eval mode)")
  expect_identical(capture.output(print(ag_rnn(4, 5, bias = FALSE))),
                   "ag_rnn: rnn(4, 5) (45 parameters, train mode)")
  capture.output(expect_invisible(print(g)))
})

test_that("return_state: the final states equal the recurrence, feed back, pass ag_gradcheck", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  set.seed(31)
  x <- seq_data(2L, 4L, 3L)
  l <- ag_lstm(2L, 3L, return_state = TRUE)
  p <- lapply(l$parameters(), function(t) t$data)
  sig <- function(v) 1 / (1 + exp(-v))
  h <- cc <- matrix(0, 3L, 3L)
  for (t in 1:4) {
    a <- p$W_ih_l0 %*% x[(2L * t - 1L):(2L * t), , drop = FALSE] + drop(p$b_ih_l0) +
      p$W_hh_l0 %*% h + drop(p$b_hh_l0)
    cc <- sig(a[4:6, ]) * cc + sig(a[1:3, ]) * tanh(a[7:9, ])
    h <- sig(a[10:12, ]) * tanh(cc)
  }
  res <- l$forward(x)
  expect_length(res, 3L)
  expect_equal(res[[1L]]$data, h, tolerance = 1e-13)
  expect_equal(res[[2L]]$data, h, tolerance = 1e-13)
  expect_equal(res[[3L]]$data, cc, tolerance = 1e-13)
  # two chunks of a sequence, the second from the first's states, equal the whole sequence
  x8 <- seq_data(2L, 8L, 3L, seed = 32L)
  whole <- l$forward(x8)
  first <- l$forward(x8[1:8, , drop = FALSE])
  second <- l$forward(x8[9:16, , drop = FALSE], first[[2L]], first[[3L]])
  for (i in 1:3) expect_equal(second[[i]]$data, whole[[i]]$data, tolerance = 1e-13)
  for (kind in c("lstm", "gru", "rnn")) {
    set.seed(33)
    m <- get(paste0("ag_", kind))(2L, 3L, num_layers = 2L, bidirectional = TRUE,
                                  return_state = TRUE)
    xp <- ag_param(seq_data(2L, 3L, 2L))
    h0 <- ag_param(matrix(rnorm(12L * 2L), 12L, 2L))
    ws <- lapply(c(6L, 12L, 12L), function(r) ag_tensor(matrix(rnorm(r * 2L), r, 2L)))
    inputs <- c(list(x = xp, h0 = h0), m$parameters())
    f <- function(inp) {
      res <- m$forward(inp$x, inp$h0, if (kind == "lstm") inp$h0)
      expect_length(res, if (kind == "lstm") 3L else 2L)
      Reduce(ag_add, lapply(seq_along(res), function(i) ag_sum(res[[i]] * ws[[i]])))
    }
    expect_true(isTRUE(ag_gradcheck(f, inputs, quiet = TRUE)))
  }
})

test_that("return_state: in configs and model files, refused by ag_sequential", {
  set.seed(34)
  l <- ag_gru(2L, 3L, return_state = TRUE)
  expect_true(ag_to_config(l)$return_state)
  expect_false(ag_to_config(ag_gru(2L, 3L))$return_state)
  expect_match(l$name, "return_state")
  path <- tempfile(fileext = ".gguf")
  on.exit(unlink(path))
  ag_save_model(l, path)
  back <- ag_load_model(path)
  x <- seq_data(2L, 4L, 3L)
  a <- l$forward(x)
  b <- back$forward(x)
  for (i in 1:2) expect_identical(a[[i]]$data, b[[i]]$data)
  expect_error(ag_sequential(l, ag_linear(3L, 1L)),
               "ag_sequential: layer 1 \\(gru\\(2, 3, return_state\\)\\) has return_state set",
               class = "pyggmlr_argument_error")
  expect_error(ag_module_from_config(list(type = "sequential", layers = list(ag_to_config(l)))),
               "has return_state set", class = "pyggmlr_argument_error")
})

test_that("ag_fit and ag_predict refuse a return_state layer with Python's text", {
  m <- ag_lstm(1, 4, return_state = TRUE)
  txt <- paste0("the model (lstm(1, 4, return_state)) has return_state set: its forward ",
                "returns (output, h_n[, c_n]), not a tensor; use return_state = FALSE for this ",
                "call (the same weights)")
  for (st in list(NULL, FALSE, TRUE)) {
    e <- tryCatch(ag_fit(m, matrix(0, 3, 8), matrix(0, 4, 8), loss = "mse", nepoch = 1,
                         batch_size = 4, verbose = 0, static = st), error = function(e) e)
    expect_s3_class(e, "pyggmlr_argument_error")
    expect_identical(conditionMessage(e), paste0("ag_fit: ", txt))
  }
  e <- tryCatch(ag_predict(m, matrix(0, 3, 8)), error = function(e) e)
  expect_identical(conditionMessage(e), paste0("ag_predict: ", txt))
})

test_that("ag_sequences turns c(N, T, F) and c(T, N, F) arrays into the layers' [F*T, N] input", {
  x <- array(as.double(1:24) / 7, c(2, 3, 4))  # 2 sequences, 3 steps, 4 features
  ref <- matrix(0, 12, 2)
  for (n in 1:2) for (s in 1:3) for (f in 1:4) ref[(s - 1) * 4 + f, n] <- x[n, s, f]
  t64 <- ag_sequences(x, dtype = "f64")
  expect_identical(t64$data, ref)
  expect_null(ag_image_shape(t64))
  expect_identical(ag_sequences(aperm(x, c(2, 1, 3)), layout = "TNF", dtype = "f64")$data, ref)
  expect_identical(ag_sequences(x[, , 1], dtype = "f64")$data, t(x[, , 1]))  # one feature
  t32 <- ag_sequences(x, dtype = "f32")
  expect_equal(t32$data, ref, tolerance = 1e-7)
  expect_identical(dim(ag_lstm(4, 5)$forward(t32)$data), c(5L, 2L))
})

test_that("ag_sequences refuses what it cannot read, classed", {
  x <- array(0, c(2, 3, 4))
  expect_error(ag_sequences(x, layout = "NCT"), "layout must be 'NTF' or 'TNF'",
               class = "pyggmlr_value_error")
  expect_error(ag_sequences(1:3), "3-d array c\\(N, T, F\\) or a matrix c\\(N, T\\)",
               class = "pyggmlr_shape_error")
  expect_error(ag_sequences(array(0, c(2, 0, 3))), "got \\(N 2, T 0, F 3\\)",
               class = "pyggmlr_value_error")
  expect_error(ag_sequences("a"), "numeric array", class = "pyggmlr_dtype_error")
  expect_error(ag_sequences(ag_tensor(matrix(0, 2, 2))), "not an ag_tensor",
               class = "pyggmlr_argument_error")
})
