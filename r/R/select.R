# Selection and sampling down each column (ggmlR 0.8.6): thin .Call wrappers over the C core
# (native/ops_select.c). x is an ag_tensor or plain numbers laid out [n, batch] (a vector is one
# column); indices are 0-based.

# Row index of each column's largest entry (NaN as -Inf, first on ties, 0 for a column with
# nothing above -Inf): an integer vector; records nothing, draws nothing.
ag_argmax <- function(x) .Call(R_pg_argmax, x)

# Per column x - max(x) - log(sum(exp(x - max(x)))), one tape node.
ag_log_softmax <- function(x) .Call(R_pg_log_softmax, x)

# out[1, j] = x[index[j] + 1, j]. The index's kind here (ggmlR's text); its length, NA, whole
# numbers and range are the core's rules and texts, in ggmlR's order (pg_gather_f64, as Python's).
ag_gather <- function(x, index) {
  # x is data before the index checks (Python's order; NULL was "x has 1 columns": issue 29)
  if (!inherits(x, "ag_tensor")) .need_tensor(x, "ag_gather")
  if (!is.numeric(index))
    .arg_stop("ag_gather: index must be numeric (0-based integers)")
  .Call(R_pg_gather, x, as.double(as.vector(index)))
}

# ag_gather(x, ag_argmax(x)) as one core node: [1, batch] column maxima; the gradient goes to the
# first maximum.
ag_max <- function(x) .Call(R_pg_colmax, x)

# One draw per column from softmax(x[, j]) by the Gumbel-max trick: exactly one runif(n * batch)
# from R's stream (or the active run stream), taken first.
ag_sample_categorical <- function(x) .Call(R_pg_sample_categorical, x)

# mu + eps * exp(log_std), eps one rnorm(n * batch) drawn after the shape check; log_std is
# [n, batch] or [n, 1]. A compiled graph redraws eps at every replay.
ag_sample_normal <- function(mu, log_std) .Call(R_pg_sample_normal, mu, log_std)
