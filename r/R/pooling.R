# Pooling and flatten on image batches [C*H*W, N] (issue 30), as Python's nn/pooling.py: each
# column one image, R's array dim c(W, H, C) (numpy's (C, H, W)); a 1-D signal has H = 1. Sizes
# are a number or a pair c(H, W), shapes torch's c(C, H, W); the core (native/ops_pool.c)
# checks them, pools and differentiates, and tags the result with its image shape.

# a number (every position) or n numbers as doubles for the core (which checks they are whole
# and in range); NULL stays NULL. A list (a config read back from JSON) is taken as its values.
.pool_sizes <- function(v, fn, arg, n) {
  if (is.null(v)) return(NULL)
  if (is.list(v) && is.null(names(v)) &&  # a named list is refused, as Python's dict (issue 29)
      all(vapply(v, function(e) is.numeric(e) && length(e) == 1L, logical(1))))
    v <- unlist(v)
  if (!is.numeric(v) || is.factor(v) || !length(v) %in% c(1L, n))
    .arg_fail("argument", "%s: %s must be %s, got %s", fn, arg,
              if (n == 1L) "a number" else "a number or a pair c(H, W) of numbers", .arg_show(v))
  rep_len(as.double(v), n)
}

.pool_shape <- function(v, fn, n) {
  if (is.null(v)) return(NULL)
  u <- if (is.list(v)) unlist(v) else v  # a list of numbers too, as the convolutions' (JSON)
  if (!is.numeric(u) || is.factor(u) || length(u) != n || length(v) != n)
    .arg_fail("argument", "%s: input_shape must be %d numbers %s or NULL, got %s", fn, n,
              if (n == 3L) "c(C, H, W)" else "c(C, L)", .arg_show(v))
  as.double(u)
}

.pool <- function(x, kind, dims, kernel_size, stride, padding, input_shape, fn) {
  x <- .need_tensor(x, fn)
  .wrap(.Call(R_pg_pool, x$.ptr, .pg$code$pool[[kind]], dims,
              .pool_shape(input_shape, fn, dims + 1L),
              .pool_sizes(kernel_size, fn, "kernel_size", dims),
              .pool_sizes(stride, fn, "stride", dims), .pool_sizes(padding, fn, "padding", dims),
              fn))
}

.global_pool <- function(x, kind, input_shape, fn) {
  x <- .need_tensor(x, fn)
  if (is.numeric(input_shape) && length(input_shape) == 2L)
    input_shape <- c(input_shape[[1L]], 1, input_shape[[2L]])  # a 1-D signal c(C, L)
  .wrap(.Call(R_pg_global_pool, x$.ptr, .pg$code$pool[[kind]], .pool_shape(input_shape, fn, 3L),
              fn))
}

ag_max_pool2d_op <- function(x, kernel_size, stride = NULL, padding = 0, input_shape = NULL)
  .pool(x, "MAX", 2L, kernel_size, stride, padding, input_shape, "ag_max_pool2d_op")

ag_avg_pool2d_op <- function(x, kernel_size, stride = NULL, padding = 0, input_shape = NULL)
  .pool(x, "AVG", 2L, kernel_size, stride, padding, input_shape, "ag_avg_pool2d_op")

ag_max_pool1d_op <- function(x, kernel_size, stride = NULL, padding = 0, input_shape = NULL)
  .pool(x, "MAX", 1L, kernel_size, stride, padding, input_shape, "ag_max_pool1d_op")

ag_avg_pool1d_op <- function(x, kernel_size, stride = NULL, padding = 0, input_shape = NULL)
  .pool(x, "AVG", 1L, kernel_size, stride, padding, input_shape, "ag_avg_pool1d_op")

ag_global_avg_pool_op <- function(x, input_shape = NULL)
  .global_pool(x, "AVG", input_shape, "ag_global_avg_pool_op")

ag_global_max_pool_op <- function(x, input_shape = NULL)
  .global_pool(x, "MAX", input_shape, "ag_global_max_pool_op")

# the pooling layers: sizes checked by the core at construction, the input's tag read by forward
.pool_layer <- function(kind, op, dims, kernel_size, stride, padding) {
  fn <- paste0("ag_", kind)
  k <- .pool_sizes(kernel_size, fn, "kernel_size", dims)
  s <- .pool_sizes(stride, fn, "stride", dims)
  p <- .pool_sizes(padding, fn, "padding", dims)
  .Call(R_pg_pool_check, .pg$code$pool[[op]], dims, k, s, p, fn)
  e <- .layer(kind, sprintf("%s(%s)", kind, paste(as.integer(k), collapse = "x")))
  e$kernel_size <- as.integer(k)
  e$stride <- if (is.null(s)) NULL else as.integer(s)
  e$padding <- as.integer(p)
  e$forward <- function(x) .pool(x, op, dims, e$kernel_size, e$stride, e$padding, NULL, fn)
  e$parameters <- function() list()
  e$to_config <- function() list(type = kind, kernel_size = e$kernel_size, stride = e$stride,
                                 padding = e$padding)
  e
}

ag_max_pool2d <- function(kernel_size, stride = NULL, padding = 0)
  .pool_layer("max_pool2d", "MAX", 2L, kernel_size, stride, padding)

ag_avg_pool2d <- function(kernel_size, stride = NULL, padding = 0)
  .pool_layer("avg_pool2d", "AVG", 2L, kernel_size, stride, padding)

ag_max_pool1d <- function(kernel_size, stride = NULL, padding = 0)
  .pool_layer("max_pool1d", "MAX", 1L, kernel_size, stride, padding)

ag_avg_pool1d <- function(kernel_size, stride = NULL, padding = 0)
  .pool_layer("avg_pool1d", "AVG", 1L, kernel_size, stride, padding)

.plain_layer <- function(kind, forward) {
  e <- .layer(kind, kind)
  e$forward <- forward
  e$parameters <- function() list()
  e$to_config <- function() list(type = kind)
  e
}

ag_global_avg_pool <- function()
  .plain_layer("global_avg_pool", function(x) .global_pool(x, "AVG", NULL, "ag_global_avg_pool"))

ag_global_max_pool <- function()
  .plain_layer("global_max_pool", function(x) .global_pool(x, "MAX", NULL, "ag_global_max_pool"))

# in this layout an image batch is already [C*H*W, N]: flatten copies the values unchanged (a
# reshape) and clears the image tag
ag_flatten <- function()
  .plain_layer("flatten", function(x) {
    x <- .need_tensor(x, "ag_flatten")
    d <- dim(x)
    ag_reshape(x, d[[1L]], d[[2L]])
  })
