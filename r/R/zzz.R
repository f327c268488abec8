# Package state and load hook.
.pg <- new.env(parent = emptyenv())
.pg$device <- "cpu"
.pg$blas_dll <- NULL

.onLoad <- function(libname, pkgname) {
  # GEMM: the core's blocked built-in kernel, as in Python, so one script gives the same bits in
  # both languages (another GEMM rounds differently); ag_set_blas("r") / ("openblas", path) opt out.
  .Call(R_pg_set_blas, NULL, NULL, NULL, "builtin")
  .Call(R_pg_set_index_base, 1L)  # the core's messages count positions from 1, as R does
  .pg$op <- .Call(R_pg_op_codes)  # the op kinds from the core and the glue (no literal codes in R)
  .pg$code <- .Call(R_pg_codes)  # the other codes by name: dtype, optim, sched, tape, scope, ...
  tables <- .Call(R_pg_optim_tables)  # the optimizers' model-file tables (optim.R)
  ns <- topenv()
  assign(".HYPER", tables$file_hyper, envir = ns)
  assign(".HIST_KEYS", c("epoch", .Call(R_pg_fit_log_names)), envir = ns)  # fit_history.R
  types <- setdiff(.Call(R_pg_layer_types), "sequential")  # io_config.R
  assign(".BUILDERS", stats::setNames(paste0("ag_", types), types), envir = ns)
  invisible()
}

.r_blas_lib <- function() basename(tryCatch(extSoftVersion()[["BLAS"]], error = function(e) ""))
