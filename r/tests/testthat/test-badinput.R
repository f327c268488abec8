# Bad input through the R package: every case is an R error (expect_error) or a correct
# result, never a crash. Wrong types, NULL, NA/NaN/Inf, zero-size matrices, dead (serialized)
# handles, bad shapes and dtypes, errors inside with_grad_tape, optimizers on tensors without
# gradients. The live-object count returns to its start at the end.

live_now <- function() { ag_tape_clear(); invisible(gc()); invisible(gc()); ag_live_objects() }
start_live <- live_now()

bad_values <- list(NULL, "a", c("a", "b"), list(1, 2), list(), function(x) x, new.env(),
                   quote(x + 1),
                   1i, as.raw(1:3), factor("a"), array(1, c(2, 2, 2)), data.frame(a = "x"))

test_that("wrong types and NULL give R errors in every op", {
  t <- ag_tensor(matrix(1, 2, 2))
  one <- list(ag_relu = ag_relu, ag_sigmoid = ag_sigmoid, ag_tanh = ag_tanh, ag_gelu = ag_gelu,
              ag_log = ag_log, ag_exp = ag_exp, ag_softmax = ag_softmax, ag_neg = ag_neg,
              ag_sum = ag_sum, ag_mean = ag_mean, ag_transpose = ag_transpose,
              ag_scale = function(x) ag_scale(x, 2), ag_pow = function(x) ag_pow(x, 2),
              ag_clamp = function(x) ag_clamp(x, 0, 1),
              ag_reshape = function(x) ag_reshape(x, 1, -1))
  two <- list(ag_add = ag_add, ag_sub = ag_sub, ag_mul = ag_mul, ag_div = ag_div,
              ag_matmul = ag_matmul,
              ag_mse_loss = ag_mse_loss, ag_cross_entropy_loss = ag_cross_entropy_loss,
              ag_softmax_cross_entropy_loss = ag_softmax_cross_entropy_loss)
  for (bad in bad_values) {
    for (nm in names(one)) expect_error(one[[nm]](bad), info = nm)
    for (nm in names(two)) {
      expect_error(two[[nm]](t, bad), info = nm)
      expect_error(two[[nm]](bad, t), info = nm)
    }
    expect_error(ag_tensor(bad))
    expect_error(ag_param(bad))
    expect_error(backward(bad), "ag_tensor")
    expect_error(optimizer_sgd(list(bad)), "not an ag_tensor")
    if (!is.null(bad)) {
      expect_error(ag_scale(t, bad), "single number")
      expect_error(ag_pow(t, bad), "single number")
      expect_error(ag_clamp(t, bad), "single number")
      expect_error(ag_reshape(t, bad), "")
      expect_error(ag_sum(t, dim = bad), "dim")
      expect_error(t$data <- bad)
      expect_error(ag_dtype(bad), "dtype")
      expect_error(ag_tensor(1, dtype = bad), "dtype")
    }
  }
  # messages name the op where the core raises them
  expect_error(ag_relu("a"), "ag_relu")
  expect_error(ag_matmul(t, "a"), "ag_matmul")
  expect_error(ag_add(t, list(1)), "ag_add")
})

test_that("NA, NaN and Inf flow through as IEEE values", {
  x <- ag_tensor(c(NA, NaN, Inf, -Inf, 1), dtype = "f64")
  v <- x$data
  expect_true(is.na(v[1]) && is.nan(v[2]) && v[3] == Inf && v[4] == -Inf && v[5] == 1)
  # integer and logical NA become NA (not -2147483648)
  expect_true(is.na(ag_tensor(c(1L, NA_integer_))$data[2]))
  expect_true(is.na(ag_tensor(c(TRUE, NA))$data[2]))
  expect_equal(ag_tensor(c(TRUE, FALSE))$data, matrix(c(1, 0), 2, 1))
  expect_equal(ag_exp(ag_tensor(c(-Inf, 0), dtype = "f64"))$data, matrix(c(0, 1), 2, 1))
  expect_equal(ag_log(ag_tensor(0, dtype = "f64"))$data, matrix(-Inf))
  expect_true(is.nan(ag_div(ag_tensor(0, dtype = "f64"), 0)$data[1]))
  r <- ag_relu(ag_tensor(c(-Inf, Inf), dtype = "f64"))$data
  expect_equal(r, matrix(c(0, Inf), 2, 1))
  # extreme values in f32 overflow to Inf like R's floats would in single precision
  expect_equal(ag_mul(ag_tensor(3e38), 10)$data, matrix(Inf))
  expect_error(ag_scale(ag_tensor(1), NA), "single number")
  expect_error(ag_pow(ag_tensor(1), NA_real_), "single number")
  # NaN as an optimizer setting is refused by the core
  p <- ag_param(1)
  o <- optimizer_sgd(list(p))
  expect_error(o$lr <- NaN, "NaN")
  expect_error(o$lr <- -1, ">= 0")
  expect_error(o$accumulate_steps <- 1e300, "accumulate_steps")
  expect_error(clip_grad_norm(list(p), NULL, NaN), "max_norm")
})

test_that("zero-size matrices work in every op", {
  e <- ag_tensor(matrix(0, 0, 3))
  expect_equal(dim(e), c(0L, 3L))
  expect_equal(dim(e$data), c(0L, 3L))
  expect_equal(ag_sum(e)$data, matrix(0))
  expect_equal(dim(ag_transpose(e)), c(3L, 0L))
  expect_equal(dim(ag_relu(e)), c(0L, 3L))
  expect_equal(dim(ag_add(e, matrix(0, 0, 3))), c(0L, 3L))
  expect_equal(dim(ag_add(e, matrix(1, 1, 3))), c(0L, 3L))
  expect_equal(ag_matmul(ag_tensor(matrix(0, 2, 0)), ag_tensor(matrix(0, 0, 3)))$data,
               matrix(0, 2, 3))
  expect_equal(dim(ag_tensor(numeric(0))), c(0L, 1L))
  expect_error(ag_matmul(e, e), "ag_matmul")
  p <- ag_param(matrix(0, 0, 2))
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  g <- backward(l)
  expect_equal(dim(p$grad), c(0L, 2L))
})

test_that("dead handles (serialize, saveRDS) are R errors", {
  t <- ag_param(matrix(1:4, 2, 2))
  f <- tempfile(fileext = ".rds")
  saveRDS(t, f)
  d1 <- readRDS(f)
  d2 <- unserialize(serialize(t, NULL))
  for (d in list(d1, d2)) {
    expect_error(d$data, "dead")
    expect_error(ag_relu(d), "dead")
    expect_error(ag_add(t, d), "dead")
    expect_error(ag_matmul(d, t), "dead")
    expect_error(dim(d), "dead")
    expect_error(backward(d), "dead")
    expect_error(optimizer_adam(list(d))$step(), "dead")
    expect_output(print(d), "dead handle")
  }
  o <- optimizer_sgd(list(t))
  od <- unserialize(serialize(o, NULL))
  expect_error(od$step(), "dead")
  with_grad_tape(l <- ag_sum(t))
  g <- backward(l)
  gd <- unserialize(serialize(g, NULL))
  expect_error(o$step(gd), "dead|grads")
  expect_equal(t$data, matrix(c(1, 2, 3, 4), 2, 2))  # the original is untouched
  unlink(f)
  # the raw handles themselves, of the wrong kind
  expect_error(.Call(pyggmlr:::R_pg_tensor_info, o$.h), "pg_tensor")
  expect_error(.Call(pyggmlr:::R_pg_tensor_info, NULL), "pg_tensor")
  expect_error(.Call(pyggmlr:::R_pg_optim_step, t$.ptr, NULL), "pg_optim")
})

test_that("compiled steps and random streams are handles as others: classed errors (issue 29)", {
  x <- ag_tensor(matrix(1, 2, 2))
  step <- ag_compile(function(x) ag_sum(ag_mul(x, x)), x, build = "forward")
  dead <- unserialize(serialize(step, NULL))
  e <- tryCatch(dead(x), error = function(e) e)
  expect_s3_class(e, "pyggmlr_state_error")
  expect_match(conditionMessage(e), "compiled step: the graph is gone", fixed = TRUE)
  expect_equal(as.matrix(step(x)$data), matrix(4))  # the original still runs
  s <- pyggmlr:::.rng_stream(1L)
  sd <- unserialize(serialize(s, NULL))
  e <- tryCatch(.Call(pyggmlr:::R_pg_rng_get_state, sd), error = function(e) e)
  expect_s3_class(e, "pyggmlr_state_error")
  expect_match(conditionMessage(e), "random stream handle is dead", fixed = TRUE)
  e <- tryCatch(.Call(pyggmlr:::R_pg_rng_get_state, x$.ptr), error = function(e) e)
  expect_s3_class(e, "pyggmlr_argument_error")
  expect_match(conditionMessage(e), "expected a pg_rng handle (random stream)", fixed = TRUE)
  e <- tryCatch(.Call(pyggmlr:::R_pg_graph_ops, s), error = function(e) e)
  expect_s3_class(e, "pyggmlr_argument_error")
  expect_match(conditionMessage(e), "pg_graph", fixed = TRUE)
  # a handle of another kind is not read as a tensor's dtype by an op
  e <- tryCatch(ag_add(s, 1), error = function(e) e)
  expect_s3_class(e, "pyggmlr_error")
  expect_match(conditionMessage(e), "ag_add", fixed = TRUE)
})

test_that("bad shapes and dtypes are R errors with the op's name", {
  a <- ag_tensor(matrix(1, 2, 3))
  expect_error(ag_matmul(a, a), "ag_matmul")
  expect_error(ag_add(a, matrix(1, 3, 2)), "ag_add")
  expect_error(ag_mse_loss(a, matrix(0, 3, 3)), "ag_mse_loss")
  expect_error(ag_reshape(a, 4, 2), "ag_reshape")
  expect_error(ag_reshape(a, 1e30, 1), "ag_reshape")
  expect_error(ag_reshape(a, -5, -6), "ag_reshape")
  expect_error(ag_reshape(a, Inf), "ag_reshape")
  expect_error(ag_softmax_cross_entropy_loss(a, c(0, 5, 1)), "out of range")
  expect_error(ag_softmax_cross_entropy_loss(a, c(0, -1, 1)), "out of range")
  expect_error(ag_softmax_cross_entropy_loss(a, c(0, NA, 1)), "")
  expect_error(ag_tensor(1, dtype = "f16"), "not supported")
  expect_error(ag_tensor(1, dtype = c("f32", "f64")), "dtype")
  expect_error(ag_tensor(1, dtype = NA), "dtype")
  expect_error(ag_dtype("i8"), "dtype")
  expect_error(ag_add(ag_tensor(1, dtype = "f64"), ag_tensor(1, dtype = "f32")), "dtype mismatch")
  expect_error(ag_tensor(1, device = "tpu"), "device")
  expect_error(a$requires_grad <- NA, "TRUE or FALSE")
  expect_error(a$grad <- matrix(1, 5, 5), "does not match")
  expect_error(backward(a), "1x1")
})

test_that("an error inside with_grad_tape closes the scope and leaves a usable engine", {
  p <- ag_param(matrix(1, 2, 2))
  expect_error(with_grad_tape({
    h <- ag_relu(p)
    ag_matmul(h, matrix(1, 3, 3))
  }), "ag_matmul")
  # depth back to 0
  expect_equal(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["DEPTH"]]), 0L)
  # not recording
  expect_false(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]]))
  expect_error(with_grad_tape(stop("user error")), "user error")
  expect_error(with_grad_tape(with_grad_tape(stop("inner"))), "inner")
  expect_equal(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["DEPTH"]]), 0L)
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  g <- backward(l)
  expect_equal(p$grad, matrix(2, 2, 2))
  expect_error(ag_no_grad(stop("x")), "x")
  expect_false(.Call(pyggmlr:::R_pg_tape, pyggmlr:::.pg$code$tape[["ENABLED"]]))
})

test_that("optimizers on tensors without gradients refuse to step and leave them unchanged", {
  p <- ag_param(matrix(1:6, 2, 3))
  q <- ag_tensor(matrix(1, 1, 1))
  for (o in list(optimizer_sgd(list(p, q), lr = 0.1, momentum = 0.9),
                 optimizer_adam(list(p, q), lr = 0.1, weight_decay = 0.5))) {
    expect_error(o$step(), class = "pyggmlr_state_error")  # nothing to apply (issue 19)
    expect_error(o$step(NULL), "no gradient for any of its 2 parameter")
    o$zero_grad()
  }
  expect_equal(p$data, matrix(as.numeric(1:6), 2, 3))
  expect_equal(q$data, matrix(1))
  expect_equal(clip_grad_norm(list(p, q), NULL, 1), 0)
  expect_error(optimizer_sgd(list(p))$step(list()), "grads")
  expect_error(optimizer_sgd("p"), "is.list(params) is not TRUE", fixed = TRUE)
})

test_that("backward twice gives the same gradients and accumulates $grad", {
  p <- ag_param(matrix(c(1, 2, 3, 4), 2, 2), dtype = "f64")
  with_grad_tape(l <- ag_sum(ag_mul(p, p)))
  g1 <- backward(l)
  g2 <- backward(l)
  expect_equal(gradof(g1, p), gradof(g2, p))
  expect_equal(p$grad, 4 * p$data)
})

test_that("nothing is left alive", {
  expect_equal(live_now(), start_live)
})
