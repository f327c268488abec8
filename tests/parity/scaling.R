# The R half of the ag_normalization cases (tests/parity/cases_scaling.py). Uses helpers.R and
# models.R (build_arch, fit_records).
# Alone: Rscript tests/parity/scaling.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# the model adapted on x in the core, ag_fit from given weights, saved to `path`
parity_norm_fit <- function(dtype, arch, init, binit, x, y, nepoch, static, hist_keys, path) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    m$layers[[1L]]$adapt(x)
    res <- fit_records(m, x, y, hist_keys, loss = "mse", optimizer = "adam", nepoch = nepoch,
                       batch_size = 4L, lr = 0.05, static = static)
    ag_save_model(m, path)
    res
  })
}

# a file written by Python read here: its buffers and ag_predict on x
parity_norm_read <- function(path, x) {
  m <- ag_load_model(path)
  list(pred = ag_predict(m, x), buffers = values_of(m$buffers()))
}

# ag_fit(static = NULL) on a custom layer (tests/parity/cases_scaling.py's static-auto cases):
# `host` reads the batch's values in R (falls back), else ag ops only (compiled); the history,
# the weights and the number of fallback messages
parity_static_auto <- function(dtype, W, b, x, y, nepoch, host) {
  with_dtype(dtype, function() {
    e <- new.env()
    e$lin <- ag_linear(4L, 3L)
    e$lin$W$data <- W
    e$lin$b$data <- b
    e$forward <- function(x) {
      if (host) return(e$lin$forward(ag_tensor(x$data * 1)))
      ag_tanh(e$lin$forward(x)) * 2
    }
    e$parameters <- function() list(W = e$lin$W, b = e$lin$b)
    n_msg <- 0L
    h <- withCallingHandlers(
      ag_fit(e, x, y, loss = "mse", nepoch = nepoch, batch_size = 6L, shuffle = FALSE,
             val_split = 0.25, silent = TRUE),
      message = function(cnd) {
        n_msg <<- n_msg + 1L
        invokeRestart("muffleMessage")
      })
    list(loss = h$loss, val_loss = h$val_loss, W = e$lin$W$data, b = e$lin$b$data,
         n_msg = n_msg)
  })
}
