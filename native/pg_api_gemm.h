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
