# The R halves of the seed:* cases (tests/parity/cases_seed.py): each seeds the package's stream
# with ggml_set_seed and draws its own weights, masks and shuffles. Uses helpers.R.
# Alone: Rscript tests/parity/seed.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# initialisers, then R's own runif / sample / rnorm on the stream after them
parity_seed_init <- function(dtype, seed) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    l1 <- ag_linear(5, 3)
    l2 <- ag_linear(3, 5, init = "orthogonal")
    l3 <- ag_linear(4, 2, init = "orthogonal", gain = 2)
    e <- ag_embedding(7, 3)
    a <- ag_multihead_attention(4, 2)
    w <- list(l1_W = l1$W$data, l2_W = l2$W$data, l3_W = l3$W$data, emb = e$weight$data,
              W_q = a$W_q$data, W_k = a$W_k$data, W_v = a$W_v$data, W_o = a$W_o$data)
    c(w, list(after_runif = runif(3), after_sample = as.double(sample(10)), after_rnorm = rnorm(3)))
  })
}

# dataloader epochs: one on the default stream, one with its own seed
parity_seed_loader <- function(dtype, seed, x, y, steps) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    dl <- ag_dataloader(x, y, batch_size = 4L, shuffle = TRUE)
    own <- ag_dataloader(x, y, batch_size = 4L, shuffle = TRUE, seed = 7L)
    lapply(seq_len(steps), function(ep) {
      out <- list()
      for (which in c("dl", "own")) {
        l <- if (which == "dl") dl else own
        l$reset()
        i <- 0L
        while (l$has_next()) {
          b <- l$next_batch()
          out[[sprintf("%s x%d", which, i)]] <- b$x$data
          out[[sprintf("%s y%d", which, i)]] <- b$y$data
          i <- i + 1L
        }
      }
      out
    })
  })
}

# dropout in train mode: a layer and attention, eager
parity_seed_dropout <- function(dtype, seed, x, steps) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    m <- ag_sequential(ag_linear(4, 6, activation = "relu"), ag_dropout(0.4), ag_linear(6, 3))
    a <- ag_multihead_attention(4, 2, dropout = 0.3)
    lapply(seq_len(steps), function(s) {
      list(seq = m$forward(ag_tensor(x))$data,
           attn = a$forward(ag_tensor(x), causal_mask = TRUE)$data)
    })
  })
}

# a whole ag_fit: shuffle, validation split, dropout; eager or compiled
parity_seed_fit <- function(dtype, seed, x, y, nepoch, fit_seed, static, hist_keys) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    m <- ag_sequential(ag_linear(4, 8, activation = "relu"), ag_dropout(0.25), ag_linear(8, 3))
    h <- ag_fit(m, x, y, loss = "cross_entropy", optimizer = "adamw", lr = 0.02, nepoch = nepoch,
                batch_size = 5L, val_split = 0.25, shuffle = TRUE, seed = fit_seed, silent = TRUE,
                static = static)
    c(unclass(h)[hist_keys], values_of(m$parameters()),
      list(pred = ag_predict(m, x), after = runif(2)))
  })
}

# dp_train: replicas made from the stream
parity_seed_dp <- function(dtype, seed, x, y, n_iter) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    make <- function() ag_sequential(ag_linear(4, 5, activation = "tanh"), ag_linear(5, 3))
    data <- lapply(1:4, function(j) {
      list(x = x[, (3 * j - 2):(3 * j), drop = FALSE], y = y[, (3 * j - 2):(3 * j), drop = FALSE])
    })
    res <- dp_train(make, data, loss_fn = ag_mse_loss,
                    forward_fn = function(m, s) m$forward(ag_tensor(s$x)),
                    target_fn = function(s) s$y, n_replicas = 2L, n_iter = n_iter, lr = 0.01,
                    verbose = FALSE)
    c(list(loss_history = res$loss_history), values_of(res$params))
  })
}

# the 0.8.6 sampling ops: categorical draws, argmax, a normal sample and its gradients
parity_seed_sample <- function(dtype, seed, x, steps) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    lapply(seq_len(steps), function(s) {
      cat1 <- ag_sample_categorical(x)
      mu <- ag_param(x)
      ls <- ag_param(x[, 1, drop = FALSE] / 4)
      with_grad_tape(loss <- ag_sum(ag_mul(ag_sample_normal(mu, ls), x)))
      backward(loss)
      list(categorical = as.double(cat1), argmax = as.double(ag_argmax(x)),
           normal_grad_mu = mu$grad, normal_grad_ls = ls$grad, loss = loss$data)
    })
  })
}
