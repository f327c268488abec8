# Optimizers and gradient helpers refuse hostile input as Python does (issue 29): the same class,
# the same words, the same first error. Python's tests/train/test_drift_optim.py has the same cases.

drift_w <- function() ag_param(matrix(1, 2, 2))

drift_refused <- function(expr, cls, text) {
  e <- tryCatch({ expr; NULL }, error = identity)
  expect_s3_class(e, cls)  # nolint: object_usage_linter.
  expect_identical(conditionMessage(e), text)  # nolint: object_usage_linter.
}

test_that("a bad lr is refused and changes nothing", {
  o <- optimizer_sgd(list(drift_w()), lr = 0.5)
  drift_refused(o$lr <- "0.5", "pyggmlr_argument_error",
                'optimizer_sgd: lr must be a single number, got "0.5"')
  drift_refused(o$lr <- 1e400, "pyggmlr_value_error",
                "optimizer_sgd: lr must be a finite number >= 0, got Inf")
  expect_identical(o$lr, 0.5)
  drift_refused(o$accumulate_steps <- "2", "pyggmlr_argument_error",
                'optimizer_sgd: accumulate_steps must be a single number, got "2"')
  expect_identical(o$accumulate_steps, 1L)
})

test_that("optimizer params are refused with ggmlR's texts", {
  msg <- paste0("optimizer_adam: is.list(params) is not TRUE (params must be a list of ",
                "ag_tensors or a model, got %s)")
  drift_refused(optimizer_adam("a"), "pyggmlr_argument_error", sprintf(msg, '"a"'))
  drift_refused(optimizer_adam(3), "pyggmlr_argument_error", sprintf(msg, "3"))
  drift_refused(optimizer_adam(list(a = 3)), "pyggmlr_argument_error",
                "optimizer_adam: parameter 1 is not an ag_tensor")
  drift_refused(optimizer_adam(list(drift_w(), ag_linear(2, 2))), "pyggmlr_argument_error",
                "optimizer_adam: parameter 2 is not an ag_tensor")
})

test_that("gradient helpers refuse as Python's", {
  drift_refused(clip_grad_norm("a", NULL, 1), "pyggmlr_argument_error",
                'clip_grad_norm: params must be a list of ag_tensors, got "a"')
  drift_refused(clip_grad_norm(list(w = 3), NULL, 1), "pyggmlr_argument_error",
                "clip_grad_norm: parameter 'w' is not an ag_tensor")
  # max_norm before grads, with its kind named (it said "max_norm must be a single number")
  drift_refused(clip_grad_norm(list(drift_w()), 3, "a"), "pyggmlr_argument_error",
                "clip_grad_norm: max_norm must be a number, got character")
  drift_refused(clip_grad_value(list(drift_w()), 3, 1), "pyggmlr_argument_error", paste(
    "clip_grad_value: grads must be the environment returned by backward() or NULL, got numeric"))
  drift_refused(clip_grad_value(3, NULL, "a"), "pyggmlr_value_error",
                'clip_grad_value: clip_value must be a single positive finite number, got "a"')
  # a wrong kind of max_abs is an argument error (it was a value error), NaN a bad value
  drift_refused(check_grad_anomaly(list(3), NULL, max_abs = "a"), "pyggmlr_argument_error",
                'check_grad_anomaly: max_abs must be NULL or a single number, got "a"')
  drift_refused(check_grad_anomaly(list(drift_w()), NULL, max_abs = NaN), "pyggmlr_value_error",
                "check_grad_anomaly: max_abs must be NULL or a single number, got NaN")
  expect_identical(check_grad_anomaly(list(drift_w()), NULL, max_abs = Inf)$status, "missing")
})

test_that("schedulers check each argument's kind before the core's ranges, in Python's order", {
  o <- optimizer_sgd(list(drift_w()), lr = 0.1)
  opt_msg <- "optimizer must be an optimizer (optimizer_sgd() or optimizer_adam()), got %s"
  drift_refused(lr_scheduler_step(3, 2), "pyggmlr_argument_error", sprintf(opt_msg, "numeric"))
  drift_refused(lr_scheduler_warmup(drift_w(), 2), "pyggmlr_argument_error",
                sprintf(opt_msg, "an ag_tensor"))
  # a wrong kind read NA and was named by its range ("step_size must be >= 1"); "2" was taken
  drift_refused(lr_scheduler_step(o, "a"), "pyggmlr_value_error",
                'step_size must be a single number, got "a"')
  drift_refused(lr_scheduler_step(o, "2"), "pyggmlr_value_error",
                'step_size must be a single number, got "2"')
  drift_refused(lr_scheduler_step(3, "a", gamma = "b"), "pyggmlr_value_error",
                'gamma must be a single number, got "b"')  # gamma first, then the optimizer
  drift_refused(lr_scheduler_cyclic(o, "a", 0.1), "pyggmlr_value_error",
                'base_lr must be a single number, got "a"')
  drift_refused(lr_scheduler_warmup(o, 5, start_factor = "a"), "pyggmlr_value_error",
                'start_factor must be a single number, got "a"')
  drift_refused(lr_scheduler_cyclic(o, 0.1, 0.2, mode = "saw"), "pyggmlr_value_error", paste0(
    "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, \u201ctriangular2\u201d, ",
    "\u201cexp_range\u201d (mode = \"saw\")"))
  drift_refused(lr_scheduler_onecycle(o, 0.1, 10, anneal_strategy = 1), "pyggmlr_argument_error",
                paste("lr_scheduler_onecycle: 'arg' should be one of",
                      "\u201ccos\u201d, \u201clinear\u201d (anneal_strategy = 1)"))
  expect_identical(o$lr, 0.1)  # a refused schedule set nothing
})

test_that("a list layer (ag_linear) is its parameters for optimizers and the gradient helpers", {
  ggml_set_seed(1)
  l <- ag_linear(4, 3)
  g <- with_grad_tape(backward(ag_sum(l$forward(matrix(1, 4, 2)))))
  expect_identical(length(optimizer_sgd(l)$params), 2L)  # was "parameter 3 is not an ag_tensor"
  expect_equal(clip_grad_norm(l, g, 100), sqrt(60))  # dW: 12 entries of 2, db: 3 of 2
  expect_error(optimizer_adam(list(l$W, "a")), "optimizer_adam: parameter 2 is not an ag_tensor",
               fixed = TRUE, class = "pyggmlr_argument_error")
})

test_that("a missing argument of the gradient helpers is a classed refusal naming the function", {
  w <- ag_param(matrix(1))
  for (call in list(quote(clip_grad_norm(max_norm = 1)), quote(clip_grad_value(clip_value = 1)),
                    quote(check_grad_anomaly()))) {
    e <- tryCatch(eval(call), error = function(e) e)  # R's unclassed "argument ... is missing"
    expect_s3_class(e, "pyggmlr_argument_error")
    expect_identical(conditionMessage(e),
                     sprintf("%s: argument \"params\" is missing, with no default",
                             as.character(call[[1L]])))
  }
  expect_error(clip_grad_norm(list(w)), "^clip_grad_norm: max_norm must be a number, got NULL$",
               class = "pyggmlr_argument_error")
  expect_error(clip_grad_value(list(w)),
               "^clip_grad_value: clip_value must be a single positive finite number, got NULL$",
               class = "pyggmlr_value_error")
})
