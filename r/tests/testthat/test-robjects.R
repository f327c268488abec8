# Issue 20, "R objects read like R": classed ag_linear, print / summary / str of layers, models
# and tensors, arithmetic through the group generics, fit hints, the memory estimate's bytes.

test_that("ag_linear is a classed list with a one-line print and a short str", {
  set.seed(1)
  l <- ag_linear(4, 16, "relu")
  expect_true(is.list(l))
  expect_s3_class(l, "ag_linear")
  expect_true(is_ag_tensor(l$W) && is.function(l$forward) && is.function(l$params))
  expect_equal(names(l), c("W", "b", "forward", "params", "to_config"))
  expect_equal(capture.output(print(l)), "ag_linear: linear(4, 16, relu) (80 parameters)")
  expect_equal(capture.output(print(ag_linear(3, 2))), "ag_linear: linear(3, 2) (8 parameters)")
  expect_equal(capture.output(str(l)),
               paste0("ag_linear linear(4, 16, relu): List of 5 (W [16x4], b [16x1], forward, ",
                      "params, to_config)"))
  capture.output(expect_invisible(print(l)))
})

golden_model <- function() {
  set.seed(1)
  ag_sequential(ag_linear(4, 8, "relu"), ag_dropout(0.1), ag_batch_norm(8), ag_linear(8, 3))
}

test_that("print(model) names each layer as Python does", {
  m <- golden_model()
  expect_equal(capture.output(print(m)), c(
    "ag_sequential (4 layers, train mode)",
    "  [1] linear(4, 8, relu)",
    "  [2] dropout(0.1)",
    "  [3] batch_norm(8)",
    "  [4] linear(8, 3)"))
})

test_that("summary(model) is a keras-style table (golden)", {
  m <- golden_model()
  s <- summary(m)
  expect_s3_class(s, "summary.ag_sequential")
  expect_equal(s$layers$params, c(40, 0, 16, 27))
  expect_equal(s$layers$output_shape, c("[8 x batch]", "[8 x batch]", "[8 x batch]", "[3 x batch]"))
  expect_equal(capture.output(print(s)), c(
    "ag_sequential (4 layers, train mode)",
    "_______________________________________________________",
    "Layer (type)                      Output shape  Param #",
    "=======================================================",
    "1 linear(4, 8, relu) (ag_linear)  [8 x batch]        40",
    "2 dropout(0.1) (ag_dropout)       [8 x batch]         0",
    "3 batch_norm(8) (ag_batch_norm)   [8 x batch]        16",
    "4 linear(8, 3) (ag_linear)        [3 x batch]        27",
    "=======================================================",
    "Total params: 99",
    "Trainable params: 83",
    "Non-trainable params: 16"))
  # a custom layer's output is unknown, and so is what follows it unless it sets the size
  custom <- list(forward = function(x) x)
  s2 <- summary(ag_sequential(ag_linear(2, 5), custom, ag_dropout(0.5), ag_linear(5, 1)))
  expect_equal(s2$layers$output_shape, c("[5 x batch]", "?", "?", "[1 x batch]"))
  expect_equal(s2$layers$layer[2], "list")
  expect_equal(summary(ag_linear(3, 2))$total, 8)
  expect_equal(summary(ag_embedding(10, 4))$layers$output_shape, "[4 x batch]")
})

test_that("str() is short and never fails on layers, models and tensors", {
  m <- golden_model()
  expect_equal(capture.output(str(m)),
               "ag_sequential sequential, 4 layers: 83 parameters, train mode")
  expect_equal(capture.output(str(ag_dropout(0.2))),
               "ag_dropout dropout(0.2): 0 parameters, train mode")
  expect_equal(capture.output(str(ag_param(matrix(1, 2, 3)))),
               " ag_tensor [2x3] f32, requires_grad = TRUE")
  expect_equal(capture.output(str(list(a = ag_tensor(1:3))))[2],
               " $ a: ag_tensor [3x1] f32, requires_grad = FALSE")
  for (obj in list(ag_layer_norm(4), ag_embedding(5, 2), ag_multihead_attention(4, 2)))
    expect_length(capture.output(str(obj)), 1L)
})

test_that(paste0("print(tensor): ggmlR's format when small, cut to 6 x 6 with dtype and grad ",
                 "state when large"), {
  small <- ag_tensor(matrix(1:6 / 10, 2, 3))
  expect_equal(capture.output(print(small)),
               c("ag_tensor [2x3]", capture.output(print(matrix(1:6 / 10, 2, 3)))))
  big <- ag_param(matrix(seq_len(200), 20, 10))
  out <- capture.output(print(big))
  expect_equal(out[1], "ag_tensor [20x10] (requires_grad)")
  expect_equal(out[2:8], capture.output(print(matrix(seq_len(200), 20, 10)[1:6, 1:6])))
  expect_equal(out[9], "... [6 of 20 rows, 6 of 10 columns shown; f32, requires_grad = TRUE]")
  expect_length(out, 9L)
  long <- capture.output(print(ag_tensor(seq_len(100))))
  expect_equal(long[length(long)],
               "... [6 of 100 rows, 1 of 1 columns shown; f32, requires_grad = FALSE]")
})

# ---- arithmetic -------------------------------------------------------------------------------

same_bits <- function(a, b) expect_identical(a$data, b$data)

test_that("operators record the same ops as the ag_* calls (bit for bit)", {
  set.seed(2)
  A <- ag_param(matrix(rnorm(6), 2, 3))
  B <- ag_param(matrix(rnorm(6), 2, 3))
  v <- matrix(rnorm(3), 3, 1)
  same_bits(A + B, ag_add(A, B))
  same_bits(A - B, ag_sub(A, B))
  same_bits(A * B, ag_mul(A, B))
  same_bits(A / B, ag_div(A, B))
  same_bits(-A, ag_neg(A))
  same_bits(+A, A)
  same_bits(A * 2, ag_scale(A, 2))
  same_bits(2 * A, ag_scale(A, 2))
  same_bits(A / 4, ag_div(A, 4))
  same_bits(1 - A, ag_sub(1, A))
  same_bits(3 / A, ag_div(3, A))
  same_bits(A + 1, ag_add(A, 1))
  same_bits(A^2, ag_pow(A, 2))
  same_bits(A %*% v, ag_matmul(A, v))
  same_bits(t(A), ag_transpose(A))
  same_bits(exp(A), ag_exp(A))
  same_bits(tanh(A), ag_tanh(A))
  same_bits(sum(A), ag_sum(A))
  same_bits(mean(A), ag_mean(A))
  same_bits(abs(A) * 1, ag_add(ag_relu(A), ag_relu(-A)))
  expect_equal(abs(A)$data, abs(A$data), tolerance = 1e-7)
  same_bits(mean(A, dim = 2), ag_mean(A, dim = 2))
  expect_equal(dim(t(A)), c(3L, 2L))
  expect_equal((A > 0), A$data > 0)
  expect_equal(max(A)$data, matrix(max(A$data)), tolerance = 1e-7)
  expect_equal(min(A)$data, matrix(min(A$data)), tolerance = 1e-7)
  expect_equal(log(exp(A), 2)$data, A$data / log(2), tolerance = 1e-6)
  expect_error(2^A, "single-number exponent")
  expect_error(A %% 2, "not defined for tensors")
  expect_error(cumsum(A), "no differentiable op")
})

test_that("base matrix arithmetic is unchanged by the package's %*%", {
  a <- matrix(1:6, 2)
  b <- matrix(c(0.5, -1, 2), 3)
  expect_identical(a %*% b, base::`%*%`(a, b))
  expect_identical(1:3 %*% 1:3, base::`%*%`(1:3, 1:3))
  expect_identical(a + 1, base::`+`(a, 1))
  expect_identical(t(a), base::t.default(a))
})

# central differences of f at the values of p (f64), against backward()
fd_check <- function(f, vals, tol = 1e-6) {
  p <- ag_param(vals, dtype = "f64")
  with_grad_tape(L <- f(p))
  g <- backward(L)[[p]]
  num <- vals
  for (i in seq_along(vals)) {
    h <- 1e-6
    up <- vals
    dn <- vals
    up[i] <- up[i] + h
    dn[i] <- dn[i] - h
    num[i] <- (f(ag_tensor(up, dtype = "f64"))$data[1] - f(ag_tensor(dn,
        dtype = "f64"))$data[1]) / (2 * h)
  }
  expect_equal(g, num, tolerance = tol)  # nolint: object_usage_linter.
}

test_that("gradients flow through the operators (finite differences, f64)", {
  local_f64()
  set.seed(3)
  X <- matrix(runif(6, 0.5, 2), 2, 3)
  C <- ag_tensor(matrix(runif(6, 0.5, 2), 2, 3))
  v <- matrix(rnorm(3), 3, 1)
  fd_check(function(p) sum(p * C + p / C - C / p), X)                 # tensor-tensor
  fd_check(function(p) sum((p - C)^2) + mean(C - p), X)
  fd_check(function(p) sum(2 * p - p / 4 + 3 / p - (1 - p) + p^3), X)  # tensor-scalar
  fd_check(function(p) sum(exp(p) + log(p) + sqrt(p) + tanh(-p) + abs(p - 1)), X)
  fd_check(function(p) sum((p %*% v)^2) + sum(t(p) %*% C), X)         # matmul and transpose
  fd_check(function(p) max(p) - min(p) * 2, X)
  # known values: L = sum((W v - 1)^2) for W = [[1, 3], [2, 4]], v = (0.5, -1)
  W <- ag_param(matrix(c(1, 2, 3, 4), 2))
  with_grad_tape(L <- sum((W %*% matrix(c(0.5, -1)) - 1)^2))
  expect_equal(backward(L)[[W]], matrix(c(-3.5, -4, 7, 8), 2))
})

# ---- ag_fit hints -----------------------------------------------------------------------------

test_that("ag_fit: factor y, 1-based labels and row-major data get Python's hints", {
  set.seed(4)
  m <- ag_sequential(ag_linear(4, 3))
  x <- matrix(rnorm(40), 4, 10)
  y <- rep(1:3, length.out = 10)
  expect_error(ag_fit(m, x, y, nepoch = 1, batch_size = 5, silent = TRUE),
               paste0("ag_fit: y holds class ids 1..3 but the model has 3 outputs; class ids are ",
                      "0-based: pass as.integer(f) - 1L, or the factor itself"),
               fixed = TRUE)
  expect_error(ag_fit(m, t(x), y - 1, nepoch = 1, batch_size = 5, silent = TRUE), paste0(
    "ag_fit: x has 4 samples (columns) but y has 10; x looks row-major (10 rows, one per sample): ",
    "pyggmlr data are [features, samples] with one column per sample, so pass t(x)"), fixed = TRUE)
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 10)), y),
               "out of range.*class ids are 0-based: pass as.integer\\(f\\) - 1L$")  # no factor
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 10)), rep(c(0, 5), 5)),
               "out of range \\[0, 3\\) for logits \\[3x10\\] f32$")  # no hint: not 1..3
  # the hint comes from the C glue (no R handler on the success path): a tensor target, the
  # options' path and the condition's class as before
  hint <- "; class ids are 0-based: pass as.integer(f) - 1L"  # the loss takes no factor
  lg <- ag_tensor(matrix(0, 3, 10))
  e1 <- tryCatch(ag_softmax_cross_entropy_loss(lg, ag_tensor(matrix(y, 1L))), error = identity)
  expect_s3_class(e1, "pyggmlr_value_error")
  expect_true(endsWith(conditionMessage(e1), hint))
  e2 <- tryCatch(ag_softmax_cross_entropy_loss(lg, y, weight = c(1, 2, 3)), error = identity)
  expect_s3_class(e2, "pyggmlr_value_error")
  expect_true(endsWith(conditionMessage(e2), hint))
  e3 <- tryCatch(ag_softmax_cross_entropy_loss(lg, y, label_smoothing = 2), error = identity)
  expect_match(conditionMessage(e3), "label_smoothing.* - 1L$")  # any failure, as before
  f <- factor(rep(c("a", "b", "c"), length.out = 10))
  set.seed(5)
  h1 <- ag_fit(m <- ag_sequential(ag_linear(4, 3)), x, f, nepoch = 2, batch_size = 5, silent = TRUE,
               shuffle = FALSE)
  set.seed(5)
  h2 <- ag_fit(ag_sequential(ag_linear(4, 3)), x, as.integer(f) - 1L, nepoch = 2, batch_size = 5,
               silent = TRUE, shuffle = FALSE)
  expect_identical(h1$loss, h2$loss)
})

# ---- memory estimate --------------------------------------------------------------------------

test_that("ag_estimate_training_memory counts the bytes the core stores (f32 4, f64 8)", {
  e32 <- ag_estimate_training_memory(list(c(100, 100)), quiet = TRUE)
  expect_equal(c(e32$weights, e32$gradients, e32$optimizer, e32$activations, e32$total,
                 e32$bytes_per_scalar),
               c(40000, 40000, 80000, 12800, 172800, 4))
  expect_match(e32$note, "f32.*single precision")
  e64 <- ag_estimate_training_memory(list(c(100, 100)), quiet = TRUE, dtype = "f64")
  # ggmlR's numbers
  expect_equal(c(e64$weights, e64$total, e64$bytes_per_scalar), c(80000, 345600, 8))
  expect_match(e64$note, "double precision")
  expect_error(ag_estimate_training_memory(list(c(4, 4)), dtype = "f16"), "not supported")
  expect_error(ag_estimate_training_memory(list(c(4, 4)), batch_size = -1),
               "ag_estimate_training_memory(): batch_size must be an integer >= 0, got -1",
               fixed = TRUE)
  adam <- optimizer_adam(list(a = ag_param(matrix(0, 2, 2))), accumulate_steps = 4L)
  expect_equal(ag_estimate_training_memory(c(10, 10), optimizer = adam, quiet = TRUE)$optimizer,
               3 * 400)
})

test_that("ag_estimate_training_memory(model =) measures one step and changes nothing", {
  set.seed(6)
  m <- ag_sequential(ag_linear(20, 64, "relu"), ag_linear(64, 64, "relu"), ag_linear(64, 5))
  W <- m$layers[[1]]$W
  W$grad <- matrix(7, 64, 20)
  n_params <- 20 * 64 + 64 + 64 * 64 + 64 + 64 * 5 + 5
  e <- ag_estimate_training_memory(model = m, input_shape = c(20, 32), quiet = TRUE)
  expect_equal(e$params, n_params)
  expect_equal(c(e$weights, e$gradients, e$optimizer), c(4, 4, 8) * n_params)
  expect_true(all(W$grad == 7))
  expect_match(e$note, "measured from one forward and backward pass on a batch of 32")
  expect_equal(ag_estimate_training_memory(model = m, input_shape = 20, batch_size = 32,
                                           quiet = TRUE)$total, e$total)
  # the peak of a real training step (weights and batch included), as Python's test measures it
  W$grad <- NULL
  x <- ag_tensor(matrix(0, 20, 32))
  y <- ag_tensor(matrix(0, 5, 32))
  opt <- optimizer_adam(m$parameters())
  invisible(gc())
  base <- ag_memory_stats()$total$current - e$weights - 4 * (20 * 32 + 5 * 32)
  ag_memory_reset_peak()
  with_grad_tape(L <- ag_mse_loss(m$forward(x), y))
  opt$step(backward(L))
  expect_lt(abs(e$total / (ag_memory_peak() - base) - 1), 0.02)
  # the numbers Python's ag_estimate_training_memory gives for this model (cases_robj.py)
  pm <- ag_sequential(ag_linear(20, 64, "relu"), ag_dropout(0.2), ag_batch_norm(64),
                      ag_linear(64, 5))
  expect_equal(unlist(ag_estimate_training_memory(model = pm, input_shape = list(20, 32),
                                                  quiet = TRUE)[1:6]),
               c(params = 1797, weights = 7188, gradients = 7188, optimizer = 14376,
                 activations = 70920, total = 99672))
  bn <- ag_sequential(ag_linear(3, 4), ag_batch_norm(4))
  before <- bn$layers[[2]]$running_mean
  ag_estimate_training_memory(model = bn, x = matrix(rnorm(18), 3, 6), quiet = TRUE)
  expect_identical(bn$layers[[2]]$running_mean, before)
  expect_error(ag_estimate_training_memory(model = m), "give x = \\(a batch\\) or input_shape =")
  expect_error(ag_estimate_training_memory(model = m, input_shape = c(4, 0)), "input_shape must be")
})
