/* Issue 19, "nothing lost": the optimizer loaders check every value before
 * any write (Adam's v >= 0, the f32 range, counts; check_only writes nothing), pg_values_fit, and
 * the writer through a symlink (the link stays, the target's mode is kept), a device refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"

static void slot_values(pg_optim *o, int64_t i, int s, double *out)
{
    pg_tensor *t = pg_optim_state(o, i, s);
    if (t) pg_tensor_read(t, out, PG_DTYPE_F64);
    else out[0] = -12345;
}

void test_lost(void)
{
    pg_tensor *p = rnd(PG_DTYPE_F32, 2, 2, 0), *q = rnd(PG_DTYPE_F64, 1, 2, 0);
    pg_tensor *ps[2] = {p, q};
    pg_optim *o = pg_optim_new(1, ps, 2, NULL);
    double m0[4] = {1, 2, 3, 4}, v0[4] = {1, 1, 1, 1}, mq[2] = {5, 6}, vq[2] = {0, 2};
    const double *good[4] = {m0, mq, v0, vq};
    CHECK(pg_optim_load(o, good, 4, 3, 0) == 0 && pg_optim_get(o, "t") == 3);
    double neg[4] = {1, 1, -1e-3, 1}, big[4] = {1, 4e38, 1, 1}, got[4];
    const double *bad_v[4] = {m0, mq, neg, vq}, *bad_f32[4] = {big, mq, v0, vq};
    CHECK_ERR(pg_optim_load(o, bad_v, 4, 9, 0) != 0, PG_STATUS_ERR_VALUE,
              "second moments must be >= 0");
    CHECK_ERR(pg_optim_load(o, bad_f32, 4, 9, 0) != 0, PG_STATUS_ERR_VALUE,
              "outside the f32 range");
    CHECK_ERR(pg_optim_load(o, good, 4, NAN, 0) != 0, PG_STATUS_ERR_VALUE, "not counts");
    double f64big[2] = {4e38, 1}; /* the f64 parameter holds it */
    const double *ok64[4] = {m0, f64big, v0, vq};
    slot_values(o, 0, 1, got);
    CHECK(got[0] == 1 && pg_optim_get(o, "t") == 3); /* the refusals changed nothing */
    /* the model-file layout: parameter-major, 3 slots each (m, v, accumulator), NULL = empty */
    const double *file[6] = {m0, neg, NULL, mq, vq, NULL};
    CHECK_ERR(pg_optim_load_file(o, file, 6, 7, 0, 0) != 0, PG_STATUS_ERR_VALUE,
              "slot 'v' of parameter 1");
    file[1] = v0;
    CHECK(pg_optim_load_file(o, file, 6, 7, 0, 1) == 0 &&
          pg_optim_get(o, "t") == 3); /* check_only */
    CHECK_ERR(pg_optim_load_file(o, file, 5, 7, 0, 0) != 0, PG_STATUS_ERR_ARG, "slot values");
    const double *file2[6] = {NULL, v0, NULL, mq, vq, NULL};
    CHECK(pg_optim_load_file(o, file2, 6, 7, 1, 0) == 0 && pg_optim_get(o, "t") == 7 &&
          pg_optim_get(o, "accum_count") == 1);
    CHECK(pg_optim_state(o, 0, 0) == NULL);
    CHECK(pg_optim_load(o, ok64, 4, 1, 0) == 0);
    pg_optim_free(o);
    CHECK(pg_values_fit(big, 4, PG_DTYPE_F64, "x") == 0);
    CHECK_ERR(pg_values_fit(big, 4, PG_DTYPE_F32, "tensor 'w'") != 0, PG_STATUS_ERR_VALUE,
              "tensor 'w' holds 4e+38 (element 2)");
    double inf[1] = {INFINITY};
    CHECK(pg_values_fit(inf, 1, PG_DTYPE_F32, "x") ==
          0); /* non-finite values are the callers' own check */
    REL(p);
    REL(q);

    /* the writer through a symlink, a relative one and a dangling one */
    char dir[] = "/tmp/pg-lost-XXXXXX", target[300], link[300], made[300];
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    snprintf(target, sizeof target, "%s/real.st", dir);
    snprintf(link, sizeof link, "%s/link.st", dir);
    float a[2] = {1, 2};
    pg_st_tensor t[1] = {{"w", PG_ST_DTYPE_F32, 1, 2, 1, a}};
    CHECK(pg_st_write(target, t, 1, NULL, NULL, 0) == 0);
    CHECK(chmod(target, 0640) == 0 && symlink("real.st", link) == 0);
    a[0] = 7;
    CHECK(pg_st_write(link, t, 1, NULL, NULL, 0) == 0);
    struct stat ls, ts;
    CHECK(lstat(link, &ls) == 0 && S_ISLNK(ls.st_mode) && stat(target, &ts) == 0 &&
          (ts.st_mode & 07777) == 0640);
    pg_st_file *f = NULL;
    float back[2] = {0, 0};
    CHECK(pg_st_open(target, &f) == 0 && pg_st_read(f, 0, back, 8) == 0 && back[0] == 7);
    pg_st_close(f);
    snprintf(link, sizeof link, "%s/dangling.st", dir);
    snprintf(made, sizeof made, "%s/made.st", dir);
    CHECK(symlink("made.st", link) == 0 && pg_st_write(link, t, 1, NULL, NULL, 0) == 0);
    CHECK(lstat(link, &ls) == 0 && S_ISLNK(ls.st_mode) && stat(made, &ts) == 0 &&
          S_ISREG(ts.st_mode));
    unlink(link);
    unlink(made);
    unlink(target);
    snprintf(link, sizeof link, "%s/link.st", dir);
    unlink(link);
    rmdir(dir);
    f = (pg_st_file *)1;
    CHECK_ERR(pg_st_open("/dev/zero", &f) != 0 && f == NULL, PG_STATUS_ERR_VALUE,
              "not a regular file");
}
