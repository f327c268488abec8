# The R halves of the ag_compile and ag_fit(static = TRUE) cases (tests/parity/cases_compile.py,
# cases_attention.py). Uses helpers.R and models.R (fit_records).
# Alone: Rscript tests/parity/compile.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# a compiled Adam step (accumulating 2) replayed with new inputs
parity_compile <- function(dtype, steps, x, y, W1_0, b1_0, W2_0, b2_0) {
  with_dtype(dtype, function() {
    P <- list(W1 = ag_param(W1_0), b1 = ag_param(b1_0), W2 = ag_param(W2_0), b2 = ag_param(b2_0))
    opt <- optimizer_adam(P, lr = 0.01, weight_decay = 0.05, accumulate_steps = 2)
    f <- function(x, y) {
      h <- ag_tanh(ag_add(ag_matmul(P$W1, x), P$b1))
      ag_softmax_cross_entropy_loss(ag_add(ag_matmul(P$W2, h), P$b2), y)
    }
    step <- ag_compile(f, x, matrix(y, 1), optimizer = opt)
    out <- list()
    for (s in seq_len(steps)) {
      rec <- list(loss = step(x * (1 + 0.1 * s), matrix((y + s) %% 3, 1)))
      for (nm in names(P)) rec[[nm]] <- P[[nm]]$data
      out[[s]] <- rec
    }
    out
  })
}

# ag_fit(static = TRUE): batch norm, a rate-0 dropout and layer norm, validation widths 4 and 3
parity_fit_static <- function(dtype, arch, init, x, y, nepoch, hist_keys) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, init, list())
    opt <- optimizer_adam(m$parameters(), lr = 0.02, weight_decay = 0.01)
    fit_records(m, x, y, hist_keys, loss = "cross_entropy", optimizer = opt, nepoch = nepoch,
                batch_size = 4L, nbatch_logical = 8L, val_split = 0.25, static = TRUE)
  })
}

# Adam steps through a compiled graph holding the fused attention node
parity_compile_flash <- function(dtype, steps, x, y, Wq_0) {
  with_dtype(dtype, function() {
    Wq <- ag_param(Wq_0)
    opt <- optimizer_adam(list(Wq = Wq), lr = 0.02)
    f <- function(x, y) ag_mse_loss(ag_flash_attention(ag_matmul(Wq, x), x, x, 2, causal = TRUE), y)
    step <- ag_compile(f, x, y, optimizer = opt)
    out <- list()
    for (s in seq_len(steps)) out[[s]] <- list(loss = step(x * (1 + 0.1 * s), y), Wq = Wq$data)
    out
  })
}
