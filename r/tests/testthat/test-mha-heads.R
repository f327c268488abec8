# ag_multihead_attention's heads as one core op: output and gradients identical, bit for bit, to
# the per-head loop it replaced (slices, transposed matmul, causal mask, softmax, dropout drawn
# transposed, matmul, concat), in f32 and f64, causal, cross attention and dropout in training.

old_mha_forward <- function(e, q, k = q, v = k, causal_mask = FALSE) {
  Q <- ag_matmul(e$W_q, q)
  K <- ag_matmul(e$W_k, k)
  Vv <- ag_matmul(e$W_v, v)
  dk <- e$d_k
  heads <- NULL
  for (h in seq_len(e$n_heads)) {
    from <- (h - 1L) * dk
    qh <- ag_slice_rows(Q, from, dk)
    kh <- ag_slice_rows(K, from, dk)
    vh <- ag_slice_rows(Vv, from, dk)
    s <- pyggmlr:::.wrap(.Call(pyggmlr:::R_pg_matmul_t, kh$.ptr, qh$.ptr, TRUE, FALSE, e$scale))
    if (isTRUE(causal_mask)) s <- pyggmlr:::.wrap(.Call(pyggmlr:::R_pg_causal_mask, s$.ptr))
    attn <- ag_softmax(s)
    if (isTRUE(e$training) && e$dropout > 0)
      attn <- pyggmlr:::.dropout_mul(attn, e$dropout, transpose = TRUE)
    head <- ag_matmul(vh, attn)
    heads <- if (is.null(heads)) head else ag_concat_rows(heads, head)
  }
  out <- ag_matmul(e$W_o, heads)
  if (!is.null(e$b_o)) out <- ag_add(out, e$b_o)
  out
}

mha_run <- function(fwd, e, xs, causal) {
  set.seed(11)
  with_grad_tape({
    out <- do.call(fwd, c(xs, list(causal_mask = causal)))
    G <- matrix(cos(seq_len(length(out$data)) - 1), nrow(out$data))
    l <- ag_sum(ag_mul(out, G))
  })
  g <- backward(l)
  grad <- function(t) get0(as.character(t$id), envir = g, inherits = FALSE)  # helper's gradof
  res <- c(list(out$data), lapply(c(e$parameters(), xs), grad))
  ag_tape_clear()
  res
}

test_that("the heads' op gives the per-head loop's bits (f32, f64; causal, cross, dropout)", {
  cases <- list(list(8L, 4L, 6L, NULL, TRUE), list(8L, 4L, 6L, NULL, FALSE),
                list(12L, 4L, 5L, 7L, FALSE), list(12L, 4L, 7L, 5L, TRUE),
                list(6L, 1L, 4L, NULL, TRUE))
  old_dt <- ag_dtype("f32")
  on.exit(ag_dtype(old_dt), add = TRUE)
  for (dt in c("f32", "f64")) for (cs in cases) for (mode in c("drop", "plain", "eval")) {
    ag_dtype(dt)
    D <- cs[[1]]
    set.seed(5)
    e <- ag_multihead_attention(D, cs[[2]], dropout = if (mode == "plain") 0 else 0.3)
    if (mode == "eval") e$training <- FALSE
    set.seed(D + cs[[3]])
    xs <- list(ag_param(matrix(rnorm(D * cs[[3]]), D), dtype = dt))
    if (!is.null(cs[[4]])) xs[[2]] <- ag_param(matrix(rnorm(D * cs[[4]]), D), dtype = dt)
    new <- mha_run(e$forward, e, xs, cs[[5]])
    after <- .Random.seed
    old <- mha_run(function(...) old_mha_forward(e, ...), e, xs, cs[[5]])
    expect_identical(.Random.seed, after)  # as many draws
    expect_identical(new, old)
  }
})

test_that("the heads are one tape node", {
  set.seed(1)
  e <- ag_multihead_attention(8, 4, dropout = 0.2)
  with_grad_tape(l <- ag_mean(e$forward(ag_tensor(matrix(rnorm(40), 8)), causal_mask = TRUE)))
  expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 3L + 1L + 2L + 1L)
  ag_tape_clear()
})
