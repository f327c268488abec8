/* R's default random streams, reimplemented from the published algorithms (see pg_api_rng.h):
 * Mersenne-Twister with R's seeding and (0, 1) fix-up, Inversion normals (Wichura's AS 241),
 * Rejection integers, and sample.int's draws. Exactness needs no FMA contraction and libm's log,
 * log2 and sqrt, which R uses too. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "pg.h"
#include "rng_internal.h"

#define RNG_MAGIC 0x50475247u /* "PGRG" */
#define MT_N      624
#define MT_M      397
#define I2_32M1   2.328306437080797e-10 /* 1 / (2^32 - 1) */
#define BIG27     134217728.0           /* 2^27 */

struct pg_rng {
    uint32_t magic;
    int is_default;
    pthread_mutex_t mu;
    int32_t mti; /* .Random.seed[2]: position in the block */
    uint32_t mt[MT_N];
    double (*ext_unif)(void); /* external generator (R with another RNGkind), else NULL */
    double (*ext_norm)(void);
    double (*ext_index)(double);
    struct pg_rng *prev, *next; /* the list of streams pg_rng_fork locks (default not in it) */
};

static pg_rng default_rng = {RNG_MAGIC, 1,   PTHREAD_MUTEX_INITIALIZER, MT_N + 1, {0}, NULL,
                             NULL,      NULL};
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER; /* the list below */
static pg_rng *streams;
static _Thread_local pg_rng *current_rng;

/* ---- Mersenne-Twister, as R drives it ---- */

static void seed_words(pg_rng *r, uint32_t seed)
{
    for (int j = 0; j < 50; j++) seed = 69069u * seed + 1u; /* R's initial scrambling */
    seed = 69069u * seed + 1u; /* R's first value lands in the position slot, then reset */
    for (int j = 0; j < MT_N; j++) {
        seed = 69069u * seed + 1u;
        r->mt[j] = seed;
    }
    r->mti = MT_N;
}

static uint32_t clock_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint32_t)(((uint64_t)ts.tv_nsec << 16) ^ (uint64_t)ts.tv_sec ^
                      ((uint64_t)getpid() << 16));
}

static void reseed_if_zero(pg_rng *r)
{
    for (int j = 0; j < MT_N; j++)
        if (r->mt[j]) return;
    seed_words(r, clock_seed());
}

/* The generator's own default initialisation (only reached with a hand-made position 625). */
static void mt_sgenrand(pg_rng *r, uint32_t seed)
{
    for (int i = 0; i < MT_N; i++) {
        r->mt[i] = seed & 0xffff0000u;
        seed = 69069u * seed + 1u;
        r->mt[i] |= (seed & 0xffff0000u) >> 16;
        seed = 69069u * seed + 1u;
    }
    r->mti = MT_N;
}

static double mt_genrand(pg_rng *r)
{
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    uint32_t *mt = r->mt, y;
    int mti = r->mti;
    if (mti >= MT_N) {
        if (mti == MT_N + 1) mt_sgenrand(r, 4357u);
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (mt[MT_N - 1] & 0x80000000u) | (mt[0] & 0x7fffffffu);
        mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
        mti = 0;
    }
    y = mt[mti++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    r->mti = mti;
    return (double)y * 2.3283064365386963e-10;
}

/* ---- unlocked draws (rng_internal.h) ---- */

double pg_rng_u01(pg_rng *r)
{
    if (r->ext_unif) return r->ext_unif();
    double x = mt_genrand(r);
    if (x <= 0.0) return 0.5 * I2_32M1; /* R's fix-up: never 0 or 1 */
    if (1.0 - x <= 0.0) return 1.0 - 0.5 * I2_32M1;
    return x;
}

static double horner(const double *c, int deg, double r)
{
    double v = c[deg];
    for (int i = deg - 1; i >= 0; i--) v = v * r + c[i];
    return v;
}

/* Wichura's AS 241 for 0 < p < 1 (the lower tail, as R's qnorm(p, 0, 1)). */
static double qnorm01(double p)
{
    static const double a[8] = {3.387132872796366608,  133.14166789178437745, 1971.5909503065514427,
                                13731.693765509461125, 45921.953931549871457, 67265.770927008700853,
                                33430.575583588128105, 2509.0809287301226727};
    static const double b[8] = {1.,
                                42.313330701600911252,
                                687.1870074920579083,
                                5394.1960214247511077,
                                21213.794301586595867,
                                39307.89580009271061,
                                28729.085735721942674,
                                5226.495278852854561};
    static const double c[8] = {1.42343711074968357734,  4.6303378461565452959,
                                5.7694972214606914055,   3.64784832476320460504,
                                1.27045825245236838258,  .24178072517745061177,
                                .0227238449892691845833, 7.7454501427834140764e-4};
    static const double d[8] = {1.,
                                2.05319162663775882187,
                                1.6763848301838038494,
                                .68976733498510000455,
                                .14810397642748007459,
                                .0151986665636164571966,
                                5.475938084995344946e-4,
                                1.05075007164441684324e-9};
    static const double e[8] = {6.6579046435011037772,     5.4637849111641143699,
                                1.7848265399172913358,     .29656057182850489123,
                                .026532189526576123093,    .0012426609473880784386,
                                2.71155556874348757815e-5, 2.01033439929228813265e-7};
    static const double f[8] = {1.,
                                .59983220655588793769,
                                .13692988092273580531,
                                .0148753612908506148525,
                                7.868691311456132591e-4,
                                1.8463183175100546818e-5,
                                1.4215117583164458887e-7,
                                2.04426310338993978564e-15};
    double q = p - 0.5, r, val;
    if (fabs(q) <= .425) {
        r = .180625 - q * q;
        val = q * horner(a, 7, r) / horner(b, 7, r);
    } else {
        r = sqrt(-log(q > 0 ? (0.5 - p + 0.5) : p)); /* R's 1 - p is 0.5 - p + 0.5 */
        if (r <= 5.) {
            r += -1.6;
            val = horner(c, 7, r) / horner(d, 7, r);
        } else {
            r += -5.;
            val = horner(e, 7, r) / horner(f, 7, r);
        }
        if (q < 0.0) val = -val;
    }
    return 0.0 + 1.0 * val; /* R returns mu + sigma * val */
}

double pg_rng_z(pg_rng *r)
{
    if (r->ext_norm) return r->ext_norm();
    double u = pg_rng_u01(r);
    u = (double)(int)(BIG27 * u) + pg_rng_u01(r); /* one uniform has too few bits */
    return qnorm01(u / BIG27);
}

/* an integer below 2^bits from 16-bit chunks of uniforms (u > 0: the cast is R's floor) */
static double rbits(pg_rng *r, int bits)
{
    uint64_t v = 0;
    for (int n = 0; n <= bits; n += 16) {
        int v1 = (int)(pg_rng_u01(r) * 65536);
        v = 65536 * v + (uint64_t)v1;
    }
    return (double)(v & ((UINT64_C(1) << bits) - 1));
}

double pg_rng_index(pg_rng *r, double dn)
{
    if (r->ext_index) return r->ext_index(dn);
    if (dn <= 0) return 0.0;
    int bits;
    /* R takes ceil(log2(dn)); for whole dn <= 2^31 that is exactly the bit length of dn - 1
     * (log2 is then far from an integer unless exact), without libm's log2 per draw */
    if (dn <= 2147483648.0 && dn == (double)(int64_t)dn)
        bits = dn <= 1 ? 0 : 64 - __builtin_clzll((unsigned long long)dn - 1);
    else bits = (int)ceil(log2(dn));
    double dv;
    do {
        dv = rbits(r, bits);
    } while (dn <= dv);
    return dv;
}

double pg_rng_runif1(pg_rng *r, double a, double b)
{
    if (!isfinite(a) || !isfinite(b) || b < a) return NAN;
    if (a == b) return a;
    double u;
    do {
        u = pg_rng_u01(r);
    } while (u <= 0 || u >= 1);
    return a + (b - a) * u;
}

double pg_rng_rnorm1(pg_rng *r, double mu, double sigma)
{
    if (isnan(mu) || !isfinite(sigma) || sigma < 0.) return NAN;
    if (sigma == 0. || !isfinite(mu)) return mu;
    return mu + sigma * pg_rng_z(r);
}

/* ---- streams and locking ---- */

static void default_init(void) { seed_words(&default_rng, clock_seed()); }

pg_rng *pg_rng_default(void)
{
    pthread_once(&default_once, default_init);
    return &default_rng;
}

pg_rng *pg_rng_current(void) { return current_rng ? current_rng : pg_rng_default(); }

pg_rng *pg_rng_use(pg_rng *r)
{
    pg_rng *prev = current_rng;
    current_rng = (r && !r->is_default) ? r : NULL;
    return prev;
}

pg_rng *pg_rng_lock(pg_rng *r, const char *fn)
{
    if (!r) r = pg_rng_current();
    else if (r->magic != RNG_MAGIC)
        return pg_fail_null(PG_STATUS_ERR_ARG, "%s: not a live random stream", fn);
    if (r->is_default) pthread_once(&default_once, default_init);
    pthread_mutex_lock(&r->mu);
    return r;
}

void pg_rng_unlock(pg_rng *r) { pthread_mutex_unlock(&r->mu); }

static pg_rng *rng_alloc(void)
{
    pg_rng *r = calloc(1, sizeof *r);
    if (!r) return pg_fail_null(PG_STATUS_ERR_NOMEM, "pg_rng_new: out of memory");
    r->magic = RNG_MAGIC;
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_lock(&streams_mu);
    r->next = streams;
    if (streams) streams->prev = r;
    streams = r;
    pthread_mutex_unlock(&streams_mu);
    return r;
}

/* fork.c: 0 before fork (take the list's lock and every stream's, so no draw is half done),
 * 1 parent (release them), 2 child (fresh locks) */
void pg_rng_fork(int phase)
{
    if (phase == 0) {
        pthread_mutex_lock(&streams_mu);
        pthread_mutex_lock(&default_rng.mu);
        for (pg_rng *r = streams; r; r = r->next) pthread_mutex_lock(&r->mu);
        return;
    }
    for (pg_rng *r = streams; r; r = r->next) {
        if (phase == 1) pthread_mutex_unlock(&r->mu);
        else pthread_mutex_init(&r->mu, NULL);
    }
    if (phase == 1) {
        pthread_mutex_unlock(&default_rng.mu);
        pthread_mutex_unlock(&streams_mu);
    } else {
        pthread_mutex_init(&default_rng.mu, NULL);
        pthread_mutex_init(&streams_mu, NULL);
    }
}

pg_rng *pg_rng_new(void)
{
    pg_rng *r = rng_alloc();
    if (r) seed_words(r, clock_seed());
    return r;
}

pg_rng *pg_rng_new_seeded(int32_t seed)
{
    pg_rng *r = rng_alloc();
    if (r) seed_words(r, (uint32_t)seed);
    return r;
}

pg_rng *pg_rng_new_external(double (*unif)(void), double (*norm)(void), double (*index)(double))
{
    if (!unif || !norm || !index)
        return pg_fail_null(PG_STATUS_ERR_ARG,
                            "pg_rng_new_external: unif, norm and index must all be given");
    pg_rng *r = rng_alloc();
    if (!r) return NULL;
    r->ext_unif = unif;
    r->ext_norm = norm;
    r->ext_index = index;
    return r;
}

void pg_rng_free(pg_rng *r)
{
    if (!r || r->is_default || r->magic != RNG_MAGIC) return;
    if (current_rng == r) current_rng = NULL;
    r->magic = 0;
    pthread_mutex_lock(&streams_mu);
    if (r->prev) r->prev->next = r->next;
    else streams = r->next;
    if (r->next) r->next->prev = r->prev;
    pthread_mutex_unlock(&streams_mu);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int pg_rng_seed(pg_rng *r, int32_t seed)
{
    if (!(r = pg_rng_lock(r, "ggml_set_seed"))) return pg_last_status();
    int rc = 0;
    if (r->ext_unif)
        rc = pg_fail(PG_STATUS_ERR_STATE,
                     "ggml_set_seed: this stream draws from an external generator");
    else seed_words(r, (uint32_t)seed);
    pg_rng_unlock(r);
    return rc;
}

int pg_rng_has_state(pg_rng *r)
{
    if (!(r = pg_rng_lock(r, "has_state"))) return -pg_last_status();
    int has = r->ext_unif == NULL;
    pg_rng_unlock(r);
    return has;
}

int pg_rng_get_state(pg_rng *r, int32_t *out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "get_state: out is NULL");
    if (!(r = pg_rng_lock(r, "get_state"))) return pg_last_status();
    int rc = 0;
    if (r->ext_unif) {
        rc = pg_fail(PG_STATUS_ERR_STATE,
                     "get_state: this stream draws from an external generator and has no state");
    } else {
        out[0] = PG_RNG_KIND_DEFAULT;
        out[1] = r->mti;
        memcpy(out + 2, r->mt, sizeof r->mt);
    }
    pg_rng_unlock(r);
    return rc;
}

int pg_rng_set_state(pg_rng *r, const int32_t *state, int64_t len)
{
    if (!state) return pg_fail(PG_STATUS_ERR_ARG, "set_state: state is NULL");
    if (len != PG_RNG_STATE_LEN)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "set_state: a state has %d integers (R's .Random.seed), got %lld",
                       PG_RNG_STATE_LEN, (long long)len);
    if (state[0] != PG_RNG_KIND_DEFAULT)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "set_state: state[0] is %d; only R's default kinds (10403: "
                       "Mersenne-Twister, Inversion, Rejection) are reproduced",
                       (int)state[0]);
    if (!(r = pg_rng_lock(r, "set_state"))) return pg_last_status();
    int rc = 0;
    if (r->ext_unif) {
        rc =
            pg_fail(PG_STATUS_ERR_STATE, "set_state: this stream draws from an external generator");
    } else {
        memcpy(r->mt, state + 2, sizeof r->mt);
        r->mti = state[1] <= 0 ? MT_N : state[1]; /* as R's FixupSeeds */
        reseed_if_zero(r);
    }
    pg_rng_unlock(r);
    return rc;
}

/* ---- sizes ---- */

int pg_rng_check_size(double n, int64_t elem_size, const char *fn)
{
    double bytes = n * (double)elem_size;
    if (!fn) fn = "pyggmlr";
    if (bytes < 268435456.0) return 0; /* under 256 MiB: not worth reading /proc */
    double avail = pg_mem_available();
    if (bytes > avail)
        return pg_fail(PG_STATUS_ERR_NOMEM,
                       "%s: %.1f GiB needed, more than the %.1f GiB of memory available", fn,
                       bytes / 1073741824.0, avail / 1073741824.0);
    return 0;
}

/* ---- vector draws ---- */

static int check_vec(const char *fn, int64_t n, const double *a, int64_t na, const char *an,
                     const double *b, int64_t nb, const char *bn, const double *out)
{
    if (n < 0)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: n must be >= 0, got %lld", fn, (long long)n);
    if (n && !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: out is NULL", fn);
    if (n && (!a || na < 1))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must have at least one value", fn, an);
    if (n && (!b || nb < 1))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s must have at least one value", fn, bn);
    return 0;
}

/* n draws of draw1(a[i % na], b[i % nb]) (R's recycling), NaN results counted */
static int draw_vec(pg_rng *r, const char *fn, double (*draw1)(pg_rng *, double, double), int64_t n,
                    const double *a, int64_t na, const double *b, int64_t nb, double *out,
                    int64_t *n_nan)
{
    if (!(r = pg_rng_lock(r, fn))) return pg_last_status();
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = draw1(r, a[i % na], b[i % nb]);
        bad += isnan(out[i]);
    }
    pg_rng_unlock(r);
    if (n_nan) *n_nan = bad;
    return 0;
}

int pg_rng_runif(pg_rng *r, int64_t n, const double *a, int64_t na, const double *b, int64_t nb,
                 double *out, int64_t *n_nan)
{
    if (check_vec("runif", n, a, na, "min", b, nb, "max", out)) return pg_last_status();
    return draw_vec(r, "runif", pg_rng_runif1, n, a, na, b, nb, out, n_nan);
}

int pg_rng_rnorm(pg_rng *r, int64_t n, const double *mean, int64_t nm, const double *sd, int64_t ns,
                 double *out, int64_t *n_nan)
{
    if (check_vec("rnorm", n, mean, nm, "mean", sd, ns, "sd", out)) return pg_last_status();
    return draw_vec(r, "rnorm", pg_rng_rnorm1, n, mean, nm, sd, ns, out, n_nan);
}
