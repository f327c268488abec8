# ag_flash_attention (ggmlR 0.8.6 spec §3): goldens, a base-R f64 reference for values and
# gradients (mask, causal, seq_q != seq_kv, several query blocks) at 1e-12, finite differences,
# f32, masks in every form, ggmlR's messages in its order, one node, draws nothing, ag_compile.

# base-R forward and backward of sum(out * G) from the spec's formulas
fa_ref <- function(q, k, v, H, scale = NULL, mask = NULL, causal = FALSE, G = NULL) {
  D <- nrow(q)
  dh <- D %/% H
  sq <- ncol(q)
  skv <- ncol(k)
  if (is.null(scale)) scale <- 1 / sqrt(dh)
  M <- matrix(0, skv, sq)
  if (causal) M[row(M) > col(M)] <- -Inf
  if (!is.null(mask)) M <- if (is.logical(mask)) ifelse(mask, 0, -Inf) else mask
  out <- dq <- matrix(0, D, sq)
  dk <- dv <- matrix(0, D, skv)
  for (h in seq_len(H)) {
    r <- ((h - 1) * dh + 1):(h * dh)
    S <- scale * crossprod(q[r, , drop = FALSE], k[r, , drop = FALSE]) + t(M)
    mx <- apply(S, 1, max)
    P <- exp(S - ifelse(is.finite(mx), mx, 0))
    P <- P / ifelse(is.finite(mx), rowSums(P), 1)
    P[!is.finite(mx), ] <- 0
    out[r, ] <- v[r, , drop = FALSE] %*% t(P)
    if (!is.null(G)) {
      Gh <- G[r, , drop = FALSE]
      dv[r, ] <- Gh %*% P
      dP <- t(Gh) %*% v[r, , drop = FALSE]
      dS <- P * (dP - rowSums(dP * P))
      dq[r, ] <- scale * k[r, , drop = FALSE] %*% t(dS)
      dk[r, ] <- scale * q[r, , drop = FALSE] %*% dS
    }
  }
  list(out = out, dq = dq, dk = dk, dv = dv)
}

fa_run <- function(q, k, v, H, G, ...) {
  Q <- ag_param(q)
  K <- ag_param(k)
  V <- ag_param(v)
  with_grad_tape({ out <- ag_flash_attention(Q, K, V, H, ...); loss <- ag_sum(ag_mul(out, G)) })
  g <- backward(loss)
  # nolint start: object_usage_linter.
  list(out = out$data, dq = gradof(g, Q), dk = gradof(g, K), dv = gradof(g, V))
  # nolint end
}

test_that("ag_flash_attention: spec goldens (plain, causal, n_heads 2)", {
  local_f64()
  q <- matrix(c(1, 0, 0, 1, 1, 1), 2, 3)
  v <- matrix(1:6, 2, 3)
  expect_equal(ag_flash_attention(q, q, v, 1)$data,
               byrow(c(3, 3.4066725561, 3.5104695305, 4, 4.4066725561, 4.5104695305), 2),
               tolerance = 1e-10)
  expect_equal(ag_flash_attention(q, q, v, 1, causal = TRUE)$data,
               byrow(c(1, 2.3395230987, 3.5104695305, 2, 3.3395230987, 4.5104695305), 2),
               tolerance = 1e-10)
  expect_equal(ag_flash_attention(q, q, v, 2)$data,
               byrow(c(3, 3, 3, 4, 4.5339127895, 4.5339127895), 2), tolerance = 1e-10)
  expect_equal(dim(ag_flash_attention(q, q, v, 1.9)$data), c(2L, 3L))  # as.integer
})

test_that("ag_flash_attention: base-R reference at 1e-12 (values and gradients)", {
  local_f64()
  set.seed(1)
  cases <- list(c(8, 4, 4, 1, 0), c(8, 4, 4, 2, 0), c(16, 6, 6, 4, 1), c(12, 3, 5, 3, 2),
                c(8, 5, 3, 2, 1),
                c(16, 150, 70, 4, 2), c(8, 130, 130, 2, 1))
  for (cs in cases) {
    D <- cs[1]
    sq <- cs[2]
    skv <- cs[3]
    H <- cs[4]
    q <- matrix(rnorm(D * sq), D)
    k <- matrix(rnorm(D * skv), D)
    v <- matrix(rnorm(D * skv), D)
    G <- matrix(rnorm(D * sq), D)
    mask <- NULL
    if (cs[5] == 2) { mask <- matrix(runif(skv * sq) < 0.7, skv); mask[1, ] <- TRUE }
    got <- fa_run(q, k, v, H, G, mask = mask, causal = cs[5] == 1)
    ref <- fa_ref(q, k, v, H, mask = mask, causal = cs[5] == 1, G = G)
    for (nm in names(ref)) expect_equal(got[[nm]], ref[[nm]], tolerance = 1e-12,
                                        info = paste(cs, collapse = " "))
  }
  got <- fa_run(q[1:6, 1:7], k[1:6, 1:9], v[1:6, 1:9], 3, G[1:6, 1:7], scale = 0.37)
  ref <- fa_ref(q[1:6, 1:7], k[1:6, 1:9], v[1:6, 1:9], 3, scale = 0.37, G = G[1:6, 1:7])
  for (nm in names(ref)) expect_equal(got[[nm]], ref[[nm]], tolerance = 1e-12)
})

test_that("ag_flash_attention: finite differences of q, k, v (plain, causal, mask)", {
  local_f64()
  set.seed(3)
  D <- 8
  sq <- 4
  skv <- 5
  H <- 2
  q <- matrix(rnorm(D * sq), D)
  k <- matrix(rnorm(D * skv), D)
  v <- matrix(rnorm(D * skv), D)
  G <- matrix(rnorm(D * sq), D)
  m <- matrix(c(TRUE, TRUE, FALSE, TRUE, TRUE, FALSE, TRUE, TRUE, FALSE, TRUE, TRUE, TRUE, TRUE,
                TRUE,
                TRUE, TRUE, TRUE, FALSE, TRUE, TRUE), skv, sq)
  for (kind in c("plain", "causal", "mask")) {
    mk <- if (kind == "mask") m else NULL
    got <- fa_run(q, k, v, H, G, mask = mk, causal = kind == "causal")
    f <- function(a, b,
                  c) sum(ag_flash_attention(a, b, c, H, mask = mk,
                                            causal = kind == "causal")$data * G)
    args <- list(q, k, v)
    for (i in 1:3) {
      num <- args[[i]] * 0
      for (e in seq_along(num)) {
        hi <- args
        lo <- args
        hi[[i]][e] <- hi[[i]][e] + 1e-6
        lo[[i]][e] <- lo[[i]][e] - 1e-6
        num[e] <- (do.call(f, hi) - do.call(f, lo)) / 2e-6
      }
      expect_equal(got[[i + 1]], num, tolerance = 1e-6, info = kind)
    }
  }
})

test_that("ag_flash_attention: f32 within 1e-5 of the f64 reference", {
  prev <- ag_dtype("f32")
  on.exit(ag_dtype(prev))
  set.seed(5)
  q <- matrix(rnorm(16 * 70), 16)
  k <- matrix(rnorm(16 * 66), 16)
  v <- matrix(rnorm(16 * 66), 16)
  G <- matrix(rnorm(16 * 70), 16)
  got <- fa_run(q, k, v, 4, G, causal = TRUE)
  ref <- fa_ref(q, k, v, 4, causal = TRUE, G = G)
  expect_identical(ag_dtype(), "f32")
  for (nm in names(ref)) expect_lt(max(abs(got[[nm]] - ref[[nm]])), 5e-5)
})

test_that("ag_flash_attention: logical, numeric and tensor masks; a blocked query gives 0", {
  local_f64()
  set.seed(11)
  q <- matrix(rnorm(12), 4)
  k <- matrix(rnorm(20), 4)
  v <- matrix(rnorm(20), 4)
  lm <- matrix(c(TRUE, FALSE, TRUE, TRUE, FALSE, TRUE, TRUE, FALSE, TRUE, FALSE, FALSE, TRUE, TRUE,
                 TRUE, TRUE), 5, 3)
  nm <- ifelse(lm, 0, -Inf)
  a <- ag_flash_attention(q, k, v, 2, mask = lm)$data
  expect_identical(ag_flash_attention(q, k, v, 2, mask = nm)$data, a)
  expect_identical(ag_flash_attention(q, k, v, 2, mask = ag_tensor(nm))$data, a)
  expect_identical(ag_flash_attention(q, k, v, 2, mask = ag_tensor(nm, dtype = "f32"))$data, a)
  expect_equal(a, fa_ref(q, k, v, 2, mask = lm)$out, tolerance = 1e-12)
  expect_false(ag_flash_attention(q, k, v, 2, mask = ag_param(nm))$requires_grad)
  bl <- lm
  bl[, 2] <- FALSE
  G <- matrix(rnorm(12), 4)
  got <- fa_run(q, k, v, 2, G, mask = bl)
  expect_true(all(got$out[, 2] == 0) && all(got$dq[, 2] == 0))
  ref <- fa_ref(q, k, v, 2, mask = bl, G = G)
  for (nm2 in names(ref)) expect_equal(got[[nm2]], ref[[nm2]], tolerance = 1e-12)
})

test_that("ag_flash_attention: ggmlR's messages in its order", {
  local_f64()
  z <- function(r, c) matrix(0, r, c)
  expect_error(ag_flash_attention(z(8, 3), z(6, 3), z(8, 6), 3, mask = 1:3, causal = TRUE),
               "ggmlR: ag_flash_attention() needs n_heads to divide d_model (8 %% 3 != 0).",
               fixed = TRUE)
  expect_error(ag_flash_attention(z(8, 3), z(6, 3), z(8, 4), 2),
               "ggmlR: ag_flash_attention() needs q, k and v to share d_model (got 8, 6, 8).",
               fixed = TRUE)
  expect_error(ag_flash_attention(z(8, 3), z(8, 4), z(8, 6), 2, mask = 1:3, causal = TRUE),
               paste0("ggmlR: ag_flash_attention() needs k and v to share a sequence length ",
                      "(got 4 and 6)."),
               fixed = TRUE)
  expect_error(ag_flash_attention(z(8, 3), z(8, 5), z(8, 5), 2, mask = 1:3, causal = TRUE),
               "ggmlR: ag_flash_attention() takes either `mask` or `causal`, not both.",
               fixed = TRUE)
  expect_error(ag_flash_attention(z(8, 3), z(8, 5), z(8, 5), 2, mask = rep(0, 15)),
               "ggmlR: ag_flash_attention() needs `mask` to be a matrix.", fixed = TRUE)
  msg <- paste0("ggmlR: ag_flash_attention() needs `mask` to be [seq_kv, seq_q] = [5, 3], got ",
                "[3, 5]. Note the orientation: keys index the ROWS, queries the columns.")
  expect_error(ag_flash_attention(z(8, 3), z(8, 5), z(8, 5), 2, mask = z(3, 5)), msg, fixed = TRUE)
  expect_error(ag_flash_attention(z(8, 3), z(8, 5), z(8, 5), 2, mask = ag_tensor(z(3, 5))), msg,
               fixed = TRUE)
})

test_that("ag_flash_attention: one tape node, no label, no draws, same bits twice", {
  local_f64()
  set.seed(2)
  X <- ag_param(matrix(rnorm(32), 8))
  s0 <- .Random.seed
  with_grad_tape({
    out <- ag_flash_attention(X, X, X, 2)
    rep <- ag_tape_memory(quiet = TRUE)
  })
  expect_identical(.Random.seed, s0)
  expect_identical(rep$nodes, 1L)
  expect_identical(as.character(rep$by_op$op), "<closure only>")
  q <- matrix(rnorm(32 * 100), 32)
  k <- matrix(rnorm(32 * 90), 32)
  G <- matrix(rnorm(32 * 100), 32)
  expect_identical(fa_run(q, k, k, 4, G, causal = TRUE), fa_run(q, k, k, 4, G, causal = TRUE))
})

test_that("ag_flash_attention: ag_compile replay equals the eager step", {
  local_f64()
  set.seed(8)
  Wq <- ag_param(matrix(rnorm(64) * 0.3, 8))
  step <- function(x) { y <- ag_flash_attention(ag_matmul(Wq, x), x, x, 2,
                                                causal = TRUE)
                                                ag_sum(ag_mul(y, y)) }
  xs <- lapply(1:3, function(i) matrix(rnorm(48), 8))
  cs <- ag_compile(step, ag_tensor(xs[[1]]), build = "grad")
  for (x in xs) {
    r <- cs(x)
    with_grad_tape(el <- step(ag_tensor(x)))
    g <- backward(el)
    expect_identical(r$loss, el$data[1, 1])
    expect_identical(r$grads[[1]], gradof(g, Wq))
  }
})

test_that("ag_flash_attention: bad input raises R errors, never crashes", {
  q <- matrix(0, 8, 3)
  k <- matrix(0, 8, 5)
  expect_error(ag_flash_attention(q, k, k, 2, mask = data.frame(a = 1:5, b = 1:5, c = 1:5)),
               "to be a matrix")
  expect_error(ag_flash_attention(q, k, k, 2, mask = array(0, c(5, 3, 1))), "to be a matrix")
  expect_error(ag_flash_attention(q, k, k, 2, mask = matrix("a", 5, 3)), "numeric")
  expect_error(ag_flash_attention(q, k, k, NA), "(8 %% 0 != 0)", fixed = TRUE)
  expect_error(ag_flash_attention(q, k, k, 2, scale = "a"), "scale must be a number")
  expect_error(ag_flash_attention(NULL, k, k, 2), "numeric")
  expect_equal(dim(ag_flash_attention(matrix(0, 8, 0), k, k, 2)$data), c(8L, 0L))
})
