/* The C test driver's shared checks (check.c) and the topic parts main.c runs; every test_*.c
 * includes this. A failed CHECK prints file:line and the core's last error, and counts. */
#ifndef PG_TEST_CHECK_H
#define PG_TEST_CHECK_H
#include <stdint.h>
#include "pg.h"

extern int n_checks, n_failed;
void check_(int ok, const char *what, const char *file, int line);
#define CHECK(cond) check_((cond) != 0, #cond, __FILE__, __LINE__)

/* The call failed with `status` and a message containing `needle`. */
#define CHECK_ERR(expr_is_failure, status, needle)                                                 \
    do {                                                                                           \
        pg_clear_error();                                                                          \
        int failed_ = (expr_is_failure);                                                           \
        CHECK(failed_);                                                                            \
        CHECK(pg_last_status() == (status));                                                       \
        CHECK(strstr(pg_last_error(), (needle)) != NULL);                                          \
        pg_clear_error();                                                                          \
    } while (0)

#define REL(t) pg_tensor_release(t)

/* deterministic values: urand() in [-1, 1] from the state lcg (a test may reseed it) */
extern uint64_t lcg;
double urand(void);
pg_tensor *rnd(int dtype, int64_t r, int64_t c, double lo_abs); /* |x| >= lo_abs */
pg_tensor *rnd_pos(int dtype, int64_t r, int64_t c);            /* x in [0.3, 1.3] */
double read1(pg_tensor *t);                                     /* the first value, as double */

/* an op under test builds its output from inputs; gradcheck runs forward + backward in dtype
 * and, in f64, compares each gradient of grad_mask's inputs with central differences */
typedef pg_tensor *(*op_fn)(pg_tensor **in, const void *ctx);
void gradcheck(const char *name, op_fn f, const void *ctx, int n_in, const int64_t *shapes,
               unsigned pos_mask, unsigned grad_mask, int dtype);

/* the parts, one topic each (test_<topic>.c), in the order main.c runs them */
void test_tensors(void);
void test_errors(void);
void test_tape(void);
void test_ops(void);
void test_gemm(void);
void test_optim(void);
void test_optim_state(void);
void test_state_dict(void);
void test_memory(void);
void test_dist(void);
void test_threads(void);
void test_mha_threads(void);
void test_vmath(void);
void test_vew(void);
void test_concurrent(void);
void test_host(void);
void test_codec(void);
void test_modelfile(void);
void test_modelfile_model(void);
void test_modelfile_check(void);
void test_modelfile_args(void);
void test_modelfile_info(void);
void test_codec_plan(void);
void test_fit_plan(void);
void test_fit_val(void);
void test_fit_data(void);
void test_memory_report(void);
void test_sched(void);
void test_fit_session(void);
/* the plan both session test files drive (test_fit_session.c) */
typedef struct {
    pg_tensor *x, *y;
    pg_rng *r;
    pg_fit *f;
} session_plan;
pg_fit *session_plan_new(session_plan *sp);
void session_plan_free(session_plan *sp);
void test_fit_session_static(void);
void test_fit_stop(void);
void test_fit_cb(void);
void test_fit_resume(void);
void test_fit_ckpt(void);
void test_fit_setup(void);
void test_fit_drifts3(void);
void test_fit_history(void);
void test_fit_loss(void);
void test_layer_config(void);
void test_layer_shape(void);
void test_norm(void);
void test_pool(void);
void test_resize(void);
void test_rnn(void);
void test_checkpoint_policy(void);
void test_checkpoint_path(void);
void test_seed_rule(void);
void test_lost(void);
void test_hostile(void);
void test_versions(void);
void test_views(void);
void test_index(void);
void test_loss_opt(void);
void test_fit_binary(void);
void test_arg_check(void);
void test_fit_args(void);
void test_arg_rules(void);
void test_gather_index(void);
void test_metrics(void);
void test_fit_weight(void);
void test_predict(void);
void test_conv(void);
void test_convt(void);
void test_convt1d(void);
#endif
