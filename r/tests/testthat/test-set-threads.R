# ag_set_threads(n): the core splits large products, Adam updates, vectorised math and layer norm
# columns over n threads with the same bits for every n (the same core as Python's
# tests/core/test_set_threads.py; under load from other processes the pool may run some of them
# on one thread, which gives those bits too)
test_that("ag_set_threads(2) trains to the bits of one thread (MLP, layer norm, tanh, Adam)", {
  run <- function(threads, dtype) {
    old <- ag_dtype(dtype)
    on.exit({ ag_dtype(old); ag_set_threads(1) })
    ggml_set_seed(7)
    m <- ag_sequential(ag_linear(784, 256, "relu"), ag_layer_norm(256), ag_linear(256, 128, "tanh"),
                       ag_linear(128, 10))
    set.seed(3)
    x <- matrix(rnorm(784 * 256), 784, 256)
    y <- matrix(rnorm(10 * 256), 10, 256)
    opt <- optimizer_adam(m$parameters(), lr = 1e-3)
    step <- ag_compile(function(a, b) ag_mse_loss(m$forward(a), b), x, y, optimizer = opt)
    ag_set_threads(threads)
    losses <- vapply(1:3, function(i) as.numeric(step(x, y)), numeric(1))
    list(losses = losses, w = lapply(m$parameters(), as.matrix))
  }
  for (dt in c("f32", "f64")) {
    one <- run(1, dt)
    two <- run(2, dt)
    expect_identical(two$losses, one$losses)
    expect_identical(two$w, one$w)
  }
})
