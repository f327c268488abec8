/* Included FIRST by every file with floating-point loops (before any other header, so the
 * pragmas cover every function, inline ones too). R compiles with -O2 (and R CMD check warns
 * about optimisation flags in Makevars, which R's own CFLAGS would override anyway), Python with
 * its interpreter's flags (-O3 here): ask for -O3's code generation and vectoriser cost model
 * in every build, so R's kernels run as fast as Python's (a small compiled transformer step was
 * 1.1x Python's time in R at -O2, 1.0x with this). No contraction of a * b + c into a fused
 * multiply-add (GCC's pragma; STDC FP_CONTRACT for clang, which ignores it), so R's and
 * Python's builds round alike on every target. */
#ifndef PG_FP_H
#define PG_FP_H
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#pragma GCC optimize("O3", "vect-cost-model=dynamic", "fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#endif
