/* The front ends' drifts decided once in the core (issue 29): ag_fit(callbacks =)'s rule
 * (pg_fit_callback_plan), a run object's has_val / has_accuracy (pg_fit_run_measures), an
 * epoch's logs (pg_fit_log_values) and the metrics a checkpoint records (pg_fit_setup_metrics,
 * the resume check). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static void callbacks_plan(void)
{
    int a = -1;
    CHECK(pg_fit_callback_plan(PG_FIT_CB_FUNCTION, 1, "f", 0, &a) == 0 && a == PG_FIT_CB_ONE);
    CHECK(pg_fit_callback_plan(PG_FIT_CB_HOOKS, 1, "h", 0, &a) == 0 && a == PG_FIT_CB_ONE);
    CHECK(pg_fit_callback_plan(PG_FIT_CB_LIST, 1, "list", 0, &a) == 0 && a == PG_FIT_CB_ITEMS);
    CHECK(pg_fit_callback_plan(PG_FIT_CB_FUNCTION, 0, "f", 0, &a) == 0 && a == PG_FIT_CB_WRAP);
    CHECK(pg_fit_callback_plan(PG_FIT_CB_HOOKS, 0, "h", 0, &a) == 0 && a == PG_FIT_CB_KEEP);
    CHECK_ERR(pg_fit_callback_plan(PG_FIT_CB_OTHER, 1, "str", 0, &a), PG_STATUS_ERR_ARG,
              "callbacks must be a list of callbacks or functions, got str");
    CHECK_ERR(pg_fit_callback_plan(PG_FIT_CB_LIST, 0, "list", 0, &a), PG_STATUS_ERR_ARG,
              "callbacks must be Callback objects or functions, got list");
    CHECK_ERR(pg_fit_callback_plan(PG_FIT_CB_OTHER, 0, "x", 1, &a), PG_STATUS_ERR_ARG,
              "lists/environments with on_epoch_end");
}

static void run_measures(void)
{
    pg_host_value none = {PG_HOST_ABSENT, 0, NULL}, no = {PG_HOST_BOOL, 0, "False"};
    pg_host_value mask = {PG_HOST_INT, 5, "5"}, s = {PG_HOST_TEXT, 0, "str 'a'"};
    pg_host_value half = {PG_HOST_NUM, 0.5, "0.5"};
    int v = -1, m = 0;
    CHECK(pg_fit_run_measures("es", &none, &none, 0, &v, &m) == 0 && v == 1 && m == -1);
    CHECK(pg_fit_run_measures("es", &no, &mask, 0, &v, &m) == 0 && v == 0 && m == 5);
    CHECK_ERR(pg_fit_run_measures("es", &s, &none, 0, &v, &m), PG_STATUS_ERR_ARG,
              "es: on_train_begin(fit): fit's has_val must be True, False or None, got str 'a'");
    CHECK_ERR(pg_fit_run_measures("es", &none, &s, 1, &v, &m), PG_STATUS_ERR_ARG,
              "fit's has_accuracy must be a whole number (the monitor mask, -1: unknown) or NULL");
    CHECK_ERR(pg_fit_run_measures("es", &none, &half, 0, &v, &m), PG_STATUS_ERR_VALUE, "got 0.5");
}

static void log_values(void)
{
    pg_host_value v[PG_FIT_LOG_ALL];
    memset(v, 0, sizeof v); /* all absent */
    v[PG_FIT_LOG_LOSS] = (pg_host_value){PG_HOST_NUM, 0.25, NULL};
    double out[PG_FIT_LOG_ALL];
    CHECK(pg_fit_log_values("es", v, 0, out) == 0 && out[PG_FIT_LOG_LOSS] == 0.25 &&
          isnan(out[PG_FIT_LOG_VAL_LOSS]));
    v[PG_FIT_LOG_VAL_LOSS] = (pg_host_value){PG_HOST_OTHER, 0, "list [1]"};
    CHECK_ERR(pg_fit_log_values("es", v, 0, out), PG_STATUS_ERR_ARG,
              "es: logs' \"val_loss\" must be a number (None: not measured), got list [1]");
}

static void metrics_recorded(void)
{
    pg_fit_setup_params p = pg_fit_setup_default_params();
    p.n = 8, p.batch_size = 4, p.loss = "mse";
    pg_fit_setup *a = NULL, *b = NULL;
    CHECK(pg_fit_setup_new(&p, &a) == 0 && pg_fit_setup_new(&p, &b) == 0);
    const int mae = PG_METRIC_MAE, bad = 0;
    CHECK(pg_fit_setup_metrics(a, 1, &mae) == 0);
    CHECK_ERR(pg_fit_setup_metrics(a, 1, &bad), PG_STATUS_ERR_ARG, "no metric code");
    char t[512];
    CHECK(pg_fit_setup_settings(a, t, sizeof t) > 0 && strstr(t, "\"metrics\": [\"mae\"]}"));
    /* a checkpoint of a's settings: b (no metrics) is refused, a resumes */
    char path[64];
    snprintf(path, sizeof path, "/tmp/pg-drifts3-%d.safetensors", (int)getpid());
    int32_t rng[PG_RNG_STATE_LEN];
    pg_rng *r = pg_rng_new_seeded(3);
    CHECK(r && pg_rng_get_state(r, rng) == 0);
    pg_rng_free(r);
    double hist[2 + PG_FIT_LOG_COUNT];
    for (int i = 0; i < 2 + PG_FIT_LOG_COUNT; i++) hist[i] = i ? NAN : 1;
    const char *names[1] = {"mae"};
    const int64_t need = pg_fit_ckpt_extra(t, hist, 1, 1, names, NAN, NAN, rng, 0, NULL, NULL, 0);
    char *extra = need > 0 ? malloc((size_t)need + 1) : NULL;
    CHECK(extra &&
          pg_fit_ckpt_extra(t, hist, 1, 1, names, NAN, NAN, rng, 0, NULL, extra, need + 1) == need);
    float w = 1;
    pg_st_tensor tw = {"W", PG_ST_DTYPE_F32, 2, 1, 1, &w};
    const char *keys[2] = {"epoch", "extra"}, *vals[2] = {"1", extra};
    CHECK(pg_st_write(path, &tw, 1, keys, vals, 2) == 0);
    pg_fit_ckpt *c = NULL;
    CHECK_ERR(pg_fit_setup_resume(b, path, &c), PG_STATUS_ERR_VALUE,
              "ag_fit: cannot resume: metrics were [\"mae\"] in the checkpoint, now []");
    CHECK(c == NULL && pg_fit_setup_resume(a, path, &c) == 0 && c);
    pg_fit_ckpt_free(c);
    free(extra);
    unlink(path);
    pg_fit_setup_free(a), pg_fit_setup_free(b);
}

void test_fit_drifts3(void)
{
    callbacks_plan();
    run_measures();
    log_values();
    metrics_recorded();
}
