/* pyggmlr C core: bounds on requests, checked before anything is allocated or started
 * (bounds.c). cdef-clean like pg_api.h. Each returns 0, or a status with a message naming the
 * function, the argument and the bound. */

enum { PG_MAX_THREADS = 1024, PG_DP_MAX_REPLICAS = 1024 };

/* v must be a whole number in [lo, hi] (NaN, Inf and fractions refused): PG_STATUS_ERR_VALUE
 * "<fn>: <arg> must be a whole number >= <lo> and <= <hi>, got <v>". */
int pg_check_count(const char *fn, const char *arg, double v, double lo, double hi);

/* The machine's physical memory in bytes (0 when unknown: no bound). */
int64_t pg_physical_memory(void);
