# The losses beyond ggmlR's (loss.R / native/ops_loss2.c): values against closed forms in base R
# doubles, exact gradients (closed form, central differences in f64), f32 against f64, the error
# texts (the same as Python's), ag_compile replays and ag_fit's loss names.

.run <- function(f, a, ..., dtype = "f64") {
  x <- ag_param(a, dtype = dtype)
  with_grad_tape(l <- f(x, ...))
  g <- backward(l)
  list(v = l$data[1, 1], g = as.matrix(g[[as.character(x$id)]]))
}

.data <- function() {
  set.seed(11)
  t <- matrix(runif(15), 3, 5)
  list(p = matrix(runif(15, 0.02, 0.98), 3, 5), t = t,
       x = t + matrix(sample(seq(-3, 3, length.out = 15)), 3, 5) + runif(15, -0.1, 0.1))
}

test_that("binary cross-entropy: closed form, gradient, logs clamped at -100", {
  d <- .data()
  p <- d$p
  t <- d$t
  r <- .run(ag_binary_cross_entropy_loss, p, t)
  expect_equal(r$v, mean(-(t * log(p) + (1 - t) * log(1 - p))), tolerance = 1e-13)
  expect_equal(r$g, (-t / p + (1 - t) / (1 - p)) / 15, tolerance = 1e-12)
  r <- .run(ag_binary_cross_entropy_loss, matrix(c(0, 1, 0, 1), 1, 4), matrix(c(1, 0, 0, 1), 1, 4))
  expect_identical(r$v, 50)
  expect_identical(r$g, matrix(c(0, 0, 1, -1), 1, 4) / 4)
})

test_that("bce with logits: closed form, gradient, huge logits stay finite", {
  d <- .data()
  x <- d$x
  t <- d$t
  r <- .run(ag_bce_with_logits_loss, x, t)
  expect_equal(r$v, mean(pmax(x, 0) - x * t + log1p(exp(-abs(x)))), tolerance = 1e-13)
  expect_equal(r$g, (1 / (1 + exp(-x)) - t) / 15, tolerance = 1e-12)
  r <- .run(ag_bce_with_logits_loss, matrix(c(1000, -1000, 1000), 1, 3), matrix(c(0, 1, 1), 1, 3))
  expect_equal(r$v, 2000 / 3)
  expect_identical(r$g, matrix(c(1, -1, 0), 1, 3) / 3)
})

test_that("huber, mae, weighted mse: closed forms and gradients", {
  d <- .data()
  x <- d$x
  t <- d$t
  dd <- x - t
  for (delta in c(0.5, 1, 2.5)) {
    expect_true(any(abs(dd) < delta) && any(abs(dd) >= delta))
    r <- .run(function(a, b) ag_huber_loss(a, b, delta = delta), x, t)
    expect_equal(r$v, mean(ifelse(abs(dd) < delta, 0.5 * dd^2, delta * (abs(dd) - 0.5 * delta))),
                 tolerance = 1e-13)
    expect_equal(r$g, pmin(pmax(dd, -delta), delta) / 15, tolerance = 1e-13)
  }
  r <- .run(function(a, b) ag_huber_loss(a, b, 2), matrix(c(2, -2), 1, 2), matrix(0, 1, 2))
  expect_identical(c(r$v, r$g), c(2, 1, -1))
  r <- .run(ag_mae_loss, x, t)
  expect_equal(r$v, mean(abs(dd)), tolerance = 1e-13)
  expect_identical(r$g, sign(dd) / 15)
  r <- .run(ag_mae_loss, matrix(c(1, 2, 3), 1, 3), matrix(c(1, 0, 5), 1, 3))
  expect_identical(r$g, matrix(c(0, 1, -1), 1, 3) / 3)
  set.seed(2)
  for (w in list(matrix(runif(15, 0, 2), 3, 5), matrix(runif(3, 0, 2), 3, 1),
                 matrix(runif(5, 0, 2), 1, 5), matrix(0.7, 1, 1))) {
    W <- w[rep_len(seq_len(nrow(w)), 3), rep_len(seq_len(ncol(w)), 5), drop = FALSE]  # broadcast
    r <- .run(function(a, b) ag_weighted_mse_loss(a, b, w), x, t)
    expect_equal(r$v, mean(W * dd^2), tolerance = 1e-13)
    expect_equal(r$g, 2 * W * dd / 15, tolerance = 1e-13)
  }
  for (dt in c("f32", "f64")) {  # weight 1 is ag_mse_loss, bit for bit
    ref <- .run(ag_mse_loss, x, t, dtype = dt)
    expect_identical(.run(function(a, b) ag_weighted_mse_loss(a, b, matrix(1, 3, 5)), x, t,
                          dtype = dt), ref)
    expect_identical(.run(function(a, b) ag_weighted_mse_loss(a, b, 1), x, t, dtype = dt), ref)
  }
})

.LOSSES <- list(
  bce = list(function(a, b) ag_binary_cross_entropy_loss(a, b), "p", "bce_loss"),
  bce_with_logits = list(function(a, b) ag_bce_with_logits_loss(a, b), "x", "bce_logits_loss"),
  huber = list(function(a, b) ag_huber_loss(a, b, 1.3), "x", "huber_loss"),
  mae = list(function(a, b) ag_mae_loss(a, b), "x", "mae_loss"),
  weighted_mse = list(function(a, b) ag_weighted_mse_loss(a, b, matrix(1:3, 3, 1)), "x",
                      "weighted_mse_loss"))

test_that("finite-difference gradients (f64), f32 against f64, tape labels", {
  d <- .data()
  for (nm in names(.LOSSES)) {
    f <- .LOSSES[[nm]][[1]]
    a <- d[[.LOSSES[[nm]][[2]]]]
    r <- .run(f, a, d$t)
    fd <- a
    for (i in seq_along(a)) {
      ap <- a
      ap[i] <- ap[i] + 1e-6
      am <- a
      am[i] <- am[i] - 1e-6
      fd[i] <- (.run(f, ap, d$t)$v - .run(f, am, d$t)$v) / 2e-6
    }
    expect_equal(r$g, fd, tolerance = 1e-6, info = nm)
    r32 <- .run(f, a, d$t, dtype = "f32")
    expect_equal(r32$v, r$v, tolerance = 1e-5, info = nm)
    expect_equal(r32$g, r$g, tolerance = 1e-4, info = nm)
    x <- ag_param(a)
    with_grad_tape(l <- f(x, d$t))
    expect_identical(ag_tape_memory(quiet = TRUE)$by_op$op[1L], .LOSSES[[nm]][[3]])
    expect_true(l$requires_grad)
    expect_false(f(ag_tensor(a), d$t)$requires_grad)
  }
})

test_that("errors name the function, the argument, shapes and dtype (as in Python)", {
  a <- ag_tensor(matrix(0.5, 2, 3))
  b <- matrix(0.5, 3, 2)
  for (nm in c("ag_binary_cross_entropy_loss", "ag_bce_with_logits_loss", "ag_huber_loss",
               "ag_mae_loss")) {
    f <- get(nm)
    expect_error(f(a, b),
                 paste0("^", nm,
                        ": pred is \\[2x3\\] f32 but target is \\[3x2\\] f32; they must ",
                        "have the same shape"))
    expect_error(f(a, ag_tensor(matrix(0.5, 2, 3), dtype = "f64")),
                 paste0("^", nm,
                        ": dtype mismatch: pred is \\[2x3\\] f32, target is \\[2x3\\] f64"))
  }
  expect_error(ag_binary_cross_entropy_loss(matrix(c(0.5, 0.5, 0.5, 0.5, 0.5, 1.5), 2, 3,
                                                   byrow = TRUE), matrix(0, 2, 3)),
               paste0("^ag_binary_cross_entropy_loss: pred must lie in \\[0, 1\\], got 1.5 at ",
                      "\\[1, 2\\] \\(0-based\\) of \\[2x3\\] f32; pred are probabilities ",
                      "\\(for logits use ag_bce_with_logits_loss\\)$"))
  expect_error(ag_binary_cross_entropy_loss(matrix(NaN), matrix(0)),
               "pred must lie in \\[0, 1\\], got NaN at \\[0, 0\\]")
  expect_error(ag_binary_cross_entropy_loss(matrix(0.5, 1, 2), matrix(c(0, -1), 1, 2)),
               paste0("^ag_binary_cross_entropy_loss: target must lie in \\[0, 1\\], got -1 at ",
                      "\\[0, 1\\] \\(0-based\\) of \\[1x2\\] f32$"))
  expect_error(ag_bce_with_logits_loss(matrix(5), matrix(2)),
               "^ag_bce_with_logits_loss: target must lie in \\[0, 1\\], got 2 at \\[0, 0\\]")
  for (bad in list(c(0, "0"), c(-1, "-1"), c(Inf, "Inf"), c(NaN, "NaN")))
    expect_error(ag_huber_loss(a, a, delta = as.numeric(bad[1])),
                 paste0("^ag_huber_loss: delta must be a finite number > 0, got ", bad[2], "$"))
  expect_error(ag_huber_loss(a, a, delta = "a"),
               "^ag_huber_loss: delta must be a finite number > 0, got \"a\"$")
  nm <- "ag_weighted_mse_loss"
  expect_error(ag_weighted_mse_loss(a, a, matrix(1, 2, 2)),
               paste0("^ag_weighted_mse_loss: pred is \\[2x3\\] f32 but weight is \\[2x2\\] f32; ",
                      "weight must have pred's shape, or be a \\[2, 1\\] column, a \\[1, ",
                      "3\\] row or \\[1, 1\\]"))
  expect_error(ag_weighted_mse_loss(a, a, ag_tensor(matrix(1, 2, 3), dtype = "f64")),
               paste0("^ag_weighted_mse_loss: dtype mismatch: pred is \\[2x3\\] f32, weight is ",
                      "\\[2x3\\] f64"))
  expect_error(ag_weighted_mse_loss(a, a, matrix(c(1, -1), 2, 1)),
               paste0("^ag_weighted_mse_loss: weight must be finite and >= 0, got -1 at \\[1, ",
                      "0\\] \\(0-based\\) of \\[2x1\\] f32$"))
  expect_error(ag_weighted_mse_loss(a, a, ag_param(matrix(1, 2, 3))),
               "^ag_weighted_mse_loss: weight must not require grad")
})

test_that("ag_compile replays equal the eager losses and gradients (targets refilled)", {
  for (nm in names(.LOSSES)) for (dt in c("f32", "f64")) {
    f <- .LOSSES[[nm]][[1]]
    set.seed(3)
    W <- ag_param(matrix(rnorm(12), 3, 4), dtype = dt)
    act <- if (.LOSSES[[nm]][[2]] == "p") ag_sigmoid else identity
    step <- function(xin, tin) f(act(ag_matmul(W, xin)), tin)
    g <- ag_compile(step, ag_tensor(matrix(rnorm(20), 4, 5), dtype = dt),
                    ag_tensor(matrix(runif(15), 3, 5), dtype = dt),
                    build = "grad")
    for (k in 1:3) {
      x <- matrix(rnorm(20), 4, 5)
      t <- matrix(runif(15), 3, 5)
      r <- g(x, t)
      with_grad_tape(le <- step(ag_tensor(x, dtype = dt), ag_tensor(t, dtype = dt)))
      ge <- backward(le)
      ag_tape_clear()
      expect_identical(r$loss, le$data[1, 1], info = nm)
      expect_identical(as.matrix(r$grads[[1]]), as.matrix(ge[[as.character(W$id)]]), info = nm)
    }
    if (nm %in% c("bce", "bce_with_logits")) expect_error(g(x, t + 2), "target must lie in")
  }
})

.fit_data <- function() {
  set.seed(3)
  x <- matrix(rnorm(4 * 96), 4, 96)
  list(x = x, y = rbind(as.numeric(x[1, ] + x[2, ] > 0), as.numeric(x[3, ] - 0.5 * x[4, ] > 0)))
}

test_that("ag_fit trains with each new loss name; static equals eager", {
  d <- .fit_data()
  for (loss in c("binary_cross_entropy", "bce_with_logits", "huber", "mae")) {
    last <- if (loss == "binary_cross_entropy") "sigmoid" else NULL
    runs <- list()
    for (static in c(FALSE, TRUE)) {
      ggml_set_seed(4)
      m <- ag_sequential(ag_linear(4, 8, "tanh"), ag_linear(8, 2, last))
      h <- ag_fit(m, d$x, d$y, loss = loss, nepoch = 6, batch_size = 16, lr = 0.05, silent = TRUE,
                  seed = 2, static = static)
      expect_lt(h$loss[6], 0.8 * h$loss[1])
      if (loss %in% c("binary_cross_entropy", "bce_with_logits")) {  # binary accuracy (issue 31)
        expect_true(all(is.finite(h$accuracy)) && h$accuracy[6] > h$accuracy[1])
      } else {
        expect_true(all(is.nan(h$accuracy)))
      }
      runs[[length(runs) + 1L]] <- list(h$loss, lapply(m$parameters(), function(p) p$data),
                                        h$accuracy)
    }
    expect_identical(runs[[1]], runs[[2]], info = loss)
  }
  expect_error(ag_fit(ag_linear(4, 2), d$x, d$y, loss = "bce", nepoch = 1, silent = TRUE),
               "\"binary_cross_entropy\", \"bce_with_logits\", \"huber\", \"mae\"")
  expect_error(ag_fit(ag_linear(4, 2), d$x, NULL, loss = "huber", nepoch = 1, silent = TRUE),
               "loss \"huber\" needs targets y")
  expect_error(ag_fit(ag_linear(4, 2), d$x * 10, d$y, loss = "binary_cross_entropy", nepoch = 1,
                      silent = TRUE, static = FALSE),
               "pred must lie in .* ag_bce_with_logits_loss")
})

test_that("bad input gives R errors, never a crash, and frees what it made", {
  live <- function() { ag_tape_clear(); invisible(gc()); invisible(gc()); ag_live_objects() }
  start <- live()
  t <- ag_tensor(matrix(0.5, 2, 2))
  fns <- list(bce = ag_binary_cross_entropy_loss, bcel = ag_bce_with_logits_loss,
              huber = ag_huber_loss,
              mae = ag_mae_loss, wmse = function(a, b) ag_weighted_mse_loss(a, b, 1),
              wmse_w = function(a, b) ag_weighted_mse_loss(a, matrix(0.5, 2, 2), b))
  for (bad in list(NULL, "a", list(1, 2), function(x) x, new.env(), 1i, as.raw(1:3),
                   array(1, c(2, 2, 2)))) {
    for (nm in names(fns)) {
      expect_error(fns[[nm]](t, bad), info = nm)
      expect_error(fns[[nm]](bad, t), info = nm)
    }
    if (!is.null(bad)) expect_error(ag_huber_loss(t, t, bad), "ag_huber_loss: delta")
  }
  expect_error(ag_huber_loss(t, t, c(1, 2)), "ag_huber_loss: delta")
  expect_true(is.nan(ag_mae_loss(ag_tensor(matrix(NaN), dtype = "f64"), 0)$data[1, 1]))
  rm(t)
  expect_identical(live(), start)
})
