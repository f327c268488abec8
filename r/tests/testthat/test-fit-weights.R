# ag_fit(sample_weight =, class_weight =): weighted SGD runs against the same steps written out in
# base R (f64), eager against static, and the errors (native/fit_weight.c, native/fit_wloss.c).

sw_data <- function(n = 12L) {
  set.seed(5)
  list(x = matrix(rnorm(3 * n), 3, n), w = runif(n, 0, 2),
       ids = c(0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2), Y = matrix(rnorm(2 * n), 2, n))
}

# W, b after plain SGD over batches in order (shuffle = FALSE) with keras' weighted loss:
# gout is d loss / d out for a batch, from base R
sw_sgd <- function(W, b, x, nepoch, bs, lr, gout) {
  for (e in seq_len(nepoch)) for (s in seq(1L, ncol(x) - bs + 1L, by = bs)) {
    j <- s:(s + bs - 1L)
    out <- W %*% x[, j, drop = FALSE] + as.vector(b)
    g <- gout(out, j)
    W <- W - lr * g %*% t(x[, j, drop = FALSE])
    b <- b - lr * rowSums(g)
  }
  list(W = W, b = b)
}

test_that("weighted mse follows keras' sum over batch size (base R steps)", {
  local_f64()
  d <- sw_data()
  m <- ag_linear(3, 2)
  W0 <- m$params()$W$data
  b0 <- m$params()$b$data
  h <- ag_fit(m, d$x, d$Y, loss = "mse", optimizer = "sgd", lr = 0.1, nepoch = 2L,
              batch_size = 4L, shuffle = FALSE, silent = TRUE, static = FALSE,
              sample_weight = d$w)
  want <- sw_sgd(W0, b0, d$x, 2L, 4L, 0.1, function(out, j) {
    2 * sweep(out - d$Y[, j], 2, d$w[j], "*") / (2 * 4)
  })
  expect_equal(m$params()$W$data, want$W, tolerance = 1e-12)
  expect_equal(as.vector(m$params()$b$data), as.vector(want$b), tolerance = 1e-12)
  expect_true(all(is.finite(h$loss)))
})

test_that("class_weight by name or by position and sample_weight multiply (cross_entropy)", {
  local_f64()
  d <- sw_data()
  cw <- c(2, 1, 0.5)  # class 1 missing below: it weighs 1, as keras
  gold <- function() {
    m <- ag_linear(3, 3)
    list(m = m, W = m$params()$W$data, b = m$params()$b$data)
  }
  g <- gold()
  ag_fit(g$m, d$x, d$ids, optimizer = "sgd", lr = 0.1, nepoch = 2L, batch_size = 4L,
         shuffle = FALSE, silent = TRUE, class_weight = c("0" = 2, "2" = 0.5),
         sample_weight = d$w)
  wt <- d$w * cw[d$ids + 1]
  want <- sw_sgd(g$W, g$b, d$x, 2L, 4L, 0.1, function(out, j) {
    p <- apply(out, 2, function(z) exp(z - max(z)) / sum(exp(z - max(z))))
    p[cbind(d$ids[j] + 1, seq_along(j))] <- p[cbind(d$ids[j] + 1, seq_along(j))] - 1
    sweep(p, 2, wt[j], "*") / 4
  })
  expect_equal(g$m$params()$W$data, want$W, tolerance = 1e-12)
  # the same run with a factor y named by its levels, and with a plain vector by class id
  for (spec in list(list(y = factor(c("a", "b", "c")[d$ids + 1]), cw = c(a = 2, c = 0.5)),
                    list(y = d$ids, cw = c(2, 1, 0.5)))) {
    m2 <- ag_linear(3, 3)
    p2 <- m2$params()
    p2$W$data <- g$W
    p2$b$data <- g$b
    ag_fit(m2, d$x, spec$y, optimizer = "sgd", lr = 0.1, nepoch = 2L, batch_size = 4L,
           shuffle = FALSE, silent = TRUE, class_weight = spec$cw, sample_weight = d$w)
    expect_identical(m2$params()$W$data, g$m$params()$W$data)
  }
})

test_that("weighted static runs equal eager ones bit for bit; unit weights change nothing", {
  d <- sw_data()
  run <- function(...) {
    ggml_set_seed(3L)
    m <- ag_sequential(ag_linear(3, 5, "tanh"), ag_linear(5, 3))
    h <- ag_fit(m, d$x, d$ids, nepoch = 2L, batch_size = 4L, val_split = 0.25, seed = 2L,
                silent = TRUE, ...)
    list(h$loss, h$val_loss, lapply(ag_state_dict(m), identity))
  }
  a <- run(static = FALSE, sample_weight = d$w, class_weight = c(1, 3, 0.5))
  b <- run(static = TRUE, sample_weight = d$w, class_weight = c(1, 3, 0.5))
  expect_identical(a, b)
  expect_identical(run(), run(sample_weight = rep(1, 12L)))
})

test_that("weight errors are classed and name ag_fit and the argument", {
  d <- sw_data()
  m <- ag_linear(3, 3)
  fit <- function(...) ag_fit(m, d$x, d$ids, nepoch = 1L, batch_size = 4L, silent = TRUE, ...)
  expect_error(fit(sample_weight = 1:5), "ag_fit: sample_weight has 5 values but x has 12",
               class = "pyggmlr_shape_error")
  expect_error(fit(sample_weight = matrix(1, 4, 6)),  # the core's text, as Python's
               "ag_fit: sample_weight must be a vector of one weight per sample, got a 4x6 array",
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(fit(sample_weight = c(1, -1, rep(1, 10))),
               "sample_weight must be finite and >= 0; position 2 has -1",
               class = "pyggmlr_value_error")
  expect_error(fit(sample_weight = c(NA, rep(1, 11))), "sample_weight must be finite",
               class = "pyggmlr_value_error")
  expect_error(fit(sample_weight = rep(0, 12)), "every sample's weight",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = c(a = 1)), "class_weight's keys must be 0-based class ids",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = c("1" = -2)),
               "class_weight must be finite and >= 0; class 1 has -2",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = c(1, NA)), "must be finite and >= 0; class 1 has NA",
               class = "pyggmlr_value_error")
  # the ids' rules are the core's (Python's test_fit_weights.py: the same texts)
  expect_error(fit(class_weight = c("1" = 1, "1" = 2)), "class_weight names a class twice; class 1",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = c("1.5" = 1)), "0-based class ids .*; got 1.5",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = c("1e9" = 1)), "class id 1000000000 is above 16777216",
               class = "pyggmlr_value_error")
  expect_error(fit(class_weight = "a"), "class_weight must be a numeric vector",
               class = "pyggmlr_argument_error")
  expect_error(ag_fit(ag_linear(3, 2), d$x, d$Y, loss = "mse", class_weight = c(1, 2),
                      nepoch = 1L, batch_size = 4L, silent = TRUE),
               "class_weight needs class-id targets .* not loss \"mse\"",
               class = "pyggmlr_value_error")
  expect_error(fit(loss = function(o, y) ag_mean(o), sample_weight = d$w),
               "sample_weight needs a built-in loss", class = "pyggmlr_value_error")
})

test_that("a weighted run's checkpoint resumes only a weighted run; plain ones as before", {
  d <- sw_data()
  path <- tempfile(fileext = ".safetensors")
  on.exit(unlink(path), add = TRUE)
  fit <- function(...) ag_fit(ag_linear(3, 3), d$x, d$ids, batch_size = 4L, silent = TRUE,
                              seed = 2L, ...)
  fit(nepoch = 1L, sample_weight = d$w, callbacks = list(ag_model_checkpoint(path)))
  expect_error(fit(nepoch = 2L, resume_from = path),
               "cannot resume: weighted was true in the checkpoint, now null",
               class = "pyggmlr_value_error")
  expect_length(fit(nepoch = 2L, resume_from = path, sample_weight = d$w)$loss, 2L)
  fit(nepoch = 1L, callbacks = list(ag_model_checkpoint(path)))
  expect_length(fit(nepoch = 2L, resume_from = path)$loss, 2L)
})

test_that("class_weight ids beyond the run's classes are refused (Python's text)", {
  d <- sw_data()
  m <- ag_sequential(ag_linear(3, 3))
  before <- lapply(m$parameters(), function(p) p$data)
  opt <- optimizer_adam(m$parameters(), lr = 0.01, accumulate_steps = 3L)
  opt$accum_count <- 1
  fit <- function(...) ag_fit(m, d$x, nepoch = 1L, batch_size = 4L, silent = TRUE, ...)
  expect_error(fit(d$ids, optimizer = opt, class_weight = c("7" = 2)),
               paste0("^ag_fit: class_weight's class id 7 is not a class of this run ",
                      "\\(3 classes: ids 0 to 2\\)$"), class = "pyggmlr_value_error")
  expect_equal(c(opt$accumulate_steps, opt$accum_count), c(3, 1))
  expect_identical(lapply(m$parameters(), function(p) p$data), before)
  expect_error(fit(d$ids, class_weight = c(1, 1, 1, 2)),
               "class id 3 is not a class of this run (3 classes", fixed = TRUE,
               class = "pyggmlr_value_error")
  # y holds 0 and 1 only: the model's 3 outputs are the classes; a factor's levels name them
  expect_s3_class(fit(as.numeric(d$ids > 0), class_weight = c("2" = 0.5)), "ag_history")
  f <- factor(c("a", "b")[(d$ids > 0) + 1], levels = c("a", "b", "c"))
  expect_s3_class(fit(f, class_weight = c(c = 0.5)), "ag_history")
  expect_error(fit(f, class_weight = c(z = 0.5)), "key 'z' is not one of y's labels",
               class = "pyggmlr_value_error")
  expect_error(ag_fit(ag_linear(3, 1, "sigmoid"), d$x, matrix(as.numeric(d$ids > 0), 1),
                      loss = "binary_cross_entropy", class_weight = c("2" = 1), nepoch = 1L,
                      batch_size = 4L, silent = TRUE),
               "class id 2 is not a class of this run (2 classes: ids 0 to 1)", fixed = TRUE,
               class = "pyggmlr_value_error")
})
