/* pg_fit_resume_check (native/fit_resume.c): a checkpoint's training state against a run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static char path[64];

/* a checkpoint file whose metadata are epoch (NULL: none) and extra (NULL: none) */
static void write_ckpt(const char *epoch, const char *extra)
{
    float w = 1;
    pg_st_tensor t = {"W", PG_ST_DTYPE_F32, 2, 1, 1, &w};
    const char *keys[2], *vals[2];
    int n = 0;
    if (epoch) keys[n] = "epoch", vals[n++] = epoch;
    if (extra) keys[n] = "extra", vals[n++] = extra;
    CHECK(pg_st_write(path, &t, 1, keys, vals, n) == 0);
}

/* extra with settings s, history h, rng_state r (JSON texts) */
static char *extra(const char *s, const char *h, const char *r)
{
    static char buf[16384];
    snprintf(buf, sizeof buf, "{\"fit\": {\"settings\": %s, \"history\": %s, \"rng_state\": %s}}",
             s, h, r);
    return buf;
}

static int resume(const char *settings)
{
    pg_clear_error();
    return pg_fit_resume_check(path, settings, (int64_t)strlen(settings));
}

void test_fit_resume(void)
{
    snprintf(path, sizeof path, "/tmp/pg-resume-%d.safetensors", (int)getpid());
    const char *run = "{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 1, \"val_split\": 0.2, "
                      "\"shuffle\": true, \"loss\": \"mse\", \"seed\": 3}";
    const char *saved = "{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 1, \"val_split\": 0.2, "
                        "\"shuffle\": true, \"loss\": \"mse\", \"seed\": 1, \"split_state\": null}";
    /* a real stream state */
    int32_t st[PG_RNG_STATE_LEN];
    pg_rng *r = pg_rng_new_seeded(7);
    CHECK(r && pg_rng_get_state(r, st) == 0);
    pg_rng_free(r);
    char rng[8192] = "[";
    for (int i = 0; i < PG_RNG_STATE_LEN; i++)
        snprintf(rng + strlen(rng), sizeof rng - strlen(rng), "%s%d", i ? "," : "", (int)st[i]);
    strcat(rng, "]");
    const char *hist = "{\"loss\": [0.5, null], \"stopped_epoch\": null, \"best_epoch\": 2}";

    write_ckpt("2", extra(saved, hist, rng));
    CHECK(resume(run) == 0);
    /* each setting must match: the JSON values in the message */
    CHECK_ERR(resume("{\"n\": 8, \"batch_size\": 2, \"nbatch_logical\": 1, \"val_split\": 0.2, "
                     "\"shuffle\": true, \"loss\": \"mse\"}") != 0,
              PG_STATUS_ERR_VALUE,
              "ag_fit: cannot resume: batch_size was 4 in the checkpoint, now 2");
    CHECK_ERR(resume("{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 1, \"val_split\": 0.2, "
                     "\"shuffle\": true, \"loss\": \"ce\"}") != 0,
              PG_STATUS_ERR_VALUE, "loss was \"mse\" in the checkpoint, now \"ce\"");
    CHECK_ERR(resume("{\"n\": 8, \"batch_size\": 4, \"val_split\": 0.2, \"shuffle\": true, "
                     "\"loss\": \"mse\"}") != 0,
              PG_STATUS_ERR_VALUE, "nbatch_logical was 1 in the checkpoint, now null");
    CHECK_ERR(resume("[1]") != 0, PG_STATUS_ERR_ARG, "settings must be an object");
    CHECK_ERR(resume("{") != 0, PG_STATUS_ERR_VALUE, "settings are not valid JSON");

    write_ckpt(NULL, extra(saved, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "is not a training checkpoint (no epoch)");
    write_ckpt("2x", extra(saved, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "(no epoch)");
    write_ckpt("2", NULL);
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "is not an ag_fit checkpoint (no training");
    write_ckpt("2", "[1, 2]");
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "(no training state)");
    write_ckpt("2", "{\"fit\": {\"settings\": 3}}");
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "(no training state)");

    const char *bad_seed =
        "{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 1, \"val_split\": 0.2, "
        "\"shuffle\": true, \"loss\": \"mse\", \"seed\": 2.5}";
    write_ckpt("2", extra(bad_seed, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "holds an unusable random-stream state");
    const char *bad_split = "{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 1, "
                            "\"val_split\": 0.2, \"shuffle\": true, \"loss\": \"mse\", "
                            "\"split_state\": [1, 2, 3]}";
    write_ckpt("2", extra(bad_split, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "'split_state': null, or an integer / 626");
    { /* 626 integers the generator refuses (state[0] not R's default kind): refused here,
       * before the plan would load it */
        static char wrong[4096];
        int k = snprintf(wrong, sizeof wrong, "%s",
                         "{\"n\": 8, \"batch_size\": 4, "
                         "\"nbatch_logical\": 1, \"val_split\": 0.2, \"shuffle\": true, "
                         "\"loss\": \"mse\", \"split_state\": [1");
        for (int i = 1; i < PG_RNG_STATE_LEN; i++)
            k += snprintf(wrong + k, sizeof wrong - k, ", 1");
        snprintf(wrong + k, sizeof wrong - k, "]}");
        write_ckpt("2", extra(wrong, hist, rng));
        CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "holds an unusable random-stream state");
    }

    write_ckpt("2", extra(saved, "{\"loss\": [\"a\"]}", rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "unusable training state (history or random");
    write_ckpt("2", extra(saved, "{\"best_epoch\": \"x\"}", rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "unusable training state");
    write_ckpt("2", extra(saved, hist, "[1, 2]"));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "unusable training state");
    /* the history's rows are the epochs done, numbered 1 to epoch (stopped / best within) */
    write_ckpt("3", extra(saved, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE,
              "holds an unusable training state (its history has 2 epochs, the checkpoint's "
              "epoch is 3)");
    write_ckpt("2", extra(saved, "{\"epoch\": [1, 3], \"loss\": [0.5, 0.4]}", rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE,
              "(its history's epochs are not numbered 1 to 2)");
    write_ckpt("2", extra(saved, "{\"epoch\": [1, 2], \"best_epoch\": 3}", rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE,
              "(its history's best_epoch is not an epoch from 0 to 2)");
    write_ckpt("2", extra(saved, "{\"epoch\": [1, 2], \"stopped_epoch\": 1.5}", rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "stopped_epoch is not an epoch");
    write_ckpt("2", extra(saved, "{\"epoch\": [1, 2], \"stopped_epoch\": 0}", rng));
    CHECK(resume(run) == 0);
    rng[1] = '9'; /* the kind code 10403 -> 90403: not R's default generator */
    write_ckpt("2", extra(saved, hist, rng));
    CHECK_ERR(resume(run) != 0, PG_STATUS_ERR_VALUE, "unusable training state");

    CHECK_ERR(pg_fit_resume_check("/nonexistent/x.safetensors", run, (int64_t)strlen(run)) != 0,
              PG_STATUS_ERR_IO, "");
    CHECK_ERR(pg_fit_resume_check(NULL, run, 1) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    unlink(path);
}

/* pg_fit_history_format (native/fit_history.c): the table both front ends print */
void test_fit_history(void)
{
    double ep[2] = {1, 2};
    double logs[2 * PG_FIT_LOG_COUNT];
    for (int i = 0; i < 2 * PG_FIT_LOG_COUNT; i++) logs[i] = NAN;
    logs[PG_FIT_LOG_LOSS * 2] = 0.5, logs[PG_FIT_LOG_LOSS * 2 + 1] = 0.25;
    logs[PG_FIT_LOG_LOSS_UNC * 2] = 0.125;
    logs[PG_FIT_LOG_TIME_TRAIN * 2] = 1, logs[PG_FIT_LOG_TIME_TRAIN * 2 + 1] = 2;
    logs[PG_FIT_LOG_TIME_VAL * 2] = 0.5, logs[PG_FIT_LOG_TIME_VAL * 2 + 1] = 0;
    char buf[512];
    int64_t n = pg_fit_history_format("H", ep, logs, 2, 2, 1, " +- ", buf, sizeof buf);
    const char *want = "<H: 2 epochs, stopped at epoch 2>\n"
                       "epoch                  loss     time\n"
                       "    1    0.50000 +- 0.12500    1.50s\n"
                       "    2    0.25000               2.00s\n"
                       "best epoch: 1";
    CHECK(n == (int64_t)strlen(want) && !strcmp(buf, want));
    /* a short buffer: truncated, NUL-terminated, the full length returned */
    char small[8];
    CHECK(pg_fit_history_format("H", ep, logs, 2, 2, 1, " +- ", small, sizeof small) == n);
    CHECK(!strcmp(small, "<H: 2 e"));
    logs[PG_FIT_LOG_TIME_TRAIN * 2 + 1] = 0.0126; /* a short epoch in ms, not "0.01s" */
    CHECK(pg_fit_history_format("H", ep, logs, 2, 2, 1, " +- ", buf, sizeof buf) == n);
    CHECK(strstr(buf, "\n    2    0.25000                13ms\nbest epoch: 1") != NULL);
    CHECK(pg_fit_history_format(NULL, ep, logs, 2, 0, 0, " +- ", buf, sizeof buf) > 0);
    CHECK(!strncmp(buf, "epoch ", 6) && !strstr(buf, "best"));
    CHECK(pg_fit_history_format("H", NULL, NULL, 0, 0, 0, "", buf, sizeof buf) == 14);
    CHECK(!strcmp(buf, "<H: no epochs>"));
    /* a hand-made history: a NaN epoch prints as "-", a NaN or huge stopped / best as none */
    ep[1] = NAN;
    CHECK(pg_fit_history_format("H", ep, logs, 2, NAN, 1e300, " +- ", buf, sizeof buf) > 0);
    CHECK(!strncmp(buf, "<H: 2 epochs>\n", 14) && strstr(buf, "\n    -    0.25000") &&
          !strstr(buf, "best"));
    CHECK_ERR(pg_fit_history_format("H", NULL, logs, 2, 0, 0, "", buf, 8) < 0, PG_STATUS_ERR_ARG,
              "pg_fit_history_format");
    /* with the metric columns: the table, a line break, the metrics' table (pg_fit_history_text) */
    ep[1] = 2;
    const char *mk[1] = {"auc"};
    double mv[2] = {0.5, NAN};
    char mt[256];
    char both[768];
    int64_t h = pg_fit_history_format("H", ep, logs, 2, 2, 1, " +- ", buf, sizeof buf);
    int64_t m = pg_fit_metrics_format(1, mk, mv, ep, 2, mt, sizeof mt);
    CHECK(h > 0 && m > 0);
    int64_t t = pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 1, mk, mv, both, sizeof both);
    CHECK(t == h + 1 + m && (int64_t)strlen(both) == t && !strncmp(both, buf, (size_t)h));
    CHECK(both[h] == '\n' && !strcmp(both + h + 1, mt));
    CHECK(pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 1, mk, mv, NULL, 0) == t);
    CHECK(pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 0, NULL, NULL, both, sizeof both) ==
          h);
    CHECK(pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 1, mk, mv, both, h + 1) == t);
    CHECK((int64_t)strlen(both) == h); /* no room after the table: the table alone */
    CHECK(pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 1, mk, mv, both, 9) == t);
    CHECK(!strcmp(both, "<H: 2 ep"));
    CHECK_ERR(pg_fit_history_text("H", ep, logs, 2, 2, 1, " +- ", 1, NULL, mv, both, 64) < 0,
              PG_STATUS_ERR_ARG, "bad History metric columns");
    CHECK(both[0] == '\0'); /* nothing half-written on a refusal */
}

/* ag_fit's loss table (native/fit_loss.c) */
void test_fit_loss(void)
{
    int code = -1;
    CHECK(pg_fit_loss_parse("huber", &code) == 0 && code == PG_FIT_LOSS_HUBER);
    CHECK(!strcmp(pg_fit_loss_name(PG_FIT_LOSS_BCE_WITH_LOGITS), "bce_with_logits"));
    CHECK(!pg_fit_loss_name(PG_FIT_LOSS_COUNT) && !pg_fit_loss_name(-1));
    CHECK_ERR(pg_fit_loss_parse("hinge", &code) != 0, PG_STATUS_ERR_VALUE,
              "ag_fit: unknown loss \"hinge\"; use \"cross_entropy\", \"mse\", \"mean\", \"sum\", "
              "\"binary_cross_entropy\", \"bce_with_logits\", \"huber\", \"mae\" or a "
              "function(output, y) returning a 1x1 tensor");
    CHECK_ERR(pg_fit_loss_parse(NULL, &code) != 0, PG_STATUS_ERR_VALUE, "unknown loss (none)");
    double v[4] = {1, 2, 3, 4}, t[4] = {1, 2, 3, 6};
    pg_tensor *o = pg_tensor_new(PG_DTYPE_F64, 2, 2, v, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 2, 2, t, PG_DTYPE_F64, 1, 2);
    pg_tensor *l = pg_fit_loss(PG_FIT_LOSS_MSE, o, y), *s = pg_fit_loss(PG_FIT_LOSS_SUM, o, NULL);
    CHECK(l && ((double *)pg_tensor_data(l))[0] == 1.0); /* (4 - 6)^2 / 4 */
    CHECK(s && ((double *)pg_tensor_data(s))[0] == 10.0);
    CHECK_ERR(!pg_fit_loss(PG_FIT_LOSS_MAE, o, NULL), PG_STATUS_ERR_ARG, "needs the output and");
    CHECK_ERR(!pg_fit_loss(PG_FIT_LOSS_COUNT, o, y), PG_STATUS_ERR_VALUE, "is not in [0, 8)");
    pg_tensor_release(l), pg_tensor_release(s), pg_tensor_release(o), pg_tensor_release(y);
}
