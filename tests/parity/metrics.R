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
