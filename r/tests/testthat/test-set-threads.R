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

# ag_multihead_attention's heads (one core op) split over threads when a head has seq_q * seq_kv
# * d_k >= 2^19 (here d_k 8, 256 x 256 or more): 3 threads give the 4 heads as 1 + 1 + 2
test_that("ag_multihead_attention at 2 and 3 threads: the bits of one (dropout, causal, cross)", {
  gradof <- function(grads, t) get0(as.character(t$id), envir = grads, inherits = FALSE)
  run <- function(threads, dtype, H, sq, skv, causal, compiled) {
    old <- ag_dtype(dtype)
    on.exit({ ag_dtype(old); ag_set_threads(1) })
    ggml_set_seed(5)
    m <- ag_multihead_attention(32, H, dropout = 0.25)
    set.seed(H * 1000 + sq)
    data <- list(matrix(rnorm(32 * sq), 32))
    if (!is.null(skv)) data[[2]] <- matrix(rnorm(32 * skv), 32)
    ggml_set_seed(11)
    ag_set_threads(threads)
    if (compiled) {
      y <- matrix(rnorm(32 * sq), 32)
      opt <- optimizer_adam(m$parameters(), lr = 0.01)
      loss <- function(...) {
        a <- list(...)
        ag_mse_loss(do.call(m$forward, c(a[-length(a)], causal_mask = causal)), a[[length(a)]])
      }
      step <- do.call(ag_compile, c(list(loss), lapply(data, ag_tensor), list(ag_tensor(y)),
                                    optimizer = opt))
      res <- lapply(1:3, function(i) as.numeric(do.call(step, c(data, list(y)))))
      res <- c(res, lapply(m$parameters(), as.matrix))
    } else {
      xs <- lapply(data, ag_param)
      G <- matrix(cos(seq_len(32 * sq) - 1), 32)
      with_grad_tape({
        out <- do.call(m$forward, c(xs, causal_mask = causal))
        l <- ag_sum(ag_mul(out, G))
      })
      g <- backward(l)
      res <- c(list(out$data), lapply(c(m$parameters(), xs), function(p) gradof(g, p)))
    }
    c(res, list(.Random.seed))
  }
  cases <- list(list(1, 256, NULL, TRUE), list(4, 256, NULL, TRUE), list(4, 256, 288, FALSE),
                list(4, 288, 256, TRUE))
  for (dt in c("f32", "f64")) for (cs in cases) for (compiled in c(FALSE, TRUE)) {
    one <- run(1, dt, cs[[1]], cs[[2]], cs[[3]], cs[[4]], compiled)
    expect_false(any(vapply(one, is.null, TRUE)))
    for (th in 2:3)
      expect_identical(run(th, dt, cs[[1]], cs[[2]], cs[[3]], cs[[4]], compiled), one)
  }
})
