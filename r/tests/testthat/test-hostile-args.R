# Hostile and careless arguments (issue 19): each refused with a classed condition whose message
# names the function and the argument, or documented behaviour asserted here (docs/reliability.md,
# "## Arguments"); the same cases as tests/hostile/test_hostile_args.py.

.w <- function() ag_param(matrix(1, 2, 2))
.o <- function() optimizer_sgd(list(.w()))
.m <- function() { set.seed(1); ag_sequential(ag_linear(2, 3)) }
X4 <- matrix(1, 2, 4)
.fit <- function(model = .m(), x = X4, y = matrix(1, 3, 4), ...)
  ag_fit(model, x, y, loss = "mse", silent = TRUE, ...)

# label = list(expr, class, function named, argument named)
.cases <- list(
  "adam lr Inf" = list(quote(optimizer_adam(list(.w()), lr = Inf)), "pyggmlr_value_error",
                       "optimizer_adam", "lr"),
  "adam lr NaN" = list(quote(optimizer_adam(list(.w()), lr = NaN)), "pyggmlr_value_error",
                       "optimizer_adam", "lr"),
  "adam lr < 0" = list(quote(optimizer_adam(list(.w()), lr = -1)), "pyggmlr_value_error",
                       "optimizer_adam", "lr"),
  "adam beta1 1" = list(quote(optimizer_adam(list(.w()), beta1 = 1)), "pyggmlr_value_error",
                        "optimizer_adam", "beta1"),
  "adam eps 0" = list(quote(optimizer_adam(list(.w()), eps = 0)), "pyggmlr_value_error",
                      "optimizer_adam", "eps"),
  "adam weight_decay < 0" = list(quote(optimizer_adam(list(.w()), weight_decay = -1)),
                                 "pyggmlr_value_error",
                                 "optimizer_adam", "weight_decay"),
  "sgd momentum 2" = list(quote(optimizer_sgd(list(.w()), momentum = 2)), "pyggmlr_value_error",
                          "optimizer_sgd", "momentum"),
  "opt$lr <- Inf" = list(quote({ o <- .o(); o$lr <- Inf }), "pyggmlr_value_error", "optimizer_sgd",
                         "lr"),
  "ag_clamp lo NaN" = list(quote(ag_clamp(ag_tensor(matrix(1)), NaN, 1)), "pyggmlr_value_error",
                           "ag_clamp", "lo"),
  "ag_clamp lo > hi" = list(quote(ag_clamp(ag_tensor(matrix(1)), 2, 1)), "pyggmlr_value_error",
                            "ag_clamp", "lo"),
  "dropout -1" = list(quote(ag_dropout(-1)), "pyggmlr_value_error", "ag_dropout", "rate"),
  "mha dropout 1" = list(quote(ag_multihead_attention(4, 2, dropout = 1)), "pyggmlr_value_error",
                         "ag_multihead_attention", "dropout"),
  "activation_frac -1" = list(quote(ag_estimate_training_memory(list(c(4, 4)), activation_frac = -1,
      quiet = TRUE)),
                              "pyggmlr_value_error", "ag_estimate_training_memory",
                              "activation_frac"),
  "patience 1e12" = list(quote(ag_early_stopping(patience = 1e12)), "pyggmlr_value_error",
                         "ag_early_stopping", "patience"),
  "patience -1" = list(quote(ag_early_stopping(patience = -1)), "pyggmlr_value_error",
                       "ag_early_stopping", "patience"),
  "patience 'a'" = list(quote(ag_early_stopping(patience = "a")), "pyggmlr_argument_error",
                        "ag_early_stopping", "patience"),
  "min_delta NaN" = list(quote(ag_early_stopping(min_delta = NaN)), "pyggmlr_value_error",
                         "ag_early_stopping", "min_delta"),
  "step_size 0" = list(quote(lr_scheduler_step(.o(), 0)), "error", "lr_scheduler_step",
                       "step_size"),
  "step gamma 0" = list(quote(lr_scheduler_step(.o(), 2, gamma = 0)), "pyggmlr_value_error",
                        "lr_scheduler_step", "gamma"),
  "cosine T_max 0" = list(quote(lr_scheduler_cosine(.o(), 0)), "error", "lr_scheduler_cosine",
                          "T_max"),
  "cosine restart 'yes'" = list(quote(lr_scheduler_cosine(.o(), 4, restart = "yes")),
                                "pyggmlr_argument_error", "lr_scheduler_cosine", "restart"),
  "onecycle cycle_momentum NA" = list(quote(lr_scheduler_onecycle(.o(), 0.1, 10,
                                                                 cycle_momentum = NA)),
                                      "pyggmlr_argument_error", "lr_scheduler_onecycle",
                                      "cycle_momentum"),
  "onecycle div_factor 0" = list(quote(lr_scheduler_onecycle(.o(), 0.1, 10, div_factor = 0)),
                                 "pyggmlr_value_error",
                                 "lr_scheduler_onecycle", "div_factor"),
  "scheduler on a tensor" = list(quote(lr_scheduler_step(.w(), 2)), "pyggmlr_argument_error",
                                 "lr_scheduler_step", "optimizer"),
  "clip max_norm NaN" = list(quote(clip_grad_norm(list(.w()), max_norm = NaN)),
                             "pyggmlr_value_error", "clip_grad_norm", "max_norm"),
  "gradcheck eps 0" = list(quote(ag_gradcheck(function(i) ag_sum(i$W), list(W = .w()), eps = 0,
                                              quiet = TRUE)),
                           "error", "ag_gradcheck", "eps"),
  "linear gain NaN" = list(quote(ag_linear(2, 3, gain = NaN)), "error", "ag_linear", "gain"),
  "batch_norm eps Inf" = list(quote(ag_batch_norm(3, eps = Inf)), "pyggmlr_value_error",
                              "ag_batch_norm", "eps"),
  "layer_norm eps NaN" = list(quote(ag_layer_norm(3, eps = NaN)), "pyggmlr_value_error",
                              "ag_layer_norm", "eps"),
  "predict batch_size 0" = list(quote(ag_predict(.m(), X4, batch_size = 0)), "pyggmlr_value_error",
                                "ag_predict", "batch_size"),
  "fit batch_size 2.7" = list(quote(ag_fit(.m(), X4, matrix(1, 3, 4), loss = "mse",
                                           batch_size = 2.7, silent = TRUE)),
                              "pyggmlr_value_error", "ag_fit", "batch_size"),
  "fit nepoch 2.5" = list(quote(ag_fit(.m(), X4, matrix(1, 3, 4), loss = "mse", nepoch = 2.5,
                                       silent = TRUE)),
                          "pyggmlr_value_error", "ag_fit", "nepoch"),
  "reshape 2.5" = list(quote(ag_reshape(ag_tensor(matrix(1, 2, 2)), 2.5, -1)),
                       "pyggmlr_value_error", "ag_reshape", "nrow"),
  "linear 2.5" = list(quote(ag_linear(2.5, 3)), "pyggmlr_value_error", "ag_linear", "in_features"),
  "linear factor" = list(quote(ag_linear(factor(3), 3)), "pyggmlr_argument_error", "ag_linear",
                         "in_features"),
  "linear c(2, 3)" = list(quote(ag_linear(c(2, 3), 3)), "pyggmlr_argument_error", "ag_linear",
                          "in_features"),
  "linear array" = list(quote(ag_linear(array(2, c(1, 1, 1)), 3)), "pyggmlr_argument_error",
                        "ag_linear", "in_features"),
  "linear 1e10" = list(quote(ag_linear(1e10, 3)), "pyggmlr_value_error", "ag_linear",
                       "in_features"),
  "embedding ids 1.5" = list(quote(ag_embedding(5, 3)$forward(1.5)), "pyggmlr_value_error",
                             "ag_embedding", "ids"),
  "embedding ids TRUE" = list(quote(ag_embedding(5, 3)$forward(TRUE)), "pyggmlr_argument_error",
                              "ag_embedding", "ids"),
  "embedding ids 0.9" = list(quote(ag_embedding(5, 3)$forward(0.9)), "pyggmlr_value_error",
                             "ag_embedding", "ids"),
  "embedding ids factor" = list(quote(ag_embedding(5, 3)$forward(factor("a"))),
                                "pyggmlr_argument_error", "ag_embedding", "ids"),
  "CE logical ids" = list(quote(ag_softmax_cross_entropy_loss(ag_tensor(matrix(1, 3, 2)),
      c(TRUE, FALSE))),
                          "pyggmlr_argument_error", "ag_softmax_cross_entropy_loss", "class ids"),
  "CE negative ids" = list(quote(ag_softmax_cross_entropy_loss(ag_tensor(matrix(1, 3, 2)),
      c(-1, 0))),
                           "pyggmlr_value_error", "ag_softmax_cross_entropy_loss", "class id"),
  "dataloader col_major 'no'" = list(quote(ag_dataloader(X4, batch_size = 2, col_major = "no")),
                                     "pyggmlr_argument_error",
                                     "ag_dataloader", "col_major"),
  "dataloader 3-D" = list(quote(ag_dataloader(array(1, c(2, 4, 3)), batch_size = 2)),
                          "pyggmlr_shape_error", "ag_dataloader", "x"),
  "dataloader batch_size 2.7" = list(quote(ag_dataloader(X4, batch_size = 2.7)),
                                     "pyggmlr_value_error", "ag_dataloader", "batch_size"),
  "dataloader ragged list" = list(quote(ag_dataloader(list(1:2, 3), batch_size = 1)),
                                  "pyggmlr_argument_error", "ag_dataloader", "x"),
  "mha 5 heads 2" = list(quote(ag_multihead_attention(5, 2)), "pyggmlr_value_error",
                         "ag_multihead_attention", "n_heads"),
  "empty sequential" = list(quote(ag_sequential()), "pyggmlr_argument_error", "ag_sequential",
                            "layer"),
  "builder returns 42" = list(quote({ ag_register_layer("hostile_42", function(cfg) 42)
                                      ag_module_from_config(list(type = "hostile_42")) }),
                              "pyggmlr_argument_error", "ag_module_from_config", "builder"),
  "accuracy id 7 of 3" = list(quote(ag_accuracy(.m(), X4, c(0, 1, 7, 2))), "pyggmlr_value_error",
                              "ag_accuracy", "y"),
  "accuracy id -1" = list(quote(ag_accuracy(.m(), X4, c(0, 1, -1, 2))), "pyggmlr_value_error",
                          "ag_accuracy", "y"),
  "accuracy logical" = list(quote(ag_accuracy(.m(), X4, rep(TRUE, 4))), "pyggmlr_argument_error",
                            "ag_accuracy", "y"),
  "accuracy id 0.5" = list(quote(ag_accuracy(.m(), X4, c(0, 1, 0.5, 2))), "pyggmlr_value_error",
                           "ag_accuracy", "y"),
  "fit shuffle 'no'" = list(quote(ag_fit(.m(), X4, matrix(1, 3, 4), loss = "mse", shuffle = "no",
                                         silent = TRUE)),
                            "pyggmlr_argument_error", "ag_fit", "shuffle"),
  "predict ragged list" = list(quote(ag_predict(.m(), list(1:2, 3))), "error", "ag_predict", "x"),
  "slice_rows 1.5" = list(quote(ag_slice_rows(ag_tensor(matrix(1, 3, 2)), 1.5, 1)),
                          "pyggmlr_value_error", "ag_slice_rows", "from"),
  "tape_memory top 1.5" = list(quote(ag_tape_memory(top = 1.5, quiet = TRUE)),
                               "pyggmlr_value_error", "ag_tape_memory", "top"),
  "estimate batch_size 2.5" = list(quote(ag_estimate_training_memory(list(c(4, 4)),
      batch_size = 2.5, quiet = TRUE)),
                                   "pyggmlr_value_error", "ag_estimate_training_memory",
                                   "batch_size"),
  # issue 29: the class Python gives too (test_hostile_args.py; tests/parity/cases_errors.py)
  "fit batch_size 'a'" = list(quote(.fit(batch_size = "a")), "pyggmlr_argument_error", "ag_fit",
                              "batch_size"),
  "fit model 3" = list(quote(.fit(model = 3)), "pyggmlr_argument_error", "ag_fit",
                       "model must have parameters()"),
  "fit callbacks 3" = list(quote(.fit(callbacks = 3)), "pyggmlr_argument_error", "ag_fit",
                           "callbacks"),
  "fit x 3-D" = list(quote(.fit(x = array(1, c(2, 2, 4)))), "pyggmlr_shape_error", "ag_fit",
                     "x must be"),
  "fit y samples" = list(quote(.fit(y = matrix(1, 3, 3))), "pyggmlr_shape_error", "ag_fit",
                         "samples"),
  "estimate shapes list()" = list(quote(ag_estimate_training_memory(list(), quiet = TRUE)),
                                  "pyggmlr_value_error", "ag_estimate_training_memory",
                                  "`shapes`"),
  "estimate dtype 'x'" = list(quote(ag_estimate_training_memory(list(c(4, 4)), dtype = "x",
                                                                quiet = TRUE)),
                              "pyggmlr_dtype_error", "ag_estimate_training_memory", "dtype"),
  "dataloader drop_last 1" = list(quote(ag_dataloader(X4, drop_last = 1)),
                                  "pyggmlr_argument_error", "ag_dataloader", "drop_last"),
  "dataloader exhausted" = list(quote({ dl <- ag_dataloader(X4, batch_size = 4); dl$next_batch()
    dl$next_batch() }), "pyggmlr_state_error", "ag_dataloader", "reset()"),
  "estimate loss_fn 3" = list(quote(ag_estimate_training_memory(model = .m(), x = X4, loss_fn = 3,
                                                                quiet = TRUE)),
                              "pyggmlr_argument_error", "ag_estimate_training_memory",
                              "loss_fn must be a function"),
  "mha q rows" = list(quote(ag_multihead_attention(4, 2)$forward(matrix(0, 3, 5))),
                      "pyggmlr_shape_error", "ag_multihead_attention", "d_model")
)

test_that(paste0("hostile arguments are refused with a classed condition naming the function and ",
                 "the argument"), {
  for (label in names(.cases)) {
    cs <- .cases[[label]]
    e <- tryCatch({ eval(cs[[1L]]); NULL }, error = function(e) e)
    expect_true(inherits(e, "error"), info = label)
    if (is.null(e)) next
    expect_true(inherits(e, cs[[2L]]), info = paste(label, ":", paste(class(e), collapse = "/")))
    # the function is named in the message, or (schedulers, as ggmlR) by the condition's call
    where <- paste(conditionMessage(e), paste(deparse(conditionCall(e)), collapse = " "))
    expect_true(grepl(cs[[3L]], where, fixed = TRUE), info = paste(label, ":", where))
    expect_true(grepl(cs[[4L]], conditionMessage(e), fixed = TRUE),
                info = paste(label, ":", conditionMessage(e)))
  }
})

test_that("a step without any gradient is an error and counts nothing", {
  W <- .w()
  for (o in list(optimizer_adam(list(W)), optimizer_sgd(list(W), momentum = 0.9))) {
    expect_error(o$step(), class = "pyggmlr_state_error",
                 regexp = "step\\(\\): no gradient for any of its 1 parameter")
    expect_identical(o$accum_count, 0L)
  }
  expect_identical(optimizer_adam(list(W))$t, 0L)
  expect_equal(W$data, matrix(1, 2, 2))
  # another model's gradients (a map without this optimizer's parameters)
  other <- ag_param(matrix(1, 3, 1))
  g <- with_grad_tape(backward(ag_sum(other)))
  o <- optimizer_sgd(list(W))
  expect_error(o$step(g), class = "pyggmlr_state_error")
  expect_error(o$step(g, sum_grads = TRUE), class = "pyggmlr_state_error")
  expect_equal(W$data, matrix(1, 2, 2))
})

test_that("ag_fit with another model's optimizer is an error and changes nothing", {
  m <- .m()
  other <- ag_linear(2, 3)
  before <- lapply(m$parameters(), function(p) p$data)
  o <- optimizer_adam(other$params())
  # refused before training (it was the first step's "no gradient for any" state error)
  for (static in list(NULL, FALSE)) for (nbl in c(2L, 4L))
    expect_error(ag_fit(m, X4, matrix(1, 3, 4), loss = "mse", optimizer = o, batch_size = 2L,
                        nbatch_logical = nbl, nepoch = 1L, silent = TRUE, static = static),
                 "the optimizer updates none of the model's", class = "pyggmlr_value_error")
  expect_identical(o$t, 0L)
  expect_identical(lapply(m$parameters(), function(p) p$data), before)
})

test_that("gradients for some parameters are a step; counting calls read nothing", {
  W <- .w()
  b <- ag_param(matrix(1, 2, 1))
  o <- optimizer_sgd(list(W = W, b = b), lr = 0.5)
  W$grad <- matrix(2, 2, 2)
  expect_true(o$step())
  expect_equal(W$data, matrix(0, 2, 2))
  expect_equal(b$data, matrix(1, 2, 1))
  a <- optimizer_adam(list(.w()), accumulate_steps = 2L)
  expect_false(a$step())
  expect_error(a$step(), class = "pyggmlr_state_error")
  expect_identical(c(a$t, a$accum_count), c(0L, 1L))
})

test_that("negative second moments in a loaded state are refused before anything is written", {
  W <- .w()
  o <- optimizer_adam(list(W))
  W$grad <- matrix(1, 2, 2)
  o$step()
  st <- o$state()
  m0 <- o$m
  v0 <- o$v
  st$slots$v[[1L]] <- -matrix(1, 2, 2)
  expect_error(o$load_state(st), class = "pyggmlr_value_error",
               regexp = "slot 'v' of parameter 1 has a negative entry")
  expect_identical(o$m, m0)
  expect_identical(o$v, v0)
})

test_that("documented coercions from the ggmlR spec: the seed and accumulate_steps are truncated", {
  expect_identical(ggml_set_seed(1.5), 1L)
  a <- runif(3)
  set.seed(1)
  expect_identical(a, runif(3))
  expect_identical(optimizer_sgd(list(.w()), accumulate_steps = 1.9)$accumulate_steps, 1L)
  set.seed(3)
  a <- runif(2.5)
  set.seed(3)
  expect_identical(a, runif(2))
  # the spec's isTRUE flags: anything but TRUE is FALSE (Python does the same)
  expect_false(ag_layer_norm(3, elementwise_affine = "no")$elementwise_affine)
  expect_null(ag_multihead_attention(4, 2, bias = "yes")$b_o)
  expect_false(optimizer_adam(list(.w()), average = "no")$average)
})

test_that(paste0("a small fuzzer: every argument replaced by each hostile value gives an error ",
                 "naming the function"), {
  hostile <- list(NULL, "x", TRUE, 2.5, -1, NaN, Inf, 1e19, list(1, list(2)), c(1, 2), factor("a"),
                  array(1, c(1, 1, 1)), NA)
  W <- ag_param(matrix(1, 2, 2))
  t2 <- ag_tensor(matrix(1, 2, 2))
  calls <- list(
    ag_linear = list(in_features = 2, out_features = 3, gain = 1),
    ag_batch_norm = list(num_features = 2, eps = 1e-5, momentum = 0.1),
    ag_embedding = list(vocab_size = 4, dim = 2),
    ag_multihead_attention = list(d_model = 4, n_heads = 2, dropout = 0),
    ag_dropout = list(rate = 0.1),
    ag_slice_rows = list(x = t2, from = 0, n = 1),
    ag_reshape = list(x = t2, nrow = 4, ncol = 1),
    ag_clamp = list(x = t2, lo = 0, hi = 1),
    optimizer_sgd = list(params = list(W), lr = 0.1, momentum = 0.5, weight_decay = 0),
    optimizer_adam = list(params = list(W), lr = 0.1, beta1 = 0.9, beta2 = 0.99, eps = 1e-8),
    clip_grad_norm = list(params = list(W), max_norm = 1),
    lr_scheduler_step = list(optimizer = optimizer_sgd(list(W)), step_size = 2, gamma = 0.5),
    lr_scheduler_onecycle = list(optimizer = optimizer_sgd(list(W)), max_lr = 0.1, total_steps = 10,
                                 pct_start = 0.3),
    ag_early_stopping = list(patience = 2, min_delta = 0),
    ag_dataloader = list(x = matrix(1, 2, 4), batch_size = 2, shuffle = FALSE, col_major = TRUE),
    ag_predict = list(model = ag_sequential(ag_linear(2, 3)), x = matrix(1, 2, 4), batch_size = 2),
    ag_estimate_training_memory = list(shapes = list(c(2, 2)), batch_size = 2,
                                       activation_frac = 0.01, quiet = TRUE),
    ag_tape_memory = list(top = 1, quiet = TRUE))
  spec_texts <- "is.list\\(params\\) is not TRUE|is not an ag_tensor|^ggmlR: "  # ggmlR's own texts
  n <- 0L
  for (fn in names(calls)) for (arg in names(calls[[fn]])) for (bad in hostile) {
    kw <- calls[[fn]]
    if (is.null(bad)) kw[arg] <- list(NULL) else kw[[arg]] <- bad
    e <- tryCatch({ suppressWarnings(do.call(fn, kw)); NULL }, error = function(e) e)
    n <- n + 1L
    if (is.null(e) || inherits(e, "pyggmlr_error") || grepl(spec_texts, conditionMessage(e))) next
    where <- paste(conditionMessage(e), paste(deparse(conditionCall(e)), collapse = " "))
    expect_true(grepl(fn, where, fixed = TRUE),
                info = sprintf("%s(%s = %s): %s", fn, arg, deparse(bad)[1L], where))
  }
  expect_gt(n, 600L)
})

test_that("core errors are classed by their status, as Python's exception types", {
  a <- ag_tensor(matrix(1, 2, 3))
  b <- ag_tensor(matrix(1, 4, 5))
  expect_error(ag_matmul(a, b), class = "pyggmlr_shape_error")
  expect_error(ag_matmul(a, b), class = "pyggmlr_error")
  expect_error(ag_clamp(a, 2, 1), class = "pyggmlr_value_error")
  e <- tryCatch(ag_matmul(a, b), error = function(e) e)
  expect_null(conditionCall(e))  # no call, as before
  expect_match(conditionMessage(e), "ag_matmul")
})

test_that(paste0("a NaN scalar passes to the core as in Python (x * NaN is NaN); NA and a NaN ",
                 "clamp bound are refused"), {
  x <- ag_tensor(matrix(c(1, 2), 1, 2))
  expect_true(all(is.nan(ag_scale(x, NaN)$data)))
  expect_identical(ag_pow(x, NaN)$data, matrix(c(1, NaN), 1, 2))  # IEEE pow(1, NaN) is 1, as Python
  expect_error(ag_scale(x, NA), "ag_scale: 'scalar' must be a single number", fixed = TRUE)
  expect_error(ag_clamp(x, NaN, 1), class = "pyggmlr_value_error")
})

test_that("the core's messages count positions from 1 in R (Python's count from 0)", {
  expect_error(ag_softmax_cross_entropy_loss(ag_tensor(matrix(0, 3, 2)), c(0, 3)),
               "class id 3 at position 2 is out of range [0, 3)", fixed = TRUE)
  expect_error(ag_embedding(4, 2)$forward(c(0, 1, 4)), "id 4 at position 3", fixed = TRUE)
  m <- ag_sequential(ag_linear(2, 3))
  expect_error(ag_accuracy(m, matrix(0, 2, 2), c(0, 5)), "got 5 at position 2", fixed = TRUE)
})

test_that("dtype and device errors are classed, as Python's DTypeError and DeviceError", {
  expect_error(ag_tensor(1, dtype = "f16"), class = "pyggmlr_dtype_error",
               regexp = "not supported by the CPU engine")
  expect_error(ag_tensor(1, dtype = "int8"), class = "pyggmlr_dtype_error")
  expect_error(ag_tensor(1, device = "gpu"), class = "pyggmlr_device_error",
               regexp = "No ggml backend available")
  expect_error(ag_param(1, device = "tpu"), class = "pyggmlr_value_error",
               regexp = "ag_param(): device must be", fixed = TRUE)
})
