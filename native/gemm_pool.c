/* The built-in GEMM's threads: ag_set_threads(n) splits large products over n threads.
 *
 * C is cut into n parts along one dimension, never along k: the rows of C (units of the
 * kernel's MR = 2 vectors: whole tiles of either path) when m >= n, else its columns (units
 * of the packed NR or the direct path's column tile; whole vector tiles when the direct path
 * swaps roles). Each part is an ordinary single-threaded product on a sub-block of C, and
 * every element is summed in the one order described in gemm_internal.h, whatever the
 * tile, block or path it lands in: the result has the same bits for every thread count. Each
 * thread packs what its part needs into its own buffers (the packed path allocates per call);
 * the part that takes the rows duplicates the packing of B, the one that takes the columns
 * that of A: the smaller operand side is the one duplicated.
 *
 * Only where it pays: each thread gets at least PG_GEMM_MIN_FLOPS of work in f64 (2 m n k / threads),
 * twice that in f32 (twice as fast), else fewer threads, down to one; about 30 us of work,
 * below which a second thread does not pay (docs/gemm.md).
 *
 * The pool: n - 1 worker threads, started at the first threaded product (not before: the
 * default of one thread never starts any), resized when n changes. Workers sleep on a
 * condition variable between products, after a spin of at most 20 us; the calling thread
 * runs part 0 and then waits for the others (spinning up to 100 us, then asleep). Up to 64
 * threads. One product at a time: a product that finds the pool busy (another
 * application thread's product in flight) runs single-threaded at once instead of waiting
 * (same bits; no oversubscription of the cores). A thread that cannot be created: fewer
 * threads (down to single-threaded). Workers block all signals (the application's handlers
 * run on its own threads). At process exit, and when the library is unloaded (dlclose: R's
 * dyn.unload), a destructor stops and joins the workers (pg_gemm_threads_stop() does the same
 * on demand). After fork() the child has no workers: the pool notices (the pid changed) and
 * starts afresh. Windows (_WIN32): single-threaded. */
#include "gemm_internal.h"

#define PG_GEMM_MIN_FLOPS   2.0e6
#define PG_GEMM_MAX_THREADS 64

static double min_flops = PG_GEMM_MIN_FLOPS;
double pg_gemm_thread_min_flops(double flops)
{
    min_flops = flops < 0 ? PG_GEMM_MIN_FLOPS : flops;
    return min_flops;
}

/* part p of the job: a sub-block of C, units [p U / P, (p+1) U / P) of the split dimension */
static void job_run(const gemm_job *j, int p)
{
    int64_t len = j->by_cols ? j->n : j->m, U = (len + j->unit - 1) / j->unit;
    int64_t u0 = U * p / j->parts, u1 = U * (p + 1) / j->parts;
    int64_t s0 = u0 * j->unit, s1 = u1 * j->unit < len ? u1 * j->unit : len;
    if (s1 <= s0) return;
    int64_t m = j->by_cols ? j->m : s1 - s0, n = j->by_cols ? s1 - s0 : j->n;
    /* element offsets of the part's op(A) rows / op(B) columns / C block */
    int64_t oa = j->by_cols ? 0 : (j->ta ? s0 * j->lda : s0);
    int64_t ob = j->by_cols ? (j->tb ? s0 : s0 * j->ldb) : 0;
    int64_t oc = j->by_cols ? s0 * j->ldc : s0;
    if (j->dtype == PG_DTYPE_F32)
        pg_gemm_one_float(j->direct, j->ta, j->tb, m, n, j->k, (float)j->alpha,
                          (const float *)j->a + oa, j->lda, (const float *)j->b + ob, j->ldb,
                          (float)j->beta, (float *)j->c + oc, j->ldc);
    else
        pg_gemm_one_double(j->direct, j->ta, j->tb, m, n, j->k, j->alpha, (const double *)j->a + oa,
                           j->lda, (const double *)j->b + ob, j->ldb, j->beta, (double *)j->c + oc,
                           j->ldc);
}

#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pthread_t th;
    int id;             /* 1..nworkers: the part it runs (the caller runs part 0) */
    unsigned long seen; /* the last job generation it has looked at */
} worker;

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one product / resize at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;     /* the fields below; with the cvs */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static worker workers[PG_GEMM_MAX_THREADS];
static int nworkers;      /* started and not joined (changed under job_mu and mu) */
static int keep;          /* workers with id > keep leave */
static unsigned long gen; /* job generation: bumped to hand out a job */
static gemm_job job;
static unsigned long pending; /* parts still running on workers */
static pid_t pool_pid;

/* Spins, in microseconds: a worker after its part (the next product of a training step often
 * follows within microseconds, and waking a sleeping thread costs more), the caller waiting for
 * the workers' parts (they end about when its own does); measured: docs/gemm.md. */
static const double spin_us_w = 20, spin_us_c = 100;
static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}
/* spin (pause) while (*p == v) == eq, for at most `us` microseconds */
static void spin_while(const unsigned long *p, unsigned long v, int eq, double us)
{
    if ((__atomic_load_n(p, __ATOMIC_ACQUIRE) == v) != eq || us <= 0) return;
    double end = now_us() + us;
    do
        for (int i = 0; i < 16; i++) {
#if PG_GEMM_X86
            _mm_pause();
#endif
            if ((__atomic_load_n(p, __ATOMIC_ACQUIRE) == v) != eq) return;
        }
    while (now_us() < end);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        if (w->seen == gen && w->id <= keep && spin_us_w > 0) {
            /* a short spin first: the next product often follows within microseconds */
            pthread_mutex_unlock(&mu);
            spin_while(&gen, w->seen, 1, spin_us_w);
            pthread_mutex_lock(&mu);
        }
        while (w->seen == gen && w->id <= keep) pthread_cond_wait(&work_cv, &mu);
        if (w->id > keep) break;
        w->seen = gen;
        if (w->id >= job.parts) continue;
        gemm_job j = job;
        pthread_mutex_unlock(&mu);
        job_run(&j, w->id);
        pthread_mutex_lock(&mu);
        if (__atomic_sub_fetch(&pending, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&done_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* with job_mu held: keep `want` workers (0..MAX-1); returns how many there are */
static int pool_resize(int want)
{
    if (pool_pid != getpid()) { /* a fork()ed child: the parent's workers are not here */
        pthread_mutex_init(&mu, NULL);
        pthread_cond_init(&work_cv, NULL);
        pthread_cond_init(&done_cv, NULL);
        nworkers = 0, keep = 0, pending = 0;
        pool_pid = getpid();
    }
    if (want < nworkers) {
        pthread_mutex_lock(&mu);
        keep = want;
        pthread_cond_broadcast(&work_cv);
        pthread_mutex_unlock(&mu);
        for (int i = want; i < nworkers; i++) pthread_join(workers[i].th, NULL);
        nworkers = want;
    }
    if (want > nworkers) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the workers inherit a full mask */
        pthread_mutex_lock(&mu);
        keep = want;
        pthread_mutex_unlock(&mu);
        for (; nworkers < want; nworkers++) {
            worker *w = &workers[nworkers];
            w->id = nworkers + 1;
            w->seen = gen; /* gen changes only under job_mu, held here */
            if (pthread_create(&w->th, NULL, worker_main, w) != 0) break;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_mutex_lock(&mu);
        keep = nworkers;
        pthread_mutex_unlock(&mu);
    }
    return nworkers;
}

int pg_gemm_threads_stop(void)
{
    pthread_mutex_lock(&job_mu);
    int n = pool_pid == getpid() ? nworkers : 0;
    pool_resize(0);
    pthread_mutex_unlock(&job_mu);
    return n;
}

int pg_gemm_threads_live(void)
{
    pthread_mutex_lock(&job_mu);
    int n = pool_pid == getpid() ? nworkers : 0;
    pthread_mutex_unlock(&job_mu);
    return n;
}

/* pg_set_threads(n): fewer threads than workers -> stop the extra ones now */
void pg_gemm_threads_hint(int n)
{
    pthread_mutex_lock(&job_mu);
    if (pool_pid == getpid() && n - 1 < nworkers) pool_resize(n - 1 < 0 ? 0 : n - 1);
    pthread_mutex_unlock(&job_mu);
}

/* fork.c: 0 before fork: wait for a product in flight (job_mu) and take the fields' lock, so no
 * product or resize is half done; 1 parent: release both; 2 child: fresh locks and condition
 * variables, no workers (they stayed in the parent) */
void pg_gemm_fork(int phase)
{
    if (phase == 0) {
        pthread_mutex_lock(&job_mu);
        pthread_mutex_lock(&mu);
    } else if (phase == 1) {
        pthread_mutex_unlock(&mu);
        pthread_mutex_unlock(&job_mu);
    } else {
        pthread_mutex_init(&job_mu, NULL);
        pthread_mutex_init(&mu, NULL);
        pthread_cond_init(&work_cv, NULL);
        pthread_cond_init(&done_cv, NULL);
        nworkers = 0, keep = 0, pending = 0;
        pool_pid = getpid();
    }
}

/* exit and dlclose: no worker may outlive the code it runs. If a product is in flight on
 * another thread at exit, leave the workers alone (exit ends them) rather than wait. */
__attribute__((destructor)) static void pool_fini(void)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return;
    if (pool_pid == getpid()) pool_resize(0);
    pthread_mutex_unlock(&job_mu);
}

/* Runs the product on `parts` threads (the caller included); 0 when it did not (pool busy,
 * no thread could be created): the caller then runs it alone. */
static int pool_run(gemm_job *j, int threads)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return 0;
    int have = pool_resize(threads - 1 < PG_GEMM_MAX_THREADS ? threads - 1 : PG_GEMM_MAX_THREADS);
    if (j->parts > have + 1) j->parts = have + 1;
    if (j->parts < 2) {
        pthread_mutex_unlock(&job_mu);
        return 0;
    }
    pthread_mutex_lock(&mu);
    job = *j;
    __atomic_store_n(&pending, j->parts - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&gen, gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    job_run(j, 0);
    spin_while(&pending, 0, 0, spin_us_c);
    pthread_mutex_lock(&mu);
    while (pending > 0) pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&job_mu);
    return 1;
}
#else
void pg_gemm_fork(int phase) { (void)phase; }
int pg_gemm_threads_stop(void) { return 0; }
int pg_gemm_threads_live(void) { return 0; }
void pg_gemm_threads_hint(int n) { (void)n; }
static int pool_run(gemm_job *j, int threads)
{
    (void)j, (void)threads;
    return 0;
}
#endif

/* Parts: each thread gets at least PG_GEMM_MIN_FLOPS (twice that in f32), at most one per unit
 * of the split dimension; 0 when fewer than two parts (or the pool could not run them). */
int pg_gemm_split(gemm_job *j)
{
    int threads = pg_get_threads();
    double work = 2.0 * (double)j->m * (double)j->n * (double)j->k;
    double most =
        min_flops > 0 ? work / (min_flops * (j->dtype == PG_DTYPE_F32 ? 2 : 1)) : (double)threads;
    int parts = most < (double)threads ? (int)most : threads;
    int64_t units = ((j->by_cols ? j->n : j->m) + j->unit - 1) / j->unit;
    if (parts > units) parts = (int)units;
    if (parts < 2) return 0;
    j->parts = parts;
    return pool_run(j, threads);
}
