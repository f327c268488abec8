# Argument errors that were unclassed, named no function or an internal one, or took a wrong
# value as a right one (issue 28): each refused with a classed condition whose message names the
# user-facing function and the argument; a refused call changes nothing.

.w <- function() ag_param(matrix(1, 2, 2))
X4 <- matrix(1, 2, 4)
.m <- function() { set.seed(1); ag_sequential(ag_linear(2, 3)) }

.expect_refused <- function(expr, cls, fn, arg = NULL) {
  e <- tryCatch({ expr; NULL }, error = function(e) e)
  lbl <- deparse(substitute(expr))[1L]
  testthat::expect_true(inherits(e, cls), info = paste(lbl, ":", paste(class(e), collapse = "/")))
  testthat::expect_true(inherits(e, "pyggmlr_error"), info = lbl)
  msg <- if (is.null(e)) "" else conditionMessage(e)
  testthat::expect_true(startsWith(msg, fn), info = paste(lbl, ":", msg))
  if (!is.null(arg))
    testthat::expect_true(grepl(arg, msg, fixed = TRUE), info = paste(lbl, ":", msg))
  testthat::expect_false(grepl("(^|[ (])\\.[a-z_]+", msg),
                         info = paste(lbl, ": an internal name:", msg))
  invisible(e)
}

test_that("ag_fit's y and data checks are classed and name ag_fit, not an internal helper", {
  .expect_refused(ag_fit(.m(), X4, as.raw(0:3), loss = "mse", silent = TRUE),
                  "pyggmlr_argument_error", "ag_fit", "y must be numeric")
  # a character y is labels, as Python's strings: the loss must suit labels (the core's text)
  .expect_refused(ag_fit(.m(), X4, c("a", "b", "a", "b"), loss = "mse", silent = TRUE),
                  "pyggmlr_value_error", "ag_fit", "needs loss = \"cross_entropy\"")
  .expect_refused(ag_fit(.m(), X4, matrix(c(NA, rep(1, 11)), 3, 4), loss = "mse", silent = TRUE),
                  "pyggmlr_value_error", "ag_fit", "non-finite value")  # y of the 3 outputs' rows
  .expect_refused(ag_fit(.m(), X4, matrix(1, 3, 3), loss = "mse", silent = TRUE),
                  "pyggmlr_shape_error", "ag_fit", "samples")  # Python's ShapeError (issue 29)
  .expect_refused(ag_fit(.m(), X4, NULL, loss = "mse", silent = TRUE), "pyggmlr_value_error",
                  "ag_fit", "needs targets y")
  .expect_refused(ag_fit(.m(), X4, c(0, 1, 0.5, 2), silent = TRUE), "pyggmlr_value_error",
                  "ag_fit", "class ids")
  .expect_refused(ag_fit(NULL, X4, matrix(1, 3, 4), loss = "mse", silent = TRUE), "pyggmlr_error",
                  "ag_fit")
  .expect_refused(ag_fit(.m(), X4, matrix(1, 3, 4), loss = NULL, silent = TRUE),
                  "pyggmlr_value_error", "ag_fit", "loss")
})

test_that(paste0("ag_fit, ag_predict, ag_accuracy, ag_estimate_training_memory: Python's classes, ",
                 "the user-facing function named (issue 29)"), {
  y <- matrix(1, 3, 4)
  fit <- function(...) ag_fit(.m(), X4, y, loss = "mse", silent = TRUE, ...)
  .expect_refused(fit(opt_params = 3), "pyggmlr_argument_error", "ag_fit", "opt_params")
  .expect_refused(fit(callbacks = 3), "pyggmlr_argument_error", "ag_fit", "got numeric")
  .expect_refused(fit(callbacks = list(3)), "pyggmlr_argument_error", "ag_fit", "callbacks")
  .expect_refused(ag_fit(function(x) x, X4, y, loss = "mse", silent = TRUE),
                  "pyggmlr_argument_error", "ag_fit", "model must have parameters(), got function")
  .expect_refused(ag_fit(.m(), array(1, c(2, 2, 4)), y, loss = "mse", silent = TRUE),
                  "pyggmlr_shape_error", "ag_fit", "got a 2x2x4 array")
  .expect_refused(ag_predict(.m(), array(1, c(2, 2, 4))), "pyggmlr_shape_error", "ag_predict", "x")
  .expect_refused(ag_accuracy(.m(), X4, array(0, c(1, 1, 4))), "pyggmlr_shape_error",
                  "ag_accuracy", "y")
  no_fwd <- list(parameters = function() list(W = ag_param(matrix(1, 2, 2))))
  .expect_refused(ag_estimate_training_memory(model = no_fwd, x = X4, quiet = TRUE),
                  "pyggmlr_argument_error", "ag_estimate_training_memory()", "forward(x)")
  not_t <- list(parameters = function() list(W = ag_param(matrix(1, 2, 2))),
                forward = function(x) 42)
  .expect_refused(ag_estimate_training_memory(model = not_t, x = X4, quiet = TRUE),
                  "pyggmlr_argument_error", "ag_estimate_training_memory()",
                  "model forward returned a numeric, not a tensor")
  .expect_refused(ag_estimate_training_memory(list(c(2, 2)), dtype = "f8", quiet = TRUE),
                  "pyggmlr_dtype_error", "ag_estimate_training_memory()", "dtype")
})

test_that("optimizer arguments: accumulate_steps, params, a tensor given to step()", {
  W <- .w()
  for (k in list(0, -1, NA, 1e10, "a", c(1, 2), TRUE, data.frame(a = 2)))
    .expect_refused(optimizer_adam(list(W), accumulate_steps = k), "pyggmlr_error",
                    "optimizer_adam", "accumulate_steps must be a positive integer")
  .expect_refused(optimizer_sgd(list(W), accumulate_steps = 0), "pyggmlr_value_error",
                  "optimizer_sgd", "accumulate_steps")
  expect_identical(optimizer_sgd(list(W), accumulate_steps = 1.9)$accumulate_steps, 1L)
  .expect_refused(optimizer_sgd(NULL), "pyggmlr_argument_error", "optimizer_sgd",
                  "is.list(params) is not TRUE")
  .expect_refused(optimizer_adam(list(W, 3)), "pyggmlr_argument_error", "optimizer_adam",
                  "parameter 2 is not an ag_tensor")
  W$grad <- matrix(1, 2, 2)
  for (o in list(optimizer_sgd(list(W)), optimizer_adam(list(W), accumulate_steps = 2L))) {
    before <- c(o$t, o$accum_count)
    e <- .expect_refused(o$step(W), "pyggmlr_argument_error", sub("ag_", "", class(o)[1L]),
                         "grads must be an environment")
    expect_match(conditionMessage(e), "ag_tensor")
    expect_false(grepl("no gradient", conditionMessage(e)))
    expect_identical(c(o$t, o$accum_count), before)  # nothing counted
  }
  expect_equal(W$data, matrix(1, 2, 2))
})

test_that("layers: ag_sequential of non-layers, ag_layer_norm of a data frame or a factor", {
  .expect_refused(ag_sequential(1, "a"), "pyggmlr_argument_error", "ag_sequential",
                  "layer 1 has no forward function")
  .expect_refused(ag_sequential(ag_linear(2, 2), "a"), "pyggmlr_argument_error", "ag_sequential",
                  "layer 2")
  for (bad in list(data.frame(a = 3), factor("3"), TRUE, "3", 1e10, c(2, 3), NA, 0, NULL))
    .expect_refused(ag_layer_norm(bad), "pyggmlr_value_error", "ag_layer_norm",
                    "normalized_shape must be a single positive integer")
  expect_identical(ag_layer_norm(4.9)$normalized_shape, 4L)
  .expect_refused(ag_linear(2, 2, init = "xavier"), "pyggmlr_value_error", "ag_linear",
                  "'arg' should be one of")
  .expect_refused(ag_flash_attention(matrix(0, 4, 2), matrix(0, 4, 2), matrix(0, 4, 2),
                                     data.frame(a = 2)),
                  "pyggmlr_argument_error", "ag_flash_attention", "n_heads")
})

test_that("ggml_set_seed and seeds: one number, no || on a data frame, classed", {
  set.seed(5)
  before <- .Random.seed
  for (bad in list(data.frame(a = 1, b = 2), data.frame(a = 1), factor("3"), c(1, 2), TRUE,
                   list(1), matrix(1, 1, 1)))
    .expect_refused(ggml_set_seed(bad), "pyggmlr_argument_error", "ggml_set_seed", "`seed`")
  .expect_refused(ggml_set_seed(NA_real_), "pyggmlr_value_error", "ggml_set_seed")
  .expect_refused(suppressWarnings(ggml_set_seed(1e10)), "pyggmlr_value_error", "ggml_set_seed")
  expect_identical(.Random.seed, before)  # a refused call seeds nothing
  expect_identical(ggml_set_seed(1.5), 1L)
  expect_identical(ggml_set_seed("42"), 42L)
  .expect_refused(ag_dataloader(X4, batch_size = 2, seed = data.frame(a = 1)),
                  "pyggmlr_argument_error", "ag_dataloader", "seed")
})

test_that("ag_reshape stays within R's integer dims; requires_grad takes TRUE or FALSE only", {
  x <- ag_tensor(matrix(0, 0, 2))
  .expect_refused(ag_reshape(x, 3e9, 0), "pyggmlr_value_error", "ag_reshape", "nrow")
  .expect_refused(ag_reshape(x, 0, -3e9), "pyggmlr_value_error", "ag_reshape", "ncol")
  expect_identical(dim(ag_reshape(ag_tensor(matrix(1, 2, 3)), 3, -1)), c(3L, 2L))
  t <- ag_tensor(matrix(1, 2, 2))
  for (bad in list(1:2, 1, "yes", NA, c(TRUE, TRUE), NULL)) {
    e <- tryCatch({ t$requires_grad <- bad; NULL }, error = function(e) e)
    expect_true(inherits(e, "pyggmlr_argument_error"), info = deparse(bad))
    expect_match(conditionMessage(e), "requires_grad must be TRUE or FALSE")
    expect_false(t$requires_grad)
  }
  t$requires_grad <- TRUE
  expect_true(t$requires_grad)
})

test_that("match.arg and stopifnot refusals are classed and name the function", {
  W <- .w()
  .expect_refused(ag_matmul_precision("f16"), "pyggmlr_value_error", "ag_matmul_precision",
                  "should be one of")
  .expect_refused(ag_matmul_precision(data.frame(a = 1)), "pyggmlr_argument_error",
                  "ag_matmul_precision")
  .expect_refused(check_grad_anomaly(list(W), NULL, action = "ignore"), "pyggmlr_value_error",
                  "check_grad_anomaly", "action")
  .expect_refused(ag_capture(1), "pyggmlr_argument_error", "ag_capture",
                  "is.function(fn) is not TRUE")
  .expect_refused(clip_grad_value(list(W), NULL, "1"), "pyggmlr_value_error", "clip_grad_value",
                  "clip_value")
  .expect_refused(ag_gradcheck(function(i) ag_sum(i$W), list(W = W), quiet = NULL),
                  "pyggmlr_argument_error", "ag_gradcheck", "quiet")
  .expect_refused(ag_tensor(1, dtype = data.frame(a = 1)), "pyggmlr_dtype_error", "ag_tensor",
                  "dtype")
  .expect_refused(backward(NULL), "pyggmlr_argument_error", "backward")
  .expect_refused(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 2)), c(0.5, 1)),
                  "pyggmlr_value_error", "ag_softmax_cross_entropy_loss", "class id 0.5")
  .expect_refused(dp_train(function() ag_linear(2, 1), list(list(x = 1, y = 1)), n_iter = 1e10),
                  "pyggmlr_value_error", "dp_train", "n_iter")
})

test_that("the losses and ag_accuracy name themselves, not the helper they call", {
  .expect_refused(ag_mse_loss("a", 1), "pyggmlr_dtype_error", "ag_mse_loss")
  .expect_refused(ag_cross_entropy_loss(list(), 1), "pyggmlr_dtype_error",
                  "ag_cross_entropy_loss")
  .expect_refused(ag_softmax_cross_entropy_loss("a", 0L), "pyggmlr_dtype_error",
                  "ag_softmax_cross_entropy_loss")
  m <- ag_linear(2, 3)
  .expect_refused(ag_accuracy(m, "a", 0L), "pyggmlr_error", "ag_accuracy", "x")
  .expect_refused(ag_accuracy(m, matrix(0, 2, 4), rep(0L, 4), batch_size = 0),
                  "pyggmlr_value_error", "ag_accuracy", "batch_size")
  .expect_refused(ag_predict(m, matrix(0, 2, 0)), "pyggmlr_shape_error", "ag_predict",
                  "x has no samples")
})

test_that("model-file and config argument errors are classed and name the function", {
  m <- ag_sequential(ag_linear(2, 3))
  .expect_refused(ag_register_layer(1, function(cfg) NULL), "pyggmlr_argument_error",
                  "ag_register_layer:", "type")
  .expect_refused(ag_register_layer("linear", function(cfg) NULL), "pyggmlr_value_error",
                  "ag_register_layer:", "'linear' is a built-in layer type")
  .expect_refused(ag_to_config(1), "pyggmlr_argument_error", "ag_to_config:")
  .expect_refused(ag_module_from_config('{"type": "nope"}'), "pyggmlr_value_error",
                  "ag_module_from_config:", "unknown layer type")
  .expect_refused(ag_module_from_config(list(type = "linear", in_features = "a",
                                             out_features = 2)),
                  "pyggmlr_value_error", "ag_module_from_config:", "in_features")
  .expect_refused(ag_save_model(m, c("a", "b")), "pyggmlr_argument_error", "ag_save_model()",
                  "path")
  .expect_refused(ag_save_model(1, tempfile()), "pyggmlr_argument_error", "ag_save_model()",
                  "model")
  f <- tempfile(fileext = ".safetensors")
  ag_save_model(m, f)
  .expect_refused(ag_load_model(f, model = ag_sequential(ag_linear(2, 4))),
                  "pyggmlr_value_error", "shape mismatch", "layer1_W")
  .expect_refused(ag_load_model(f, optimizer = 1), "pyggmlr_argument_error", "ag_load_model()",
                  "optimizer")
  .expect_refused(ag_load_model(f, model_fn = 1), "pyggmlr_argument_error", "ag_load_model()",
                  "model_fn")
})

test_that("the glue's own checks are classed as the core's errors", {
  t <- ag_tensor(matrix(1, 2, 2))
  W <- ag_param(matrix(1, 2, 2))
  .expect_refused(clip_grad_norm(list(W), max_norm = "a"), "pyggmlr_argument_error",
                  "clip_grad_norm", "max_norm")
  # the core's text, Python's too (it was "$data<-: new value is ...")
  .expect_refused(t$data <- matrix(0, 3, 3), "pyggmlr_shape_error", "assigning data")
  .expect_refused(ag_save_model(ag_linear(2, 2), tempfile(), epoch = -1), "pyggmlr_value_error",
                  "ag_save_model()", "epoch")
  f <- tempfile()
  writeLines("not a library", f)
  .expect_refused(ag_set_blas("openblas", f), "pyggmlr_value_error", "ag_set_blas()",
                  "cannot be loaded")
})

test_that("an operand that is not numeric is named by the op it was given to", {
  .expect_refused(ag_param("a"), "pyggmlr_dtype_error", "ag_param")
  .expect_refused(ag_concat_rows("a", matrix(1)), "pyggmlr_dtype_error", "ag_concat_rows")
  .expect_refused(ag_slice_rows(NULL, 0, 1), "pyggmlr_dtype_error", "ag_slice_rows")
  .expect_refused(ag_batch_norm(2)$forward("a"), "pyggmlr_dtype_error", "ag_batch_norm")
  .expect_refused(ag_multihead_attention(4, 2)$forward("a"), "pyggmlr_dtype_error",
                  "ag_multihead_attention")
})

test_that("refusals that were plain stop()s are classed as Python's and name the function (29)", {
  x <- ag_tensor(matrix(1, 2, 2))
  .expect_refused(-(!x), "pyggmlr_argument_error", "ag_tensor", "unary '!'")
  .expect_refused(2 ^ x, "pyggmlr_argument_error", "ag_tensor", "'^' needs a tensor base")
  .expect_refused(x %% 2, "pyggmlr_argument_error", "ag_tensor", "'%%' is not defined")
  .expect_refused(cos(x), "pyggmlr_argument_error", "ag_tensor", "cos() has no differentiable")
  .expect_refused(sum(x, x), "pyggmlr_argument_error", "ag_tensor", "sum() takes one tensor")
  .expect_refused(ag_compile(function(x) 1, x, build = "forward"), "pyggmlr_argument_error",
                  "ag_compile()", "fn must return an ag_tensor, got numeric")
  .expect_refused(with_grad_tape(ag_checkpoint(function(x) 1, x)), "pyggmlr_argument_error",
                  "ag_checkpoint()", "fn must return an ag_tensor, got numeric")
  .expect_refused(ag_gradcheck(function(i) 1, list(W = .w()), quiet = TRUE),
                  "pyggmlr_argument_error", "ag_gradcheck()", "1x1 ag_tensor, got numeric")
  mk <- function() ag_linear(2, 1)
  xs <- list(matrix(1, 2, 1))
  .expect_refused(dp_train(function() 3, xs, n_iter = 1, verbose = FALSE),
                  "pyggmlr_argument_error", "dp_train", "make_model() must return a model")
  .expect_refused(dp_train(mk, xs, n_iter = 1, verbose = FALSE, loss_fn = function(o, s) 1),
                  "pyggmlr_argument_error", "dp_train", "the loss must be an ag_tensor, got")
  shared <- mk()
  .expect_refused(dp_train(function() shared, xs, n_replicas = 2, verbose = FALSE),
                  "pyggmlr_value_error", "dp_train", "share a parameter")
  .expect_refused(dp_train(function() list(forward = identity, parameters = function() list()),
                           xs, verbose = FALSE), "pyggmlr_value_error", "dp_train",
                  "no parameters")
  opt <- optimizer_sgd(list(.w()))
  .expect_refused(opt$load_state(list(format = "x")), "pyggmlr_value_error",
                  "optimizer load_state()")
  W <- .w()
  with_grad_tape(l <- ag_sum(ag_log(ag_scale(W, 0))))
  g <- backward(l)
  .expect_refused(suppressWarnings(check_grad_anomaly(list(W = W), g, action = "stop")),
                  "pyggmlr_value_error", "gradient anomaly detected")
  seq_custom <- ag_sequential(list(forward = identity, parameters = function() list()))
  .expect_refused(seq_custom$to_config(), "pyggmlr_value_error", "ag_sequential to_config")
  .expect_refused(ag_load_model(file.path(tempdir(), "no-such-model.safetensors")),
                  "pyggmlr_io_error", "ag_load_model()", "No such file or directory")
  .expect_refused(ag_load_model(tempdir()), "pyggmlr_io_error", "ag_load_model()",
                  "is a directory")
  m <- .m()
  m2 <- list(parameters = m$parameters, buffers = m$buffers,
             to_config = function() list(type = "linear", f = function() 1))
  .expect_refused(ag_save_model(m2, tempfile(fileext = ".st")), "pyggmlr_argument_error",
                  "ag_save_model()", "architecture config must be JSON-serialisable")
  .expect_refused(ag_save_model(m, tempfile(fileext = ".st"), extra = list(f = sum)),
                  "pyggmlr_argument_error", "ag_save_model()", "extra must be JSON-serialisable")
  e <- tryCatch(lr_scheduler_step(optimizer_sgd(list(.w())), 2, gamma = TRUE),
                error = function(e) e)
  expect_s3_class(e, "pyggmlr_value_error")  # ggmlR's text, the constructor's call
  expect_match(conditionMessage(e), "gamma must be a single number, got TRUE", fixed = TRUE)
  expect_identical(as.character(conditionCall(e)[[1L]]), "lr_scheduler_step")
})
