# Transposed convolution, as Python's ag_conv_transpose2d_op / ag_conv_transpose1d_op
# (pyggmlr/conv.py) and ag_conv_transpose2d / ag_conv_transpose1d (pyggmlr/nn/conv.py): torch's
# conv_transpose2d / 1d and ConvTranspose2d / 1d, the arguments in torch's order. The core runs
# forward and backward and checks the values (pg_conv_transpose, pg_conv_check); this checks the
# kinds and hands doubles. 1-D signals are images with H = 1.

.conv_t_call <- function(fn, dims, x, weight, bias, stride, padding, output_padding, groups,
                         dilation, input_shape, kernel_size) {
  shape <- .conv_shape(input_shape, fn, dims)
  kernel <- if (is.null(kernel_size)) NULL else .conv_pair(kernel_size, fn, "kernel_size", dims)
  st <- .conv_pair(stride, fn, "stride", dims)
  pad <- .conv_padding(padding, fn, dims)
  dil <- .conv_pair(dilation, fn, "dilation", dims)  # the layer's order and Python's (issue 29)
  op <- .conv_pair(output_padding, fn, "output_padding", dims)
  if (!is.numeric(groups) || length(groups) != 1L)
    .arg_fail("argument", "%s: groups must be a whole number >= 1, got %s", fn, .arg_show(groups))
  like <- Find(is_ag_tensor, list(x, weight, bias))
  dt <- if (is.null(like)) ag_default_dtype() else tolower(like$dtype)
  as_t <- function(v) if (is_ag_tensor(v)) v else .need_tensor_dtype(v, fn, dt)
  x <- as_t(x)
  weight <- as_t(weight)
  b <- if (is.null(bias)) NULL else as_t(bias)$.ptr
  .wrap(.Call(R_pg_conv_transpose, x$.ptr, weight$.ptr, b, shape, kernel, st, pad, op, dil,
              as.double(groups), dims, fn))
}

ag_conv_transpose2d_op <- function(x, weight, bias = NULL, stride = 1, padding = 0,
                                   output_padding = 0, groups = 1, dilation = 1,
                                   input_shape = NULL, kernel_size = NULL) {
  .conv_t_call("ag_conv_transpose2d_op", 2L, x, weight, bias, stride, padding, output_padding,
               groups, dilation, input_shape, kernel_size)
}

ag_conv_transpose1d_op <- function(x, weight, bias = NULL, stride = 1, padding = 0,
                                   output_padding = 0, groups = 1, dilation = 1,
                                   input_shape = NULL, kernel_size = NULL) {
  .conv_t_call("ag_conv_transpose1d_op", 1L, x, weight, bias, stride, padding, output_padding,
               groups, dilation, input_shape, kernel_size)
}

.conv_t_layer <- function(kind, dims, in_channels, out_channels, kernel_size, stride, padding,
                          output_padding, groups, bias, dilation, input_shape, activation, init) {
  fn <- paste0("ag_", kind)
  v <- .conv_checked(fn, dims, in_channels, out_channels, kernel_size, stride, padding, dilation,
                     groups, input_shape, output_padding)
  bias <- .arg_flag(bias, fn, "bias")
  act <- .act(activation, fn)
  init <- .conv_init(init, fn)
  fan_in <- v$cout %/% v$g * prod(v$k)  # torch reads it from the weight's second dimension
  fans <- c(fan_in, v$cin * prod(v$k))  # and fan_out from its first
  e <- .layer(kind, sprintf("%s(%d, %d, %s%s)", kind, v$cin, v$cout, paste(v$k, collapse = "x"),
                            if (is.null(activation)) "" else paste0(", ", activation)))
  .layer_memory(fn, sprintf("for a [%dx%.0f] weight", v$cin, fan_in),
                as.double(v$cin) * fan_in + v$cout,
                .conv_draw(e, init, fn, v$cin, fan_in, if (bias) v$cout else 0L, fans))
  e$in_channels <- v$cin
  e$out_channels <- v$cout
  e$groups <- v$g
  e$kernel_size <- v$k
  e$stride <- v$st
  e$padding <- v$pad
  e$output_padding <- v$op
  e$dilation <- v$dil
  e$use_bias <- bias
  e$input_shape <- v$shape
  e$activation <- activation
  e$init <- init
  e$forward <- function(x) {
    shape <- if (is_ag_tensor(x) && !is.null(ag_image_shape(x))) NULL else e$input_shape
    act(.conv_t_call(fn, dims, x, e$weight, e$bias, e$stride, e$padding,
                     e$output_padding, e$groups, e$dilation, shape, e$kernel_size))
  }
  e$parameters <- function() if (is.null(e$bias)) list(weight = e$weight) else
    list(weight = e$weight, bias = e$bias)
  # pairs as lists c(H, W) (1-D: numbers), as Python's to_config
  cfg <- function(v) if (dims == 2L) as.list(v) else v[[1L]]
  e$to_config <- function() list(type = kind, in_channels = v$cin, out_channels = v$cout,
                                 kernel_size = cfg(v$k), stride = cfg(v$st),
                                 padding = cfg(v$pad), output_padding = cfg(v$op),
                                 groups = v$g, bias = bias, dilation = cfg(v$dil),
                                 input_shape = if (is.null(e$input_shape)) NULL else
                                   as.list(e$input_shape), activation = activation,
                                 init = init)
  e
}

ag_conv_transpose2d <- function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                                output_padding = 0, groups = 1, bias = TRUE, dilation = 1,
                                input_shape = NULL, activation = NULL, init = "torch") {
  .conv_t_layer("conv_transpose2d", 2L, in_channels, out_channels, kernel_size, stride, padding,
                output_padding, groups, bias, dilation, input_shape, activation, init)
}

ag_conv_transpose1d <- function(in_channels, out_channels, kernel_size, stride = 1, padding = 0,
                                output_padding = 0, groups = 1, bias = TRUE, dilation = 1,
                                input_shape = NULL, activation = NULL, init = "torch") {
  .conv_t_layer("conv_transpose1d", 1L, in_channels, out_channels, kernel_size, stride, padding,
                output_padding, groups, bias, dilation, input_shape, activation, init)
}
