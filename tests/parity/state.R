# The R halves of the state-dict cases (tests/parity/cases_state.py): a state dict taken in one
# language loads in the other. Uses helpers.R. Alone: Rscript tests/parity/state.R (defines the
# functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# n Adam steps of mse on (x, y), then eval mode
train_state <- function(m, x, y, n) {
  force(m)  # built (its initial draws) before the seed, as in Python
  set.seed(17L)  # the same dropout masks as Python's ggml_set_seed(17)
  opt <- optimizer_adam(m$parameters(), lr = 0.01, weight_decay = 0.05)
  for (s in seq_len(n)) {
    loss <- with_grad_tape(ag_mse_loss(m$forward(ag_tensor(x)), y))
    opt$step(backward(loss))
    opt$zero_grad()
  }
  ag_eval(m)
  m
}

# R trains the model and hands over its state dict and outputs
parity_state_save <- function(dtype, arch, init, binit, x, y, n_train) {
  with_dtype(dtype, function() {
    m <- train_state(build_arch(arch, init, binit), x, y, n_train)
    list(state = ag_state_dict(m), y = ag_predict(m, x))
  })
}

# R loads Python's state dict into a model with other weights
parity_state_load <- function(dtype, arch, other, state, x) {
  with_dtype(dtype, function() {
    m <- build_arch(arch, other, list())
    ag_load_state_dict(m, state)
    ag_eval(m)
    list(state = ag_state_dict(m), y = ag_predict(m, x))
  })
}
