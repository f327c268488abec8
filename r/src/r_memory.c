/* .Call glue: the allocator's counters beyond R_pg_memory_stats (the same calls as Python's
 * memory.py), and the kernels' thread count. */
#include "r_util.h"

const char *const r_mem_categories[PG_MEM_CATEGORY_COUNT] = {[PG_MEM_CATEGORY_PARAM] = "param",
                                                             [PG_MEM_CATEGORY_GRAD] = "grad",
                                                             [PG_MEM_CATEGORY_OPTIM] = "optim",
                                                             [PG_MEM_CATEGORY_SAVED] = "saved",
                                                             [PG_MEM_CATEGORY_OTHER] = "other"};

/* peak bytes per category, named as R's ag_memory_stats() reports them */
SEXP R_pg_memory_category_peaks(void)
{
    int64_t v[PG_MEM_CATEGORY_COUNT] = {0};
    r_check(pg_memory_category_peaks(v, PG_MEM_CATEGORY_COUNT));
    return r_named_counts(v, r_mem_categories, PG_MEM_CATEGORY_COUNT);
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
