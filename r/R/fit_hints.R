# The hint for 1-based class labels, with Python's texts (row-major data: the core's
# pg_fit_check_samples).

# ag_softmax_cross_entropy_loss: an out-of-range error on 1-based ids gets the core's hint (the
# condition keeps its class); ids are read only when the call failed
.with_label_hint <- function(expr, target, k) {
  tryCatch(expr, error = function(e) {
    ids <- tryCatch(as.vector(if (is_ag_tensor(target)) target$data else target),
                    error = function(e2) NULL)
    hint <- if (is.numeric(ids)) .Call(R_pg_fit_one_based_hint, as.double(ids), k)
    if (!is.null(hint)) e$message <- paste0(conditionMessage(e), "; ", hint)
    stop(e)
  })
}
