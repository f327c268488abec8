# ag_flash_attention (ggmlR 0.8.6 §3): multi-head scaled dot-product attention over every head in
# one tape node; a thin .Call wrapper over the C core (native/ops_attention.c), which checks the
# arguments in ggmlR's order with its texts. q [d_model, seq_q], k and v [d_model, seq_kv];
# head h is the row block (h-1)*d_head+1 .. h*d_head. The mask is [seq_kv, seq_q] (keys index
# the ROWS): logical (TRUE attend) or numeric (0 / -Inf, added as is), a matrix or an ag_tensor.
# A query with every key blocked gives 0. scale defaults to 1/sqrt(d_head).
ag_flash_attention <- function(q, k, v, n_heads, scale = NULL, mask = NULL, causal = FALSE) {
  if ((!is.numeric(n_heads) && !identical(n_heads, NA)) || is.factor(n_heads) ||
      length(n_heads) != 1L)
    .arg_fail("argument", "ag_flash_attention: n_heads must be a positive integer, got %s",
              .arg_show(n_heads))
  n_heads <- suppressWarnings(as.integer(n_heads))
  if (!is.null(scale) && (!is.numeric(scale) || length(scale) != 1L || !is.null(dim(scale))))
    .arg_stop("ag_flash_attention: scale must be a number (or NULL for 1/sqrt(d_head))")
  scale <- if (is.null(scale)) NA_real_ else as.double(scale)
  causal <- .arg_flag(causal, "ag_flash_attention", "causal")  # "no" is not FALSE (Python's too)
  .Call(R_pg_flash_attention, q, k, v, n_heads, scale, mask, causal)
}
