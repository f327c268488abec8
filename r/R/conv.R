# Images and convolution, as Python's pyggmlr/conv.py and nn/conv.py: ag_images (R arrays to
# tagged [C*H*W, N] tensors), ag_image_shape, the functional ops ag_conv2d_op / ag_conv1d_op and
# the layers ag_conv2d / ag_conv1d. The core runs forward and backward and checks the values;
# this checks the kinds and hands doubles. Shapes are (C, H, W) / (C, L), pairs c(H, W).

# a number or a pair c(H, W) (1-D: a number) as doubles; strings only where the caller allows
.conv_pair <- function(v, fn, arg, dims) {
  what <- if (dims == 2L) "a number or a pair c(H, W)" else "a number"
  # an unnamed list of numbers (a JSON array read back); a named one (list(a = 1)) is refused,
  # as Python refuses a dict (issue 29)
  if (is.list(v) && is.null(names(v)) &&
      all(vapply(v, function(e) is.numeric(e) && length(e) == 1L, logical(1))))
    v <- unlist(v)
  if (!is.numeric(v) || is.factor(v) || !(length(v) %in% c(1L, dims)))
    .arg_fail("argument", "%s: %s must be %s, got %s", fn, arg, what, .arg_show(v))
  as.double(v)
}

.conv_padding <- function(v, fn, dims) {
  if (is.character(v)) {
    if (length(v) != 1L || !(v %in% c("same", "valid")))
      .arg_fail("value", "%s: padding must be a number, %s'same' or 'valid', got %s", fn,
                if (dims == 2L) "a pair (H, W), " else "", .arg_show(v))
    return(v)
  }
  .conv_pair(v, fn, "padding", dims)
}

.conv_shape <- function(v, fn, dims) {
  if (is.null(v)) return(NULL)
  if (is.list(v)) v <- unlist(v)
  rule <- if (dims == 2L) "(C, H, W)" else "(C, L)"
  if (!is.numeric(v) || length(v) != dims + 1L)
    .arg_fail("argument", "%s: input_shape must be %s, got %s", fn, rule, .arg_show(v))
  as.double(v)
}

.conv_call <- function(fn, dims, x, weight, bias, input_shape, stride, padding, dilation, groups,
                       kernel_size) {
  shape <- .conv_shape(input_shape, fn, dims)
  kernel <- if (is.null(kernel_size)) NULL else .conv_pair(kernel_size, fn, "kernel_size", dims)
  st <- .conv_pair(stride, fn, "stride", dims)
  pad <- .conv_padding(padding, fn, dims)
  dil <- .conv_pair(dilation, fn, "dilation", dims)
  if (!is.numeric(groups) || length(groups) != 1L)
    .arg_fail("argument", "%s: groups must be a whole number >= 1, got %s", fn, .arg_show(groups))
  like <- Find(is_ag_tensor, list(x, weight, bias))
  dt <- if (is.null(like)) ag_default_dtype() else tolower(like$dtype)
  as_t <- function(v) if (is_ag_tensor(v)) v else .need_tensor_dtype(v, fn, dt)
  x <- as_t(x)
  weight <- as_t(weight)
  b <- if (is.null(bias)) NULL else as_t(bias)$.ptr
  .wrap(.Call(R_pg_conv, x$.ptr, weight$.ptr, b, shape, kernel, st, pad, dil, as.double(groups),
              dims, fn))
}

# data to a constant tensor of dtype dt; a conversion error names fn
.need_tensor_dtype <- function(v, fn, dt) {
  tryCatch(ag_tensor(v, dtype = dt), pyggmlr_error = function(e) {
    e$message <- sub("^ag_tensor: ", paste0(fn, ": "), conditionMessage(e))
    e$call <- NULL
    stop(e)
  })
}

ag_conv2d_op <- function(x, weight, bias = NULL, input_shape = NULL, stride = 1, padding = 0,
                         dilation = 1, groups = 1, kernel_size = NULL) {
  .conv_call("ag_conv2d_op", 2L, x, weight, bias, input_shape, stride, padding, dilation, groups,
             kernel_size)
}

ag_conv1d_op <- function(x, weight, bias = NULL, input_shape = NULL, stride = 1, padding = 0,
                         dilation = 1, groups = 1, kernel_size = NULL) {
  .conv_call("ag_conv1d_op", 1L, x, weight, bias, input_shape, stride, padding, dilation, groups,
             kernel_size)
}

ag_image_shape <- function(x) {
  if (!is_ag_tensor(x))
    .arg_fail("argument", "ag_image_shape: x must be an ag_tensor, got %s", class(x)[[1L]])
  .Call(R_pg_image_shape, x$.ptr)
}

`ag_image_shape<-` <- function(x, value) {
  fn <- "ag_image_shape<-"
  if (!is_ag_tensor(x))
    .arg_fail("argument", "%s: x must be an ag_tensor, got %s", fn, class(x)[[1L]])
  if (!is.null(value)) {
    if (!is.numeric(value) || length(value) != 3L)
      .arg_fail("argument", "%s: value must be c(C, H, W) or NULL, got %s", fn, .arg_show(value))
    value <- vapply(value, function(v) as.double(.arg_int(v, fn, "shape", 1L)), numeric(1))
  }
  .Call(R_pg_set_image_shape, x$.ptr, value, fn)
  x
}

# R arrays are column-major: dim c(N, C, H, W) ("NCHW") or c(N, H, W, C) ("NHWC"); 3-d arrays are
# signals c(N, C, L) / c(N, L, C). The core copies by strides (pg_images).
# ag_images' / ag_sequences' common checks: the layout, an array of numbers (not an ag_tensor)
.batch_array <- function(fn, x, layout, layouts, tensor_hint) {
  if (!is.character(layout) || length(layout) != 1L || !(layout %in% layouts))
    .arg_fail("value", "%s: layout must be '%s' or '%s', got %s", fn, layouts[[1L]],
              layouts[[2L]], .arg_show(layout))
  if (is_ag_tensor(x))
    .arg_fail("argument", "%s: x must be an array c(%s), not an ag_tensor%s", fn,
              paste(strsplit(layout, "")[[1L]], collapse = ", "), tensor_hint)
  if (!is.numeric(x) && !is.logical(x))
    .arg_fail("dtype", "%s: x must be a numeric array, got %s", fn, class(x)[[1L]])
}

ag_images <- function(x, layout = "NCHW", dtype = ag_default_dtype()) {
  fn <- "ag_images"
  .batch_array(fn, x, layout, c("NCHW", "NHWC"),
               "; tag a tensor with ag_image_shape(x) <- c(C, H, W)")
  d <- dim(x)
  if (!(length(d) %in% c(3L, 4L)))
    .arg_fail("shape", "%s: x must be a 4-d array c(N, C, H, W) or a 3-d c(N, C, L), got dim %s",
              fn, .arg_show(d))
  d <- as.double(d)
  cum <- cumprod(c(1, d))  # the stride of each dimension
  if (length(d) == 3L) {
    shp <- if (layout == "NCHW") c(d[1L], d[2L], 1, d[3L]) else c(d[1L], d[3L], 1, d[2L])
    st <- if (layout == "NCHW") c(1, cum[2L], 0, cum[3L]) else c(1, cum[3L], 0, cum[2L])
  } else if (layout == "NCHW") {
    shp <- d
    st <- cum[1:4]
  } else {
    shp <- c(d[1L], d[4L], d[2L], d[3L])
    st <- c(1, cum[4L], cum[2L], cum[3L])
  }
  code <- .dtype_code(dtype, fn)  # ag_tensor's rule, class and text (Python's DTypeError)
  .wrap(.Call(R_pg_images, as.double(x), shp, st, code, fn))
}

# ---- layers ----

# a channel count's kind; the core checks the value (pg_conv_check)
.conv_count <- function(v, fn, arg) {
  if (!is.numeric(v) || is.factor(v) || length(v) != 1L || length(dim(v)) > 1L)
    .arg_fail("argument", "%s: %s must be an integer >= 1, got %s", fn, arg, .arg_show(v))
  as.double(v)
}

# a layer constructor's arguments: kinds here, values once in the core (the texts Python raises
# too); the pairs come back as integers c(H, W) (1-D: one)
.conv_checked <- function(fn, dims, cin, cout, kernel_size, stride, padding, dilation, groups,
                          input_shape, output_padding = NULL) {
  if (!is.null(input_shape) && is.list(input_shape)) input_shape <- unlist(input_shape)
  shape <- .conv_shape(input_shape, fn, dims)
  k <- .conv_pair(kernel_size, fn, "kernel_size", dims)
  st <- .conv_pair(stride, fn, "stride", dims)
  pad <- .conv_padding(padding, fn, dims)
  dil <- .conv_pair(dilation, fn, "dilation", dims)
  op <- if (is.null(output_padding)) NULL else
    .conv_pair(output_padding, fn, "output_padding", dims)
  if (!is.numeric(groups) || length(groups) != 1L)
    .arg_fail("argument", "%s: groups must be an integer >= 1, got %s", fn, .arg_show(groups))
  .Call(R_pg_conv_check, .conv_count(cin, fn, "in_channels"),
        .conv_count(cout, fn, "out_channels"), shape, k, st, pad, op, dil, as.double(groups),
        dims, fn)
  int <- function(v) as.integer(rep_len(v, dims))
  list(cin = as.integer(cin), cout = as.integer(cout), k = int(k), st = int(st),
       pad = if (is.character(pad)) pad else int(pad), dil = int(dil),
       op = if (is.null(op)) NULL else int(op), g = as.integer(groups),
       shape = if (is.null(shape)) NULL else as.integer(shape))
}

# init: torch's default (weight and bias U(+-1/sqrt(fan_in))), keras' glorot_uniform and
# he_uniform (torch's xavier_uniform_ / kaiming_uniform_(nonlinearity = "relu") on the
# torch-shaped weight; bias zeros); a unique prefix names one (match.arg's rule). Python's
# _conv_init has the same text.
.CONV_INITS <- c("torch", "glorot_uniform", "he_uniform")
.conv_init <- function(init, fn) {
  i <- if (is.character(init) && length(init) == 1L && !is.na(init) && nzchar(init))
         pmatch(init, .CONV_INITS) else NA_integer_
  if (is.na(i))
    .arg_fail(if (is.character(init) && length(init) == 1L) "value" else "argument",
              "%s: init must be one of 'torch', 'glorot_uniform', 'he_uniform', got %s", fn,
              .arg_show(init))
  .CONV_INITS[[i]]
}

# the weight [rows, cols] (one runif) then the bias [nbias, 1] (torch: a second runif; keras'
# inits: zeros, no draw; nbias 0: none); fans: torch's c(fan_in, fan_out)
.conv_draw <- function(e, init, fn, rows, cols, nbias, fans) {
  a <- switch(init, torch = 1 / sqrt(fans[[1L]]),
              glorot_uniform = sqrt(6 / (fans[[1L]] + fans[[2L]])),
              he_uniform = sqrt(6 / fans[[1L]]))
  e$weight <- ag_param(.uniform_weight(rows, cols, a, fn))
  e$bias <- if (nbias == 0L) NULL else if (init == "torch")
    ag_param(.uniform_weight(nbias, 1L, a, fn)) else ag_param(matrix(0, nbias, 1L))
  invisible(e)
}

.conv_layer <- function(kind, dims, in_channels, out_channels, kernel_size, stride, padding,
                        dilation, groups, bias, input_shape, activation, init) {
  fn <- paste0("ag_", kind)
  v <- .conv_checked(fn, dims, in_channels, out_channels, kernel_size, stride, padding, dilation,
                     groups, input_shape)
  cin <- v$cin
  cout <- v$cout
  g <- v$g
  k <- v$k
  st <- v$st
  dil <- v$dil
  pad <- v$pad
  input_shape <- v$shape
  bias <- .arg_flag(bias, fn, "bias")
  act <- .act(activation, fn)  # keras' Conv2D(activation =), as ag_linear's
  init <- .conv_init(init, fn)
  fan_in <- cin %/% g * prod(k)
  fans <- c(fan_in, cout * prod(k))  # torch's, from the weight (C_out, C_in/g, kH, kW)
  e <- .layer(kind, sprintf("%s(%d, %d, %s%s)", kind, cin, cout, paste(k, collapse = "x"),
                            if (is.null(activation)) "" else paste0(", ", activation)))
  .layer_memory(fn, sprintf("for a [%dx%.0f] weight", cout, fan_in),
                as.double(cout) * (fan_in + 1),
                .conv_draw(e, init, fn, cout, fan_in, if (bias) cout else 0L, fans))
  e$in_channels <- cin
  e$out_channels <- cout
  e$groups <- g
  e$kernel_size <- k
  e$stride <- st
  e$padding <- pad
  e$dilation <- dil
  e$use_bias <- bias
  e$input_shape <- input_shape
  e$forward <- function(x) {
    shape <- if (is_ag_tensor(x) && !is.null(ag_image_shape(x))) NULL else e$input_shape
    act(.conv_call(fn, dims, x, e$weight, e$bias, shape, e$stride, e$padding, e$dilation,
                   e$groups, e$kernel_size))
  }
  e$activation <- activation
  e$init <- init
  e$parameters <- function() if (is.null(e$bias)) list(weight = e$weight) else
    list(weight = e$weight, bias = e$bias)
  # pairs as lists c(H, W) (1-D: numbers), as Python's to_config
  cfg <- function(v) if (is.character(v)) v else if (dims == 2L) as.list(v) else v[[1L]]
  e$to_config <- function() list(type = kind, in_channels = cin, out_channels = cout,
                                 kernel_size = cfg(k), stride = cfg(st), padding = cfg(e$padding),
                                 dilation = cfg(dil), groups = g, bias = bias,
                                 input_shape = if (is.null(e$input_shape)) NULL else
                                   as.list(e$input_shape), activation = activation,
                                 init = init)
  e
}

ag_conv2d <- function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                      dilation = 1, groups = 1, bias = TRUE, input_shape = NULL,
                      activation = NULL, init = "torch") {
  .conv_layer("conv2d", 2L, in_channels, out_channels, kernel_size, stride, padding, dilation,
              groups, bias, input_shape, activation, init)
}

ag_conv1d <- function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                      dilation = 1, groups = 1, bias = TRUE, input_shape = NULL,
                      activation = NULL, init = "torch") {
  .conv_layer("conv1d", 1L, in_channels, out_channels, kernel_size, stride, padding, dilation,
              groups, bias, input_shape, activation, init)
}
