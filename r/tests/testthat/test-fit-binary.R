# Binary classification (issue 31): ag_fit's accuracy columns for the BCE losses (keras'
# binary_accuracy: output above 0.5 on probabilities, 0 on logits; per element for multi-label),
# ag_accuracy(threshold =), the data checks around classification, and R's formula / data.frame
# calls. Weights set by hand and lr = 0: the golden values are Python's
# (tests/train/test_fit_binary.py), counted by hand.

.bin_data <- function() {
  x <- matrix(sin(0.7 * (1:150)), 3)  # column-major, as Python's order = "F"
  y <- matrix(as.double(x[1, ] + 0.5 * x[2, ] - 0.2 > 0), 1)
  list(x = x, y = y, y2 = rbind(y, as.double(x[3, ] > 0)))
}

.bin_model <- function(w, b, act = NULL) {
  m <- ag_sequential(if (is.null(act)) ag_linear(3, nrow(w)) else ag_linear(3, nrow(w), act))
  p <- m$parameters()
  p$layer1_W$data <- w
  p$layer1_b$data <- b
  m
}
W1 <- matrix(c(1, -0.5, 0.25), 1)
B1 <- matrix(0.1, 1)
W2 <- rbind(c(1, -0.5, 0.25), c(0.3, 0.2, 1))
B2 <- matrix(c(0.1, 0), 2)

.bin_fit <- function(m, d, y, loss, ...) {
  a <- list(optimizer = "sgd", lr = 0, nepoch = 2L, batch_size = 10L, shuffle = FALSE,
            val_split = 0.2, silent = TRUE)
  a[names(list(...))] <- list(...)
  do.call(ag_fit, c(list(m, d$x, y, loss = loss), a))
}

test_that("the History's accuracy is binary accuracy for the BCE losses, eager and static", {
  local_f64()
  d <- .bin_data()
  for (static in c(FALSE, TRUE)) for (cfg in list(list("bce_with_logits", NULL),
                                                  list("binary_cross_entropy", "sigmoid"))) {
    h <- .bin_fit(.bin_model(W1, B1, cfg[[2]]), d, d$y, cfg[[1]], static = static)
    expect_identical(h$accuracy, rep(27 / 40, 2))
    expect_identical(h$val_accuracy, rep(0.6, 2))
    expect_identical(h$accuracy_unc, rep(sqrt(27 / 40 * (1 - 27 / 40) / 39), 2))
    expect_identical(h$accuracy_unc[[1]], 0.075)
    expect_identical(h$val_accuracy_unc, rep(sqrt(0.6 * (1 - 0.6) / 9), 2))
  }
})

test_that("multi-label BCE counts every element", {
  local_f64()
  d <- .bin_data()
  h <- .bin_fit(.bin_model(W2, B2, "sigmoid"), d, d$y2, "binary_cross_entropy")
  expect_identical(h$accuracy[[1]], 54 / 80)
  expect_identical(h$val_accuracy[[1]], 13 / 20)
})

test_that("ag_accuracy scores 1-output and thresholded models per element", {
  local_f64()
  d <- .bin_data()
  m <- .bin_model(W1, B1)
  expect_identical(ag_accuracy(m, d$x, d$y, threshold = 0), 33 / 50)
  expect_identical(ag_accuracy(m, d$x, d$y), 46 / 50)
  expect_identical(ag_accuracy(m, d$x, as.vector(d$y) > 0.5, threshold = 0), 33 / 50)
  expect_identical(ag_accuracy(.bin_model(W2, B2, "sigmoid"), d$x, d$y2, threshold = 0.5),
                   67 / 100)
  expect_identical(ag_accuracy(.bin_model(W2, B2, "sigmoid"), d$x, rep(0, 50)), 17 / 50)
  bad <- d$y
  bad[1, 3] <- 2
  expect_error(ag_accuracy(m, d$x, bad), paste0("^ag_accuracy: binary targets must be in ",
               "\\[0, 1\\] \\(0/1 labels\\), got 2 at row 1, column 3$"),
               class = "pyggmlr_value_error")
  expect_error(ag_accuracy(m, d$x, d$y, threshold = "0.5"),
               "^ag_accuracy: threshold must be a number or NULL")
})

test_that("BCE targets outside [0, 1] are refused before training", {
  d <- .bin_data()
  for (loss in c("binary_cross_entropy", "bce_with_logits")) for (bad in c(2, -1)) {
    y <- d$y
    y[1, 4] <- bad
    m <- .bin_model(W1, B1, "sigmoid")
    expect_error(.bin_fit(m, d, y, loss, lr = 0.1),
                 sprintf(paste0("^ag_fit: %s targets must be in \\[0, 1\\] \\(0/1 labels\\), ",
                                "got %s at row 1, column 4$"), loss, format(bad)),
                 class = "pyggmlr_value_error")
    expect_equal(m$parameters()$layer1_W$data, W1, tolerance = 1e-7)
  }
})

test_that("cross_entropy classes must fit the model's outputs", {
  d <- .bin_data()
  m <- ag_sequential(ag_linear(3, 3))
  expect_error(ag_fit(m, d$x, (0:49) %% 4, nepoch = 1L, silent = TRUE),
               paste0("^ag_fit: y holds class ids up to 3 \\(4 classes\\) but the model has 3 ",
                      "outputs; ids are 0-based, in \\[0, 3\\)$"), class = "pyggmlr_value_error")
  # a factor's levels (unused ones too) or character y's classes: Python's Categorical / strings
  # give the same texts (tests/train/test_predict.py)
  fewer <- paste0("ag_fit: y's labels have 2 classes (a factor's levels, a Categorical's ",
                  "categories) but the model has 3 outputs; give the model one output per class ",
                  "(or keep every class: factor(y, levels = ...), ",
                  "pd.Categorical(y, categories=...))")
  more <- paste0("ag_fit: y's labels have 4 classes (a factor's levels, a Categorical's ",
                 "categories) but the model has 3 outputs; give the model one output per class ",
                 "(unused ones count: droplevels(y), y.cat.remove_unused_categories())")
  for (y in list(factor(rep(c("a", "b"), 25)), rep(c("a", "b"), 25)))
    expect_identical(tryCatch(ag_fit(m, d$x, y, nepoch = 1L, silent = TRUE),
                              pyggmlr_value_error = conditionMessage), fewer)
  expect_identical(tryCatch(ag_fit(m, d$x, factor(rep(letters[1:3], length.out = 50),
                                                  levels = letters[1:4]), nepoch = 1L,
                                   silent = TRUE), pyggmlr_value_error = conditionMessage), more)
  # a first level unused gives ids 1..3: the levels' text, not the 1-based hint for plain ids
  expect_identical(tryCatch(ag_fit(m, d$x, factor(rep(letters[2:4], length.out = 50),
                                                  levels = letters[1:4]), nepoch = 1L,
                                   silent = TRUE), pyggmlr_value_error = conditionMessage), more)
  h <- ag_fit(m, d$x, (0:49) %% 2, nepoch = 1L, silent = TRUE)  # a class absent: fine
  expect_length(h$loss, 1L)
  h <- ag_fit(m, d$x, factor(rep(c("a", "b", "c"), length.out = 50)), nepoch = 1L, silent = TRUE)
  expect_identical(attr(h, "levels"), c("a", "b", "c"))
})

test_that("NA in x or y is refused before training, naming its row and column", {
  d <- .bin_data()
  x <- d$x
  x[2, 7] <- NA
  expect_error(.bin_fit(.bin_model(W1, B1), list(x = x), d$y, "bce_with_logits"),
               "^ag_fit: x has 1 non-finite value \\(NaN or Inf\\), the first at row 2, column 7")
  f <- factor(ifelse(d$y[1, ] > 0, "pos", "neg"))
  f[c(4, 9)] <- NA  # a factor's NA: the same words
  expect_error(ag_fit(ag_sequential(ag_linear(3, 2)), d$x, f, nepoch = 1L, silent = TRUE),
               paste0("^ag_fit: y has 2 missing values \\(NA\\), the first at row 1, column 4; ",
                      "give finite data"), class = "pyggmlr_value_error")
  y <- d$y
  y[1, 8] <- NA
  expect_error(.bin_fit(.bin_model(W1, B1), d, y, "bce_with_logits"),
               "^ag_fit: y has 1 non-finite value \\(NaN or Inf\\), the first at row 1, column 8")
})

test_that("formula and data.frame calls: model.matrix without intercept, factor responses", {
  local_f64()
  d <- .bin_data()
  df <- data.frame(a = d$x[1, ], b = d$x[2, ], c = d$x[3, ],
                   cls = factor(ifelse(d$y[1, ] > 0, "pos", "neg")))
  # a 2-level factor is a binary target (its second level is 1) for the BCE losses
  h <- ag_fit(.bin_model(W1, B1), cls ~ ., data = df, loss = "bce_with_logits",
              optimizer = "sgd", lr = 0, nepoch = 1L, batch_size = 10L, shuffle = FALSE,
              val_split = 0.2, silent = TRUE)
  expect_identical(h$accuracy, 27 / 40)
  expect_identical(attr(h, "levels"), c("neg", "pos"))
  # the same with x a data.frame of features and y the factor, and a formula's numeric response
  h2 <- ag_fit(.bin_model(W1, B1), x = df[1:3], y = df$cls, loss = "bce_with_logits",
               optimizer = "sgd", lr = 0, nepoch = 1L, batch_size = 10L, shuffle = FALSE,
               val_split = 0.2, silent = TRUE)
  expect_identical(h2$accuracy, h$accuracy)
  df$num <- d$y[1, ]
  h3 <- ag_fit(.bin_model(W1, B1), num ~ a + b + c, data = df, loss = "bce_with_logits",
               optimizer = "sgd", lr = 0, nepoch = 1L, batch_size = 10L, shuffle = FALSE,
               val_split = 0.2, silent = TRUE)
  expect_identical(h3$accuracy, h$accuracy)
  # a factor feature becomes its dummy columns (all levels: no intercept), NA is not dropped
  df$g <- factor(rep(c("u", "v"), 25))
  h4 <- ag_fit(ag_sequential(ag_linear(4, 2)), cls ~ a + b + g, data = df, nepoch = 1L,
               silent = TRUE)
  expect_length(h4$accuracy, 1L)
  df$a[5] <- NA
  expect_error(ag_fit(ag_sequential(ag_linear(4, 2)), cls ~ a + b + g, data = df, nepoch = 1L,
                      silent = TRUE), "the first at row 1, column 5")
  expect_error(ag_fit(ag_sequential(ag_linear(4, 2)), cls ~ a + b + g, nepoch = 1L),
               "^ag_fit: a formula x needs data = a data.frame, got NULL")
  expect_error(ag_fit(ag_sequential(ag_linear(3, 2)), d$x, d$y, data = df),
               "^ag_fit: data = is for a formula x")
  # a column the data lack: model.frame's text inside ag_fit's classed condition
  expect_error(ag_fit(ag_sequential(ag_linear(4, 2)), cls ~ a + nope, data = df, nepoch = 1L),
               "^ag_fit: the formula does not fit data: .*nope", class = "pyggmlr_value_error")
})
