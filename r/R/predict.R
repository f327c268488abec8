# ag_predict(type =) and predict() methods (the same semantics as pyggmlr/fit/predict.py). How a
# model's outputs are read comes from the loss ag_fit trained it with, which ag_fit records on
# the model (model$loss, and model$classes: a factor y's levels) and model files keep (metadata
# 'target'); the reading itself (softmax, sigmoid, threshold, arg-max) is the core's
# (pg_predict_transform), so R and Python give the same bits.

ag_predict <- function(model, x, batch_size = 256L, type = "response", loss = NULL) {
  fn <- "ag_predict"
  k <- .Call(R_pg_predict_type, if (is.character(type) && length(type) == 1L) type,
             .arg_show(type))
  if (!is.null(loss) && !(is.character(loss) && length(loss) == 1L && !is.na(loss)))
    .arg_fail("argument", "%s: loss must be one of ag_fit's loss names or NULL, got %s", fn,
              .arg_show(loss))
  tg <- .model_target(model)
  name <- if (is.null(loss)) tg$loss else loss
  classify <- .Call(R_pg_predict_classify, name, fn)  # no loss: none (the core's)
  out <- .predict(model, x, batch_size, fn)
  if (k == 0L) return(out)
  if (!is.double(out)) storage.mode(out) <- "double"
  res <- .Call(R_pg_predict_transform, out, k, classify, name,
               if (is.null(tg$classes)) -1 else length(tg$classes),
               identical(.model_dtype(model), "f32"))  # Python's float32 probabilities
  if (k == 1L) return(res)
  if (nrow(res) > 1L) {  # multi-label: 0/1 per output
    storage.mode(res) <- "integer"
    return(res)
  }
  ids <- as.integer(res[1L, ])  # 0-based, as ag_fit takes class ids (NaN: NA)
  if (is.null(tg$classes)) return(ids)
  factor(tg$classes[ids + 1L], levels = tg$classes)
}

# list(loss, classes) recorded on a model (NULL each when none); a list model (ag_linear) cannot
# be changed in place and records nothing
.model_target <- function(model) {
  if (!is.environment(model)) return(list(loss = NULL, classes = NULL))
  loss <- get0("loss", envir = model, inherits = FALSE)
  cl <- get0("classes", envir = model, inherits = FALSE)
  list(loss = if (is.character(loss) && length(loss) == 1L) loss,
       classes = if (!is.null(cl)) as.character(cl))
}

.set_target <- function(model, loss, classes) {
  if (!is.environment(model)) return(invisible())
  # a user's own field of that name (a function, a number) or a locked one is left alone
  put <- function(k, v) {
    old <- get0(k, envir = model, inherits = FALSE)
    if (!is.null(old) && !is.character(old)) return()
    # a new field of an open environment, or a plain unlocked one, cannot fail: no tryCatch
    safe <- if (exists(k, envir = model, inherits = FALSE))
      !bindingIsLocked(k, model) && !bindingIsActive(k, model)
    else !environmentIsLocked(model)
    if (safe) assign(k, v, envir = model)
    else tryCatch(assign(k, v, envir = model), error = function(e) NULL)
  }
  put("loss", loss)
  put("classes", if (!is.null(classes)) as.character(classes))
  invisible()
}

# metadata 'target' for the model-file writer: NULL (nothing recorded) or list(loss, classes);
# the core checks the loss and finds its classify kind
.target_meta <- function(model) {
  tg <- .model_target(model)
  if (is.null(tg$loss) && is.null(tg$classes)) return(NULL)
  list(tg$loss, if (!is.null(tg$classes)) enc2utf8(tg$classes))
}

# predict(): newdata as ag_predict's x ([features, n]); a data.frame for a model fitted by formula
# (or on a data.frame with factor columns) goes through the same model matrix (fit_formula.R)
predict.ag_layer <- function(object, newdata, type = c("response", "prob", "class"),
                             batch_size = 256L, ...) {
  if (identical(type, c("response", "prob", "class"))) type <- "response"
  if (missing(newdata))
    .arg_fail("argument", "predict: newdata is required (a [features, n] matrix or a data.frame)")
  if (is.data.frame(newdata)) newdata <- .predict_frame(object, newdata)
  ag_predict(object, newdata, batch_size = batch_size, type = type, ...)
}
predict.ag_linear <- function(object, newdata, type = c("response", "prob", "class"),
                              batch_size = 256L, ...) {
  predict.ag_layer(object, newdata, type, batch_size, ...)
}

# the model's formula terms (ag_fit's x_terms) on new data; without them a numeric data.frame
# is one row per sample, as ag_predict takes it
.predict_frame <- function(object, df) {
  tt <- if (is.environment(object)) get0("x_terms", envir = object, inherits = FALSE)
  if (is.null(tt)) return(df)
  mf <- tryCatch(stats::model.frame(tt, df, na.action = stats::na.pass,
                                    xlev = attr(tt, "xlevels")),
                 error = function(e)
                   .arg_fail("value", "predict: newdata does not fit the model's formula: %s",
                             conditionMessage(e)))
  .fit_design(mf)
}

# the line print() and summary() add: the loss and the labels when known
.target_line <- function(model) {
  tg <- .model_target(model)
  if (is.null(tg$loss) && is.null(tg$classes)) return(invisible())
  cl <- tg$classes
  if (!is.null(tg$loss)) cat(sprintf("  loss: %s\n", tg$loss))
  if (!is.null(cl))
    cat(sprintf("  classes (%d): %s\n", length(cl),
                paste(c(utils::head(cl, 10L), if (length(cl) > 10L) "..."), collapse = ", ")))
  invisible()
}
