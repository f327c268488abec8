# The R half of the summary cases (tests/parity/cases_summary.py): print(summary(model)) of a
# CNN, a 1-D signal model, a recurrent model and one with a custom layer, as text; every
# built-in layer printed alone (parity_print_text). Alone:
# Rscript tests/parity/summary.R (defines the functions, runs nothing).
suppressPackageStartupMessages(library(pyggmlr))

.summary_models <- function() {
  scale <- structure(list(forward = function(x) x * 2,
                          params = function() list(s = ag_param(matrix(1, 5, 1)))),
                     class = "my_scale")
  list(
    cnn = ag_sequential(ag_conv2d(1L, 8L, 3L, padding = 1L, input_shape = c(1, 8, 8)),
                        ag_batch_norm(512L), ag_max_pool2d(2),
                        ag_conv_transpose2d(8L, 4L, 2L, stride = 2L), ag_avg_pool2d(2),
                        ag_pad2d(c(1, 2)), ag_flatten(), ag_linear(192L, 3L)),
    signal = ag_sequential(ag_conv1d(3L, 8L, 5L, input_shape = c(3, 32)), ag_max_pool1d(2),
                           ag_upsample1d(2), ag_pad1d(c(1, 2)), ag_global_avg_pool(),
                           ag_linear(8L, 2L, "softmax")),
    rnn = ag_sequential(ag_linear(4L, 12L),
                        ag_lstm(3L, 5L, bidirectional = TRUE, return_sequences = TRUE),
                        ag_gru(10L, 4L), ag_dropout(0.1), ag_linear(4L, 2L)),
    custom = ag_sequential(ag_linear(2L, 5L), scale, ag_dropout(0.5), ag_layer_norm(5L),
                           ag_linear(5L, 1L)),
    layer = ag_conv_transpose2d(2L, 3L, 3L, stride = 2L, padding = 1L, output_padding = 1L,
                                input_shape = c(2, 4, 4))
  )
}

# each model's printed summary, one string each (lines joined by "\n")
parity_summary_text <- function(seed) {
  ggml_set_seed(seed)
  Sys.setlocale("LC_CTYPE", "C.UTF-8")
  vapply(.summary_models(), function(m) paste(capture.output(print(summary(m))), collapse = "\n"),
         "")
}

# every built-in layer printed alone (cases_summary.py's _alone), the lines joined by "\n"
parity_print_text <- function(seed) {
  ggml_set_seed(seed)
  gru <- ag_gru(1L, 32L)
  ag_eval(gru)
  layers <- list(
    ag_lstm(2L, 3L, num_layers = 2L, bidirectional = TRUE, dropout = 0.25), gru,
    ag_rnn(4L, 5L, nonlinearity = "relu", return_sequences = TRUE),
    ag_conv2d(1L, 4L, 3L, input_shape = c(1, 8, 8), activation = "relu"), ag_conv1d(2L, 3L, 3L),
    ag_conv_transpose2d(2L, 3L, 3L), ag_conv_transpose1d(2L, 3L, 3L), ag_max_pool2d(2),
    ag_avg_pool1d(2), ag_global_avg_pool(), ag_global_max_pool(), ag_flatten(), ag_pad2d(1),
    ag_pad1d(c(1, 2), mode = "reflect"), ag_upsample2d(2), ag_upsample1d(2, mode = "linear"),
    ag_multihead_attention(8L, 2L), ag_embedding(10L, 4L), ag_batch_norm(4L), ag_dropout(0.5))
  paste(unlist(lapply(layers, function(l) capture.output(print(l)))), collapse = "\n")
}
