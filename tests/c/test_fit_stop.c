/* pg_early_stop (native/fit_stop.c): keras' EarlyStopping rule, the names, the checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

/* one epoch whose log `k` is v (the others NaN); returns the action */
static int epoch(pg_early_stop *es, int64_t e, int k, double v)
{
    double logs[PG_FIT_LOG_COUNT];
    for (int i = 0; i < PG_FIT_LOG_COUNT; i++) logs[i] = NAN;
    logs[k] = v;
    int act = -1;
    CHECK(pg_early_stop_update(es, e, logs, &act) == 0);
    return act;
}

/* a checkpoint's callback state (pg_callback_state_parse): the rule and the text */
static void test_state_parse(void)
{
    pg_host_value v[3] = {
        {PG_HOST_NUM, 0.5, NULL}, {PG_HOST_NUM, 3, NULL}, {PG_HOST_ABSENT, 0, NULL}};
    double best;
    int64_t be, w;
    CHECK(pg_callback_state_parse("ag_early_stopping", 1, v, &best, &be, &w) == 0);
    CHECK(best == 0.5 && be == 3 && w == 0);
    v[0].kind = PG_HOST_ABSENT;
    CHECK(pg_callback_state_parse("x", 1, v, &best, &be, &w) == 0 && isinf(best) && best > 0);
    v[1].num = 2.5;
    CHECK(pg_callback_state_parse("ag_model_checkpoint", 1, v, &best, &be, &w) ==
          PG_STATUS_ERR_VALUE);
    CHECK(!strcmp(pg_last_error(),
                  "ag_model_checkpoint: the checkpoint's callback state is not "
                  "usable (best, best_epoch, wait = null, 2.5, null)"));
    v[1].num = 1, v[2] = (pg_host_value){PG_HOST_BOOL, 1, "TRUE"};
    CHECK(pg_callback_state_parse("f", 1, v, &best, &be, &w) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "= null, 1, TRUE)") != NULL);
    CHECK(pg_callback_state_parse("f", 0, v, &best, &be, &w) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "= ?, ?, ?)") != NULL);
    pg_clear_error();
}

/* ag_fit's progress texts: the epoch line, the bar's status, measuring with NULL, truncation */
static void test_progress_lines(void)
{
    double l[PG_FIT_LOG_ALL];
    for (int k = 0; k < PG_FIT_LOG_ALL; k++) l[k] = NAN;
    l[PG_FIT_LOG_LOSS] = 0.5, l[PG_FIT_LOG_VAL_ACCURACY] = 0.75;
    l[PG_FIT_LOG_TIME_TRAIN] = 1, l[PG_FIT_LOG_TIME_VAL] = 0.25;
    char buf[128];
    const char *want = "epoch    3/10  loss=0.50000  val_acc=0.7500  (1.25s)";
    CHECK(pg_fit_epoch_line(l, 3, 10, NULL, 0) == (int64_t)strlen(want));
    CHECK(pg_fit_epoch_line(l, 3, 10, buf, sizeof buf) == (int64_t)strlen(want));
    CHECK(!strcmp(buf, want));
    CHECK(pg_fit_epoch_line(l, 3, 10, buf, 8) == (int64_t)strlen(want) && !strcmp(buf, "epoch  "));
    /* times as keras prints them (one rule for the line and the History's column) */
    const double secs[] = {0,     4e-6,   0.0009994, 0.0009996, 0.0126, 0.9994, 0.9996,
                           59.99, 59.996, 125,       3599.4,    3599.6, 3725,   NAN};
    const char *txt[] = {"0us",     "4us",        "999us",      "1ms",    "13ms",
                         "999ms",   "1.00s",      "59.99s",     "1m 00s", "2m 05s",
                         "59m 59s", "1h 00m 00s", "1h 02m 05s", "-"};
    for (int i = 0; i < (int)(sizeof secs / sizeof *secs); i++) {
        char w[64];
        l[PG_FIT_LOG_TIME_TRAIN] = secs[i], l[PG_FIT_LOG_TIME_VAL] = 0;
        snprintf(w, sizeof w, "epoch    3/10  loss=0.50000  val_acc=0.7500  (%s)", txt[i]);
        CHECK(pg_fit_epoch_line(l, 3, 10, buf, sizeof buf) == (int64_t)strlen(w) &&
              !strcmp(buf, w));
    }
    l[PG_FIT_LOG_COUNT + 2 * (PG_METRIC_AUC - 1) + 1] = 0.8125; /* a metric column: val_auc */
    CHECK(pg_fit_epoch_line(l, 3, 10, buf, sizeof buf) > 0);
    CHECK(!strcmp(buf, "epoch    3/10  loss=0.50000  val_acc=0.7500  val_auc=0.8125  (-)"));
    CHECK(pg_fit_status_line(0.25, NAN, l, buf, sizeof buf) > 0);
    CHECK(!strcmp(buf, "loss 0.2500 | val_acc 0.750"));
    CHECK(pg_fit_status_line(NAN, NAN, NULL, buf, sizeof buf) == 0 && !buf[0]);
    CHECK(pg_fit_epoch_line(NULL, 1, 1, buf, 8) == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

void test_fit_stop(void)
{
    test_state_parse();
    test_progress_lines();
    int code = -1;
    CHECK(pg_fit_log_parse("f", "monitor", "val_accuracy", &code) == 0);
    CHECK(code == PG_FIT_LOG_VAL_ACCURACY);
    CHECK(strcmp(pg_fit_log_name(code), "val_accuracy") == 0 && !pg_fit_log_name(-1));
    CHECK(pg_fit_log_parse("f", "monitor", "val_los", &code) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "f: monitor must be \"loss\", ") != NULL);
    CHECK(strstr(pg_last_error(),
                 " or \"time_val\" (or an ag_fit(metrics =) column such as \"auc\" or \"val_f1\"), "
                 "got \"val_los\"") != NULL);
    CHECK(pg_monitor_mode_parse("f", NULL, &code) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "got nothing") != NULL);
    CHECK_ERR(pg_monitor_arg_fail("f", "mode", "NoneType", 0), PG_STATUS_ERR_ARG,
              "f: mode must be a single string such as 'max', got NoneType");
    CHECK_ERR(pg_monitor_arg_fail("f", "monitor", "numeric", 1), PG_STATUS_ERR_ARG,
              "f: monitor must be NULL or a single string such as \"val_loss\", got numeric");
    CHECK_ERR(pg_monitor_arg_fail("f", "monitor", "int", 0), PG_STATUS_ERR_ARG,
              "f: monitor must be None or a single string such as 'val_loss', got int");
    /* both arguments in one call, in the hosts' order: mode first, then monitor */
    int two[2] = {9, 9};
    CHECK(pg_monitor_args("f", "max", NULL, NULL, NULL, 0, two, two + 1) == PG_STATUS_OK);
    CHECK(two[0] == PG_MONITOR_MODE_MAX && two[1] == -1);
    CHECK(pg_monitor_args("f", "auto", NULL, "val_loss", NULL, 1, two, two + 1) == 0);
    CHECK(two[0] == PG_MONITOR_MODE_AUTO && two[1] == PG_FIT_LOG_VAL_LOSS);
    CHECK_ERR(pg_monitor_args("f", NULL, "NoneType", NULL, "int", 0, two, two + 1),
              PG_STATUS_ERR_ARG, "f: mode must be a single string such as 'max', got NoneType");
    CHECK_ERR(pg_monitor_args("f", "up", NULL, NULL, "int", 0, two, two + 1), PG_STATUS_ERR_VALUE,
              "f: mode must be");
    CHECK_ERR(pg_monitor_args("f", "min", NULL, NULL, "numeric", 1, two, two + 1),
              PG_STATUS_ERR_ARG, "f: monitor must be NULL or a single string");
    CHECK_ERR(pg_monitor_args("f", "min", NULL, "val_los", NULL, 1, two, two + 1),
              PG_STATUS_ERR_VALUE, "got \"val_los\"");
    CHECK(pg_monitor_args("f", "min", NULL, NULL, NULL, 0, NULL, two) == PG_STATUS_ERR_ARG);

    pg_early_stop_params p = pg_early_stop_default_params();
    CHECK(p.patience == 5 && p.min_delta == 0 && p.restore_best && p.monitor == -1);
    p.patience = 0;
    CHECK(!pg_early_stop_new(&p) && pg_last_status() == PG_STATUS_ERR_VALUE);
    p.patience = 2;
    p.min_delta = NAN;
    CHECK(!pg_early_stop_new(&p));
    p.min_delta = 0.1;
    pg_early_stop *es = pg_early_stop_new(&p);
    CHECK(es != NULL);
    double logs[PG_FIT_LOG_COUNT] = {0};
    int act;
    CHECK(pg_early_stop_update(es, 1, logs, &act) == PG_STATUS_ERR_STATE); /* before begin */
    /* auto without validation watches loss, downwards; an improvement must beat min_delta */
    CHECK(pg_early_stop_begin(es, 0, 1) == 0);
    CHECK(epoch(es, 1, PG_FIT_LOG_LOSS, 1.0) == PG_EARLY_STOP_SNAPSHOT);
    CHECK(epoch(es, 2, PG_FIT_LOG_LOSS, 0.95) == PG_EARLY_STOP_CONTINUE);
    CHECK(epoch(es, 3, PG_FIT_LOG_LOSS, 0.85) == PG_EARLY_STOP_SNAPSHOT);
    CHECK(epoch(es, 4, PG_FIT_LOG_LOSS, NAN) == PG_EARLY_STOP_CONTINUE);
    CHECK(epoch(es, 5, PG_FIT_LOG_LOSS, 0.1) == PG_EARLY_STOP_SNAPSHOT);
    CHECK(epoch(es, 6, PG_FIT_LOG_LOSS, 0.2) == PG_EARLY_STOP_CONTINUE);
    CHECK(epoch(es, 7, PG_FIT_LOG_LOSS, 0.05) == PG_EARLY_STOP_STOP);
    pg_early_stop_state s;
    CHECK(pg_early_stop_get_state(es, &s) == 0);
    CHECK(s.best == 0.1 && s.best_epoch == 5 && s.wait == 2 && s.stopped_epoch == 7);
    int restore = -1;
    CHECK(pg_early_stop_end(es, 7, &restore) == 0 && restore == 1);
    CHECK(pg_early_stop_end(es, 5, &restore) == 0 && restore == 0);
    /* a new fit forgets the last one; auto with validation watches val_loss */
    CHECK(pg_early_stop_begin(es, 1, 0) == 0);
    CHECK(pg_early_stop_get_state(es, &s) == 0);
    CHECK(s.best == INFINITY && s.best_epoch == 0 && s.stopped_epoch == 0);
    CHECK(s.monitor == PG_FIT_LOG_VAL_LOSS && !s.maximize);
    CHECK(pg_early_stop_set_state(es, 1.0, -1, 0) == PG_STATUS_ERR_VALUE);
    CHECK(pg_early_stop_set_state(es, 0.5, 3, 1) == 0);
    CHECK(pg_early_stop_get_state(es, &s) == 0 && s.best == 0.5 && s.wait == 1);
    pg_early_stop_free(es);

    /* accuracy: auto maximises; a monitor the fit never measures is refused at begin */
    p = pg_early_stop_default_params();
    p.monitor = PG_FIT_LOG_VAL_ACCURACY;
    p.patience = 1;
    es = pg_early_stop_new(&p);
    /* known from the monitor's name before any fit: the max mode's start (issue 29) */
    CHECK(pg_early_stop_get_state(es, &s) == 0 && s.best == -INFINITY && s.maximize);
    CHECK(pg_early_stop_begin(es, 0, 1) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "only with validation data") != NULL);
    CHECK(pg_early_stop_begin(es, 1, 0) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "only when ag_fit counts accuracy") != NULL);
    CHECK(pg_early_stop_begin(es, 1, 1) == 0);
    CHECK(epoch(es, 1, PG_FIT_LOG_VAL_ACCURACY, 0.5) == PG_EARLY_STOP_SNAPSHOT);
    CHECK(epoch(es, 2, PG_FIT_LOG_VAL_ACCURACY, 0.75) == PG_EARLY_STOP_SNAPSHOT);
    CHECK(epoch(es, 3, PG_FIT_LOG_VAL_ACCURACY, 0.75) == PG_EARLY_STOP_STOP); /* not above */
    pg_early_stop_free(es);
    /* without restore_best a new best asks for no snapshot, and nothing goes back at the end */
    p.restore_best = 0;
    es = pg_early_stop_new(&p);
    CHECK(es && pg_early_stop_begin(es, 1, 1) == 0);
    CHECK(epoch(es, 1, PG_FIT_LOG_VAL_ACCURACY, 0.5) == PG_EARLY_STOP_IMPROVED);
    CHECK(epoch(es, 2, PG_FIT_LOG_VAL_ACCURACY, 0.5) == PG_EARLY_STOP_STOP);
    CHECK(pg_early_stop_end(es, 2, &restore) == 0 && restore == 0);
    pg_early_stop_free(es);
    p.mode = PG_MONITOR_MODE_COUNT;
    CHECK(!pg_early_stop_new(&p));
    CHECK(!pg_early_stop_new(NULL) && pg_last_status() == PG_STATUS_ERR_ARG);
    pg_clear_error();
}

/* pg_checkpoint: every / last epoch, and save_best_only's monitor */
void test_checkpoint_policy(void)
{
    pg_checkpoint_params p = pg_checkpoint_default_params();
    CHECK(p.every == 1 && !p.best_only && p.monitor == -1);
    p.every = 0;
    CHECK(!pg_checkpoint_new(&p) && strstr(pg_last_error(), "every must be an integer >= 1"));
    p.every = 2;
    pg_checkpoint *c = pg_checkpoint_new(&p);
    int save = -1;
    CHECK(pg_checkpoint_begin(c, 5, 0, 0) == 0); /* the monitor is not read: nothing needed */
    double logs[PG_FIT_LOG_COUNT];
    for (int i = 0; i < PG_FIT_LOG_COUNT; i++) logs[i] = NAN;
    int saved = 0;
    for (int64_t e = 1; e <= 5; e++) {
        CHECK(pg_checkpoint_update(c, e, logs, &save) == 0);
        saved = saved * 10 + (save ? (int)e : 0);
    }
    CHECK(saved == 2045); /* epochs 2, 4 and the last */
    pg_checkpoint_free(c);
    p.best_only = 1;
    p.every = 1;
    p.monitor = PG_FIT_LOG_VAL_LOSS;
    c = pg_checkpoint_new(&p);
    CHECK(pg_checkpoint_begin(c, 4, 0, 1) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "ag_model_checkpoint: monitor \"val_loss\"") != NULL);
    CHECK(pg_checkpoint_begin(c, 4, 1, 1) == 0);
    const double v[4] = {1.0, 1.5, 0.5, 0.5};
    saved = 0;
    for (int e = 0; e < 4; e++) {
        logs[PG_FIT_LOG_VAL_LOSS] = v[e];
        CHECK(pg_checkpoint_update(c, e + 1, logs, &save) == 0);
        saved = saved * 10 + (save ? e + 1 : 0);
    }
    CHECK(saved == 1030);
    pg_early_stop_state s;
    CHECK(pg_checkpoint_get_state(c, &s) == 0 && s.best == 0.5 && s.best_epoch == 3);
    CHECK(pg_checkpoint_set_state(c, NAN, 1) == PG_STATUS_ERR_VALUE);
    CHECK(strstr(pg_last_error(), "ag_model_checkpoint: the checkpoint's") != NULL);
    pg_checkpoint_free(c);
    pg_clear_error();
}

/* ag_model_checkpoint's path rule (fit_ckpt_path.c) */
void test_checkpoint_path(void)
{
    char b[64];
    CHECK(pg_checkpoint_path("m_{epoch}.st", 7, b, sizeof b) == 6 && !strcmp(b, "m_7.st"));
    CHECK(pg_checkpoint_path("m{epoch:03d}", 7, b, sizeof b) == 4 && !strcmp(b, "m007"));
    CHECK(pg_checkpoint_path("m{epoch:3d}", 12, b, sizeof b) == 4 && !strcmp(b, "m 12"));
    CHECK(pg_checkpoint_path("a{{b}}_{epoch:d}", 2, b, sizeof b) == 6 && !strcmp(b, "a{b}_2"));
    CHECK(pg_checkpoint_path("plain", 2, b, sizeof b) == 5 && !strcmp(b, "plain"));
    CHECK(pg_checkpoint_path("abcdef{epoch}", 123, b, 4) == 9 && !strcmp(b, "abc")); /* cut */
    CHECK(pg_checkpoint_path("{epoch}", 1, NULL, 0) == 1);                           /* length */
    const char *refused[] = {"m_{ep}", "m_{}",        "m_{0}",    "m_{epoch",
                             "m}",     "m_{epoch:x}", "{epoch:3}"};
    for (int i = 0; i < 7; i++)
        CHECK_ERR(pg_checkpoint_path(refused[i], 1, b, sizeof b) < 0, PG_STATUS_ERR_VALUE,
                  "has a placeholder other than {epoch} (write a literal brace as {{ or }})");
    CHECK(pg_checkpoint_path_check("ck_{epoch}.st") == 0); /* the working directory */
    CHECK(pg_checkpoint_path_check("/tmp/ck_{epoch}.st") == 0);
    CHECK_ERR(pg_checkpoint_path_check("/no/such/dir/ck.st"), PG_STATUS_ERR_VALUE,
              "ag_model_checkpoint: directory '/no/such/dir' of path '/no/such/dir/ck.st' does not "
              "exist");
    CHECK_ERR(pg_checkpoint_path_check(""), PG_STATUS_ERR_VALUE, "path must be a file name");
    CHECK_ERR(pg_checkpoint_path_check(NULL), PG_STATUS_ERR_ARG, "NULL path");
}

/* the seed rule (rng_seed.c): R's as.integer(seed), then set.seed's refusal */
void test_seed_rule(void)
{
    pg_seed_arg a = pg_seed_default_arg();
    int32_t s = 0;
    a.v = 7.9;
    CHECK(pg_seed_parse(&a, &s) == 0 && s == 7);
    a.v = -5.7;
    CHECK(pg_seed_parse(&a, &s) == 0 && s == -5);
    a.v = 2147483647.0;
    CHECK(pg_seed_parse(&a, &s) == 0 && s == 2147483647);
    a.v = -2147483648.0; /* NA_integer_ in R */
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_VALUE,
              "ggml_set_seed: supplied seed is not a valid integer, got -2147483648");
    a.v = 1.5e10;
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_VALUE, "not a valid integer, got 1.5e+10");
    a.v = NAN;
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_VALUE,
              "ggml_set_seed: `seed` must be a single non-NA integer (or NULL). Got nan.");
    a.kind = PG_SEED_STRING, a.s = " 3.9 ";
    CHECK(pg_seed_parse(&a, &s) == 0 && s == 3);
    a.s = "1e3";
    CHECK(pg_seed_parse(&a, &s) == 0 && s == 1000);
    a.s = "abc";
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_VALUE, "not a valid integer, got \"abc\"");
    a.s = "3x";
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_VALUE, "not a valid integer");
    a.kind = PG_SEED_OTHER, a.shown = "TRUE", a.fn = "ag_fit";
    CHECK_ERR(pg_seed_parse(&a, &s), PG_STATUS_ERR_ARG,
              "ag_fit: `seed` must be a single non-NA integer (or NULL). Got TRUE.");
    CHECK_ERR(pg_seed_parse(NULL, &s), PG_STATUS_ERR_ARG, "NULL argument");
}
