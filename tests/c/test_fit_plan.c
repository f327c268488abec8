/* ag_fit's data plan (native/fit.c): pg_fit_params and its defaults, the split, the checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static double ext_unif(void) { return 0.5; }
static double ext_index(double dn) { return floor(dn / 2); }

void test_fit_plan(void)
{
    pg_fit_params d = pg_fit_default_params();
    CHECK(d.batch_size == 32 && d.nbatch_logical == 0 && d.val_split == 0 && d.shuffle == 1);
    CHECK(d.classify == 0 && d.rng == NULL && d.split_state == NULL);

    double xv[2 * 100], yv[100];
    for (int i = 0; i < 200; i++) xv[i] = i;
    for (int i = 0; i < 100; i++) yv[i] = i % 3;
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 2, 100, xv, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 100, yv, PG_DTYPE_F64, 1, 1);
    pg_rng *r = pg_rng_new_seeded(1);

    /* defaults: batches of 32, one micro-batch per step, nothing held out */
    d.rng = r;
    pg_fit *f = pg_fit_new(x, y, &d);
    pg_fit_dims s;
    CHECK(f && pg_fit_sizes(f, &s) == 0);
    CHECK(s.n == 100 && s.n_train == 100 && s.n_val == 0 && s.n_batches == 3 && s.accum == 1);
    pg_fit_free(f);

    pg_fit_params p = d;
    p.classify = 1, p.batch_size = 8, p.nbatch_logical = 16, p.val_split = 0.25;
    f = pg_fit_new(x, y, &p);
    CHECK(f && pg_fit_sizes(f, &s) == 0);
    /* 25 held out; 75 training samples: 4 logical batches of 2 micro-batches; 4 val batches */
    CHECK(s.n_val == 25 && s.n_train == 75 && s.n_batches == 8 && s.accum == 2);
    CHECK(s.n_val_batches == 4);
    /* the same seed and split state give the same split */
    int32_t st[PG_RNG_STATE_LEN];
    CHECK(pg_fit_split_state(f, st) == 0);
    pg_fit_free(f);
    p.split_state = st;
    f = pg_fit_new(x, y, &p);
    int32_t st2[PG_RNG_STATE_LEN];
    CHECK(f && pg_fit_split_state(f, st2) == 0 && !memcmp(st, st2, sizeof st));
    pg_fit_free(f);
    p.split_state = NULL;

    /* an external stream (R's non-default RNGkind) splits and shuffles through its index draws;
     * it has no state: the plan says so when asked, and a resume on it is refused */
    pg_rng *ext = pg_rng_new_external(ext_unif, ext_unif, ext_index);
    CHECK(pg_rng_has_state(ext) == 0 && pg_rng_has_state(r) == 1);
    p.rng = ext;
    f = pg_fit_new(x, y, &p);
    CHECK(f && pg_fit_sizes(f, &s) == 0 && s.n_val == 25);
    CHECK_ERR(pg_fit_split_state(f, st2) == PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE,
              "ag_fit: the run's random stream has no state to save");
    pg_fit_free(f);
    p.split_state = st;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_STATE,
              "ag_fit: cannot resume on a random stream without a state");
    p.split_state = NULL, p.rng = r;
    pg_rng_free(ext);

    /* refusals name ag_fit and the argument; nothing is made */
    pg_fit_params b = p;
    b.nbatch_logical = 12;
    CHECK_ERR(!pg_fit_new(x, y, &b), PG_STATUS_ERR_VALUE,
              "ag_fit: nbatch_logical (12) must be a multiple of batch_size (8)");
    b = p, b.batch_size = 0;
    CHECK_ERR(!pg_fit_new(x, y, &b), PG_STATUS_ERR_VALUE, "batch_size must be an integer >= 1");
    b = p, b.val_split = 1;
    CHECK_ERR(!pg_fit_new(x, y, &b), PG_STATUS_ERR_VALUE, "ag_fit: val_split must be in [0, 1)");
    b = p, b.val_split = NAN;
    CHECK_ERR(!pg_fit_new(x, y, &b), PG_STATUS_ERR_VALUE, "val_split must be in [0, 1)");
    b = p, b.batch_size = 64, b.nbatch_logical = 128;
    CHECK_ERR(!pg_fit_new(x, y, &b), PG_STATUS_ERR_VALUE,
              "75 training samples do not fill one logical batch of 128");
    CHECK_ERR(!pg_fit_new(x, y, NULL), PG_STATUS_ERR_ARG, "ag_fit: params is NULL");
    yv[5] = 1.5;
    pg_tensor *yb = pg_tensor_new(PG_DTYPE_F64, 1, 100, yv, PG_DTYPE_F64, 1, 1);
    CHECK_ERR(!pg_fit_new(x, yb, &p), PG_STATUS_ERR_VALUE, "sample 6 has 1.5");
    pg_tensor_release(yb);
    pg_tensor_release(x);
    pg_tensor_release(y);
    pg_rng_free(r);
}
