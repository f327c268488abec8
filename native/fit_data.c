/* ag_fit's data and display arguments (pg_api_train.h), once for R and Python: the [features, n]
 * rule, the targets' checks, validation_data's columns appended into the plan, keras' verbose
 * levels, the distributed / static flags and resume_from's text. The hosts check the kinds of
 * their own values and pass what they saw. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

static const char *OP = "ag_fit";

/* a's columns then b's (same rows and dtype, checked by the caller), one new tensor */
static pg_tensor *cat_cols(const pg_tensor *a, const pg_tensor *b)
{
    const int64_t r = a->ne[0], na = a->ne[1], nb = b->ne[1];
    pg_tensor *t = pg_tensor_new(a->dtype, r, na + nb, NULL, a->dtype, 1, r);
    if (!t) return NULL;
    const size_t es = pg_dtype_size(a->dtype);
    memcpy(pg_data(t), pg_data(a), (size_t)(r * na) * es);
    memcpy((char *)pg_data(t) + (size_t)(r * na) * es, pg_data(b), (size_t)(r * nb) * es);
    return t;
}

pg_fit *pg_fit_new(pg_tensor *x, pg_tensor *y, const pg_fit_params *params)
{
    if (!params || !params->xv) return pg_fit_new_cols(x, y, params);
    pg_tensor *xv = params->xv, *yv = params->yv;
    if (pg_not_live(x, OP, "x") || (y && pg_not_live(y, OP, "y")) ||
        pg_not_live(xv, OP, "validation_data x") ||
        (yv && pg_not_live(yv, OP, "validation_data y")))
        return NULL;
    double vs = 0; /* the shapes as pg_fit_val_join checked them for the host's val_split */
    if (pg_fit_val_join(x->ne, y ? y->ne : NULL, xv->ne, yv ? yv->ne : NULL, 0, &vs)) return NULL;
    if (xv->dtype != x->dtype || (y && yv->dtype != y->dtype))
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "%s: validation_data is %s but x is %s; give both in the model's dtype",
                            OP, pg_desc(xv->dtype != x->dtype ? xv : yv), pg_desc(x));
    pg_tensor *jx = cat_cols(x, xv), *jy = y ? cat_cols(y, yv) : NULL;
    pg_fit *f = NULL;
    if (jx && (!y || jy)) {
        pg_fit_params p = *params;
        p.fixed_split = 1, p.xv = p.yv = NULL;
        f = pg_fit_new_cols(jx, jy, &p); /* retains what it keeps */
    }
    if (jx) pg_tensor_release(jx);
    if (jy) pg_tensor_release(jy);
    return f;
}

int pg_fit_verbosity(int number, double v, const char *shown, int r_spelling, int *mode)
{
    if (!mode) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL mode", OP);
    if (!number || !(v == 0 || v == 1 || v == 2))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: verbose must be 0 (silent), 1 (progress bar), 2 (one line per epoch), "
                       "\"auto\" or %s, got %s",
                       OP, r_spelling ? "NULL" : "None", shown ? shown : "?");
    *mode = (int)v;
    return 0;
}

int pg_fit_flags_check(int distributed_ok, int static_ok, int r_spelling)
{
    /* a truthy "a" must not start MPI; a wrong kind, as ag_fit's other flags (shuffle, ...) */
    if (!distributed_ok)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: distributed must be %s", OP,
                       r_spelling ? "TRUE or FALSE" : "True or False");
    if (!static_ok)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: static must be %s", OP,
                       r_spelling ? "TRUE, FALSE or NULL" : "True, False or None");
    return 0;
}

int pg_fit_resume_from_fail(const char *shown)
{
    return pg_fail(PG_STATUS_ERR_ARG, "%s: resume_from must be a file name, got %s", OP,
                   shown ? shown : "?");
}

int pg_fit_kind_fail(int what, const char *shown, int64_t epoch, int r_spelling)
{
    const char *got = shown ? shown : "?";
    switch (what) {
    case PG_FIT_KIND_VALIDATION_DATA:
        return pg_fail(
            PG_STATUS_ERR_ARG, "%s: validation_data must be a %s or an ag_dataloader, got %s", OP,
            r_spelling ? "list (x_val, y_val), (x_val)" : "tuple (x_val, y_val), (x_val,)", got);
    case PG_FIT_KIND_LOSS:
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: loss must be a loss name such as %s or a %s(output, y), got %s", OP,
                       r_spelling ? "\"mse\"" : "'mse'", r_spelling ? "function" : "callable", got);
    case PG_FIT_KIND_OPT_PARAMS:
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: opt_params(epoch) must return a %s, got %s at epoch %lld", OP,
                       r_spelling ? "named list" : "dict", got, (long long)epoch);
    case PG_FIT_KIND_OPT_PARAMS_FN:
        return pg_fail(PG_STATUS_ERR_ARG, "%s: opt_params must be a %s", OP,
                       r_spelling ? "function(epoch) returning a named list, or NULL"
                                  : "callable(epoch) -> dict or None");
    case PG_FIT_KIND_MODEL:
        return pg_fail(PG_STATUS_ERR_ARG, "%s: model must have parameters(), got %s", OP, got);
    case PG_FIT_KIND_NO_PARAMS:
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: the model has no parameters to train", OP);
    case PG_FIT_KIND_CALLBACKS:
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: callbacks must be a list of callbacks or functions, got %s", OP, got);
    case PG_FIT_KIND_CALLBACK:
        if (r_spelling)
            return pg_fail(PG_STATUS_ERR_ARG,
                           "%s: callbacks must be ag_early_stopping() objects, lists/environments"
                           " with on_epoch_end, or functions(epoch, logs)",
                           OP);
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: callbacks must be Callback objects or functions, got %s", OP, got);
    case PG_FIT_KIND_LOSS_VALUE:
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: the loss must be a 1x1 ag_tensor, got %s", OP,
                       got);
    default: return pg_fail(PG_STATUS_ERR_ARG, "%s: unknown argument kind %d", OP, what);
    }
}

int pg_fit_callback_plan(int value, int top, const char *shown, int r_spelling, int *action)
{
    if (!action) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_callback_plan(): action is NULL");
    if (value == PG_FIT_CB_HOOKS || value == PG_FIT_CB_FUNCTION)
        *action = top ? PG_FIT_CB_ONE : value == PG_FIT_CB_HOOKS ? PG_FIT_CB_KEEP : PG_FIT_CB_WRAP;
    else if (top && value == PG_FIT_CB_LIST) *action = PG_FIT_CB_ITEMS;
    else
        return pg_fit_kind_fail(top ? PG_FIT_KIND_CALLBACKS : PG_FIT_KIND_CALLBACK, shown, 0,
                                r_spelling);
    return 0;
}

/* "a 2x3x4 array" (or "a scalar") into buf */
static const char *dims_text(char *buf, size_t cap, const int64_t *dims, int ndim)
{
    snprintf(buf, cap, "a scalar");
    for (int i = 0, at = 0; i < ndim && at < (int)cap - 24; i++)
        at += snprintf(buf + at, cap - (size_t)at, "%s%lld%s", i ? "x" : "a ", (long long)dims[i],
                       i == ndim - 1 ? " array" : "");
    return buf;
}

int pg_fit_cols(const char *fn, const char *what, const int64_t *dims, int ndim, int samples,
                int64_t *rows, int64_t *n)
{
    if (!fn || !what || !rows || !n || (ndim > 0 && !dims))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_cols(): NULL");
    if (ndim == 1 || ndim == 2) { /* a vector is one row of samples */
        *rows = ndim == 1 ? 1 : dims[0], *n = dims[ndim - 1];
        return samples && !*n ? pg_fail(PG_STATUS_ERR_SHAPE, "%s: %s has no samples", fn, what) : 0;
    }
    char got[128];
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "%s: %s must be a [features, n] matrix (samples are columns), got %s", fn, what,
                   dims_text(got, sizeof got, dims, ndim));
}

int pg_labels_shape(const int64_t *dims, int ndim)
{
    if (ndim > 0 && !dims) return pg_fail(PG_STATUS_ERR_ARG, "pg_labels_shape(): NULL");
    if (ndim == 1 || (ndim == 2 && (dims[0] == 1 || dims[1] == 1))) return 0;
    char got[128];
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "ag_fit: labels y must be one label per sample (a vector), got %s",
                   dims_text(got, sizeof got, dims, ndim));
}

int pg_fit_targets(int64_t xr, int64_t xc, int64_t yr, int64_t yc, const double *y, int classify,
                   int64_t outputs, int64_t nlevels, int one_based, const char *tx, const char *ty,
                   int64_t *nclass)
{
    int rc = pg_fit_check_samples(xr, xc, yr, yc, tx, ty);
    if (!rc && classify == PG_FIT_CLASSIFY_ARGMAX && yr == 1)
        rc = pg_fit_check_ids(y, yc, outputs, nlevels, one_based); /* class ids against outputs */
    if (!rc && nclass) *nclass = outputs > 0 ? outputs : nlevels > 0 ? nlevels : -1;
    return rc;
}

/* the first sample of ids (finite whole numbers) at or past outputs: its index, else -1 */
static int64_t id_past(const double *y, int64_t n, int64_t outputs)
{
    for (int64_t j = 0; j < n; j++)
        if (isfinite(y[j]) && y[j] == floor(y[j]) && y[j] >= (double)outputs) return j;
    return -1;
}

int pg_fit_outputs_check(int loss, const int *metrics, int64_t nmetrics, int64_t yr,
                         const double *yv, int64_t nv, int64_t outputs)
{
    if (nmetrics < 0 || (nmetrics && !metrics) || nv < 0 || (nv && !yv))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_outputs_check(): NULL metric codes or ids");
    if (outputs <= 0) return 0; /* the model's layers do not say */
    const char *name = pg_fit_loss_name(loss), *what = "loss";
    if (yr == outputs || !name || loss == PG_FIT_LOSS_MEAN || loss == PG_FIT_LOSS_SUM ||
        (loss == PG_FIT_LOSS_CROSS_ENTROPY && yr == 1))
        name = NULL; /* then the metrics that compare element by element */
    for (int64_t i = 0; !name && yr != outputs && i < nmetrics; i++)
        if (pg_metric_regression(metrics[i])) name = pg_metric_name(metrics[i]), what = "metric";
    if (name)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "ag_fit: y has %lld row%s but the model gives %lld output%s per sample; the "
                       "\"%s\" %s needs %sy as [%lld, n] (one row per output)",
                       (long long)yr, yr == 1 ? "" : "s", (long long)outputs,
                       outputs == 1 ? "" : "s", name, what,
                       !strcmp(name, "cross_entropy") ? "class ids (one row) or " : "",
                       (long long)outputs);
    /* a binary run's per-class metrics (auc, precision, recall, f1) read one output */
    const int binary =
        loss == PG_FIT_LOSS_BINARY_CROSS_ENTROPY || loss == PG_FIT_LOSS_BCE_WITH_LOGITS;
    for (int64_t i = 0; binary && outputs != 1 && i < nmetrics; i++) {
        const int c = metrics[i];
        if (!pg_metric_regression(c) && c != PG_METRIC_ACCURACY && c != PG_METRIC_BINARY_ACCURACY)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "ag_fit: metrics: \"%s\" needs a 1-output binary model and 0/1 targets "
                           "[1, n]; the model gives %lld outputs per sample",
                           pg_metric_name(c), (long long)outputs);
    }
    const int64_t j = id_past(yv, nv, outputs);
    if (j >= 0) {
        char b[40];
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: validation_data y holds class id %s (sample %lld) but the model "
                       "has %lld outputs; ids are 0-based, in [0, %lld)",
                       pg_fmt_num(b, sizeof b, yv[j]), (long long)j + 1, (long long)outputs,
                       (long long)outputs);
    }
    return 0;
}
