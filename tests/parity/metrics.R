# The R half of the ag_evaluate cases (tests/parity/cases_metrics.py). Uses helpers.R.
# Alone: Rscript tests/parity/metrics.R (defines the function, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# ag_evaluate of the architecture with its values set; y: class ids (a vector) or a matrix
parity_evaluate <- function(dtype, arch, init, binit, x, y, loss, metrics) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    if (is.null(dim(y))) y <- matrix(as.double(y), 1L)
    r <- ag_evaluate(m, x, y, metrics = metrics, loss = loss, batch_size = 5L)
    lapply(r, function(v) as.double(v))
  })
}

# ag_fit(metrics =) from given weights (shuffle off): the History's columns named by keys
parity_fit_metrics <- function(dtype, arch, init, binit, x, y, nepoch, static, metrics, keys) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    h <- ag_fit(m, x, as.double(y), loss = "cross_entropy", optimizer = "sgd", lr = 0.1,
                nepoch = nepoch, batch_size = 4L, val_split = 0.25, shuffle = FALSE,
                silent = TRUE, static = static, metrics = metrics)
    lapply(stats::setNames(keys, keys), function(k) as.double(h[[k]]))
  })
}
