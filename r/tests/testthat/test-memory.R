test_that("ag_estimate_training_memory: formulas, errors, print", {
  # ggmlR's numbers are R doubles: f64 here (f32, the default, halves them: test-robjects.R)
  r <- ag_estimate_training_memory(list(c(100, 100)), quiet = TRUE, dtype = "f64")
  expect_equal(c(r$params, r$weights, r$gradients, r$optimizer, r$activations, r$total),
               c(10000, 80000, 80000, 160000, 25600, 345600))
  expect_equal(ag_estimate_training_memory(list(c(10, 10), c(10, 10), c(10)), quiet = TRUE)$params,
               210)
  expect_equal(ag_estimate_training_memory(c(10, 10), quiet = TRUE)$params, 100)
  expect_match(r$note, "double")
  expect_error(ag_estimate_training_memory(list()), "non-empty")
  expect_error(ag_estimate_training_memory(list(c(-1, 4))), "positive")
  expect_error(ag_estimate_training_memory(list(c(4, NA))), "positive")
  expect_error(ag_estimate_training_memory(list(c(4, 4)), optimizer = "rmsprop"))
  out <- capture.output(ag_estimate_training_memory(rep(list(c(512, 512)), 3), batch_size = 64,
                                                    dtype = "f64"))
  expect_equal(out[2], "  parameters      : 786 432")
  expect_equal(out[7], "  total           :    27.84 MB")
})

test_that("ag_estimate_training_memory: the shapes rule and texts are the core's (as Python's)", {
  fn <- "ag_estimate_training_memory(): "
  rule <- paste0(fn, "each shape must be a vector of positive dimensions; ")
  empty <- paste0(fn, "`shapes` must be a non-empty list of dimension vectors (or give model ",
                  "and x)")
  for (s in list(list(), NULL, "a"))
    expect_error(ag_estimate_training_memory(s, quiet = TRUE), empty, fixed = TRUE,
                 class = "pyggmlr_value_error")
  bad <- list(list(list(c(2, 2), c(4, -1)), "shape 2 has -1 at position 2"),
              list(list(Inf), "shape 1 has Inf at position 1"),
              list(list(c(4, NA)), "shape 1 has NA at position 2"),  # R's NA, as R prints it
              list(list(c(4, 4), "ab"), "shape 2 is not numeric"),
              list(list(c(TRUE, TRUE)), "shape 1 is not numeric"),
              list(list(factor("a")), "shape 1 is not numeric"),
              list(list(3, numeric(0)), "shape 2 is empty"))
  for (b in bad)
    expect_error(ag_estimate_training_memory(b[[1L]], quiet = TRUE), paste0(rule, b[[2L]]),
                 fixed = TRUE, class = "pyggmlr_value_error")
  expect_equal(ag_estimate_training_memory(7, quiet = TRUE)$params, 7)
  expect_equal(ag_estimate_training_memory(list(c(1.5, 2), 4L), quiet = TRUE)$params, 7)
  expect_error(ag_estimate_training_memory(list(c(4, 4)), dtype = "x", quiet = TRUE),
               "^ag_estimate_training_memory\\(\\): dtype", class = "pyggmlr_dtype_error")
})

test_that("ag_tape_memory counts nodes and bytes of the current tape", {
  ag_tape_clear()
  expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 0L)
  w <- ag_param(matrix(0.1, 64, 64))
  x <- ag_tensor(matrix(1, 64, 64))
  with_grad_tape(l <- ag_mse_loss(ag_relu(ag_matmul(w, x)), matrix(0, 64, 64)))
  r <- ag_tape_memory(quiet = TRUE)
  expect_equal(r$nodes, 3L)
  expect_gt(r$bytes_total, 0)
  expect_equal(r$bytes_total, r$bytes_snapshots + r$bytes_fields + r$bytes_inputs)
  expect_equal(sum(r$by_op$nodes), r$nodes)
  expect_true("matmul" %in% r$by_op$op)
  expect_output(ag_tape_memory(), "Gradient tape")
})

test_that("ag_estimate_training_memory(static = TRUE): the compiled step's peak, as Python's", {
  set.seed(5)
  m <- ag_sequential(ag_linear(4, 16, "relu"), ag_batch_norm(16), ag_linear(16, 3))
  x <- matrix(rnorm(4 * 32), 4)
  y <- matrix(sample(0:2, 32, TRUE), 1)
  loss <- function(out, t) ag_softmax_cross_entropy_loss(out, t)
  r <- estimate_and_peak(m, x, y, loss)
  est <- r$est
  opt <- r$opt
  expect_equal(r$peak, est$total - est$weights)
  eager <- ag_estimate_training_memory(model = m, x = x, y = y, loss_fn = loss, optimizer = opt,
                                       quiet = TRUE)
  expect_equal(c(eager$weights, eager$gradients, eager$optimizer),
               c(est$weights, est$gradients, est$optimizer))
  expect_gte(est$activations, eager$activations)
  expect_match(est$note, "from the compiled step on a batch of 32 (planned buffers", fixed = TRUE)
  expect_error(ag_estimate_training_memory(model = m, x = x, static = NA),
               "static must be TRUE or FALSE", class = "pyggmlr_argument_error")
})

test_that("ag_estimate_training_memory: optimizer names are the core's (match.arg, one text)", {
  expect_error(ag_estimate_training_memory(7, optimizer = "rmsprop"),
               paste0("ag_estimate_training_memory(): 'optimizer' should be one of \"adam\", ",
                      "\"sgd\", \"sgd_plain\", got \"rmsprop\""),
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(ag_estimate_training_memory(7, optimizer = "s"), "(it begins more than one)",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_equal(ag_estimate_training_memory(7, optimizer = "sgd_p", quiet = TRUE)$optimizer, 0)
  expect_equal(ag_estimate_training_memory(7, optimizer = "sgd", quiet = TRUE)$optimizer, 28)
  out <- capture.output(r <- ag_estimate_training_memory(1e5, quiet = FALSE))
  expect_equal(out[2], "  parameters      : 1e+05")
  expect_equal(out[8], paste0("  note: ", r$note))
})

test_that("ag_tape_memory(compiled =): a compiled step's planned buffers, as Python's", {
  ag_tape_clear()
  set.seed(3)
  m <- ag_sequential(ag_linear(4, 16, "relu"), ag_batch_norm(16), ag_linear(16, 3))
  x <- matrix(rnorm(4 * 32), 4)
  y <- matrix(sample(0:2, 32, TRUE), 1)
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  step <- ag_compile(function(a, b) ag_softmax_cross_entropy_loss(m$forward(a), b), x, y,
                     optimizer = opt)
  step(x, y)
  out <- capture.output(rep <- ag_tape_memory(compiled = step, top = 3))
  expect_equal(out[1L], sprintf("Compiled graph (opt): %d nodes, %.2f MB planned", rep$nodes,
                                rep$bytes_total / 1024^2))
  expect_equal(rep$nodes, 4L)  # linear, batch_norm, linear, softmax_ce_loss
  f32 <- 4
  # the numbers Python's test_compiled_memory_report_and_estimate asserts for this model
  expect_equal(rep$outputs, f32 * (16 * 32 * 2 + 3 * 32 + 1))
  expect_equal(rep$bytes_snapshots, rep$outputs + rep$saved)
  expect_equal(rep$bytes_snapshots, f32 * (16 * 32 * 2 + 3 * 32 + 1 + 16 * 32 + 16 + 3 * 32))
  weights <- sum(vapply(m$parameters(), function(t) length(t$data), 0)) * f32
  expect_equal(rep$bytes_inputs, weights + 2 * 16 * f32 + f32 * (4 * 32 + 32))
  expect_equal(rep$bytes_gradients, weights + f32 * (16 * 32 * 2 + 3 * 32 + 1))
  expect_equal(rep$bytes_total, rep$bytes_snapshots + rep$bytes_inputs + rep$bytes_gradients +
                 rep$bytes_fields)
  expect_equal(sum(rep$by_op$bytes), rep$bytes_total - rep$bytes_gradients)
  expect_equal(out[7L], "  by operation (top 3):")
  expect_equal(capture.output(print(step)), out[1:5])  # the same text, without the op table
  expect_error(ag_tape_memory(compiled = m), "compiled must be a step from ag_compile",
               class = "pyggmlr_argument_error")
  fake <- structure(function() 1, class = "ag_compiled", graph = 1L)
  expect_error(ag_tape_memory(compiled = fake), "compiled must be a step from ag_compile",
               class = "pyggmlr_argument_error")
  expect_error(print(fake), "compiled must be a step from ag_compile",
               class = "pyggmlr_argument_error")
  d <- ag_sequential(ag_linear(4, 4), ag_dropout(0.5))
  s2 <- ag_compile(function(a) ag_mean(d$forward(a)), x, build = "grad")
  expect_match(capture.output(print(s2))[1L], ", 1 dropout mask redrawn per call$")
})

test_that("input_shape's rule and text are the core's (pg_mem_input_shape, as Python's)", {
  m <- ag_sequential(ag_linear(2, 3))
  e <- ag_estimate_training_memory(model = m, input_shape = list(2), batch_size = 5, quiet = TRUE)
  expect_identical(e$activations, 288)
  rule <- paste0("ag_estimate_training_memory(): input_shape must be c(features) or ",
                 "c(features, batch) with positive whole numbers, got ")
  for (v in list(c(2, 0.5), c(2, Inf), c(2, 2^31), c(2, 3, 4), c("a", "2"), TRUE, numeric(0)))
    expect_error(ag_estimate_training_memory(model = m, input_shape = v, quiet = TRUE),
                 paste0(rule, paste(deparse(v), collapse = " ")), fixed = TRUE,
                 class = "pyggmlr_value_error")
})
