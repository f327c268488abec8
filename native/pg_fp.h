/* Included FIRST by every file with floating-point loops (before any other header, so the
 * pragmas cover every function, inline ones too). R compiles with -O2, where GCC's "very cheap"
 * vectoriser cost model leaves loops of unknown trip count scalar (and R CMD check warns about
 * vectoriser flags in Makevars): ask for the -O3 model, as Python's -O3 build has. No
 * contraction of a * b + c into a fused multiply-add (GCC's pragma; STDC FP_CONTRACT for
 * clang, which ignores it), so R's and Python's builds round alike on every target. */
#ifndef PG_FP_H
#define PG_FP_H
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#endif
