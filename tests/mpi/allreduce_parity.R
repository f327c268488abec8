# ag_allreduce_gradients on 2 ranks over Rmpi: the same run as allreduce_parity.py (mpirun).
suppressMessages(library(pyggmlr))
args <- commandArgs(trailingOnly = TRUE)
ag_mpi_init()
rank <- ag_mpi_rank()
ggml_set_seed(3)
m <- ag_linear(3, 4)
x <- ag_tensor(matrix(0:5, 3, 2) * (rank + 1.37) / 7)
with_grad_tape(loss <- ag_mse_loss(m$forward(x), matrix(1, 4, 2) / 3))
g <- backward(loss)
ag_allreduce_gradients(m, g, weight = rank + 2)
if (rank == 0L) {
  v <- unlist(lapply(m$params(), function(t) as.vector(g[[t]])))
  writeLines(paste0("[", paste(sprintf("%.17g", v), collapse = ", "), "]"), args[[1L]])
}
invisible(Rmpi::mpi.finalize())
