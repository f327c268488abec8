# ag_checkpoint: gradient checkpointing on the core's host node (spec 0.8.6 §4). Gradients are
# the plain tape's bit for bit, in backward()'s environment and $grad alike; a dropout mask is
# replayed; failures leave the tape and .Random.seed as they were; the tape keeps less.

ck_mlp <- function(seed = 0) {
  set.seed(seed)
  p <- list()
  for (i in 0:2) {
    dims <- list(c(8, 4), c(8, 8), c(3, 8))[[i + 1]]
    p[[paste0("W", i)]] <- ag_param(matrix(rnorm(prod(dims)), dims[1], dims[2]))
    p[[paste0("b", i)]] <- ag_param(matrix(rnorm(dims[1]), dims[1], 1))
  }
  p$x <- ag_param(matrix(rnorm(20), 4, 5))
  p
}
ck_layer <- function(p, i, act) {
  force(i)
  force(act)
  function(h) act(ag_add(ag_matmul(p[[paste0("W", i)]], h), p[[paste0("b", i)]]))
}
# a segment v -> body(v) whose second call (backward()'s replay) runs fail(v) first
ck_fails_on_replay <- function(fail, body) {
  calls <- 0
  function(v) {
    calls <<- calls + 1
    if (calls == 2) fail(v)
    body(v)
  }
}

ck_grads <- function(p, forward) {
  for (t in p) t$grad <- NULL
  with_grad_tape(loss <- ag_sum(forward(p$x)))
  g <- backward(loss)
  list(map = lapply(p, function(t) g[[t]]), grad = lapply(p, function(t) t$grad))
}

test_that("plain, checkpointed, nested and sequential models give the same gradients bit for bit", {
  local_f64()
  p <- ck_mlp()
  l0 <- ck_layer(p, 0, ag_tanh)
  l1 <- ck_layer(p, 1, ag_relu)
  l2 <- ck_layer(p, 2, ag_tanh)
  ref <- ck_grads(p, function(x) l2(l1(l0(x))))
  fws <- list(
    checkpointed = function(x) l2(ag_checkpoint(function(h) l1(l0(h)), x)),
    nested = function(x) l2(ag_checkpoint(function(h) l1(ag_checkpoint(l0, h)), x)),
    sequence = function(x) ag_checkpoint(l2, ag_checkpoint(l1, ag_checkpoint(l0, x))))
  for (nm in names(fws)) {
    got <- ck_grads(p, fws[[nm]])
    for (k in names(p)) {
      expect_identical(got$map[[k]], ref$map[[k]], label = paste(nm, k, "map"))
      expect_identical(got$grad[[k]], ref$grad[[k]], label = paste(nm, k, "$grad"))
    }
  }
})

test_that("a parameter used twice in a segment gets its gradient once, in the map and $grad", {
  local_f64()
  W <- ag_param(rows(c(1, 2), c(3, 4)))
  x <- ag_tensor(matrix(1, 2, 1))
  seg <- function(v) ag_matmul(W, ag_matmul(W, v))
  with_grad_tape(l <- ag_sum(ag_checkpoint(seg, x)))
  g <- backward(l)
  expect_identical(gradof(g, W), rows(c(7, 11), c(9, 13)))
  expect_identical(W$grad, rows(c(7, 11), c(9, 13)))
})

test_that("opt$step(backward(loss)) trains the segment's parameters as the plain tape does", {
  local_f64()
  final <- list()
  for (ck in c(FALSE, TRUE)) {
    p <- ck_mlp(3)
    l0 <- ck_layer(p, 0, ag_tanh)
    l1 <- ck_layer(p, 1, ag_relu)
    opt <- optimizer_sgd(p[c("W0", "b0", "W1", "b1")], lr = 0.1)
    for (s in 1:3) {
      with_grad_tape(loss <- ag_sum(l1(if (ck) ag_checkpoint(l0, p$x) else l0(p$x))))
      g <- backward(loss)
      n <- clip_grad_norm(p[c("W0", "b0", "W1", "b1")], g, max_norm = 1)
      opt$step(g)
      opt$zero_grad()
    }
    final[[length(final) + 1]] <- list(p$W0$data, n)
  }
  expect_identical(final[[1]], final[[2]])
})

test_that("a dropout segment replays its mask; the stream advances as a plain call", {
  local_f64()
  x <- ag_param(matrix(as.numeric(1:20), 4, 5))
  seg <- function(v) ag_dropout(0.5)$forward(ag_scale(v, 2))
  res <- list()
  for (ck in c(FALSE, TRUE)) {
    x$grad <- NULL
    set.seed(7)
    with_grad_tape({
      y <- if (ck) ag_checkpoint(seg, x) else seg(x)
      after <- .Random.seed
      l <- ag_sum(y)
    })
    g <- backward(l)
    expect_identical(.Random.seed, after)   # backward's replay draws nothing net
    res[[length(res) + 1]] <- list(y$data, gradof(g, x), after, runif(2))
  }
  expect_identical(res[[1]], res[[2]])
  mask <- res[[2]][[1]] / (2 * x$data)
  expect_setequal(unique(as.vector(mask)), c(0, 2))
  expect_identical(res[[2]][[2]], 2 * mask)
  set.seed(3)
  with_grad_tape({ a <- ag_checkpoint(seg, x); b <- ag_checkpoint(seg, x) })
  expect_false(identical(a$data, b$data))   # ggmlR's rewinding quirk is not copied
})

test_that("an error inside fn leaves the tape enabled, its nodes and .Random.seed", {
  local_f64()
  x <- ag_param(matrix(1, 3, 2))
  bad <- function(v) { ag_dropout(0.5)$forward(v); stop("boom in segment") }
  set.seed(11)
  with_grad_tape({
    y <- ag_scale(x, 2)
    n <- ag_tape_memory(quiet = TRUE)$nodes
    s <- .Random.seed
    expect_error(ag_checkpoint(bad, y), "boom in segment")
    expect_true(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]]))
    expect_identical(ag_tape_memory(quiet = TRUE)$nodes, n)
    expect_identical(.Random.seed, s)
    l <- ag_sum(y)
  })
  expect_identical(gradof(backward(l), x), matrix(2, 3, 2))
})

test_that("an R error in the replay unwinds through the core and leaves everything intact", {
  local_f64()
  W <- ag_param(matrix(rnorm(9), 3, 3))
  x <- ag_tensor(matrix(rnorm(6), 3, 2))
  seg <- ck_fails_on_replay(function(v) stop("replay failed"),
                            function(v) ag_tanh(ag_matmul(W,
                                                          ag_checkpoint(function(u) ag_matmul(W, u),
                                                              v))))
  with_grad_tape(l <- ag_sum(ag_checkpoint(seg, x)))
  n <- ag_tape_memory(quiet = TRUE)$nodes
  s <- .Random.seed
  err <- tryCatch(backward(l), error = function(e) e)
  expect_identical(conditionMessage(err), "replay failed")   # the segment's own condition
  expect_identical(ag_tape_memory(quiet = TRUE)$nodes, n)
  expect_null(W$grad)
  expect_identical(.Random.seed, s)
  g <- backward(l)   # nothing was left half done: the next backward works
  with_grad_tape(ref <- gradof(backward(ag_sum(ag_tanh(ag_matmul(W, ag_matmul(W, x))))), W))
  expect_identical(gradof(g, W), ref)
  # an error in a nested segment's replay goes through both host nodes unchanged
  k <- 0
  inner <- function(v) { k <<- k + 1; if (k == 3) stop("inner replay"); ag_matmul(W, v) }
  W$grad <- NULL
  with_grad_tape(l2 <- ag_sum(ag_checkpoint(function(v) ag_tanh(ag_checkpoint(inner, v)), x)))
  expect_error(backward(l2), "inner replay")
  expect_null(W$grad)
  expect_true(is.environment(backward(l2)))   # the fourth call replays fine
})

test_that("the tape holds less with a checkpoint (ag_tape_memory)", {
  set.seed(1)
  W <- lapply(1:4, function(i) ag_param(matrix(rnorm(256 * 256), 256, 256)))
  x <- ag_tensor(matrix(rnorm(256 * 64), 256, 64))
  body <- function(h) ag_relu(ag_matmul(W[[4]],
                                        ag_relu(ag_matmul(W[[3]], ag_relu(ag_matmul(W[[2]], h))))))
  rep <- list()
  for (ck in c(FALSE, TRUE)) {
    with_grad_tape({
      h <- ag_relu(ag_matmul(W[[1]], x))
      l <- ag_sum(if (ck) ag_checkpoint(body, h) else body(h))
    })
    gc()   # R frees the handles of dead intermediates lazily
    rep[[length(rep) + 1]] <- ag_tape_memory(quiet = TRUE)
    backward(l)
    ag_tape_clear()
  }
  expect_identical(c(rep[[1]]$nodes, rep[[2]]$nodes), c(9L, 4L))
  expect_equal(rep[[1]]$bytes_snapshots - rep[[2]]$bytes_snapshots, 5 * 256 * 64 * 4)
  # total: those, five node structs, and the segment's three weights no longer on the tape
  expect_equal(rep[[1]]$bytes_total - rep[[2]]$bytes_total,
               5 * 256 * 64 * 4 + 5 * (rep[[1]]$bytes_fields / 9) + 3 * 256 * 256 * 4)
  expect_identical(rep[[2]]$by_op$nodes[rep[[2]]$by_op$op == "checkpoint"], 1L)
})

test_that("outside a tape ag_checkpoint returns fn(...) unchanged", {
  f <- function(a, b = 0) list("v", a, b)
  expect_identical(ag_checkpoint(f, 1, b = 2), list("v", 1, 2))
  x <- ag_param(matrix(1))
  expect_identical(ag_checkpoint(function(v) v, x), x)
  with_grad_tape(ag_no_grad(expect_identical(ag_checkpoint(function(v) v, x), x)))
})

test_that("arguments: positional and named tensors are the node's inputs", {
  local_f64()
  a <- ag_param(matrix(c(1, 2), 1))
  b <- ag_param(matrix(c(3, 4), 1))
  w <- ag_param(matrix(c(5, 6), 1))
  fn <- function(u, k, v, w = NULL) ag_add(ag_scale(ag_sub(u, v), k), ag_scale(w, 10))
  with_grad_tape({
    y <- ag_checkpoint(fn, a, 2, b, w = w)
    g <- backward(ag_sum(y))
  })
  expect_identical(y$data, matrix(c(46, 56), 1))
  expect_identical(gradof(g, a), matrix(2, 1, 2))
  expect_identical(gradof(g, b), matrix(-2, 1, 2))
  expect_identical(gradof(g, w), matrix(10, 1, 2))
  expect_true(y$requires_grad)
  xs <- lapply(0:7, function(i) ag_tensor(matrix(i)))
  V <- ag_param(matrix(2))
  with_grad_tape({
    z <- do.call(ag_checkpoint, c(list(function(...) ag_matmul(V, Reduce(ag_add, list(...)))), xs))
    expect_identical(ag_tape_memory(quiet = TRUE)$nodes, 1L)   # no input requires grad: one node
    expect_identical(gradof(backward(ag_sum(z)), V), matrix(28))
  })
})

test_that("error texts, and ag_compile refuses a checkpoint naming it", {
  msg <- "ag_checkpoint() expects a function as its first argument."
  expect_error(ag_checkpoint(), msg, fixed = TRUE)
  expect_error(ag_checkpoint(3), msg, fixed = TRUE)
  # R has no model-checkpoint callback
  expect_error(ag_checkpoint("ckpt.safetensors"), msg, fixed = TRUE)
  expect_error(with_grad_tape(ag_checkpoint(function() 3)), "must return an ag_tensor")
  # a replay that returns no tensor: the core's text, Python's too (test_checkpoint.py)
  calls <- 0L
  seg <- function(u) {
    calls <<- calls + 1L
    if (calls == 1L) ag_sum(u) else 3
  }
  x <- ag_param(matrix(1, 2, 2))
  with_grad_tape({
    y <- ag_checkpoint(seg, x)
    expect_error(backward(ag_sum(y)), paste("ag_checkpoint(): fn must return an ag_tensor",
                                            "(it returned numeric when replayed in backward())"),
                 fixed = TRUE, class = "pyggmlr_argument_error")
  })
  W <- ag_param(matrix(rnorm(9), 3, 3))
  x <- ag_tensor(matrix(rnorm(6), 3, 2))
  expect_error(ag_compile(function(v) ag_sum(ag_checkpoint(function(u) ag_matmul(W, u), v)), x,
                          build = "grad"),
               "ag_checkpoint")
  expect_identical(ag_tape_memory(quiet = TRUE)$nodes, 0L)
})

test_that("the segment may call with_grad_tape without touching the outer tape", {
  local_f64()
  W <- ag_param(matrix(3))
  x <- ag_tensor(matrix(2))
  with_grad_tape({
    h <- ag_scale(x, 1)
    n <- ag_tape_memory(quiet = TRUE)$nodes
    y <- ag_checkpoint(function(v) with_grad_tape(ag_matmul(W, v)), h)
    expect_identical(ag_tape_memory(quiet = TRUE)$nodes, n + 1L)
    expect_true(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]]))
    g <- backward(ag_sum(y))
  })
  expect_identical(gradof(g, W), matrix(2))
})

test_that("backward() inside a segment's replay is refused, nothing changes", {
  local_f64()
  W <- ag_param(matrix(rnorm(9), 3, 3))
  x <- ag_tensor(matrix(rnorm(6), 3, 2))
  seg <- ck_fails_on_replay(function(v) with_grad_tape(backward(ag_sum(ag_matmul(W, v)))),
                            function(v) ag_tanh(ag_matmul(W, v)))
  with_grad_tape(l <- ag_sum(ag_checkpoint(seg, x)))
  expect_error(backward(l), "cannot run inside an ag_checkpoint segment")
  expect_null(W$grad)
  expect_true(is.environment(backward(l)))
})

test_that("ag_gradcheck sees the segment's parameters", {
  local_f64()
  p <- ck_mlp(5)
  l0 <- ck_layer(p, 0, ag_tanh)
  l1 <- ck_layer(p, 1, ag_tanh)
  ok <- ag_gradcheck(function(inp) ag_sum(l1(ag_checkpoint(l0, inp$x))),
                     list(x = p$x, W0 = p$W0, b0 = p$b0), quiet = TRUE)
  expect_true(ok)
})
