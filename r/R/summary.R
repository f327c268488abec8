# summary(model): a keras-style table (layer, output shape, parameters, totals). Output shapes
# come from the layer sizes ([features x batch], samples are columns; image layers add their
# image shape (C, H, W)); "?" where a layer does not say (custom layers, a convolution with no
# input_shape first), and for every layer after it whose output follows its input. The shapes
# and the printed table are the core's (native/layer_shape.c), so Python prints the same bytes.

# The state flowing through the layers: c(rows, C, H, W), -1 where unknown (C -1: no image
# shape). Each layer's rule (torch's output sizes for image layers) is the core's
# (native/layer_shape.c, Python's too), read from the layer's config; a layer without one
# (custom layers) gives unknown, and so does what follows it until a layer sets the size.
.UNKNOWN_STATE <- c(-1, -1, -1, -1)

.layer_state <- function(l, st) {
  if (inherits(l, "ag_sequential")) {  # walked here: its layers may be custom
    for (s in l$layers) st <- .layer_state(s, st)
    return(st)
  }
  cfg <- tryCatch(if (is.function(l[["to_config"]])) .cfg_json(l[["to_config"]]()),
                  error = function(e) NULL)
  .Call(R_pg_layer_shape, cfg, as.double(st), NULL)
}

# "[rows x batch]", and the image shape in torch order after it where the layer knows it
.shape_label <- function(st) .Call(R_pg_layer_shape_label, as.double(st))

.summary_table <- function(layers) {
  st <- .UNKNOWN_STATE
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

# the table is the core's (pg_summary_text), the bytes Python's str(summary) prints
print.summary.ag_sequential <- function(x, ...) {
  tab <- x$layers
  cat(.Call(R_pg_summary_text, x$title, as.character(tab$layer), as.character(tab$type),
            as.character(tab$output_shape), as.double(tab$params),
            as.double(c(x$total, x$non_trainable))))
  if (!is.null(x$model)) .target_line(x$model)  # predict.R: ag_fit's loss and labels
  invisible(x)
}
