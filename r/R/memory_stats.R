# The core allocator's counters, as Python's ag_memory_stats / ag_memory_peak /
# ag_memory_reset_peak / ag_memory_trim report them (the same C calls), and the kernels' threads.

.MEM_CATEGORIES <- c("param", "grad", "optim", "saved", "other")

ag_memory_stats <- function() {
  v <- .Call(R_pg_memory_stats)
  peaks <- .Call(R_pg_memory_category_peaks)
  res <- lapply(seq_along(.MEM_CATEGORIES), function(i) list(current = v[[i]], peak = peaks[[i]]))
  names(res) <- .MEM_CATEGORIES
  res$total <- list(current = v[[6L]], peak = v[[7L]])
  res$live_tensors <- v[[8L]]
  res$live_gradmaps <- v[[9L]]
  res$live_optimizers <- v[[10L]]
  res$tape_nodes <- v[[11L]]
  res$cached <- .Call(R_pg_memory_cached)
  res
}

ag_memory_peak <- function() .Call(R_pg_memory_stats)[[7L]]

ag_memory_reset_peak <- function() {
  .Call(R_pg_memory_reset_peak)
  ag_memory_peak()
}

ag_memory_trim <- function() .Call(R_pg_memory_trim)

ag_get_threads <- function() .Call(R_pg_get_threads)

# Fraction of samples whose arg-max output row is y (0-based ids, a factor, or one-hot columns).
ag_accuracy <- function(model, x, y, batch_size = 256L) {
  if (is.factor(y)) y <- as.integer(y) - 1L
  if (is.logical(y) && is.null(dim(y)))
    .arg_fail("argument",
              "ag_accuracy: y must be 0-based class ids or a one-hot matrix, got booleans")
  Y <- .fit_cols(y, "y", "ag_accuracy")
  out <- ag_predict(model, x, batch_size = batch_size)
  if (ncol(Y) != ncol(out)) stop(sprintf("ag_accuracy: x has %d samples but y has %d", ncol(out),
                                         ncol(Y)), call. = FALSE)
  storage.mode(Y) <- "double"
  storage.mode(out) <- "double"
  .Call(R_pg_accuracy_count, out, Y) / ncol(out)  # counted in the core, as Python's
}
