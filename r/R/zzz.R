# Package state and load hook.
.pg <- new.env(parent = emptyenv())
.pg$device <- "cpu"
.pg$blas_dll <- NULL

.onLoad <- function(libname, pkgname) {
  # GEMM: R's own BLAS when it is an optimised one (OpenBLAS, MKL, BLIS, ...), for f64 and, through
  # its sgemm, f32; otherwise (R's reference BLAS) the core's blocked built-in kernel, which is
  # several times faster than reference dgemm. ag_set_blas() / ag_use_openblas() change it.
  if (.r_blas_optimised()) .Call(R_pg_use_r_blas, .r_blas_lib()) else .Call(R_pg_set_blas, NULL, NULL, NULL, "builtin")
  invisible()
}

.r_blas_lib <- function() basename(tryCatch(extSoftVersion()[["BLAS"]], error = function(e) ""))
.r_blas_optimised <- function() {
  lib <- tolower(tryCatch(paste(extSoftVersion()[["BLAS"]], La_library()), error = function(e) ""))
  grepl("openblas|mkl|blis|atlas|accelerate|veclib|flexiblas|armpl", lib)
}
