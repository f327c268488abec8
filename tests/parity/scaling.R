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
