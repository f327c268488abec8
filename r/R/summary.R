# summary(model): a keras-style table (layer, output shape, parameters, totals). Output shapes
# come from the layer sizes ([features x batch], samples are columns); "?" where a layer does not
# say (custom layers), and for every layer after it whose output follows its input.

# rows out of a layer given the rows in (NA: unknown)
.out_rows <- function(l, rows_in) {
  if (inherits(l, "ag_linear")) return(as.integer(l$to_config()$out_features))
  if (inherits(l, c("ag_dropout", "ag_batch_norm", "ag_layer_norm", "ag_normalization",
                    "ag_flatten")))
    return(rows_in)
  if (inherits(l, "ag_embedding")) return(l$dim)
  if (inherits(l, "ag_multihead_attention")) return(l$d_model)
  if (inherits(l, c("ag_lstm", "ag_gru", "ag_rnn")))
    return(if (l$return_sequences) NA_integer_ else as.integer(l$output_size))
  if (inherits(l, "ag_sequential")) {
    for (s in l$layers) rows_in <- .out_rows(s, rows_in)
    return(rows_in)
  }
  NA_integer_
}

.summary_table <- function(layers) {
  rows <- NA_integer_
  shape <- character(length(layers))
  for (i in seq_along(layers)) {
    rows <- .out_rows(layers[[i]], rows)
    shape[i] <- if (is.na(rows)) "?" else sprintf("[%d x batch]", rows)
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
