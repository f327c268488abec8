# How layers and tensors print and str() in R. Layer names follow Python's __repr__
# (pyggmlr/nn.py: "ag_linear: linear(4, 16, relu) (80 parameters)"); small tensors print in
# ggmlR's format, large ones are cut to .PRINT_MAX rows and columns as R torch does.

.PRINT_MAX <- 6L

.linear_label <- function(l) {
  cfg <- tryCatch(l$to_config(), error = function(e) NULL)
  if (is.null(cfg)) return("linear")
  act <- if (is.null(cfg$activation)) "" else paste0(", ", cfg$activation)
  sprintf("linear(%d, %d%s)", as.integer(cfg$in_features), as.integer(cfg$out_features), act)
}

.n_params <- function(l) {
  p <- .layer_params(l)
  sum(vapply(p, function(t) prod(as.double(dim(t))), numeric(1)))
}

print.ag_linear <- function(x, ...) {  # the core's line; NA: a list layer has no mode
  cat(.Call(R_pg_layer_print_text, "linear", .linear_label(x), as.double(.n_params(x)), NA), "\n",
      sep = "")
  invisible(x)
}

# str(): one short line each (the default walks every closure and environment)
str.ag_linear <- function(object, ...) {
  cat(sprintf("ag_linear %s: List of %d (W [%s], b [%s], forward, params, to_config)\n",
              .linear_label(object),
              length(object), paste(dim(object$W), collapse = "x"),
              paste(dim(object$b), collapse = "x")))
  invisible()
}

str.ag_layer <- function(object, ...) {
  n <- if (inherits(object, "ag_sequential")) sprintf(", %d layers", length(object$layers)) else ""
  cat(sprintf("%s %s%s: %s parameters, %s mode\n", class(object)[[1L]], .layer_label(object), n,
              format(.n_params(object), scientific = FALSE),
              if (isTRUE(object$training)) "train" else "eval"))
  invisible()
}

.tensor_desc <- function(x) {
  if (isTRUE(.Call(R_pg_xptr_is_null,
                   get0(".ptr", envir = x, inherits = FALSE)))) return("ag_tensor <dead handle>")
  d <- dim(x)
  sprintf("ag_tensor [%dx%d] %s, requires_grad = %s", d[1L], d[2L], x$dtype,
          isTRUE(x$requires_grad))
}

str.ag_tensor <- function(object, ...) {
  cat(" ", .tensor_desc(object), "\n", sep = "")
  invisible()
}

# A matrix as print() shows it, or its first .PRINT_MAX rows and columns and a line saying what
# was left out (with dtype and grad state, which the ggmlR header shows only when not default).
.print_values <- function(m, dtype, requires_grad) {
  if (is.null(dim(m)) || (nrow(m) <= .PRINT_MAX && ncol(m) <= .PRINT_MAX)) {
    print(m)
    return(invisible())
  }
  r <- min(nrow(m), .PRINT_MAX)
  k <- min(ncol(m), .PRINT_MAX)
  sub <- m[seq_len(r), seq_len(k), drop = FALSE]
  if (is.null(dimnames(sub))) dimnames(sub) <- list(sprintf("[%d,]", seq_len(r)),
                                                    sprintf("[,%d]", seq_len(k)))
  print(sub)
  state <- if (is.null(requires_grad)) dtype else sprintf("%s, requires_grad = %s", dtype,
                                                          isTRUE(requires_grad))
  cat(sprintf("... [%d of %d rows, %d of %d columns shown; %s]\n", r, nrow(m), k, ncol(m), state))
  invisible()
}
