# The R half of the shipped data sets' case (tests/parity/cases_data.py).
# Alone: Rscript tests/parity/datasets.R (defines the function, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# one loader's result with the factor as 0-based ids and labels (as Python's y and classes[y])
parity_dataset <- function(loader) {
  d <- get(loader, envir = asNamespace("pyggmlr"))()
  list(x = unname(d$x), y = as.integer(d$y) - 1L, labels = as.character(d$y),
       classes = d$classes, features = d$features)
}

# the sequences guide's steps (r/vignettes/sequences.Rmd) on R's own sunspot.month, shortened as
# Python's half (tests/parity/cases_data.py): 1 epoch on every 4th training window
parity_sunspots <- function(dtype, nepoch) {
  s <- as.numeric(sunspot.month)
  rec0 <- list(sunspots = s, year = floor(as.numeric(time(sunspot.month)) + 1e-9),
               month = as.numeric(cycle(sunspot.month)))
  z <- (s - 50) / 40
  targets <- 121:length(s)
  x <- sapply(targets, function(t) z[(t - 60):(t - 1)])
  y <- matrix(z[targets], 1)
  train <- targets <= length(s) - 600
  keep <- which(train)[seq(1, sum(train), by = 4)]
  rec1 <- with_dtype(dtype, function() {
    ggml_set_seed(1)
    model <- ag_sequential(ag_gru(1, 8), ag_linear(8, 1))
    h <- ag_fit(model, x[, keep], y[, keep, drop = FALSE], loss = "mse", nepoch = nepoch,
                batch_size = 32, lr = 3e-3, seed = 11, verbose = 0)
    res <- ag_evaluate(model, x[, !train], y[, !train, drop = FALSE], metrics = "rmse")
    # the guide's forecast ahead: a return_state twin fed its own forecasts, 3 months
    stepper <- ag_gru(1, 8, return_state = TRUE)
    ag_load_state_dict(stepper, ag_state_dict(model$layers[[1]]))
    st <- stepper$forward(ag_tensor(x[, !train]))
    p <- model$layers[[2]]$forward(st[[2]])
    for (k in 1:2) {
      st <- stepper$forward(p, h0 = st[[2]])
      p <- model$layers[[2]]$forward(st[[2]])
    }
    list(loss = h$loss, rmse = res$rmse, predict = ag_predict(model, x[, !train]),
         ahead = p$data)
  })
  list(rec0, rec1)
}
