/* ag_fit's data rules in the core (native/fit_val.c): validation_data's shapes and val_split
 * (pg_fit_val_join), non-finite data refused by pg_fit_new, and a fixed split (fixed_split). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static void test_val_join(void)
{
    const int64_t x[2] = {3, 30}, y[2] = {1, 30}, xv[2] = {3, 10}, yv[2] = {1, 10};
    double vs = -1;
    CHECK(pg_fit_val_join(x, y, xv, yv, 0.0, &vs) == 0 && vs == 10.0 / 40.0);
    CHECK(nearbyint(vs * 40) == 10); /* the plan holds out exactly xv's columns */
    CHECK(pg_fit_val_join(x, NULL, xv, NULL, 0.0, &vs) == 0 && vs == 0.25);
    CHECK_ERR(pg_fit_val_join(x, y, xv, yv, 1e-10, &vs), PG_STATUS_ERR_ARG,
              "ag_fit: give either val_split or validation_data, not both");
    CHECK_ERR(pg_fit_val_join(x, y, xv, yv, NAN, &vs), PG_STATUS_ERR_ARG, "not both");
    CHECK_ERR(pg_fit_val_join(x, y, xv, NULL, 0, &vs), PG_STATUS_ERR_ARG,
              "(training y given, validation y absent)");
    CHECK_ERR(pg_fit_val_join(x, NULL, xv, yv, 0, &vs), PG_STATUS_ERR_ARG,
              "(training y absent, validation y given)");
    const int64_t xv2[2] = {2, 10}, yv9[2] = {1, 9}, yv2[2] = {2, 10}, y29[2] = {1, 29};
    const int64_t xv0[2] = {3, 0}, yv0[2] = {1, 0};
    CHECK_ERR(pg_fit_val_join(x, y, xv2, yv, 0, &vs), PG_STATUS_ERR_SHAPE,
              "ag_fit: validation_data x has 2 features (rows), x has 3");
    CHECK_ERR(pg_fit_val_join(x, y, xv, yv9, 0, &vs), PG_STATUS_ERR_SHAPE,
              "ag_fit: validation_data x has 10 samples (columns) but y has 9");
    CHECK_ERR(pg_fit_val_join(x, y, xv, yv2, 0, &vs), PG_STATUS_ERR_SHAPE,
              "ag_fit: validation_data y has 2 rows, y has 1");
    CHECK_ERR(pg_fit_val_join(x, y29, xv, yv, 0, &vs), PG_STATUS_ERR_SHAPE,
              "ag_fit: x has 30 samples (columns) but y has 29");
    CHECK_ERR(pg_fit_val_join(x, y, xv0, yv0, 0, &vs), PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data and x need at least one sample each, got 0 and 30");
    CHECK_ERR(pg_fit_val_join(NULL, y, xv, yv, 0, &vs), PG_STATUS_ERR_ARG, "NULL shape");
    CHECK(vs == 0.25); /* a refusal leaves the output alone */
}

static void test_finite_and_fixed(void)
{
    double xd[2 * 12], yd[12];
    for (int i = 0; i < 24; i++) xd[i] = i;
    for (int i = 0; i < 12; i++) yd[i] = i;
    pg_rng *r = pg_rng_new_seeded(1);
    pg_fit_params p = pg_fit_default_params();
    p.batch_size = 3, p.val_split = 0.25, p.rng = r;
    CHECK(p.fixed_split == 0);
    xd[2 * 4 + 1] = NAN, xd[2 * 7] = INFINITY; /* row 2 col 5; row 1 col 8 */
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F32, 2, 12, xd, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F32, 1, 12, yd, PG_DTYPE_F64, 1, 1);
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_VALUE,
              "ag_fit: x has 2 non-finite values (NaN or Inf), the first at row 2, column 5; "
              "give finite data (remove or impute those samples)");
    pg_tensor_release(x);
    xd[2 * 4 + 1] = 1, xd[2 * 7] = 1;
    yd[10] = -INFINITY; /* a validation_data column with a fixed split: named as such */
    x = pg_tensor_new(PG_DTYPE_F64, 2, 12, xd, PG_DTYPE_F64, 1, 2);
    pg_tensor_release(y);
    y = pg_tensor_new(PG_DTYPE_F64, 1, 12, yd, PG_DTYPE_F64, 1, 1);
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_VALUE, "ag_fit: y has 1 non-finite value");
    p.fixed_split = 1;
    CHECK_ERR(!pg_fit_new(x, y, &p), PG_STATUS_ERR_VALUE,
              "ag_fit: validation_data y has 1 non-finite value (NaN or Inf), the first at row 1, "
              "column 2;");
    pg_tensor_release(y);
    yd[10] = 10;
    y = pg_tensor_new(PG_DTYPE_F64, 1, 12, yd, PG_DTYPE_F64, 1, 1);
    /* fixed split: no split draw, validation = the last 3 columns as given, training shuffled */
    int32_t before[PG_RNG_STATE_LEN], after[PG_RNG_STATE_LEN];
    CHECK(pg_rng_get_state(r, before) == 0);
    pg_fit *f = pg_fit_new(x, y, &p);
    CHECK(f && pg_rng_get_state(r, after) == 0 && !memcmp(before, after, sizeof before));
    pg_tensor *xb = NULL, *yb = NULL;
    CHECK(pg_fit_epoch_begin(f) == 0);
    CHECK(pg_fit_batch(f, 1, 0, &xb, &yb) == 3);
    const double *v = pg_data(yb);
    CHECK(v[0] == 9 && v[1] == 10 && v[2] == 11);
    pg_tensor_release(xb), pg_tensor_release(yb);
    CHECK(pg_fit_batch(f, 0, 0, &xb, &yb) == 3);
    v = pg_data(yb);
    CHECK(v[0] < 9 && v[1] < 9 && v[2] < 9 && !(v[0] == 0 && v[1] == 1 && v[2] == 2));
    pg_tensor_release(xb), pg_tensor_release(yb);
    pg_fit_free(f);
    pg_tensor_release(x);
    pg_tensor_release(y);
    pg_rng_free(r);
}

static void test_row_major_guess(void)
{
    /* x [150, 4] and y [1, 150]: x's rows are y's samples */
    CHECK(pg_row_major_guess(150, 4, 1, 150) == PG_ROW_MAJOR_X);
    /* x [4, 150] and y [150, 1]: y's rows are x's samples */
    CHECK(pg_row_major_guess(4, 150, 150, 1) == PG_ROW_MAJOR_Y);
    /* a square y is no evidence that y is the row-major one */
    CHECK(pg_row_major_guess(3, 5, 5, 5) == PG_ROW_MAJOR_NONE);
    CHECK(pg_row_major_guess(5, 3, 5, 2) == PG_ROW_MAJOR_BOTH);
    CHECK(pg_row_major_guess(4, 10, 2, 9) == PG_ROW_MAJOR_NONE);
    /* the sample check words the guess with the language's transpose */
    CHECK(pg_fit_check_samples(4, 10, 2, 10, "t(x)", "t(y)") == 0);
    CHECK_ERR(pg_fit_check_samples(150, 4, 1, 150, "x.T", "y.T"), PG_STATUS_ERR_SHAPE,
              "ag_fit: x has 4 samples (columns) but y has 150; x looks row-major (150 rows, one "
              "per sample): pyggmlr data are [features, samples] with one column per sample, so "
              "pass x.T");
    CHECK_ERR(pg_fit_check_samples(4, 150, 150, 1, "t(x)", "t(y)"), PG_STATUS_ERR_SHAPE,
              "but y has 1; y looks row-major (150 rows, one per sample)");
    CHECK_ERR(pg_fit_check_samples(5, 3, 5, 2, "t(x)", "t(y)"), PG_STATUS_ERR_SHAPE,
              "x and y look row-major (5 rows each, one per sample): pyggmlr data are [features, "
              "samples] with one column per sample, so pass t(x) and t(y)");
    CHECK(pg_fit_check_samples(4, 10, 2, 9, "t(x)", "t(y)") == PG_STATUS_ERR_SHAPE);
    CHECK(strcmp(pg_last_error(), "ag_fit: x has 10 samples (columns) but y has 9") == 0);
    CHECK_ERR(pg_fit_check_samples(1, 2, 1, 3, NULL, "t(y)"), PG_STATUS_ERR_ARG, "NULL");
    /* ag_dataloader's: its name, and col_major (the language's spelling) offered first */
    CHECK(pg_check_samples("ag_dataloader", 4, 10, 2, 10, "t(x)", "t(y)", "col_major = FALSE") ==
          0);
    CHECK_ERR(pg_check_samples("ag_dataloader", 150, 4, 1, 150, "x.T", "y.T", "col_major=False"),
              PG_STATUS_ERR_SHAPE,
              "ag_dataloader: x has 4 samples (columns) but y has 150; x looks row-major (150 "
              "rows, one per sample): pyggmlr data are [features, samples] with one column per "
              "sample, so pass col_major=False (x and a 2-D y are transposed) or x.T");
    CHECK(pg_check_samples("ag_dataloader", 4, 150, 150, 1, "t(x)", "t(y)", "col_major = FALSE") ==
          PG_STATUS_ERR_SHAPE);
    CHECK(strcmp(pg_last_error(),
                 "ag_dataloader: x has 150 samples (columns) but y has 1; y looks row-major (150 "
                 "rows, one per sample): pyggmlr data are [features, samples] with one column per "
                 "sample, so pass t(y)") == 0);
    CHECK(pg_check_samples("ag_dataloader", 5, 3, 5, 2, "t(x)", "t(y)", "col_major = FALSE") ==
          PG_STATUS_ERR_SHAPE);
    CHECK(strcmp(pg_last_error(),
                 "ag_dataloader: x has 3 samples (columns) but y has 2; x and y look row-major (5 "
                 "rows each, one per sample): pyggmlr data are [features, samples] with one column "
                 "per sample, so pass col_major = FALSE") == 0);
    CHECK(pg_check_samples("ag_dataloader", 4, 10, 2, 9, "x.T", "y.T", "col_major=False") ==
          PG_STATUS_ERR_SHAPE);
    CHECK(strcmp(pg_last_error(), "ag_dataloader: x has 10 samples (columns) but y has 9") == 0);
    CHECK_ERR(pg_check_samples(NULL, 1, 2, 1, 3, "t(x)", "t(y)", NULL), PG_STATUS_ERR_ARG, "NULL");
}

static void test_loss_rules(void)
{
    int cl = -1, pd = -1;
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_CROSS_ENTROPY, 1, &cl, &pd) == 0 && cl == 1 && pd == 1);
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_SUM, 0, &cl, &pd) == 0 && cl == 0 && pd == 0);
    CHECK(pg_fit_loss_rules(PG_FIT_LOSS_MEAN, 0, &cl, &pd) == 0 && cl == 0 && pd == 1);
    CHECK(pg_fit_loss_rules(-1, 0, &cl, &pd) == 0 && cl == 0 && pd == 1); /* a user function */
    CHECK_ERR(pg_fit_loss_rules(PG_FIT_LOSS_HUBER, 0, &cl, &pd), PG_STATUS_ERR_VALUE,
              "ag_fit: loss \"huber\" needs targets y");
    CHECK_ERR(pg_fit_loss_rules(PG_FIT_LOSS_COUNT, 1, &cl, &pd), PG_STATUS_ERR_VALUE,
              "out of range");
    CHECK_ERR(pg_fit_loss_rules(0, 1, NULL, &pd), PG_STATUS_ERR_ARG, "NULL");
}

void test_fit_val(void)
{
    test_loss_rules();
    test_row_major_guess();
    test_val_join();
    test_finite_and_fixed();
}
