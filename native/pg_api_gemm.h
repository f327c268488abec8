/* pyggmlr C core: the built-in GEMM kernel's selector (gemm_kernel.c). cdef-clean like pg_api.h.
 *
 * Which micro-kernel the built-in GEMM runs (the one used when no BLAS is handed in): -1 the best
 * this CPU has (the default), 0 portable (vector extensions, no FMA), 1 AVX2 + FMA, 2 AVX-512F.
 * A kernel the CPU lacks falls back to the best one below it; the return value is the kernel now
 * in use. Process-wide, not thread-safe against GEMMs running at the same time: for tests and
 * benchmarks. The AVX2 and AVX-512 kernels give identical bits; the portable one rounds
 * differently (it does not fuse multiply and add). */
int pg_gemm_kernel_select(int which);

/* Which path the built-in GEMM takes (for tests and benchmarks; process-wide like the above):
 * -1 by problem size (the default: the direct, unpacked path for operands of up to about 4 MiB,
 * the packed blocked path above), 0 always the packed path, 1 always the direct path. Both sum
 * every element in the same order with the same operations, so they give identical bits.
 * Returns the setting now in use. */
int pg_gemm_path_select(int which);

/* Threads (ag_set_threads(n) with the built-in kernel): products are split over up to n
 * threads, by rows or columns of C (never k: the same bits for every n), so that each thread
 * gets at least `flops` (2 m n k / threads) in f64, twice that in f32. pg_gemm_thread_min_flops
 * sets that minimum (process-wide, for tests and benchmarks; 0 splits every product that has
 * enough rows or columns; a negative value restores the default, 2e6) and returns it. */
double pg_gemm_thread_min_flops(double flops);
/* Worker threads now started (n - 1 once a product was split; 0 before, and after a stop). */
int pg_gemm_threads_live(void);
/* Stops and joins the worker threads (they start again at the next split product); returns
 * how many were stopped. Runs by itself at exit and when the library is unloaded; an R
 * package may call it from its R_unload_<pkg> hook as well. Waits for a product in flight. */
int pg_gemm_threads_stop(void);
/* 1 (the default): a job that finds the cores taken by other processes starts a spell of
 * single-threaded jobs (gemm_pool.c); 0: every job that pays is split (tests: the same bits
 * whatever the load). Returns the previous setting; flag < 0 only reads it. Process-wide. */
int pg_gemm_threads_adaptive(int flag);
