/* Tensor versions and scope repair (native/pg_api_version.h): every write
 * path bumps, backward refuses a changed input / output / host input and changes nothing, an
 * exposed buffer is checked by hash, double closes are harmless. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

/* y = w x and l = sum(y), recorded between pg_tape_begin and pg_tape_end */
static void record_matmul_sum(pg_tensor *w, pg_tensor *x, pg_tensor **y, pg_tensor **l)
{
    pg_tape_begin();
    *y = pg_matmul(w, x);
    *l = pg_sum(*y, 0);
    pg_tape_end();
}

void test_versions(void)
{
    double wv[6] = {1, 2, 3, 4, 5, 6}, xv[6] = {1, 0, 2, 0, 3, 1}, z[6] = {0};
    pg_tensor *w = pg_tensor_new(PG_DTYPE_F64, 2, 3, wv, PG_DTYPE_F64, 1, 2);
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 3, 2, xv, PG_DTYPE_F64, 1, 3);
    pg_tensor_set_requires_grad(w, 1);
    CHECK(pg_tensor_version(w) == 0 && pg_tensor_version(x) == 0 && pg_tensor_version(NULL) == -1);
    CHECK(pg_tensor_write(x, xv, PG_DTYPE_F64, 3, 2, 1, 3) == 0 && pg_tensor_version(x) == 1);

    /* a write between forward and backward: refused, nothing accumulated */
    pg_tensor *y, *l;
    record_matmul_sum(w, x, &y, &l);
    CHECK(pg_tensor_write(x, z, PG_DTYPE_F64, 3, 2, 1, 3) == 0);
    CHECK_ERR(pg_backward(l) == NULL, PG_STATUS_ERR_MODIFIED,
              "[3x2] f64 (input 2 of matmul) is at version 2; expected version 1");
    CHECK(pg_tensor_grad(w) == NULL);
    REL(y);
    REL(l);

    /* an optimizer step between forward and backward: the weights' version moved */
    record_matmul_sum(w, x, &y, &l);
    pg_gradmap *m = pg_backward(l);
    CHECK(m != NULL);
    pg_tensor *p[1] = {w};
    int64_t dropped;
    pg_optim *o = pg_optim_new(0, p, 1, &dropped);
    CHECK(pg_optim_step(o, m) == 1 && pg_tensor_version(w) == 1);
    CHECK_ERR(pg_backward(l) == NULL, PG_STATUS_ERR_MODIFIED,
              "(input 1 of matmul) is at version 1; expected version 0");
    pg_gradmap_free(m);
    pg_optim_free(o);
    REL(y);
    REL(l);

    /* the loss itself overwritten: its node's output */
    pg_tape_begin();
    l = pg_sum(w, 0);
    pg_tape_end();
    double one = 1;
    CHECK(pg_tensor_write(l, &one, PG_DTYPE_F64, 1, 1, 1, 1) == 0);
    CHECK_ERR(pg_backward(l) == NULL, PG_STATUS_ERR_MODIFIED,
              "[1x1] f64 (output of sum) is at version 1; expected version 0");
    REL(l);

    /* exposed: a write behind the core's back counts once, the same bytes again not at all */
    CHECK(pg_tensor_expose(x) == 0 && pg_tensor_version(x) == 2);
    record_matmul_sum(w, x, &y, &l);
    ((double *)pg_tensor_data(x))[0] = 9;
    CHECK(pg_tensor_version(x) == 3 && pg_tensor_version(x) == 3);
    CHECK_ERR(pg_backward(l) == NULL, PG_STATUS_ERR_MODIFIED,
              "is at version 3; expected version 2");
    REL(y);
    REL(l);
    record_matmul_sum(w, x, &y, &l);
    ((double *)pg_tensor_data(x))[0] = 9;
    m = pg_backward(l);
    CHECK(m != NULL);
    pg_gradmap_free(m);
    REL(y);
    REL(l);
    pg_tensor_set_grad(w, NULL);

    /* batch norm applied twice: its running buffers move in between, backward is fine */
    pg_tensor *rm = pg_tensor_full(PG_DTYPE_F64, 2, 1, 0),
              *rv = pg_tensor_full(PG_DTYPE_F64, 2, 1, 1);
    pg_tape_begin();
    pg_tensor *b1 = pg_batch_norm(w, NULL, NULL, rm, rv, 1e-5, 0.1, 1);
    pg_tensor *b2 = pg_batch_norm(b1, NULL, NULL, rm, rv, 1e-5, 0.1, 1);
    l = pg_sum(b2, 0);
    pg_tape_end();
    CHECK(pg_tensor_version(rm) == 2);
    m = pg_backward(l);
    CHECK(m != NULL);
    pg_gradmap_free(m);
    REL(b1);
    REL(b2);
    REL(l);
    REL(rm);
    REL(rv);
    pg_tensor_set_grad(w, NULL);

    /* scope repair: closes to a depth, twice is harmless; stashes likewise */
    CHECK(pg_tape_begin() == 0 && pg_tape_begin() == 0 && pg_tape_depth() == 2);
    CHECK(pg_tape_end_to(1) == 1 && pg_tape_end_to(0) == 0 && pg_tape_end_to(0) == 0 &&
          !pg_tape_enabled());
    CHECK(pg_tape_stash() == 0 && pg_tape_stash() == 0 && pg_tape_stash_depth() == 2);
    CHECK(pg_tape_unstash_to(0) == 0 && pg_tape_stash_depth() == 0 && pg_tape_unstash_to(0) == 0);
    pg_tape_clear();
    REL(w);
    REL(x);
}

/* views: hashed while any is alive; the last one's writes still count when it goes */
void test_views(void)
{
    double v[2] = {1, 2};
    pg_tensor *t = pg_tensor_new(PG_DTYPE_F64, 2, 1, v, PG_DTYPE_F64, 1, 2);
    CHECK(pg_tensor_expose(t) == 0 && pg_tensor_expose(t) == 0);
    ((double *)pg_tensor_data(t))[1] = 5;
    CHECK(pg_tensor_unexpose(t) == 0 && pg_tensor_version(t) == 1);
    ((double *)pg_tensor_data(t))[1] = 6;
    CHECK(pg_tensor_unexpose(t) == 0 && pg_tensor_version(t) == 2);
    ((double *)pg_tensor_data(t))[1] = 7; /* no view left: a raw C write is the caller's to bump */
    CHECK(pg_tensor_version(t) == 2 && pg_tensor_unexpose(t) == 0);
    REL(t);
}
