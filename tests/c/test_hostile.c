/* Hostile use (issue 19): bounds on counts, what a path is (a FIFO must
 * not block the reader), fork() while another thread runs backward passes and draws. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

static volatile int hostile_stop;

static void *hostile_busy(void *arg)
{
    (void)arg;
    double wv[64 * 64];
    for (int i = 0; i < 64 * 64; i++) wv[i] = (i % 7) * 0.01;
    pg_tensor *w = pg_tensor_new(PG_DTYPE_F64, 64, 64, wv, PG_DTYPE_F64, 1, 64);
    pg_tensor_set_requires_grad(w, 1);
    double u[8], lo = 0, hi = 1;
    while (!hostile_stop) {
        pg_tape_begin();
        pg_tensor *y = pg_matmul(w, w), *s = y ? pg_sum(y, 0) : NULL;
        pg_tape_end();
        pg_gradmap *g = s ? pg_backward(s) : NULL;
        pg_gradmap_free(g);
        REL(s);
        REL(y);
        pg_tape_clear();
        pg_rng_runif(NULL, 8, &lo, 1, &hi, 1, u, NULL);
    }
    REL(w);
    return NULL;
}

/* Front-end rules kept once in the core (issue 29): the batch count, the estimate's shapes and
 * the attention layer's inputs */
static void hostile_front_end_rules(void)
{
    CHECK(pg_batch_count("t", 10, 4, 1) == 2 && pg_batch_count("t", 10, 4, 0) == 3);
    CHECK(pg_batch_count("t", 3, 4, 1) == 0 && pg_batch_count("t", 0, 4, 0) == 0);
    CHECK_ERR(pg_batch_count("ag_dataloader", 10, 0, 1) < 0, PG_STATUS_ERR_VALUE,
              "ag_dataloader: batches of 0");
    const double dims[] = {2, 3, 4, 1.5, 2};
    const int64_t lens[] = {2, 1, 2};
    double p = 0;
    CHECK(pg_estimate_params(dims, lens, 3, &p) == 0 && p == 13);
    CHECK_ERR(pg_estimate_params(dims, lens, 0, &p) != 0, PG_STATUS_ERR_VALUE, "non-empty list");
    const int64_t bad_lens[] = {2, -1};
    CHECK_ERR(pg_estimate_params(dims, bad_lens, 2, &p) != 0, PG_STATUS_ERR_VALUE,
              "shape 1 is not numeric");
    const int64_t empty[] = {2, 0};
    CHECK_ERR(pg_estimate_params(dims, empty, 2, &p) != 0, PG_STATUS_ERR_VALUE, "shape 1 is empty");
    const double nan_dims[] = {2, NAN};
    CHECK_ERR(pg_estimate_params(nan_dims, lens, 1, &p) != 0, PG_STATUS_ERR_VALUE,
              "shape 0 has nan at position 1");
    pg_tensor *q = pg_tensor_new(PG_DTYPE_F64, 4, 5, NULL, PG_DTYPE_F64, 1, 4);
    pg_tensor *k3 = pg_tensor_new(PG_DTYPE_F64, 3, 5, NULL, PG_DTYPE_F64, 1, 3);
    pg_tensor *v6 = pg_tensor_new(PG_DTYPE_F64, 4, 6, NULL, PG_DTYPE_F64, 1, 4);
    CHECK(pg_mha_check_inputs(4, q, q, q) == 0);
    CHECK_ERR(pg_mha_check_inputs(4, q, k3, q) != 0, PG_STATUS_ERR_SHAPE,
              "ag_multihead_attention: k is [3x5] f64 but d_model = 4");
    CHECK_ERR(pg_mha_check_inputs(4, q, q, v6) != 0, PG_STATUS_ERR_SHAPE,
              "k is [4x5] f64 and v is [4x6] f64");
    CHECK_ERR(pg_mha_check_inputs(4, q, NULL, q) != 0, PG_STATUS_ERR_ARG, "'k' is NULL");
    REL(q);
    REL(k3);
    REL(v6);
}

void test_hostile(void)
{
    hostile_front_end_rules();
    CHECK_ERR(pg_set_threads(PG_MAX_THREADS + 1) != 0, PG_STATUS_ERR_VALUE,
              "ag_set_threads(): n must be an integer in [1, 1024], got 1025");
    CHECK(pg_physical_memory() > 0);

    char fifo[64];
    snprintf(fifo, sizeof fifo, "/tmp/pg_driver_%d.fifo", (int)getpid());
    CHECK(pg_file_kind("/dev/null") == PG_FILE_KIND_OTHER);
    CHECK(pg_file_kind("/tmp") == PG_FILE_KIND_DIR);
    CHECK(pg_file_kind("/nonexistent/x") == PG_FILE_KIND_MISSING);
    if (mkfifo(fifo, 0600) == 0) {
        pg_st_file *f = NULL;
        CHECK(pg_file_kind(fifo) == PG_FILE_KIND_OTHER);
        CHECK_ERR(pg_st_open(fifo, &f) != 0, PG_STATUS_ERR_VALUE, "not a regular file");
        CHECK(f == NULL);
        unlink(fifo);
    }

    /* fork while a thread runs backward passes, products and draws: no child may hang. Not
     * under ASan: GCC 12's libasan has no fork handler for its own allocator (LLVM added one in
     * 18), so a child can hang inside ASan itself; scripts/sanitize.sh runs the driver's plain
     * build first, which runs it (and the un-sanitized Python suite runs its own). */
#if defined(__SANITIZE_ADDRESS__)
    printf("hostile: fork with a busy thread: in the plain build only (ASan's allocator)\n");
    return;
#endif
    pthread_t th;
    hostile_stop = 0;
    if (pthread_create(&th, NULL, hostile_busy, NULL) != 0) return;
    int hung = 0, bad = 0;
    for (int k = 0; k < 40 && !hung; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            double one[4] = {1, 1, 1, 1}, u[2], lo = 0, hi = 1;
            pg_tensor *a = pg_tensor_new(PG_DTYPE_F64, 2, 2, one, PG_DTYPE_F64, 1, 2);
            pg_tensor_set_requires_grad(a, 1);
            pg_tape_begin();
            pg_tensor *y = pg_matmul(a, a), *s = pg_sum(y, 0);
            pg_tape_end();
            pg_gradmap *g = pg_backward(s);
            pg_rng_runif(NULL, 2, &lo, 1, &hi, 1, u, NULL);
            pg_memory_trim();
            _exit(g && pg_scalar_get(s) == 8.0 ? 0 : 3);
        }
        if (pid < 0) break;
        int st = 0;
        struct timespec nap = {0, 2000000};
        for (int w = 0; w < 2500; w++) { /* 5 s */
            if (waitpid(pid, &st, WNOHANG) == pid) break;
            nanosleep(&nap, NULL);
            if (w == 2499) {
                hung = 1;
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
            }
        }
        if (!hung && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) bad++;
    }
    hostile_stop = 1;
    pthread_join(th, NULL);
    CHECK(!hung);
    CHECK(bad == 0);
}
