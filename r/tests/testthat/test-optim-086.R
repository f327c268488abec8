# ggmlR 0.8.6's gradient write-back, accumulation idiom, parameter lists and optimizer state
# (spec ggmlr-ag-api-0.8.6.md 1.1-1.3, 6.1-6.5, 7.1): goldens, identities and exact texts.

W22 <- matrix(c(1, 2, 3, 4), 2, 2)

test_that("backward() writes each requires-grad input's $grad once (1.1)", {
  local_f64()
  W <- ag_param(W22)
  x <- ag_tensor(matrix(1, 2, 1))
  with_grad_tape({ h <- ag_matmul(W, x); l <- ag_sum(ag_matmul(W, h)) })
  g <- backward(l)
  expect_equal(g[[W]], matrix(c(7, 11, 9, 13), 2, 2))
  expect_equal(W$grad, matrix(c(7, 11, 9, 13), 2, 2))
  expect_equal(h$grad, matrix(c(3, 7), 2, 1))
  backward(l)
  expect_equal(W$grad, matrix(c(14, 22, 18, 26), 2, 2))
  expect_null(l$grad)
  X <- ag_param(matrix(c(1, 3, 2, 4), 2, 2))
  G <- matrix(c(1, 2, -1, 0.5), 2, 2)
  with_grad_tape(l <- ag_sum(ag_mul(ag_add(X, X), ag_tensor(G))))
  backward(l)
  expect_equal(X$grad, 2 * G)
  A <- ag_param(c(1, 2, 3))
  with_grad_tape(l <- ag_sum(ag_mul(A, A)))
  backward(l)
  expect_equal(as.vector(A$grad), c(2, 4, 6))
})

test_that("ag_grad() and as.matrix.ag_tensor (1.2, 1.3)", {
  local_f64()
  A <- ag_param(c(1, 2))
  expect_null(ag_grad(A))
  with_grad_tape(l <- ag_sum(ag_mul(A, A)))
  backward(l)
  expect_equal(ag_grad(A), matrix(c(2, 4), 2, 1))
  expect_error(ag_grad(matrix(1)), "ag_grad(): `x` must be an ag_tensor", fixed = TRUE)
  expect_identical(as.matrix(A), A$data)
})

test_that("clip_grad_norm on the environment leaves $grad untouched (7.1)", {
  local_f64()
  W <- ag_param(W22)
  with_grad_tape(l <- ag_sum(ag_mul(W, W)))
  g <- backward(l)
  clip_grad_norm(list(W), g, 1)
  expect_equal(W$grad, 2 * W22)
  expect_equal(sqrt(sum(g[[W]]^2)), 1, tolerance = 1e-6)
  g[[W]] <- matrix(0, 2, 2)  # writing the environment leaves $grad alone too
  expect_equal(W$grad, 2 * W22)
  expect_equal(g[[W]], matrix(0, 2, 2))
})

.accum <- function(avg, env) {
  W <- ag_param(W22)
  o <- optimizer_sgd(list(W = W), lr = 0.1, accumulate_steps = 2L, average = avg)
  y <- ag_tensor(matrix(0, 2, 1))
  res <- list()
  for (x in list(c(1, 0), c(0, 1))) {
    with_grad_tape(l <- ag_mse_loss(ag_matmul(W, ag_tensor(x)), y))
    if (env) r <- o$step(backward(l))
    else { backward(l); r <- o$step(); if (r) o$zero_grad() }
    res[[length(res) + 1L]] <- list(r = r, W = W$data)
  }
  res
}

test_that("accumulation goldens: FALSE then TRUE, average, sum, the env trap (6.3)", {
  local_f64()
  r <- .accum(TRUE, FALSE)
  expect_false(r[[1]]$r)
  expect_true(r[[2]]$r)
  expect_equal(r[[1]]$W, W22)
  expect_equal(r[[2]]$W, matrix(c(0.95, 1.9, 2.85, 3.8), 2, 2), tolerance = 1e-15)
  expect_equal(.accum(FALSE, FALSE)[[2]]$W, matrix(c(0.9, 1.8, 2.7, 3.6), 2, 2), tolerance = 1e-15)
  expect_equal(.accum(TRUE, TRUE)[[2]]$W, matrix(c(1, 2, 2.85, 3.8), 2, 2), tolerance = 1e-15)
  p1 <- ag_param(1)
  p1$grad <- matrix(1)
  expect_invisible(optimizer_sgd(list(p1))$step())
})

test_that("Adam's t counts applied steps; counting calls read nothing", {
  local_f64()
  W <- ag_param(W22)
  o <- optimizer_adam(list(W), accumulate_steps = 3L)
  ts <- integer(0)
  for (i in 1:6) { W$grad <- matrix(1, 2, 2); o$step(); ts <- c(ts, o$t) }
  expect_identical(ts, c(0L, 0L, 1L, 1L, 1L, 2L))
  # no gradient anywhere: an error, t unchanged (ggmlR quirk 14.5 advanced t; issue 19)
  o3 <- optimizer_adam(list(ag_tensor(W22)))
  expect_error(o3$step(), class = "pyggmlr_state_error",
               regexp = "optimizer_adam step\\(\\): no gradient for any")
  expect_identical(o3$t, 0L)
  e <- new.env()
  e[[as.character(W$id)]] <- "not a gradient"
  o2 <- optimizer_sgd(list(W), lr = 0.1, accumulate_steps = 2L)
  expect_false(o2$step(e))
  expect_identical(o2$accum_count, 1L)
  expect_error(optimizer_sgd(list(W), accumulate_steps = 0),
               "accumulate_steps must be a positive integer")
  expect_identical(optimizer_sgd(list(W), accumulate_steps = 1.9)$accumulate_steps, 1L)
})

test_that("step(grads) takes any environment keyed by id, a user-built one too", {
  local_f64()
  W <- ag_param(W22)
  b <- ag_param(c(1, 1))
  G <- matrix(c(1, 0.5, -2, 4), 2, 2)
  e <- new.env()
  assign(as.character(W$id), G, envir = e)
  o <- optimizer_sgd(list(W = W, b = b), lr = 0.5)
  expect_true(o$step(e))
  expect_equal(W$data, W22 - 0.5 * G)
  expect_equal(b$data, matrix(1, 2, 1))
  e2 <- new.env()
  assign(as.character(W$id), matrix(1, 3, 3), envir = e2)
  expect_error(o$step(e2), "does not match parameter")
  expect_error(o$step(list()), "grads must be an environment")
})

.mlp0 <- function() {
  set.seed(11)
  list(matrix(rnorm(15), 5, 3), matrix(rnorm(5), 5, 1), matrix(rnorm(10), 2, 5),
       matrix(rnorm(2), 2, 1))
}
.mlp_loss <- function(P, x, y) {
  h <- ag_tanh(ag_add(ag_matmul(P[[1]], ag_tensor(x)), P[[2]]))
  ag_mse_loss(ag_add(ag_matmul(P[[3]], h), P[[4]]), ag_tensor(y))
}

test_that("k accumulated micro-batches with average = one batch of size k (MLP, both optimizers)", {
  local_f64()
  set.seed(3)
  X <- matrix(rnorm(3 * 24), 3, 24)
  Y <- matrix(rnorm(2 * 24), 2, 24)
  for (kind in c("sgd", "adam")) for (k in c(2L, 4L)) {
    make <- function(P, k) if (kind == "sgd") optimizer_sgd(P, lr = 0.1, momentum = 0.9,
                                                            accumulate_steps = k)
                           else optimizer_adam(P, lr = 0.01, accumulate_steps = k)
    Pb <- lapply(.mlp0(), ag_param)
    Pa <- lapply(.mlp0(), ag_param)
    ob <- make(Pb, 1L)
    oa <- make(Pa, k)
    for (s in 0:2) {
      cols <- 8 * s + 1:8
      with_grad_tape(l <- .mlp_loss(Pb, X[, cols], Y[, cols]))
      backward(l)
      expect_true(ob$step())
      ob$zero_grad()
      for (c in split(cols, rep(seq_len(k), each = 8 / k))) {
        with_grad_tape(l <- .mlp_loss(Pa, X[, c, drop = FALSE], Y[, c, drop = FALSE]))
        backward(l)
        if (oa$step()) oa$zero_grad()
      }
    }
    for (i in 1:4) expect_equal(Pa[[i]]$data, Pb[[i]]$data, tolerance = 1e-12)
  }
})

test_that("parameter lists by position; one tensor twice kept once with ggmlR's warning (6.2)", {
  local_f64()
  W <- ag_param(W22)
  expect_warning(o <- optimizer_sgd(list(W, W), lr = 0.1),
                 paste0("^optimizer: 1 parameter\\(s\\) listed more than once \\(same tensor\\); ",
                        "keeping the first occurrence of each\\.$"))
  expect_length(o$params, 1L)
  W$grad <- matrix(1, 2, 2)
  o$step()
  expect_equal(W$data, W22 - 0.1)
  run <- function(nms) {
    P <- lapply(.mlp0(), ag_param)
    names(P) <- nms
    o <- optimizer_adam(P, lr = 0.05)
    for (i in 1:3) { with_grad_tape(l <- .mlp_loss(unname(P), matrix(1:12 / 6, 3, 4),
                                                   matrix(0, 2, 4)))
      backward(l)
      o$step()
      o$zero_grad() }
    lapply(P, function(p) p$data)
  }
  a <- run(c("a", "b", "c", "d"))
  b <- run(NULL)
  d <- run(c("w", "w", "w", "w"))
  expect_identical(unname(a), unname(b))
  expect_identical(unname(a), unname(d))
  expect_error(optimizer_sgd("W"), "is.list(params) is not TRUE", fixed = TRUE)
})

test_that("fields: m, v, velocity, t, accum_count, params, resident (6.1)", {
  local_f64()
  W <- ag_param(W22)
  b <- ag_param(c(1, 1))
  o <- optimizer_adam(list(W = W, b = b))
  expect_identical(names(o$m), c("W", "b"))
  expect_equal(o$m$W, matrix(0, 2, 2))
  expect_equal(o$v$b, matrix(0, 2, 1))
  expect_identical(o$t, 0L)
  expect_identical(o$accum_count, 0L)
  expect_false(o$resident)
  expect_identical(names(o$params), c("W", "b"))
  s <- optimizer_sgd(list(W, b), momentum = 0.9)
  expect_null(names(s$velocity))
  expect_equal(s$velocity[[2]], matrix(0, 2, 1))
  expect_false(optimizer_sgd(list(W), average = 1)$average)
})

test_that("zero_grad clears $grad by position and empties the tape (6.4)", {
  local_f64()
  W <- ag_param(W22)
  o <- optimizer_sgd(list(W))
  with_grad_tape(l <- ag_sum(ag_mul(W, W)))
  backward(l)
  expect_false(is.null(W$grad))
  o$zero_grad()
  expect_null(W$grad)
  expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 0)
})

.trained <- function(nms = c("W", "b")) {
  W <- ag_param(W22)
  b <- ag_param(c(0.5, -1))
  P <- list(W, b)
  names(P) <- nms
  o <- optimizer_adam(P, lr = 0.01)
  for (i in 1:3) { with_grad_tape(l <- ag_sum(ag_mul(ag_add(ag_matmul(W, W), b), ag_matmul(W, W))))
    backward(l)
    o$step()
    o$zero_grad() }
  list(o = o, W = W, b = b)
}

test_that("state() layout, copies, mid-accumulation warning (6.5)", {
  local_f64()
  r <- .trained()
  st <- r$o$state()
  expect_identical(names(st),
                   c("format", "version", "type", "t", "accum_count", "names", "slots", "hyper"))
  expect_identical(st[c("format", "version", "type", "t", "accum_count", "names")],
                   list(format = "ggmlR.ag_opt_state", version = 1L, type = "adam", t = 3L,
                        accum_count = 0L,
                        names = c("W", "b")))
  expect_identical(names(st$slots), c("m", "v"))
  expect_identical(names(st$slots$m), c("W", "b"))
  expect_identical(st$hyper, list(lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8))
  m0 <- st$slots$m$W
  r$W$grad <- matrix(1, 2, 2)
  r$o$step()
  expect_identical(st$slots$m$W, m0)
  s2 <- optimizer_sgd(list(r$W), momentum = 0.5, weight_decay = 0.1)$state()
  expect_null(s2$names)
  expect_identical(s2$t, 0L)
  expect_identical(names(s2$slots), "velocity")
  expect_identical(s2$hyper, list(lr = 0.01, momentum = 0.5, weight_decay = 0.1))
  o4 <- optimizer_sgd(list(r$W), accumulate_steps = 4L)
  o4$step()
  expect_warning(s4 <- o4$state(),
                 paste0("^optimizer state\\(\\): taken mid-accumulation \\(1 of 4 ",
                        "backward passes\\); ",
                                          "the accumulated gradients live in the ",
                        "parameters' \\$grad and are not part of the state$"))
  expect_identical(s4$accum_count, 1L)
})

test_that("load_state(): the 8 checks in order, exact texts, nothing written on failure (6.5)", {
  local_f64()
  r <- .trained()
  o <- r$o
  good <- o$state()
  before <- o$state()
  mod <- function(...) modifyList(good, list(...))
  err <- function(opt, st, text) expect_error(opt$load_state(st),
                                              paste0("optimizer load_state(): ", text),
                                              fixed = TRUE)
  err(o, 1, "not an optimizer state (from opt$state())")
  err(o, mod(format = "x"), "not an optimizer state (from opt$state())")
  err(o, mod(version = 99L), "unsupported state version 99 (this ggmlR reads version 1)")
  err(o, mod(version = 1), "unsupported state version 1 (this ggmlR reads version 1)")
  err(optimizer_sgd(list(r$W, r$b)), good, "state is for a 'adam' optimizer, this one is 'sgd'")
  err(optimizer_adam(list(W = r$W, b = r$b, c = ag_param(1))), good,
      "state has 2 parameters, optimizer has 3")
  err(optimizer_adam(list(a = r$W, b = r$b)), good,
      paste0("parameter names differ from the state's (position is the key, names are the ",
             "check)\n  optimizer: a, b\n  state:     W, b"))
  bad <- good
  bad$slots$m$W <- matrix(0, 1, 1)
  err(o, bad, "slot 'm' of parameter 1 has shape 1x1, expected 2x2")
  bad <- good
  bad$slots$v$b <- matrix(c(NaN, 0), 2, 1)
  err(o, bad, "slot 'v' of parameter 2 is not finite")
  err(o, mod(t = -1), "t / accum_count are not counts")
  err(o, mod(accum_count = 1.5), "t / accum_count are not counts")
  expect_identical(o$state(), before)
  # an unnamed side skips the names check
  expect_true(optimizer_adam(list(r$W, r$b), lr = 0.01)$load_state(good))
})

test_that("hyper-parameter warning: class, call, changed; the load goes on (6.5)", {
  local_f64()
  r <- .trained()
  st <- r$o$state()
  o2 <- optimizer_adam(list(W = r$W, b = r$b), lr = 0.5, eps = 1e-6)
  w <- tryCatch(o2$load_state(st), warning = function(w) w)
  expect_s3_class(w, c("ggmlR_opt_hyper_warning", "warning", "condition"), exact = TRUE)
  expect_null(conditionCall(w))
  expect_identical(conditionMessage(w),
                   paste0("optimizer load_state(): hyperparameters differ from the ",
                          "state's and are NOT restored: ",
                                               "lr = 0.5 (state 0.01), eps = 1e-06 (state 1e-08)"))
  expect_identical(w$changed,
                   list(lr = list(current = 0.5, state = 0.01),
                        eps = list(current = 1e-6, state = 1e-8)))
  withCallingHandlers(o2$load_state(st),
                      ggmlR_opt_hyper_warning = function(w) invokeRestart("muffleWarning"))
  expect_identical(o2$t, 3L)
  expect_equal(o2$lr, 0.5)
  expect_silent(optimizer_adam(list(W = r$W, b = r$b), lr = 0.01)$load_state(st))
  expect_warning(optimizer_adam(list(W = r$W, b = r$b), lr = 0.01,
                                weight_decay = 0.1)$load_state(st),
                 "weight_decay = 0.1 (state 0)", fixed = TRUE)
  fresh <- optimizer_adam(list(r$W))$state()
  o3 <- optimizer_adam(list(r$W))
  expect_true(o3$load_state(fresh))
  expect_identical(o3$t, 0L)
  o4 <- optimizer_adam(list(W = r$W, b = r$b), lr = 0.01)
  o4$load_state(st)
  s1 <- o4$state()
  o4$load_state(st)
  expect_identical(o4$state(), s1)
})

test_that("a state() of the earlier pyggmlr layout still loads", {
  local_f64()
  r <- .trained()
  new <- r$o$state()  # as the layout state() had before ggmlR 0.8.6's: per parameter, "kind"
  old <- list(format = new$format, version = 1L, kind = "adam", t = new$t, accum_count = 0L,
              hyper = list(lr = r$o$lr, beta1 = r$o$beta1, beta2 = r$o$beta2, eps = r$o$eps),
              params = lapply(seq_along(new$slots$m), function(i)
                list(m = new$slots$m[[i]], v = new$slots$v[[i]], accum = NULL)))
  expect_identical(old$kind, "adam")
  o2 <- optimizer_adam(list(W = r$W, b = r$b), lr = 0.01)
  expect_true(o2$load_state(old))
  expect_identical(o2$state(), r$o$state())
  expect_error(optimizer_sgd(list(r$W, r$b))$load_state(old),
               "state is for a 'adam' optimizer, this one is 'sgd'", fixed = TRUE)
})
