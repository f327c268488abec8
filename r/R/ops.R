# Differentiable ops: thin .Call wrappers (forward and backward live in the C core). Operands
# are ag_tensors or plain R matrices / vectors (constants that never receive gradients).

# (the C entry points take ag_tensors as they are and return new ag_tensors)
ag_matmul <- function(A, B) .Call(R_pg_matmul, A, B)
ag_add <- function(A, B) .Call(R_pg_add, A, B)
ag_sub <- function(A, B) .Call(R_pg_sub, A, B)
ag_mul <- function(A, B) .Call(R_pg_mul, A, B)
ag_div <- function(A, B) .Call(R_pg_div, A, B)

# one number; NaN passes to the core as in Python (x * NaN is NaN; ag_clamp refuses a NaN bound
# there), R's NA (missing) is refused
.num1 <- function(v, op, arg) {
  # a 1x1 matrix is refused, as Python's [[2.0]] and R's own integer rule (ag_sum's dim)
  if ((!is.numeric(v) && !is.logical(v)) || length(v) != 1L || !is.null(dim(v)) ||
      (is.na(v) && !is.nan(v)))
    .arg_fail(if (length(v) == 1L && is.null(dim(v)) && (is.numeric(v) || is.logical(v))) "value"
              else "argument",
              "%s: '%s' must be a single number, got %s", op, arg, .arg_show(v))
  as.double(v)
}

# a whole number (or -1), as Python's _size: 2.5 was truncated to 2 (issue 19); a size R can
# hold: dim() is integer, so past .INT_MAX a tensor's dims would read NA (the one integer rule)
.reshape_size <- function(v, arg)
  as.double(.arg_int(v, "ag_reshape", arg, -.INT_MAX, .INT_MAX,
                     rule = sprintf("an integer within +/-%d (-1: inferred from x's size)",
                                    .INT_MAX)))

.un <- function(kind, x, op, p1 = 0, p2 = 0) .Call(R_pg_unary, kind, x, p1, p2, op)

# the activations call the core directly: one R call per op (a small model's step is R calls)
ag_relu <- function(x) .Call(R_pg_unary, .pg$op[["RELU"]], x, 0, 0, "ag_relu")
ag_sigmoid <- function(x) .Call(R_pg_unary, .pg$op[["SIGMOID"]], x, 0, 0, "ag_sigmoid")
ag_tanh <- function(x) .Call(R_pg_unary, .pg$op[["TANH"]], x, 0, 0, "ag_tanh")
ag_gelu <- function(x) .Call(R_pg_unary, .pg$op[["GELU"]], x, 0, 0, "ag_gelu")
ag_log <- function(x) .Call(R_pg_unary, .pg$op[["LOG"]], x, 0, 0, "ag_log")
ag_exp <- function(x) .Call(R_pg_unary, .pg$op[["EXP"]], x, 0, 0, "ag_exp")
ag_softmax <- function(x) .Call(R_pg_unary, .pg$op[["SOFTMAX"]], x, 0, 0, "ag_softmax")
ag_neg <- function(x) .Call(R_pg_unary, .pg$op[["NEG"]], x, 0, 0, "ag_neg")
ag_scale <- function(x, scalar) .un(.pg$op[["SCALE"]], x, "ag_scale",
                                    .num1(scalar, "ag_scale", "scalar"))
ag_pow <- function(x, p) .un(.pg$op[["POW"]], x, "ag_pow", .num1(p, "ag_pow", "p"))
ag_clamp <- function(x, lo = -Inf, hi = Inf)
  .un(.pg$op[["CLAMP"]], x, "ag_clamp", .num1(lo, "ag_clamp", "lo"), .num1(hi, "ag_clamp", "hi"))

# the one integer rule (the core's, as Python's): "a" is the wrong kind, 3 a bad value
.dim_code <- function(dim, op) {
  if (is.null(dim)) return(0)
  as.double(.arg_int(dim, op, "dim", 1, 2, rule = "NULL (all), 1 (per row) or 2 (per column)"))
}

# dim = NULL: all -> [1,1]; dim = 1: per row -> [nrow,1]; dim = 2: per column -> [1,ncol].
# keepdim is accepted for compatibility: results are always matrices.
ag_sum <- function(x, dim = NULL, keepdim = FALSE) .un(.pg$op[["SUM"]], x, "ag_sum",
                                                       .dim_code(dim, "ag_sum"))
ag_mean <- function(x, dim = NULL, keepdim = FALSE) .un(.pg$op[["MEAN"]], x, "ag_mean",
                                                        .dim_code(dim, "ag_mean"))
ag_transpose <- function(x) .un(.pg$op[["TRANSPOSE"]], x, "ag_transpose")
ag_reshape <- function(x, nrow, ncol = -1) {
  if (missing(ncol) && is.numeric(nrow) && !length(nrow) %in% 1:2)  # Python's text and class
    .arg_fail("value", "ag_reshape: a shape must be c(nrow, ncol), got %s", .arg_show(nrow))
  if (missing(ncol) && length(nrow) == 2L) { ncol <- nrow[[2L]]; nrow <- nrow[[1L]] }
  .un(.pg$op[["RESHAPE"]], x, "ag_reshape", .reshape_size(nrow, "nrow"),
      .reshape_size(ncol, "ncol"))
}

# x as a tensor; a conversion error names the op (as Python's), not ag_tensor
# like: a tensor whose dtype plain data takes (a layer's weight, the other operand), as Python's
# _as_tensor; NULL: the default dtype
.need_tensor <- function(x, op, like = NULL) {
  if (inherits(x, "ag_tensor")) return(x)  # (not is_ag_tensor: one call less, a layer's hot path)
  dt <- if (is.null(like)) ag_default_dtype() else like$dtype
  tryCatch(ag_tensor(x, dtype = dt), pyggmlr_error = function(e) {
    e$message <- sub("^ag_tensor: ", paste0(op, ": "), conditionMessage(e))
    e$call <- NULL
    stop(e)
  })
}

ag_mse_loss <- function(pred, target) {
  pred <- .need_tensor(pred, "ag_mse_loss", if (inherits(target, "ag_tensor")) target)
  .Call(R_pg_mse_loss, pred, target)
}

ag_cross_entropy_loss <- function(pred, target) {
  pred <- .need_tensor(pred, "ag_cross_entropy_loss", if (inherits(target, "ag_tensor")) target)
  .Call(R_pg_cross_entropy_loss, pred, target)
}

# target: a one-hot / soft-label matrix of the logits' shape (any storage, integer one-hot
# included), or 0-based class ids, one per column (a vector, a 1-D array, or a [1, batch] / [batch,
# 1] matrix). The rule is the core's (pg_softmax_ce_loss_any); R only refuses what is not numbers.
# weight / ignore_index / label_smoothing: torch's cross_entropy options, checked by the core.
ag_softmax_cross_entropy_loss <- function(logits, target, weight = NULL, ignore_index = NULL,
                                          label_smoothing = 0) {
  op <- "ag_softmax_cross_entropy_loss"
  logits <- .need_tensor(logits, op)
  vec <- FALSE
  if (!is_ag_tensor(target)) {
    td <- dim(target)
    if (length(td) == 1L || length(td) > 2L) {
      # a 1-D array (e.g. from as.array() or rpy2) or an array with one non-unit extent: class ids
      if (sum(td != 1L) > 1L)
        .arg_stop(sprintf(paste0("%s: logits are [%dx%d] but target is a %s array; give a one-hot ",
                                 "matrix of the logits' shape or one class id per column"),
                          op, dim(logits)[1L], dim(logits)[2L], paste(td, collapse = "x")),
                  kind = "shape")
      td <- NULL
    }
    vec <- is.null(td)
    if (is.logical(target) && !identical(as.integer(td), dim(logits)))
      .arg_fail("argument", "%s: class ids must be 0-based integers, got booleans", op)
    if (!is.numeric(target) && !is.logical(target) || is.factor(target))
      .arg_fail("argument", "%s: target must be numeric, got %s", op, class(target)[1L])
    if (vec) target <- matrix(as.double(target), nrow = 1L)
  }
  if (is.null(weight) && is.null(ignore_index) && identical(label_smoothing, 0))
    return(.Call(R_pg_softmax_ce_loss_any, logits, target, vec))  # 1-based ids: a hint (C)
  if (!is.null(weight)) weight <- .loss_weights(weight, op, "weight")
  ls <- .loss_number(label_smoothing, op, "label_smoothing", "a number in [0, 1)")
  ig <- if (is.null(ignore_index)) 0 else .loss_number(ignore_index, op, "ignore_index",
                                                       "a whole number")
  .Call(R_pg_softmax_ce_loss_opt, logits, target, vec, weight, !is.null(ignore_index), ig, ls)
}
