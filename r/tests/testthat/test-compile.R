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
  Pe <- mk()
  Pc <- mk()
  params <- function(P) c(P[1:4], unname(P$ln$parameters()))
  oe <- opt_fn(params(Pe), accumulate)
  oc <- opt_fn(params(Pc), accumulate)
  step <- ag_compile(function(x, y) f(Pc, x, y), ag_tensor(data[[1]]$x), ag_tensor(data[[1]]$y),
                     optimizer = oc)
  le <- lc <- numeric(steps)
  for (i in seq_len(steps)) {
    with_grad_tape(loss <- f(Pe, ag_tensor(data[[i]]$x), ag_tensor(data[[i]]$y)))
    backward(loss)  # ggmlR's idiom: $grad sums the micro-batches, step() reads it
    if (oe$step()) oe$zero_grad()
    le[i] <- as.numeric(loss$data)
    lc[i] <- step(data[[i]]$x, data[[i]]$y)
  }
  list(le = le, lc = lc, Pe = lapply(params(Pe), function(p) p$data),
       Pc = lapply(params(Pc), function(p) p$data), step = step)
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
  g <- ag_compile(function(x) ag_sum(ag_mul(ag_matmul(W, x), ag_matmul(W, x))),
                  ag_tensor(matrix(0, 3, 4), dtype = "f64"),
                  build = "grad")
  x <- matrix(seq(-1, 1, length.out = 12), 3, 4)
  r <- g(x)
  expect_equal(r$loss, sum((as.matrix(W$data) %*% x)^2))
  expect_equal(r$grads[[1]], 2 * (as.matrix(W$data) %*% x) %*% t(x))
  fw <- ag_compile(function(x) ag_relu(ag_matmul(W, x)), ag_tensor(matrix(0, 3, 4), dtype = "f64"),
                   build = "forward")
  expect_equal(as.matrix(fw(x)$data), pmax(as.matrix(W$data) %*% x, 0))
  expect_error(fw(matrix(0, 3, 5)),
               "input 1 was recorded as \\[3x4\\] f64 but the new value is \\[3x5\\]")
  expect_output(print(fw), "Compiled graph \\(forward\\): 2 nodes")
  expect_error(ag_compile(function(x) x, matrix(0, 1, 1)), "needs optimizer")
})

# A step with dropout (an ag_dropout layer and attention dropout, whose mask is drawn transposed)
# run eagerly and compiled from the same set.seed: same masks, losses, weights and R stream.
.dropout_pair <- function(dtype, steps = 8L) {
  old <- ag_dtype(dtype)
  on.exit(ag_dtype(old))
  set.seed(9)
  mk <- function() {
    set.seed(21)
    list(l1 = ag_linear(4, 6, "relu"), drop = ag_dropout(0.4),
         att = ag_multihead_attention(6, 2, dropout = 0.3),
         l2 = ag_linear(6, 3))
  }
  params <- function(M) c(M$l1$params(), M$att$parameters(), M$l2$params())
  f <- function(M, x, y) {
    h <- M$drop$forward(M$l1$forward(x))
    ag_softmax_cross_entropy_loss(M$l2$forward(M$att$forward(h)), y)
  }
  Me <- mk()
  Mc <- mk()
  set.seed(3)
  data <- lapply(seq_len(steps),
                 function(i) list(x = matrix(rnorm(20), 4, 5),
                                  y = matrix(sample(0:2, 5, TRUE), 1, 5)))
  oe <- optimizer_adam(params(Me), lr = 0.02)
  oc <- optimizer_adam(params(Mc), lr = 0.02)
  set.seed(77)
  le <- numeric(steps)
  for (i in seq_len(steps)) {
    with_grad_tape(loss <- f(Me, ag_tensor(data[[i]]$x), ag_tensor(data[[i]]$y)))
    backward(loss)  # ggmlR's idiom: $grad sums the micro-batches, step() reads it
    if (oe$step()) oe$zero_grad()
    le[i] <- as.numeric(loss$data)
  }
  seed_e <- .Random.seed  # nolint: object_usage_linter.
  set.seed(77)
  seed0 <- .Random.seed  # nolint: object_usage_linter.
  step <- ag_compile(function(x, y) f(Mc, x, y), ag_tensor(data[[1]]$x), ag_tensor(data[[1]]$y),
                     optimizer = oc)
  seed_rec <- .Random.seed  # nolint: object_usage_linter.
  lc <- vapply(seq_len(steps), function(i) step(data[[i]]$x, data[[i]]$y), 0)
  list(le = le, lc = lc, Pe = lapply(params(Me), function(p) p$data),
       Pc = lapply(params(Mc), function(p) p$data),
       # nolint start: object_usage_linter.
       seed0 = seed0, seed_rec = seed_rec, seed_e = seed_e, seed_c = .Random.seed, step = step)
       # nolint end
}

test_that(paste0("dropout in compiled steps: new masks each replay in the eager order, ",
                 "bit-identical (f32/f64)"), {
  for (dt in c("f32", "f64")) {
    r <- .dropout_pair(dt)
    expect_identical(r$seed_rec, r$seed0)  # recording draws nothing an eager step would
    expect_identical(r$le, r$lc)
    expect_identical(r$Pe, r$Pc)
    expect_identical(r$seed_c, r$seed_e)
    expect_gt(length(unique(r$lc)), 1L)
    # one ag_dropout node and the attention heads' node (one mask per head), each redrawn by
    # every replay
    ops <- .Call(pyggmlr:::R_pg_graph_ops, attr(r$step, "graph"))
    expect_equal(c(sum(ops == "dropout"), sum(ops == "mha_heads")), c(1L, 1L))
    expect_equal(.Call(pyggmlr:::R_pg_graph_dropout_masks, attr(r$step, "graph")), 3L)
    expect_output(print(r$step), "3 dropout masks redrawn per call")
  }
})

test_that("compiled forward with dropout: each call draws a new mask, as eager forwards do", {
  local_f64()
  d <- ag_dropout(0.5)
  x <- matrix(seq_len(40) / 10, 4, 10)
  set.seed(4)
  e1 <- d$forward(ag_tensor(x))$data
  e2 <- d$forward(ag_tensor(x))$data
  set.seed(4)
  fw <- ag_compile(function(x) d$forward(x), ag_tensor(x), build = "forward")
  c1 <- fw(x)$data
  c2 <- fw(x)$data
  expect_identical(c1, e1)
  expect_identical(c2, e2)
  expect_false(identical(c1, c2))
  expect_true(all(c1 == 0 | abs(c1 - 2 * x) < 1e-12))
  # without a stream yet, recording leaves none (the next draw seeds R's RNG afresh)
  saved <- .Random.seed
  on.exit(assign(".Random.seed", saved, envir = globalenv()), add = TRUE)
  rm(".Random.seed", envir = globalenv())
  ag_compile(function(x) d$forward(x), ag_tensor(x), build = "forward")
  expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  # an error while recording also puts the stream back
  set.seed(8)
  s8 <- .Random.seed
  expect_error(ag_compile(function(x) { d$forward(x); stop("boom") }, ag_tensor(x),
                          build = "forward"), "boom")
  expect_identical(.Random.seed, s8)
  expect_s3_class(ag_compile(function(x) d$forward(x), ag_tensor(x), build = "forward"),
                  "ag_compiled")  # recording closed
})

test_that("a replay that draws nothing leaves R's stream alone; one with dropout draws from it", {
  local_f64()
  x <- matrix(seq_len(40) / 10, 4, 10)
  plain <- ag_compile(function(x) ag_tanh(x), ag_tensor(x), build = "forward")
  saved <- .Random.seed
  on.exit(assign(".Random.seed", saved, envir = globalenv()), add = TRUE)
  rm(".Random.seed", envir = globalenv())
  plain(x)  # nothing drawn: R is not seeded from the clock either
  expect_false(exists(".Random.seed", envir = globalenv(), inherits = FALSE))
  set.seed(3)
  s3 <- .Random.seed
  plain(x)
  expect_identical(.Random.seed, s3)
  d <- ag_dropout(0.5)
  drop <- ag_compile(function(x) d$forward(x), ag_tensor(x), build = "forward")
  set.seed(3)
  drop(x)
  expect_false(identical(.Random.seed, s3))  # 40 mask draws from R's stream
  set.seed(3)
  invisible(runif(40))
  expect_identical(.Random.seed, {set.seed(3); drop(x); .Random.seed})
})

test_that("batch norm in compiled graphs updates its running statistics once per replay", {
  old <- ag_dtype()
  on.exit(ag_dtype(old), add = TRUE)
  for (dt in c("f32", "f64")) {
    ag_dtype(dt)
    set.seed(6)
    xs <- lapply(1:5, function(i) matrix(rnorm(15, mean = i, sd = i), 3, 5))
    be <- ag_batch_norm(3, momentum = 0.2)
    bc <- ag_batch_norm(3, momentum = 0.2)
    fw <- ag_compile(function(x) bc$forward(x), ag_tensor(xs[[1]]), build = "forward")
    # recording is one training forward: one update, as an eager forward on the same batch
    invisible(be$forward(ag_tensor(xs[[1]])))
    expect_identical(bc$running_mean, be$running_mean)
    expect_identical(bc$running_var, be$running_var)
    rm <- as.double(be$running_mean)
    rv <- as.double(be$running_var)
    for (i in 2:5) {
      oc <- fw(xs[[i]])$data
      oe <- be$forward(ag_tensor(xs[[i]]))$data
      expect_identical(oc, oe)
      expect_identical(bc$running_mean, be$running_mean)
      expect_identical(bc$running_var, be$running_var)
      # the update rule: running <- (1 - momentum) running + momentum batch (biased variance)
      xm <- xs[[i]]
      if (dt == "f32") xm <- as.matrix(ag_tensor(xm)$data)
      rm <- 0.8 * rm + 0.2 * rowMeans(xm)
      rv <- 0.8 * rv + 0.2 * rowMeans((xm - rowMeans(xm))^2)
      tol <- if (dt == "f32") 1e-6 else 1e-13
      expect_equal(as.double(bc$running_mean), rm, tolerance = tol)
      expect_equal(as.double(bc$running_var), rv, tolerance = tol)
    }
    # an opt graph with batch norm, its statistics put back after recording: the eager trajectory
    set.seed(2)
    W0 <- matrix(rnorm(12), 3, 4)
    mk <- function() list(W = ag_param(W0), bn = ag_batch_norm(3))
    f <- function(M, x, y) ag_mse_loss(M$bn$forward(ag_matmul(M$W, x)), y)
    Me <- mk()
    Mc <- mk()
    oe <- optimizer_sgd(list(Me$W, Me$bn$gamma, Me$bn$beta), lr = 0.1)
    oc <- optimizer_sgd(list(Mc$W, Mc$bn$gamma, Mc$bn$beta), lr = 0.1)
    data <- lapply(1:6, function(i) list(x = matrix(rnorm(24), 4, 6), y = matrix(rnorm(18), 3, 6)))
    step <- ag_compile(function(x, y) f(Mc, x, y), ag_tensor(data[[1]]$x), ag_tensor(data[[1]]$y),
                       optimizer = oc)
    expect_false(identical(Mc$bn$running_mean, Me$bn$running_mean))  # recording updated them once
    Mc$bn$running_mean <- matrix(0, 3, 1)
    Mc$bn$running_var <- matrix(1, 3, 1)
    for (i in 1:6) {
      with_grad_tape(loss <- f(Me, ag_tensor(data[[i]]$x), ag_tensor(data[[i]]$y)))
      oe$step(backward(loss))
      oe$zero_grad()
      expect_identical(step(data[[i]]$x, data[[i]]$y), as.numeric(loss$data))
      expect_identical(Mc$bn$running_mean, Me$bn$running_mean)
      expect_identical(Mc$bn$running_var, Me$bn$running_var)
    }
    expect_identical(Mc$W$data, Me$W$data)
  }
})

test_that("ids given to ag_embedding as an R vector are a constant of the graph", {
  local_f64()
  set.seed(8)
  emb <- ag_embedding(6, 4)
  lin <- ag_linear(4, 2)
  ids <- c(5, 1, 1, 3)
  params <- c(emb$parameters(), lin$params())
  loss <- function(x) ag_mean(lin$forward(emb$forward(ids)) * x)
  x0 <- matrix(rnorm(8), 2, 4)
  fwd <- ag_compile(function(x) lin$forward(emb$forward(ids)), x0, build = "forward")
  expect_identical(fwd(x0)$data, lin$forward(emb$forward(ids))$data)
  xs <- lapply(1:3, function(i) matrix(rnorm(8), 2, 4))
  start <- lapply(params, function(p) p$data)
  opt <- optimizer_adam(params, lr = 0.1)
  eager <- vapply(xs, function(x) {
    with_grad_tape(lt <- loss(ag_tensor(x)))
    opt$step(backward(lt))
    opt$zero_grad()
    lt$data[[1L]]
  }, numeric(1))
  after <- lapply(params, function(p) p$data)
  for (k in seq_along(params)) params[[k]]$data <- start[[k]]
  opt <- optimizer_adam(params, lr = 0.1)
  step <- ag_compile(loss, xs[[1L]], optimizer = opt)
  expect_identical(vapply(xs, step, numeric(1)), eager)
  expect_identical(lapply(params, function(p) p$data), after)
  expect_error(ag_compile(function(x) emb$forward(c(0, 6)), x0, build = "forward"),
               class = "pyggmlr_value_error", "ag_embedding: id 6 at position 2 is out of range")
})

test_that("a fn that is no function is named by its class, as Python's (issue 29)", {
  e <- tryCatch(ag_compile(3, matrix(1, 2, 2)), error = identity)
  expect_s3_class(e, "pyggmlr_argument_error")
  expect_identical(conditionMessage(e), "ag_compile(): fn must be a function, got numeric")
})

test_that("a compiled step names the input it refuses, as Python's", {
  s <- ag_compile(function(x) ag_sum(x), matrix(1, 2, 1), build = "forward")
  expect_error(s("a"), paste0("compiled step: input 1: expected a numeric matrix, vector or ",
                              "ag_tensor, got character"), fixed = TRUE,
               class = "pyggmlr_dtype_error")
  expect_error(s(NULL), "compiled step: input 1: expected", fixed = TRUE)
})
