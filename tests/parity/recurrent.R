# The R half of the recurrent-layer cases (tests/parity/cases_recurrent.py): the same seed, the
# same stacked bidirectional layer with dropout, ag_fit eager or compiled; records as Python's.
suppressPackageStartupMessages(library(pyggmlr))

parity_recurrent_fit <- function(dtype, seed, kind, static, x, y, nepoch) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    layer <- get(paste0("ag_", kind))
    m <- ag_sequential(layer(2L, 3L, num_layers = 2L, bidirectional = TRUE, dropout = 0.3),
                       ag_linear(6L, 1L))
    p <- m$parameters()
    rec0 <- stats::setNames(lapply(p, function(t) t$data), paste("init", names(p)))
    h <- ag_fit(m, x, y, loss = "mse", nepoch = as.integer(nepoch), batch_size = 4L,
                shuffle = TRUE, static = static, silent = TRUE)
    p <- m$parameters()
    rec1 <- stats::setNames(lapply(p, function(t) t$data), paste("final", names(p)))
    rec1$loss <- h$loss
    rec1$predict <- ag_predict(m, x)
    list(rec0, rec1)
  })
}

# return_state: h_n (and the LSTM's c_n) in the loss, Adam steps eager or through ag_compile;
# per step the loss, the weights and the layer's results (Python: cases_recurrent.py _state_py)
parity_recurrent_state <- function(dtype, seed, kind, static, x, y, steps) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    layer <- get(paste0("ag_", kind))(2L, 3L, num_layers = 2L, bidirectional = TRUE,
                                      return_state = TRUE)
    head <- ag_linear(6L, 1L)
    hp <- head$params()  # ag_linear is a list: params() gives its tensors
    params <- c(layer$parameters(), stats::setNames(hp, paste("head", names(hp))))
    opt <- optimizer_adam(params, lr = 0.01)
    f <- function(x, y) {
      res <- layer$forward(x)
      loss <- ag_add(ag_mse_loss(head$forward(res[[1L]]), y), ag_sum(ag_mul(res[[2L]], res[[2L]])))
      if (kind == "lstm") ag_add(loss, ag_sum(res[[3L]])) else loss
    }
    step <- if (static) ag_compile(f, x, y, optimizer = opt) else NULL
    out <- list()
    for (s in seq_len(steps)) {
      if (static) {
        rec <- list(loss = step(x, y))
      } else {
        loss <- with_grad_tape(f(ag_tensor(x), ag_tensor(y)))
        opt$step(backward(loss))
        opt$zero_grad()
        rec <- list(loss = as.vector(loss$data))
      }
      for (nm in names(params)) rec[[nm]] <- params[[nm]]$data
      res <- layer$forward(ag_tensor(x))
      for (i in seq_along(res)) rec[[paste("result", i - 1L)]] <- res[[i]]$data
      out[[s]] <- rec
    }
    out
  })
}
