# The R half of the ag_predict / model-file label cases (tests/parity/cases_predict.py). Uses
# helpers.R (build_arch, with_dtype).
# Alone: Rscript tests/parity/predict.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# the labels of each loss's case (é written as an escape: this file's encoding does not matter)
predict_labels <- function(loss) {
  if (loss == "cross_entropy") c("cat", "dog", "\u00e9mu") else c("no", "yes")
}

# ag_fit with a factor y (0-based ids -> the labels), then ag_save_model to path
parity_predict_save <- function(dtype, arch, init, binit, x, y, loss, path) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    lv <- predict_labels(loss)
    y <- factor(lv[as.integer(y) + 1L], levels = lv)  # y: 0-based ids
    ag_fit(m, x, y, loss = loss, nepoch = 2L, batch_size = 8L, shuffle = FALSE, lr = 0.05,
           silent = TRUE)
    ag_save_model(m, path)
    TRUE
  })
}

# a model file read by R alone: its outputs, probabilities, classes (as 0-based codes of the
# labels) and the labels and loss it keeps
parity_predict_load <- function(dtype, x, path) {
  with_dtype(dtype, function() {
    m <- ag_load_model(path)
    cl <- predict(m, x, type = "class")
    list(response = ag_predict(m, x), prob = ag_predict(m, x, type = "prob"),
         class = as.integer(cl) - 1L, labels = levels(cl), loss = m$loss)
  })
}
