# A ggmlR 0.8.6 user's script (sampling ops), run unchanged: a policy-gradient style loop with
# ag_log_softmax, ag_sample_categorical, ag_gather, and a Gaussian head with ag_sample_normal;
# set.seed() makes the draws R's own (runif(n * batch) / rnorm(n * batch), spec section 12).

test_that("ggmlR-style script: categorical sampling and log-probabilities", {
  set.seed(7)
  logits <- ag_param(matrix(c(2, 0, -1, 0.5, 0.5, 0.5), 3, 2))
  set.seed(99)
  u <- runif(6)                                   # what ag_sample_categorical draws first
  set.seed(99)
  a <- ag_sample_categorical(logits)
  p <- exp(logits$data) %*% diag(1 / colSums(exp(logits$data)))
  # Gumbel-max with R's uniforms
  ref <- apply(logits$data - log(-log(matrix(u, 3, 2))), 2, which.max) - 1L
  expect_equal(as.vector(a), ref)
  with_grad_tape({
    lp <- ag_log_softmax(logits)
    chosen <- ag_gather(lp, as.vector(a))
    loss <- ag_mul(ag_sum(chosen), -1)
  })
  g <- backward(loss)
  expect_equal(as.vector(chosen$data), log(p[cbind(as.vector(a) + 1, 1:2)]), tolerance = 1e-6)
  gl <- get(as.character(logits$id), g)
  onehot <- matrix(0, 3, 2)
  onehot[cbind(as.vector(a) + 1, 1:2)] <- 1
  expect_equal(gl, -(onehot - p), tolerance = 1e-6)  # d(-log p_a)/dlogits = p - onehot
  expect_equal(as.vector(ag_argmax(logits)), c(0, 0))
})

test_that("ggmlR-style script: a Gaussian policy with ag_sample_normal (reparameterised)", {
  mu <- ag_param(matrix(c(0, 1, -1, 2), 2, 2))
  log_std <- ag_param(matrix(log(0.5), 2, 2))
  set.seed(3)
  eps <- rnorm(4)
  set.seed(3)
  with_grad_tape({ z <- ag_sample_normal(mu, log_std); loss <- ag_sum(z) })
  expect_equal(z$data, mu$data + 0.5 * matrix(eps, 2, 2), tolerance = 1e-6)
  g <- backward(loss)
  expect_equal(get(as.character(mu$id), g), matrix(1, 2, 2))
  expect_equal(get(as.character(log_std$id), g), 0.5 * matrix(eps, 2, 2), tolerance = 1e-6)
})
