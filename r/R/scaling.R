# ag_normalization: keras3's layer_normalization() + adapt(), as Python's nn/scaling.py. The
# statistics are buffers (the state dict and model files keep them, no optimizer sees them); the
# core computes them (adapt), checks given ones and runs the op.

# a refused mean / variance in the text: a matrix by its shape (its values could be thousands),
# as Python's
.norm_got <- function(v) {
  d <- dim(v)
  if (length(d) < 2L) return(.arg_show(v))
  sprintf("a [%s] %s", paste(d, collapse = "x"), if (length(d) == 2L) "matrix" else "array")
}

.norm_vec <- function(v, name) {
  if (is_ag_tensor(v)) return(ag_tensor(v))
  if (!is.numeric(v) || is.factor(v) || length(v) == 0L ||
      (length(dim(v)) == 2L && !any(dim(v) == 1L)) || length(dim(v)) > 2L)
    .arg_fail("argument",
              paste0("ag_normalization: %s must be a non-empty numeric vector (one value per ",
                     "feature), got %s"),
              name, .norm_got(v))
  ag_tensor(matrix(as.double(v), ncol = 1L))
}

# data to a tensor of the layer's dtype (a tensor is taken as it is: the core names a mismatch)
.norm_x <- function(x, like) {
  if (is_ag_tensor(x)) return(x)
  if (is.numeric(x) && is.null(dim(x))) x <- matrix(x, ncol = 1L)
  tryCatch(ag_tensor(x, dtype = tolower(like$dtype)), pyggmlr_error = function(e) {
    e$message <- sub("^ag_tensor: ", "ag_normalization: ", conditionMessage(e))
    e$call <- NULL
    stop(e)
  })
}

ag_normalization <- function(x = NULL, mean = NULL, variance = NULL, features = NULL, eps = 1e-7) {
  fn <- "ag_normalization"
  eps <- .arg_num(eps, fn, "eps", 0)
  n_feat <- if (is.null(features)) NULL else .arg_int(features, fn, "features", 1L)
  if (is.null(mean) != is.null(variance))
    .pg_stop("argument", "ag_normalization: give both mean and variance, or neither")
  if (!is.null(x) && !is.null(mean))
    .pg_stop("argument", paste0("ag_normalization: give x (to compute mean and variance) or mean ",
                                "and variance, not both"))
  if (is.null(x) && is.null(mean) && is.null(n_feat))
    .pg_stop("argument", "ag_normalization: give x, mean and variance, or features")
  e <- .layer("normalization", "")
  e$eps <- eps
  if (!is.null(mean)) {
    e$mean <- .norm_vec(mean, "mean")
    e$variance <- .norm_vec(variance, "variance")
    .Call(R_pg_normalization_check, e$mean$.ptr, e$variance$.ptr,
          if (is.null(n_feat)) 0 else n_feat)
    e$features <- nrow(e$mean$data)
  } else {
    xt <- if (is.null(x)) NULL else .need_tensor(x, fn)
    f2 <- if (is.null(xt)) n_feat else dim(xt)[1L]
    if (!is.null(n_feat) && f2 != n_feat)
      .arg_fail("shape", "ag_normalization: features = %d but x has %d rows ([%s])", n_feat, f2,
                paste(dim(xt), collapse = "x"))
    dt <- if (is.null(xt)) ag_default_dtype() else tolower(xt$dtype)
    .layer_memory(fn, sprintf("allocating features = %d ([%dx1] mean and variance)", f2, f2),
                  2 * f2, {
      e$mean <- ag_tensor(matrix(0, f2, 1L), dtype = dt)
      e$variance <- ag_tensor(matrix(1, f2, 1L), dtype = dt)
    })
    e$features <- f2
  }
  e$name <- sprintf("normalization(%d)", e$features)
  e$adapt <- function(x) {
    x <- .norm_x(x, e$mean)
    .Call(R_pg_normalization_adapt, x$.ptr, e$mean$.ptr, e$variance$.ptr)
    invisible(e)
  }
  if (!is.null(x)) e$adapt(xt)
  e$forward <- function(x) {
    x <- .norm_x(x, e$mean)
    .wrap(.Call(R_pg_normalization, x$.ptr, e$mean$.ptr, e$variance$.ptr, e$eps))
  }
  e$parameters <- function() list()
  e$buffers <- function() list(mean = e$mean, variance = e$variance)
  e$to_config <- function() list(type = "normalization", features = e$features, eps = e$eps)
  e
}

print.ag_normalization <- function(x, ...) {
  cat(sprintf("ag_normalization(%d) | eps=%g\n", x$features, x$eps))
  invisible(x)
}
