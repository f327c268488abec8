test_that("golden Adam (2 steps) and SGD momentum (2 steps) of spec section 13", {
  local_f64()
  G <- gold()
  W <- ag_param(G$W)
  b <- ag_param(G$b)
  opt <- optimizer_adam(list(W = W, b = b), lr = 0.01)
  for (i in 1:2) {
    with_grad_tape(l <- ag_softmax_cross_entropy_loss(ag_add(ag_matmul(W, G$x), b), G$y))
    opt$step(backward(l))
    opt$zero_grad()
  }
  expect_equal(opt$t, 2L)
  expect_equal(W$data, byrow(c(0.519995769066, 0.219992725706, -0.0800088789751,
                                -0.319995769066, 0.780007274294, 0.3800088789751), 2),
               tolerance = 1e-10)
  expect_equal(b$data, matrix(c(0.11998598038, -0.21998598038), 2, 1), tolerance = 1e-10)
  W2 <- ag_param(G$W)
  sgd <- optimizer_sgd(list(W = W2), lr = 0.1, momentum = 0.9)
  for (i in 1:2) {
    with_grad_tape(l <- ag_mse_loss(ag_matmul(W2, G$x), G$y))
    sgd$step(backward(l))
  }
  expect_equal(W2$data, byrow(c(0.459, 0.282, 0.105, -0.631, 0.247, -0.375), 2), tolerance = 1e-10)
  expect_equal(sgd$velocity$W, byrow(c(0.31, -0.42, -1.15, 1.91, 3.03, 4.15), 2), tolerance = 1e-10)
})

test_that("step(NULL) reads $grad; zero_grad clears it; lr is assignable", {
  local_f64()
  p <- ag_param(c(1, 2))
  o <- optimizer_sgd(list(p), lr = 0.5)
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  backward(l)
  o$step()
  expect_equal(p$data, matrix(c(0, 0), 2, 1))
  o$zero_grad()
  expect_null(p$grad)
  o$lr <- 0.25
  expect_equal(o$lr, 0.25)
})

test_that("params matched by identity; duplicates dropped with a warning (ggmlR bug 2 fixed)", {
  local_f64()
  l1 <- ag_linear(2, 2)
  l2 <- ag_linear(2, 2)
  expect_warning(o <- optimizer_sgd(c(l1$params(), l2$params(), l1$params()), lr = 0.1),
                 "listed more than once")
  expect_equal(length(o$params), 4L)
  w1 <- l1$W$data
  w2 <- l2$W$data
  with_grad_tape(l <- ag_sum(ag_add(l1$forward(c(1, 1)), l2$forward(c(1, 1)))))
  o$step(backward(l))
  expect_equal(l1$W$data, w1 - 0.1)
  expect_equal(l2$W$data, w2 - 0.1)
  # unnamed lists work too
  p <- ag_param(1)
  o2 <- optimizer_sgd(list(p), lr = 1)
  with_grad_tape(l <- ag_sum(p))
  o2$step(backward(l))
  expect_equal(p$data[1, 1], 0)
})

test_that("gradient accumulation applies the mean every k calls; Adam's t advances on updates", {
  local_f64()
  p <- ag_param(0)
  o <- optimizer_adam(list(p), lr = 0.1, accumulate_steps = 2L)
  with_grad_tape(l <- ag_scale(p, 1))
  backward(l)
  expect_false(o$step())
  expect_equal(p$data[1, 1], 0)
  expect_equal(o$t, 0L)
  with_grad_tape(l <- ag_scale(p, 3))
  backward(l)
  expect_true(o$step())  # $grad = 1 + 3, / 2
  expect_equal(o$t, 1L)
  expect_equal(p$data[1, 1], -0.1, tolerance = 1e-6)
})

test_that("state() / load_state() round-trip the moments", {
  local_f64()
  p <- ag_param(c(1, 2))
  o <- optimizer_adam(list(w = p), lr = 0.1)
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  o$step(backward(l))
  s <- o$state()
  expect_equal(s$format, "ggmlR.ag_opt_state")
  expect_equal(s$t, 1L)
  q <- ag_param(p$data)
  o2 <- optimizer_adam(list(w = q), lr = 0.1)
  o2$load_state(s)
  expect_equal(o2$t, 1L)
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  o$step(backward(l))
  with_grad_tape(l <- ag_sum(ag_mul(q, q)))
  o2$step(backward(l))
  expect_equal(q$data, p$data, tolerance = 1e-14)
  o3 <- optimizer_adam(list(w = ag_param(c(1, 2))), lr = 0.5)
  expect_warning(o3$load_state(s), "lr")
  expect_error(o3$load_state(list()), "not an optimizer state")
})

test_that("print formats of spec 6", {
  p <- ag_param(1)
  expect_equal(capture.output(print(optimizer_sgd(list(p), lr = 0.05))),
               "SGD optimizer | lr = 0.05 | momentum = 0 | params: 1 ")
  expect_equal(capture.output(print(optimizer_adam(list(a = p)))),
               "Adam optimizer | lr = 0.001 | beta1 = 0.9 | beta2 = 0.999 | step = 0 | params: 1 ")
})

test_that("clip_grad_norm: no-op below, clipped norm 1, joint norm", {
  local_f64()
  p <- ag_param(c(3, 4))
  with_grad_tape(l <- ag_sum(ag_mul(p, c(3, 4))))
  g <- backward(l)
  n <- clip_grad_norm(list(p), g, 1.0)
  expect_equal(n, 5)
  expect_equal(sqrt(sum(gradof(g, p)^2)), 1.0, tolerance = 1e-5)
  g2 <- backward(l)
  expect_equal(clip_grad_norm(list(p), g2, 10), 5)
  expect_equal(gradof(g2, p), matrix(c(3, 4), 2, 1))
  a <- ag_param(0.3)
  b <- ag_param(0.4)
  with_grad_tape(l <- ag_add(ag_scale(a, 0.3), ag_scale(b, 0.4)))
  expect_equal(clip_grad_norm(list(a, b), backward(l), 1), 0.5)
})

test_that("schedulers: exact ggmlR formulas and prints", {
  o <- optimizer_sgd(list(ag_param(1)), lr = 1.0)
  s <- lr_scheduler_step(o, step_size = 2, gamma = 0.5)
  lrs <- vapply(1:5, function(i) s$step(), numeric(1))
  expect_equal(lrs, c(1, 0.5, 0.5, 0.25, 0.25))
  expect_equal(capture.output(print(s)),
               "lr_scheduler_step | step_size=2 | gamma=0.5000 | epoch=5 | lr=0.250000")
  o2 <- optimizer_sgd(list(ag_param(1)), lr = 0.1)
  c1 <- lr_scheduler_cosine(o2, T_max = 5, lr_min = 0.01)
  lrs <- vapply(1:6, function(i) c1$step(), numeric(1))
  expect_equal(lrs, c(0.1, 0.09140576, 0.06890576, 0.04109424, 0.01859424, 0.01859424),
               tolerance = 1e-7)
  expect_equal(o2$lr, 0.01859424, tolerance = 1e-6)
  o3 <- optimizer_sgd(list(ag_param(1)), lr = 0.1)
  c2 <- lr_scheduler_cosine(o3, T_max = 5, restart = TRUE)
  lrs <- vapply(1:7, function(i) c2$step(), numeric(1))
  expect_equal(lrs, c(0.1, 0.09045085, 0.06545085, 0.03454915, 0.00954915, 0.1, 0.09045085),
               tolerance = 1e-7)
  expect_match(capture.output(print(c2)),
               paste0("^lr_scheduler_cosine \\| T_max=5 \\| lr_max=0.100000 \\| lr_min=0.000000 ",
                      "\\| epoch=7"))
})

test_that(paste0("an optimizer over no parameters is an error (as Python's and torch's), not a ",
                 "silent no-op"), {
  for (f in list(optimizer_sgd, optimizer_adam))
    expect_error(f(list()), class = "pyggmlr_value_error", regexp = "got no parameters to optimize")
  expect_error(optimizer_adam(list(), lr = 0.1), "optimizer_adam: got no parameters to optimize",
               fixed = TRUE)
})
