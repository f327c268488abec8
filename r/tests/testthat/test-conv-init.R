# The convolution layers' init = (issue 30): torch's default kept, keras' glorot_uniform and
# he_uniform (torch's fans of the torch-shaped weight) as one runif with bias zeros; configs and
# model files keep the choice; bad values refused naming the layer and the argument.

bound_of <- function(init, fan_in, fan_out) switch(init, torch = 1 / sqrt(fan_in),
  glorot_uniform = sqrt(6 / (fan_in + fan_out)), he_uniform = sqrt(6 / fan_in))

# constructor, its arguments, the weight's dim, torch's fan_in and fan_out
conv_specs <- list(
  conv2d = list(ag_conv2d, list(4, 6, c(3, 2), groups = 2), c(6, 12), 12, 36),
  conv1d = list(ag_conv1d, list(3, 5, 4), c(5, 12), 12, 20),
  conv_transpose2d = list(ag_conv_transpose2d, list(4, 6, 3, groups = 2), c(4, 27), 27, 36),
  conv_transpose1d = list(ag_conv_transpose1d, list(4, 6, 3, groups = 2), c(4, 9), 9, 12))

test_that("glorot_uniform and he_uniform are one runif of torch's bound, bias zeros", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  for (nm in names(conv_specs)) for (init in c("glorot_uniform", "he_uniform")) {
    s <- conv_specs[[nm]]
    ggml_set_seed(13)
    l <- do.call(s[[1]], c(s[[2]], init = init))
    b <- bound_of(init, s[[4]], s[[5]])
    ggml_set_seed(13)
    u <- runif(prod(s[[3]]), -b, b)
    expect_identical(l$weight$data, matrix(u, s[[3]][1], s[[3]][2]), label = paste(nm, init))
    expect_identical(l$bias$data, matrix(0, s[[2]][[2]], 1))
    expect_identical(l$init, init)
    expect_identical(l$to_config()$init, init)
    nxt <- runif(1)  # no draw for the bias
    ggml_set_seed(13)
    do.call(s[[1]], c(s[[2]], init = init))
    expect_identical(runif(1), nxt)
  }
})

test_that("a big layer fills its bound; torch's default keeps its bits", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  for (init in c("torch", "glorot_uniform", "he_uniform")) {
    ggml_set_seed(2)
    w <- ag_conv2d(16, 64, 3, init = init)$weight$data
    b <- bound_of(init, 16 * 9, 64 * 9)
    expect_lte(max(abs(w)), b)
    expect_gt(max(abs(w)), 0.99 * b)
  }
  ggml_set_seed(7)
  a <- ag_conv2d(2, 4, c(3, 2), groups = 2)
  ggml_set_seed(7)
  l <- ag_conv2d(2, 4, c(3, 2), groups = 2, init = "torch")
  expect_identical(a$weight$data, l$weight$data)
  expect_identical(a$bias$data, l$bias$data)
  ggml_set_seed(7)
  u <- runif(28, -1 / sqrt(6), 1 / sqrt(6))
  expect_identical(l$weight$data, matrix(u[1:24], 4, 6))
  expect_identical(a$to_config()$init, "torch")
})

test_that("prefixes name an init; configs and model files keep it", {
  old <- ag_dtype("f64"); on.exit(ag_dtype(old))
  expect_identical(ag_conv1d(1, 2, 3, init = "he")$init, "he_uniform")
  expect_null(ag_conv_transpose2d(2, 3, 2, bias = FALSE, init = "g")$bias)
  set.seed(3)
  x <- matrix(rnorm(2 * 36 * 3), 72, 3)
  ggml_set_seed(4)
  m <- ag_sequential(
    ag_conv2d(2, 4, 3, stride = 2, padding = 1, input_shape = c(2, 6, 6), init = "he_uniform"),
    ag_conv_transpose2d(4, 2, 2, stride = 2, init = "glorot_uniform"),
    ag_flatten(), ag_linear(2 * 36, 2))
  cfg <- ag_to_config(m)
  expect_identical(cfg$layers[[1]]$init, "he_uniform")
  m2 <- ag_module_from_config(cfg)
  expect_identical(c(m2$layers[[1]]$init, m2$layers[[2]]$init), c("he_uniform", "glorot_uniform"))
  path <- tempfile(fileext = ".gguf")
  on.exit(unlink(path), add = TRUE)
  ag_save_model(m, path)
  m3 <- ag_load_model(path)
  expect_identical(m3$layers[[2]]$init, "glorot_uniform")
  expect_identical(ag_predict(m3, x), ag_predict(m, x))
  plain <- cfg$layers[[1]]
  plain$init <- NULL  # a config from before init =: torch's default
  expect_identical(ag_module_from_config(plain)$init, "torch")
})

test_that("a bad init is refused naming the layer and the argument", {
  expect_error(ag_conv2d(1, 2, 3, init = "xavier"),
               paste0("^ag_conv2d: init must be one of 'torch', 'glorot_uniform', 'he_uniform', ",
                      "got \"xavier\""), class = "pyggmlr_value_error")
  expect_error(ag_conv1d(1, 2, 3, init = NULL), "^ag_conv1d: init must be one of",
               class = "pyggmlr_argument_error")
  expect_error(ag_conv_transpose2d(1, 2, 3, init = ""), "^ag_conv_transpose2d: init must be",
               class = "pyggmlr_value_error")
  cfg <- ag_conv2d(1, 2, 3)$to_config()
  cfg$init <- "orthogonal"
  expect_error(ag_module_from_config(cfg), "ag_module_from_config: .*conv2d.*init must be",
               class = "pyggmlr_value_error")
})
