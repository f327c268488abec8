/* The learning-rate schedules' counts in the core (native/sched.c): R's as.integer, once for both
 * front ends (issue 29: Python's _whole and R's .sched_count were the same rule twice). */
#include <limits.h>
#include <math.h>
#include <string.h>
#include "check.h"

/* pg_sched_init of kind with par (the rest 0); 0 and par read back, or the failure */
static int init(int kind, double *par, const double *in, int n)
{
    double st[PG_SCHED_NSTATE], lr0, mom0;
    memset(par, 0, PG_SCHED_NPAR * sizeof *par);
    memcpy(par, in, (size_t)n * sizeof *in);
    return pg_sched_init(kind, par, st, 0.1, &lr0, &mom0);
}

void test_sched(void)
{
    double p[PG_SCHED_NPAR];
    /* truncated toward zero, as R's as.integer: 2.9 is 2, 1.5 is 1 */
    CHECK(init(PG_SCHED_KIND_STEP, p, (const double[]){2.9, 0.5}, 2) == 0 && p[0] == 2);
    CHECK(init(PG_SCHED_KIND_STEP, p, (const double[]){1.5, 0.5}, 2) == 0 && p[0] == 1);
    CHECK(init(PG_SCHED_KIND_STEP, p, (const double[]){INT_MAX, 0.5}, 2) == 0 && p[0] == INT_MAX);
    /* as.integer keeps everything below INT_MAX + 1, as pg_arg_count does */
    CHECK(init(PG_SCHED_KIND_STEP, p, (const double[]){INT_MAX + 0.5, 0.5}, 2) == 0 &&
          p[0] == INT_MAX);
    /* 0.9 is 0; NaN (a non-number), Inf and past R's integers are NA: ggmlR's text */
    const double bad[] = {0.9, NAN, INFINITY, -INFINITY, 1e12, (double)INT_MAX + 1, -1e12};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_ERR(init(PG_SCHED_KIND_STEP, p, (const double[]){bad[i], 0.5}, 2) != 0,
                  PG_STATUS_ERR_VALUE, "step_size must be >= 1");
        CHECK_ERR(init(PG_SCHED_KIND_COSINE, p, (const double[]){bad[i], 0, 0, 1}, 4) != 0,
                  PG_STATUS_ERR_VALUE, "T_max must be >= 1");
    }
    /* every count: cyclic's up and down, onecycle's total, the warmups' */
    CHECK(init(PG_SCHED_KIND_CYCLIC, p, (const double[]){0.1, 1, 3.7, 2.2, 0, 1}, 6) == 0);
    CHECK(p[2] == 3 && p[3] == 2);
    CHECK_ERR(init(PG_SCHED_KIND_CYCLIC, p, (const double[]){0.1, 1, 3, 1e10, 0, 1}, 6) != 0,
              PG_STATUS_ERR_VALUE, "step_size_down must be >= 1");
    CHECK(init(PG_SCHED_KIND_ONECYCLE, p, (const double[]){1, 10.99, 0.3, 25, 1e4, 0, 0.85, 0.95},
               8) == 0 &&
          p[1] == 10 && p[4] == 3);
    CHECK_ERR(init(PG_SCHED_KIND_ONECYCLE, p,
                   (const double[]){1, 2.5e9, 0.3, 25, 1e4, 0, 0.85, 0.95}, 8) != 0,
              PG_STATUS_ERR_VALUE, "total_steps must be >= 2");
    /* -0.5 is 0 (not -0), which warmup_cosine takes: no warmup */
    CHECK(init(PG_SCHED_KIND_WARMUP_COSINE, p, (const double[]){-0.5, 5.5, 0, 0, 0}, 5) == 0);
    CHECK(p[0] == 0 && !signbit(p[0]) && p[1] == 5);
    CHECK_ERR(init(PG_SCHED_KIND_WARMUP_COSINE, p, (const double[]){3.9, 3.9, 0, 0, 0}, 5) != 0,
              PG_STATUS_ERR_VALUE, "total_steps must be > warmup_steps");
    CHECK(init(PG_SCHED_KIND_WARMUP, p, (const double[]){4.2, 0.1, 0}, 3) == 0 && p[0] == 4);
    CHECK_ERR(init(PG_SCHED_KIND_WARMUP, p, (const double[]){NAN, 0.1, 0}, 3) != 0,
              PG_STATUS_ERR_VALUE, "warmup_steps must be >= 1");
}
