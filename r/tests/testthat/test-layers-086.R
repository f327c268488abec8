# ggmlR 0.8.3-0.8.6 layer changes (0.8.6 spec section 5), golden values from the spec.

test_that("layer norm: spec golden values and exact gradients", {
  local_f64()
  ln <- ag_layer_norm(3)
  expect_s3_class(ln, c("ag_layer_norm", "ag_layer"))
  expect_identical(ln$normalized_shape, 3L)
  ln$gamma$data <- matrix(c(1, 2, 0.5), 3, 1)
  ln$beta$data <- matrix(c(0, 0.1, -0.1), 3, 1)
  x <- ag_param(matrix(c(1, 2, 4, 2, 0, 1), 3, 2))
  with_grad_tape({ y <- ln$forward(x); loss <- ag_sum(ag_mul(y, matrix(1:6, 3, 2))) })
  g <- backward(loss)
  expect_equal(y$data, rbind(c(-1.0690415315, 1.2247356859), c(-0.4345207657, -2.3494713718),
                             c(0.5681509572, -0.1)), tolerance = 1e-9)
  expect_equal(get(as.character(x$id), g),
               rbind(c(-0.9735911493, 1.6329258023), c(1.4603871534, 1.6330360268),
                                                 c(-0.4867960042, -3.2659618291)), tolerance = 1e-9)
  expect_equal(as.vector(get(as.character(ln$gamma$id), g)),
               c(3.8299012122, -6.6581991953, 4.0089057429),
               tolerance = 1e-9)
  expect_equal(as.vector(get(as.character(ln$beta$id), g)), c(5, 7, 9))
})

test_that("layer norm without affine parameters; print; errors; config", {
  local_f64()
  ln <- ag_layer_norm(3, elementwise_affine = FALSE)
  expect_null(ln$gamma)
  expect_null(ln$beta)
  expect_identical(ln$parameters(), list())
  expect_output(print(ln), "ag_layer_norm(3) | eps=1e-05 | affine=FALSE", fixed = TRUE)
  expect_output(print(ag_layer_norm(16)), "ag_layer_norm(16) | eps=1e-05 | affine=TRUE",
                fixed = TRUE)
  x0 <- matrix(c(1, 2, 4, 2, 0, 1), 3, 2)
  ref <- sweep(sweep(x0, 2, colMeans(x0)), 2, sqrt(colMeans(sweep(x0, 2, colMeans(x0))^2) + 1e-5),
               "/")
  expect_equal(ln$forward(x0)$data, ref, tolerance = 1e-12)
  # a vector is one column
  expect_equal(ln$forward(c(1, 2, 4))$data, ref[, 1, drop = FALSE], tolerance = 1e-12)
  ag_eval(ln)
  expect_identical(ln$forward(x0)$data, ag_train(ln)$forward(x0)$data)
  for (bad in list(0, -1, "a", NA, c(2, 3), NULL))
    expect_error(ag_layer_norm(bad), "normalized_shape must be a single positive integer",
                 fixed = TRUE)
  expect_identical(ag_layer_norm(4.9)$normalized_shape, 4L)
  expect_error(ag_layer_norm(4)$forward(matrix(1, 3, 2)),
               "ag_layer_norm: expected 4 features, got 3", fixed = TRUE)
  m <- ag_sequential(ag_layer_norm(5, eps = 1e-3, elementwise_affine = FALSE), ag_layer_norm(5))
  cfg <- ag_to_config(m)
  expect_identical(cfg$layers[[1]],
                   list(type = "layer_norm", normalized_shape = 5L, eps = 1e-3,
                        elementwise_affine = FALSE))
  back <- ag_module_from_config(cfg)
  expect_false(back$layers[[1]]$elementwise_affine)
  expect_true(back$layers[[2]]$elementwise_affine)
  expect_identical(ag_module_from_config(list(type = "layer_norm",
                                              num_features = 6L))$normalized_shape, 6L)
})

test_that("batch norm: the exact training-mode input gradient (0.8.5)", {
  local_f64()
  bn <- ag_batch_norm(2)
  x <- ag_param(matrix(c(1, 2, 3, 5, 6, 11), 2, 3))
  with_grad_tape(loss <- ag_sum(ag_mul(bn$forward(x), matrix(1:6, 2, 3))))
  expect_equal(get(as.character(x$id), backward(loss)),
               rbind(c(-0.0768437581, 0.1280690880, -0.0512253300),
                     c(-0.0763606548, 0.1145404095, -0.0381797547)),
               tolerance = 1e-9)
})

test_that("ag_linear: glorot and orthogonal goldens, gain after the draw", {
  set.seed(42)
  w <- as.vector(ag_linear(5, 3)$W$data)
  expect_equal(w[1:4],
               c(0.7184651426223132, 0.75703682257106242, -0.37041719148036939,
                 0.57235207758912954),
               tolerance = 1e-7)
  set.seed(42)
  expect_identical(as.vector(ag_linear(5, 3, gain = 2)$W$data),
                   as.vector(ag_tensor(matrix(w * 2, 3, 5))$data))
  local_f64()
  set.seed(1)
  w <- ag_linear(3, 2, init = "orthogonal")$W$data
  expect_equal(w,
               rbind(c(-0.5907722096, 0.1731833546, -0.7880328179),
                     c(0.8042142009, 0.2051024658, -0.5578283765)),
               tolerance = 1e-9)
  set.seed(1)
  expect_equal(ag_linear(2, 3, init = "orth")$W$data, t(w), tolerance = 1e-15)
})

test_that("ag_linear: ggmlR 0.8.6's refusals, before any draw", {
  cases <- list(
    list(list(gain = NA), "ag_linear: gain must be a single finite number"),
    list(list(gain = TRUE), "ag_linear: gain must be a single finite number"),
    list(list(gain = c(1, 2)), "ag_linear: gain must be a single finite number"),
    list(list(gain = Inf), "ag_linear: gain must be a single finite number"),
    list(list(init = "xavier"), "'arg' should be one of"),
    list(list(init = matrix(1, 3, 2), gain = 2),
         "ag_linear: gain applies to string inits only; scale a function or matrix init yourself"),
    list(list(init = function(o, i) matrix(1, o, i), gain = 0.5),
         "ag_linear: gain applies to string inits only"),
    list(list(init = function(o, i) "x"),
         paste0("ag_linear: init must be \"glorot_uniform\", \"orthogonal\", a function(out, in) ",
                "or a numeric matrix")),
    list(list(init = matrix(1, 3, 2)), "ag_linear: init matrix is 3x2, expected 2x3 (out x in)"),
    list(list(init = matrix(c(1, NaN, 0, 0, 1, 0), 2, 3)),
         "ag_linear: init matrix contains NA, NaN or Inf"))
  for (cs in cases) {
    set.seed(7)
    before <- .Random.seed
    expect_error(do.call(ag_linear, c(list(3, 2), cs[[1]])), cs[[2]], fixed = TRUE)
    expect_identical(.Random.seed, before)
  }
  seen <- NULL
  set.seed(7)
  before <- .Random.seed
  l <- ag_linear(3, 2, init = function(o, i) { seen <<- c(o, i); matrix(1:6, o, i) })
  expect_identical(seen, c(2L, 3L))
  expect_identical(.Random.seed, before)
  expect_equal(l$W$data, matrix(as.double(1:6), 2, 3))
})

test_that("an unknown activation name is an error, before any draw (as in Python)", {
  for (bad in list("Relu", "swish", 1, c("relu", "tanh"))) {
    set.seed(2)
    before <- .Random.seed
    expect_error(ag_linear(3, 2, activation = bad),
                 paste0("ag_linear: activation must be one of 'gelu', 'relu', 'sigmoid', ",
                        "'softmax', 'tanh' or NULL"),
                 fixed = TRUE)
    expect_identical(.Random.seed, before)
  }
  expect_silent(ag_linear(3, 2, activation = "gelu"))
})
