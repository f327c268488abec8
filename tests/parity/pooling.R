# The R half of the pooling cases (tests/parity/cases_pooling.py). Uses helpers.R (with_dtype).
# Alone: Rscript tests/parity/pooling.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# the pooled model from given weights, `steps` Adam steps (eager or one ag_compile step): each
# step's loss and two parameters after it
parity_pool_steps <- function(dtype, init, x, y, steps, compiled) {
  with_dtype(dtype, function() {
    m <- ag_sequential(ag_avg_pool2d(3, 1, 1), ag_flatten(), ag_linear(18L, 4L, "relu"),
                       ag_linear(4L, 3L))
    ps <- m$parameters()
    for (k in names(init)) ps[[k]]$data <- init[[k]]
    opt <- optimizer_adam(ps, lr = 0.05)
    loss_fn <- function(x, y) {
      h <- ag_max_pool2d_op(x, 2, input_shape = c(2, 6, 6))
      extra <- ag_mean(ag_global_max_pool_op(h)) +
        ag_mean(ag_avg_pool1d_op(x, 4, 2, 1, input_shape = c(2, 36)))
      ag_mse_loss(m$forward(h), y) + extra
    }
    record <- function(loss) {
      list(loss = loss, W = ps[["layer3_W"]]$data, b = ps[["layer4_b"]]$data)
    }
    train_steps(loss_fn, opt, ag_tensor(x), ag_tensor(y), steps, compiled, record)
  })
}

# the pooled model from given weights saved to `path` (the other side reads it)
parity_pool_save <- function(dtype, init, path) {
  with_dtype(dtype, function() {
    m <- ag_sequential(ag_max_pool2d(2), ag_avg_pool2d(3, 1, 1), ag_flatten(),
                       ag_linear(18L, 4L, "relu"), ag_linear(4L, 3L))
    ps <- m$parameters()
    for (k in names(init)) ps[[k]]$data <- init[[k]]
    ag_save_model(m, path)
    NULL
  })
}

# a file read here: its layer types and the forward of x tagged (C 2, H 6, W 6)
parity_pool_read <- function(dtype, path, x) {
  with_dtype(dtype, function() {
    m <- ag_load_model(path)
    xt <- ag_tensor(x)
    ag_image_shape(xt) <- c(2, 6, 6)
    list(out = m$forward(xt)$data,
         types = paste(vapply(ag_to_config(m)$layers, function(l) l$type, ""), collapse = " "))
  })
}
