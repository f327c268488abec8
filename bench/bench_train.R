# Training-step speed of the R package's ggmlR-style loop (with_grad_tape -> backward ->
# opt$step(grads) -> opt$zero_grad()), f32, Adam, one thread, on the models of bench_train.py.
# Prints medians (µs) and, when bench/results/bench_train.json exists (run bench_train.py first,
# same machine), the ratio R / Python on the same GEMM. Run with Python's OpenBLAS handed in:
#   PYGGMLR_OPENBLAS=$(PYGGMLR_BLAS=openblas python -c 'import pyggmlr._core as c; print(c.blas_library_path())') Rscript bench/bench_train.R
# or plain `Rscript bench/bench_train.R` for the R package's default GEMM (the built-in kernel where
# R's BLAS is the reference one), compared with Python's loop on the built-in kernel.
# As bench_train.py: drop OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines here to force
# an older kernel) before OpenBLAS loads, unless BENCH_KEEP_OPENBLAS_ENV is set.
if (!nzchar(Sys.getenv("BENCH_KEEP_OPENBLAS_ENV"))) Sys.unsetenv(c("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))
suppressPackageStartupMessages(library(pyggmlr))
ag_set_threads(1L)
Sys.setenv(OPENBLAS_NUM_THREADS = "1") # as bench_train.py: no idle OpenBLAS thread pool
# the same OpenBLAS as Python (scipy-openblas32 wheel) when its path is given, else R's BLAS
ob <- Sys.getenv("PYGGMLR_OPENBLAS", "")
if (nzchar(ob)) ag_set_blas("openblas", ob)
cat("GEMM:", ag_blas_name(), "\n")
# compare with Python on the same GEMM: its OpenBLAS loop, or its loop on the built-in kernel
pycol <- if (identical(ag_blas_name(), "builtin")) "builtin" else "pyggmlr"
cat("Python column:", if (pycol == "builtin") "pyggmlr on the built-in GEMM" else "pyggmlr on OpenBLAS", "\n")
cases <- list(list(sizes = c(4, 64, 32, 3), batch = 32), list(sizes = c(784, 256, 128, 10), batch = 64),
              list(sizes = c(784, 256, 128, 10), batch = 256))
rounds <- as.integer(Sys.getenv("BENCH_ROUNDS", "15"))

make_step <- function(sizes, batch, dtype = "f32") {
  set.seed(0)
  L <- length(sizes) - 1L
  Ws <- lapply(seq_len(L), function(i) {
    a <- sqrt(6 / (sizes[i] + sizes[i + 1L]))
    ag_param(matrix(runif(sizes[i + 1L] * sizes[i], -a, a), sizes[i + 1L], sizes[i]), dtype = dtype)
  })
  bs <- lapply(seq_len(L), function(i) ag_param(matrix(0, sizes[i + 1L], 1), dtype = dtype))
  X <- ag_tensor(matrix(rnorm(sizes[1L] * batch), sizes[1L], batch), dtype = dtype)
  Y <- ag_tensor(matrix(sample.int(sizes[L + 1L], batch, replace = TRUE) - 1, 1, batch), dtype = dtype)
  opt <- optimizer_adam(c(Ws, bs), lr = 1e-3)
  function() {
    with_grad_tape({
      h <- X
      for (k in seq_len(L)) {
        h <- ag_add(ag_matmul(Ws[[k]], h), bs[[k]])
        if (k < L) h <- ag_relu(h)
      }
      loss <- ag_softmax_cross_entropy_loss(h, Y)
    })
    opt$step(backward(loss))
    opt$zero_grad()
  }
}

py <- NULL
jf <- file.path("bench", "results", "bench_train.json")
if (file.exists(jf) && requireNamespace("jsonlite", quietly = TRUE)) py <- jsonlite::fromJSON(jf)$cases
res <- list()
cat(sprintf("%-24s%12s%12s%10s%12s%12s%10s%9s\n", "model", "R f32 µs", "Python µs", "R/Py",
            "R f64 µs", "Py f64 µs", "R/Py f64", "R f64/f32"))
for (ci in seq_along(cases)) {
  cs <- cases[[ci]]
  steps <- list(f32 = make_step(cs$sizes, cs$batch), f64 = make_step(cs$sizes, cs$batch, "f64"))
  n <- if (cs$batch < 100 && cs$sizes[1] < 100) 200L else 20L
  for (st in steps) for (i in 1:5) st()
  ts <- list(f32 = numeric(0), f64 = numeric(0))
  for (r in seq_len(rounds)) for (k in names(steps)) { # in turns, so load drifts hit both alike
    st <- steps[[k]]
    # blocks of `blk` steps: R's clock costs ~20 µs a reading (Sys.time() and difftime), which
    # per-step timing would add to every step; and R frees a step's tensors only when its
    # garbage collector runs (every ~10-50 steps here), so a block spans several collections
    # and its time per step is the amortised cost, GC included, rather than the GC-free median
    blk <- if (n >= 100L) 100L else 10L
    tk <- numeric(n %/% blk)
    for (i in seq_along(tk)) {
      t0 <- Sys.time()
      for (j in seq_len(blk)) st()
      tk[i] <- as.numeric(Sys.time() - t0, units = "secs") / blk
    }
    ts[[k]] <- c(ts[[k]], tk)
  }
  med <- median(ts$f32) * 1e6
  med64 <- median(ts$f64) * 1e6
  pyt <- if (!is.null(py) && !is.null(py$median_us[[pycol]])) py$median_us[[pycol]][ci] else NA
  pyt64 <- if (!is.null(py) && !is.null(py$median_us[[paste0(pycol, "_f64")]])) py$median_us[[paste0(pycol, "_f64")]][ci] else NA
  cat(sprintf("%-24s%12.1f%12.1f%10.2f%12.1f%12.1f%10.2f%9.2f\n", paste(paste(cs$sizes, collapse = "-"), paste0("b", cs$batch)),
              med, pyt, med / pyt, med64, pyt64, med64 / pyt64, med64 / med))
  res[[ci]] <- list(model = paste(cs$sizes, collapse = "-"), batch = cs$batch, median_us = med, python_us = pyt,
                    ratio_r_py = med / pyt, median_us_f64 = med64, python_us_f64 = pyt64,
                    ratio_r_py_f64 = med64 / pyt64, ratio_f64_f32 = med64 / med)
}
if (requireNamespace("jsonlite", quietly = TRUE))
  writeLines(jsonlite::toJSON(res, auto_unbox = TRUE, pretty = TRUE),
             file.path("bench", "results", if (pycol == "builtin") "bench_train_r_builtin.json" else "bench_train_r.json"))
