# R's model idioms for ag_fit, an R-only front end (Python has no formulas): a formula with
# data = a data.frame, or a data.frame x with factor / character columns. Features go through
# model.matrix without an intercept, transposed to [features, n]; the response is y as it is
# (a factor stays one: .fit_targets makes it 0-based ids and keeps its levels). Missing values
# are passed on (na.pass), so the core's non-finite check names their row and column instead of
# model.frame dropping samples silently.
.fit_formula <- function(x, y, data) {
  if (inherits(x, "formula")) {
    if (!is.null(y))
      .arg_fail("argument", "ag_fit: x is a formula, which names the response: give y = NULL")
    if (!is.data.frame(data))
      .arg_fail("argument", "ag_fit: a formula x needs data = a data.frame, got %s",
                class(data)[[1L]])
    mf <- .fit_frame(x, data)
    # the response: a factor stays one, characters become one (fit_data.R: code-point order, as
    # Python), a matrix (cbind(a, b) ~ .) [n, k] is transposed to [k, n], the rest a vector
    y <- stats::model.response(mf)
    y <- if (is.null(y) || is.factor(y)) y else if (is.character(y)) .labels_factor(y) else
      if (is.matrix(y)) t(y) else as.vector(y)
    return(list(x = .fit_design(mf), y = y, terms = .fit_terms(mf)))
  }
  if (!is.null(data))
    .arg_fail("argument", "ag_fit: data = is for a formula x (y ~ ., data = df), got x a %s",
              class(x)[[1L]])
  if (is.data.frame(x) && !all(vapply(x, function(col) is.numeric(col) || is.logical(col),
                                      logical(1)))) {
    mf <- .fit_frame(~ ., x)
    x <- .fit_design(mf)
    return(list(x = x, y = y, terms = .fit_terms(mf)))
  }
  list(x = x, y = y)
}

# what predict() needs to build the same model matrix from new data: the terms without the
# response, with the factor levels seen (predict.R)
.fit_terms <- function(mf) {
  tt <- stats::delete.response(stats::terms(mf))
  attr(tt, "xlevels") <- stats::.getXlevels(stats::terms(mf), mf)
  tt
}

# model.frame's own errors (a column the data lack, a bad term) as ag_fit's classed condition
.fit_frame <- function(f, data) {
  tryCatch(stats::model.frame(f, data, na.action = stats::na.pass), error = function(e)
    .arg_fail("value", "ag_fit: the formula does not fit data: %s", conditionMessage(e)))
}

# model.matrix of a model frame without an intercept, one column per sample
.fit_design <- function(mf) {
  tt <- stats::terms(mf)
  attr(tt, "intercept") <- 0L
  X <- stats::model.matrix(tt, mf)
  attr(X, "assign") <- attr(X, "contrasts") <- NULL
  t(X)
}
