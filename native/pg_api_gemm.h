/* pyggmlr C core: the built-in GEMM kernel's selector (gemm_kernel.c). cdef-clean like pg_api.h.
 *
 * Which micro-kernel the built-in GEMM runs (the one used when no BLAS is handed in): -1 the best
 * this CPU has (the default), 0 portable (vector extensions, no FMA), 1 AVX2 + FMA, 2 AVX-512F.
 * A kernel the CPU lacks falls back to the best one below it; the return value is the kernel now
 * in use. Process-wide, not thread-safe against GEMMs running at the same time: for tests and
 * benchmarks. The AVX2 and AVX-512 kernels give identical bits; the portable one rounds
 * differently (it does not fuse multiply and add). */
int pg_gemm_kernel_select(int which);
