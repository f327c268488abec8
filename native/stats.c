/* Training statistics reported per epoch (ggml_opt_result_loss, ggml_opt_result_accuracy) for
 * pg_fit_epoch_end (fit.c): computed here once, so R's and Python's histories agree to the bit. */
#include <math.h>
#include "pg.h"

int pg_loss_stats(const double *v, const double *w, int64_t n, int per_datapoint, double *loss,
                  double *unc)
{
    if (!loss || !unc) return pg_fail(PG_STATUS_ERR_ARG, "loss statistics: NULL output");
    *loss = *unc = NAN;
    if (n <= 0) return 0;
    if (!v || !w) return pg_fail(PG_STATUS_ERR_ARG, "loss statistics: NULL values or weights");
    double sw = 0, swv = 0, s = 0, s2 = 0; /* one pass, in order */
    for (int64_t i = 0; i < n; i++) {
        swv += v[i] * w[i];
        sw += w[i];
        s += v[i];
        s2 += v[i] * v[i];
    }
    *loss = per_datapoint ? swv / sw : s;
    if (n < 2) return 0;
    double m = s / (double)n;
    double var = s2 / (double)n - m * m;
    if (var < 0) var = 0;
    *unc = per_datapoint ? sqrt(var / (double)(n - 1)) : sqrt(var * (double)n / (double)(n - 1));
    return 0;
}

int pg_acc_stats(int64_t ncorrect, int64_t ndata, double *acc, double *unc)
{
    if (!acc || !unc) return pg_fail(PG_STATUS_ERR_ARG, "accuracy statistics: NULL output");
    *acc = *unc = NAN;
    if (ndata <= 0) return 0;
    const double a = (double)ncorrect / (double)ndata;
    *acc = a;
    if (ndata >= 2) *unc = sqrt(a * (1 - a) / (double)(ndata - 1));
    return 0;
}
