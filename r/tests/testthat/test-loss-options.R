# torch's loss options (native/ops_loss_ce.c, ops_loss2.c's pos_weight): pos_weight for the BCE
# losses, weight / ignore_index / label_smoothing for softmax cross-entropy. Golden values by
# formula in base R doubles (torch's definitions), gradients by formula and central differences,
# f32 against f64, the refusals (the core's texts, classed), ag_compile replays.

.lo_run <- function(f, a, ..., dtype = "f64") {
  x <- ag_param(a, dtype = dtype)
  with_grad_tape(l <- f(x, ...))
  g <- backward(l)
  list(v = l$data[1, 1], g = as.matrix(g[[as.character(x$id)]]))
}

.lo_fd <- function(f, a, ..., h = 1e-6) {
  g <- a
  for (i in seq_along(a)) {
    ap <- a
    am <- a
    ap[i] <- a[i] + h
    am[i] <- a[i] - h
    g[i] <- (f(ag_tensor(ap, dtype = "f64"), ...)$data[1, 1] -
               f(ag_tensor(am, dtype = "f64"), ...)$data[1, 1]) / (2 * h)
  }
  g
}

.sig <- function(x) 1 / (1 + exp(-x))

.bce_data <- function() {
  set.seed(31)
  x <- matrix(rnorm(21, sd = 2), 3, 7)
  t <- matrix(as.double(runif(21) > 0.4), 3, 7)
  t[1, 1:2] <- c(0.3, 0.8)
  list(x = x, t = t, pw = c(0.5, 2, 7))
}

test_that("bce with logits, pos_weight: torch's formula and gradient, vector and scalar", {
  d <- .bce_data()
  for (pw in list(d$pw, 2.5, c(0, 1, 1))) {
    W <- matrix(pw, 3, 7)
    r <- .lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = pw)
    lw <- 1 + (W - 1) * d$t
    expect_equal(r$v, mean((1 - d$t) * d$x + lw * (log1p(exp(-abs(d$x))) + pmax(-d$x, 0))),
                 tolerance = 1e-13)
    expect_equal(r$g, ((1 - d$t) * .sig(d$x) - W * d$t * .sig(-d$x)) / 21, tolerance = 1e-12)
  }
  fd <- .lo_fd(ag_bce_with_logits_loss, d$x, d$t, pos_weight = d$pw)
  expect_equal(.lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = d$pw)$g, fd,
               tolerance = 1e-7)
  # a tensor column or row gives the same bits
  ref <- .lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = d$pw)
  for (w in list(ag_tensor(matrix(d$pw, 3, 1), dtype = "f64"),
                 ag_tensor(matrix(d$pw, 1, 3), dtype = "f64")))
    expect_identical(.lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = w), ref)
})

test_that("binary cross-entropy, pos_weight: -(pw t log p + (1 - t) log(1 - p)), clamped", {
  d <- .bce_data()
  p <- .sig(d$x)
  W <- matrix(d$pw, 3, 7)
  r <- .lo_run(ag_binary_cross_entropy_loss, p, d$t, pos_weight = d$pw)
  expect_equal(r$v, mean(-(W * d$t * log(p) + (1 - d$t) * log(1 - p))), tolerance = 1e-13)
  expect_equal(r$g, (-W * d$t / p + (1 - d$t) / (1 - p)) / 21, tolerance = 1e-12)
  r <- .lo_run(ag_binary_cross_entropy_loss, matrix(c(0, 1, 0.5), 1, 3), matrix(c(1, 0, 1), 1, 3),
               pos_weight = 2)
  expect_equal(r$v, (200 + 100 + 2 * log(2)) / 3, tolerance = 1e-14)
  expect_equal(r$g, matrix(c(0, 0, -4 / 3), 1, 3), tolerance = 1e-14)
})

test_that("pos_weight in f32 agrees with f64", {
  d <- .bce_data()
  a <- .lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = d$pw, dtype = "f32")
  b <- .lo_run(ag_bce_with_logits_loss, d$x, d$t, pos_weight = d$pw)
  expect_equal(a$v, b$v, tolerance = 2e-5)
  expect_equal(a$g, b$g, tolerance = 2e-5)
})

test_that("pos_weight refusals: length, sign, finiteness, classed with the core's text", {
  x <- matrix(0.5, 3, 4)
  t <- matrix(1, 3, 4)
  for (f in c("ag_bce_with_logits_loss", "ag_binary_cross_entropy_loss")) {
    fn <- get(f)
    a <- if (f == "ag_bce_with_logits_loss") "logits are" else "pred is"
    expect_error(fn(x, t, pos_weight = c(1, 2)),
                 sprintf("^%s: %s \\[3x4\\] f32 but pos_weight is \\[2x1\\] f32; give one value per row \\(3\\) or a single value$", f, a), # nolint: line_length_linter. the exact text
                 class = "pyggmlr_shape_error")
    expect_error(fn(x, t, pos_weight = c(1, -1, 1)),
                 sprintf("^%s: pos_weight must be finite and >= 0, got -1 at position 2 of", f),
                 class = "pyggmlr_value_error")
    expect_error(fn(x, t, pos_weight = Inf), "pos_weight must be finite and >= 0, got Inf",
                 class = "pyggmlr_value_error")
    expect_error(fn(x, t, pos_weight = c(1, NA, 1)), "pos_weight must be finite",
                 class = "pyggmlr_value_error")
    expect_error(fn(x, t, pos_weight = TRUE), "pos_weight must be numbers, got booleans",
                 class = "pyggmlr_argument_error")
  }
})

# ---- cross-entropy ----

.ce_data <- function() {
  set.seed(7)
  list(x = matrix(rnorm(36, sd = 1.5), 4, 9), y = c(0, 3, 1, 1, 2, 3, 0, 2, 1),
       w = c(0.5, 2, 1, 3))
}

# torch's F.cross_entropy(mean) on class ids: value and gradient, our [K, B] layout
.ce_ref <- function(x, y, w = NULL, ignore = NULL, ls = 0) {
  K <- nrow(x)
  if (is.null(w)) w <- rep(1, K)
  lse <- apply(x, 2, function(z) max(z) + log(sum(exp(z - max(z)))))
  nlp <- sweep(-x, 2, lse, "+")
  p <- exp(-nlp)
  keep <- if (is.null(ignore)) rep(TRUE, length(y)) else y != ignore
  A <- matrix(0, K, length(y))
  for (j in which(keep)) {
    A[, j] <- ls / K * w
    A[y[j] + 1, j] <- A[y[j] + 1, j] + (1 - ls) * w[y[j] + 1]
  }
  W <- sum(w[y[keep] + 1])
  list(v = sum(A * nlp) / W, g = (sweep(p, 2, colSums(A), "*") - A) / W)
}

test_that("cross-entropy options on class ids: torch's value and gradient, every combination", {
  d <- .ce_data()
  opts <- list(list(w = d$w), list(ignore = 1), list(ignore = -100), list(ls = 0.2),
               list(w = d$w, ignore = 3), list(w = d$w, ls = 0.15), list(ignore = 2, ls = 0.3),
               list(w = d$w, ignore = 0, ls = 0.25))
  for (o in opts) {
    ref <- .ce_ref(d$x, d$y, o$w, o$ignore, if (is.null(o$ls)) 0 else o$ls)
    r <- .lo_run(ag_softmax_cross_entropy_loss, d$x, d$y, weight = o$w, ignore_index = o$ignore,
                 label_smoothing = if (is.null(o$ls)) 0 else o$ls)
    expect_equal(r$v, ref$v, tolerance = 1e-12)
    expect_equal(r$g, ref$g, tolerance = 1e-12)
    r2 <- .lo_run(ag_softmax_cross_entropy_loss, d$x, matrix(d$y, 1), weight = o$w,
                  ignore_index = o$ignore, label_smoothing = if (is.null(o$ls)) 0 else o$ls)
    expect_identical(r2, r)
  }
  y <- d$y
  y[c(2, 5)] <- -100
  ref <- .ce_ref(d$x, y, d$w, -100, 0.1)
  r <- .lo_run(ag_softmax_cross_entropy_loss, d$x, y, weight = d$w, ignore_index = -100,
               label_smoothing = 0.1)
  expect_equal(r$v, ref$v, tolerance = 1e-12)
  expect_equal(r$g, ref$g, tolerance = 1e-12)
  fd <- .lo_fd(ag_softmax_cross_entropy_loss, d$x, d$y, weight = d$w, ignore_index = 0,
               label_smoothing = 0.25)
  expect_equal(.lo_run(ag_softmax_cross_entropy_loss, d$x, d$y, weight = d$w, ignore_index = 0,
                       label_smoothing = 0.25)$g, fd, tolerance = 1e-7)
})

test_that("cross-entropy options on a matrix target: torch's probability target (mean over B)", {
  d <- .ce_data()
  set.seed(2)
  soft <- matrix(rexp(36), 4, 9)
  soft <- sweep(soft, 2, colSums(soft), "/")
  for (tm in list(soft, diag(4)[, d$y + 1])) {
    ls <- 0.15
    a <- d$w * (tm * (1 - ls) + ls / 4)
    lse <- apply(d$x, 2, function(z) max(z) + log(sum(exp(z - max(z)))))
    nlp <- sweep(-d$x, 2, lse, "+")
    r <- .lo_run(ag_softmax_cross_entropy_loss, d$x, tm, weight = d$w, label_smoothing = ls)
    expect_equal(r$v, sum(a * nlp) / 9, tolerance = 1e-12)
    expect_equal(r$g, (sweep(exp(-nlp), 2, colSums(a), "*") - a) / 9, tolerance = 1e-12)
  }
})

test_that("cross-entropy options: f32 agrees with f64; no options keeps the plain bits", {
  d <- .ce_data()
  a <- .lo_run(ag_softmax_cross_entropy_loss, d$x, d$y, weight = d$w, ignore_index = 0,
               label_smoothing = 0.25, dtype = "f32")
  b <- .lo_run(ag_softmax_cross_entropy_loss, d$x, d$y, weight = d$w, ignore_index = 0,
               label_smoothing = 0.25)
  expect_equal(a$v, b$v, tolerance = 2e-5)
  expect_equal(a$g, b$g, tolerance = 2e-5)
  expect_identical(.lo_run(ag_softmax_cross_entropy_loss, d$x, d$y, label_smoothing = 0L),
                   .lo_run(ag_softmax_cross_entropy_loss, d$x, d$y))
})

test_that("cross-entropy option refusals, classed with the core's text", {
  d <- .ce_data()
  op <- "ag_softmax_cross_entropy_loss"
  f <- function(...) ag_softmax_cross_entropy_loss(d$x, d$y, ...)
  expect_error(f(weight = c(1, 2, 3)),
               sprintf("^%s: logits are \\[4x9\\] f32 but weight is \\[3x1\\] f32; give one value per class \\(4\\)$", op), # nolint: line_length_linter. the exact text
               class = "pyggmlr_shape_error")
  expect_error(f(weight = c(1, -2, 1, 1)),
               sprintf("^%s: weight must be finite and >= 0, got -2 at position 2 of \\[4x1\\]",
                       op),
               class = "pyggmlr_value_error")
  expect_error(f(weight = c(1, NaN, 1, 1)), "weight must be finite and >= 0, got NaN",
               class = "pyggmlr_value_error")
  for (ls in c(1, -0.1, NaN, 1.5))
    expect_error(f(label_smoothing = ls),
                 sprintf("^%s: label_smoothing must be a number in \\[0, 1\\), got", op),
                 class = "pyggmlr_value_error")
  expect_error(f(label_smoothing = "a"), "label_smoothing must be a number in \\[0, 1\\)",
               class = "pyggmlr_value_error")
  for (ig in c(1.5, Inf))
    expect_error(f(ignore_index = ig), sprintf("^%s: ignore_index must be a whole number, got", op),
                 class = "pyggmlr_value_error")
  expect_error(ag_softmax_cross_entropy_loss(d$x, diag(4)[, d$y + 1], ignore_index = 0),
               sprintf("^%s: ignore_index applies to class ids, but target is \\[4x9\\]", op),
               class = "pyggmlr_value_error")
  y <- d$y
  y[4] <- -1
  expect_error(ag_softmax_cross_entropy_loss(d$x, y, ignore_index = -100),
               "class id -1 at position 4 is out of range \\[0, 4\\) for logits \\[4x9\\] f32 \\(and not ignore_index -100\\)", # nolint: line_length_linter. the exact text
               class = "pyggmlr_value_error")
})

test_that("user losses with the options train in ag_fit, eager and static", {
  set.seed(3)
  x <- matrix(rnorm(4 * 96), 4, 96)
  yb <- rbind(as.double(x[1, ] + x[2, ] > 0), as.double(x[3, ] - 0.5 * x[4, ] > 0))
  yc <- matrix(as.double(x[1, ] > 0) + (x[2, ] > 0), 1)
  cases <- list(
    list(yb, 2, function(out, y) ag_bce_with_logits_loss(out, y, pos_weight = c(2, 0.5))),
    list(yc, 3, function(out, y)
      ag_softmax_cross_entropy_loss(out, y, weight = c(1, 0.5, 2), ignore_index = 1,
                                    label_smoothing = 0.1)))
  for (cs in cases) for (st in c(FALSE, TRUE)) {
    ggml_set_seed(4)
    m <- ag_sequential(ag_linear(4, 8, "tanh"), ag_linear(8, cs[[2]]))
    h <- ag_fit(m, x, cs[[1]], loss = cs[[3]], nepoch = 6, batch_size = 16, lr = 0.05,
                silent = TRUE, seed = 2, static = st)
    expect_true(all(is.finite(h$loss)) && h$loss[6] < h$loss[1])
  }
})

test_that("a compiled step replays the options with each call's ids", {
  d <- .ce_data()
  set.seed(9)
  W <- ag_param(matrix(rnorm(20), 4, 5), dtype = "f64")
  wt <- ag_tensor(d$w, dtype = "f64")
  step <- function(xin, yin)
    ag_softmax_cross_entropy_loss(ag_matmul(W, xin), yin, weight = wt, ignore_index = 2,
                                  label_smoothing = 0.1)
  g <- ag_compile(step, ag_tensor(matrix(rnorm(45), 5, 9), dtype = "f64"),
                  ag_tensor(matrix(d$y, 1), dtype = "f64"), build = "grad")
  for (k in 1:2) {
    xi <- matrix(rnorm(45), 5, 9)
    yi <- matrix(as.double(sample(0:3, 9, TRUE)), 1)
    res <- g(xi, yi)
    with_grad_tape(le <- step(ag_tensor(xi, dtype = "f64"), ag_tensor(yi, dtype = "f64")))
    ge <- backward(le)
    ag_tape_clear()
    expect_identical(res$loss, le$data[1, 1])
    expect_identical(as.matrix(res$grads[[1]]), as.matrix(ge[[as.character(W$id)]]))
  }
})
