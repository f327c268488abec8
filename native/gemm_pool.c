/* The core's threads: ag_set_threads(n) splits large products, and other large loops
 * (pg_par_for: optimizer updates, vectorised math), over n threads.
 *
 * A job is cut into chunks that the calling thread and the workers take in turn from a shared
 * counter (a chunk goes to whichever thread comes first). Each chunk's result depends only on
 * the chunk, never on the thread that runs it nor on how many run, so every thread count gives
 * the same bits. Taking chunks rather than fixed parts makes the split adapt: a worker that
 * wakes late, or shares its core with another process, takes fewer chunks and the caller the
 * rest, instead of the caller waiting for a fixed half.
 *
 * GEMM: C is cut along one dimension, never along k: the rows of C (units of the kernel's MR =
 * 2 vectors: whole tiles of either path) when m >= n, else its columns (units of the packed NR
 * or the direct path's column tile; whole vector tiles when the direct path swaps roles). Each
 * chunk is an ordinary single-threaded product on a sub-block of C, and every element is
 * summed in the one order described in gemm_internal.h, whatever the tile, block or path it
 * lands in. Each chunk packs what it needs into its own buffers; the chunks that take rows
 * duplicate the packing of B, those that take columns that of A: the smaller operand side.
 * Only where it pays: each thread gets at least PG_GEMM_MIN_FLOPS of work in f64 (2 m n k /
 * threads), twice that in f32 (twice as fast), else fewer threads, down to one; about 30 us of
 * work, below which a second thread does not pay (docs/gemm.md). Two chunks per thread: enough
 * to rebalance, few enough that the duplicated packing stays small.
 *
 * The pool: n - 1 worker threads, started at the first threaded job (not before: the default
 * of one thread never starts any), resized when n changes. Workers sleep on a condition
 * variable between jobs, after a spin of at most 20 us; the caller, out of chunks, waits for
 * the chunks still running (spinning up to 100 us, then asleep). Up to 64 threads. One job at
 * a time: a job that finds the pool busy (another application thread's job in flight, or a
 * chunk that itself asks for threads) runs single-threaded at once instead of waiting (same
 * bits; no oversubscription of the cores).
 *
 * Under load from other processes (issue 32: never slower than one thread): when a job's
 * threads spent a quarter of it off their cores, or its caller waited for a worker's chunk
 * longer than its own share, or no worker joined a long job, jobs run single-threaded for a
 * spell (2 ms, doubling to 256 ms while it goes on, halved by each job that runs well): two
 * threads that share busy cores with other processes get no more CPU than one, and lose
 * time waiting for each other.
 *
 * A thread that cannot be created: fewer threads (down to single-threaded). Workers block all
 * signals (the application's handlers run on its own threads). At process exit, and when the
 * library is unloaded (dlclose: R's dyn.unload), a destructor stops and joins the workers
 * (pg_gemm_threads_stop() does the same on demand). After fork() the child has no workers:
 * the pool notices (the pid changed) and starts afresh. Windows (_WIN32): single-threaded. */
#include "gemm_internal.h"

#define PG_GEMM_MIN_FLOPS   2.0e6
#define PG_GEMM_MAX_THREADS 64

static double min_flops = PG_GEMM_MIN_FLOPS;
double pg_gemm_thread_min_flops(double flops)
{
    min_flops = flops < 0 ? PG_GEMM_MIN_FLOPS : flops;
    return min_flops;
}

/* chunk c of the product: a sub-block of C, units [c U / chunks, (c+1) U / chunks) of the split
 * dimension */
static void gemm_chunk(void *ctx, int64_t c)
{
    const gemm_job *j = ctx;
    int64_t len = j->by_cols ? j->n : j->m, U = (len + j->unit - 1) / j->unit;
    int64_t u0 = U * c / j->parts, u1 = U * (c + 1) / j->parts;
    int64_t s0 = u0 * j->unit, s1 = u1 * j->unit < len ? u1 * j->unit : len;
    if (s1 <= s0) return;
    int64_t m = j->by_cols ? j->m : s1 - s0, n = j->by_cols ? s1 - s0 : j->n;
    /* element offsets of the chunk's op(A) rows / op(B) columns / C block */
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

/* a job: chunks 0..chunks-1, each run(ctx, c) */
typedef struct {
    void (*run)(void *ctx, int64_t c);
    void *ctx;
    int64_t chunks;
} pool_job;

#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pthread_t th;
    int id;             /* 1..nworkers */
    unsigned long seen; /* the last job generation it has looked at */
} worker;

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one job / resize at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;     /* the fields below; with the cvs */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER, done_cv = PTHREAD_COND_INITIALIZER;
static worker workers[PG_GEMM_MAX_THREADS];
static int nworkers;         /* started and not joined (changed under job_mu and mu) */
static int keep;             /* workers with id > keep leave */
static unsigned long gen;    /* job generation: bumped to hand out a job */
static pool_job job;         /* valid while `open`, and for the workers counted in `active` */
static int open;             /* workers may still join the job (the caller closes it when out) */
static unsigned long active; /* workers inside the job (joined, not yet out of chunks) */
static int64_t next;         /* the next chunk to take (atomic) */
static int64_t by_workers;   /* chunks the workers took in this job (atomic) */
static double lost_us;       /* wall minus CPU time of the workers' chunks in this job (mu) */
static pid_t pool_pid;

/* Spins, in microseconds: a worker after a job (the next product of a training step often
 * follows within microseconds, and waking a sleeping thread costs more), the caller waiting for
 * the workers' last chunks (they end about when its own does); measured: docs/gemm.md. */
static const double spin_us_w = 20, spin_us_c = 100;
/* Load from elsewhere (see the top), in a job of at least judge_us: its threads off their cores
 * (wall minus CPU time of the chunks) for over a quarter of it, a wait for the workers' last
 * chunks longer than the caller's own share, or, in a job of alone_us, every chunk done by the
 * caller alone (a sleeping worker on an idle virtual CPU can take a few hundred us to wake:
 * shorter jobs say nothing). Each starts a single-threaded spell of backoff_us, doubled while
 * it goes on up to max_backoff_us, halved at each job that runs well. */
static const double judge_us = 150, alone_us = 1000, min_backoff_us = 2e3, max_backoff_us = 256e3;
static double backoff_us = min_backoff_us, serial_until;
static int adaptive = 1; /* pg_gemm_threads_adaptive */
int pg_gemm_threads_adaptive(int flag)
{
    int was = adaptive;
    if (flag >= 0) adaptive = flag != 0, serial_until = 0, backoff_us = min_backoff_us;
    return was;
}

static double clock_us(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}
static double now_us(void) { return clock_us(CLOCK_MONOTONIC); }
static double cpu_us(void) { return clock_us(CLOCK_THREAD_CPUTIME_ID); }
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

/* take and run chunks until none is left; returns how many this thread ran */
static int64_t take_chunks(const pool_job *j)
{
    int64_t ran = 0;
    for (int64_t c; (c = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)) < j->chunks; ran++)
        j->run(j->ctx, c);
    return ran;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        if (w->seen == gen && w->id <= keep && spin_us_w > 0) {
            /* a short spin first: the next job often follows within microseconds */
            pthread_mutex_unlock(&mu);
            spin_while(&gen, w->seen, 1, spin_us_w);
            pthread_mutex_lock(&mu);
        }
        while (w->seen == gen && w->id <= keep) pthread_cond_wait(&work_cv, &mu);
        if (w->id > keep) break;
        w->seen = gen;
        if (!open) continue; /* the caller already ran every chunk */
        __atomic_add_fetch(&active, 1, __ATOMIC_RELAXED);
        pool_job j = job;
        pthread_mutex_unlock(&mu);
        double t0 = now_us(), c0 = cpu_us();
        int64_t ran = take_chunks(&j);
        double off = ran ? (now_us() - t0) - (cpu_us() - c0) : 0;
        __atomic_add_fetch(&by_workers, ran, __ATOMIC_RELAXED);
        pthread_mutex_lock(&mu);
        lost_us += off;
        if (__atomic_sub_fetch(&active, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&done_cv);
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
        nworkers = 0, keep = 0, active = 0, open = 0;
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

/* fork.c: 0 before fork: wait for a job in flight (job_mu) and take the fields' lock, so no
 * job or resize is half done; 1 parent: release both; 2 child: fresh locks and condition
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
        nworkers = 0, keep = 0, active = 0, open = 0;
        pool_pid = getpid();
    }
}

/* exit and dlclose: no worker may outlive the code it runs. If a job is in flight on another
 * thread at exit, leave the workers alone (exit ends them) rather than wait. */
__attribute__((destructor)) static void pool_fini(void)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return;
    if (pool_pid == getpid()) pool_resize(0);
    pthread_mutex_unlock(&job_mu);
}

/* Runs the job's chunks on up to `threads` threads (the caller included); 0 when it did not
 * (pool busy, a single-threaded spell, no thread could be created): the caller then runs it
 * alone. */
static int pool_run(const pool_job *j, int threads)
{
    if (pthread_mutex_trylock(&job_mu) != 0) return 0;
    int have = pool_resize(threads - 1 < PG_GEMM_MAX_THREADS ? threads - 1 : PG_GEMM_MAX_THREADS);
    double t0 = now_us();
    if (have < 1 || (adaptive && t0 < serial_until)) {
        pthread_mutex_unlock(&job_mu);
        return 0;
    }
    pthread_mutex_lock(&mu);
    job = *j;
    __atomic_store_n(&next, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&by_workers, 0, __ATOMIC_RELAXED);
    lost_us = 0;
    open = 1;
    __atomic_store_n(&gen, gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    double c0 = cpu_us();
    take_chunks(j);
    pthread_mutex_lock(&mu);
    open = 0; /* out of chunks: a worker waking from now on has nothing to join */
    pthread_mutex_unlock(&mu);
    double t1 = now_us(), off = (t1 - t0) - (cpu_us() - c0);
    spin_while(&active, 0, 0, spin_us_c);
    pthread_mutex_lock(&mu);
    while (active > 0) pthread_cond_wait(&done_cv, &mu);
    off += lost_us; /* the workers are done: lost_us is final */
    pthread_mutex_unlock(&mu);
    double t2 = now_us(), waited = t2 - t1;
    int64_t helped = __atomic_load_n(&by_workers, __ATOMIC_RELAXED);
    if (t2 - t0 >= judge_us) {
        int late = waited > t1 - t0, alone = helped == 0 && t1 - t0 > alone_us;
        int lost = off > 0.25 * (t2 - t0);
        if (late || alone || lost) { /* the cores are taken: see the top */
            serial_until = t2 + backoff_us;
            backoff_us = backoff_us * 2 < max_backoff_us ? backoff_us * 2 : max_backoff_us;
        } else backoff_us = backoff_us / 2 > min_backoff_us ? backoff_us / 2 : min_backoff_us;
    }
    pthread_mutex_unlock(&job_mu);
    return 1;
}
#else
int pg_gemm_threads_adaptive(int flag)
{
    (void)flag;
    return 1;
}
void pg_gemm_fork(int phase) { (void)phase; }
int pg_gemm_threads_stop(void) { return 0; }
int pg_gemm_threads_live(void) { return 0; }
void pg_gemm_threads_hint(int n) { (void)n; }
static int pool_run(const pool_job *j, int threads)
{
    (void)j, (void)threads;
    return 0;
}
#endif

/* Parts: each thread gets at least PG_GEMM_MIN_FLOPS (twice that in f32), at most one per unit
 * of the split dimension, cut into two chunks per thread where there are units enough; 0 when
 * fewer than two parts (or the pool could not run them). */
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
    j->parts = 2 * parts <= units ? 2 * parts : parts; /* chunks: see the top */
    pool_job pj = {gemm_chunk, j, j->parts};
    return pool_run(&pj, threads);
}

/* pg_par_for: chunk c covers items [c n / chunks, (c+1) n / chunks) */
typedef struct {
    void (*fn)(void *ctx, int64_t i0, int64_t i1);
    void *ctx;
    int64_t n, chunks;
} par_job;
static void par_chunk(void *ctx, int64_t c)
{
    const par_job *p = ctx;
    int64_t i0 = p->n * c / p->chunks, i1 = p->n * (c + 1) / p->chunks;
    if (i1 > i0) p->fn(p->ctx, i0, i1);
}

void pg_par_for(int64_t n, int64_t min_items, void (*fn)(void *ctx, int64_t i0, int64_t i1),
                void *ctx)
{
    int threads = pg_get_threads();
    int64_t most = min_items > 0 ? n / min_items : n;
    int parts = most < threads ? (int)most : threads;
    if (parts >= 2) {
        par_job p = {fn, ctx, n, 2 * parts <= n ? 2 * (int64_t)parts : parts};
        pool_job pj = {par_chunk, &p, p.chunks};
        if (pool_run(&pj, threads)) return;
    }
    if (n > 0) fn(ctx, 0, n);
}
