/* Threads with their own tapes: sequential runs equal the single-thread one; two at once. */
#include <pthread.h>
#include <string.h>
#include "check.h"

/* ---- threads: each trains its own copy on its own tape; results equal the single-thread run ---- */
static void train(double *out)
{
    lcg = 7;
    pg_tensor *w = rnd(PG_DTYPE_F64, 4, 3, 0), *x = rnd(PG_DTYPE_F64, 3, 8, 0),
              *y = rnd(PG_DTYPE_F64, 4, 8, 0);
    pg_tensor_set_requires_grad(w, 1);
    pg_optim *o = pg_optim_new(1, &w, 1, NULL);
    pg_optim_set(o, "lr", 0.01);
    for (int s = 0; s < 50; s++) {
        pg_tape_begin();
        pg_tensor *h = pg_matmul(w, x), *a = pg_unary(PG_UNARY_OP_TANH, h), *l = pg_mse_loss(a, y);
        pg_tape_end();
        pg_gradmap *m = pg_backward(l);
        pg_optim_step(o, m);
        pg_gradmap_free(m);
        pg_optim_zero_grad(o);
        REL(h);
        REL(a);
        REL(l);
    }
    pg_tensor_read(w, out, PG_DTYPE_F64);
    /* leave nodes on this thread's tape on purpose: thread exit must free them */
    pg_tape_begin();
    pg_tensor *h = pg_unary(PG_UNARY_OP_RELU, w);
    pg_tape_end();
    REL(h);
    pg_optim_free(o);
    REL(w);
    REL(x);
    REL(y);
}

static void *thread_main(void *arg)
{
    train(arg);
    return NULL;
}

void test_threads(void)
{
    double ref[12], r1[12], r2[12];
    /* the value generator is shared, so these threads run one after the other (test_concurrent
     * runs two at once); each leaves nodes on its tape, which its exit must free */
    train(ref);
    pg_tape_clear();
    pthread_t t1, t2;
    CHECK(pthread_create(&t1, NULL, thread_main, r1) == 0);
    pthread_join(t1, NULL);
    CHECK(pthread_create(&t2, NULL, thread_main, r2) == 0);
    pthread_join(t2, NULL);
    CHECK(memcmp(ref, r1, sizeof ref) == 0 && memcmp(ref, r2, sizeof ref) == 0);
}

/* concurrent: two threads train at the same time on shared read-only data */
typedef struct {
    pg_tensor *x;
    double out;
} conc_arg;
static void *conc_main(void *p)
{
    conc_arg *c = p;
    for (int s = 0; s < 200; s++) {
        pg_tape_begin();
        pg_tensor *t = pg_unary(PG_UNARY_OP_TANH, c->x), *l = pg_sum(t, 0);
        pg_tape_end();
        pg_gradmap *m = pg_backward(l);
        c->out = read1(l);
        pg_gradmap_free(m);
        pg_tape_clear();
        REL(t);
        REL(l);
    }
    return NULL;
}

void test_concurrent(void)
{
    pg_tensor *x = rnd(PG_DTYPE_F64, 16, 16, 0);
    pg_tensor_set_requires_grad(x, 1);
    conc_arg a = {x, 0}, b = {x, 0};
    pthread_t t1, t2;
    CHECK(pthread_create(&t1, NULL, conc_main, &a) == 0);
    CHECK(pthread_create(&t2, NULL, conc_main, &b) == 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pg_tensor *t = pg_unary(PG_UNARY_OP_TANH, x), *l = pg_sum(t, 0);
    CHECK(a.out == read1(l) && b.out == read1(l));
    REL(t);
    REL(l);
    REL(x);
}

/* ---- ag_multihead_attention's heads over the pool: 4 heads of 256 x 256 queries x keys, d_k 8
 * (split at 2 and 3 threads, the load adaptation off), dropout: 2 and 3 threads give one
 * thread's output, gradients and random stream; q, k, v distinct or one tensor (whose rows then
 * take three sums a head) ---- */
enum { MHA_D = 32, MHA_T = 256, MHA_N = MHA_D * MHA_T };
static void mha_run(int threads, int dt, int same, double *res, int32_t *state)
{
    lcg = 11;
    pg_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = same && i ? x[0] : rnd(dt, MHA_D, MHA_T, 0);
        if (!same || !i) pg_tensor_set_requires_grad(x[i], 1);
    }
    CHECK(pg_rng_seed(NULL, 5) == 0);
    CHECK(pg_set_threads(threads) == 0);
    pg_tape_begin();
    pg_tensor *o = pg_mha_heads(x[0], x[1], x[2], 4, 0.35, same, 0.25);
    pg_tensor *l = o ? pg_sum(o, 0) : NULL;
    pg_tape_end();
    CHECK(l != NULL);
    pg_gradmap *m = l ? pg_backward(l) : NULL;
    CHECK(pg_set_threads(1) == 0);
    CHECK(m != NULL);
    memset(res, 0, 4 * MHA_N * sizeof *res);
    if (o) pg_tensor_read(o, res, PG_DTYPE_F64);
    for (int i = 0; i < 3 && m; i++) {
        pg_tensor *g = pg_gradmap_get(m, x[i]);
        CHECK(g != NULL);
        if (g) pg_tensor_read(g, res + (i + 1) * MHA_N, PG_DTYPE_F64);
    }
    CHECK(pg_rng_get_state(NULL, state) == 0);
    if (m) pg_gradmap_free(m);
    pg_tape_clear();
    REL(o);
    REL(l);
    for (int i = 0; i < 3; i++)
        if (!same || !i) REL(x[i]);
}

void test_mha_threads(void)
{
    int was = pg_gemm_threads_adaptive(0);
    double *ref = malloc(4 * MHA_N * sizeof *ref), *got = malloc(4 * MHA_N * sizeof *got);
    int32_t s1[PG_RNG_STATE_LEN], s2[PG_RNG_STATE_LEN];
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++)
        for (int same = 0; same <= 1; same++) {
            mha_run(1, dt, same, ref, s1);
            for (int th = 2; th <= 3; th++) {
                mha_run(th, dt, same, got, s2);
                CHECK(memcmp(ref, got, 4 * MHA_N * sizeof *ref) == 0);
                CHECK(memcmp(s1, s2, sizeof s1) == 0);
            }
        }
    free(ref);
    free(got);
    pg_gemm_threads_adaptive(was);
}
