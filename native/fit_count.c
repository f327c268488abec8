/* ag_fit's counts that need no plan (pg_api_train.h): correct predictions over raw outputs and
 * the number of batches, one rule and one text for both languages. */
#include <math.h>
#include <stdio.h>
#include "pg.h"

int pg_accuracy_count(const double *out, int64_t classes, int64_t n, const double *y, int64_t krows,
                      int64_t *ncorrect)
{
    static const char *F = "ag_accuracy";
    if (!ncorrect || (n > 0 && (!out || !y)))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL output, targets or count", F);
    if (classes < 1 || n < 0 || (krows != 1 && krows != classes))
        return pg_fail(
            PG_STATUS_ERR_SHAPE,
            "%s: the model's output is [%lldx%lld] but y has %lld rows: give one class id per "
            "column or a one-hot matrix of the output's shape",
            F, (long long)classes, (long long)n, (long long)krows);
    int64_t hit = 0;
    for (int64_t j = 0; j < n; j++) {
        const double *o = out + j * classes, *t = y + j * krows;
        int64_t am = 0, lab = 0;
        for (int64_t c = 1; c < classes; c++)
            if (o[c] > o[am]) am = c; /* the first maximum, as which.max */
        if (krows == 1) { /* class ids: whole numbers in [0, classes), never silently "wrong" */
            if (!(t[0] >= 0 && t[0] < (double)classes && t[0] == floor(t[0]))) {
                char b[40];
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: y must be 0-based class ids in [0, %lld) (the model has %lld "
                               "outputs), got %s at position %lld",
                               F, (long long)classes, (long long)classes,
                               pg_fmt_num(b, sizeof b, t[0]), (long long)(j + pg_index_base()));
            }
            lab = (int64_t)t[0];
        } else {
            for (int64_t c = 1; c < classes; c++)
                if (t[c] > t[lab]) lab = c;
        }
        hit += am == lab;
    }
    *ncorrect = hit;
    return 0;
}

int pg_accuracy(const char *fn, const double *out, int64_t k, int64_t n, const double *y,
                int64_t yrows, int64_t yn, int has_threshold, double threshold, int bools,
                double *acc)
{
    if (!fn || !acc) return pg_fail(PG_STATUS_ERR_ARG, "pg_accuracy(): NULL name or result");
    if (yn != n)
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples but y has %lld", fn,
                       (long long)n, (long long)yn);
    int64_t hit = 0, nd = n;
    int rc;
    if (has_threshold || k == 1) /* binary / multi-label: keras' binary_accuracy */
        rc = pg_binary_count(fn, out, k, n, y, yrows, has_threshold ? threshold : 0.5, &hit, &nd);
    else if (bools && yrows == 1)
        rc = pg_fail(PG_STATUS_ERR_ARG,
                     "%s: y must be 0-based class ids or a one-hot matrix, got booleans", fn);
    else rc = pg_accuracy_count(out, k, n, y, yrows, &hit);
    if (rc) return rc;
    *acc = (double)hit / (double)nd;
    return 0;
}

int64_t pg_batch_count(const char *fn, int64_t n, int64_t batch_size, int drop_last)
{
    if (n < 0 || batch_size < 1)
        return -pg_fail(PG_STATUS_ERR_VALUE,
                        "%s: batches of %lld over %lld samples: batch_size must be >= 1", fn,
                        (long long)batch_size, (long long)n);
    return drop_last ? n / batch_size : (n + batch_size - 1) / batch_size;
}
