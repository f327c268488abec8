/* .Call glue: the allocator's counters beyond R_pg_memory_stats (the same calls as Python's
 * memory.py), and the kernels' thread count. */
#include "r_util.h"

/* bytes per enum pg_mem_category, named: c(param =, grad =, optim =, saved =, other =) */
SEXP r_mem_categories(const int64_t *v)
{
    static const char *const nm[PG_MEM_CATEGORY_COUNT] = {[PG_MEM_CATEGORY_PARAM] = "param",
                                                          [PG_MEM_CATEGORY_GRAD] = "grad",
                                                          [PG_MEM_CATEGORY_OPTIM] = "optim",
                                                          [PG_MEM_CATEGORY_SAVED] = "saved",
                                                          [PG_MEM_CATEGORY_OTHER] = "other"};
    SEXP out = PROTECT(r_counts(v, PG_MEM_CATEGORY_COUNT));
    SEXP names = PROTECT(Rf_allocVector(STRSXP, PG_MEM_CATEGORY_COUNT));
    for (int i = 0; i < PG_MEM_CATEGORY_COUNT; i++) SET_STRING_ELT(names, i, Rf_mkChar(nm[i]));
    Rf_setAttrib(out, R_NamesSymbol, names);
    UNPROTECT(2);
    return out;
}

SEXP R_pg_memory_category_peaks(void)
{
    int64_t v[PG_MEM_CATEGORY_COUNT] = {0};
    r_check(pg_memory_category_peaks(v, PG_MEM_CATEGORY_COUNT));
    return r_mem_categories(v);
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
