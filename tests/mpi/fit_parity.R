# ag_fit(distributed = TRUE) on 2 ranks over Rmpi: the same run as fit_parity.py (under mpirun).
suppressMessages(library(pyggmlr))
args <- commandArgs(trailingOnly = TRUE)
ag_mpi_init()
set.seed(11)
X <- matrix(rnorm(4 * 96), 4, 96)
ids <- floor(runif(96) * 3)
ggml_set_seed(1)
model <- ag_sequential(ag_linear(4, 8, activation = "relu"), ag_dropout(0.25), ag_linear(8, 3))
h <- ag_fit(model, X, ids, loss = "cross_entropy", optimizer = "adamw", lr = 0.01, nepoch = 3, batch_size = 8,
            nbatch_logical = 16, val_split = 0.25, shuffle = TRUE, seed = 5, distributed = TRUE, progress = "none")
spread <- ag_parameters_spread(model)
if (ag_mpi_rank() == 0L) {
  num <- function(v) paste0("[", paste(sprintf("%.17g", v), collapse = ", "), "]")
  keys <- c("loss", "loss_unc", "accuracy", "accuracy_unc", "val_loss", "val_accuracy")
  parts <- vapply(keys, function(k) sprintf("\"%s\": %s", k, num(h[[k]])), "")
  w <- unlist(lapply(model$parameters(), function(t) as.vector(t$data)))
  parts <- c(parts, sprintf("\"weights\": %s", num(w)), sprintf("\"spread\": %.17g", spread))
  writeLines(paste0("{", paste(parts, collapse = ", "), "}"), args[[1L]])
}
invisible(Rmpi::mpi.finalize())
