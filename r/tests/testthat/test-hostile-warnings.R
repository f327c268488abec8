# A refused call raises its classed condition and nothing else (issue 29): no base-R warning
# ("NAs introduced by coercion to integer range" from as.integer(Inf), 1e19 or 2^31) before or
# instead of the refusal. Python's side is test_hostile_validators.py (tests/hostile), both
# languages' the parity fuzzer test_fuzz_refusal_parity.py (tests/r).

.sgd <- function() optimizer_sgd(list(ag_param(matrix(1, 2, 2))), lr = 0.1)

# the condition of expr, failing on any warning it gives on the way
.refusal <- function(expr) {
  warned <- character()
  e <- tryCatch(withCallingHandlers({ expr; NULL }, warning = function(w) {
    warned <<- c(warned, conditionMessage(w))
    invokeRestart("muffleWarning")
  }), error = function(e) e)
  list(e = e, warned = warned)
}

.expect_quiet_refusal <- function(expr, cls, msg) {
  r <- .refusal(expr)
  lbl <- deparse(substitute(expr))[1L]
  testthat::expect_identical(r$warned, character(), info = lbl)
  testthat::expect_true(inherits(r$e, cls),
                        info = paste(lbl, ":", paste(class(r$e), collapse = "/")))
  testthat::expect_identical(conditionMessage(r$e), msg, info = lbl)
}

# the values as.integer() warned on, and the other hostile ones
HOSTILE_NUM <- list(Inf, -Inf, NaN, NA, NA_integer_, NA_real_, 1e19, 2^31, -2^31)

test_that("a scheduler's count past R's integers is refused with ggmlR's text, no warning", {
  cases <- list(  # (call with v for the count, the argument, its range text)
    list(quote(lr_scheduler_step(.sgd(), step_size = v)), "step_size", ">= 1"),
    list(quote(lr_scheduler_cosine(.sgd(), T_max = v)), "T_max", ">= 1"),
    list(quote(lr_scheduler_cyclic(.sgd(), 0.1, 1, step_size_up = v)), "step_size_up", ">= 1"),
    list(quote(lr_scheduler_cyclic(.sgd(), 0.1, 1, step_size_down = v)), "step_size_down",
         ">= 1"),
    list(quote(lr_scheduler_onecycle(.sgd(), 0.1, total_steps = v)), "total_steps", ">= 2"),
    list(quote(lr_scheduler_warmup_cosine(.sgd(), warmup_steps = v, total_steps = 4)),
         "warmup_steps", ">= 0"),
    list(quote(lr_scheduler_warmup_cosine(.sgd(), warmup_steps = 1, total_steps = v)),
         "total_steps", "> warmup_steps"),
    list(quote(lr_scheduler_warmup(.sgd(), warmup_steps = v)), "warmup_steps", ">= 1"))
  for (cs in cases) for (v in HOSTILE_NUM) {
    # a logical NA is no number (Python's None): the kind is checked first
    msg <- if (is.logical(v)) paste(cs[[2L]], "must be a single number, got NA")
           else paste(cs[[2L]], "must be", cs[[3L]])
    .expect_quiet_refusal(eval(cs[[1L]], list(v = v)), "pyggmlr_value_error", msg)
  }
  # a whole number in range still counts, truncated as ggmlR's as.integer
  expect_identical(lr_scheduler_step(.sgd(), step_size = 2.9)$step_size, 2L)
  expect_identical(lr_scheduler_cosine(.sgd(), T_max = .Machine$integer.max)$T_max,
                   .Machine$integer.max)
})

test_that("dp_train's verbose: Inf is a classed bad value, not a warning and an unclassed error", {
  make <- function() ag_sequential(ag_linear(2, 2))
  data <- list(matrix(0, 2, 1))
  loss <- function(o, s) ag_sum(o)
  for (v in list(Inf, -Inf, NaN, NA_real_))
    .expect_quiet_refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L, verbose = v),
                          "pyggmlr_value_error", paste0(
                            "dp_train: verbose must be TRUE/FALSE or an integer, got ",
                            deparse(v)))
  .expect_quiet_refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L, verbose = "x"),
                        "pyggmlr_argument_error",
                        "dp_train: verbose must be TRUE/FALSE or an integer, got \"x\"")
  .expect_quiet_refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L, verbose = NA),
                        "pyggmlr_argument_error",
                        "dp_train: verbose must be TRUE/FALSE or an integer, got NA")
  # past R's integers: every iteration's line is at most that far apart (no warning)
  out <- capture.output(r <- .refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L,
                                                verbose = 1e19)))
  expect_identical(r$warned, character())
  expect_null(r$e)
  expect_identical(out, "[dp_train] iter    1 / 1  loss = 0.000000")
  # the callbacks' kind names what came, as Python's (it said no more than "or NULL")
  for (nm in c("loss_fn", "forward_fn", "target_fn"))
    .expect_quiet_refusal(do.call(dp_train, c(list(make, data, n_iter = 1L),
                                              setNames(list("x"), nm))),
                          "pyggmlr_argument_error",
                          paste0("dp_train: ", nm, " must be a function or NULL, got character"))
})

# plausible arguments of public calls taking numbers; each replaced by each hostile value: a
# refusal must be classed and come without a warning
.ROWS <- list(
  list(lr_scheduler_step, list(optimizer = quote(.sgd()), step_size = 2, gamma = 0.5)),
  list(lr_scheduler_cosine, list(optimizer = quote(.sgd()), T_max = 4, lr_min = 0, T_mult = 1)),
  list(lr_scheduler_cyclic, list(optimizer = quote(.sgd()), base_lr = 0.1, max_lr = 1,
                                 step_size_up = 2, step_size_down = 2, gamma = 1)),
  list(lr_scheduler_onecycle, list(optimizer = quote(.sgd()), max_lr = 0.1, total_steps = 10,
                                   pct_start = 0.3, div_factor = 25, final_div_factor = 1e4)),
  list(lr_scheduler_warmup_cosine, list(optimizer = quote(.sgd()), warmup_steps = 1,
                                        total_steps = 4, lr_min = 0)),
  list(lr_scheduler_warmup, list(optimizer = quote(.sgd()), warmup_steps = 2, start_factor = 0)),
  list(ag_conv2d, list(in_channels = 1, out_channels = 2, kernel_size = 3, stride = 1,
                       padding = 0, dilation = 1, groups = 1)),
  list(ag_conv_transpose1d, list(in_channels = 1, out_channels = 2, kernel_size = 3, stride = 1,
                                 padding = 0, output_padding = 0, groups = 1, dilation = 1)),
  list(ag_max_pool2d, list(kernel_size = 2, stride = 1, padding = 0)),
  list(ag_avg_pool1d, list(kernel_size = 2, stride = 1, padding = 0)),
  list(ag_pad2d, list(padding = 1, value = 0)),
  list(ag_upsample1d, list(scale_factor = 2)),
  list(ag_lstm, list(input_size = 2, hidden_size = 3, num_layers = 1, dropout = 0)),
  list(ag_rnn, list(input_size = 2, hidden_size = 3, num_layers = 1, dropout = 0)),
  list(ag_linear, list(in_features = 2, out_features = 3, gain = 1)),
  list(ag_flash_attention, list(q = quote(ag_tensor(matrix(1, 4, 3))),
                                k = quote(ag_tensor(matrix(1, 4, 3))),
                                v = quote(ag_tensor(matrix(1, 4, 3))), n_heads = 2, scale = 0.5)),
  list(ag_gradcheck, list(fn = quote(function(d) ag_sum(d$w)),
                          inputs = quote(list(w = ag_param(matrix(1, 2, 2)))), eps = 1e-3,
                          atol = 1e-2, rtol = 1e-2, quiet = TRUE)),
  list(clip_grad_value, list(params = quote(list(ag_param(matrix(1, 2, 2)))), clip_value = 1)),
  list(ag_tape_memory, list(top = 10, quiet = TRUE)),
  list(ag_set_threads, list(n = 1)),
  list(ag_estimate_training_memory, list(model = quote(ag_sequential(ag_linear(2, 3))),
                                         input_shape = 2, batch_size = 2, quiet = TRUE)),
  list(dp_train, list(make_model = quote(function() ag_sequential(ag_linear(2, 2))),
                      data = quote(list(matrix(0, 2, 1))),
                      loss_fn = quote(function(o, s) ag_sum(o)), n_replicas = 1, n_iter = 1,
                      lr = 0.01, max_norm = 1, verbose = FALSE))
)

test_that("no public call taking numbers warns before refusing a hostile value", {
  hostile <- c(HOSTILE_NUM, list("x", TRUE, quote(c(1, 2)), quote(list(1))))
  n <- 0L
  bad <- character()
  threads <- ag_get_threads()
  on.exit(ag_set_threads(threads))
  for (i in seq_along(.ROWS)) for (a in names(.ROWS[[i]][[2L]])) for (v in hostile) {
    args <- .ROWS[[i]][[2L]]
    args[a] <- list(v)
    out <- capture.output(r <- .refusal(eval(as.call(c(.ROWS[[i]][[1L]], args)))))
    ag_set_threads(threads)
    n <- n + 1L
    lbl <- sprintf("row %d: %s = %s", i, a, paste(deparse(v), collapse = ""))
    if (length(r$warned)) bad <- c(bad, paste(lbl, "warned:", r$warned[[1L]]))
    if (!is.null(r$e) && !inherits(r$e, "pyggmlr_error"))
      bad <- c(bad, paste(lbl, "unclassed:", conditionMessage(r$e)))
  }
  expect_identical(bad, character())
  expect_gt(n, 1000L)
})

test_that("ag_estimate_training_memory's input_shape past R's integers is a classed bad value", {
  m <- ag_sequential(ag_linear(2, 3))
  rule <- paste0("ag_estimate_training_memory(): input_shape must be c(features) or ",
                 "c(features, batch) with positive whole numbers, got ")
  for (v in list(Inf, 1e19, 2^31, NaN, quote(c(2, 2^31))))
    .expect_quiet_refusal(eval(bquote(ag_estimate_training_memory(model = m, input_shape = .(v),
                                                                  batch_size = 2, quiet = TRUE))),
                          "pyggmlr_value_error", paste0(rule, deparse(eval(v))))
})

test_that("dp_train's max_norm and make_model, padding and input_shape lists refused as Python's", {
  data <- list(matrix(0, 2, 1))
  loss <- function(o, s) ag_sum(o)
  make <- function() ag_linear(2, 2)
  .expect_quiet_refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L, max_norm = -1),
                        "pyggmlr_value_error",
                        "dp_train: max_norm must be >= 0 (Inf: no clipping), got -1")
  .expect_quiet_refusal(dp_train(make, data, loss_fn = loss, n_iter = 1L, max_norm = "x"),
                        "pyggmlr_argument_error", "dp_train: max_norm must be a number, got \"x\"")
  .expect_quiet_refusal(dp_train(NULL, data, loss_fn = loss, n_iter = 1L),
                        "pyggmlr_argument_error",
                        "dp_train: make_model must be a function returning a model, got NULL")
  # a named list is Python's dict: refused (it was unlisted and taken as numbers)
  .expect_quiet_refusal(ag_pad1d(list(a = 1)), "pyggmlr_argument_error", paste(
    "ag_pad1d: padding must be a number or a pair c(left, right) of numbers, got list(a = 1)"))
  expect_identical(ag_pad1d(list(1, 2))$padding, c(1L, 2L))
  rule <- paste0("ag_estimate_training_memory(): input_shape must be c(features) or ",
                 "c(features, batch) with positive whole numbers, got ")
  m <- ag_sequential(ag_linear(2, 3))
  .expect_quiet_refusal(ag_estimate_training_memory(model = m, input_shape = TRUE, quiet = TRUE),
                        "pyggmlr_value_error", paste0(rule, "TRUE"))
  .expect_quiet_refusal(ag_estimate_training_memory(model = m, input_shape = list(a = 2),
                                                    quiet = TRUE),
                        "pyggmlr_value_error", paste0(rule, "list(a = 2)"))
})

test_that("ag_slice_rows' from and n are in R's integer range at both ends", {
  x <- ag_tensor(matrix(1, 2, 2))
  .expect_quiet_refusal(ag_slice_rows(x, -1e300, 1), "pyggmlr_value_error",
                        "ag_slice_rows: from must be an integer >= -2147483647, got -1e+300")
  .expect_quiet_refusal(ag_slice_rows(x, 0, -Inf), "pyggmlr_value_error",
                        "ag_slice_rows: n must be an integer >= -2147483647, got -Inf")
  expect_equal(ag_slice_rows(x, 1, 1)$data, matrix(1, 1, 2))
})

test_that("ag_gradcheck's eps, atol and rtol name the class given, as Python's type", {
  f <- function(d) ag_sum(d$w)
  inp <- list(w = ag_param(matrix(1, 2, 2)))
  .expect_quiet_refusal(ag_gradcheck(f, inp, eps = "x"), "pyggmlr_argument_error",
                        "ag_gradcheck(): eps must be a single number or NULL, got character")
  .expect_quiet_refusal(ag_gradcheck(f, inp, rtol = c(1, 2)), "pyggmlr_argument_error",
                        "ag_gradcheck(): rtol must be a single number or NULL, got numeric")
})
