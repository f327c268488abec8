/* ag_fit's compiled steps in the training session (native/fit_session.c): when it asks for the
 * probe and the recordings (PROBE, RECORD, RECORD_VAL), its verdict on the probe, the fallback
 * (static = None: the batch again eagerly, the notice once, after the first eager step or before
 * validation's) and static = TRUE's error. The "steps" are forward graphs of sum(y) on the plan's
 * batch tensors: the session replays them as the host's compiled steps. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

/* a graph of sum(y) recorded on the plan's batch tensors of batch b (the caller frees it) */
static pg_graph *sum_y(pg_fit *f, int val, int64_t b, pg_tensor **out)
{
    pg_tensor *in[2] = {NULL, NULL};
    if (pg_fit_batch(f, val, b, &in[0], &in[1]) < 0 || pg_graph_record_begin()) return NULL;
    *out = pg_sum(in[1], 0);
    pg_graph *g = pg_graph_record_end(*out, in, 2, PG_GRAPH_BUILD_FORWARD, NULL);
    REL(in[0]);
    REL(in[1]);
    return g;
}

/* an eager answer: the batch recorded with loss 1 */
static void eager(pg_fit *f, pg_session *s, int val)
{
    pg_session_pos at;
    pg_tensor *xb = NULL, *yb = NULL;
    pg_session_where(s, &at);
    pg_fit_batch(f, val, at.batch, &xb, &yb);
    CHECK(pg_fit_record(f, val, 1, xb) == 0);
    REL(xb);
    REL(yb);
}

static int next(pg_session *s)
{
    int e = -1;
    CHECK(pg_session_next(s, &e) == 0);
    return e;
}

void test_fit_session_static(void)
{
    session_plan sp;
    pg_fit *f = session_plan_new(&sp);
    pg_session_params d = pg_session_default_params();
    CHECK(d.static_step == 0 && d.auto_static == 0 && d.r_spelling == 0);
    CHECK(!strcmp(pg_session_event_name(PG_SESSION_RECORD_VAL), "record_val"));
    CHECK(!strcmp(pg_session_event_name(PG_SESSION_NOTICE), "notice"));
    char buf[1024];
    pg_session_pos at;
    { /* the static mode is the setup's when given (static = None, a custom model: probed);
       * the progress total: epochs first..nepoch of 3 batches */
        pg_fit_setup *su = NULL;
        pg_fit_setup_params sp0 = pg_fit_setup_default_params();
        CHECK(pg_fit_setup_new(&sp0, &su) == 0 && d.setup == NULL);
        d.nepoch = 1, d.setup = su;
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_PROBE);
        pg_session_free(s);
        sp0.static_mode = 0;
        pg_fit_setup_free(su);
        CHECK(pg_fit_setup_new(&sp0, &su) == 0);
        d.setup = su, d.static_step = 1, d.auto_static = 1; /* the setup's (eager) win */
        s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_TRAIN_BATCH);
        pg_session_free(s);
        pg_fit_setup_free(su);
        d.setup = NULL;
        CHECK(pg_fit_total_batches(f, 5, 4) == 6 && pg_fit_total_batches(f, 1, 1) == 3);
        CHECK(pg_fit_total_batches(f, 2, 4) == 0);
        CHECK_ERR(pg_fit_total_batches(NULL, 1, 1) < 0, PG_STATUS_ERR_ARG, "NULL fit");
    }
    d.nepoch = 1, d.static_step = 1, d.auto_static = 1;

    { /* static = None, the replay differs: batch 1 eagerly, then the notice, once */
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_PROBE);
        CHECK(pg_session_where(s, &at) == 0 && at.batch == 0 && at.other == 2);
        int e;
        CHECK_ERR(pg_session_next(s, &e) != 0, PG_STATUS_ERR_STATE,
                  "the probe on training batch 1 was neither reported nor failed");
        CHECK(pg_session_probe(s, 1.0, 2.0) == 0);
        CHECK_ERR(pg_session_probe(s, 1.0, 1.0) != 0, PG_STATUS_ERR_STATE, "reported once");
        CHECK_ERR(pg_session_notice(s, buf, sizeof buf) < 0, PG_STATUS_ERR_STATE, "its event");
        CHECK(next(s) == PG_SESSION_TRAIN_BATCH && pg_session_where(s, &at) == 0 && !at.batch);
        eager(f, s, 0);
        CHECK(next(s) == PG_SESSION_NOTICE);
        CHECK(pg_session_notice(s, buf, sizeof buf) > 0);
        CHECK(!strcmp(buf,
                      "ag_fit: static=None runs this model eagerly (its step cannot be "
                      "compiled safely: a replay of the recorded step gives loss 2 where "
                      "the eager step gives 1 on batch 3 (the forward reads tensor values "
                      "in host code or branches on them)); static=False silences this "
                      "notice"));
        const int want[] = {2, 2, 4, 5, 6, 7, 8, 0}; /* eager from now on, no notice again */
        for (int k = 0; k < 8; k++) {
            const int ev = next(s);
            CHECK(ev == want[k]);
            if (ev == PG_SESSION_TRAIN_BATCH || ev == PG_SESSION_VAL_BATCH)
                eager(f, s, ev == PG_SESSION_VAL_BATCH);
        }
        CHECK(pg_session_where(s, &at) == 0 && at.step == 3);
        pg_session_free(s);
    }
    { /* static = None, the probe agrees: the step recorded; eval mode's forward fails: the
         notice at once (R's words), then validation eagerly */
        d.r_spelling = 1;
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_PROBE);
        CHECK(pg_session_probe(s, 0.5, 0.5) == 0 && next(s) == PG_SESSION_RECORD);
        CHECK(pg_session_where(s, &at) == 0 && at.batch == 0);
        pg_tensor *out = NULL;
        pg_graph *g = sum_y(f, 0, 0, &out);
        CHECK(g && pg_session_set_static(s, 0, 5, g, out) == 0);
        CHECK(next(s) == PG_SESSION_TRAIN_END && next(s) == PG_SESSION_VAL_BEGIN);
        CHECK(pg_session_where(s, &at) == 0 && at.step == 3);
        CHECK(next(s) == PG_SESSION_RECORD_VAL);
        CHECK(pg_session_static_fail(s, "no rule for op x") == 0);
        CHECK_ERR(pg_session_static_fail(s, "again") != 0, PG_STATUS_ERR_STATE, "once");
        CHECK(next(s) == PG_SESSION_NOTICE && pg_session_notice(s, buf, sizeof buf) > 0);
        CHECK(!strcmp(buf,
                      "ag_fit: static = NULL runs this model eagerly (its step cannot be "
                      "compiled safely: no rule for op x); static = FALSE silences this "
                      "notice"));
        CHECK(next(s) == PG_SESSION_VAL_BATCH);
        eager(f, s, 1);
        CHECK(next(s) == PG_SESSION_VAL_END && next(s) == PG_SESSION_EPOCH_END);
        double logs[PG_FIT_LOG_COUNT];
        char msg[512];
        CHECK(pg_session_logs(s, logs, msg, sizeof msg) == 0);
        CHECK(logs[PG_FIT_LOG_VAL_LOSS] == 1);
        pg_session_free(s);
        pg_graph_free(g);
        REL(out);
    }
    { /* static = None, the recording fails after the probe: eager, the notice after the step */
        d.batch_events = 1;
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_PROBE);
        CHECK(pg_session_static_fail(s, "checkpointed") == 0);
        CHECK(next(s) == PG_SESSION_TRAIN_BATCH);
        eager(f, s, 0);
        CHECK(next(s) == PG_SESSION_NOTICE && pg_session_notice(s, buf, sizeof buf) > 0);
        CHECK(strstr(buf, "safely: checkpointed)") != NULL);
        CHECK(next(s) == PG_SESSION_BATCH_END && pg_session_where(s, &at) == 0 && at.step == 1);
        pg_session_free(s);
        d.batch_events = 0;
    }
    { /* static = TRUE (or a built-in model): recorded at once, validation per width; a
         recording that fails is the host's error */
        d.auto_static = 0;
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_RECORD);
        CHECK(pg_session_static_fail(s, "no") == 1);
        pg_session_free(s);
        s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_RECORD);
        pg_tensor *out = NULL, *vout = NULL;
        pg_graph *g = sum_y(f, 0, 0, &out);
        CHECK(g && pg_session_set_static(s, 0, 5, g, out) == 0);
        CHECK(next(s) == PG_SESSION_TRAIN_END && next(s) == PG_SESSION_VAL_BEGIN);
        CHECK(next(s) == PG_SESSION_RECORD_VAL);
        pg_graph *gv = sum_y(f, 1, 0, &vout);
        CHECK(gv && pg_session_set_static(s, 1, 5, gv, vout) == 0);
        CHECK(next(s) == PG_SESSION_VAL_END && next(s) == PG_SESSION_EPOCH_END);
        CHECK(next(s) == PG_SESSION_DONE);
        CHECK_ERR(pg_session_static_fail(s, "late") != 0, PG_STATUS_ERR_STATE, "its event");
        pg_session_free(s);
        pg_graph_free(g);
        pg_graph_free(gv);
        REL(out);
        REL(vout);
    }
    { /* eager (static = FALSE): no compiled-step events */
        d.static_step = 0;
        pg_session *s = pg_session_new(f, &d);
        CHECK(next(s) == PG_SESSION_EPOCH_BEGIN && next(s) == PG_SESSION_TRAIN_BATCH);
        pg_session_free(s);
    }
    session_plan_free(&sp);
}
