# Package state and load hook.
.pg <- new.env(parent = emptyenv())
.pg$device <- "cpu"
.pg$blas_dll <- NULL

.onLoad <- function(libname, pkgname) {
  # f64 GEMM goes to R's own BLAS; f32 uses the core's built-in kernel
  .Call(R_pg_use_r_blas)
  invisible()
}
