# ag_fit(class_weight =)'s names (pg_fit_class_keys, Python's dict keys too): with labels y (a
# factor, unused levels included, or characters) the labels, never class ids; with class-id y,
# ids. Python's tests/train/test_fit_weight_keys.py has the same cases.

keys_x <- matrix(stats::rnorm(120), 4)
keys_ids <- rep(c(1, 0, 2), 10)
keys_lab <- rep(c("b", "a", "c"), 10)  # classes a, b, c: ids 1, 0, 2

keys_fit <- function(y, k = 3L, loss = "cross_entropy", act = NULL, ...) {
  ggml_set_seed(5L)
  ag_fit(ag_linear(4L, k, act), keys_x, y, loss = loss, nepoch = 2L, batch_size = 10L,
         silent = TRUE, seed = 1L, ...)
}

test_that("labels key class_weight as their ids", {
  want <- keys_fit(keys_ids, class_weight = c("0" = 2, "2" = 0.5))$loss
  expect_false(identical(want, keys_fit(keys_ids)$loss))
  expect_identical(keys_fit(keys_lab, class_weight = c(a = 2, c = 0.5))$loss, want)
  expect_identical(keys_fit(factor(keys_lab), class_weight = c(c = 0.5, a = 2))$loss, want)
  # an unused level is a class of the run (as an unused category in Python)
  f4 <- factor(keys_lab, levels = c("a", "b", "c", "d"))
  expect_identical(keys_fit(f4, k = 4L, class_weight = c(d = 3))$loss,
                   keys_fit(keys_ids, k = 4L, class_weight = c("3" = 3))$loss)
  # validation_data's labels are coded with y's; validation stays unweighted
  h <- keys_fit(keys_lab, class_weight = c(a = 2),
                validation_data = list(keys_x[, 1:6], keys_lab[1:6]))
  g <- keys_fit(keys_ids, class_weight = c("0" = 2),
                validation_data = list(keys_x[, 1:6], keys_ids[1:6]))
  expect_identical(list(h$loss, h$val_loss), list(g$loss, g$val_loss))
  # two labels with a binary loss: the second is 1
  yb <- ifelse(keys_ids > 0, "yes", "no")
  expect_identical(
    keys_fit(yb, 1L, "binary_cross_entropy", "sigmoid", class_weight = c(yes = 3))$loss,
    keys_fit(matrix(as.numeric(keys_ids > 0), 1), 1L, "binary_cross_entropy", "sigmoid",
             class_weight = c("1" = 3))$loss)
  # an empty class_weight is none (keras), in both languages
  expect_identical(keys_fit(keys_lab, class_weight = numeric(0))$loss, keys_fit(keys_lab)$loss)
})

test_that("bad class_weight keys are refused with Python's texts", {
  not_a_label <- paste("is not one of y's labels ('a', 'b', 'c'); with labels y, class_weight",
                       "is keyed by label, not by class id")
  missing <- "class_weight has a missing key (NA or None); key each weight by its class"
  cases <- list(
    list(keys_lab, c("0" = 2), paste("class_weight's key '0'", not_a_label)),
    list(keys_lab, c("-1" = 2), paste("class_weight's key '-1'", not_a_label)),
    list(keys_lab, c(a = 1, z = 2), paste("class_weight's key 'z'", not_a_label)),
    list(keys_lab, c(a = 1, a = 2), "class_weight names the class 'a' twice"),
    list(keys_lab, stats::setNames(1, NA), missing),
    list(keys_ids, stats::setNames(1, NA), missing),
    list(keys_ids, c(a = 2),
         "class_weight's keys must be 0-based class ids (y holds class ids, not labels); got 'a'"),
    list(keys_ids, c("-1" = 2),
         "class_weight's keys must be 0-based class ids (whole numbers >= 0); got -1"),
    # a bad weight names its class by label with labels y (issue 29: it named the id)
    list(keys_lab, c(a = 1, c = -2), "class_weight must be finite and >= 0; class 'c' has -2"),
    list(keys_lab, c(1, NA), "class_weight must be finite and >= 0; class 'b' has NA"),
    list(keys_ids, c("2" = -2), "class_weight must be finite and >= 0; class 2 has -2"))
  for (cs in cases) {
    e <- tryCatch(keys_fit(cs[[1]], class_weight = cs[[2]]), error = identity)
    expect_s3_class(e, "pyggmlr_value_error")
    expect_identical(conditionMessage(e), paste0("ag_fit: ", cs[[3]]))
  }
  e <- tryCatch(keys_fit(keys_lab, class_weight = "abc"), error = identity)
  expect_s3_class(e, "pyggmlr_argument_error")
  expect_identical(conditionMessage(e), paste(
    "ag_fit: class_weight must be a numeric vector named by class, or of weights in class-id",
    "order, got \"abc\""))
})

test_that("a bad weight's label is cut to 40 code points, as the keys", {
  long <- strrep("\u00e9", 50)  # 2 bytes each: the cut counts code points
  y <- ifelse(keys_lab == "c", long, keys_lab)
  e <- tryCatch(keys_fit(y, class_weight = stats::setNames(-2, long)), error = identity)
  expect_s3_class(e, "pyggmlr_value_error")
  expect_identical(conditionMessage(e), paste0(
    "ag_fit: class_weight must be finite and >= 0; class '", strrep("\u00e9", 40), "' has -2"))
})

test_that("a factor of numbers names its classes by its levels (Python's numeric categories too)", {
  f <- factor(c(2, 1, 1e5)[rep(1:3, 10)])  # levels "1", "2", "1e+05", as Python's (issue 29)
  e <- tryCatch(keys_fit(f, class_weight = c("2" = -1)), error = identity)
  expect_s3_class(e, "pyggmlr_value_error")
  expect_identical(conditionMessage(e),
                   "ag_fit: class_weight must be finite and >= 0; class '2' has -1")
  e <- tryCatch(keys_fit(f, class_weight = c("2.0" = 1)), error = identity)
  expect_identical(conditionMessage(e), paste(
    "ag_fit: class_weight's key '2.0' is not one of y's labels ('1', '2', '1e+05'); with labels y,",
    "class_weight is keyed by label, not by class id"))
})

test_that("labels are checked with the targets, after the other arguments (Python's order too)", {
  lab_na <- rep(c("a", NA, "b"), 10)
  cases <- list(
    list(lab_na, list(nepoch = 0), "ag_fit: nepoch must be an integer >= 1, got 0"),
    list(keys_lab, list(loss = "mse", metrics = "auc"), paste(
      'ag_fit: metrics: "auc" needs a classification loss (cross_entropy, binary_cross_entropy,',
      "bce_with_logits); a regression takes mae, mse, rmse, r2")),
    list(keys_lab, list(loss = "xx"), paste(
      'ag_fit: unknown loss "xx"; use "cross_entropy", "mse", "mean", "sum",',
      '"binary_cross_entropy", "bce_with_logits", "huber", "mae" or a function(output, y)',
      "returning a 1x1 tensor")))
  for (cs in cases) {
    args <- utils::modifyList(list(ag_linear(4L, 3L), keys_x, cs[[1]], nepoch = 1L,
                                   batch_size = 10L, silent = TRUE), cs[[2]])
    e <- tryCatch(do.call(ag_fit, args), error = identity)
    expect_s3_class(e, "pyggmlr_value_error")
    expect_identical(conditionMessage(e), cs[[3]])
  }
})
