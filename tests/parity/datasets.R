# The R half of the shipped data sets' case (tests/parity/cases_data.py).
# Alone: Rscript tests/parity/datasets.R (defines the function, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# one loader's result with the factor as 0-based ids and labels (as Python's y and classes[y])
parity_dataset <- function(loader) {
  d <- get(loader, envir = asNamespace("pyggmlr"))()
  list(x = unname(d$x), y = as.integer(d$y) - 1L, labels = as.character(d$y),
       classes = d$classes, features = d$features)
}
