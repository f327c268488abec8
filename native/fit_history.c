/* ag_fit's History table, once for both front ends (Python's repr / table(), R's print): the
 * same columns, widths and number formats, so a run prints alike in either language. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

/* the separator's width on screen: its UTF-8 code points (" ± " is 3, " +- " 4) */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

/* "  0.12345 ± 0.00123" (9 + pm + 7 wide), "-" when not measured */
static void pm_cell(pg_text *b, double v, double u, const char *pm, int w)
{
    if (isnan(v)) pg_text_put(b, "  %*s", w, "-");
    else if (isnan(u)) pg_text_put(b, "  %9.5f%*s", v, w - 9, "");
    else pg_text_put(b, "  %9.5f%s%-7.5f", v, pm, u);
}

/* " 93.33% ±  1.20%" (7 + pm + 6 wide) */
static void pct_cell(pg_text *b, double v, double u, const char *pm, int w)
{
    if (isnan(v)) pg_text_put(b, "  %*s", w, "-");
    else pg_text_put(b, "  %6.2f%%%s%5.2f%%", 100 * v, pm, 100 * (isnan(u) ? 0 : u));
}

/* a duration as keras prints it, so a short epoch is not "0.00s": "850us" below a millisecond,
 * "12ms" below a second, "1.23s" below a minute, then "2m 05s" and "1h 02m 05s"; "-" when not
 * measured. Each unit is used while the value rounds below the next one ("999.7ms" -> "1.00s"). */
static void put_time(pg_text *b, const char *fmt, double s)
{
    char t[32];
    if (!isfinite(s) || s < 0) snprintf(t, sizeof t, "-");
    else if (s * 1e6 < 999.5) snprintf(t, sizeof t, "%.0fus", s * 1e6);
    else if (s * 1e3 < 999.5) snprintf(t, sizeof t, "%.0fms", s * 1e3);
    else if (s < 59.995) snprintf(t, sizeof t, "%.2fs", s);
    else if (s < 3599.5) {
        long long r = llround(s);
        snprintf(t, sizeof t, "%lldm %02llds", r / 60, r % 60);
    } else {
        long long r = s < 1e15 ? llround(s) : 999999999999999LL;
        snprintf(t, sizeof t, "%lldh %02lldm %02llds", r / 3600, r / 60 % 60, r % 60);
    }
    pg_text_put(b, fmt, t);
}

static int any(const double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isnan(v[i])) return 1;
    return 0;
}

int64_t pg_fit_history_format(const char *name, const double *epoch, const double *logs, int64_t n,
                              double stopped_epoch, double best_epoch, const char *pm, char *out,
                              int64_t cap)
{
    if (n < 0 || (n > 0 && (!epoch || !logs)) || !pm || cap < 0 || (cap > 0 && !out))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_fit_history_format(): bad arguments");
    pg_text b = {out, cap, 0};
#define COL(k) (logs + (int64_t)(k)*n)
    if (name) {
        if (n == 0) pg_text_put(&b, "<%s: no epochs>", name);
        else pg_text_put(&b, "<%s: %lld epoch%s", name, (long long)n, n == 1 ? "" : "s");
        if (n > 0 && stopped_epoch > 0 && stopped_epoch < 1e15) /* NaN, Inf: none */
            pg_text_put(&b, ", stopped at epoch %.0f", stopped_epoch);
        if (n > 0) pg_text_put(&b, ">\n");
    }
    if (n > 0) {
        int val = any(COL(PG_FIT_LOG_VAL_LOSS), n), acc = any(COL(PG_FIT_LOG_ACCURACY), n);
        int wl = 9 + width(pm) + 7, wa = 7 + width(pm) + 6; /* headers as wide as the cells */
        pg_text_put(&b, "%5s  %*s", "epoch", wl, "loss");
        if (acc) pg_text_put(&b, "  %*s", wa, "accuracy");
        if (val) pg_text_put(&b, "  %*s", wl, "val_loss");
        if (val && acc) pg_text_put(&b, "  %*s", wa, "val_accuracy");
        pg_text_put(&b, "  %7s", "time");
        for (int64_t i = 0; i < n; i++) {
            if (isfinite(epoch[i])) pg_text_put(&b, "\n%5.0f", epoch[i]);
            else pg_text_put(&b, "\n%5s", "-");
            pm_cell(&b, COL(PG_FIT_LOG_LOSS)[i], COL(PG_FIT_LOG_LOSS_UNC)[i], pm, wl);
            if (acc)
                pct_cell(&b, COL(PG_FIT_LOG_ACCURACY)[i], COL(PG_FIT_LOG_ACCURACY_UNC)[i], pm, wa);
            if (val)
                pm_cell(&b, COL(PG_FIT_LOG_VAL_LOSS)[i], COL(PG_FIT_LOG_VAL_LOSS_UNC)[i], pm, wl);
            if (val && acc)
                pct_cell(&b, COL(PG_FIT_LOG_VAL_ACCURACY)[i], COL(PG_FIT_LOG_VAL_ACCURACY_UNC)[i],
                         pm, wa);
            put_time(&b, "  %7s", COL(PG_FIT_LOG_TIME_TRAIN)[i] + COL(PG_FIT_LOG_TIME_VAL)[i]);
        }
        if (name && best_epoch > 0 && best_epoch < 1e15)
            pg_text_put(&b, "\nbest epoch: %.0f", best_epoch);
    }
#undef COL
    if (cap > 0) out[b.len < cap ? b.len : cap - 1] = '\0';
    return b.len;
}

int64_t pg_fit_epoch_line(const double *logs, int64_t epoch, int64_t nepoch, char *buf, int64_t cap)
{
    if (!logs || cap < 0 || (buf && cap < 1))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_epoch_line(): bad arguments");
    pg_text t = {buf, cap, 0};
    if (buf) buf[0] = 0;
    pg_text_put(&t, "epoch %4lld/%lld  ", (long long)epoch, (long long)nepoch);
    pg_text_put(&t, "loss=%.5f", logs[PG_FIT_LOG_LOSS]);
    if (!isnan(logs[PG_FIT_LOG_ACCURACY])) pg_text_put(&t, "  acc=%.4f", logs[PG_FIT_LOG_ACCURACY]);
    if (!isnan(logs[PG_FIT_LOG_VAL_LOSS]))
        pg_text_put(&t, "  val_loss=%.5f", logs[PG_FIT_LOG_VAL_LOSS]);
    if (!isnan(logs[PG_FIT_LOG_VAL_ACCURACY]))
        pg_text_put(&t, "  val_acc=%.4f", logs[PG_FIT_LOG_VAL_ACCURACY]);
    /* ag_fit(metrics =)'s columns ("accuracy" is the History's own, shown as acc=) */
    for (int m = PG_FIT_LOG_COUNT + 2; m < PG_FIT_LOG_ALL; m++)
        if (!isnan(logs[m]) && *pg_fit_log_name(m))
            pg_text_put(&t, "  %s=%.4f", pg_fit_log_name(m), logs[m]);
    put_time(&t, "  (%s)", logs[PG_FIT_LOG_TIME_TRAIN] + logs[PG_FIT_LOG_TIME_VAL]);
    return t.len;
}

int64_t pg_fit_status_line(double loss, double accuracy, const double *last, char *buf, int64_t cap)
{
    if (cap < 0 || (buf && cap < 1))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_status_line(): bad arguments");
    pg_text t = {buf, cap, 0};
    if (buf) buf[0] = 0;
    if (!isnan(loss)) pg_text_put(&t, "loss %.4f", loss);
    if (!isnan(accuracy)) pg_text_put(&t, " acc %.3f", accuracy);
    const int vl = last && !isnan(last[PG_FIT_LOG_VAL_LOSS]);
    const int va = last && !isnan(last[PG_FIT_LOG_VAL_ACCURACY]);
    if (vl || va) pg_text_put(&t, " |");
    if (vl) pg_text_put(&t, " val_loss %.4f", last[PG_FIT_LOG_VAL_LOSS]);
    if (va) pg_text_put(&t, " val_acc %.3f", last[PG_FIT_LOG_VAL_ACCURACY]);
    return t.len;
}

int64_t pg_fit_history_text(const char *name, const double *epoch, const double *logs, int64_t n,
                            double stopped_epoch, double best_epoch, const char *pm,
                            int64_t n_metrics, const char *const *metrics, const double *values,
                            char *out, int64_t cap)
{
    int64_t h =
        pg_fit_history_format(name, epoch, logs, n, stopped_epoch, best_epoch, pm, out, cap);
    if (h < 0 || n_metrics == 0) return h;
    const int room = out && h + 1 < cap; /* the line break and the metrics' table go after it */
    int64_t m = pg_fit_metrics_format(n_metrics, metrics, values, epoch, n,
                                      room ? out + h + 1 : NULL, room ? cap - h - 1 : 0);
    if (m < 0) {
        if (out && cap > 0) out[0] = '\0';
        return m;
    }
    if (room) out[h] = '\n';
    return h + 1 + m;
}
