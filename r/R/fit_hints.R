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

# ag_fit's class checks (the core's rules and texts, pg_fit_check_ids), with the model's outputs
# read once (from the layer configs): 1-based ids, then the classes (a factor's levels, else the
# largest id + 1) against those outputs
.check_classes <- function(tg, model, features) {
  k <- tryCatch(.out_rows(model, features, all = TRUE), error = function(e)
    tryCatch(.out_rows(model, features), error = function(e) NA_integer_))
  .Call(R_pg_fit_check_ids, tg$Y, k, if (!is.null(tg$levels)) length(tg$levels))
}
