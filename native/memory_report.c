/* ag_estimate_training_memory's budget, note and printed report, once for R and Python (the
 * arithmetic, the texts and R's format() of the parameter count were written in both). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

static const char *const FN = "ag_estimate_training_memory()";
static const char *const OPTIM[PG_MEM_OPTIM_COUNT] = {"adam", "sgd", "sgd_plain"};
static const int64_t OPTIM_K[PG_MEM_OPTIM_COUNT] = {2, 1, 0};

const char *pg_mem_optim_name(int optim)
{
    return optim >= 0 && optim < PG_MEM_OPTIM_COUNT ? OPTIM[optim] : NULL;
}

int pg_mem_optim_parse(const char *name, const char *shown, int *optim)
{
    if (!optim) return pg_fail(PG_STATUS_ERR_ARG, "pg_mem_optim_parse(): NULL argument");
    int hit = -1, hits = 0;
    for (int i = 0; name && *name && i < PG_MEM_OPTIM_COUNT; i++) {
        if (!strcmp(name, OPTIM[i])) {
            *optim = i;
            return 0;
        }
        if (!strncmp(name, OPTIM[i], strlen(name))) hit = i, hits++;
    }
    if (hits == 1) {
        *optim = hit;
        return 0;
    }
    char q[80];
    if (name) snprintf(q, sizeof q, "\"%.60s\"", name);
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: 'optimizer' should be one of \"adam\", \"sgd\", \"sgd_plain\", got %s%s",
                   FN, name ? q : (shown ? shown : "(none)"),
                   hits > 1 ? " (it begins more than one)" : "");
}

static const char *dtype_name(int d) { return d == PG_DTYPE_F32 ? "f32" : "f64"; }

int pg_mem_model_dtypes(int model_dtype, int dtype, int x_dtype, int y_dtype)
{
    if (model_dtype < 0) return 0; /* a model without parameters: dtype is x's */
    const char *m = dtype_name(model_dtype);
    if (dtype >= 0 && dtype != model_dtype)
        return pg_fail(PG_STATUS_ERR_DTYPE,
                       "%s: dtype is \"%s\" but the model's parameters are %s; with a model, "
                       "leave dtype out (the model's) or give \"%s\"",
                       FN, dtype_name(dtype), m, m);
    const int got[2] = {x_dtype, y_dtype};
    for (int i = 0; i < 2; i++)
        if (got[i] >= 0 && got[i] != model_dtype)
            return pg_fail(PG_STATUS_ERR_DTYPE,
                           "%s: %s is an %s tensor but the model's parameters are %s; give %s in "
                           "%s (or as numbers: converted to the model's dtype)",
                           FN, i ? "y" : "x", dtype_name(got[i]), m, i ? "y" : "x", m);
    return 0;
}

int pg_mem_target_shape(int64_t out_rows, int64_t out_cols, int64_t y_rows, int64_t y_cols)
{
    if (out_rows == y_rows && out_cols == y_cols) return 0;
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "%s: y is [%lldx%lld] but the model's output is [%lldx%lld]; with the default "
                   "loss_fn (ag_mse_loss) y must have the output's shape [outputs, batch]",
                   FN, (long long)y_rows, (long long)y_cols, (long long)out_rows,
                   (long long)out_cols);
}

int pg_mem_input_shape(const double *dims, int64_t n, double batch, int r_form, const char *shown,
                       int64_t *rows, int64_t *cols)
{
    if (!rows || !cols || (n > 0 && !dims))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL argument", FN);
    const double d[2] = {n >= 1 ? dims[0] : NAN, n == 1 ? batch : n == 2 ? dims[1] : NAN};
    for (int i = 0; i < 2; i++) /* NaN fails every comparison; Inf is past INT_MAX */
        if (!(d[i] >= 1 && d[i] <= INT_MAX && d[i] == floor(d[i])))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: input_shape must be %s with positive whole numbers, got %s", FN,
                           r_form ? "c(features) or c(features, batch)"
                                  : "(features,) or (features, batch)",
                           shown ? shown : "?");
    *rows = (int64_t)d[0];
    *cols = (int64_t)d[1];
    return 0;
}

pg_mem_estimate pg_mem_estimate_default(void)
{
    pg_mem_estimate e;
    memset(&e, 0, sizeof e);
    e.optim = PG_MEM_OPTIM_ADAM;
    e.dtype = PG_DTYPE_F32;
    e.source = PG_MEM_SOURCE_GUESS;
    e.batch = 32;
    e.activation_frac = 0.01;
    return e;
}

static int finite_nonneg(double v) { return v >= 0 && v <= 1.7976931348623157e308; }

int pg_mem_budget_of(const pg_mem_estimate *e, pg_mem_budget *out)
{
    if (!e || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_mem_budget_of(): NULL argument");
    if (!pg_mem_optim_name(e->optim) || (e->dtype != PG_DTYPE_F32 && e->dtype != PG_DTYPE_F64) ||
        e->source < PG_MEM_SOURCE_GUESS || e->source > PG_MEM_SOURCE_COMPILED || e->batch < 0 ||
        !finite_nonneg(e->params) || !finite_nonneg(e->activation_frac) ||
        !finite_nonneg(e->weights) || !finite_nonneg(e->gradients) ||
        !(e->activations == e->activations))
        return pg_fail(PG_STATUS_ERR_ARG, "%s: an estimate field is out of range", FN);
    const int64_t bps = e->dtype == PG_DTYPE_F32 ? 4 : 8;
    const int64_t k = OPTIM_K[e->optim] + (e->accumulate ? 1 : 0);
    pg_mem_budget b;
    b.params = e->params;
    b.bytes_per_scalar = bps;
    b.k = k;
    if (e->source == PG_MEM_SOURCE_GUESS) {
        b.weights = (double)bps * e->params;
        b.gradients = (double)bps * e->params;
        b.optimizer = (double)bps * e->params * (double)k;
        b.activations = b.weights * e->activation_frac * (double)e->batch;
    } else {
        b.weights = e->weights;
        b.gradients = e->gradients;
        b.optimizer = e->gradients * (double)k;
        b.activations = e->activations;
    }
    b.total = b.weights + b.gradients + b.optimizer + b.activations;
    *out = b;
    return 0;
}

/* R's format(v, big.mark = " ") of one number: fixed notation unless scientific is narrower
 * (1e+05, 1e+06), thousands separated by spaces */
static void format_count(double v, char *out, size_t cap)
{
    char fixed[64], sci[64], mant[48];
    if (v == floor(v) && fabs(v) < 1e15) snprintf(fixed, sizeof fixed, "%.0f", v);
    else snprintf(fixed, sizeof fixed, "%.7g", v);
    snprintf(mant, sizeof mant, "%.6e", v);
    char *ex = strchr(mant, 'e');
    int e = ex ? atoi(ex + 1) : 0;
    if (ex) *ex = '\0';
    if (strchr(mant, '.')) {
        size_t n = strlen(mant);
        while (n > 0 && mant[n - 1] == '0') mant[--n] = '\0';
        if (n > 0 && mant[n - 1] == '.') mant[--n] = '\0';
    }
    snprintf(sci, sizeof sci, "%se%c%02d", mant, e >= 0 ? '+' : '-', e >= 0 ? e : -e);
    if (strlen(fixed) > strlen(sci) || strchr(fixed, '.') || strchr(fixed, 'e')) {
        snprintf(out, cap, "%s", strlen(fixed) > strlen(sci) ? sci : fixed);
        return;
    }
    const char *d = fixed[0] == '-' ? fixed + 1 : fixed;
    size_t nd = strlen(d), at = 0;
    if (fixed[0] == '-' && at + 1 < cap) out[at++] = '-';
    for (size_t i = 0; i < nd && at + 2 < cap; i++) {
        if (i > 0 && (nd - i) % 3 == 0) out[at++] = ' ';
        out[at++] = d[i];
    }
    out[at] = '\0';
}

/* the note: which dtype was counted and where the activations come from */
static void put_note(pg_text *t, const pg_mem_estimate *e, const pg_mem_budget *b)
{
    const int f32 = e->dtype == PG_DTYPE_F32;
    pg_text_put(t,
                "weights, gradients and optimizer state are counted at %s, the dtype the core "
                "stores them in (%lld bytes per scalar, %s precision); ",
                f32 ? "f32" : "f64", (long long)b->bytes_per_scalar, f32 ? "single" : "double");
    if (e->source == PG_MEM_SOURCE_GUESS)
        pg_text_put(t, "activations are a guess: activation_frac x weights per unit of batch.");
    else if (e->source == PG_MEM_SOURCE_TAPE)
        pg_text_put(t,
                    "activations measured from one forward and backward pass on a batch of %lld "
                    "(tape, gradients of intermediates, loss, input and target).",
                    (long long)e->batch);
    else
        pg_text_put(t,
                    "activations measured from the compiled step on a batch of %lld (planned "
                    "buffers: node outputs, saved buffers and gradients of intermediates, input "
                    "and target).",
                    (long long)e->batch);
}

int64_t pg_mem_estimate_text(const pg_mem_estimate *e, int what, char *buf, int64_t cap)
{
    pg_mem_budget b;
    int rc = pg_mem_budget_of(e, &b);
    if (rc) return -rc;
    if ((what != 0 && what != 1) || cap < 0)
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_mem_estimate_text(): what must be 0 or 1");
    pg_text t = {buf, cap, 0};
    if (buf && cap > 0) buf[0] = '\0';
    if (what == 1) {
        const double MB = 1024.0 * 1024.0;
        char count[64];
        format_count(b.params, count, sizeof count);
        pg_text_put(&t, "Training memory estimate (%s, batch %lld)\n  parameters      : %s\n",
                    OPTIM[e->optim], (long long)e->batch, count);
        pg_text_put(&t, "  weights         : %8.2f MB\n", b.weights / MB);
        pg_text_put(&t, "  gradients       : %8.2f MB\n", b.gradients / MB);
        pg_text_put(&t, "  optimizer (x%lld)  : %8.2f MB\n", (long long)b.k, b.optimizer / MB);
        pg_text_put(&t, "  activations     : %8.2f MB\n", b.activations / MB);
        pg_text_put(&t, "  total           : %8.2f MB\n  note: ", b.total / MB);
    }
    put_note(&t, e, &b);
    return t.len;
}

int64_t pg_memory_report_text(const pg_memory_totals *t, const char *build, int64_t ndropout,
                              const char *const *op_label, const int64_t *op_nodes,
                              const int64_t *op_bytes, int64_t nrows, int64_t top, char *buf,
                              int64_t cap)
{
    if (!t || nrows < 0 || top < 0 || cap < 0 || ndropout < 0 ||
        (nrows > 0 && top > 0 && (!op_label || !op_nodes || !op_bytes)))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_memory_report_text(): bad argument");
    const double MB = 1024.0 * 1024.0;
    pg_text o = {buf, cap, 0};
    if (buf && cap > 0) buf[0] = '\0';
    const char *s = t->nodes == 1 ? "" : "s";
    if (build) {
        pg_text_put(&o, "Compiled graph (%s): %lld node%s, %.2f MB planned", build,
                    (long long)t->nodes, s, t->bytes_total / MB);
        if (ndropout)
            pg_text_put(&o, ", %lld dropout mask%s redrawn per call", (long long)ndropout,
                        ndropout == 1 ? "" : "s");
        pg_text_put(&o, "\n  operands (outlive the graph)    : %8.2f MB\n", t->bytes_inputs / MB);
        pg_text_put(&o, "  activations (planned buffers)   : %8.2f MB\n", t->bytes_snapshots / MB);
        pg_text_put(&o, "  gradients (planned buffers)     : %8.2f MB\n", t->bytes_gradients / MB);
    } else {
        pg_text_put(&o, "Gradient tape: %lld node%s, %.2f MB held alive\n", (long long)t->nodes, s,
                    t->bytes_total / MB);
        if (t->nodes == 0)
            pg_text_put(&o,
                        "  (empty -- the tape is cleared by zero_grad(), so call this between "
                        "backward() and the step)\n");
        pg_text_put(&o, "  operands (outlive the tape)     : %8.2f MB\n", t->bytes_inputs / MB);
        pg_text_put(&o, "  activations (freed by clearing) : %8.2f MB\n", t->bytes_snapshots / MB);
    }
    pg_text_put(&o, "  graph-path fields (beyond those): %8.2f MB", t->bytes_fields / MB);
    const int64_t k = top < nrows ? top : nrows;
    if (k > 0) {
        pg_text_put(&o, "\n\n  by operation (top %lld):\n    %-20s %7s  %8s", (long long)k, "op",
                    "nodes", "MB");
        for (int64_t i = 0; i < k; i++)
            pg_text_put(&o, "\n    %-20s %7lld  %8.2f", op_label[i] ? op_label[i] : "",
                        (long long)op_nodes[i], op_bytes[i] / MB);
    }
    return o.len;
}
