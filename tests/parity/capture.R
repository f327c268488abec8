# The R half of the captured-steps case (tests/parity/cases_capture.py). Uses helpers.R.
# Alone: Rscript tests/parity/capture.R (defines the function, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# ag_capture_step (Adam, clipping; the rate changed at step 3) and an ag_capture forward
parity_capture <- function(dtype, steps, W0, b0, x, y) {
  with_dtype(dtype, function() {
    W <- ag_param(W0)
    b <- ag_param(b0)
    opt <- optimizer_adam(list(W = W, b = b), lr = 0.05)
    step <- ag_capture_step(function(x, y) {
      list(loss = ag_mse_loss(ag_add(ag_matmul(W, x), b), y), out = ag_matmul(W, x))
    }, optimizer = opt, max_grad_norm = 0.5)
    fwd <- ag_capture(function(x) ag_tanh(ag_add(ag_matmul(W, x), b)))
    out <- list()
    for (s in seq_len(steps)) {
      if (s == 3L) ag_capture_set(step, 0.05)
      r <- step(x = x, y = y)
      out[[s]] <- list(loss = r$loss, out = r$out, grad_norm = r$grad_norm, W = W$data,
                       b = b$data, fwd = fwd(x = x))
    }
    out
  })
}
