/* ag_normalization's core (native/ops_norm.c): adapt's population statistics, the given
 * statistics' checks and texts, the op's forward and backward, the constant feature. */
#include <math.h>
#include <string.h>
#include "check.h"

static pg_tensor *mat(int64_t r, int64_t c, const double *v)
{
    return pg_tensor_new(PG_DTYPE_F64, r, c, v, PG_DTYPE_F64, 1, r);
}

void test_norm(void)
{
    /* x [2, 4] column-major: row 1 = 1, 2, 3, 6 (mean 3, var 3.5); row 2 constant 5 */
    const double xv[] = {1, 5, 2, 5, 3, 5, 6, 5};
    pg_tensor *x = mat(2, 4, xv);
    const double z[] = {0, 0}, o[] = {1, 1};
    pg_tensor *m = mat(2, 1, z), *v = mat(2, 1, o);
    CHECK(pg_normalization_adapt(x, m, v) == 0);
    double mv[2], vv[2];
    pg_tensor_read(m, mv, PG_DTYPE_F64);
    pg_tensor_read(v, vv, PG_DTYPE_F64);
    CHECK(mv[0] == 3 && mv[1] == 5 && vv[0] == 3.5 && vv[1] == 0);
    CHECK(pg_normalization_check(m, v, 2) == 0);

    /* forward: (x - mean) / max(sqrt(var), eps); the constant row maps to 0 */
    pg_tensor *y = pg_normalization(x, m, v, 1e-7);
    CHECK(y != NULL);
    double yv[8];
    pg_tensor_read(y, yv, PG_DTYPE_F64);
    CHECK(yv[0] == (1 - 3) / sqrt(3.5) && yv[6] == (6 - 3) / sqrt(3.5) && yv[1] == 0 && yv[7] == 0);
    pg_tensor_release(y);

    /* backward: dx = g / max(sqrt(var), eps) */
    pg_tensor *xp = mat(2, 4, xv);
    pg_tensor_set_requires_grad(xp, 1);
    pg_tape_begin();
    y = pg_normalization(xp, m, v, 0.5);
    pg_tensor *s = pg_sum(y, 0);
    pg_gradmap *g = pg_backward(s);
    CHECK(g != NULL);
    pg_tensor *gx = g ? pg_gradmap_get(g, xp) : NULL;
    double gv[8] = {0};
    if (gx) pg_tensor_read(gx, gv, PG_DTYPE_F64);
    CHECK(gv[0] == 1 / sqrt(3.5) && gv[1] == 1 / 0.5);
    if (g) pg_gradmap_free(g);
    pg_tensor_release(s);
    pg_tensor_release(y);
    pg_tape_clear();
    pg_tape_end();
    pg_tensor_release(xp);

    /* the checks' texts */
    const double neg[] = {1, -2}, nan2[] = {NAN, 0}, three[] = {1, 1, 1};
    pg_tensor *vn = mat(2, 1, neg), *mn = mat(2, 1, nan2), *v3 = mat(3, 1, three);
    CHECK_ERR(pg_normalization_check(m, vn, 0) != 0, PG_STATUS_ERR_VALUE,
              "ag_normalization: variance must be >= 0, got -2 at feature 2 (of 2)");
    CHECK_ERR(pg_normalization_check(mn, v, 0) != 0, PG_STATUS_ERR_VALUE,
              "ag_normalization: mean must be finite, got nan at feature 1");
    CHECK_ERR(pg_normalization_check(m, v3, 0) != 0, PG_STATUS_ERR_SHAPE,
              "ag_normalization: mean has 2 values but variance has 3");
    CHECK_ERR(pg_normalization_check(m, v, 3) != 0, PG_STATUS_ERR_SHAPE,
              "mean and variance have 2 values but x has 3 features");
    const double bad[] = {1, NAN, 2, 3};
    pg_tensor *xb = mat(2, 2, bad);
    CHECK_ERR(pg_normalization_adapt(xb, m, v) != 0, PG_STATUS_ERR_VALUE,
              "x [2x2] f64 has 1 non-finite value (NaN or Inf), the first at row 2, column 1");
    CHECK_ERR(pg_normalization(v3, m, v, 1e-7) == NULL, PG_STATUS_ERR_SHAPE,
              "ag_normalization: expected 2 features (rows), x is [3x1]");
    pg_tensor_release(xb);
    pg_tensor_release(vn);
    pg_tensor_release(mn);
    pg_tensor_release(v3);
    pg_tensor_release(m);
    pg_tensor_release(v);
    pg_tensor_release(x);
}
