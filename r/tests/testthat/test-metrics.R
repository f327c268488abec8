# Metrics (issue 31): ag_evaluate's values (computed in the core, native/metrics.c) against base
# R formulas: table() for the confusion matrix and precision / recall / f1, the Wilcoxon
# statistic with average ranks for the AUC, per-output means for mae / mse / rmse / r2. The same
# data as Python's tests/train/test_metrics.py, whose numbers are scikit-learn's.

.lin <- function(w, b, act = NULL) {
  m <- ag_sequential(if (is.null(act)) ag_linear(ncol(w), nrow(w)) else
    ag_linear(ncol(w), nrow(w), act))
  p <- m$parameters()
  p$layer1_W$data <- w
  p$layer1_b$data <- b
  m
}
.xs <- function(rows, n) matrix(sin(0.7 * seq_len(rows * n)), rows)
.wilcox_auc <- function(s, y) {
  r <- rank(s)  # average ranks for ties
  np <- sum(y == 1)
  (sum(r[y == 1]) - np * (np + 1) / 2) / (np * sum(y == 0))
}
.prf <- function(t, p, k) {  # per class precision, recall, f1 from table(true, pred)
  cm <- table(factor(t, 0:(k - 1)), factor(p, 0:(k - 1)))
  tp <- diag(cm)
  pr <- ifelse(colSums(cm) > 0, tp / colSums(cm), 0)
  rc <- ifelse(rowSums(cm) > 0, tp / rowSums(cm), 0)
  f1 <- ifelse(2 * tp + (colSums(cm) - tp) + (rowSums(cm) - tp) > 0,
               2 * tp / (2 * tp + (colSums(cm) - tp) + (rowSums(cm) - tp)), 0)
  seen <- rowSums(cm) + colSums(cm) > 0
  list(cm = cm, p = pr, r = rc, f1 = f1, seen = seen)
}

test_that("binary metrics: Wilcoxon AUC with ties, positive-class precision / recall / f1", {
  local_f64()
  x <- round(.xs(1, 60), 1)
  y <- matrix(as.double(sin(1.3 * (0:59)) + x[1, ] > 0.1), 1)
  m <- .lin(matrix(1), matrix(0))
  r <- ag_evaluate(m, x, y, metrics = c("auc", "precision", "recall", "f1", "f1_macro",
                                        "f1_micro", "accuracy", "confusion_matrix"),
                   threshold = 0)
  s <- x[1, ]
  t <- y[1, ]
  p <- as.double(s > 0)
  expect_true(anyDuplicated(s) > 0)
  expect_equal(r$auc, .wilcox_auc(s, t), tolerance = 1e-12)
  k <- .prf(t, p, 2)
  expect_equal(r$precision, unname(k$p[2]), tolerance = 1e-12)
  expect_equal(r$recall, unname(k$r[2]), tolerance = 1e-12)
  expect_equal(r$f1, unname(k$f1[2]), tolerance = 1e-12)
  expect_equal(r$f1_macro, mean(k$f1[k$seen]), tolerance = 1e-12)
  expect_equal(r$f1_micro, mean(t == p), tolerance = 1e-12)
  expect_equal(r$accuracy, mean(t == p), tolerance = 1e-12)
  cm <- r$confusion_matrix
  expect_true(is.integer(cm))
  expect_identical(dimnames(cm), list(true = c("0", "1"), predicted = c("0", "1")))
  expect_equal(unname(unclass(cm)), unname(matrix(as.integer(k$cm), 2)))
})

test_that("cross_entropy metrics: macro averages over classes seen, a class never predicted", {
  local_f64()
  x <- .xs(3, 40)
  w <- rbind(c(1, 0, 0.2), c(0, 1, 0), c(0.3, 0.3, 0.3), c(-5, -5, -5))
  m <- .lin(w, matrix(c(0, 0, 0, -9), 4))
  y <- matrix(as.double(((0:39) * 7) %% 4), 1)
  r <- ag_evaluate(m, x, y, loss = "cross_entropy",
                   metrics = c("accuracy", "precision", "recall", "f1", "f1_micro", "auc",
                               "confusion_matrix"))
  out <- ag_predict(m, x)
  p <- apply(out, 2, which.max) - 1
  t <- y[1, ]
  expect_false(3 %in% p)
  k <- .prf(t, p, 4)
  expect_equal(r$precision, mean(k$p[k$seen]), tolerance = 1e-12)
  expect_equal(r$recall, mean(k$r[k$seen]), tolerance = 1e-12)
  expect_equal(r$f1, mean(k$f1[k$seen]), tolerance = 1e-12)
  expect_equal(r$f1_micro, mean(t == p), tolerance = 1e-12)
  prob <- apply(out, 2, function(z) exp(z - max(z)) / sum(exp(z - max(z))))
  expect_equal(r$auc, mean(sapply(0:3, function(c) .wilcox_auc(prob[c + 1, ], t == c))),
               tolerance = 1e-12)
  expect_equal(r$loss, mean(-log(prob[cbind(t + 1, seq_along(t))])), tolerance = 1e-10)
  expect_equal(unname(unclass(r$confusion_matrix)), unname(matrix(as.integer(k$cm), 4)))
  f <- factor(c("a", "b", "c", "d")[t + 1])  # a factor's levels name the matrix
  expect_identical(rownames(ag_evaluate(m, x, f, metrics = "confusion_matrix")$confusion_matrix),
                   c("a", "b", "c", "d"))
})

test_that("regression metrics average over outputs uniformly", {
  local_f64()
  x <- .xs(3, 30)
  m <- .lin(rbind(c(1, 0.5, 0), c(0, 0.2, -1)), matrix(c(0.1, 0), 2))
  y <- rbind(x[1, ] + 0.3 * x[3, ], cos(0:29))
  r <- ag_evaluate(m, x, y, loss = "mse", metrics = c("mae", "mse", "rmse", "r2"))
  p <- ag_predict(m, x)
  expect_equal(r$mae, mean(abs(p - y)), tolerance = 1e-12)
  expect_equal(r$mse, mean((p - y)^2), tolerance = 1e-12)
  expect_equal(r$loss, r$mse, tolerance = 1e-12)
  expect_equal(r$rmse, mean(sqrt(rowMeans((p - y)^2))), tolerance = 1e-12)
  r2 <- 1 - rowSums((p - y)^2) / rowSums((y - rowMeans(y))^2)
  expect_equal(r$r2, mean(r2), tolerance = 1e-12)
})

test_that("refusals name ag_evaluate, the argument and the valid names", {
  m <- .lin(matrix(1), matrix(0))
  x <- .xs(1, 10)
  y <- matrix(as.double(x > 0), 1)
  expect_error(ag_evaluate(m, x, y, metrics = "AUC"),
               "ag_evaluate: metrics has an unknown name \"AUC\"; valid: accuracy", fixed = TRUE)
  expect_error(ag_evaluate(m, x, y, metrics = "auc", loss = "mse"),
               "ag_evaluate: metrics: \"auc\" needs a classification loss", fixed = TRUE)
  expect_error(ag_evaluate(m, x, y), "ag_evaluate: give loss, metrics or both", fixed = TRUE,
               class = "pyggmlr_argument_error")  # the core's text and kind, as Python's
  expect_error(ag_evaluate(m, x, y, metrics = 3), "ag_evaluate: metrics must be NULL")
  expect_error(ag_evaluate(m, x, y, loss = "nope"), "ag_evaluate: unknown loss \"nope\"",
               fixed = TRUE)
  expect_error(ag_evaluate(m, x, y * 2, metrics = "f1"), "binary targets must be in")
  # a loss's own refusal names ag_evaluate, not the loss op it runs
  m3 <- ag_sequential(ag_linear(1L, 3L))
  ids <- matrix(c(0, 1, 5, 2), 1)
  for (yy in list(ids, ids / 2))
    expect_error(ag_evaluate(m3, x[, 1:4, drop = FALSE], yy, loss = "cross_entropy"),
                 "^ag_evaluate: y must be 0-based class ids", class = "pyggmlr_value_error")
  expect_error(ag_evaluate(m3, x[, 1:4, drop = FALSE], matrix(0, 2, 4), loss = "mse"),
               "^ag_evaluate: pred is \\[3x4\\]")
})

# ---- ag_fit(metrics =) ---------------------------------------------------------------------------

# lr 0 and fixed weights: every epoch sees the same outputs, so the History's metrics equal
# ag_evaluate's on the trained columns (4 batches of 10 of 45) and the validation ones (15)
.fixed_fit <- function(static, ...) {
  x <- round(.xs(1, 60), 1)
  y <- matrix(as.double(sin(1.3 * (0:59)) + x[1, ] > 0.1), 1)
  m <- .lin(matrix(2), matrix(0.1), "sigmoid")
  a <- list(loss = "binary_cross_entropy", optimizer = "sgd", lr = 0, nepoch = 3L,
            batch_size = 10L, shuffle = FALSE, val_split = 0.25, silent = TRUE, static = static)
  a[names(list(...))] <- list(...)
  list(m = m, x = x, y = y, h = do.call(ag_fit, c(list(m, x, y), a)))
}

test_that("ag_fit's History has <name> and val_<name> columns over each whole epoch", {
  local_f64()
  for (static in c(FALSE, TRUE)) {
    r <- .fixed_fit(static, metrics = c("auc", "f1", "mse", "accuracy"))
    h <- r$h
    tr <- ag_evaluate(r$m, r$x[, 1:40, drop = FALSE], r$y[, 1:40, drop = FALSE],
                      metrics = c("auc", "f1", "mse"))
    va <- ag_evaluate(r$m, r$x[, 46:60, drop = FALSE], r$y[, 46:60, drop = FALSE],
                      metrics = c("auc", "f1", "mse"))
    for (k in c("auc", "f1", "mse")) {
      expect_identical(h[[k]], rep(tr[[k]], 3))
      expect_identical(h[[paste0("val_", k)]], rep(va[[k]], 3))
    }
  }
})

test_that("ag_fit refuses confusion_matrix, unknown names and metrics that do not fit the loss", {
  x <- .xs(1, 20)
  y <- matrix(as.double(x > 0), 1)
  m <- .lin(matrix(1), matrix(0))
  expect_error(ag_fit(m, x, y, loss = "bce_with_logits", metrics = "confusion_matrix",
                      silent = TRUE), "ag_fit: metrics: confusion_matrix is not a History column",
               fixed = TRUE)
  expect_error(ag_fit(m, x, y, loss = "bce_with_logits", metrics = "auroc", silent = TRUE),
               "ag_fit: metrics has an unknown name \"auroc\"", fixed = TRUE)
  expect_error(ag_fit(m, x, y, loss = "mse", metrics = "auc", silent = TRUE),
               "ag_fit: metrics: \"auc\" needs a classification loss", fixed = TRUE)
})

test_that("early stopping on val_auc / val_f1: mode auto maximizes; an absent metric is refused", {
  local_f64()
  for (mon in c("val_auc", "val_f1")) {
    es <- ag_early_stopping(patience = 2L, monitor = mon, restore_best = FALSE)
    h <- .fixed_fit(FALSE, metrics = c("auc", "f1"), nepoch = 10L, callbacks = list(es))$h
    expect_identical(length(h$epoch), 3L)
    expect_identical(h$stopped_epoch, 3L)
    expect_identical(es$best_epoch, 1L)
    expect_identical(es$best, h[[mon]][[1L]])
  }
  es <- ag_early_stopping(monitor = "val_auc")
  expect_error(.fixed_fit(FALSE, metrics = "f1", callbacks = list(es)),
               "measured only when ag_fit's metrics names \"auc\"", fixed = TRUE)
})

test_that("print shows the metric columns below the History's table", {
  local_f64()
  h <- .fixed_fit(FALSE, metrics = "auc", nepoch = 2L)$h
  out <- capture.output(print(h))
  expect_identical(out[length(out) - 2L], "epoch       auc   val_auc")
  expect_identical(out[length(out)], sprintf("    2  %8.4f  %8.4f", h$auc[2], h$val_auc[2]))
})

test_that("the per-epoch line shows the metrics", {
  local_f64()
  msgs <- testthat::capture_messages(h <- .fixed_fit(FALSE, metrics = "auc", nepoch = 1L,
                                                     silent = FALSE, verbose = 2L)$h)
  expect_true(any(grepl(sprintf("  auc=%.4f  val_auc=%.4f  (", h$auc, h$val_auc), msgs,
                        fixed = TRUE)))
})

test_that("ag_evaluate takes the model's loss and codes labels by its classes", {
  x <- t(as.matrix(iris[, 1:4]))
  ggml_set_seed(3)
  m <- ag_sequential(ag_normalization(x), ag_linear(4, 3))
  ag_fit(m, x, iris$Species, loss = "cross_entropy", nepoch = 3L, silent = TRUE, seed = 1L)
  by_label <- ag_evaluate(m, x, as.character(iris$Species),
                          metrics = c("accuracy", "confusion_matrix"))
  by_id <- ag_evaluate(m, x, as.integer(iris$Species) - 1L, loss = "cross_entropy",
                       metrics = c("accuracy", "confusion_matrix"))
  expect_named(by_label, c("loss", "accuracy", "confusion_matrix"))
  expect_identical(by_label$loss, by_id$loss)
  expect_identical(unname(by_label$confusion_matrix), unname(by_id$confusion_matrix))
  expect_identical(rownames(by_label$confusion_matrix), levels(iris$Species))
  expect_error(ag_evaluate(m, x[, 1:2], c("setosa", "wolf"), metrics = "accuracy"),
               "y has the label 'wolf', which is not one of the model's classes",
               class = "pyggmlr_value_error")
  h <- ag_fit(m, x, iris$Species, loss = "cross_entropy", nepoch = 2L, silent = TRUE,
              metrics = "f1_macro", val_split = 0.2, seed = 1L)
  expect_identical(as.data.frame(h)$val_f1_macro, h$val_f1_macro)  # metric columns included
})
