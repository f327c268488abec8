/* fit_cb.c: the built-in callbacks' checkpoint state to and from their handles, how they print,
 * and ag_fit(progress =)'s rule; every refusal's status and text, nothing set on a refusal. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

/* best, best_epoch, wait as the host hands them (NaN: absent) */
static const pg_host_value *vals(pg_host_value *v, double best, double be, double w)
{
    const double x[3] = {best, be, w};
    for (int k = 0; k < 3; k++)
        v[k] = (pg_host_value){isnan(x[k]) ? PG_HOST_ABSENT : PG_HOST_NUM, x[k], NULL};
    return v;
}

static void test_state(void)
{
    pg_early_stop_params p = pg_early_stop_default_params();
    pg_early_stop *es = pg_early_stop_new(&p);
    CHECK(es && pg_early_stop_begin(es, 1, -1) == 0);
    char t[256];
    pg_host_value v[3];
    /* a fresh monitor: best not finite, no best epoch: null */
    CHECK(pg_early_stop_state_json(es, t, sizeof t) > 0);
    CHECK(!strcmp(t, "{\"best\": null, \"best_epoch\": null, \"wait\": 0}"));
    CHECK(pg_early_stop_state_load(es, 1, vals(v, 0.25, 3, 1)) == 0);
    int64_t n = pg_early_stop_state_json(es, t, sizeof t);
    CHECK(n == (int64_t)strlen(t) && pg_early_stop_state_json(es, NULL, 0) == n);
    CHECK(!strcmp(t, "{\"best\": 0.25, \"best_epoch\": 3, \"wait\": 1}"));
    /* the keys the hosts look up, in v's order: the JSON text's */
    CHECK(!strcmp(pg_callback_state_key(0), "best") &&
          !strcmp(pg_callback_state_key(1), "best_epoch") &&
          !strcmp(pg_callback_state_key(2), "wait") && !pg_callback_state_key(3) &&
          !pg_callback_state_key(-1));
    CHECK(pg_early_stop_state_load(es, 1, vals(v, 2, 1, 0)) == 0);
    n = pg_early_stop_state_json(es, t, sizeof t);
    CHECK(n > 0 && strstr(t, "\"best\": 2.0,"));
    CHECK(pg_early_stop_state_json(es, t, 5) == n && strlen(t) == 4);
    /* refusals: pg_callback_state_parse's text naming the callback; nothing set */
    CHECK_ERR(pg_early_stop_state_load(es, 1, vals(v, 1, -1, 0)) != 0, PG_STATUS_ERR_VALUE,
              "ag_early_stopping: the checkpoint's callback state is not usable (best, "
              "best_epoch, wait = 1, -1, 0)");
    CHECK_ERR(pg_early_stop_state_load(NULL, 1, vals(v, 1, 2, 0x1p70)) != 0, PG_STATUS_ERR_VALUE,
              "= 1, 2, 1.1805916207174113e+21)");
    v[0] = (pg_host_value){PG_HOST_TEXT, 0, "x"};
    CHECK_ERR(pg_early_stop_state_load(es, 1, v) != 0, PG_STATUS_ERR_VALUE, "= \"x\", 2, ");
    CHECK_ERR(pg_early_stop_state_load(es, 0, vals(v, 1, 1, 1)) != 0, PG_STATUS_ERR_VALUE,
              "= ?, ?, ?)");
    CHECK(pg_early_stop_state_json(es, t, sizeof t) > 0 && strstr(t, "\"best\": 2.0,"));
    CHECK(pg_early_stop_state_load(NULL, 1, vals(v, NAN, NAN, NAN)) == 0); /* check only */
    CHECK_ERR(pg_early_stop_state_load(es, 1, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_early_stop_state_json(NULL, t, sizeof t) < 0, PG_STATUS_ERR_ARG, "NULL handle");

    pg_checkpoint_params cp = pg_checkpoint_default_params();
    cp.best_only = 1;
    pg_checkpoint *c = pg_checkpoint_new(&cp);
    CHECK(c && pg_checkpoint_begin(c, 3, 1, -1) == 0);
    CHECK(pg_checkpoint_state_load(c, 1, vals(v, 0.5, 2, 7)) == 0);
    CHECK(pg_checkpoint_state_json(c, t, sizeof t) > 0);
    CHECK(!strcmp(t, "{\"best\": 0.5, \"best_epoch\": 2}"));
    CHECK_ERR(pg_checkpoint_state_load(c, 1, vals(v, 1, 2.5, NAN)) != 0, PG_STATUS_ERR_VALUE,
              "ag_model_checkpoint: the checkpoint's callback state is not usable (best, "
              "best_epoch, wait = 1, 2.5, null)");
    CHECK(pg_checkpoint_state_json(c, t, sizeof t) > 0 && strstr(t, "0.5"));
    CHECK(pg_checkpoint_state_load(NULL, 1, vals(v, 1, NAN, NAN)) == 0);
    CHECK_ERR(pg_checkpoint_state_json(NULL, t, sizeof t) < 0, PG_STATUS_ERR_ARG, "NULL handle");
    pg_checkpoint_free(c);
    pg_early_stop_free(es);
}

static void test_format(void)
{
    pg_early_stop_params p = pg_early_stop_default_params();
    p.patience = 4, p.mode = PG_MONITOR_MODE_MAX, p.monitor = PG_FIT_LOG_VAL_ACCURACY;
    pg_early_stop *es = pg_early_stop_new(&p);
    char t[256];
    int64_t n = pg_early_stop_format(es, "0.5", "FALSE", t, sizeof t);
    CHECK(n == (int64_t)strlen(t));
    CHECK(!strcmp(t,
                  "ag_early_stopping | patience=4 | min_delta=0.5 | restore_best=FALSE | "
                  "monitor=val_accuracy | mode=max"));
    CHECK(pg_early_stop_format(es, "0.5", "FALSE", t, 10) == n && strlen(t) == 9);
    CHECK_ERR(pg_early_stop_format(es, NULL, "x", t, sizeof t) < 0, PG_STATUS_ERR_ARG, "NULL");
    /* the fields both hosts show: names, then values (ABSENT: none) */
    const char *es_names[] = {"patience", "min_delta",  "restore_best", "monitor",      "mode",
                              "best",     "best_epoch", "wait",         "stopped_epoch"};
    pg_host_value v;
    for (int k = 0; k < 9; k++) CHECK(!strcmp(pg_early_stop_field(NULL, k, NULL), es_names[k]));
    CHECK(!pg_early_stop_field(NULL, 9, NULL) && !pg_early_stop_field(es, -1, &v));
    CHECK(pg_early_stop_field(es, 0, &v) && v.kind == PG_HOST_INT && v.num == 4);
    CHECK(pg_early_stop_field(es, 2, &v) && v.kind == PG_HOST_BOOL && v.num == 1);
    CHECK(pg_early_stop_field(es, 3, &v) && v.kind == PG_HOST_TEXT &&
          !strcmp(v.text, "val_accuracy"));
    CHECK(pg_early_stop_field(es, 4, &v) && v.kind == PG_HOST_TEXT && !strcmp(v.text, "max"));
    CHECK(pg_early_stop_field(es, 5, &v) && v.kind == PG_HOST_NUM);
    CHECK(pg_early_stop_field(es, 6, &v) && v.kind == PG_HOST_ABSENT);
    CHECK(pg_early_stop_set_state(es, 0.25, 3, 1) == 0);
    CHECK(pg_early_stop_field(es, 6, &v) && v.kind == PG_HOST_INT && v.num == 3);
    CHECK(pg_early_stop_field(es, 7, &v) && v.kind == PG_HOST_INT && v.num == 1);
    CHECK(pg_early_stop_field(es, 8, &v) && v.kind == PG_HOST_ABSENT);
    pg_early_stop_free(es);
    pg_checkpoint_params cp = pg_checkpoint_default_params();
    pg_checkpoint *c0 = pg_checkpoint_new(&cp);
    CHECK(!strcmp(pg_checkpoint_field(NULL, 1, NULL), "save_best_only"));
    CHECK(!pg_checkpoint_field(NULL, 6, NULL));
    CHECK(pg_checkpoint_field(c0, 1, &v) && v.kind == PG_HOST_BOOL && v.num == 0);
    CHECK(pg_checkpoint_field(c0, 2, &v) && v.kind == PG_HOST_ABSENT); /* monitor: auto */
    CHECK(pg_checkpoint_field(c0, 0, &v) && v.kind == PG_HOST_INT && v.num == 1);
    pg_checkpoint_free(c0);
    pg_checkpoint *c = pg_checkpoint_new(&cp);
    CHECK(pg_checkpoint_format(c, "m.st", "True", t, sizeof t) > 0);
    CHECK(!strcmp(t, "ag_model_checkpoint | path=m.st | every=1"));
    pg_checkpoint_free(c);
    cp.best_only = 1, cp.every = 2;
    c = pg_checkpoint_new(&cp);
    CHECK(pg_checkpoint_format(c, "m.st", "True", t, sizeof t) > 0);
    CHECK(!strcmp(t,
                  "ag_model_checkpoint | path=m.st | every=2 | save_best_only=True | "
                  "monitor=auto | mode=auto"));
    CHECK_ERR(pg_checkpoint_format(NULL, "m", "T", t, sizeof t) < 0, PG_STATUS_ERR_ARG, "NULL");
    pg_checkpoint_free(c);
}

static void test_progress(void)
{
    static const struct {
        const char *name;
        int silent, want;
    } ok[] = {{"auto", 0, PG_FIT_PROGRESS_BAR},    {"bar", 0, PG_FIT_PROGRESS_BAR},
              {"lines", 0, PG_FIT_PROGRESS_LINES}, {"none", 0, PG_FIT_PROGRESS_NONE},
              {"auto", 1, PG_FIT_PROGRESS_NONE},   {"lines", 1, PG_FIT_PROGRESS_NONE}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        int m = -1;
        CHECK(pg_fit_progress_parse(ok[i].name, ok[i].name, ok[i].silent, &m) == 0);
        CHECK(m == ok[i].want);
    }
    int m = 7;
    CHECK_ERR(pg_fit_progress_parse("Bar", "Bar", 1, &m) != 0, PG_STATUS_ERR_VALUE,
              "ag_fit: progress must be \"auto\", \"bar\" or \"none\", got Bar");
    CHECK_ERR(pg_fit_progress_parse(NULL, "TRUE", 0, &m) != 0, PG_STATUS_ERR_VALUE, "got TRUE");
    CHECK(m == 7);
    CHECK_ERR(pg_fit_progress_parse("auto", NULL, 0, &m) != 0, PG_STATUS_ERR_ARG, "NULL");
}

void test_fit_cb(void)
{
    test_state();
    test_format();
    test_progress();
}
