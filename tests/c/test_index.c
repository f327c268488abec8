/* Indexing (native/ops_index.c): pg_take's forward, its scatter-add
 * backward (repeated positions add up) checked by central differences, and its refusals. */
#include <string.h>
#include "check.h"

static pg_tensor *f_take(pg_tensor **in, const void *c)
{
    (void)c;
    static const int64_t pos[6] = {5, 0, 11, 5, 7, 5}; /* a [3x2] pick from a [3x4], repeats */
    return pg_take(in[0], pos, 6, 3, 2);
}

void test_index(void)
{
    for (int dt = PG_DTYPE_F32; dt <= PG_DTYPE_F64; dt++) {
        int64_t s34[] = {3, 4};
        gradcheck("take", f_take, NULL, 1, s34, 0, 1, dt);
    }
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i + 1;
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 3, 4, v, PG_DTYPE_F64, 1, 3);
    const int64_t pos[3] = {11, 0, 4}, bad[1] = {12}, neg[1] = {-1};
    pg_tensor *y = pg_take(x, pos, 3, 1, 3);
    CHECK(y && pg_tensor_nrow(y) == 1 && pg_tensor_ncol(y) == 3);
    double o[3] = {0};
    if (y) pg_tensor_read(y, o, PG_DTYPE_F64);
    CHECK(o[0] == 12 && o[1] == 1 && o[2] == 5);
    REL(y);
    y = pg_take(x, NULL, 0, 0, 4); /* an empty pick */
    CHECK(y && pg_tensor_nrow(y) == 0 && pg_tensor_ncol(y) == 4);
    REL(y);
    CHECK_ERR(pg_take(x, bad, 1, 1, 1) == NULL, PG_STATUS_ERR_VALUE, "out of range 0..11");
    CHECK_ERR(pg_take(x, neg, 1, 1, 1) == NULL, PG_STATUS_ERR_VALUE, "position -1");
    CHECK_ERR(pg_take(x, pos, 3, 2, 2) == NULL, PG_STATUS_ERR_SHAPE,
              "3 positions for a [2x2] result");
    CHECK_ERR(pg_take(x, NULL, 2, 1, 2) == NULL, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_take(NULL, pos, 1, 1, 1) == NULL, PG_STATUS_ERR_ARG, "indexing");
    REL(x);
}
