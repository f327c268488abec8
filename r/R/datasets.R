# The shipped data sets (inst/extdata/*.csv.gz, links to the Python package's pyggmlr/data/, so
# both languages read one file): the same names and values as Python's load_breast_cancer(),
# load_digits() and load_letters(). Sources and licences: inst/extdata/README.md.

.dataset_classes <- list(
  breast_cancer = c("malignant", "benign"),  # scikit-learn's order, as Python's class ids
  digits = as.character(0:9),
  letters = LETTERS
)

# list(x = [features, n] double matrix (row names: the features), y = factor with the data set's
# levels, classes, features); read.csv's text-to-double matches Python's float() bit for bit
.load_shipped <- function(name) {
  path <- system.file("extdata", paste0(name, ".csv.gz"), package = "pyggmlr", mustWork = TRUE)
  d <- utils::read.csv(gzfile(path), check.names = FALSE, colClasses = c(label = "character"))
  p <- ncol(d) - 1L
  features <- names(d)[seq_len(p)]
  x <- t(as.matrix(d[, seq_len(p)]))
  storage.mode(x) <- "double"
  dimnames(x) <- list(features, NULL)
  classes <- .dataset_classes[[name]]
  list(x = x, y = factor(d$label, levels = classes), classes = classes, features = features)
}

load_breast_cancer <- function() .load_shipped("breast_cancer")

load_digits <- function() .load_shipped("digits")

load_letters <- function() .load_shipped("letters")
