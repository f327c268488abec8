test_that("with_grad_tape evaluates in the caller's frame and returns the value", {
  x <- ag_param(c(1, 2))
  v <- with_grad_tape({ y <- ag_scale(x, 3); 42 })
  expect_equal(v, 42)
  expect_true(is_ag_tensor(y))
})

test_that("nested tapes keep the outer nodes (ggmlR bug 9 fixed)", {
  local_f64()
  x <- ag_param(c(1, 2))
  with_grad_tape({
    a <- ag_scale(x, 2)
    b <- with_grad_tape(ag_scale(a, 3))
    l <- ag_sum(ag_mul(b, x))   # recorded after the inner scope closed
  })
  g <- backward(l)
  expect_equal(gradof(g, x), matrix(c(12, 24), 2, 1))
})

test_that("backward: map keyed by as.character(id), lazily read, writable", {
  local_f64()
  W <- ag_param(diag(2))
  x <- c(2, 3)
  with_grad_tape(l <- ag_mse_loss(ag_matmul(W, x), c(0, 0)))
  g <- backward(l)
  expect_true(is.environment(g))
  expect_true(as.character(W$id) %in% ls(g))
  expect_equal(g[[as.character(W$id)]], byrow(c(4, 6, 6, 9), 2), tolerance = 1e-12)
  expect_equal(g[[as.character(l$id)]], matrix(1))
  assign(as.character(W$id), matrix(0, 2, 2), envir = g)
  expect_equal(gradof(g, W), matrix(0, 2, 2))
  expect_error(backward(matrix(1)), "requires an ag_tensor")
  expect_error(backward(ag_tensor(c(1, 2))), "")
})

test_that("the map binds leaves by id; op results' gradients are read with [[ (no symbol per step)",
          {
  local_f64()
  W <- ag_param(matrix(c(1, 2, 3, 4), 2, 2))
  x <- ag_tensor(c(1, -1))
  with_grad_tape({ h <- ag_matmul(W, x); l <- ag_sum(ag_mul(h, h)) })
  g <- backward(l)
  expect_s3_class(g, "ag_grads")
  # bound: the parameter only (its id is the same every step, so its symbol is made once)
  expect_setequal(ls(g), as.character(W$id))
  expect_null(get0(as.character(h$id), envir = g, inherits = FALSE))
  # every gradient through [[ / $, by id string, number or the tensor itself: d(sum h^2)/dh = 2h
  hv <- W$data %*% c(1, -1)
  expect_equal(g[[h]], 2 * hv)
  expect_equal(g[[as.character(h$id)]], 2 * hv)
  expect_equal(g[[h$id]], 2 * hv)
  expect_equal(g[[W]], 2 * hv %*% t(c(1, -1)))
  expect_equal(eval(call("$", g, as.character(W$id))), g[[W]])
  expect_null(g[["999999999"]])
  # writes go to the core map, so the optimizer sees them
  g[[W]] <- matrix(1, 2, 2)
  expect_equal(gradof(g, W), matrix(1, 2, 2))
  opt <- optimizer_sgd(list(W), lr = 0.5)
  before <- W$data
  opt$step(g)
  expect_equal(W$data, before - 0.5)
  expect_error(g[["W"]] <- 1, "keyed by tensor id")
  expect_output(print(g), "ag_grads: 4 gradient")
})

test_that("exact-fit MSE has zero loss and gradient; ops outside a tape are not recorded", {
  local_f64()
  W <- ag_param(diag(2))
  x <- matrix(c(1, 2, 3, 4), 2, 2)
  with_grad_tape(l <- ag_mse_loss(ag_matmul(W, x), x))
  expect_lt(abs(l$data[1, 1]), 1e-10)
  expect_lt(max(abs(gradof(backward(l), W))), 1e-10)
  W2 <- ag_param(diag(2))
  l2 <- ag_sum(W2)
  expect_true(l2$requires_grad)
  # backward() on it would return a map with the loss alone: an error that says why (issue 20)
  expect_error(backward(l2),
               paste0("backward(): the loss [1x1] f64 is not on the current tape: compute it ",
                      "inside with_grad_tape()"),
               fixed = TRUE)
  expect_null(W2$grad)
  with_grad_tape(l3 <- ag_sum(ag_scale(W2, 2)))
  ag_tape_clear()
  expect_error(backward(l3), "is not on the current tape", fixed = TRUE)
})

test_that(paste0("PyTorch's order (loss, zero_grad, backward, step) trains; zero_grad after a ",
                 "backward empties the tape"), {
  local_f64()
  w <- ag_param(matrix(c(1, -2), 1, 2))
  opt <- optimizer_sgd(list(w = w), lr = 0.1)
  for (i in 1:3) {
    with_grad_tape(loss <- ag_sum(ag_pow(w, 2)))
    opt$zero_grad()
    backward(loss)
    expect_true(opt$step())
  }
  expect_equal(w$data, matrix(c(1, -2) * 0.8^3, 1, 2), tolerance = 1e-15)
  opt$zero_grad()
  expect_equal(ag_tape_memory(quiet = TRUE)$nodes, 0L)
})

test_that("ag_no_grad suspends recording", {
  x <- ag_param(c(1, 2))
  with_grad_tape({ y <- ag_no_grad(ag_scale(x, 2)); l <- ag_sum(y) })
  expect_null(gradof(backward(l), x))
})

test_that("the gradient map rejects keys that are not an id or a tensor", {
  W <- ag_param(matrix(1:4, 2))
  with_grad_tape(l <- ag_sum(ag_mul(W, W)))
  g <- backward(l)
  expect_error(g[[list(1)]], "keyed by tensor id")
  expect_error(g[[NA]], "keyed by tensor id")
  expect_null(g[["not-an-id"]])
})
