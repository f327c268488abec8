/* Rules both front ends wrote and now call once (issue 29): whole-number ids
 * (pg_arg_whole_ids), dp_train's verbose (pg_arg_clamp), ag_linear's gain (pg_arg_gain), ag_gather's
 * index (pg_gather_f64). */
#include <math.h>
#include <string.h>
#include "check.h"

#define IDS_TEXT "ag_embedding: ids must be whole numbers (0-based), got non-integer values"

void test_arg_rules(void)
{
    /* whole-number ids: NaN (R's NA), +/-Inf and fractions refused, alike; the range is not ours */
    const double ok[] = {0, 3, -1, 1e300, 2147483648.0, -0.0};
    CHECK(pg_arg_whole_ids("ag_embedding", "ids", ok, 6) == 0);
    CHECK(pg_arg_whole_ids("ag_embedding", "ids", NULL, 0) == 0); /* empty */
    const double no[] = {NAN, INFINITY, -INFINITY, 2.5, -0.5, 1e-300};
    for (int i = 0; i < 6; i++) {
        const double v[3] = {0, no[i], 1};
        CHECK_ERR(pg_arg_whole_ids("ag_embedding", "ids", v, 3) != 0, PG_STATUS_ERR_VALUE,
                  IDS_TEXT);
    }
    pg_clear_error();
    CHECK(pg_arg_whole_ids("f", "class ids", no + 3, 1) == PG_STATUS_ERR_VALUE);
    CHECK(strcmp(pg_last_error(),
                 "f: class ids must be whole numbers (0-based), got non-integer values") == 0);
    CHECK_ERR(pg_arg_whole_ids("f", "ids", NULL, 2) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_arg_whole_ids(NULL, "ids", ok, 1) != 0, PG_STATUS_ERR_ARG, "NULL");

    /* dp_train's verbose: finite, clamped to [0, INT_MAX], truncated */
    const double imax = 2147483647.0;
    const char *rule = "TRUE/FALSE or an integer";
    double out = -1;
    const double in[][2] = {
        {10, 10},    {2.9, 2},    {-0.5, 0}, {-3, 0}, {0, 0}, {1e300, imax}, {2147483648.0, imax},
        {-1e300, 0}, {imax, imax}};
    for (int i = 0; i < 9; i++) {
        out = -1;
        CHECK(pg_arg_clamp("dp_train", "verbose", in[i][0], 0, imax, rule, "v", 0, &out) == 0);
        CHECK(out == in[i][1] && !signbit(out));
    }
    const double bad[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++) {
        out = 7;
        CHECK_ERR(pg_arg_clamp("dp_train", "verbose", bad[i], 0, imax, rule, "Inf", 0, &out) != 0,
                  PG_STATUS_ERR_VALUE,
                  "dp_train: verbose must be TRUE/FALSE or an integer, got Inf");
        CHECK(out == 7); /* untouched on failure */
    }
    CHECK_ERR(pg_arg_clamp("dp_train", "verbose", 1, 0, imax, rule, "\"x\"", 1, &out) != 0,
              PG_STATUS_ERR_ARG, "dp_train: verbose must be TRUE/FALSE or an integer, got \"x\"");
    CHECK_ERR(pg_arg_clamp("f", "v", 1, 0, 1, NULL, "1", 0, &out) != 0, PG_STATUS_ERR_ARG, "NULL");

    /* ag_linear's gain: one finite number; the wrong kind a bad value too (ggmlR's stop) */
    const double gains[] = {1, 0, -2.5, 1e300, -1e300};
    for (int i = 0; i < 5; i++) CHECK(pg_arg_gain("ag_linear", gains[i], 0) == 0);
    const double nogain[] = {NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++)
        CHECK_ERR(pg_arg_gain("ag_linear", nogain[i], 0) != 0, PG_STATUS_ERR_VALUE,
                  "ag_linear: gain must be a single finite number");
    CHECK_ERR(pg_arg_gain("ag_linear", 1, 1) != 0, PG_STATUS_ERR_VALUE,
              "ag_linear: gain must be a single finite number");
    CHECK_ERR(pg_arg_gain(NULL, 1, 0) != 0, PG_STATUS_ERR_ARG, "NULL");
    double w[6];
    CHECK_ERR(pg_rng_orthogonal(NULL, 3, 2, NAN, w) != 0, PG_STATUS_ERR_VALUE,
              "ag_linear: gain must be a single finite number"); /* the same rule */
}

void test_gather_index(void)
{
    double xv[6] = {1, 2, 3, 4, 5, 6}; /* [3x2] */
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 3, 2, xv, PG_DTYPE_F64, 1, 3);
    const double idx[2] = {2, -0.0};
    pg_tensor *y = pg_gather_f64(x, idx, 2);
    double o[2] = {0};
    CHECK(y && pg_tensor_nrow(y) == 1 && pg_tensor_ncol(y) == 2);
    if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
    CHECK(o[0] == 3 && o[1] == 4);
    REL(y);
    /* ggmlR's order: the length, NA, whole numbers (over the whole index), the range */
    const double nan_late[3] = {0.5, 9, NAN}, frac[2] = {INFINITY, 0.5}, inf[2] = {0, INFINITY},
                 ninf[2] = {-INFINITY, 0}, huge[2] = {1e300, 0}, big[2] = {0, 2147483648.0},
                 neg[2] = {0, -1}, out3[2] = {3, 0}, nfrac[2] = {-0.5, 0};
    CHECK_ERR(pg_gather_f64(x, nan_late, 3) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_gather: index has length 3, x has 2 columns");
    CHECK_ERR(pg_gather_f64(x, nan_late + 1, 2) == NULL, PG_STATUS_ERR_VALUE,
              "ag_gather: index contains NA");
    CHECK_ERR(pg_gather_f64(x, frac, 2) == NULL, PG_STATUS_ERR_VALUE,
              "ag_gather: index must be whole numbers (0-based)");
    CHECK_ERR(pg_gather_f64(x, nfrac, 2) == NULL, PG_STATUS_ERR_VALUE,
              "ag_gather: index must be whole numbers (0-based)");
    const double *range[] = {inf, ninf, huge, big, neg, out3};
    for (int i = 0; i < 6; i++)
        CHECK_ERR(pg_gather_f64(x, range[i], 2) == NULL, PG_STATUS_ERR_VALUE,
                  "ag_gather: index out of range 0..2 (indices are 0-based)");
    CHECK_ERR(pg_gather_f64(x, NULL, 2) == NULL, PG_STATUS_ERR_ARG, "ag_gather: index is NULL");
    CHECK_ERR(pg_gather_f64(NULL, idx, 2) == NULL, PG_STATUS_ERR_ARG, "ag_gather");
    REL(x);
    /* an empty index for a tensor with no columns; a tensor with no rows has no index in range */
    pg_tensor *e = pg_tensor_new(PG_DTYPE_F64, 3, 0, NULL, PG_DTYPE_F64, 1, 3);
    y = e ? pg_gather_f64(e, NULL, 0) : NULL;
    CHECK(y && pg_tensor_nrow(y) == 1 && pg_tensor_ncol(y) == 0);
    REL(y);
    REL(e);
    pg_tensor *z = pg_tensor_new(PG_DTYPE_F64, 0, 2, NULL, PG_DTYPE_F64, 1, 0);
    CHECK_ERR(pg_gather_f64(z, idx, 2) == NULL, PG_STATUS_ERR_VALUE,
              "ag_gather: index out of range 0..-1 (indices are 0-based)");
    REL(z);
}
