/* pyggmlr C core: bounds on requests, checked before anything is allocated or started
 * (bounds.c). cdef-clean like pg_api.h. Each returns 0, or a status with a message naming the
 * function, the argument and the bound. */

/* the most threads (ag_set_threads) and data-parallel replicas (dp_train) a front end accepts:
 * its integer rule (Python's check_int, R's .arg_int) checks the count against these */
enum { PG_MAX_THREADS = 1024, PG_DP_MAX_REPLICAS = 1024 };

/* The machine's physical memory in bytes (0 when unknown: no bound). */
int64_t pg_physical_memory(void);

/* A layer (or any front-end allocation) of n_values values of bytes_per_value bytes each (the
 * host's copy plus the tensor's) must fit in the memory available now: else PG_STATUS_ERR_NOMEM
 * "<fn>: out of memory <what> (59.6 GiB needed, more than the 22.7 GiB of memory available)",
 * refused before the first allocation, where an overcommitting OS would grant it and kill the
 * process later. Under 256 MiB always passes. */
int pg_check_alloc(const char *fn, const char *what, double n_values, int64_t bytes_per_value);
