/* ag_fit's validation_data, keras style (pg_api_train.h): the rules on the shapes and on
 * val_split, one text in both languages; the host appends the columns (its own arrays). */
#include <math.h>
#include <stdio.h>
#include "pg.h"

static const char *OP = "ag_fit";

int pg_fit_val_join(const int64_t *x, const int64_t *y, const int64_t *xv, const int64_t *yv,
                    double val_split, double *val_split_out)
{
    if (!x || !xv || !val_split_out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL shape", OP);
    if (val_split != 0) /* NaN too: only an exact 0 means "not given" */
        return pg_fail(PG_STATUS_ERR_ARG, "%s: give either val_split or validation_data, not both",
                       OP);
    if (!y != !yv)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: validation_data needs targets exactly when the training data have "
                       "them (training y %s, validation y %s)",
                       OP, y ? "given" : "absent", yv ? "given" : "absent");
    if (xv[0] != x[0])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: validation_data x has %lld features (rows), x has %lld", OP,
                       (long long)xv[0], (long long)x[0]);
    if (y && yv[1] != xv[1])
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: validation_data x has %lld samples (columns) but y has %lld", OP,
                       (long long)xv[1], (long long)yv[1]);
    if (y && yv[0] != y[0])
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: validation_data y has %lld rows, y has %lld", OP,
                       (long long)yv[0], (long long)y[0]);
    if (y && y[1] != x[1])
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples (columns) but y has %lld", OP,
                       (long long)x[1], (long long)y[1]);
    if (xv[1] < 1 || x[1] < 1)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: validation_data and x need at least one sample each, got %lld and %lld",
                       OP, (long long)xv[1], (long long)x[1]);
    /* the plan holds out round(val_split * total) = xv's columns, at the end */
    *val_split_out = (double)xv[1] / (double)(x[1] + xv[1]);
    return 0;
}

int pg_fit_check_finite(const pg_tensor *t, const char *what, int64_t n_main)
{
    const int64_t rows = t->ne[0], cols = t->ne[1];
    int64_t bad = 0, first = -1;
    PG_DISPATCH(t->dtype, {
        const T *v = pg_data(t);
        for (int64_t i = 0; i < rows * cols; i++)
            if (!isfinite(v[i]) && bad++ == 0) first = i;
    });
    if (!bad) return 0;
    int64_t r = first % rows + 1, c = first / rows + 1;
    const int val = c > n_main;
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: %s%s has %lld non-finite value%s (NaN or Inf), the first at row %lld, "
                   "column %lld; give finite data (remove or impute those samples)",
                   OP, val ? "validation_data " : "", what, (long long)bad, bad > 1 ? "s" : "",
                   (long long)r, (long long)(val ? c - n_main : c));
}

int pg_row_major_guess(int64_t xr, int64_t xc, int64_t yr, int64_t yc)
{
    if (xr == yc) return PG_ROW_MAJOR_X;
    if (yr == xc && yr != yc) return PG_ROW_MAJOR_Y;
    if (xr == yr) return PG_ROW_MAJOR_BOTH;
    return PG_ROW_MAJOR_NONE;
}

int pg_check_samples(const char *fn, int64_t xr, int64_t xc, int64_t yr, int64_t yc, const char *tx,
                     const char *ty, const char *both)
{
    if (xc == yc) return 0;
    if (!fn || !tx || !ty)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL name or transpose spellings", fn ? fn : OP);
    const int g = pg_row_major_guess(xr, xc, yr, yc);
    const char *how = "pyggmlr data are [features, samples] with one column per sample, so pass";
    char fix[160];
    if (g == PG_ROW_MAJOR_BOTH && both) /* fn's own argument transposes both */
        snprintf(fix, sizeof fix, "%s", both);
    else if (g == PG_ROW_MAJOR_BOTH) snprintf(fix, sizeof fix, "%s and %s", tx, ty);
    else if (g == PG_ROW_MAJOR_X && both) /* it transposes x (and a 2-D y: a 1-D y stays) */
        snprintf(fix, sizeof fix, "%s (x and a 2-D y are transposed) or %s", both, tx);
    else snprintf(fix, sizeof fix, "%s", g == PG_ROW_MAJOR_X ? tx : ty);
    char hint[320] = "";
    if (g == PG_ROW_MAJOR_BOTH)
        snprintf(hint, sizeof hint,
                 "; x and y look row-major (%lld rows each, one per sample): %s %s", (long long)xr,
                 how, fix);
    else if (g)
        snprintf(hint, sizeof hint, "; %s looks row-major (%lld rows, one per sample): %s %s",
                 g == PG_ROW_MAJOR_X ? "x" : "y", (long long)(g == PG_ROW_MAJOR_X ? xr : yr), how,
                 fix);
    return pg_fail(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples (columns) but y has %lld%s", fn,
                   (long long)xc, (long long)yc, hint);
}

int pg_fit_check_samples(int64_t xr, int64_t xc, int64_t yr, int64_t yc, const char *tx,
                         const char *ty)
{
    return pg_check_samples(OP, xr, xc, yr, yc, tx, ty, NULL);
}
