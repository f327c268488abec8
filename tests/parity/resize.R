# The R half of the padding and upsampling cases (tests/parity/cases_resize.py). Uses helpers.R
# (with_dtype). Alone: Rscript tests/parity/resize.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

.resize_model <- function(init) {
  m <- ag_sequential(ag_pad2d(1, mode = "reflect"), ag_upsample2d(2, "bilinear"),
                     ag_max_pool2d(2), ag_pad2d(c(0, 1, 1, 0), value = 0.5),
                     ag_upsample2d(c(1, 2)), ag_flatten(), ag_linear(2L * 9L * 22L, 3L))
  ps <- m$parameters()
  for (k in names(init)) ps[[k]]$data <- init[[k]]
  m
}

# the model from given weights, `steps` Adam steps (eager or one ag_compile step): each step's
# loss and the linear's parameters after it
parity_resize_steps <- function(dtype, init, x, y, steps, compiled) {
  with_dtype(dtype, function() {
    m <- .resize_model(init)
    ps <- m$parameters()
    opt <- optimizer_adam(ps, lr = 0.05)
    loss_fn <- function(x, y) {
      h <- ag_pad2d_op(x, c(1, 2), mode = "replicate", input_shape = c(2, 4, 4))
      e1 <- ag_pad1d_op(x, c(2, 1), mode = "reflect", input_shape = c(2, 16))
      e2 <- ag_upsample2d_op(x, c(2, 1), input_shape = c(2, 4, 4))
      e3 <- ag_upsample1d_op(x, 3, "linear", input_shape = c(2, 16))
      ag_mse_loss(m$forward(h), y) + ag_mean(e1 * e1) + ag_mean(e2 * e2) + ag_mean(e3 * e3)
    }
    record <- function(loss) {
      list(loss = loss, W = ps[["layer7_W"]]$data, b = ps[["layer7_b"]]$data)
    }
    train_steps(loss_fn, opt, ag_tensor(x), ag_tensor(y), steps, compiled, record)
  })
}

parity_resize_save <- function(dtype, init, path) {
  with_dtype(dtype, function() {
    ag_save_model(.resize_model(init), path)
    NULL
  })
}

# a file read here: the forward of x (C 2, H 4, W 4) padded as in training
parity_resize_read <- function(dtype, path, x) {
  with_dtype(dtype, function() {
    m <- ag_load_model(path)
    m$forward(ag_pad2d_op(x, c(1, 2), mode = "replicate", input_shape = c(2, 4, 4)))$data
  })
}
