/* .Call glue: the allocator's counters beyond R_pg_memory_stats (the same calls as Python's
 * memory.py), and the kernels' thread count. */
#include "r_util.h"

SEXP R_pg_memory_category_peaks(void)
{
    int64_t v[5] = {0};
    r_check(pg_memory_category_peaks(v, 5));
    return r_counts(v, 5);
}

SEXP R_pg_memory_cached(void) { return Rf_ScalarReal((double)pg_memory_cached()); }

SEXP R_pg_memory_trim(void)
{
    double n = (double)pg_memory_cached();
    pg_memory_trim();
    return Rf_ScalarReal(n);
}

SEXP R_pg_memory_reset_peak(void)
{
    pg_memory_reset_peak();
    return R_NilValue;
}

SEXP R_pg_get_threads(void) { return Rf_ScalarInteger(pg_get_threads()); }
