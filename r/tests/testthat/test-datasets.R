# The shipped data sets (inst/extdata, the Python package's files): shapes, layout, class counts,
# known values, and letters against mlbench's LetterRecognition (skipped where it is absent).

# the names of the layout rules d breaks (character(0): none); plain R, so lintr sees no testthat
# calls outside test_that
layout_problems <- function(d, p, n, classes) {
  ok <- c(
    names = identical(names(d), c("x", "y", "classes", "features")),
    matrix = is.matrix(d$x) && is.double(d$x) && identical(dim(d$x), c(p, n)),
    rownames = identical(rownames(d$x), d$features) && is.null(colnames(d$x)),
    classes = identical(d$classes, classes),
    factor = is.factor(d$y) && identical(levels(d$y), classes) && length(d$y) == n,
    complete = !anyNA(d$y) && !anyNA(d$x)
  )
  names(ok)[!ok]
}

test_that("load_breast_cancer: 30 x 569, 212 malignant / 357 benign, wdbc.data's first tumour", {
  d <- load_breast_cancer()
  expect_identical(layout_problems(d, 30L, 569L, c("malignant", "benign")), character())
  expect_equal(as.vector(table(d$y)), c(212L, 357L))
  expect_identical(d$features[c(1L, 11L, 30L)],
                   c("mean radius", "radius error", "worst fractal dimension"))
  expect_identical(as.character(d$y[1L]), "malignant")
  expect_identical(unname(d$x[1:4, 1L]), c(17.99, 10.38, 122.8, 1001))
  expect_identical(unname(d$x[30L, 1L]), 0.1189)
})

test_that("load_digits: 64 x 1797 8x8 images (pixels 0..16), the class counts, the first 0", {
  d <- load_digits()
  expect_identical(layout_problems(d, 64L, 1797L, as.character(0:9)), character())
  expect_equal(as.vector(table(d$y)), c(178L, 182L, 177L, 183L, 181L, 182L, 181L, 179L, 174L, 180L))
  expect_true(all(d$x %in% 0:16))
  expect_identical(d$features[c(1L, 10L)], c("pixel_0_0", "pixel_1_1"))
  img <- matrix(d$x[, 1L], 8L, 8L, byrow = TRUE)  # feature k: row k %/% 8, column k %% 8
  expect_identical(as.character(d$y[1L]), "0")
  expect_identical(img[1L, ], c(0, 0, 5, 13, 9, 1, 0, 0))
  expect_identical(sum(img[, 1L]), 0)
})

test_that("load_letters: 16 x 20000 in UCI's order, A..Z, the counts", {
  d <- load_letters()
  expect_identical(layout_problems(d, 16L, 20000L, LETTERS), character())
  expect_identical(d$features[c(1L, 16L)], c("x-box", "yegvx"))
  expect_true(all(d$x %in% 0:15))
  expect_identical(paste(d$y[1:5], collapse = ""), "TIDNG")
  expect_identical(unname(d$x[, 1L]), c(2, 8, 3, 5, 1, 8, 13, 0, 6, 6, 10, 8, 0, 8, 0, 8))
  expect_equal(as.vector(table(d$y))[1:3], c(789L, 766L, 736L))
})

test_that("load_letters equals mlbench's LetterRecognition (values, labels, order)", {
  skip_if_not_installed("mlbench")
  e <- new.env()
  utils::data("LetterRecognition", package = "mlbench", envir = e)
  ref <- e$LetterRecognition
  d <- load_letters()
  expect_identical(unname(d$x), unname(t(as.matrix(ref[, -1L]))))
  expect_identical(d$y, factor(as.character(ref$lettr), levels = LETTERS))
  expect_identical(as.vector(table(d$y)), as.vector(table(ref$lettr)))
  expect_identical(gsub("-", ".", d$features), names(ref)[-1L])
})

test_that("the data's licence note ships with the package", {
  readme <- system.file("extdata", "README.md", package = "pyggmlr", mustWork = TRUE)
  txt <- paste(readLines(readme), collapse = "\n")
  expect_match(txt, "CC BY 4.0", fixed = TRUE)
  for (f in c("breast_cancer.csv.gz", "digits.csv.gz", "letters.csv.gz"))
    expect_match(txt, f, fixed = TRUE)
})
