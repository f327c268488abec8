test_that("ag_sum / ag_mean values and shapes (dim NULL / 1 / 2, keepdim accepted)", {
  local_f64()
  m <- matrix(1:6, 2, 3)
  expect_equal(ag_sum(ag_tensor(m))$data, matrix(21))
  expect_equal(ag_sum(ag_tensor(m), dim = 1)$data, matrix(c(9, 12), 2, 1))
  expect_equal(ag_sum(ag_tensor(m), dim = 2)$data, matrix(c(3, 7, 11), 1, 3))
  expect_equal(ag_sum(ag_tensor(m), dim = 1, keepdim = TRUE)$data, matrix(c(9, 12), 2, 1))
  expect_equal(ag_mean(ag_tensor(1:4))$data, matrix(2.5))
  expect_equal(ag_mean(ag_tensor(m), 1)$data, matrix(c(3, 4), 2, 1), tolerance = 1e-12)
  expect_equal(ag_mean(ag_tensor(m), 2)$data, matrix(c(1.5, 3.5, 5.5), 1, 3), tolerance = 1e-12)
  x <- ag_param(m)
  with_grad_tape(l <- ag_add(ag_sum(ag_mean(x, 1)), ag_sum(ag_mean(x, 2))))
  g <- backward(l)
  expect_equal(gradof(g, x), matrix(5 / 6, 2, 3), tolerance = 1e-10)
})

test_that("forward values of elementwise ops", {
  local_f64()
  expect_equal(ag_clamp(ag_tensor(c(-2, 0, 3)), -1, 2)$data, matrix(c(-1, 0, 2), 3, 1))
  expect_equal(ag_pow(ag_tensor(c(2, 3, 4)), 2)$data, matrix(c(4, 9, 16), 3, 1))
  expect_equal(ag_log(ag_tensor(c(1, exp(1))))$data, matrix(c(0, 1), 2, 1), tolerance = 1e-12)
  expect_equal(ag_exp(ag_tensor(c(0, 1)))$data, matrix(c(1, exp(1)), 2, 1), tolerance = 1e-12)
  expect_equal(ag_sigmoid(ag_tensor(0))$data, matrix(0.5))
  expect_equal(ag_tanh(ag_tensor(0.3))$data, matrix(tanh(0.3)), tolerance = 1e-12)
  expect_equal(ag_scale(ag_tensor(c(2, 4)), 0.5)$data, matrix(c(1, 2), 2, 1))
  expect_equal(ag_reshape(ag_tensor(matrix(1:6, 2, 3)), 3, 2)$data, matrix(as.double(1:6), 3, 2))
  expect_equal(ag_reshape(ag_tensor(matrix(1:6, 2, 3)), -1, 1)$data, matrix(as.double(1:6), 6, 1))
  expect_equal(ag_transpose(ag_tensor(matrix(1:6, 2, 3)))$data, t(matrix(as.double(1:6), 2, 3)))
  expect_equal(ag_sub(ag_tensor(matrix(1:6, 3, 2)), matrix(c(1, 1, 1), 3, 1))$data,
               matrix(c(0, 1, 2, 3, 4, 5), 3, 2))
  expect_equal(ag_sub(ag_tensor(matrix(c(1, 2, 3, 5, 6, 7), 3, 2)), matrix(c(1, 3), 1, 2))$data,
               matrix(c(0, 1, 2, 2, 3, 4), 3, 2))
  expect_equal(ag_mul(ag_tensor(matrix(1:6, 3, 2)), matrix(c(2, 3), 1, 2))$data,
               matrix(c(2, 4, 6, 12, 15, 18), 3, 2))
  expect_equal(ag_mul(ag_tensor(matrix(1:6, 3, 2)), matrix(c(10, 20, 30), 3, 1))$data,
               matrix(c(10, 40, 90, 40, 100, 180), 3, 2))
  expect_equal(ag_div(ag_tensor(c(2, 4)), c(2, 8))$data, matrix(c(1, 0.5), 2, 1))
  expect_equal(ag_gelu(ag_tensor(1))$data, matrix(0.5 * (1 + 2 * pnorm(1 / sqrt(2) * sqrt(2)) - 1)),
               tolerance = 1e-10)
  s <- ag_softmax(ag_tensor(matrix(c(1, 2, 3, -1, 0, 5), 3, 2)))$data
  expect_equal(colSums(s), c(1, 1), tolerance = 1e-12)
  expect_true(all(s > 0))
  # relu gradient: 0 at negatives
  x <- ag_param(c(-1, 2, -3, 4))
  with_grad_tape(l <- ag_sum(ag_relu(x)))
  expect_equal(gradof(backward(l), x), matrix(c(0, 1, 0, 1), 4, 1))
})

test_that("two-sided broadcasting (ggmlR bug 4 fixed): 1x1 B and [m,1] A", {
  local_f64()
  A <- ag_param(matrix(1:6, 2, 3))
  B <- ag_param(matrix(10))
  with_grad_tape(l <- ag_sum(ag_add(A, B)))
  expect_equal(l$data[1, 1], 21 + 60)
  g <- backward(l)
  expect_equal(gradof(g, B), matrix(6))
  a <- ag_param(matrix(c(1, 2), 2, 1))
  with_grad_tape(l2 <- ag_sum(ag_add(a, ag_tensor(matrix(1, 2, 3)))))
  expect_equal(gradof(backward(l2), a), matrix(3, 2, 1))
})

test_that("losses: mse, cross-entropy, softmax-CE values and target forms", {
  local_f64()
  p <- ag_tensor(matrix(c(1, 2, 3, 4), 2, 2))
  expect_equal(ag_mse_loss(p, matrix(0, 2, 2))$data[1, 1], 30 / 4)
  pr <- matrix(c(0.7, 0.3, 0.2, 0.8), 2, 2)
  y <- matrix(c(1, 0, 0, 1), 2, 2)
  expect_equal(ag_cross_entropy_loss(ag_tensor(pr), y)$data[1, 1], -(log(0.7) + log(0.8)) / 2,
               tolerance = 1e-12)
  logits <- ag_param(matrix(c(1, 2, 0.5, -1, 0, 3, 2, 2, 2, 0, 1, 0), 3, 4))
  ids <- c(1L, 2L, 0L, 1L)
  oh <- matrix(0, 3, 4)
  oh[cbind(ids + 1, 1:4)] <- 1
  l1 <- ag_softmax_cross_entropy_loss(logits, ids)$data
  expect_equal(ag_softmax_cross_entropy_loss(logits, oh)$data, l1, tolerance = 1e-12)
  expect_equal(ag_softmax_cross_entropy_loss(logits, c(1, 2, 0, 1))$data, l1, tolerance = 1e-12)
  expect_equal(ag_softmax_cross_entropy_loss(logits, matrix(ids, 1, 4))$data, l1, tolerance = 1e-12)
  # an integer one-hot matrix is one-hot, not ids (ggmlR bug 5 fixed)
  ohi <- matrix(as.integer(oh), 3, 4)
  expect_equal(ag_softmax_cross_entropy_loss(logits, ohi)$data, l1, tolerance = 1e-12)
  u <- ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 8, 5)), rep(3L, 5))$data[1, 1]
  expect_equal(u, log(8), tolerance = 1e-12)
  expect_lt(ag_softmax_cross_entropy_loss(ag_tensor(matrix(c(20, 0, 0, 20), 2, 2)),
                                          c(0L, 1L))$data[1, 1], 0.01)
  expect_error(ag_softmax_cross_entropy_loss(logits, c(5L, 0L, 0L, 0L)), "")
})

test_that("softmax-CE takes class ids as a 1-D R array (dim of length 1), same loss and gradient", {
  local_f64()
  z <- matrix(c(0.5, -1, 2, 0.1, 0.3, -0.7, 1.2, 0, -0.4, 0.8, 0.2, -1.5), 3, 4)
  ids <- c(1L, 2L, 0L, 1L)
  ref_x <- ag_param(z)
  with_grad_tape(ref <- ag_softmax_cross_entropy_loss(ref_x, ids))
  g_ref <- gradof(backward(ref), ref_x)
  for (target in list(array(ids), as.array(as.double(ids)), array(ids, dim = c(1L, 4L, 1L)))) {
    x <- ag_param(z)
    with_grad_tape(l <- ag_softmax_cross_entropy_loss(x, target))
    expect_identical(l$data, ref$data)
    expect_identical(gradof(backward(l), x), g_ref)
  }
  # the value itself: mean over columns of -log softmax(z)[id]
  p <- apply(z, 2, function(v) exp(v) / sum(exp(v)))
  expect_equal(ref$data[1, 1], -mean(log(p[cbind(ids + 1L, 1:4)])), tolerance = 1e-12)
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(z), array(0L, dim = c(2L, 2L, 1L))),
               "target is a 2x2x1 array")
  # 2 ids for 4 columns
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(z), array(c(0L, 1L))), "")
})

test_that("golden values of spec section 13 (f64, 1e-10)", {
  local_f64()
  G <- gold()
  W <- ag_param(G$W)
  b <- ag_param(G$b)
  with_grad_tape({
    z <- ag_add(ag_matmul(W, G$x), b)
    loss <- ag_softmax_cross_entropy_loss(z, G$y)
  })
  expect_equal(z$data, byrow(c(0.7, -0.5, 2.3, 0.5), 2), tolerance = 1e-10)
  expect_equal(loss$data[1, 1], 1.048581214203, tolerance = 1e-10)
  g <- backward(loss)
  expect_equal(gradof(g, W), byrow(c(-0.550479903252, -0.832018385134, -1.11355686702,
                                      0.550479903252, 0.832018385134, 1.11355686702), 2),
               tolerance = 1e-10)
  expect_equal(gradof(g, b), matrix(c(-0.281538481882, 0.281538481882), 2, 1), tolerance = 1e-10)
  W2 <- ag_param(G$W)
  b2 <- ag_param(G$b)
  with_grad_tape(l2 <- ag_mse_loss(ag_sigmoid(ag_add(ag_matmul(W2, G$x), b2)), G$y))
  expect_equal(l2$data[1, 1], 0.305307684932, tolerance = 1e-10)
  expect_equal(gradof(backward(l2), W2),
               byrow(c(-0.0811452505505, -0.0735670424264, -0.0659888343023,
                       0.0819981307456, 0.0752728028166, 0.0685474748875), 2), tolerance = 1e-10)
})

test_that("finite-difference gradchecks of every op (f64)", {
  local_f64()
  set.seed(1)
  X <- matrix(runif(6, 0.5, 2), 2, 3)
  chk <- function(f, x = X) {
    p <- ag_param(x)
    expect_true(ag_gradcheck(function(inp) f(inp$x), list(x = p), eps = 1e-6, atol = 1e-6,
                             quiet = TRUE))
  }
  chk(function(x) ag_sum(x))
  chk(function(x) ag_sum(ag_mul(ag_sum(x, 1), c(1, 2))))
  chk(function(x) ag_sum(ag_mul(ag_sum(x, 2), matrix(1:3, 1, 3))))
  chk(function(x) ag_mean(ag_mul(x, x)))
  chk(function(x) ag_sum(ag_log(x)))
  chk(function(x) ag_sum(ag_exp(x)))
  chk(function(x) ag_sum(ag_mul(ag_reshape(x, 3, 2), matrix(1:6, 3, 2))))
  chk(function(x) ag_sum(ag_mul(ag_transpose(x), matrix(1:6, 3, 2))))
  chk(function(x) ag_sum(ag_clamp(x, 0.6, 1.9)))
  chk(function(x) ag_sum(ag_pow(x, 2)))
  chk(function(x) ag_sum(ag_pow(x, 0.5)))
  chk(function(x) ag_sum(ag_relu(ag_matmul(matrix(c(1, -1, 2, 0.5), 2, 2), x))))
  chk(function(x) ag_sum(ag_add(x, matrix(c(1, 2), 2, 1))))
  chk(function(x) ag_cross_entropy_loss(ag_sigmoid(x), matrix(c(1, 0, 0, 1, 1, 0), 2, 3)))
  chk(function(x) ag_softmax_cross_entropy_loss(x, c(0L, 1L, 1L)))
  chk(function(x) ag_softmax_cross_entropy_loss(x, 1L), matrix(c(0.3, -0.2, 1), 3, 1))
  chk(function(x) ag_sum(ag_mul(ag_softmax(x), matrix(1:6, 2, 3))))
  chk(function(x) ag_sum(ag_sub(x, matrix(c(1, 2, 3), 1, 3))))
  chk(function(x) ag_sum(ag_mul(x, matrix(c(1, 2, 3), 1, 3))))
  chk(function(x) ag_sum(ag_mul(x, matrix(c(1, 2), 2, 1))))
  chk(function(x) ag_sum(ag_scale(ag_tanh(x), 3)))
  chk(function(x) ag_sum(ag_gelu(ag_sub(x, 1))))
  chk(function(x) ag_sum(ag_div(matrix(1:6, 2, 3), x)))
  chk(function(x) ag_mse_loss(ag_log(ag_exp(x)), matrix(1, 2, 3)))
})

test_that("ggmlR's $grad bugs are fixed: the map value, once per leaf, accumulating", {
  local_f64()
  W <- ag_param(matrix(1:4, 2, 2))
  with_grad_tape(l <- ag_sum(ag_matmul(W, ag_matmul(W, c(1, 1)))))
  g <- backward(l)
  expect_equal(gradof(g, W), byrow(c(7, 9, 11, 13), 2))
  expect_equal(W$grad, byrow(c(7, 9, 11, 13), 2))
  backward(l)
  expect_equal(W$grad, 2 * byrow(c(7, 9, 11, 13), 2))
  A <- ag_param(c(1, 2, 3))
  with_grad_tape(l <- ag_sum(ag_mul(A, A)))
  g <- backward(l)
  expect_equal(gradof(g, A), matrix(c(2, 4, 6), 3, 1))
  expect_equal(A$grad, matrix(c(2, 4, 6), 3, 1))
})

test_that(paste0("GEMM backends: R's BLAS (dgemm and its sgemm) and the built-in kernel give the ",
                 "same products"), {
  prev <- ag_blas_name()
  on.exit(if (grepl("^OpenBLAS", prev)) NULL else ag_set_blas("default"), add = TRUE)
  set.seed(3)
  A <- matrix(runif(37 * 53, -1, 1), 37, 53)
  B <- matrix(runif(53 * 29, -1, 1), 53, 29)
  res <- list()
  for (be in c("builtin", "r")) {
    ag_set_blas(be)
    res[[be]] <- list(f64 = ag_matmul(ag_tensor(A, dtype = "f64"),
                                      ag_tensor(B, dtype = "f64"))$data,
                      f32 = ag_matmul(ag_tensor(A, dtype = "f32"),
                                      ag_tensor(B, dtype = "f32"))$data)
  }
  expect_equal(ag_set_blas("builtin"), "builtin")
  expect_match(ag_set_blas("r"), "^R BLAS")
  for (dt in c("f64", "f32")) for (be in names(res))
    expect_equal(res[[be]][[dt]], A %*% B, tolerance = if (dt == "f64") 1e-12 else 1e-5)
  # the default is the built-in kernel, as in Python: the same bits in both languages
  expect_equal(ag_set_blas("default"), "builtin")
})

test_that("ag_set_blas refuses an unknown name or a missing library with a classed error", {
  for (bad in list("nope", NA_character_))
    expect_error(ag_set_blas(bad), "^ag_set_blas\\(\\): name must be one of 'default', 'r'",
                 class = "pyggmlr_value_error")
  for (bad in list(3, NULL, c("builtin", "r")))  # not one string: an argument error, as Python's
    expect_error(ag_set_blas(bad), "^ag_set_blas\\(\\): name must be one of 'default', 'r'",
                 class = "pyggmlr_argument_error")
  expect_error(ag_set_blas("openblas", "/no/such.so"), "got \"/no/such.so\"",
               class = "pyggmlr_argument_error")
})

test_that("ag_set_blas(\"openblas\", path) needs an existing library", {
  expect_error(ag_set_blas("openblas"),
               "^ag_set_blas\\(\\): path must name an existing libscipy_openblas")
  expect_error(ag_set_blas("openblas", tempfile()),
               "^ag_set_blas\\(\\): path must name an existing")
  expect_identical(ag_blas_name(), "builtin")  # a refused switch leaves the backend as it was
})

test_that("the op kinds come from the core at load (no literal enum values in R)", {
  op <- pyggmlr:::.pg$op
  expect_true(all(c("RELU", "SIGMOID", "TANH", "GELU", "LOG", "EXP", "SOFTMAX", "NEG", "SCALE",
                    "RESHAPE") %in% names(op)))
  expect_false(anyDuplicated(unname(op)) > 0)
  x <- ag_tensor(matrix(c(-1, 0.5), 1, 2), dtype = "f64")
  expect_equal(ag_sigmoid(x)$data, 1 / (1 + exp(-x$data)), tolerance = 1e-15)
  expect_equal(ag_neg(x)$data, -x$data)
})

test_that("the other codes come from the core and the glue by name (R_pg_codes)", {
  code <- pyggmlr:::.pg$code
  expect_setequal(names(code), c("dtype", "status", "optim", "sched", "build", "dist", "act",
                                 "file", "tape", "scope", "scoped", "ckpt", "limit", "early_stop",
                                 "state_form", "seed", "mem_optim", "mem_source", "pool", "rebuild",
                                 "json", "mf_bad", "layer_bad"))
  for (g in names(code)) {
    expect_true(is.integer(code[[g]]) && !is.null(names(code[[g]])), info = g)
    expect_false(anyDuplicated(names(code[[g]])) > 0, info = g)
  }
  expect_identical(code$act[["RELU"]], pyggmlr:::.pg$op[["RELU"]])
  # the codes mean what R uses them for: a tensor's dtype, the tape's depth, a file's kind
  expect_identical(ag_tensor(1, dtype = "f64")$dtype, "f64")
  expect_identical(pyggmlr:::.dtype_code("f64"), code$dtype[["F64"]])
  depth <- function() .Call(pyggmlr:::R_pg_tape, code$tape[["DEPTH"]])
  d0 <- depth()
  with_grad_tape(expect_identical(depth(), d0 + 1L))
  expect_identical(.Call(pyggmlr:::R_pg_file_kind, tempdir()), code$file[["DIR"]])
  expect_identical(.Call(pyggmlr:::R_pg_file_kind, tempfile()), code$file[["MISSING"]])
  err <- tryCatch(ag_reshape(ag_tensor(matrix(1, 2, 2)), 3, 1), error = function(e) e)
  expect_s3_class(err, "pyggmlr_shape_error")
  expect_setequal(names(code$pool), c("MAX", "AVG"))
})
