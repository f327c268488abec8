# The core allocator's counters, as Python's ag_memory_stats / ag_memory_peak /
# ag_memory_reset_peak / ag_memory_trim report them (the same C calls), and the kernels' threads.

# the C glue names every count (r/src/r_tensor.c, r_memory.c): categories in enum order
ag_memory_stats <- function() {
  v <- .Call(R_pg_memory_stats)
  peaks <- .Call(R_pg_memory_category_peaks)
  res <- lapply(names(peaks), function(k) list(current = v[[k]], peak = peaks[[k]]))
  names(res) <- names(peaks)
  res$total <- list(current = v[["total"]], peak = v[["peak"]])
  for (k in c("live_tensors", "live_gradmaps", "live_optimizers", "tape_nodes")) res[[k]] <- v[[k]]
  res$cached <- .Call(R_pg_memory_cached)
  res
}

ag_memory_peak <- function() .Call(R_pg_memory_stats)[["peak"]]

ag_memory_reset_peak <- function() {
  .Call(R_pg_memory_reset_peak)
  ag_memory_peak()
}

ag_memory_trim <- function() .Call(R_pg_memory_trim)

ag_get_threads <- function() .Call(R_pg_get_threads)

# Fraction of samples whose arg-max output row is y (0-based ids, a factor, or one-hot columns);
# a 1-output model, or any model given a threshold, is scored per element as keras'
# binary_accuracy (the core's pg_accuracy): NULL means 0.5 on one output, arg-max on more.
ag_accuracy <- function(model, x, y, batch_size = 256L, threshold = NULL) {
  .check_threshold(threshold, "ag_accuracy")
  if (is.factor(y)) y <- as.integer(y) - 1L
  bools <- is.logical(y)  # a logical matrix too: refused by the core's text, as Python's
  Y <- .fit_cols(y, "y", "ag_accuracy")
  out <- .predict(model, x, batch_size, "ag_accuracy")
  storage.mode(out) <- "double"
  .Call(R_pg_accuracy, out, Y, threshold, bools)  # the rule and the count: the core's, as Python's
}
