# Arithmetic on ag_tensors through R's group generics, mapped onto the same ops Python's
# operators call (pyggmlr/ops.py), so `W %*% x + b` records the nodes ag_add(ag_matmul(W, x), b)
# would and gives the same bits. A number or matrix on either side is a constant.

.is_scalar_num <- function(v) {
  (is.numeric(v) || is.logical(v)) && length(v) == 1L && is.null(dim(v)) && !is_ag_tensor(v)
}

# .Generic is bound by R's group-generic dispatch, which lintr cannot see
# nolint start: object_usage_linter.

Ops.ag_tensor <- function(e1, e2) {
  if (missing(e2)) {  # unary
    if (.Generic == "-") return(ag_neg(e1))
    if (.Generic == "+") return(e1)
    .arg_fail("argument", paste0("ag_tensor: unary '%s' is not defined for tensors; use ",
                                 "as.matrix(x) for plain values"), .Generic)
  }
  switch(.Generic,
         "+" = ag_add(e1, e2),
         "-" = ag_sub(e1, e2),
         # a plain number scales (one node, as Python's x * 2 does); anything else multiplies
         "*" = if (.is_scalar_num(e2)) ag_scale(e1, e2) else if (.is_scalar_num(e1)) ag_scale(e2,
             e1) else ag_mul(e1, e2),
         "/" = ag_div(e1, e2),
         "^" = {
           if (!is_ag_tensor(e1) || is_ag_tensor(e2) || !.is_scalar_num(e2))
             .arg_stop("ag_tensor: '^' needs a tensor base and a single-number exponent (x ^ ",
                       "p); for b ^ x use ag_exp(x * log(b))")
           ag_pow(e1, e2)
         },
         # comparisons and logic are not differentiable: plain logical matrices of the values
         "==" = , "!=" = , "<" = , "<=" = , ">" = , ">=" = , "&" = , "|" = {
           v1 <- if (is_ag_tensor(e1)) e1$data else e1
           v2 <- if (is_ag_tensor(e2)) e2$data else e2
           get(.Generic, envir = baseenv())(v1, v2)
         },
         .arg_fail("argument", paste0("ag_tensor: '%s' is not defined for tensors; use ",
                                      "as.matrix(x) for plain values"), .Generic))
}

Math.ag_tensor <- function(x, ...) {
  switch(.Generic,
         exp = ag_exp(x),
         log = {
           a <- list(...)
           if (!length(a)) ag_log(x) else ag_scale(ag_log(x),
                                                   1 / log(.num1(a[[1L]], "log", "base")))
         },
         sqrt = ag_pow(x, 0.5),
         tanh = ag_tanh(x),
         abs = ag_add(ag_relu(x), ag_relu(ag_neg(x))),  # exact |x|; gradient sign(x), 0 at 0
         .arg_fail("argument", paste0("ag_tensor: %s() has no differentiable op; use ",
                                      "as.matrix(x) for plain values, or exp, log, sqrt, tanh, ",
                                      "abs"), .Generic))
}

Summary.ag_tensor <- function(..., na.rm = FALSE) {
  args <- list(...)
  if (length(args) != 1L)
    .arg_fail("argument",
              "ag_tensor: %s() takes one tensor (combine tensors with ag_concat_rows first)",
              .Generic)
  x <- args[[1L]]
  switch(.Generic,
         sum = ag_sum(x),
         # over all elements (ag_max is per column): the gradient goes to the first maximum
         max = ag_max(.as_column(x)),
         min = ag_neg(ag_max(ag_neg(.as_column(x)))),
         # not differentiable: the plain values
         get(.Generic, envir = baseenv())(x$data, na.rm = na.rm))
}

.as_column <- function(x) { d <- dim(x); if (d[2L] == 1L) x else ag_reshape(x, d[1L] * d[2L], 1) }

# dim as ag_mean: NULL all, 1 rows, 2 columns
mean.ag_tensor <- function(x, dim = NULL, ...) ag_mean(x, dim)

t.ag_tensor <- function(x) ag_transpose(x)

# R >= 4.3: base's %*% dispatches here (NAMESPACE registers it only there), nothing is masked
matrixOps.ag_tensor <- function(x, y) { # nolint: object_name_linter. (base R >= 4.3 group)
  if (.Generic == "%*%") return(ag_matmul(x, y))
  .arg_fail("argument",
            "ag_tensor: %s() is not defined for tensors; use ag_matmul(ag_transpose(x), y)",
            .Generic)
}

# R 4.2 has no matrixOps group: a package-level %*% (exported there) that sends tensors to
# ag_matmul and everything else to base's, unchanged
`%*%` <- function(x, y) {
  if (is_ag_tensor(x) || is_ag_tensor(y)) ag_matmul(x, y) else base::`%*%`(x, y)
}
# nolint end
