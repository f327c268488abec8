# The R half of the printed-text case (tests/parity/cases_progress.py). Uses helpers.R
# (with_dtype, build_arch).
# Alone: Rscript tests/parity/progress.R (defines the function, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# ag_fit's epoch lines (verbose = 2, caught as messages) and the History's printed table with the
# given times (the measured ones differ between runs)
parity_fit_text <- function(dtype, arch, init, binit, x, y, steps, time_train, time_val) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, binit)
    msgs <- character()
    h <- withCallingHandlers(
      ag_fit(m, x, y, nepoch = as.integer(steps), shuffle = FALSE, batch_size = 4L,
             val_split = 0.25, lr = 0.05, verbose = 2L),
      message = function(c) {
        msgs <<- c(msgs, sub("\n$", "", conditionMessage(c)))
        invokeRestart("muffleMessage")
      })
    h$time_train <- time_train
    h$time_val <- time_val
    Sys.setlocale("LC_CTYPE", "C.UTF-8")  # the table's "±", as Python's
    list(lines = msgs, table = paste(capture.output(print(h)), collapse = "\n"))
  })
}
