.compile_pair <- function(dtype, opt_fn, accumulate = 1L, steps = 12L) {
  old <- ag_dtype(dtype)
  on.exit(ag_dtype(old))
  set.seed(5)
  P0 <- list(matrix(rnorm(24) * 0.5, 6, 4), matrix(rnorm(6) * 0.1, 6, 1),
             matrix(rnorm(18) * 0.5, 3, 6), matrix(rnorm(3) * 0.1, 3, 1))
  data <- lapply(seq_len(steps), function(i) list(x = matrix(rnorm(32), 4, 8),
                                                  y = matrix(sample(0:2, 8, TRUE), 1, 8)))
  f <- function(P, x, y) {
    h <- ag_relu(ag_add(ag_matmul(P[[1]], x), P[[2]]))
    h <- P$ln$forward(h)
    ag_softmax_cross_entropy_loss(ag_add(ag_matmul(P[[3]], h), P[[4]]), y)
  }
  mk <- function() c(lapply(P0, ag_param), list(ln = ag_layer_norm(6)))
  Pe <- mk(); Pc <- mk()
  params <- function(P) c(P[1:4], unname(P$ln$parameters()))
  oe <- opt_fn(params(Pe), accumulate); oc <- opt_fn(params(Pc), accumulate)
  step <- ag_compile(function(x, y) f(Pc, x, y), ag_tensor(data[[1]]$x), ag_tensor(data[[1]]$y), optimizer = oc)
  le <- lc <- numeric(steps)
  for (i in seq_len(steps)) {
    with_grad_tape(loss <- f(Pe, ag_tensor(data[[i]]$x), ag_tensor(data[[i]]$y)))
    oe$step(backward(loss))
    oe$zero_grad()
    le[i] <- as.numeric(loss$data)
    lc[i] <- step(data[[i]]$x, data[[i]]$y)
  }
  list(le = le, lc = lc, Pe = lapply(params(Pe), function(p) p$data), Pc = lapply(params(Pc), function(p) p$data), step = step)
}

test_that("compiled and eager trajectories are bit-identical (f32/f64, adam/sgd, accumulation)", {
  adam <- function(P, k) optimizer_adam(P, lr = 0.01, weight_decay = 0.01, accumulate_steps = k)
  sgd <- function(P, k) optimizer_sgd(P, lr = 0.05, momentum = 0.9, accumulate_steps = k)
  for (dt in c("f32", "f64")) for (o in list(adam, sgd)) for (k in c(1L, 3L)) {
    r <- .compile_pair(dt, o, k)
    expect_identical(r$le, r$lc)
    expect_identical(r$Pe, r$Pc)
    expect_gt(length(unique(r$lc)), 1L)
  }
})

test_that("compiled grad and forward builds, shape errors, print", {
  W <- ag_param(matrix(c(1, -2, 3, 0.5, 1, -1), 2, 3), dtype = "f64")
  g <- ag_compile(function(x) ag_sum(ag_mul(ag_matmul(W, x), ag_matmul(W, x))), ag_tensor(matrix(0, 3, 4), dtype = "f64"),
                  build = "grad")
  x <- matrix(seq(-1, 1, length.out = 12), 3, 4)
  r <- g(x)
  expect_equal(r$loss, sum((as.matrix(W$data) %*% x)^2))
  expect_equal(r$grads[[1]], 2 * (as.matrix(W$data) %*% x) %*% t(x))
  fw <- ag_compile(function(x) ag_relu(ag_matmul(W, x)), ag_tensor(matrix(0, 3, 4), dtype = "f64"), build = "forward")
  expect_equal(as.matrix(fw(x)$data), pmax(as.matrix(W$data) %*% x, 0))
  expect_error(fw(matrix(0, 3, 5)), "input 1 was recorded as \\[3x4\\] f64 but the new value is \\[3x5\\]")
  expect_output(print(fw), "Compiled graph \\(forward\\): 2 nodes")
  expect_error(ag_compile(function(x) x, matrix(0, 1, 1)), "needs optimizer")
})
