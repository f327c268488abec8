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
