# ggmlR's test-ag-checkpoint (0.8.5, 9 blocks; spec 0.8.6 §13), written as a ggmlR user's script
# would be: ag_linear layers, with_grad_tape, backward, $grad. Where ggmlR keeps a quirk (§14.1:
# segment gradients only in $grad, consecutive random segments sharing draws) the block asserts
# the corrected behaviour and says so.

script_net <- function() {
  set.seed(42)
  list(l1 = ag_linear(4, 16, activation = "relu"), l2 = ag_linear(16, 16, activation = "tanh"),
       l3 = ag_linear(16, 2))
}
script_x <- function() { set.seed(1); ag_tensor(matrix(rnorm(4 * 6), 4, 6)) }
script_y <- function() { set.seed(2); matrix(rnorm(2 * 6), 2, 6) }
script_params <- function(net) unlist(lapply(net, function(l) l$params()), recursive = FALSE)
script_grads <- function(net, fwd) {
  for (p in script_params(net)) p$grad <- NULL
  x <- script_x()
  y <- script_y()
  with_grad_tape({ loss <- ag_mse_loss(fwd(x), y) })
  env <- backward(loss)
  list(grad = lapply(script_params(net), function(p) p$grad),
       env = lapply(script_params(net), function(p) env[[p]]))
}

test_that("checkpointed gradients equal the plain ones (1e-12)", {
  local_f64()
  net <- script_net()
  plain <- script_grads(net, function(x) net$l3$forward(net$l2$forward(net$l1$forward(x))))
  l12 <- function(h) net$l2$forward(net$l1$forward(h))
  ck <- script_grads(net, function(x) net$l3$forward(ag_checkpoint(l12, x)))
  for (k in names(plain$grad)) expect_equal(ck$grad[[k]], plain$grad[[k]], tolerance = 1e-12)
  # ggmlR leaves the segment's parameters out of backward()'s environment (§14.1); here they are in
  # it
  for (k in names(plain$env)) expect_identical(ck$env[[k]], plain$env[[k]])
})

test_that("gradients are not doubled", {
  local_f64()
  net <- script_net()
  one <- script_grads(net,
                      function(x) net$l3$forward(net$l2$forward(ag_checkpoint(net$l1$forward, x))))
  expect_identical(one$grad$l1.W, one$env$l1.W)   # written once per backward, not per consumer
  with_grad_tape({ loss <- ag_mse_loss(net$l3$forward(net$l2$forward(ag_checkpoint(net$l1$forward,
      script_x()))), script_y()) })
  backward(loss)
  # a second backward accumulates
  expect_equal(net$l1$W$grad, 2 * one$grad$l1.W, tolerance = 1e-12)
})

test_that("gradients flow upstream of the checkpoint", {
  local_f64()
  net <- script_net()
  ck <- script_grads(net,
                     function(x) ag_checkpoint(function(h) net$l3$forward(net$l2$forward(h)),
                                               net$l1$forward(x)))
  plain <- script_grads(net, function(x) net$l3$forward(net$l2$forward(net$l1$forward(x))))
  expect_gt(sum(abs(ck$grad$l1.W)), 0)
  expect_equal(ck$grad$l1.W, plain$grad$l1.W, tolerance = 1e-12)
})

test_that("the tape is smaller with a checkpoint", {
  net <- script_net()
  x <- script_x()
  y <- script_y()
  size <- function(fwd) {
    with_grad_tape({ loss <- ag_mse_loss(fwd(x), y) })
    gc()
    ag_tape_memory(quiet = TRUE)$bytes_total
  }
  plain <- size(function(x) net$l3$forward(net$l2$forward(net$l1$forward(x))))
  l123 <- function(h) net$l3$forward(net$l2$forward(net$l1$forward(h)))
  ck <- size(function(x) ag_checkpoint(l123, x))
  expect_lt(ck, plain)
})

test_that("nested checkpoints", {
  local_f64()
  net <- script_net()
  plain <- script_grads(net, function(x) net$l3$forward(net$l2$forward(net$l1$forward(x))))
  l12 <- function(u) net$l2$forward(net$l1$forward(u))
  nested <- script_grads(net, function(x)
    ag_checkpoint(function(h) net$l3$forward(ag_checkpoint(l12, h)), x))
  for (k in names(plain$grad)) expect_equal(nested$grad[[k]], plain$grad[[k]], tolerance = 1e-12)
})

test_that("several checkpoints in sequence, closures made with local()", {
  local_f64()
  net <- script_net()
  plain <- script_grads(net, function(x) net$l3$forward(net$l2$forward(net$l1$forward(x))))
  seq_fwd <- function(x) {
    h <- x
    for (l in net) h <- ag_checkpoint(local({ layer <- l; function(v) layer$forward(v) }), h)
    h
  }
  ck <- script_grads(net, seq_fwd)
  for (k in names(plain$grad)) expect_equal(ck$grad[[k]], plain$grad[[k]], tolerance = 1e-10)
})

test_that("a dropout segment replays its mask", {
  local_f64()
  net <- script_net()
  drop <- ag_dropout(0.5)
  x <- script_x()
  y <- script_y()
  run <- function(ck) {
    for (p in script_params(net)) p$grad <- NULL
    set.seed(9)
    seg <- function(h) drop$forward(net$l2$forward(net$l1$forward(h)))
    with_grad_tape({ loss <- ag_mse_loss(net$l3$forward(if (ck) ag_checkpoint(seg, x) else seg(x)),
                                         y) })
    backward(loss)
    list(loss = loss$data, g = net$l1$W$grad, seed = .Random.seed)
  }
  expect_identical(run(TRUE), run(FALSE))   # same mask, same gradients, same stream afterwards
})

test_that("a failing segment leaves the tape enabled and .Random.seed unchanged", {
  x <- script_x()
  set.seed(3)
  with_grad_tape({
    s <- .Random.seed
    expect_error(ag_checkpoint(function(h) { runif(5); stop("segment failed") }, x),
                 "segment failed")
    expect_identical(.Random.seed, s)
    z <- ag_param(matrix(1, 2, 2))
    l <- ag_sum(ag_scale(z, 3))   # still recording
  })
  expect_equal(backward(l)[[z]], matrix(3, 2, 2))
})

test_that("outside a tape ag_checkpoint just calls fn", {
  net <- script_net()
  x <- script_x()
  expect_identical(ag_checkpoint(function(h) net$l1$forward(h), x)$data, net$l1$forward(x)$data)
  expect_identical(ag_checkpoint(function(a, b) a + b, 1, 2), 3)
})
