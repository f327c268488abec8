# The R half of the opt:* cases (tests/parity/cases_opt.py): ggmlR 0.8.6's optimizer idioms as
# an R user writes them. Uses helpers.R. Alone: Rscript tests/parity/optim.R (defines, runs
# nothing).
suppressPackageStartupMessages(library(pyggmlr))

# the optimizer of a case (p: the named parameter list), as Python's _OPTS builds it
make_optimizer <- function(kind, p, k, avg) {
  switch(kind,
         sgd = optimizer_sgd(p, lr = 0.1, momentum = 0.9, accumulate_steps = k, average = avg),
         adam = optimizer_adam(p, lr = 0.01, accumulate_steps = k, average = avg))
}

# `steps` micro-batch steps, through the $grad idiom or (trap) opt$step(backward(loss))
opt_steps <- function(p, opt, steps, x, y, trap) {
  micro <- list(c(1, 2), c(3, 4), c(5, 6), c(7, 8))
  lossf <- function(p, cols) {
    h <- ag_tanh(ag_add(ag_matmul(p$W1, ag_tensor(x[, cols, drop = FALSE])), p$b1))
    ag_mse_loss(ag_add(ag_matmul(p$W2, h), p$b2), ag_tensor(y[, cols, drop = FALSE]))
  }
  out <- list()
  for (s in seq_len(steps)) {
    cols <- micro[[(s - 1) %% 4 + 1]]
    with_grad_tape(loss <- lossf(p, cols))
    if (trap) {
      applied <- opt$step(backward(loss))
    } else {
      backward(loss)
      applied <- opt$step()
      if (applied) opt$zero_grad()
    }
    rec <- list(loss = loss$data, applied = as.numeric(applied),
                accum_count = as.numeric(opt$accum_count))
    if (inherits(opt, "ag_optimizer_adam")) rec$t <- as.numeric(opt$t)
    for (nm in names(p)) rec[[nm]] <- p[[nm]]$data
    out[[length(out) + 1L]] <- rec
  }
  out
}

# the steps; with `resume`, a snapshot through an .rds file continued by a fresh optimizer
parity_opt <- function(dtype, steps, x, y, W1_0, b1_0, W2_0, b2_0, kind, k, avg, trap, resume) {
  with_dtype(dtype, function() {
    p <- list(W1 = ag_param(W1_0), b1 = ag_param(b1_0), W2 = ag_param(W2_0), b2 = ag_param(b2_0))
    opt <- make_optimizer(kind, p, k, avg)
    out <- opt_steps(p, opt, steps, x, y, trap)
    if (resume) {
      snap <- list(w = lapply(p, function(t) t$data), st = opt$state())
      f <- tempfile(fileext = ".rds")
      saveRDS(snap, f)
      snap <- readRDS(f)
      unlink(f)
      out <- c(out, opt_steps(p, opt, steps, x, y, trap))
      p2 <- lapply(p, function(t) ag_param(t$data * 0 + 7))
      opt2 <- make_optimizer(kind, p2, k, avg)
      for (nm in names(p2)) p2[[nm]]$data <- snap$w[[nm]]
      opt2$load_state(snap$st)
      out <- c(out, opt_steps(p2, opt2, steps, x, y, trap))
      slots <- opt2$state()$slots
      rec <- list()
      for (s in names(slots)) for (nm in names(p)) rec[[paste(s, nm)]] <- slots[[s]][[nm]]
      out[[length(out) + 1L]] <- rec
    }
    out
  })
}
