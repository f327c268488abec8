# summary(model): a keras-style table (layer, output shape, parameters, totals). Output shapes
# come from the layer sizes ([features x batch], samples are columns; image layers add their
# image shape (C, H, W)); "?" where a layer does not say (custom layers, a convolution with no
# input_shape first), and for every layer after it whose output follows its input.

# The state flowing through the layers: rows (NA: unknown) and the image shape c(C, H, W) torch
# order (NULL: none or unknown). Image layers compute their output size by torch's formulas;
# a layer that knows nothing gives "?" to itself and to what follows until a layer sets it.
.img_out <- function(n, k, s, p, d = 1L) (n + 2L * p - d * (k - 1L) - 1L) %/% s + 1L

# a convolution's or a pooling's output image from the input image (c(H, W) sizes; 1-D: W only)
.window_img <- function(l, img, conv) {
  two <- inherits(l, c("ag_conv2d", "ag_max_pool2d", "ag_avg_pool2d"))
  pick <- function(v) if (two) rep_len(v, 2L) else c(1L, v[[1L]])
  k <- pick(l$kernel_size)
  s <- pick(if (is.null(l$stride)) l$kernel_size else l$stride)
  d <- if (conv) pick(l$dilation) else c(1L, 1L)
  hw <- img[2:3]
  if (is.character(l$padding)) {
    if (l$padding == "same") return(c(if (conv) l$out_channels else img[[1L]], hw))
    p <- c(0L, 0L)
  } else p <- pick(l$padding)
  if (!two) p[[1L]] <- 0L
  c(if (conv) l$out_channels else img[[1L]], .img_out(hw, k, s, p, d))
}

.layer_state <- function(l, st) {
  rows <- st$rows
  img <- st$img
  none <- list(rows = NA_integer_, img = NULL)
  if (inherits(l, "ag_linear")) return(list(rows = as.integer(l$to_config()$out_features)))
  if (inherits(l, "ag_dropout")) return(st)
  if (inherits(l, c("ag_batch_norm", "ag_layer_norm", "ag_normalization", "ag_flatten")))
    return(list(rows = rows))
  if (inherits(l, "ag_embedding")) return(list(rows = l$dim))
  if (inherits(l, "ag_multihead_attention")) return(list(rows = l$d_model))
  if (inherits(l, c("ag_lstm", "ag_gru", "ag_rnn"))) {
    if (!l$return_sequences) return(list(rows = as.integer(l$output_size)))
    return(list(rows = if (is.na(rows)) NA_integer_ else
      as.integer(rows %/% l$input_size * l$output_size)))
  }
  if (inherits(l, c("ag_conv2d", "ag_conv1d")) && !is.null(l$input_shape))
    img <- if (length(l$input_shape) == 2L) c(l$input_shape[[1L]], 1L, l$input_shape[[2L]]) else
      l$input_shape
  if (inherits(l, c("ag_conv2d", "ag_conv1d", "ag_max_pool2d", "ag_avg_pool2d", "ag_max_pool1d",
                    "ag_avg_pool1d", "ag_global_avg_pool", "ag_global_max_pool", "ag_pad2d",
                    "ag_pad1d", "ag_upsample2d", "ag_upsample1d"))) {
    if (is.null(img)) return(none)
    img <- as.integer(img)
    if (inherits(l, c("ag_global_avg_pool", "ag_global_max_pool"))) return(list(rows = img[[1L]]))
    out <- if (inherits(l, c("ag_pad2d", "ag_pad1d"))) {
      p <- c(l$padding, 0L, 0L)[1:4]
      img + c(0L, p[[3L]] + p[[4L]], p[[1L]] + p[[2L]])
    } else if (inherits(l, "ag_upsample2d")) {
      img * c(1L, l$scale_factor)
    } else if (inherits(l, "ag_upsample1d")) {
      img * c(1L, 1L, l$scale_factor)
    } else {
      .window_img(l, img, inherits(l, c("ag_conv2d", "ag_conv1d")))
    }
    return(list(rows = as.integer(prod(out)), img = out))
  }
  if (inherits(l, "ag_sequential")) {
    for (s in l$layers) st <- .layer_state(s, st)
    return(st)
  }
  none
}

# the rows out of a layer given the rows in (NA: unknown); fit_hints.R's question
.out_rows <- function(l, rows_in) .layer_state(l, list(rows = rows_in))$rows

# "[rows x batch]", and the image shape in torch order after it where the layer knows it
.shape_label <- function(st) {
  if (is.na(st$rows)) return("?")
  if (is.null(st$img)) return(sprintf("[%d x batch]", st$rows))
  sprintf("[%d x batch] (%s)", st$rows, paste(st$img, collapse = ", "))
}

.summary_table <- function(layers) {
  st <- list(rows = NA_integer_)
  shape <- character(length(layers))
  for (i in seq_along(layers)) {
    st <- .layer_state(layers[[i]], st)
    shape[i] <- .shape_label(st)
  }
  data.frame(layer = vapply(layers, .layer_label, character(1)),
             type = vapply(layers, function(l) class(l)[[1L]], character(1)),
             output_shape = shape,
             params = vapply(layers, .n_params, numeric(1)),
             buffers = vapply(layers, function(l) {
               b <- .layer_buffers(l)
               sum(vapply(b, function(t) prod(as.double(dim(t))), numeric(1)))
             }, numeric(1)),
             stringsAsFactors = FALSE)
}

.summary_model <- function(object, layers, title) {
  tab <- .summary_table(layers)
  structure(list(title = title, layers = tab, total = sum(tab$params),
                 non_trainable = sum(tab$buffers), model = object),
            class = "summary.ag_sequential")
}

summary.ag_sequential <- function(object, ...) {
  .summary_model(object, object$layers,
                 sprintf("ag_sequential (%d layers, %s mode)", length(object$layers),
                                                if (isTRUE(object$training)) "train" else "eval"))
}

summary.ag_linear <- function(object, ...) .summary_model(object, list(object), "ag_linear")
summary.ag_layer <- function(object, ...) .summary_model(object, list(object), class(object)[[1L]])

print.summary.ag_sequential <- function(x, ...) {
  tab <- x$layers
  num <- function(v) format(v, big.mark = ",", scientific = FALSE, trim = TRUE)
  lab <- c("Layer (type)", sprintf("%d %s (%s)", seq_len(nrow(tab)), tab$layer, tab$type))
  shp <- c("Output shape", tab$output_shape)
  par <- c("Param #", num(tab$params))
  w1 <- max(nchar(lab))
  w2 <- max(nchar(shp))
  w3 <- max(nchar(par))
  line <- function(ch) strrep(ch, w1 + w2 + w3 + 4L)
  row <- function(i) sprintf("%-*s  %-*s  %*s", w1, lab[i], w2, shp[i], w3, par[i])
  cat(x$title, "\n", sep = "")
  cat(line("_"), "\n", row(1L), "\n", line("="), "\n", sep = "")
  for (i in seq_len(nrow(tab)) + 1L) cat(row(i), "\n", sep = "")
  cat(line("="), "\n", sep = "")
  cat("Total params: ", num(x$total + x$non_trainable), "\n", sep = "")
  cat("Trainable params: ", num(x$total), "\n", sep = "")
  cat("Non-trainable params: ", num(x$non_trainable), "\n", sep = "")
  if (!is.null(x$model)) .target_line(x$model)  # predict.R: ag_fit's loss and labels
  invisible(x)
}
