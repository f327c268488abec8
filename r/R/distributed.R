# MPI data parallelism over Rmpi (launched with `mpirun -np N Rscript train.R`), the R face of
# pyggmlr.distributed: the same fused buffers (packed and unpacked in the core, native/dist.c),
# the same collectives in the same order, so N ranks give the numbers the Python ranks give.
# Rmpi is optional (Suggests): nothing here loads it before an MPI function is called.

.MPI_HINT <- paste0("MPI support needs an MPI library and Rmpi. On Debian/Ubuntu:\n",
                    "    apt-get install -y openmpi-bin r-cran-rmpi\n",
                    "then launch with: mpirun -np 2 Rscript your_script.R ",
                    "(as root add --allow-run-as-root; on a machine with fewer cores than ",
                    "ranks add --oversubscribe)")

.mpi_stop <- function(fmt, ...) .pg_stop("distributed", sprintf(fmt, ...))  # DistributedError

# embedded in a Python process whose mpi4py started MPI (pyggmlr.r sets the option): Rmpi would
# load without its communicators and crash the process at its first call
.host_mpi <- function() isTRUE(getOption("pyggmlr.host_mpi")) && !isNamespaceLoaded("Rmpi")

.mpi <- function() {
  if (.host_mpi())
    .mpi_stop(paste0("pyggmlr: MPI was started in this process by its Python host (mpi4py), ",
                     "and Rmpi cannot share it: call the Python functions (pyggmlr.ag_mpi_*), ",
                     "or run R in a process of its own (mpirun -np N Rscript ...)"))
  if (!requireNamespace("Rmpi",
                        quietly = TRUE)) .mpi_stop(paste0("pyggmlr: MPI is not available ",
                                                          "(package Rmpi is not installed).\n%s"),
                                                   .MPI_HINT)
  asNamespace("Rmpi")
}

ag_mpi_available <- function() !.host_mpi() && requireNamespace("Rmpi", quietly = TRUE)

# Rmpi's communicator 0 is MPI_COMM_WORLD under mpirun
ag_mpi_init <- function() {
  .mpi()
  invisible(0L)
}
ag_mpi_rank <- function() .mpi()$mpi.comm.rank(0L)
ag_mpi_world_size <- function() .mpi()$mpi.comm.size(0L)
ag_mpi_barrier <- function() invisible(.mpi()$mpi.barrier(0L))

# every tensor handle of a model, a named list or one tensor, the same tensor once (Python's order)
.mpi_tensors <- function(model, where) {
  p <- if (is_ag_tensor(model)) list(model)
       else if (.is_model(model)) .layer_params(model) else model
  # a wrong argument: an argument error, Python's texts (a DistributedError is for MPI itself)
  if (!is.list(p))
    .arg_fail("argument", "%s: expected a model, a list of ag_tensors or an ag_tensor, got %s",
              where, class(model)[[1L]])
  for (i in seq_along(p)) if (!is_ag_tensor(p[[i]]))
    .arg_fail("argument", "%s: parameter %d is not an ag_tensor", where, i)
  unname(.dedup(p))
}

.mpi_handles <- function(ts) lapply(ts, function(t) t$.ptr)

# all ranks must pass the same layout: one tiny all-reduce (max) of (n, sig, -n, -sig)
.mpi_check_layout <- function(h, where) {
  sig <- .Call(R_pg_dist_sig, h)
  mine <- c(length(h), sig)
  b <- .mpi()$mpi.allreduce(c(mine, -mine), type = 2L, op = "max", comm = 0L)
  if (b[1L] != -b[3L]) {
    .mpi_stop(paste0("%s: the ranks pass different parameter lists: different numbers of tensors ",
                     "(%d to %d); every rank must build the same model and call the same ",
                     "collectives in the same order"), where, as.integer(-b[3L]), as.integer(b[1L]))
  }
  if (b[2L] != -b[4L]) {
    .mpi_stop(paste0("%s: the ranks pass different parameter lists: %d tensors each, but with ",
                     "different shapes or dtypes; every rank must build the same model ",
                     "and call the same collectives in the same order"), where, as.integer(b[1L]))
  }
  invisible(TRUE)
}

ag_broadcast_parameters <- function(model, root = 0L, buffers = TRUE) {
  W <- ag_mpi_world_size()
  # an invalid root reaches MPI_Bcast, whose default error handler aborts the process
  root <- .arg_int(root, "ag_broadcast_parameters", "root", 0L, W - 1L)  # classed as Python's
  ts <- .mpi_tensors(model, "ag_broadcast_parameters")
  buffers <- .arg_flag(buffers, "ag_broadcast_parameters", "buffers")  # as Python
  if (buffers &&
      .is_model(model)) ts <- unname(.dedup(c(ts, unname(.layer_buffers(model)))))
  if (W == 1L) return(invisible(NULL))
  h <- .mpi_handles(ts)
  .mpi_check_layout(h, "ag_broadcast_parameters")
  buf <- .Call(R_pg_dist_pack, h, NULL, .pg$code$dist[["VALUE"]], FALSE, 1.0, 0L)
  buf <- .mpi()$mpi.bcast(buf, type = 2L, rank = as.integer(root), comm = 0L)
  if (ag_mpi_rank() != root) .Call(R_pg_dist_unpack, h, NULL, .pg$code$dist[["VALUE"]], FALSE, 1.0,
                                   buf)
  invisible(NULL)
}

# sum_r(weight_r * g_r) / sum_r(weight_r) in place, in one all-reduce of an f64 buffer
# (gradients * weight | presence flags | weight); returns the total weight
ag_allreduce_gradients <- function(params, grads = NULL, weight = 1, dtype = NULL, check = TRUE) {
  # Python's order: the parameters, the map (its text with what was given), the weight, dtype,
  # check
  h <- .mpi_handles(.mpi_tensors(params, "ag_allreduce_gradients"))
  grads <- .map_handle(grads, "ag_allreduce_gradients")
  if (!is.numeric(weight) || is.factor(weight) || length(weight) != 1L)  # classed as Python's
    .arg_fail("argument", "ag_allreduce_gradients: weight must be a number, got %s",
              .arg_show(weight))
  .Call(R_pg_arg_real, "ag_allreduce_gradients", "weight", as.double(weight), 0, FALSE,
        "finite and >= 0", NULL, FALSE)  # the core's rule and text, as Python's
  # "f64" (NULL) only: Rmpi reduces doubles, so Python's "f32" buffer has no R twin
  if (!is.null(dtype) && .dtype_code(dtype, "ag_allreduce_gradients") != .pg$code$dtype[["F64"]])
    .arg_fail("dtype", paste0("ag_allreduce_gradients: dtype \"f32\" needs an f32 all-reduce, ",
                              "which Rmpi does not have; use \"f64\" (the default)"))
  check <- .arg_flag(check, "ag_allreduce_gradients", "check")  # "no" is not FALSE (Python's too)
  .mpi_allreduce(h, grads, weight, check)
}

# the all-reduce on handles already collected (ag_fit collects them once per run, not per step)
.mpi_allreduce <- function(h, grads, weight, check) {
  W <- ag_mpi_world_size()
  if (isTRUE(check) && W > 1L) .mpi_check_layout(h, "ag_allreduce_gradients")
  buf <- .Call(R_pg_dist_pack, h, grads, .pg$code$dist[["GRAD"]], TRUE, as.double(weight), 1L)
  buf[length(buf)] <- as.double(weight)
  if (W > 1L) buf <- .mpi()$mpi.allreduce(buf, type = 2L, op = "sum", comm = 0L)
  total <- buf[length(buf)]
  if (total > 0) .Call(R_pg_dist_unpack, h, grads, .pg$code$dist[["GRAD"]], TRUE, 1 / total,
                            buf[-length(buf)])
  total
}

# largest difference of any parameter element between ranks (0: identical weights everywhere)
ag_parameters_spread <- function(model) {
  h <- .mpi_handles(.mpi_tensors(model, "ag_parameters_spread"))
  v <- .Call(R_pg_dist_pack, h, NULL, .pg$code$dist[["VALUE"]], FALSE, 1.0, 0L)
  if (!length(v)) return(0)
  if (ag_mpi_world_size() > 1L) {
    .mpi_check_layout(h, "ag_parameters_spread")
    b <- .mpi()$mpi.allreduce(c(v, -v), type = 2L, op = "max", comm = 0L)
    return(max(b[seq_along(v)] + b[length(v) + seq_along(v)]))
  }
  0
}

# ag_fit(distributed = TRUE)'s collectives, in the order Python's FitSync runs them
.fit_sync <- function(model, params) {
  s <- new.env(parent = emptyenv())
  s$rank <- ag_mpi_rank()
  s$world <- ag_mpi_world_size()
  s$first <- TRUE
  ag_broadcast_parameters(model)
  h <- .mpi_handles(.mpi_tensors(params, "ag_fit"))
  s$grads <- function(grads, width) {
    .mpi_allreduce(h, grads, as.double(width), s$first)
    s$first <- FALSE
  }
  s$stats <- function(plan) {
    b <- .Call(R_pg_fit_stats_get, plan)
    if (s$world > 1L) b <- .mpi()$mpi.allreduce(b, type = 2L, op = "sum", comm = 0L)
    .Call(R_pg_fit_stats_set, plan, b)
  }
  s
}
