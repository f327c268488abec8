/* ag_fit's training session (native/fit_session.c): the event order, the epoch's logs, the
 * answered-batch rule, stops and the divergence guard. The host's answers here are recorded
 * losses (no model): loss = the batch's number, so the logs are known exactly. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

/* one run: every batch event recorded with a loss of b + 1 (validation: 10); events into ev */
static int drive(pg_fit *f, pg_session *s, int *ev, int cap, double nan_at_epoch)
{
    int n = 0, e = -1;
    pg_session_pos at;
    while (n < cap && pg_session_next(s, &e) == 0) {
        ev[n++] = e;
        if (e == PG_SESSION_DONE) break;
        pg_session_where(s, &at);
        if (e == PG_SESSION_TRAIN_BATCH || e == PG_SESSION_VAL_BATCH) {
            const int val = e == PG_SESSION_VAL_BATCH;
            pg_tensor *xb = NULL, *yb = NULL;
            pg_fit_batch(f, val, at.batch, &xb, &yb);
            double l = val ? 10 : (double)(at.batch + 1);
            if (!val && at.epoch == nan_at_epoch) l = NAN;
            pg_fit_record(f, val, l, xb);
            REL(xb);
            REL(yb);
        }
    }
    return n;
}

/* the sessions' plan: x [2, 20] = 0..39, y [1, 20] = 0..19, batches of 5, 15 training (3
 * batches) and 5 held out, seed 3 (test_fit_session_static.c uses it too) */
pg_fit *session_plan_new(session_plan *sp)
{
    double xv[2 * 20], yv[20];
    for (int i = 0; i < 40; i++) xv[i] = i;
    for (int i = 0; i < 20; i++) yv[i] = i;
    sp->x = pg_tensor_new(PG_DTYPE_F64, 2, 20, xv, PG_DTYPE_F64, 1, 2);
    sp->y = pg_tensor_new(PG_DTYPE_F64, 1, 20, yv, PG_DTYPE_F64, 1, 1);
    sp->r = pg_rng_new_seeded(3);
    pg_fit_params fp = pg_fit_default_params();
    fp.rng = sp->r, fp.batch_size = 5, fp.val_split = 0.25;
    sp->f = pg_fit_new(sp->x, sp->y, &fp);
    CHECK(sp->f != NULL);
    return sp->f;
}

void session_plan_free(session_plan *sp)
{
    pg_fit_free(sp->f);
    pg_rng_free(sp->r);
    REL(sp->x);
    REL(sp->y);
}

void test_fit_session(void)
{
    { /* static = NULL's probe verdict: every digit, both languages' text */
        char b[512];
        CHECK(pg_fit_probe_why(0.5, 0.5, 2, b, sizeof b) == 0);
        CHECK(pg_fit_probe_why(NAN, NAN, 2, b, sizeof b) == 0);
        CHECK(pg_fit_probe_why(0.0, -0.0, 2, b, sizeof b) == 0);
        CHECK(pg_fit_probe_why(0.1, 0.2, 3, b, sizeof b) > 0);
        CHECK(!strcmp(b,
                      "a replay of the recorded step gives loss 0.20000000000000001 where the "
                      "eager step gives 0.10000000000000001 on batch 3 (the forward reads "
                      "tensor values in host code or branches on them)"));
        CHECK(pg_fit_probe_why(1, INFINITY, 1, b, sizeof b) > 0 && strstr(b, "loss inf where"));
    }
    pg_session_params d = pg_session_default_params();
    CHECK(d.nepoch == 30 && d.first_epoch == 1 && d.per_datapoint == 1 && d.batch_events == 0);
    CHECK(!strcmp(pg_session_event_name(PG_SESSION_VAL_BATCH), "val_batch"));
    CHECK(pg_session_event_name(PG_SESSION_EVENT_COUNT) == NULL);

    session_plan sp;
    pg_fit *f = session_plan_new(&sp);

    /* two epochs: the order of events, the logs */
    d.nepoch = 2;
    pg_session *s = pg_session_new(f, &d);
    int ev[64];
    const int want[] = {1, 2, 2, 2, 4, 5, 6, 7, 8};
    int n = 0, e = -1;
    for (int k = 0; k < 9; k++) {
        CHECK(pg_session_next(s, &e) == 0 && e == want[k]);
        pg_session_pos at;
        pg_session_where(s, &at);
        if (e == PG_SESSION_EPOCH_BEGIN) CHECK(pg_session_set_lr(s, 0.5) == 0);
        pg_tensor *xb = NULL, *yb = NULL, *wb = NULL;
        if (e == PG_SESSION_TRAIN_BATCH || e == PG_SESSION_VAL_BATCH) {
            const int val = e == PG_SESSION_VAL_BATCH; /* the event's batch; no weights */
            CHECK(pg_session_batch(s, &xb, &yb, &wb) == 5 && xb && !wb);
            CHECK(pg_fit_record(f, val, val ? 10 : (double)(at.batch + 1), xb) == 0);
            REL(xb);
            REL(yb);
        } else
            CHECK_ERR(pg_session_batch(s, &xb, &yb, &wb) < 0, PG_STATUS_ERR_STATE,
                      "no batch at this session event");
        if (e != PG_SESSION_EPOCH_END) /* logs only at an epoch's end; stops too */
            CHECK_ERR(pg_session_stop(s) != 0, PG_STATUS_ERR_STATE, "at an epoch's end");
    }
    double logs[PG_FIT_LOG_COUNT];
    char msg[512];
    CHECK(pg_session_logs(s, logs, msg, sizeof msg) == 0 && msg[0] == 0);
    CHECK(logs[PG_FIT_LOG_LOSS] == 2 && logs[PG_FIT_LOG_VAL_LOSS] == 10);
    CHECK(logs[PG_FIT_LOG_LR] == 0.5 && isnan(logs[PG_FIT_LOG_ACCURACY]));
    CHECK(logs[PG_FIT_LOG_TIME_TRAIN] >= 0 && logs[PG_FIT_LOG_TIME_VAL] >= 0);
    { /* the History's columns in their order (no metrics: the 11 logs) and values */
        const char *cols[] = {"lr",           "time_train",       "loss",     "loss_unc",
                              "accuracy",     "accuracy_unc",     "val_loss", "val_loss_unc",
                              "val_accuracy", "val_accuracy_unc", "time_val"};
        CHECK(pg_session_log_count(s) == 11 && !pg_session_log_name(s, 11));
        for (int i = 0; i < 11; i++) CHECK(!strcmp(pg_session_log_name(s, i), cols[i]));
        double v[11];
        CHECK(pg_session_epoch_logs(s, v, 11, msg, sizeof msg) == 0 && v[0] == 0.5);
        CHECK(v[2] == 2 && v[6] == 10 && isnan(v[4]) && v[10] == logs[PG_FIT_LOG_TIME_VAL]);
        v[0] = -1;
        CHECK_ERR(pg_session_epoch_logs(s, v, 10, msg, sizeof msg), PG_STATUS_ERR_ARG,
                  "ag_fit: the logs take 11 values, got room for 10");
        CHECK(v[0] == -1);
    }
    n = drive(f, s, ev, 64, -1); /* epoch 2, then done */
    CHECK(n == 10 && ev[0] == PG_SESSION_EPOCH_BEGIN && ev[9] == PG_SESSION_DONE);
    pg_session_pos at;
    CHECK(pg_session_where(s, &at) == 0 && at.epoch == 2 && at.step == 6 && at.stopped_epoch == 0);
    CHECK(at.loss == 3);                                        /* the last training batch's */
    CHECK(pg_session_next(s, &e) == 0 && e == PG_SESSION_DONE); /* and stays done */
    pg_session_free(s);

    /* an unanswered batch is an error naming it */
    s = pg_session_new(f, &d);
    CHECK(pg_session_next(s, &e) == 0 && pg_session_next(s, &e) == 0);
    CHECK_ERR(pg_session_next(s, &e) != 0, PG_STATUS_ERR_STATE,
              "ag_fit: training batch 1 of epoch 1 was neither recorded nor handed back");
    pg_session_free(s);

    /* batch_events: BATCH_END after each training batch; a stop at the first epoch's end */
    d.batch_events = 1, d.nepoch = 5;
    s = pg_session_new(f, &d);
    n = 0;
    while (n < 64 && pg_session_next(s, &e) == 0 && e != PG_SESSION_EPOCH_END) {
        ev[n++] = e;
        if (e == PG_SESSION_TRAIN_BATCH || e == PG_SESSION_VAL_BATCH) {
            pg_tensor *xb = NULL, *yb = NULL;
            pg_session_where(s, &at);
            pg_fit_batch(f, e == PG_SESSION_VAL_BATCH, at.batch, &xb, &yb);
            pg_fit_record(f, e == PG_SESSION_VAL_BATCH, 1, xb);
            REL(xb);
            REL(yb);
        }
    }
    CHECK(n == 11 && ev[2] == PG_SESSION_BATCH_END && ev[6] == PG_SESSION_BATCH_END);
    CHECK(pg_session_stop(s) == 0 && pg_session_next(s, &e) == 0 && e == PG_SESSION_DONE);
    CHECK(pg_session_where(s, &at) == 0 && at.stopped_epoch == 1 && at.step == 3);
    pg_session_free(s);

    /* a NaN loss in epoch 2 ends the run there, with ag_fit's warning */
    d.batch_events = 0;
    s = pg_session_new(f, &d);
    n = drive(f, s, ev, 9, -1);
    n = drive(f, s, ev, 9, 2);
    CHECK(n == 9 && ev[8] == PG_SESSION_EPOCH_END);
    CHECK(pg_session_logs(s, logs, msg, sizeof msg) == 1 && isnan(logs[PG_FIT_LOG_LOSS]));
    CHECK(strstr(msg, "ag_fit: the training loss of epoch 2 is NaN: training stops here") != NULL);
    CHECK(pg_session_next(s, &e) == 0 && e == PG_SESSION_DONE);
    CHECK(pg_session_where(s, &at) == 0 && at.stopped_epoch == 2);
    pg_session_free(s);

    /* resuming after the last epoch: nothing to run; bad settings are refused */
    d.first_epoch = 6;
    s = pg_session_new(f, &d);
    CHECK(s && pg_session_next(s, &e) == 0 && e == PG_SESSION_DONE);
    pg_session_free(s);
    d.first_epoch = 0;
    CHECK_ERR(!pg_session_new(f, &d), PG_STATUS_ERR_VALUE, "ag_fit: nepoch must be >= 0");
    CHECK_ERR(!pg_session_new(NULL, &d), PG_STATUS_ERR_ARG, "NULL plan");
    CHECK_ERR(pg_session_next(NULL, &e) != 0, PG_STATUS_ERR_ARG, "NULL session");

    /* metrics: their columns after the logs (each, then val_), over the whole epoch */
    const int codes[2] = {PG_METRIC_MAE, PG_METRIC_MSE};
    CHECK(pg_fit_metrics(f, 2, codes) == 0);
    d.first_epoch = 1, d.nepoch = 1;
    s = pg_session_new(f, &d);
    CHECK(pg_session_log_count(s) == 15 && !strcmp(pg_session_log_name(s, 11), "mae"));
    CHECK(!strcmp(pg_session_log_name(s, 12), "mse") &&
          !strcmp(pg_session_log_name(s, 14), "val_mse"));
    e = -1; /* the targets recorded as the outputs: MAE and MSE 0 */
    while (pg_session_next(s, &e) == 0 && e != PG_SESSION_EPOCH_END) {
        if (e != PG_SESSION_TRAIN_BATCH && e != PG_SESSION_VAL_BATCH) continue;
        pg_tensor *xb = NULL, *yb = NULL;
        pg_session_where(s, &at);
        pg_fit_batch(f, e == PG_SESSION_VAL_BATCH, at.batch, &xb, &yb);
        CHECK(pg_fit_record(f, e == PG_SESSION_VAL_BATCH, 1, yb) == 0);
        REL(xb);
        REL(yb);
    }
    double mv[15];
    CHECK(e == PG_SESSION_EPOCH_END && pg_session_epoch_logs(s, mv, 15, msg, sizeof msg) == 0);
    CHECK(mv[11] == 0 && mv[12] == 0 && mv[13] == 0 && mv[14] == 0 && mv[2] == 1);
    pg_session_free(s);
    const int *kept = codes;
    CHECK(pg_fit_metrics(f, 0, NULL) == 0 && pg_fit_metric_codes(f, &kept) == 0 && !kept);

    session_plan_free(&sp);
}
