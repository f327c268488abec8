# Golden-value setup of spec section 13 and small helpers.
local_f64 <- function(env = parent.frame()) {
  prev <- ag_dtype("f64")
  do.call(on.exit, list(quote(pyggmlr::ag_dtype(prev)), add = TRUE), envir = env)
  assign("prev", prev, envir = env)
  invisible(prev)
}
gold <- function() list(
  W = matrix(c(0.5, -0.3, 0.2, 0.8, -0.1, 0.4), 2, 3), b = matrix(c(0.1, -0.2), 2, 1),
  x = matrix(c(1, 2, 3, -1, 0, 1), 3, 2), y = matrix(c(1, 0, 0, 1), 2, 2))
gradof <- function(grads, t) get0(as.character(t$id), envir = grads, inherits = FALSE)
rows <- function(...) matrix(c(...), nrow = length(list(...)[[1]]), byrow = TRUE)
byrow <- function(v, nr) matrix(v, nrow = nr, byrow = TRUE)

# Run R code lines in a child Rscript (for what could crash R or must not touch this process):
# its output lines, with attr "status" when it failed. timeout: seconds (0: none).
run_rscript <- function(lines, timeout = 0) {
  script <- tempfile(fileext = ".R")
  writeLines(lines, script)
  suppressWarnings(system2(file.path(R.home("bin"), "Rscript"), shQuote(script), stdout = TRUE,
                           stderr = TRUE, timeout = timeout))
}

# R's MPI path needs Rmpi, which loads only with libopenmpi-dev's libmpi.so: CI installs both
# (scripts/test.sh), so there a missing Rmpi fails; elsewhere it skips and says why.
skip_without_rmpi <- function() {
  if (requireNamespace("Rmpi", quietly = TRUE)) return(invisible(TRUE))
  why <- "Rmpi does not load (apt-get install r-cran-rmpi libopenmpi-dev): the MPI path cannot run"
  if (nzchar(Sys.getenv("CI"))) stop("CI has R but ", why, call. = FALSE)
  testthat::skip(why)
}

# iris as [4 features, 150], standardised (the ag_fit tests)
iris_x <- function() t(scale(as.matrix(iris[, 1:4])))

# cli redraws a progress bar only when its timer is due (every 3 s when cli loaded outside a
# terminal, as under testthat): cli's own test helper keeps it due, so a bar in a test draws
with_cli_ticks <- function(expr) cli:::cli_with_ticks(expr)

# The estimate-vs-peak check: ag_estimate_training_memory of a compiled Adam step (static =
# TRUE) and the measured peak of that step (record + first replay) above what exists before it;
# an earlier test's tape would be emptied by the recording, inside the measurement
estimate_and_peak <- function(m, x, y, loss = function(out, t) ag_mse_loss(out, t)) {
  opt <- optimizer_adam(m$parameters(), lr = 0.01)
  est <- ag_estimate_training_memory(model = m, x = x, y = y, loss_fn = loss, optimizer = opt,
                                     static = TRUE, quiet = TRUE)
  ag_tape_clear()
  invisible(gc())
  base <- ag_memory_stats()$total$current
  ag_memory_reset_peak()
  step <- ag_compile(function(a, b) loss(m$forward(a), b), x, y, optimizer = opt)
  step(x, y)
  list(est = est, peak = ag_memory_peak() - base, opt = opt)
}

# ag_fit(static = TRUE) trains as the eager run does, bit for bit: the loss history and the
# predictions after two epochs (make_model() builds the same start each call)
expect_fit_static_equals_eager <- function(make_model, x, y, batch_size = 4L) {
  runs <- lapply(c(FALSE, TRUE), function(st) {
    m <- make_model()
    h <- ag_fit(m, x, y, nepoch = 2L, batch_size = batch_size, shuffle = FALSE, static = st,
                silent = TRUE)
    list(h$loss, ag_predict(m, x))
  })
  testthat::expect_identical(runs[[1L]], runs[[2L]])
}
