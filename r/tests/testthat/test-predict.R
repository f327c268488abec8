# ag_predict(type =), predict() methods and class labels (issue 31; native/predict.c,
# native/modelfile_target.c): probabilities against base R's closed forms, classes (arg-max,
# threshold), a factor's levels on the model and in its file, formula models, the refusals.

pred_x <- function(seed = 1L, n = 30L) {
  set.seed(seed)
  matrix(rnorm(4L * n), 4L, n)
}

pred_fit <- function(out, y, loss, act = NULL) {
  ag_dtype("f64")
  on.exit(ag_dtype("f32"), add = TRUE)
  m <- ag_sequential(ag_linear(4, 8, "relu"), ag_linear(8, out, act))
  ag_fit(m, pred_x(), y, loss = loss, nepoch = 3L, batch_size = 10L, silent = TRUE, seed = 1L)
  m
}

pred_labels <- function(k, seed = 2L) {
  set.seed(seed)
  factor(sample(c("lion", "bear", "\u00e9lan")[seq_len(k)], 30L, replace = TRUE))
}

test_that("prob: softmax for cross_entropy, sigmoid for bce_with_logits (closed forms)", {
  m <- pred_fit(3L, pred_labels(3L), "cross_entropy")
  out <- ag_predict(m, pred_x(5L))
  p <- ag_predict(m, pred_x(5L), type = "prob")
  ref <- apply(out, 2L, function(v) exp(v - max(v)) / sum(exp(v - max(v))))
  expect_equal(p, ref, tolerance = 1e-12)
  expect_equal(colSums(p), rep(1, 30L), tolerance = 1e-14)
  set.seed(4)
  mb <- pred_fit(1L, matrix(rbinom(30L, 1L, 0.5), 1L), "bce_with_logits")
  ob <- ag_predict(mb, pred_x(5L))
  expect_equal(ag_predict(mb, pred_x(5L), type = "prob"), stats::plogis(ob), tolerance = 1e-13)
  expect_identical(ag_predict(mb, pred_x(5L), type = "class"), as.integer(ob[1L, ] > 0))
})

test_that("binary_cross_entropy: probabilities as they are, threshold 0.5", {
  set.seed(4)
  m <- pred_fit(1L, matrix(rbinom(30L, 1L, 0.5), 1L), "binary_cross_entropy", "sigmoid")
  out <- ag_predict(m, pred_x(5L))
  expect_identical(ag_predict(m, pred_x(5L), type = "prob"), out)
  expect_identical(ag_predict(m, pred_x(5L), type = "class"), as.integer(out[1L, ] > 0.5))
})

test_that("class: a factor with the levels ag_fit saw; 0-based ids without labels", {
  y <- pred_labels(3L)
  m <- pred_fit(3L, y, "cross_entropy")
  expect_identical(m$classes, levels(y))
  expect_identical(m$loss, "cross_entropy")
  out <- ag_predict(m, pred_x(5L))
  cl <- predict(m, pred_x(5L), type = "class")
  expect_s3_class(cl, "factor")
  expect_identical(levels(cl), levels(y))
  expect_identical(as.integer(cl), max.col(t(out), ties.method = "first"))
  expect_identical(predict(m, pred_x(5L)), out)  # type defaults to "response"
  m2 <- pred_fit(3L, as.integer(y) - 1L, "cross_entropy")
  expect_null(m2$classes)
  ids <- ag_predict(m2, pred_x(5L), type = "class")
  expect_type(ids, "integer")
  expect_identical(ids, max.col(t(ag_predict(m2, pred_x(5L))), ties.method = "first") - 1L)
})

test_that("a 2-level factor with bce_with_logits: the second level is 1", {
  set.seed(6)
  y <- factor(ifelse(runif(30L) > 0.5, "yes", "no"))
  m <- pred_fit(1L, y, "bce_with_logits")
  out <- ag_predict(m, pred_x(5L))
  expect_identical(as.character(predict(m, pred_x(5L), type = "class")),
                   ifelse(out[1L, ] > 0, "yes", "no"))
})

test_that("save -> load keeps the labels and the loss; the file's target", {
  m <- pred_fit(3L, pred_labels(3L), "cross_entropy")
  f <- tempfile(fileext = ".safetensors")
  on.exit(unlink(f), add = TRUE)
  ag_save_model(m, f)
  tg <- ag_model_info(f)$target
  expect_identical(tg, list(loss = "cross_entropy", classify = "argmax", classes = m$classes))
  m2 <- ag_load_model(f)
  expect_identical(m2$classes, m$classes)
  expect_identical(predict(m2, pred_x(5L), type = "class"), predict(m, pred_x(5L), type = "class"))
  expect_output(print(m2), "classes \\(3\\): bear, lion, \u00e9lan")
  expect_output(print(summary(m2)), "loss: cross_entropy")
})

test_that("ag_model_info's target without labels: its three entries (as Python's)", {
  m <- pred_fit(2L, matrix(rnorm(60L), 2L, 30L), "mse")
  f <- tempfile(fileext = ".safetensors")
  on.exit(unlink(f), add = TRUE)
  ag_save_model(m, f)
  expect_identical(ag_model_info(f)$target, list(loss = "mse", classify = "none", classes = NULL))
})

test_that("a file without a target loads; loss = says how outputs are read", {
  m <- ag_sequential(ag_linear(4, 3))
  f <- tempfile(fileext = ".safetensors")
  on.exit(unlink(f), add = TRUE)
  ag_save_model(m, f)
  expect_null(ag_model_info(f)$target)
  m2 <- ag_load_model(f)
  expect_error(ag_predict(m2, pred_x(), type = "class"),
               "ag_predict: type = \"class\" needs to know", class = "pyggmlr_value_error")
  expect_identical(ag_predict(m2, pred_x(), type = "class", loss = "cross_entropy"),
                   max.col(t(ag_predict(m2, pred_x())), ties.method = "first") - 1L)
})

test_that("refusals: bad type, no classifier loss, unknown loss, labels that do not fit", {
  set.seed(1)
  m <- pred_fit(2L, matrix(rnorm(60L), 2L), "mse")
  expect_error(ag_predict(m, pred_x(), type = "probs"),
               "type must be \"response\", \"prob\" or \"class\", got \"probs\"",
               class = "pyggmlr_value_error")
  expect_error(ag_predict(m, pred_x(), type = 3), "got 3", class = "pyggmlr_value_error")
  expect_error(predict(m, pred_x(), type = "prob"), "needs a classifier.*loss \"mse\"",
               class = "pyggmlr_value_error")
  expect_error(ag_predict(m, pred_x(), type = "prob", loss = "hinge"),
               "ag_predict: unknown loss \"hinge\"", class = "pyggmlr_value_error")
  m$classes <- c("a", "b", "c")
  expect_error(ag_predict(m, pred_x(), type = "class", loss = "cross_entropy"),
               "2 outputs but 3 class labels", class = "pyggmlr_value_error")
  expect_error(predict(m), "newdata is required")
})

test_that("a formula model predicts on a data.frame through the same model matrix", {
  ag_dtype("f64")
  on.exit(ag_dtype("f32"), add = TRUE)
  df <- data.frame(a = c(0.1, 0.5, -1, 2, 0.3, 1), g = factor(c("u", "v", "u", "w", "v", "w")),
                   y = factor(c("p", "q", "p", "q", "q", "p")))
  m <- ag_sequential(ag_linear(4, 2))  # a + g (three levels, no intercept): 4 columns
  ag_fit(m, y ~ a + g, data = df, nepoch = 2L, batch_size = 3L, silent = TRUE, seed = 1L)
  X <- t(stats::model.matrix(~ a + g - 1, df))
  new <- df[c(2, 5), ]
  new$g <- factor(as.character(new$g))  # fewer levels than in training: xlev keeps them
  expect_identical(predict(m, new), ag_predict(m, X[, c(2, 5)]))
  expect_identical(levels(predict(m, new, type = "class")), c("p", "q"))
})

test_that("validation_data's factor is coded with y's levels (as Python's labels)", {
  x <- pred_x()
  y <- pred_labels(3L)
  xv <- pred_x(9L, 4L)
  yv <- factor(c("lion", "\u00e9lan", "lion", "\u00e9lan"))  # two levels, not y's order
  fit_val <- function(v) {
    set.seed(5)  # the same initial weights
    m <- ag_sequential(ag_linear(4, 3))
    h <- ag_fit(m, x, y, validation_data = list(xv, v), nepoch = 1L, batch_size = 10L,
                silent = TRUE, seed = 1L)
    as.data.frame(h)$val_loss[1L]
  }
  expect_identical(fit_val(yv), fit_val(match(as.character(yv), levels(y)) - 1L))
  expect_error(ag_fit(ag_sequential(ag_linear(4, 3)), x, y, nepoch = 1L, silent = TRUE,
                      validation_data = list(xv, c("lion", "wolf", "lion", "lion"))),
               "validation_data's y has the label 'wolf', which is not one of y's labels \\('bear'",
               class = "pyggmlr_value_error")
})

test_that("a model's own field named loss (a function) is left alone", {
  m <- ag_sequential(ag_linear(4, 2))
  m$loss <- function() "mine"
  ag_fit(m, pred_x(), rep(0:1, 15L), nepoch = 1L, batch_size = 10L, silent = TRUE)
  expect_identical(m$loss(), "mine")
  expect_error(ag_predict(m, pred_x(), type = "class"), "needs to know")
})

test_that("a character y is labels as Python's strings: code-point order, NA missing", {
  y <- as.character(pred_labels(3L))  # "bear", "lion", "\u00e9lan"
  yc <- c("b", "B", "a", "\u00e9", "Z")[rep_len(1:5, 30L)]
  m <- pred_fit(5L, yc, "cross_entropy")
  expect_identical(m$classes, c("B", "Z", "a", "b", "\u00e9"))  # never the locale's collation
  expect_identical(levels(ag_predict(m, pred_x(5L), type = "class")), m$classes)
  # the same bits as the factor with those levels
  ggml_set_seed(3L)  # the same initial weights
  f <- pred_fit(3L, factor(y, levels = sort(unique(y), method = "radix")), "cross_entropy")
  ggml_set_seed(3L)
  m <- pred_fit(3L, y, "cross_entropy")
  expect_identical(m$classes, f$classes)
  expect_identical(ag_predict(m, pred_x(5L)), ag_predict(f, pred_x(5L)))
  y[5L] <- NA
  expect_error(pred_fit(3L, y, "cross_entropy"),
               paste0("^ag_fit: y has 1 missing value \\(NA\\), the first at row 1, column 5; ",
                      "give finite data"), class = "pyggmlr_value_error")
  expect_error(pred_fit(3L, y[-5L], "mse"), "ag_fit: a factor or character y needs loss = ",
               fixed = TRUE, class = "pyggmlr_value_error")
  expect_error(pred_fit(3L, y[-5L], function(out, y) ag_mse_loss(out, y)),  # as Python's
               "ag_fit: a factor or character y needs loss = ", fixed = TRUE,
               class = "pyggmlr_value_error")
})

test_that("validation_data's missing labels are the core's text (as Python's)", {
  x <- pred_x()
  y <- as.character(pred_labels(3L))
  for (yv in list(c("lion", NA, "bear"), factor(c("lion", NA, "bear")))) {
    expect_error(ag_fit(ag_sequential(ag_linear(4, 3)), x, y, nepoch = 1L, silent = TRUE,
                        validation_data = list(pred_x(9L, 3L), yv)),
                 paste0("^ag_fit: validation_data y has 1 missing value \\(NA\\), the first at ",
                        "row 1, column 2; give finite data \\(remove or impute those samples\\)$"),
                 class = "pyggmlr_value_error")
  }
  expect_error(ag_fit(ag_sequential(ag_linear(4, 3)), x, y, nepoch = 1L, silent = TRUE,
                      validation_data = list(pred_x(9L, 3L), c("lion", "zz", "bear"))),
               "validation_data's y has the label 'zz', which is not one of y's labels",
               class = "pyggmlr_value_error")
})

test_that("the [features, n] rule is the core's: a vector is one row, more dims refused", {
  m <- ag_linear(1, 2)
  expect_equal(dim(ag_predict(m, c(1, 2, 3))), c(2L, 3L))
  expect_equal(dim(ag_predict(m, array(c(1, 2, 3), 3L))), c(2L, 3L))  # a 1-d array too
  msg <- "ag_predict: x must be a [features, n] matrix (samples are columns), got a 2x3x4 array"
  expect_error(ag_predict(m, array(0, c(2L, 3L, 4L))), msg, fixed = TRUE,
               class = "pyggmlr_shape_error")
})

test_that("string labels are one a sample (the core's rule and text, as Python's)", {
  y <- matrix(c("a", "b", "a", "b", "a", "b"), 2L, 3L)
  expect_error(ag_fit(ag_linear(4, 2), pred_x(n = 3L), y, nepoch = 1L, silent = TRUE),
               "ag_fit: labels y must be one label per sample (a vector), got a 2x3 array",
               fixed = TRUE, class = "pyggmlr_value_error")
})
