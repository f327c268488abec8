test_that("the core's live-object count returns to its start after rm(); gc()", {
  ag_tape_clear() # the tape of an earlier test still holds its tensors
  invisible(gc()); invisible(gc())
  start <- ag_live_objects()
  local({
    W <- ag_param(matrix(1, 4, 4))
    x <- ag_tensor(matrix(1, 4, 2))
    opt <- optimizer_adam(list(W = W))
    with_grad_tape(l <- ag_mse_loss(ag_relu(ag_matmul(W, x)), matrix(0, 4, 2)))
    g <- backward(l)
    opt$step(g)
    opt$zero_grad()
    expect_gt(ag_live_objects(), start)
  })
  ag_tape_clear()
  invisible(gc()); invisible(gc())
  expect_equal(ag_live_objects(), start)
})

test_that("models and dead handles are collected without errors", {
  invisible(gc())
  start <- ag_live_objects()
  m <- ag_sequential(ag_linear(3, 4, "relu"), ag_batch_norm(4), ag_dropout(0.2), ag_linear(4, 2))
  t <- ag_tensor(1:3)
  t2 <- unserialize(serialize(t, NULL))
  rm(m, t, t2)
  invisible(gc()); invisible(gc())
  expect_equal(ag_live_objects(), start)
})
