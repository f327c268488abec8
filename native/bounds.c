/* Bounds on requests (pg_api_bounds.h): a thread count of 10^6, 10^9 replicas or a 10^6 x 10^6
 * layer is refused up front with a message naming the bound, instead of hanging, thrashing or
 * failing deep inside numpy or R with a message that names nothing. */
#include <math.h>
#include "pg.h"
#if !defined(_WIN32)
#include <unistd.h>
#endif

int pg_check_count(const char *fn, const char *arg, double v, double lo, double hi)
{
    if (!(v >= lo && v <= hi) || v != floor(v))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: %s must be a whole number >= %.0f and <= %.0f, got %.17g", fn, arg, lo,
                       hi, v);
    return 0;
}

int64_t pg_physical_memory(void)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0 && (double)pages * (double)size < 9e18)
        return (int64_t)pages * (int64_t)size;
#endif
    return 0;
}
