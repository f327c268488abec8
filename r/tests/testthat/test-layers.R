test_that("ag_linear draws runif(out*in) as ggmlR (set.seed gives ggmlR's weights)", {
  set.seed(7)
  l <- ag_linear(4, 8, "relu")
  set.seed(7)
  a <- sqrt(6 / 12)
  expect_equal(l$W$data, matrix(runif(32, -a, a), 8, 4), tolerance = 1e-7)
  expect_equal(l$b$data, matrix(0, 8, 1))
  expect_equal(names(l$params()), c("W", "b"))
  out <- l$forward(ag_tensor(matrix(rnorm(64), 4, 16)))
  expect_equal(dim(out$data), c(8L, 16L))
  expect_true(all(out$data >= 0))
})

test_that("ag_sequential: shapes, parameter names, single ag_linear (ggmlR bug 3 fixed), print", {
  m <- ag_sequential(ag_linear(4, 8, "relu"), ag_linear(8, 3))
  expect_equal(dim(m$forward(ag_tensor(matrix(1, 4, 16)))$data), c(3L, 16L))
  p <- m$parameters()
  expect_equal(names(p), c("layer1_W", "layer1_b", "layer2_W", "layer2_b"))
  expect_true(all(vapply(p, function(t) t$requires_grad, logical(1))))
  one <- ag_sequential(ag_linear(2, 3))
  expect_equal(dim(one$forward(ag_tensor(matrix(1, 2, 5)))$data), c(3L, 5L))
  lst <- ag_sequential(list(ag_linear(2, 3), ag_dropout(0.1)))
  expect_equal(length(lst$layers), 2L)
  out <- capture.output(print(m))
  expect_equal(out,
               c("ag_sequential (2 layers, train mode)", "  [1] linear(4, 8, relu)",
                 "  [2] linear(8, 3)"))  # Python's names (ggmlR printed "list")
})

test_that("train/eval propagate (recursively) and dropout behaves", {
  d <- ag_dropout(0.5)
  m <- ag_sequential(ag_linear(3, 3), ag_sequential(d))
  ag_eval(m)
  expect_false(d$training)
  x <- ag_tensor(matrix(1, 3, 50))
  expect_identical(d$forward(x), x)
  ag_train(m)
  expect_true(d$training)
  set.seed(3)
  v <- d$forward(x)$data
  expect_true(all(v %in% c(0, 2)))
  set.seed(3)
  expect_equal(v, matrix((runif(150) > 0.5) / 0.5, 3, 50))
  expect_identical(ag_dropout(0)$forward(x), x)
  expect_error(ag_dropout(1))
  local_f64()
  p <- ag_param(matrix(c(1, 2, 3, 4), 2, 2))
  expect_true(ag_gradcheck(function(i) ag_sum(ag_mul(ag_dropout(0)$forward(i$p), i$p)), list(p = p),
                           quiet = TRUE))
})

test_that("batch norm: golden forward, running stats, exact gradient, eval", {
  local_f64()
  bn <- ag_batch_norm(2)
  x <- ag_param(matrix(c(1, 2, 3, 5, 6, 11), 2, 3))
  with_grad_tape(l <- ag_sum(ag_mul(out <- bn$forward(x), matrix(1:6, 2, 3))))
  expect_equal(out$data, byrow(c(-1.135548603, -0.1622212290, 1.297769832,
                                  -1.069044586, -0.2672611465, 1.336305732), 2), tolerance = 1e-9)
  expect_equal(bn$running_mean, matrix(c(0.3333333333, 0.6), 2, 1), tolerance = 1e-9)
  expect_equal(bn$running_var, matrix(c(1.322222222, 2.3), 2, 1), tolerance = 1e-9)
  g <- backward(l)
  expect_equal(gradof(g, bn$gamma), matrix(c(4.866636871, 4.810700636), 2, 1), tolerance = 1e-9)
  expect_equal(gradof(g, bn$beta), matrix(c(9, 12), 2, 1), tolerance = 1e-12)
  # exact (not ggmlR's simplified) input gradient: finite differences
  bn2 <- ag_batch_norm(2, momentum = 0)
  expect_true(ag_gradcheck(function(i) ag_sum(ag_mul(bn2$forward(i$x), matrix(1:6, 2, 3))),
                           list(x = ag_param(matrix(c(1, 2, 3, 5, 6, 11), 2, 3))), eps = 1e-6,
                           atol = 1e-6, quiet = TRUE))
  ag_eval(bn)
  e1 <- bn$forward(ag_tensor(c(1, 2)))$data
  expect_equal(e1, matrix(c(0.5797688433, 0.9231306560), 2, 1), tolerance = 1e-9)
  expect_equal(bn$forward(ag_tensor(c(1, 2)))$data, e1)
  expect_equal(bn$running_mean, matrix(c(0.3333333333, 0.6), 2, 1), tolerance = 1e-9)
  set.seed(1)
  xb <- ag_tensor(matrix(rnorm(40, 3, 2), 4, 10))
  ag_train(bn4 <- ag_batch_norm(4))
  o <- bn4$forward(xb)$data
  expect_lt(max(abs(rowMeans(o))), 1e-5)
  expect_equal(apply(o, 1, function(r) mean((r - mean(r))^2)), rep(1, 4), tolerance = 0.05)
})

test_that("embedding: golden lookup and scatter-add gradient", {
  local_f64()
  emb <- ag_embedding(4, 2)
  emb$weight$data <- matrix(c(.1, .2, .3, .4, .5, .6, .7, .8), 2, 4)
  with_grad_tape(l <- ag_sum(ag_mul(out <- emb$forward(c(2, 0, 2)), matrix(1:6, 2, 3))))
  expect_equal(out$data, matrix(c(.5, .6, .1, .2, .5, .6), 2, 3))
  expect_equal(gradof(backward(l), emb$weight), byrow(c(3, 0, 6, 0, 4, 0, 8, 0), 2))
  expect_equal(dim(emb$forward(matrix(c(0L, 1L, 2L, 3L), 2, 2))$data), c(2L, 4L))
  expect_error(emb$forward(c(0, 4)), "")
})

test_that("layer norm normalises columns, gradcheck", {
  local_f64()
  ln <- ag_layer_norm(3)
  o <- ln$forward(ag_tensor(matrix(c(1, 2, 4, 0, 5, 1), 3, 2)))$data
  expect_equal(colMeans(o), c(0, 0), tolerance = 1e-10)
  expect_true(ag_gradcheck(function(i) ag_sum(ag_mul(ln$forward(i$x), matrix(1:6, 3, 2))),
                           list(x = ag_param(matrix(c(1, 2, 4, 0, 5, 1), 3, 2))), eps = 1e-6,
                           atol = 1e-6, quiet = TRUE))
})

test_that("multi-head attention: the core checks its inputs (Python's texts and classes)", {
  local_f64()
  m <- ag_multihead_attention(4, 2)
  q <- matrix(0, 4, 5)
  pre <- "ag_multihead_attention: "
  tail <- "; inputs are [d_model, seq] (one column per token)"
  expect_error(m$forward(matrix(0, 3, 5)), paste0(pre, "q is [3x5] f64 but d_model = 4", tail),
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(m$forward(q, matrix(0, 3, 5)), paste0(pre, "k is [3x5] f64 but d_model = 4", tail),
               fixed = TRUE, class = "pyggmlr_shape_error")
  expect_error(m$forward(q, q, matrix(0, 2, 5)),
               paste0(pre, "v is [2x5] f64 but d_model = 4", tail), fixed = TRUE,
               class = "pyggmlr_shape_error")
  expect_error(m$forward(q, q, matrix(0, 4, 6)),
               paste0(pre, "k is [4x5] f64 and v is [4x6] f64; they need the same number of ",
                      "columns (tokens)"), fixed = TRUE, class = "pyggmlr_shape_error")
  expect_equal(dim(m$forward(q, matrix(0, 4, 6))$data), c(4L, 5L))  # v defaults to k
})

test_that("multi-head attention: golden values, fields, params, causal", {
  local_f64()
  mk <- function(s) matrix(((1:16) * s) %% 7 / 7 - 0.5, 4, 4)
  mha <- ag_multihead_attention(4, 2)
  expect_equal(c(mha$d_model, mha$n_heads, mha$d_k), c(4L, 2L, 2L))
  expect_equal(names(mha$parameters()), c("W_q", "W_k", "W_v", "W_o", "b_o"))
  expect_equal(names(ag_multihead_attention(4, 2, bias = FALSE)$parameters()),
               c("W_q", "W_k", "W_v", "W_o"))
  expect_error(ag_multihead_attention(65, 8))
  mha$W_q$data <- mk(1)
  mha$W_k$data <- mk(2)
  mha$W_v$data <- mk(3)
  mha$W_o$data <- mk(5)
  mha$b_o$data <- c(0.1, 0, -0.1, 0.2)
  x <- matrix(c(0.5, -1, 0.25, 2, 1, 0, -0.5, 0.3, -0.2, 0.4, 1, -1), 4, 3)
  out <- mha$forward(ag_tensor(x))$data
  expect_equal(out, byrow(c(0.09933157052, 0.09274531922, 0.0780444429,
                             0.01006813791, -0.04993718666, -0.1382810557,
                             0.09726010962, -0.02213049155, -0.1066382735,
                             0.19396328683, 0.21408657216, 0.2362071922), 4), tolerance = 1e-9)
  co <- mha$forward(ag_tensor(x), causal_mask = TRUE)$data
  expect_equal(co[, 1], c(-0.04285714286, -0.34693877551, 0.45612244898, 0.15918367347),
               tolerance = 1e-9)
  expect_equal(co[, 2], c(-0.02384720269, -0.25702328518, 0.14538786889, 0.14274083856),
               tolerance = 1e-9)
  expect_equal(co[, 3], out[, 3], tolerance = 1e-12)
  expect_equal(dim(mha$forward(ag_tensor(x), ag_tensor(matrix(1, 4, 9)))$data), c(4L, 3L))
  p <- ag_param(x)
  expect_true(ag_gradcheck(function(i) ag_sum(ag_mul(mha$forward(i$p, causal_mask = TRUE),
                                                     matrix(1:12, 4, 3))),
                           list(p = p), eps = 1e-6, atol = 1e-6, quiet = TRUE))
  with_grad_tape(l <- ag_mse_loss(mha$forward(ag_tensor(x)), matrix(0, 4, 3)))
  g <- backward(l)
  for (nm in c("W_q", "W_k", "W_v", "W_o")) expect_gt(max(abs(gradof(g, mha[[nm]]))), 0)
})

test_that("layers train: 10 Adam steps lower the loss", {
  set.seed(42)
  m <- ag_sequential(ag_linear(4, 16, "relu"), ag_batch_norm(16), ag_dropout(0.1), ag_linear(16, 3))
  x <- matrix(rnorm(4 * 32), 4, 32)
  y <- sample(0:2, 32, TRUE)
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  loss <- function() { with_grad_tape(l <- ag_softmax_cross_entropy_loss(m$forward(x), y)); l }
  first <- loss()$data[1, 1]
  for (i in 1:10) { l <- loss(); opt$step(backward(l)); opt$zero_grad() }
  ag_eval(m)
  expect_lt(loss()$data[1, 1], first)
})

test_that("ag_linear fuses matmul, bias and relu/sigmoid/tanh into one node with the same numbers",
          {
  local_f64()
  set.seed(4)
  x <- ag_tensor(matrix(rnorm(12), 4, 3))
  for (act in list(NULL, "relu", "sigmoid", "tanh")) {
    l <- ag_linear(4, 5, activation = act)
    with_grad_tape(y <- l$forward(x))
    expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 1L)
    expect_equal(ag_tape_memory(quiet = TRUE)$by_op$op, "linear")
    ref <- ag_add(ag_matmul(l$W, x), l$b)
    ref <- if (is.null(act)) ref else switch(act, relu = ag_relu(ref), sigmoid = ag_sigmoid(ref),
                                             tanh = ag_tanh(ref))
    expect_identical(y$data, ref$data)
  }
  # softmax is not fused: matmul -> add -> softmax
  l <- ag_linear(4, 3, activation = "softmax")
  with_grad_tape(y <- l$forward(x))
  expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 3L)
  expect_equal(colSums(y$data), rep(1, 3))
})
