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
