# The R half of the weighted ag_fit cases (tests/parity/cases_weights.py). Uses helpers.R and
# models.R (build_arch, fit_records).
# Alone: Rscript tests/parity/weights.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# ag_fit from given weights (shuffle off) with sample_weight (NULL: none) and class_weight named
# by class id (cw_ids, cw; NULL: none)
parity_fit_weighted <- function(dtype, arch, init, binit, x, y, loss, opt_kind, lr, nepoch,
                                batch_size, val_split, static, sw, cw_ids, cw, hist_keys) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    cwv <- if (is.null(cw)) NULL else stats::setNames(as.double(cw), as.character(cw_ids))
    fit_records(m, x, y, hist_keys, loss = loss, optimizer = opt_kind, nepoch = nepoch,
                batch_size = batch_size, val_split = val_split, lr = lr, static = static,
                sample_weight = sw, class_weight = cwv)
  })
}
