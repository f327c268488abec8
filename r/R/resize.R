# Padding and upsampling of image batches [C*H*W, N] (issue 30), as Python's nn/resize.py: the
# ops read the image shape from input_shape (torch's c(C, H, W), or c(C, L) for 1-D) or the
# tensor's tag, the layers from the tag; the core (native/ops_resize.c) checks the arguments,
# pads or upsamples, differentiates and tags the result.

# padding: a number or numbers as doubles for the core, which checks the count and values
.pad_values <- function(v, fn, dims) {
  # an unnamed list of numbers as a vector (a named one is Python's dict: refused alike)
  if (is.list(v) && is.null(names(v)) &&
      all(vapply(v, function(e) is.numeric(e) && length(e) == 1L, logical(1))))
    v <- unlist(v)
  if (!is.numeric(v) || is.factor(v) || !length(v))
    .arg_fail("argument", "%s: padding must be %s, got %s", fn,
              if (dims == 2L) "a number, a pair c(H, W) or four c(left, right, top, bottom) numbers"
              else "a number or a pair c(left, right) of numbers", .arg_show(v))
  as.double(v)
}

.pad_value <- function(v, fn) {
  if (!is.numeric(v) || is.factor(v) || length(v) != 1L)
    .arg_fail("argument", "%s: value must be a number, got %s", fn, .arg_show(v))
  as.double(v)
}

.resize_mode <- function(v, fn) {
  if (!.is_str(v)) .arg_fail("argument", "%s: mode must be a string, got %s", fn, .arg_show(v))
  v
}

.pad <- function(x, dims, padding, value, mode, input_shape, fn) {
  x <- .need_tensor(x, fn)
  .wrap(.Call(R_pg_pad2d, x$.ptr, dims, .pool_shape(input_shape, fn, dims + 1L),
              .pad_values(padding, fn, dims), .pad_value(value, fn), .resize_mode(mode, fn), fn))
}

.upsample <- function(x, dims, scale_factor, mode, input_shape, fn) {
  x <- .need_tensor(x, fn)
  .wrap(.Call(R_pg_upsample2d, x$.ptr, dims, .pool_shape(input_shape, fn, dims + 1L),
              .pool_sizes(scale_factor, fn, "scale_factor", dims), .resize_mode(mode, fn), fn))
}

ag_pad2d_op <- function(x, padding, value = 0, mode = "constant", input_shape = NULL)
  .pad(x, 2L, padding, value, mode, input_shape, "ag_pad2d_op")

ag_pad1d_op <- function(x, padding, value = 0, mode = "constant", input_shape = NULL)
  .pad(x, 1L, padding, value, mode, input_shape, "ag_pad1d_op")

ag_upsample2d_op <- function(x, scale_factor, mode = "nearest", input_shape = NULL)
  .upsample(x, 2L, scale_factor, mode, input_shape, "ag_upsample2d_op")

# 1-D: torch's nn.Upsample on (N, C, L), modes "nearest" and "linear" (H = 1 bilinear)
ag_upsample1d_op <- function(x, scale_factor, mode = "nearest", input_shape = NULL)
  .upsample(x, 1L, scale_factor, mode, input_shape, "ag_upsample1d_op")

# the padding layers keep the padding as the core normalizes it: left, right, top, bottom
# (1-D: left, right)
.pad_layer <- function(kind, dims, padding, value, mode) {
  fn <- paste0("ag_", kind)
  value <- .pad_value(value, fn)
  mode <- .resize_mode(mode, fn)
  p <- .Call(R_pg_pad2d_check, dims, .pad_values(padding, fn, dims), value, mode, fn)
  p <- as.integer(p[seq_len(2L * dims)])
  e <- .layer(kind, sprintf("%s(%s%s)", kind, paste(p, collapse = ", "),
                            if (mode == "constant") "" else paste0(", ", mode)))
  e$padding <- p
  e$value <- value
  e$mode <- mode
  e$forward <- function(x) .pad(x, dims, e$padding, e$value, e$mode, NULL, fn)
  e$parameters <- function() list()
  e$to_config <- function() list(type = kind, padding = e$padding, value = e$value,
                                 mode = e$mode)
  e
}

ag_pad2d <- function(padding, value = 0, mode = "constant")
  .pad_layer("pad2d", 2L, padding, value, mode)

ag_pad1d <- function(padding, value = 0, mode = "constant")
  .pad_layer("pad1d", 1L, padding, value, mode)

ag_upsample2d <- function(scale_factor, mode = "nearest") {
  fn <- "ag_upsample2d"
  s <- .pool_sizes(scale_factor, fn, "scale_factor", 2L)
  mode <- .resize_mode(mode, fn)
  .Call(R_pg_upsample2d_check, 2L, s, mode, fn)
  e <- .layer("upsample2d", sprintf("upsample2d(%dx%d, %s)", as.integer(s[[1L]]),
                                    as.integer(s[[2L]]), mode))
  e$scale_factor <- as.integer(s)
  e$mode <- mode
  e$forward <- function(x) .upsample(x, 2L, e$scale_factor, e$mode, NULL, fn)
  e$parameters <- function() list()
  e$to_config <- function() list(type = "upsample2d", scale_factor = e$scale_factor,
                                 mode = e$mode)
  e
}

ag_upsample1d <- function(scale_factor, mode = "nearest") {
  fn <- "ag_upsample1d"
  s <- .pool_sizes(scale_factor, fn, "scale_factor", 1L)
  mode <- .resize_mode(mode, fn)
  .Call(R_pg_upsample2d_check, 1L, s, mode, fn)
  e <- .layer("upsample1d", sprintf("upsample1d(%d, %s)", as.integer(s[[1L]]), mode))
  e$scale_factor <- as.integer(s[[1L]])
  e$mode <- mode
  e$forward <- function(x) .upsample(x, 1L, e$scale_factor, e$mode, NULL, fn)
  e$parameters <- function() list()
  e$to_config <- function() list(type = "upsample1d", scale_factor = e$scale_factor,
                                 mode = e$mode)
  e
}
