# The hint for 1-based class labels, with Python's texts (row-major data: the core's
# pg_fit_check_samples).

.ONE_BASED_HINT <- "class ids are 0-based: pass as.integer(f) - 1L, or the factor itself"

# TRUE when ids look like R's 1-based labels for k classes (min 1, max k)
.one_based <- function(ids, k) {
  length(ids) > 0L && !is.na(k) && is.numeric(ids) && !anyNA(ids) && min(ids) == 1 && max(ids) == k
}

# ag_softmax_cross_entropy_loss: an out-of-range error on 1-based ids gets the hint (the
# condition keeps its class); ids are read only when the call failed
.with_label_hint <- function(expr, target, k) {
  tryCatch(expr, error = function(e) {
    ids <- tryCatch(as.vector(if (is_ag_tensor(target)) target$data else target),
                    error = function(e2) NULL)
    if (.one_based(ids, k)) e$message <- paste0(conditionMessage(e), "; ", .ONE_BASED_HINT)
    stop(e)
  })
}

# ag_fit's class checks, with the model's outputs read once (from the layer configs): 1-based
# ids refused up front when the model says how many classes it outputs, then cross_entropy's
# classes (a factor's levels, else the largest id + 1) against those outputs (the rule and
# text are the core's)
.check_classes <- function(tg, model, features) {
  if (is.null(tg$ids)) return(invisible())  # cross_entropy ids (a factor's included)
  k <- tryCatch(.out_rows(model, features, all = TRUE), error = function(e)
    tryCatch(.out_rows(model, features), error = function(e) NA_integer_))
  if (.one_based(tg$ids, k))
    .fit_stop("ag_fit: y holds class ids 1..%d but the model has %d outputs; %s", as.integer(k),
              as.integer(k), .ONE_BASED_HINT)
  nc <- if (!is.null(tg$levels)) length(tg$levels) else if (length(tg$ids)) max(tg$ids) + 1
  if (!is.null(nc)) .Call(R_pg_fit_check_classes, as.double(nc), as.double(k), !is.null(tg$levels))
  invisible()
}
