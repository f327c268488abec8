# The R halves of the ag_checkpoint cases (tests/parity/cases_ckpt.py). Uses helpers.R.
# Alone: Rscript tests/parity/checkpoint.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# one run of the loop: a checkpointed segment (nested, holding a dropout) or a plain tape
ckpt_run <- function(ck, seed, steps, init, x, y) {
  ggml_set_seed(seed)
  p <- lapply(init, ag_param)
  drop <- ag_dropout(0.3)
  l1 <- function(h) ag_tanh(ag_add(ag_matmul(p$W1, h), p$b1))
  seg <- function(h, scale) {
    a <- if (ck) ag_checkpoint(l1, h) else l1(h)
    drop$forward(ag_scale(ag_relu(ag_add(ag_matmul(p$W2, a), p$b2)), scale))
  }
  opt <- optimizer_sgd(p, lr = 0.1, momentum = 0.9)
  lapply(seq_len(steps), function(s) {
    with_grad_tape({
      h <- if (ck) ag_checkpoint(seg, ag_tensor(x), scale = 1.5) else seg(ag_tensor(x), 1.5)
      loss <- ag_mse_loss(ag_add(ag_matmul(p$W3, h), p$b3), y)
    })
    g <- backward(loss)
    rec <- list(loss = loss$data)
    for (k in names(p)) rec[[paste("grad", k)]] <- g[[p[[k]]]]
    opt$step(g)
    opt$zero_grad()
    for (k in names(p)) rec[[k]] <- p[[k]]$data
    rec$stream <- runif(2)
    rec
  })
}

# the checkpointed run's records, each with "plain - checkpointed" (all zeros when they agree)
parity_ckpt <- function(dtype, seed, steps, W1, b1, W2, b2, W3, b3, x, y) {
  with_dtype(dtype, function() {
    init <- list(W1 = W1, b1 = b1, W2 = W2, b2 = b2, W3 = W3, b3 = b3)
    ck <- ckpt_run(TRUE, seed, steps, init, x, y)
    plain <- ckpt_run(FALSE, seed, steps, init, x, y)
    for (s in seq_along(ck)) {
      ck[[s]][["plain - checkpointed"]] <-
        unlist(Map(function(a, b) as.vector(a - b), plain[[s]], ck[[s]]))
    }
    ck
  })
}

# the tape report with and without a checkpoint, measured by the core
parity_ckpt_memory <- function(dtype, W1, W2, x) {
  with_dtype(dtype, function() {
    p <- list(W1 = ag_param(W1), W2 = ag_param(W2))
    body <- function(h) ag_relu(ag_matmul(p$W2, ag_tanh(ag_matmul(p$W1, h))))
    lapply(c(FALSE, TRUE), function(ck) {
      with_grad_tape({
        h <- ag_scale(ag_tensor(x), 2)
        l <- ag_sum(if (ck) ag_checkpoint(body, h) else body(h))
      })
      gc()
      r <- ag_tape_memory(quiet = TRUE)
      rec <- r[c("nodes", "bytes_total", "bytes_snapshots", "bytes_fields", "bytes_inputs")]
      rec$by_op.nodes <- r$by_op$nodes
      rec$by_op.op <- vapply(r$by_op$op, function(s) sum(utf8ToInt(s) * seq_along(utf8ToInt(s))), 0)
      rec$grad_W1 <- backward(l)[[p$W1]]
      ag_tape_clear()
      rec
    })
  })
}
