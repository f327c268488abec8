# Written as a ggmlR 0.8.6 user would write it (ggmlR's test-ag-flash-attn, spec §13): only the
# public API (ag_param, with_grad_tape, backward, $grad, ag_flash_attention, ag_tape_memory), a
# plain base-R reference, ggmlR's tolerances (1e-5; 1e-4 for masked gradients).

ref_attention <- function(q, k, v, n_heads, mask = NULL) {
  d_head <- nrow(q) / n_heads
  out <- matrix(0, nrow(q), ncol(q))
  for (h in seq_len(n_heads)) {
    rows <- ((h - 1) * d_head + 1):(h * d_head)
    s <- t(q[rows, , drop = FALSE]) %*% k[rows, , drop = FALSE] / sqrt(d_head)
    if (!is.null(mask)) s <- s + t(mask)
    p <- exp(s - apply(s, 1, max))
    p <- p / rowSums(p)
    out[rows, ] <- v[rows, , drop = FALSE] %*% t(p)
  }
  out
}

numeric_grad <- function(f, x, eps = 1e-5) {
  g <- x * 0
  for (i in seq_along(x)) {
    xp <- x
    xm <- x
    xp[i] <- xp[i] + eps
    xm[i] <- xm[i] - eps
    g[i] <- (f(xp) - f(xm)) / (2 * eps)
  }
  g
}

causal_mask <- function(skv, sq) { m <- matrix(0, skv, sq); m[row(m) > col(m)] <- -Inf; m }

# q, k, v and a weight W, each [d, s], drawn in that order
rand_qkvw <- function(d, s) {
  lapply(c(q = 1, k = 2, v = 3, W = 4), function(i) matrix(rnorm(d * s), d, s))
}

test_that("flash attention matches the reference for (d, s, h) = (8,4,1), (8,4,2), (16,6,4)", {
  set.seed(42)
  for (cfg in list(c(8, 4, 1), c(8, 4, 2), c(16, 6, 4))) {
    d <- cfg[1]
    s <- cfg[2]
    h <- cfg[3]
    q <- matrix(rnorm(d * s), d, s)
    k <- matrix(rnorm(d * s), d, s)
    v <- matrix(rnorm(d * s), d, s)
    out <- ag_flash_attention(ag_tensor(q), ag_tensor(k), ag_tensor(v), n_heads = h)
    expect_equal(dim(out$data), c(d, s))
    expect_equal(as.matrix(out), ref_attention(q, k, v, h), tolerance = 1e-5)
  }
})

test_that("dq, dk, dv match finite differences", {
  set.seed(1)
  d <- 8; s <- 4; h <- 2
  list2env(rand_qkvw(d, s), environment())
  qt <- ag_param(q)
  kt <- ag_param(k)
  vt <- ag_param(v)
  with_grad_tape({ loss <- ag_sum(ag_mul(ag_flash_attention(qt, kt, vt, h), W)) })
  backward(loss)
  L <- function(q, k, v) sum(ref_attention(q, k, v, h) * W)
  expect_equal(ag_grad(qt), numeric_grad(function(x) L(x, k, v), q), tolerance = 1e-5)
  expect_equal(ag_grad(kt), numeric_grad(function(x) L(q, x, v), k), tolerance = 1e-5)
  expect_equal(ag_grad(vt), numeric_grad(function(x) L(q, k, x), v), tolerance = 1e-5)
})

test_that("all heads are one tape node", {
  x <- ag_param(matrix(rnorm(32), 8, 4))
  with_grad_tape({
    out <- ag_flash_attention(x, x, x, n_heads = 4)
    n <- ag_tape_memory(quiet = TRUE)$nodes
  })
  expect_equal(n, 1)
})

test_that("cross-attention: 3 queries over 5 keys", {
  set.seed(3)
  q <- matrix(rnorm(24), 8, 3)
  k <- matrix(rnorm(40), 8, 5)
  v <- matrix(rnorm(40), 8, 5)
  out <- ag_flash_attention(q, k, v, 2)
  expect_equal(dim(out$data), c(8L, 3L))
  expect_equal(out$data, ref_attention(q, k, v, 2), tolerance = 1e-5)
})

test_that("bad shapes are reported", {
  expect_error(ag_flash_attention(matrix(0, 8, 3), matrix(0, 8, 3), matrix(0, 8, 3), 3),
               "divide d_model")
  expect_error(ag_flash_attention(matrix(0, 8, 3), matrix(0, 6, 3), matrix(0, 8, 3), 2),
               "share d_model")
  expect_error(ag_flash_attention(matrix(0, 8, 3), matrix(0, 8, 4), matrix(0, 8, 6), 2),
               "sequence length")
})

test_that("causal = TRUE equals the explicit lower-triangular mask", {
  set.seed(4)
  q <- matrix(rnorm(48), 8, 6)
  k <- matrix(rnorm(48), 8, 6)
  v <- matrix(rnorm(48), 8, 6)
  out <- ag_flash_attention(q, k, v, 2, causal = TRUE)
  expect_equal(out$data, ref_attention(q, k, v, 2, causal_mask(6, 6)), tolerance = 1e-5)
  expect_equal(out$data[, 1], v[, 1], tolerance = 1e-5)  # the first query sees only key 1
})

test_that("masked gradients match finite differences", {
  set.seed(5)
  d <- 8; s <- 5; h <- 2
  list2env(rand_qkvw(d, s), environment())
  m <- causal_mask(s, s)
  qt <- ag_param(q)
  kt <- ag_param(k)
  vt <- ag_param(v)
  with_grad_tape({ loss <- ag_sum(ag_mul(ag_flash_attention(qt, kt, vt, h, causal = TRUE), W)) })
  backward(loss)
  L <- function(q, k, v) sum(ref_attention(q, k, v, h, m) * W)
  expect_equal(qt$grad, numeric_grad(function(x) L(x, k, v), q), tolerance = 1e-4)
  expect_equal(kt$grad, numeric_grad(function(x) L(q, x, v), k), tolerance = 1e-4)
  expect_equal(vt$grad, numeric_grad(function(x) L(q, k, x), v), tolerance = 1e-4)
})

test_that("logical and numeric masks agree", {
  set.seed(6)
  q <- matrix(rnorm(12), 4, 3)
  k <- matrix(rnorm(16), 4, 4)
  v <- matrix(rnorm(16), 4, 4)
  keep <- matrix(TRUE, 4, 3)
  keep[4, ] <- FALSE
  keep[3, 1] <- FALSE   # [seq_kv, seq_q]
  a <- ag_flash_attention(q, k, v, 1, mask = keep)
  b <- ag_flash_attention(q, k, v, 1, mask = ifelse(keep, 0, -Inf))
  expect_equal(a$data, b$data, tolerance = 1e-6)
  expect_equal(a$data, ref_attention(q, k, v, 1, ifelse(keep, 0, -Inf)), tolerance = 1e-5)
  expect_equal(ag_flash_attention(q, k, v, 1, mask = ag_tensor(ifelse(keep, 0, -Inf)))$data, b$data,
               tolerance = 1e-6)
})

test_that("mask orientation and mask + causal are rejected", {
  q <- matrix(rnorm(6), 2, 3)
  k <- matrix(rnorm(10), 2, 5)
  expect_error(ag_flash_attention(q, k, k, 1, mask = matrix(TRUE, 3, 5)), "seq_kv, seq_q")
  expect_error(ag_flash_attention(q, k, k, 1, mask = matrix(TRUE, 5, 3), causal = TRUE),
               "either .mask. or .causal.")
})
