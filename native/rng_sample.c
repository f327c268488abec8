/* sample.int() as R computes it (R >= 3.6, "Rejection"): the shrinking-pool permutation, the
 * hashed draw-until-new path (useHash), and the weighted paths (sorted cumulative weights,
 * Walker's alias table for many weights, successive removal without replacement). */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "rng_internal.h"

#define FN "sample.int"

/* Heapsort of a[] into descending order, carrying ib[] along: R's revsort, whose order of
 * equal weights the weighted draws depend on. 1-based indexing inside, as the heap is. */
static void revsort(double *a0, int *ib0, int n)
{
    if (n <= 1) return;
    double *a = a0 - 1;
    int *ib = ib0 - 1;
    int l = (n >> 1) + 1, ir = n;
    for (;;) {
        double ra;
        int ii;
        if (l > 1) {
            l--;
            ra = a[l];
            ii = ib[l];
        } else {
            ra = a[ir];
            ii = ib[ir];
            a[ir] = a[1];
            ib[ir] = ib[1];
            if (--ir == 1) {
                a[1] = ra;
                ib[1] = ii;
                return;
            }
        }
        int i = l, j = l << 1;
        while (j <= ir) {
            if (j < ir && a[j] > a[j + 1]) j++;
            if (ra > a[j]) {
                a[i] = a[j];
                ib[i] = ib[j];
                i = j;
                j += j;
            } else {
                j = ir + 1;
            }
        }
        a[i] = ra;
        ib[i] = ii;
    }
}

static void prob_replace(pg_rng *r, int n, double *p, int *perm, int64_t k, double *out)
{
    for (int i = 0; i < n; i++) perm[i] = i + 1;
    revsort(p, perm, n);
    for (int i = 1; i < n; i++) p[i] += p[i - 1];
    for (int64_t i = 0; i < k; i++) {
        double u = pg_rng_u01(r);
        int j = 0;
        while (j < n - 1 && !(u <= p[j])) j++;
        out[i] = perm[j];
    }
}

/* Walker's alias method (Ripley 1987, alg. 3.13B); hl holds the small (q < 1) labels from the
 * front and the large ones from the back. */
static void prob_walker(pg_rng *r, int n, const double *p, int *alias, int *hl, double *q,
                        int64_t k, double *out)
{
    int nh = 0, lo = n;
    for (int i = 0; i < n; i++) {
        q[i] = p[i] * n;
        if (q[i] < 1.) hl[nh++] = i;
        else hl[--lo] = i;
    }
    if (nh > 0 && lo < n) {
        for (int m = 0; m < n - 1; m++) {
            int i = hl[m], j = hl[lo];
            alias[i] = j;
            q[j] += q[i] - 1.;
            if (q[j] < 1.) lo++;
            if (lo >= n) break;
        }
    }
    for (int i = 0; i < n; i++) q[i] += i;
    for (int64_t i = 0; i < k; i++) {
        int m = (int)pg_rng_index(r, n);
        double u = m + pg_rng_u01(r);
        out[i] = (u < q[m]) ? m + 1 : alias[m] + 1;
    }
}

static void prob_noreplace(pg_rng *r, int n, double *p, int *perm, int64_t k, double *out)
{
    for (int i = 0; i < n; i++) perm[i] = i + 1;
    revsort(p, perm, n);
    double total = 1;
    int n1 = n - 1;
    for (int64_t i = 0; i < k; i++, n1--) {
        double t = total * pg_rng_u01(r), mass = 0;
        int j;
        for (j = 0; j < n1; j++) {
            mass += p[j];
            if (t <= mass) break;
        }
        out[i] = perm[j];
        total -= p[j];
        memmove(p + j, p + j + 1, (size_t)(n1 - j) * sizeof *p);
        memmove(perm + j, perm + j + 1, (size_t)(n1 - j) * sizeof *perm);
    }
}

static int sample_prob(pg_rng *r, double dn, int64_t k, int replace, const double *prob,
                       int64_t plen, double *out)
{
    if (!(dn >= 0 && dn <= INT_MAX) || (k > 0 && (int)dn == 0))
        return pg_fail(PG_STATUS_ERR_VALUE, FN ": invalid first argument");
    int n = (int)dn;
    if (k < 0 || k > INT_MAX) return pg_fail(PG_STATUS_ERR_VALUE, FN ": invalid 'size' argument");
    if (!replace && k > n)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       FN
                       ": cannot take a sample larger than the population when 'replace = FALSE'");
    if (plen != n) return pg_fail(PG_STATUS_ERR_VALUE, FN ": incorrect number of probabilities");
    double sum = 0;
    int npos = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(prob[i]))
            return pg_fail(PG_STATUS_ERR_VALUE, FN ": NA in probability vector");
        if (prob[i] < 0.0) return pg_fail(PG_STATUS_ERR_VALUE, FN ": negative probability");
        if (prob[i] > 0.0) {
            npos++;
            sum += prob[i];
        }
    }
    if (npos == 0 || (!replace && k > npos))
        return pg_fail(PG_STATUS_ERR_VALUE, FN ": too few positive probabilities");
    double *p = malloc((size_t)(n ? n : 1) * 2 * sizeof *p);
    int *iw = malloc((size_t)(n ? n : 1) * 2 * sizeof *iw);
    if (!p || !iw) {
        free(p);
        free(iw);
        return pg_fail(PG_STATUS_ERR_NOMEM, FN ": out of memory for %d weights", n);
    }
    for (int i = 0; i < n; i++) p[i] = prob[i] / sum;
    if (!(r = pg_rng_lock(r, FN))) {
        free(p);
        free(iw);
        return pg_last_status();
    }
    if (replace) {
        int nc = 0;
        for (int i = 0; i < n; i++) nc += n * p[i] > 0.1;
        if (nc > 200) prob_walker(r, n, p, iw, iw + n, p + n, k, out);
        else prob_replace(r, n, p, iw, k, out);
    } else {
        prob_noreplace(r, n, p, iw, k, out);
    }
    pg_rng_unlock(r);
    free(p);
    free(iw);
    return 0;
}

/* draw until the value is new (at most 100 tries, as R), remembered in an open-addressing set */
static int sample_hash(pg_rng *r, double dn, int64_t k, double *out)
{
    if (k > dn / 2) return pg_fail(PG_STATUS_ERR_VALUE, FN ": This algorithm is for size <= n/2");
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)k) cap <<= 1;
    if (pg_rng_check_size((double)cap + (double)k, 8,
                          FN " (the hash of a sample without replacement, and the result)"))
        return PG_STATUS_ERR_NOMEM;
    double *set = malloc(cap * sizeof *set);
    if (!set)
        return pg_fail(PG_STATUS_ERR_NOMEM, FN ": out of memory for a hash of %lld values",
                       (long long)k);
    for (uint64_t i = 0; i < cap; i++) set[i] = 0; /* values are >= 1: 0 is empty */
    if (!(r = pg_rng_lock(r, FN))) {
        free(set);
        return pg_last_status();
    }
    for (int64_t i = 0; i < k; i++) {
        uint64_t slot = 0;
        for (int tries = 0; tries < 100; tries++) {
            double v = pg_rng_index(r, dn) + 1;
            out[i] = v;
            slot = ((uint64_t)v * UINT64_C(0x9E3779B97F4A7C15)) & (cap - 1);
            while (set[slot] != 0 && set[slot] != v) slot = (slot + 1) & (cap - 1);
            if (set[slot] == 0) break;
        }
        set[slot] = out[i];
    }
    pg_rng_unlock(r);
    free(set);
    return 0;
}

int pg_rng_sample(pg_rng *r, double dn, int64_t k, int replace, const double *prob, int64_t plen,
                  int use_hash, double *out)
{
    if (k > 0 && !out) return pg_fail(PG_STATUS_ERR_ARG, FN ": out is NULL");
    if (r && !pg_rng_lock(r, FN)) return pg_last_status(); /* a dead handle fails first */
    if (r) pg_rng_unlock(r);
    if (use_hash < 0) use_hash = dn > 1e7 && !replace && !prob && k <= dn / 2;
    if (use_hash && (replace || prob))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       FN ": useHash = TRUE needs replace = FALSE and no prob");
    if (prob) return sample_prob(r, dn, k, replace, prob, plen, out);
    if (!isfinite(dn) || dn < 0 || dn > 4.5e15 || (k > 0 && dn == 0))
        return pg_fail(PG_STATUS_ERR_VALUE, FN ": invalid first argument");
    if (k < 0) return pg_fail(PG_STATUS_ERR_VALUE, FN ": invalid 'size' argument");
    if (use_hash) return sample_hash(r, dn, k, out); /* R's sample2: its own size check */
    if (!replace && k > dn)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       FN
                       ": cannot take a sample larger than the population when 'replace = FALSE'");
    if (replace || k < 2) {
        if (!(r = pg_rng_lock(r, FN))) return pg_last_status();
        for (int64_t i = 0; i < k; i++) out[i] = pg_rng_index(r, dn) + 1;
        pg_rng_unlock(r);
        return 0;
    }
    /* the pool: draw a position, emit it, move the last one into its place (32-bit entries
     * while they fit: half the memory traffic of R's double pool, the same draws) */
    int64_t n = (int64_t)dn;
    int small = n <= INT_MAX;
    if (pg_rng_check_size(dn * (small ? 4 : 8) + 8.0 * (double)k, 1,
                          FN " (the pool of a sample without replacement, and the result)"))
        return PG_STATUS_ERR_NOMEM;
    void *pool = malloc((size_t)n * (small ? sizeof(int32_t) : sizeof(double)));
    if (!pool)
        return pg_fail(PG_STATUS_ERR_NOMEM, FN ": out of memory for a pool of %lld values",
                       (long long)n);
    int32_t *ip = pool;
    double *dp = pool;
    if (small)
        for (int64_t i = 0; i < n; i++) ip[i] = (int32_t)i;
    else
        for (int64_t i = 0; i < n; i++) dp[i] = (double)i;
    if (!(r = pg_rng_lock(r, FN))) {
        free(pool);
        return pg_last_status();
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t j = (int64_t)pg_rng_index(r, (double)n);
        if (small) {
            out[i] = ip[j] + 1.0;
            ip[j] = ip[--n];
        } else {
            out[i] = dp[j] + 1;
            dp[j] = dp[--n];
        }
    }
    pg_rng_unlock(r);
    free(pool);
    return 0;
}
