/* Bounds on requests (pg_api_bounds.h): a thread count of 10^6, 10^9 replicas or a 10^6 x 10^6
 * layer is refused up front with a message naming the bound, instead of hanging, thrashing or
 * failing deep inside numpy or R with a message that names nothing. */
#include <math.h>
#include <stdio.h>
#include "pg.h"
#if !defined(_WIN32)
#include <unistd.h>
#endif

int64_t pg_physical_memory(void)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0 && (double)pages * (double)size < 9e18)
        return (int64_t)pages * (int64_t)size;
#endif
    return 0;
}

/* bytes the kernel can still back now: MemAvailable, else free pages, else all of memory */
double pg_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        double kb = -1;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
        fclose(f);
        if (kb >= 0) return kb * 1024.0;
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0) pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 && psize > 0 ? (double)pages * (double)psize : 1e300;
}

int pg_check_alloc(const char *fn, const char *what, double n_values, int64_t bytes_per_value)
{
    if (!fn) fn = "pyggmlr";
    if (!what) what = "allocating";
    double bytes = n_values * (double)bytes_per_value;
    if (!(bytes >= 0)) return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s: bad size", fn, what);
    if (bytes < 268435456.0) return 0; /* under 256 MiB: not worth reading /proc */
    double avail = pg_mem_available();
    if (bytes > avail)
        return pg_fail(PG_STATUS_ERR_NOMEM,
                       "%s: out of memory %s (%.1f GiB needed, more than the %.1f GiB of memory "
                       "available)",
                       fn, what, bytes / 1073741824.0, avail / 1073741824.0);
    return 0;
}
