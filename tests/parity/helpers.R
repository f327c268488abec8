# Helpers the parity cases' R halves share: tests/parity/core.py sources this file first, then
# the others, into one environment (so lintr's object_usage is off here, tests/parity/.lintr).
# Alone: Rscript tests/parity/helpers.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# set a model's parameters and buffers by name (the values drawn in Python)
set_values <- function(m, init, binit) {
  p <- m$parameters()
  for (k in names(init)) p[[k]]$data <- init[[k]]
  b <- m$buffers()
  for (k in names(binit)) b[[k]]$data <- binit[[k]]
  m
}

values_of <- function(lst) lapply(lst, function(t) t$data)

# f() with the default dtype set to `dtype`, restored afterwards (also on error)
with_dtype <- function(dtype, f) {
  prev <- ag_dtype(dtype)
  tryCatch(f(), finally = ag_dtype(prev))
}

# `steps` optimizer steps on loss_fn(xt, yt), eager or as one ag_compile step; record(loss) after
# each (core.py's train_steps)
train_steps <- function(loss_fn, opt, xt, yt, steps, compiled, record) {
  step <- if (compiled) ag_compile(loss_fn, xt, yt, optimizer = opt) else NULL
  lapply(seq_len(steps), function(i) {
    if (!is.null(step)) {
      loss <- step(xt, yt)
    } else {
      with_grad_tape({
        lt <- loss_fn(xt, yt)
      })
      opt$step(backward(lt))
      opt$zero_grad()
      loss <- lt$data[[1L]]
    }
    record(loss)
  })
}

# an architecture given as the expression both languages evaluate, e.g. "ag_sequential(...)"
build_arch <- function(arch, init, binit) set_values(eval(parse(text = arch)), init, binit)
