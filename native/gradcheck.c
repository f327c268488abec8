/* ag_gradcheck's arithmetic (pg_api_gradcheck.h): the step, the difference quotient and the
 * pass rule, one definition for R and Python. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include "pg.h"

static int check_dtype(int dtype)
{
    return (dtype == PG_DTYPE_F32 || dtype == PG_DTYPE_F64)
        ? 0
        : pg_fail(PG_STATUS_ERR_DTYPE, "ag_gradcheck: dtype must be f32 or f64, got code %d",
                  dtype);
}

int pg_gradcheck_defaults(int dtype, double *eps, double *atol, double *rtol)
{
    if (check_dtype(dtype)) return -1;
    if (!eps || !atol || !rtol)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_gradcheck: NULL output pointer");
    *eps = dtype == PG_DTYPE_F64 ? 1e-5 : 5e-3;
    *atol = dtype == PG_DTYPE_F64 ? 1e-4 : 1e-3;
    *rtol = dtype == PG_DTYPE_F64 ? 0.0 : 1e-2;
    return 0;
}

static double stored(int dtype, double v) { return dtype == PG_DTYPE_F32 ? (double)(float)v : v; }

int pg_gradcheck_points(int dtype, double x0, double eps, double *xp, double *xm)
{
    if (check_dtype(dtype)) return -1;
    if (!xp || !xm) return pg_fail(PG_STATUS_ERR_ARG, "ag_gradcheck: NULL output pointer");
    if (!(eps > 0) || !isfinite(eps))
        return pg_fail(PG_STATUS_ERR_VALUE, "ag_gradcheck: eps must be a finite number > 0, got %s",
                       pg_num(eps));
    *xp = stored(dtype, x0 + eps);
    *xm = stored(dtype, x0 - eps);
    if (!(*xp > *xm))
        return pg_fail(
            PG_STATUS_ERR_VALUE,
            "ag_gradcheck: eps = %s is below the resolution of %s at %s; use a larger eps",
            pg_num(eps), dtype == PG_DTYPE_F32 ? "f32" : "f64", pg_num(x0));
    return 0;
}

int pg_gradcheck_judge(int dtype, const double *a, const double *fp, const double *fm,
                       const double *xp, const double *xm, int64_t n, double atol, double rtol,
                       double *num, double *max_err)
{
    if (check_dtype(dtype)) return -1;
    if (n < 0 || (n > 0 && (!fp || !fm || !xp || !xm || !num)) || !max_err)
        return -pg_fail(PG_STATUS_ERR_ARG, "ag_gradcheck: NULL array or negative count");
    if (!(atol >= 0) || !(rtol >= 0))
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "ag_gradcheck: atol and rtol must be >= 0, got %s and %s", pg_num(atol),
                        pg_num(rtol));
    const double u = dtype == PG_DTYPE_F32 ? 0x1p-24 : 0x1p-53;
    int pass = a != NULL;
    double worst = a ? 0.0 : INFINITY;
    for (int64_t i = 0; i < n; i++) {
        const double h = xp[i] - xm[i];
        num[i] = (fp[i] - fm[i]) / h;
        if (!a) continue;
        const double d = fabs(a[i] - num[i]);
        const double tol = atol + rtol * fabs(num[i]) + 32 * u * (fabs(fp[i]) + fabs(fm[i])) / h;
        if (!(d <= tol)) pass = 0;
        if (!isnan(worst) && (isnan(d) || d > worst)) worst = d; /* a NaN stays in max_err */
    }
    *max_err = worst;
    return pass;
}
