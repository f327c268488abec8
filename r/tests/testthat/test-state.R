# ggmlR 0.8.6's model-state API (0.8.6 spec s9, s10.2): state dicts, save/load with ggmlR's
# arguments, ggmlR RDS containers, dp_train(n_gpu =), the ::: internals, ggml_version().

sd_build <- function(seed, h = 8L) {
  set.seed(seed)
  ag_sequential(ag_linear(4L, h, "relu"), ag_batch_norm(h), ag_linear(h, 2L))
}
sd_x <- local({ set.seed(501L); matrix(rnorm(4 * 16), 4, 16) })
sd_y <- local({ set.seed(502L); matrix(rnorm(2 * 16), 2, 16) })
sd_train <- function(m, opt, k) {
  ag_train(m)
  for (i in seq_len(k)) {
    with_grad_tape(loss <- ag_mse_loss(m$forward(ag_tensor(sd_x)), sd_y))
    opt$step(backward(loss))
    opt$zero_grad()
  }
  invisible(m)
}
weights <- function(m) { sd <- ag_state_dict(m); c(sd$parameters, sd$buffers) }

test_that("ag_state_dict: ggmlR's layout, names, dtypes, nested buffer keys; copies", {
  m <- sd_build(1L)
  sd_train(m, optimizer_sgd(m$parameters(), lr = 0.05), 2L)
  sd <- ag_state_dict(m)
  expect_named(sd, c("format", "version", "parameters", "param_dtypes", "buffers"))
  expect_identical(sd$format, "ggmlR.ag_state_dict")
  expect_identical(sd$version, 1L)
  expect_identical(names(sd$parameters), names(m$parameters()))
  expect_identical(sd$param_dtypes, setNames(rep("f32", 6L), names(m$parameters())))
  expect_identical(names(sd$buffers), c("layer2_running_mean", "layer2_running_var"))
  expect_true(is.matrix(sd$parameters$layer1_W) && is.double(sd$parameters$layer1_W))
  expect_identical(sd$buffers$layer2_running_mean, m$layers[[2]]$running_mean)
  expect_true(any(sd$buffers$layer2_running_mean != 0))
  w0 <- sd$parameters$layer1_W
  p <- m$parameters()
  p$layer1_W$data <- w0 * 0
  expect_identical(sd$parameters$layer1_W, w0)  # a copy
  # nested sequential (0.8.5 keys), a bare batch norm, a bare ag_linear, list(params = ...)
  nest <- ag_sequential(ag_linear(4, 4), ag_sequential(ag_batch_norm(4), ag_linear(4, 2)))
  expect_identical(names(ag_state_dict(nest)$buffers),
                   c("layer2_layer1_running_mean", "layer2_layer1_running_var"))
  expect_identical(names(ag_state_dict(ag_batch_norm(3))$buffers), c("running_mean", "running_var"))
  lin <- ag_linear(3, 2)
  expect_identical(names(ag_state_dict(lin)$parameters), c("W", "b"))
  expect_length(ag_state_dict(lin)$buffers, 0L)
  custom <- list(params = function() list(W = lin$W))
  expect_identical(ag_state_dict(custom)$parameters$W, lin$W$data)
  # a custom container with $layers: descended as ggmlR does
  box <- new.env()
  box$layers <- list(ag_linear(2, 2), ag_batch_norm(2))
  box$parameters <- function() list()
  expect_identical(names(ag_state_dict(box)$buffers),
                   c("layer2_running_mean", "layer2_running_var"))
  expect_error(ag_state_dict(list(a = 1)),
               "ag_state_dict(): `model` has no parameters() / params() method", fixed = TRUE)
  # the model's refusals are the core's texts, Python's too (test_state.py)
  expect_error(ag_state_dict(list(parameters = function() 3)),
               "ag_state_dict(): parameters() returned a numeric, not a list of ag_tensors",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_load_state_dict(list(parameters = function() list(W = lin$W, b = 2)),
                                  ag_state_dict(lin)),
               "ag_load_state_dict(): parameter 2 (b) is a numeric, not an ag_tensor",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_state_dict(list(parameters = function() list(1))),
               "ag_state_dict(): parameter 1 (unnamed) is a numeric, not an ag_tensor",
               fixed = TRUE, class = "pyggmlr_argument_error")
  ag_dtype("f64")
  on.exit(ag_dtype("f32"))
  expect_identical(unname(ag_state_dict(ag_linear(2, 2))$param_dtypes), c("f64", "f64"))
})

test_that("ag_load_state_dict: round trip in place, forward identical, optimizer stays bound", {
  src <- sd_build(1L)
  sd_train(src, optimizer_adam(src$parameters(), lr = 0.01), 3L)
  dst <- sd_build(2L)
  p_before <- dst$parameters()
  opt <- optimizer_adam(dst$parameters(), lr = 0.01)
  with_grad_tape(l <- ag_mse_loss(dst$forward(ag_tensor(sd_x)), sd_y))
  backward(l)
  g <- dst$parameters()$layer1_W$grad
  expect_invisible(ag_load_state_dict(dst, ag_state_dict(src)))
  expect_identical(weights(dst), weights(src))
  expect_identical(dst$parameters()$layer1_W$grad, g)  # $grad untouched
  for (k in names(p_before)) expect_true(pyggmlr:::.same(p_before[[k]], dst$parameters()[[k]]))
  ag_eval(src)
  ag_eval(dst)
  expect_identical(ag_predict(dst, sd_x), ag_predict(src, sd_x))
  # the optimizer built before the load trains the loaded weights
  opt$zero_grad()
  sd_train(dst, opt, 1L)
  expect_false(identical(weights(dst)$layer1_W, weights(src)$layer1_W))
})

test_that("ag_load_state_dict checks everything before writing (ggmlR's texts)", {
  m <- sd_build(1L)
  sd <- ag_state_dict(sd_build(2L))
  before <- weights(m)
  bad <- sd
  bad$parameters$layer1_b <- matrix(0, 3, 3)  # first entry fine, second not
  expect_error(ag_load_state_dict(m, bad),
               "ag_load_state_dict(): shape mismatch for 'layer1_b': model 8x1, state 3x3",
               fixed = TRUE)
  expect_identical(weights(m), before)
  bad <- sd
  bad$parameters$layer3_b <- c(1, 2)
  expect_error(ag_load_state_dict(m, bad), "shape mismatch for 'layer3_b': model 2x1, state 2",
               fixed = TRUE)
  bad <- sd
  bad$parameters[[1L]][1, 1] <- NaN
  expect_error(ag_load_state_dict(m, bad),
               "ag_load_state_dict(): 'layer1_W' contains NA, NaN or Inf", fixed = TRUE)
  bad <- sd
  bad$buffers$layer2_running_var[2] <- Inf
  expect_error(ag_load_state_dict(m, bad), "'layer2_running_var' contains NA, NaN or Inf",
               fixed = TRUE)
  bad <- sd
  bad$buffers$layer2_running_mean <- matrix("a", 8, 1)
  expect_error(ag_load_state_dict(m, bad),
               "shape mismatch for 'layer2_running_mean': model 8x1, state 8x1", fixed = TRUE)
  bad <- sd
  bad$parameters$extra_W <- matrix(0, 1, 1)
  expect_error(ag_load_state_dict(m, bad),
               paste0("ag_load_state_dict(): parameter names differ (strict = TRUE)\n",
                                                  "  missing in state: \n  not in model: extra_W"),
               fixed = TRUE)
  bad <- sd
  bad$parameters[[1L]] <- NULL
  expect_error(ag_load_state_dict(m, bad),
               "parameter names differ (strict = TRUE)\n  missing in state: layer1_W\n",
               fixed = TRUE)
  bad <- sd
  bad$buffers$layer2_running_var <- NULL
  bad$buffers$bn_x <- matrix(0, 8, 1)
  expect_error(ag_load_state_dict(m, bad),
               paste0("ag_load_state_dict(): buffer names differ (strict = TRUE)\n",
                                                  "  missing in state: ",
                      "layer2_running_var\n  not in model: bn_x"), fixed = TRUE)
  expect_identical(weights(m), before)
  expect_error(ag_load_state_dict(m, list(1)),
               "ag_load_state_dict(): `state` is not a state dict (no $parameters)",
               fixed = TRUE)
  expect_error(ag_load_state_dict(m, sd, strict = NA), "`strict` must be TRUE or FALSE",
               fixed = TRUE)
  # the state's own checks (the core's, as Python's) come before the model is walked
  expect_error(ag_load_state_dict(list(), list(parameters = list(), buffers = 3)),
               "ag_load_state_dict(): `state` is not a state dict ($buffers is not a list)",
               fixed = TRUE, class = "pyggmlr_argument_error")
  expect_error(ag_load_state_dict(sd_build(1L, h = 6L), sd),
               "shape mismatch for 'layer1_W': model 6x4, state 8x4",
               fixed = TRUE)
  expect_identical(weights(m), before)
})

test_that("strict = FALSE uses only shared names, still checks them; missing $buffers is empty", {
  m <- sd_build(1L)
  sd <- ag_state_dict(sd_build(2L))
  before <- weights(m)
  part <- sd
  part$parameters <- part$parameters[1L]
  part$parameters$extra_W <- matrix(0, 1, 1)
  part$buffers <- NULL
  ag_load_state_dict(m, part, strict = FALSE)
  w <- weights(m)
  expect_identical(w[[1L]], sd$parameters[[1L]])
  expect_identical(w[-1L], before[-1L])
  part$parameters[[1L]] <- matrix(0, 2, 2)
  expect_error(ag_load_state_dict(m, part, strict = FALSE), "shape mismatch for 'layer1_W'",
               fixed = TRUE)
  expect_identical(weights(m)[[1L]], sd$parameters[[1L]])
  nobuf <- sd
  nobuf$buffers <- NULL
  expect_error(ag_load_state_dict(m, nobuf), "buffer names differ", fixed = TRUE)
  bn <- ag_sequential(ag_linear(4, 8, "relu"), ag_batch_norm(8), ag_linear(8, 2))
  ag_load_state_dict(bn, sd)  # the format field is not needed
  expect_identical(ag_state_dict(bn)$buffers, sd$buffers)
  expect_identical(ag_state_dict(bn)$buffers, sd$buffers)
})

test_that("ag_save_model / ag_load_model take ggmlR's arguments: model_fn, device, dtype", {
  m <- sd_build(3L)
  sd_train(m, optimizer_sgd(m$parameters(), lr = 0.05), 2L)
  f <- tempfile(fileext = ".safetensors")
  on.exit(unlink(f))
  build <- function() ag_sequential(ag_linear(4L, 8L, "relu"), ag_batch_norm(8L), ag_linear(8L, 2L))
  expect_identical(ag_save_model(m, f, model_fn = build), f)
  expect_error(ag_save_model(m, f, model_fn = 3),
               "ag_save_model(): `model_fn` must be a function or NULL.", fixed = TRUE)
  expect_error(ag_save_model(list(a = 1), f), "ag_sequential")
  a <- ag_load_model(f, build)                  # positional builder, ggmlR's order
  b <- ag_load_model(f, model_fn = build, device = "cpu")
  expect_false(a$training)
  expect_identical(weights(a), weights(m))
  expect_identical(weights(b), weights(m))
  expect_identical(ag_default_device(), "cpu")
  d64 <- ag_load_model(f, dtype = "f64")
  expect_identical(d64$parameters()$layer1_W$dtype, "f64")
  expect_identical(weights(d64), weights(m))     # f32 -> f64 is exact
  d64b <- ag_load_model(f, build, dtype = "f64")
  expect_identical(unique(vapply(d64b$parameters(), function(p) p$dtype, "")), "f64")
  ag_save_model(d64, f)
  d32 <- ag_load_model(f, build, dtype = "f32")
  expect_identical(d32$parameters()$layer1_W$dtype, "f32")
  expect_identical(ag_load_model(f, build)$parameters()$layer1_W$dtype, "f64")  # the file's dtype
  expect_error(ag_load_model(f, dtype = "f16"), "dtype \"f16\" is not supported by the CPU engine",
               fixed = TRUE)
  expect_error(ag_load_model(f, dtype = "f8"), "should be one of")
  expect_error(ag_load_model(f, dtype = 3), class = "pyggmlr_argument_error",
               "'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", got 3", fixed = TRUE)
  expect_identical(ag_load_model(f, build, dtype = "f6")$parameters()$layer1_W$dtype, "f64")
  expect_error(ag_load_model(f, model = build(), model_fn = build),
               "ag_load_model(): give `model` or `model_fn`, not both", fixed = TRUE,
               class = "pyggmlr_argument_error")
  expect_error(ag_load_model(f, function() ag_sequential(ag_linear(4, 8, "relu"))), "mismatch")
  fixed32 <- function() { prev <- ag_dtype("f32"); on.exit(ag_dtype(prev)); build() }
  expect_error(ag_load_model(f, fixed32, dtype = "f64"),
               "dtype = \"f64\" was asked for, but the model's parameter 'layer1_W' is f32",
               fixed = TRUE)
  expect_error(ag_load_model(f, function() 42),
               "`model_fn` must return an ag_sequential or ag_* layer (got class: numeric).",
               fixed = TRUE)
  expect_error(ag_load_model(f, device = "gpu"), "No ggml backend available", fixed = TRUE)
  expect_identical(ag_default_device(), "cpu")
  m2 <- build()
  ag_load_model(f, m2)           # a model object in second place fills it
  expect_identical(weights(m2), weights(d32))
})

ggmlr_container <- function(model, model_fn = NULL, dtypes = NULL) {
  sd <- ag_state_dict(model)
  box <- list(format = "ggmlR.ag_state", version = 1L, parameters = sd$parameters,
              param_dtypes = if (is.null(dtypes)) sd$param_dtypes else dtypes, buffers = sd$buffers,
              model_fn = model_fn, ggmlR_version = package_version("0.8.6"),
              R_version = getRversion(),
              created = Sys.time())
  class(box) <- "ggmlR_ag_state"
  box
}

test_that("ag_load_model reads a ggmlR RDS container (ggmlR's layout and messages)", {
  build <- function() ag_sequential(ag_linear(4L, 8L, "relu"), ag_batch_norm(8L), ag_linear(8L, 2L))
  m <- sd_build(4L)
  sd_train(m, optimizer_sgd(m$parameters(), lr = 0.05), 2L)
  box <- ggmlr_container(m, model_fn = build)
  # ggmlR holds doubles: give the weights more bits than f32 has
  box$parameters$layer1_W <- box$parameters$layer1_W + 1e-12
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(box, f)
  out <- capture.output(print(readRDS(f)))
  expect_identical(out[1:5],
                   c("<ggmlR ag_state>", "  format:        ggmlR.ag_state v1", "  parameters:    6",
                               "  buffers:       2", "  model_fn saved: TRUE "))
  expect_identical(out[6], "  ggmlR version: 0.8.6")
  # the stored model_fn is code from the file: run only with trust = TRUE (issue 28)
  ran <- tempfile()  # the closure runs on a copy of this environment: it leaves a file
  trap <- ggmlr_container(m, model_fn = function() { file.create(ran); build() })
  t2 <- tempfile(fileext = ".rds")
  on.exit(unlink(t2), add = TRUE)
  saveRDS(trap, t2)
  err <- expect_error(ag_load_model(t2), class = "pyggmlr_untrusted_error")
  expect_match(conditionMessage(err), "trust = TRUE", fixed = TRUE)
  expect_match(conditionMessage(err), t2, fixed = TRUE)
  expect_false(file.exists(ran))
  expect_identical(ag_load_model(t2, trust = TRUE)$parameters()$layer1_W$dtype, "f32")
  expect_true(file.exists(ran))
  unlink(ran)
  expect_error(ag_load_model(t2, trust = NA), class = "pyggmlr_argument_error")
  got <- ag_load_model(f, trust = TRUE)          # the stored model_fn
  expect_s3_class(got, "ag_sequential")
  expect_false(got$training)
  expect_identical(got$parameters()$layer1_W$dtype, "f32")
  expect_equal(got$parameters()$layer1_W$data, box$parameters$layer1_W, tolerance = 1e-6)
  expect_identical(ag_state_dict(got)$buffers, box$buffers)
  exact <- ag_load_model(f, dtype = "f64", trust = TRUE)
  expect_identical(ag_state_dict(exact)$parameters, box$parameters)
  expect_identical(ag_load_model(f, model_fn = build, dtype = "f64")$parameters()$layer1_W$data,
                   box$parameters$layer1_W)
  saveRDS(ggmlr_container(m, dtypes = setNames(rep("f64", 6), names(box$parameters))), f)
  expect_error(ag_load_model(f),
               paste0("ag_load_model(): no `model_fn` available. Pass one via the ",
                      "`model_fn` argument, ",
                                        "or re-save the model with `model_fn` so it is ",
                      "stored in the file."), fixed = TRUE)
  # param_dtypes all f64
  expect_identical(ag_load_model(f, build)$parameters()$layer1_W$dtype, "f64")
  other <- function() ag_sequential(ag_linear(4L, 8L, "relu"), ag_linear(8L, 2L))
  expect_error(ag_load_model(f, other),
               paste0("ag_load_model(): parameter mismatch between saved state and rebuilt ",
                      "model.\n",
                      "  missing in file: layer2_W, layer2_b\n  ",
                      "not in model: layer2_gamma, layer2_beta, layer3_W, layer3_b\n",
                      "The `model_fn` architecture must match ",
                      "the saved one."), fixed = TRUE)
  wide <- function() ag_sequential(ag_linear(4L, 6L, "relu"), ag_batch_norm(6L), ag_linear(6L, 2L))
  expect_error(ag_load_model(f, wide),
               "ag_load_model(): shape mismatch for parameter 'layer1_W': model 6x4 vs file 8x4.",
               fixed = TRUE)
  expect_error(ag_load_model(f, function() list(1)), "(got class: list)", fixed = TRUE)
  bad <- ggmlr_container(m, build)
  bad$buffers$layer2_running_var <- NULL  # missing keys are skipped
  saveRDS(bad, f)
  expect_identical(ag_state_dict(ag_load_model(f, trust = TRUE))$buffers$layer2_running_var,
                   matrix(1, 8, 1))
  bad <- ggmlr_container(m, build)
  bad$parameters$layer3_b[1] <- NA
  saveRDS(bad, f)
  expect_error(ag_load_model(f, trust = TRUE),
               "parameter 'layer3_b' in the file contains NA, NaN or Inf", fixed = TRUE)
  into <- sd_build(12L)
  before <- weights(into)
  expect_error(ag_load_model(f, model = into), "contains NA, NaN or Inf", fixed = TRUE)
  expect_identical(weights(into), before)  # a failing load changes nothing
  bad$parameters$layer3_b[1] <- 0
  bad$buffers$layer2_running_mean <- matrix(0, 3, 1)
  saveRDS(bad, f)
  expect_error(ag_load_model(f, model = into),
               "shape mismatch for buffer 'layer2_running_mean': model 8x1 vs file 3x1.",
               fixed = TRUE)
  expect_identical(weights(into), before)
  bad$version <- 2L
  saveRDS(bad, f)
  expect_error(ag_load_model(f),
               "ag_load_model(): unsupported container version 2 (this ggmlR supports version 1).",
               fixed = TRUE)
  saveRDS(list(format = "other"), f)
  expect_error(ag_load_model(f), "ag_load_model(): file is not a ggmlR ag_state container.",
               fixed = TRUE)
  for (cmp in list(FALSE, "bzip2", "xz")) {  # every saveRDS compression is recognised
    saveRDS(ggmlr_container(m, build), f, compress = cmp)
    expect_identical(weights(ag_load_model(f, trust = TRUE)),
                     weights(ag_load_model(f, model = sd_build(8L))))
  }
  saveRDS(ggmlr_container(m), f, ascii = TRUE)
  expect_identical(ag_state_dict(ag_load_model(f, build))$buffers, ag_state_dict(m)$buffers)
  m3 <- sd_build(9L)
  ag_load_state_dict(m3, readRDS(f))  # ggmlR's test: a container loads as a state dict
  expect_identical(weights(m3), weights(m))
})

test_that("dp_train(n_gpu =) runs that many CPU replicas, the same as n_replicas", {
  set.seed(7)
  data <- lapply(1:5, function(i) list(x = matrix(rnorm(12), 4, 3), y = matrix(rnorm(6), 2, 3)))
  make <- function() { set.seed(11); ag_sequential(ag_linear(4, 5, "tanh"), ag_linear(5, 2)) }
  run <- function(...) dp_train(make, data, loss_fn = ag_mse_loss,
                                forward_fn = function(m, s) m$forward(ag_tensor(s$x)),
                                target_fn = function(s) s$y, n_iter = 4L, lr = 0.01,
                                verbose = FALSE, ...)
  a <- run(n_gpu = 2L)
  b <- run(n_replicas = 2L)
  one <- run()
  expect_identical(a$loss_history, b$loss_history)
  expect_identical(lapply(a$params, function(t) t$data), lapply(b$params, function(t) t$data))
  expect_false(identical(a$loss_history, one$loss_history))
  expect_identical(run(n_gpu = 2L, n_replicas = 2L)$loss_history, a$loss_history)
  expect_error(run(n_gpu = 2L, n_replicas = 3L), "n_gpu (2) and n_replicas (3)", fixed = TRUE)
  expect_error(run(n_gpu = 0L), "n_gpu must be an integer in [1, 1024], got 0", fixed = TRUE)
})

test_that("ggmlR's ::: internals and ggml_version()", {
  x <- ag_param(matrix(as.double(1:12), 4, 3))
  expect_identical(pyggmlr:::.ag_data(x), x$data)
  expect_identical(pyggmlr:::.ag_data(matrix(1, 2, 2)), matrix(1, 2, 2))
  expect_identical(pyggmlr:::.ag_as_matrix(x$data), x$data)
  s <- pyggmlr:::.ag_row_slice(x, 2L, 3L)
  expect_identical(s$data, x$data[2:3, ])
  cc <- pyggmlr:::.ag_row_concat(list(pyggmlr:::.ag_row_slice(x, 1L, 1L), s,
                                      pyggmlr:::.ag_row_slice(x, 4L, 4L)))
  expect_identical(cc$data, x$data)
  expect_identical(pyggmlr:::.ag_row_concat(list(s)), s)
  G <- matrix(seq(-1, 1, length.out = 12), 4, 3)
  with_grad_tape(l <- ag_sum(ag_mul(pyggmlr:::.ag_row_concat(list(pyggmlr:::.ag_row_slice(x, 1L,
      2L),
                                                                   pyggmlr:::.ag_row_slice(x, 3L,
                                                                       4L))), G)))
  expect_equal(gradof(backward(l), x), G, tolerance = 1e-7)  # identity with gradient G
  expect_identical(ggml_version(), "0.1.0")
  expect_identical(ggml_version(), as.character(utils::packageVersion("pyggmlr")))
})

test_that("loading twice is idempotent; nested batch norms survive save/load (0.8.5 fix)", {
  m <- sd_build(1L)
  sd_train(m, optimizer_adam(m$parameters(), lr = 0.01), 2L)
  sd <- ag_state_dict(m)
  m3 <- sd_build(7L)
  ag_load_state_dict(m3, sd)
  once <- weights(m3)
  ag_load_state_dict(m3, sd)
  expect_identical(weights(m3), once)
  nest <- ag_sequential(ag_linear(4, 4, "tanh"), ag_sequential(ag_batch_norm(4), ag_linear(4, 2)))
  ag_train(nest)
  with_grad_tape(nest$forward(ag_tensor(sd_x)))
  ag_tape_clear()
  expect_true(any(ag_state_dict(nest)$buffers$layer2_layer1_running_mean != 0))
  f <- tempfile(fileext = ".safetensors")
  on.exit(unlink(f))
  ag_save_model(nest, f)
  back <- ag_load_model(f)
  expect_identical(ag_state_dict(back)$buffers, ag_state_dict(nest)$buffers)
  expect_identical(ag_state_dict(back)$parameters, ag_state_dict(nest)$parameters)
})
