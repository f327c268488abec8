/* ag_evaluate's results and the metric names of ag_fit(metrics =) (pg_api_metrics.h), assembled
 * once for R and Python from metrics.c's values: the hosts convert their values, run the model
 * and shape what this returns. */
#include <math.h>
#include <string.h>
#include "pg.h"

int64_t pg_metric_codes(const char *fn, const char *const *names, int64_t n, int classify,
                        int in_fit, int *codes)
{
    if (n < 0 || (n > 0 && (!names || !codes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL metric names or codes", fn ? fn : "?");
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const int c = pg_metric_code(fn, names[i], classify, in_fit);
        if (c < 0) return c;
        int seen = 0; /* a name given twice is one result */
        for (int64_t j = 0; j < m; j++) seen |= codes[j] == c;
        if (!seen) codes[m++] = c;
    }
    return m;
}

int64_t pg_evaluate(const char *fn, const char *loss, int has_threshold, double threshold,
                    const char *const *names, int64_t n_names, const double *out, int64_t k,
                    int64_t n, const double *y, int64_t yrows, int64_t yn, double *loss_value,
                    int *codes, double *values, int64_t *cm, int64_t cm_room)
{
    if (!fn) fn = "ag_evaluate";
    if (!loss_value) return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL loss value", fn);
    if (has_threshold && !isfinite(threshold)) /* a NaN given must not read as "none" below */
        return -pg_fail(PG_STATUS_ERR_VALUE, "%s: threshold must be a finite number, got %s", fn,
                        pg_num(threshold));
    int lcode = -1, classify = 0;
    int rc = pg_metric_read(fn, loss, has_threshold, k, n, yn, &lcode, &classify);
    const int64_t m = rc ? -rc : pg_metric_codes(fn, names, n_names, classify, 0, codes);
    if (m < 0) return m;
    *loss_value = NAN;
    if (loss && (rc = pg_metric_loss_value(fn, lcode, out, k, n, y, yrows, loss_value)))
        return -rc; /* over all samples at once, in f64 */
    for (int64_t i = 0; i < m; i++) {
        if (codes[i] != PG_METRIC_CONFUSION_MATRIX) {
            rc =
                pg_metric_value(fn, codes[i], classify, threshold, out, k, n, y, yrows, values + i);
            if (rc) return -rc;
            continue;
        }
        const int64_t c = pg_metric_nclass(classify, k); /* its side, its counts in cm */
        if (c >= 1 && (!cm || c * c > cm_room))
            return -pg_fail(PG_STATUS_ERR_ARG, "%s: room for %lld counts, %lld needed", fn,
                            (long long)cm_room, (long long)(c * c));
        if ((rc = pg_confusion_matrix(fn, classify, threshold, out, k, n, y, yrows, cm)))
            return -rc;
        values[i] = (double)c;
    }
    return m;
}
