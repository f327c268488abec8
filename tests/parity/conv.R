# The R half of the convolution cases (tests/parity/cases_conv.py). Uses helpers.R and models.R
# (fit_records). Alone: Rscript tests/parity/conv.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

# the CNN drawn from `seed`, its initial weights, a compiled forward, ag_fit, saved to `path`
parity_conv_fit <- function(dtype, dims, seed, x, y, nepoch, static, hist_keys, path) {
  with_dtype(dtype, function() {
    ggml_set_seed(seed)
    m <- if (dims == 4) {  # a 1-d decoder: back up from 5 to 10
      ag_sequential(ag_conv1d(2, 4, 3, stride = 2, padding = 1, input_shape = c(2, 9)),
                    ag_conv_transpose1d(4, 2, 3, stride = 2, padding = 1, output_padding = 1,
                                        groups = 2, activation = "tanh"),
                    ag_linear(2 * 10, 3))
    } else if (dims == 3) {  # a transposed convolution back up to 6x6
      ag_sequential(ag_conv2d(2, 4, 3, stride = 2, padding = 1, input_shape = c(2, 6, 6)),
                    ag_conv_transpose2d(4, 2, 3, stride = 2, padding = 1, output_padding = 1,
                                        groups = 2, dilation = c(1, 1)),
                    ag_linear(2 * 36, 3))
    } else if (dims == 2) {
      ag_sequential(ag_conv2d(2, 4, 3, stride = 2, padding = 1, input_shape = c(2, 6, 6)),
                    ag_conv2d(4, 4, c(2, 1), groups = 2, dilation = c(1, 2), padding = "same"),
                    ag_linear(4 * 9, 3))
    } else {
      ag_sequential(ag_conv1d(2, 4, 3, stride = 2, padding = 1, input_shape = c(2, 9)),
                    ag_conv1d(4, 4, 2, groups = 2, dilation = 2, padding = "same"),
                    ag_linear(4 * 5, 3))
    }
    init <- values_of(m$parameters())
    f <- ag_compile(function(t) m$forward(t), x[, 1:4], build = "forward")
    fwd <- f(x[, 5:8])$data
    res <- fit_records(m, x, y, hist_keys, loss = "mse", optimizer = "adam", nepoch = nepoch,
                       batch_size = 4L, lr = 0.02, static = static)
    ag_save_model(m, path)
    list(init = init, fwd = fwd, fit = res)
  })
}

# a file written by Python read here: ag_predict on x
parity_conv_read <- function(path, x) ag_predict(ag_load_model(path), x)

# each init's layers from `seed`: their parameters and the conv2d's forward on x (init = cases)
parity_conv_init <- function(dtype, seed, x) {
  with_dtype(dtype, function() {
    run <- function(init) {
      ggml_set_seed(seed)
      c2 <- ag_conv2d(2, 4, c(3, 2), groups = 2, input_shape = c(2, 6, 6), init = init)
      c1 <- ag_conv1d(3, 5, 4, init = init)
      ct <- ag_conv_transpose2d(4, 6, 3, groups = 2, init = init)
      ct1 <- ag_conv_transpose1d(2, 6, 5, groups = 2, init = init)
      layers <- list(conv2d = c2, conv1d = c1, conv_transpose2d = ct, conv_transpose1d = ct1)
      rec <- list()
      for (nm in names(layers)) {
        p <- values_of(layers[[nm]]$parameters())
        names(p) <- paste(nm, names(p))
        rec <- c(rec, p)
      }
      rec[["conv2d forward"]] <- c2$forward(x)$data
      rec
    }
    sapply(c("torch", "glorot_uniform", "he_uniform"), run, simplify = FALSE)
  })
}
