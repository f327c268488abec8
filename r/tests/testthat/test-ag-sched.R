# ggmlR 0.8.6 learning-rate schedulers (spec §8) and gradient helpers (§7.2, §7.3): every golden
# value at 1e-9, ggmlR's messages with the constructor's call, fields, prints, and that the
# optimizer in the core really trains with the scheduled rate and momentum.

sgd <- function(lr = 0.1, momentum = 0) optimizer_sgd(list(w = ag_param(1)), lr = lr,
                                                      momentum = momentum)
steps <- function(s, n) vapply(seq_len(n), function(i) s$step(), numeric(1))
err_of <- function(expr) tryCatch(expr, error = function(e) e)
# the error's message and the function its call names (ggmlR's stop() keeps the call)
expect_err_call <- function(expr, msg, fn) {
  e <- err_of(expr)
  expect_s3_class(e, "error")  # nolint: object_usage_linter.
  expect_identical(conditionMessage(e), msg)  # nolint: object_usage_linter.
  expect_identical(as.character(conditionCall(e)[[1L]]), fn)  # nolint: object_usage_linter.
}
# a parameter whose gradient in backward()'s environment is exactly `g` (d sum(w * g) / dw)
with_grad <- function(g) {
  w <- ag_param(matrix(0, NROW(g), NCOL(g)))
  with_grad_tape(l <- ag_sum(ag_mul(w, g)))
  list(w = w, g = backward(l))
}

test_that("cosine: T_mult restarts, fields, T_mult = 1 and restart = FALSE as 0.8.2", {
  o <- sgd()
  s <- lr_scheduler_cosine(o, T_max = 4, restart = TRUE, T_mult = 2)
  expect_identical(c(s$T_cur, s$cycle_pos), c(4L, 0L))
  expect_equal(steps(s, 14),
               c(0.1, 0.0853553391, 0.05, 0.0146446609, 0.1, 0.0961939766, 0.0853553391,
                               0.0691341716, 0.05, 0.0308658284, 0.0146446609, 0.0038060234, 0.1,
                               0.0990392640), tolerance = 1e-9)
  # step 13 restarted the 16-step cycle
  expect_identical(c(s$last_epoch, s$T_cur, s$cycle_pos), c(14L, 16L, 2L))
  expect_equal(o$lr, 0.0990392640, tolerance = 1e-9)
  # periods 2, 3, 4 (4.5 -> 4), 6
  s2 <- lr_scheduler_cosine(sgd(), T_max = 2, restart = TRUE, T_mult = 1.5)
  expect_equal(steps(s2, 10),
               c(0.1, 0.05, 0.1, 0.075, 0.025, 0.1, 0.0853553391, 0.05, 0.0146446609, 0.1),
               tolerance = 1e-9)
  s3 <- lr_scheduler_cosine(sgd(), T_max = 5, restart = TRUE)                # T_mult = 1: period 5
  expect_equal(steps(s3, 7),
               c(0.1, 0.09045085, 0.06545085, 0.03454915, 0.00954915, 0.1, 0.09045085),
               tolerance = 1e-7)
  s4 <- lr_scheduler_cosine(sgd(), T_max = 5, lr_min = 0.01, T_mult = 3)     # no restart: plateau
  expect_equal(steps(s4, 7)[5:7], rep(0.01859424, 3), tolerance = 1e-6)
  expect_identical(capture.output(print(s)),
                   paste0("lr_scheduler_cosine | T_max=4 | lr_max=0.100000 | lr_min=0.000000 | ",
                          "epoch=14 | lr=0.099039"))
})

test_that("cosine and step errors: ggmlR's texts with the call", {
  o <- sgd()
  expect_err_call(lr_scheduler_cosine(o, 0), "T_max must be >= 1", "lr_scheduler_cosine")
  expect_err_call(lr_scheduler_cosine(o, NA_real_), "T_max must be >= 1", "lr_scheduler_cosine")
  # a wrong kind is named as Python's (issue 29: it read NA, "T_max must be >= 1")
  expect_err_call(lr_scheduler_cosine(o, NA), "T_max must be a single number, got NA",
                  "lr_scheduler_cosine")
  for (tm in list(0.5, NA_real_, "a", c(1, 2), NULL))
    expect_err_call(lr_scheduler_cosine(o, 4, T_mult = tm), "T_mult must be a single number >= 1",
                    "lr_scheduler_cosine")
  expect_err_call(lr_scheduler_cosine(o, 4, restart = TRUE, T_mult = 0.9),
                  "T_mult must be a single number >= 1",
                  "lr_scheduler_cosine")
  expect_err_call(lr_scheduler_cosine(o, 0, T_mult = 0), "T_max must be >= 1",
                  "lr_scheduler_cosine")   # order
  expect_err_call(lr_scheduler_step(o, 0), "step_size must be >= 1", "lr_scheduler_step")
  expect_identical(o$lr, 0.1)
  s <- lr_scheduler_step(o, step_size = 2, gamma = 0.5)
  expect_equal(steps(s, 5), c(0.1, 0.05, 0.05, 0.025, 0.025))
  expect_identical(s$last_epoch, 5L)
})

test_that("cyclic: goldens of all modes, construction at base_lr, fields, print, errors", {
  o <- sgd(0.5)
  s <- lr_scheduler_cyclic(o, base_lr = 0.001, max_lr = 0.01, step_size_up = 4)
  expect_identical(o$lr, 0.001)
  expect_equal(steps(s, 10),
               c(0.00325, 0.0055, 0.00775, 0.01, 0.00775, 0.0055, 0.00325, 0.001, 0.00325, 0.0055),
               tolerance = 1e-9)
  expect_identical(c(s$last_step, s$step_size_up, s$step_size_down), c(10L, 4L, 4L))
  expect_identical(s$mode, "triangular")
  expect_identical(capture.output(print(s)),
                   paste0("lr_scheduler_cyclic | mode=triangular | base_lr=0.001000 | ",
                          "max_lr=0.010000 | step=10 | lr=0.005500"))
  s2 <- lr_scheduler_cyclic(sgd(), 0, 1, step_size_up = 2, mode = "triangular2")
  expect_equal(steps(s2, 10), c(0.5, 1, 0.5, 0, 0.25, 0.5, 0.25, 0, 0.125, 0.25), tolerance = 1e-9)
  s3 <- lr_scheduler_cyclic(sgd(), 0, 1, step_size_up = 2, mode = "exp_range", gamma = 0.9)
  expect_equal(steps(s3, 6), c(0.45, 0.81, 0.3645, 0, 0.295245, 0.531441), tolerance = 1e-9)
  s4 <- lr_scheduler_cyclic(sgd(), 0, 1, step_size_up = 3, step_size_down = 1)
  expect_equal(steps(s4, 5), c(1 / 3, 2 / 3, 1, 0, 1 / 3), tolerance = 1e-9)
  expect_err_call(lr_scheduler_cyclic(o, 0.1, 0.2, 0), "step_size_up must be >= 1",
                  "lr_scheduler_cyclic")
  expect_err_call(lr_scheduler_cyclic(o, 0.1, 0.2, 2, 0), "step_size_down must be >= 1",
                  "lr_scheduler_cyclic")
  expect_err_call(lr_scheduler_cyclic(o, 0.2, 0.1), "max_lr must be >= base_lr",
                  "lr_scheduler_cyclic")
  expect_err_call(lr_scheduler_cyclic(o, 0.2, 0.1, 0), "step_size_up must be >= 1",
                  "lr_scheduler_cyclic")
  expect_error(lr_scheduler_cyclic(o, 0.1, 0.2, mode = "saw"), "should be one of")
  expect_equal(o$lr, 0.0055, tolerance = 1e-12)   # failed constructions leave the optimizer alone
})

onecycle_cos_lr <- c(0.028, 0.076, 0.1, 0.0950489386, 0.0811763726, 0.0611299341, 0.0388800659,
                     0.0188336274,
                     0.0049610614, 1e-5)
onecycle_cos_m <- c(0.925, 0.875, 0.85, 0.8549515566, 0.8688255099, 0.8888739533, 0.9111260467,
                    0.9311744901,
                    0.9450484434, 0.95)

test_that(paste0("onecycle: cos and linear goldens, SGD momentum (from 0 to 0.95), clamping, ",
                 "fields, print"), {
  o <- sgd(0.5, momentum = 0)
  s <- lr_scheduler_onecycle(o, max_lr = 0.1, total_steps = 10)
  expect_identical(c(o$lr, o$momentum), c(0.004, 0.95))
  expect_equal(c(s$initial_lr, s$final_lr), c(0.004, 1e-5), tolerance = 1e-12)
  expect_identical(c(s$step_up, s$total_steps, s$last_step), c(3L, 10L, 0L))
  expect_identical(s$mom_field, "momentum")
  got <- t(vapply(1:12, function(i) c(s$step(), o$momentum), numeric(2)))
  expect_equal(got[1:10, 1], onecycle_cos_lr, tolerance = 1e-9)
  expect_equal(got[1:10, 2], onecycle_cos_m, tolerance = 1e-9)
  # clamped past the end
  expect_equal(got[11:12, ], rbind(c(1e-5, 0.95), c(1e-5, 0.95)), tolerance = 1e-12)
  expect_identical(s$last_step, 10L)
  expect_identical(capture.output(print(s)),
                   paste0("lr_scheduler_onecycle | max_lr=0.100000 | total_steps=10 | step=10 | ",
                          "lr=0.000010"))
  s2 <- lr_scheduler_onecycle(sgd(), 0.1, 10, anneal_strategy = "linear")
  o2 <- s2$optimizer
  got <- t(vapply(1:10, function(i) c(s2$step(), o2$momentum), numeric(2)))
  expect_equal(got[, 1],
               c(0.036, 0.068, 0.1, 0.0857157143, 0.0714314286, 0.0571471429, 0.0428628571,
                           0.0285785714, 0.0142942857, 1e-5), tolerance = 1e-9)
  expect_equal(got[c(1:4, 10), 2], c(0.9166666667, 0.8833333333, 0.85, 0.8642857143, 0.95),
               tolerance = 1e-9)
  # halves to even
  expect_identical(lr_scheduler_onecycle(sgd(), 0.1, 10, pct_start = 0.25)$step_up, 2L)
  expect_identical(lr_scheduler_onecycle(sgd(), 0.1, 10, pct_start = 0.35)$step_up, 4L)
  s3 <- lr_scheduler_onecycle(sgd(), 0.1, 100)   # ggmlR's test: peak at step 30, ends at max_lr/1e4
  lrs <- steps(s3, 100)
  expect_identical(which.max(lrs), 30L)
  expect_equal(lrs[100], 1e-5)
})

test_that("onecycle: Adam's beta1, cycle_momentum = FALSE, other optimizers, errors", {
  oa <- optimizer_adam(list(w = ag_param(1)), lr = 1)
  sa <- lr_scheduler_onecycle(oa, 0.01, 10)
  expect_identical(sa$mom_field, "beta1")
  expect_identical(oa$beta1, 0.95)
  steps(sa, 6)
  expect_lt(oa$beta1, 0.95)
  expect_equal(oa$beta1, onecycle_cos_m[6], tolerance = 1e-9)
  o <- sgd(0.5, momentum = 0.3)
  s <- lr_scheduler_onecycle(o, 0.1, 10, cycle_momentum = FALSE)
  expect_null(s$mom_field)
  steps(s, 4)
  expect_identical(o$momentum, 0.3)
  plain <- new.env()
  plain$lr <- 1
  plain$momentum <- 0.1
  sp <- lr_scheduler_onecycle(plain, 0.1, 10)   # not an ag optimizer: no momentum field
  expect_null(sp$mom_field)
  expect_equal(sp$step(), 0.028)
  expect_identical(plain$momentum, 0.1)
  lr0 <- o$lr
  expect_err_call(lr_scheduler_onecycle(o, 0.1, 1), "total_steps must be >= 2",
                  "lr_scheduler_onecycle")
  for (p in c(0, 1, -0.5, NA))
    expect_err_call(lr_scheduler_onecycle(o, 0.1, 10, pct_start = p), "pct_start must be in (0, 1)",
                    "lr_scheduler_onecycle")
  expect_error(lr_scheduler_onecycle(o, 0.1, 10, anneal_strategy = "step"), "should be one of")
  expect_identical(c(o$lr, o$momentum), c(lr0, 0.3))
})

test_that("warmup_cosine: goldens, clamping, warmup 0, fields, print, errors", {
  o <- sgd(0.1)
  s <- lr_scheduler_warmup_cosine(o, warmup_steps = 2, total_steps = 6)
  expect_identical(o$lr, 0)
  expect_equal(s$lr_max, 0.1)
  expect_equal(steps(s, 2), c(0.05, 0.1), tolerance = 1e-9)
  expect_identical(capture.output(print(s)),
                   paste0("lr_scheduler_warmup_cosine | warmup=2 | total=6 | lr_max=0.100000 | ",
                          "step=2 | lr=0.100000"))
  expect_equal(steps(s, 5), c(0.0853553391, 0.05, 0.0146446609, 0, 0), tolerance = 1e-9)
  expect_identical(s$last_step, 6L)
  o0 <- sgd(0.1)
  s0 <- lr_scheduler_warmup_cosine(o0, 0, 4)
  expect_identical(o0$lr, 0.1)
  expect_equal(steps(s0, 4), c(0.0853553391, 0.05, 0.0146446609, 0), tolerance = 1e-9)
  o1 <- sgd(0.1)
  s1 <- lr_scheduler_warmup_cosine(o1, 2, 6, lr_min = 0.01, warmup_start_lr = 0.02)
  expect_identical(o1$lr, 0.02)
  expect_equal(steps(s1, 6), c(0.06, 0.1, 0.0868198052, 0.055, 0.0231801948, 0.01),
               tolerance = 1e-9)
  expect_err_call(lr_scheduler_warmup_cosine(o, -1, 6), "warmup_steps must be >= 0",
                  "lr_scheduler_warmup_cosine")
  expect_err_call(lr_scheduler_warmup_cosine(o, 2, 2), "total_steps must be > warmup_steps",
                  "lr_scheduler_warmup_cosine")
})

test_that("the core optimizer trains with the scheduled lr and momentum", {
  local_f64()
  w <- ag_param(1)
  o <- optimizer_sgd(list(w = w), lr = 0.5)
  s <- lr_scheduler_cyclic(o, base_lr = 0.001, max_lr = 0.01, step_size_up = 4)
  lr <- s$step()
  with_grad_tape(l <- ag_sum(ag_scale(w, 3)))
  o$step(backward(l))
  expect_equal(as.numeric(w$data), 1 - lr * 3, tolerance = 1e-15)
  # onecycle switches momentum on for a momentum-0 SGD: its velocity now carries the gradient
  w2 <- ag_param(1)
  o2 <- optimizer_sgd(list(w = w2), lr = 0.5, momentum = 0)
  s2 <- lr_scheduler_onecycle(o2, 0.1, 10)
  lr1 <- s2$step()
  with_grad_tape(l <- ag_sum(ag_scale(w2, 2)))
  o2$step(backward(l))
  lr2 <- s2$step()
  m2 <- o2$momentum
  with_grad_tape(l <- ag_sum(ag_scale(w2, 2)))
  o2$step(backward(l))
  expect_equal(as.numeric(w2$data), 1 - lr1 * 2 - lr2 * (m2 * 2 + 2), tolerance = 1e-14)
})

test_that("clip_grad_value: bounds, NaN/Inf, return value, dims, errors", {
  local_f64()
  a <- with_grad(matrix(c(-5, 0.5, 3, -0.2, NaN, Inf), 2, 3))
  mx <- withVisible(clip_grad_value(list(w = a$w), a$g, 1))
  expect_false(mx$visible)
  expect_identical(mx$value, 5)
  expect_identical(gradof(a$g, a$w), matrix(c(-1, 0.5, 1, -0.2, NaN, 1), 2, 3))
  b <- with_grad(c(-Inf, 0.25))
  expect_identical(clip_grad_value(list(b$w), b$g, 0.5), 0.25)   # unnamed list clips too
  expect_identical(gradof(b$g, b$w), matrix(c(-0.5, 0.25), 2, 1))
  u <- ag_param(1)                                               # no gradient: 0
  expect_identical(clip_grad_value(list(u), b$g, 1), 0)
  for (cv in list(0, -1, Inf, NaN, "1", c(1, 2)))
    expect_error(clip_grad_value(list(a$w), a$g, cv),
                 "clip_value must be a single positive finite number",
                 fixed = TRUE)
  e <- err_of(clip_grad_value(list(a$w), a$g, 0))
  expect_identical(as.character(conditionCall(e)[[1L]]), "clip_grad_value")
})

test_that("check_grad_anomaly: ok, nan/inf/nan+inf, warn/stop/silent, large, missing, empty", {
  local_f64()
  a <- with_grad(c(1, -2))
  expect_silent(r <- check_grad_anomaly(list(w = a$w), a$g))
  expect_identical(r, data.frame(param = "w", n_nan = 0L, n_inf = 0L, max_abs = 2, status = "ok"))
  na <- with_grad(c(NA, 1, NaN))  # R's NA is not NaN for ggmlR's is.nan(): only the NaN counts
  expect_identical(check_grad_anomaly(list(w = na$w), na$g, action = "silent")$n_nan, 1L)
  n <- with_grad(c(NaN, pi))
  w <- tryCatch(check_grad_anomaly(list(w = n$w), n$g), warning = function(w) w)
  expect_s3_class(w, "simpleWarning")
  expect_null(conditionCall(w))
  expect_identical(conditionMessage(w), paste0("gradient anomaly detected in 1 parameter(s):\n",
                                               "  w                    status=nan      ",
                                               "n_nan=1 n_inf=0 max_abs=3.142"))
  expect_warning(r <- check_grad_anomaly(list(n$w), n$g), "anomaly")
  expect_identical(r$param, "1")
  i <- with_grad(c(Inf, -Inf, 0.5))
  ni <- with_grad(c(NaN, Inf))
  expect_warning(r <- check_grad_anomaly(list(i = i$w, ni = ni$w), ni$g), "anomaly")
  expect_identical(r$status, c("missing", "nan+inf"))
  expect_identical(r$max_abs, c(NA_real_, NA_real_))
  r <- check_grad_anomaly(list(i = i$w), i$g, action = "silent")
  expect_identical(r[, c("n_nan", "n_inf", "max_abs", "status")],
                   data.frame(n_nan = 0L, n_inf = 2L, max_abs = 0.5, status = "inf"))
  e <- err_of(check_grad_anomaly(list(i = i$w), i$g, action = "stop"))
  expect_match(conditionMessage(e),
               "^gradient anomaly detected in 1 parameter\\(s\\):\n  i +status=inf ")
  expect_null(conditionCall(e))
  expect_warning(r <- check_grad_anomaly(list(w = a$w), a$g, max_abs = 1.5), "status=large")
  expect_identical(r$status, "large")
  expect_silent(r <- check_grad_anomaly(list(w = a$w), a$g, max_abs = 2))
  expect_identical(r$status, "ok")
  u <- ag_param(1)
  expect_silent(r <- check_grad_anomaly(list(u, a$w), a$g))
  expect_identical(r, data.frame(param = c("1", "2"), n_nan = c(NA, 0L), n_inf = c(NA, 0L),
                                 max_abs = c(NA, 2), status = c("missing", "ok")))
  expect_identical(check_grad_anomaly(list(), a$g),
                   data.frame(param = character(0), n_nan = integer(0), n_inf = integer(0),
                              max_abs = numeric(0), status = character(0)))
  expect_error(check_grad_anomaly(list(a$w), a$g, action = "ignore"), "should be one of")
})

test_that(paste0("lr_scheduler_warmup (also in Python): linear ramp, then the next schedule; ",
                 "alone it holds"), {
  opt <- optimizer_sgd(list(w = ag_param(matrix(1))), lr = 0.1)
  cos <- lr_scheduler_cosine(opt, T_max = 5, lr_min = 0.01)
  s <- lr_scheduler_warmup(opt, warmup_steps = 4, after = cos)
  expect_identical(opt$lr, 0)
  lrs <- vapply(1:6, function(i) s$step(), numeric(1))
  expect_equal(lrs[1:4], c(0.025, 0.05, 0.075, 0.1), tolerance = 1e-15)
  expect_equal(lrs[5:6], c(0.1, 0.0914057647), tolerance = 1e-9)
  expect_output(print(s), "lr_scheduler_warmup | warmup_steps=4 | epoch=6", fixed = TRUE)
  o2 <- optimizer_adam(list(w = ag_param(matrix(1))), lr = 0.2)
  s2 <- lr_scheduler_warmup(o2, warmup_steps = 2, start_factor = 0.5)
  expect_equal(o2$lr, 0.1)
  expect_equal(vapply(1:4, function(i) s2$step(), numeric(1)), c(0.15, 0.2, 0.2, 0.2))
  expect_error(lr_scheduler_warmup(o2, 0), "warmup_steps must be >= 1", fixed = TRUE)
})

test_that("counts are truncated by the core: as.integer's rule once for both (issue 29)", {
  o <- optimizer_sgd(list(w = ag_param(matrix(1))), lr = 0.1)
  expect_identical(lr_scheduler_step(o, 2.9)$step_size, 2L)
  expect_identical(lr_scheduler_step(o, 2^31 - 0.5)$step_size, .Machine$integer.max)
  s <- lr_scheduler_cyclic(o, 0.01, 0.1, step_size_up = 3.7)
  expect_identical(c(s$step_size_up, s$step_size_down), c(3L, 3L))
  s <- lr_scheduler_warmup_cosine(o, -0.5, 5.5)  # -0.5 is 0: no warmup
  expect_identical(c(s$warmup_steps, s$total_steps), c(0L, 5L))
  for (bad in list(0.9, 1e12, Inf, NaN, 2^31))
    expect_error(lr_scheduler_onecycle(o, 0.1, bad), "^total_steps must be >= 2$",
                 class = "pyggmlr_value_error")
  # accumulate_steps and ag_layer_norm's size: the same as.integer, pg_arg_count
  a <- optimizer_adam(list(ag_param(matrix(1))), accumulate_steps = 2.9)
  expect_identical(a$accumulate_steps, 2L)
  expect_identical(ag_layer_norm(4.9)$normalized_shape, 4L)
  expect_error(optimizer_sgd(list(ag_param(matrix(1))), accumulate_steps = 2^31),
               "optimizer_sgd: accumulate_steps must be a positive integer, got 2147483648",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_layer_norm("3"),
               "ag_layer_norm: normalized_shape must be a single positive integer, got \"3\"",
               fixed = TRUE, class = "pyggmlr_value_error")
})
