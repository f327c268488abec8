/* pg_fit_ckpt_extra / pg_fit_ckpt_open (native/fit_ckpt.c, fit_resume.c): ag_fit's checkpoint
 * run state written and read back in the one layout both front ends use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

#define NCOL (1 + PG_FIT_LOG_COUNT + 1)

static const char *SETTINGS = "{\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": 4, "
                              "\"val_split\": 0.25, \"shuffle\": true, \"loss\": \"mse\", "
                              "\"seed\": 7, \"split_state\": null, \"weighted\": null}";

static void write_file(const char *path, const char *extra)
{
    float w = 1;
    pg_st_tensor t = {"W", PG_ST_DTYPE_F32, 2, 1, 1, &w};
    const char *keys[2] = {"epoch", "extra"}, *vals[2] = {"2", extra};
    CHECK(pg_st_write(path, &t, 1, keys, vals, 2) == 0);
}

void test_fit_ckpt(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/pg-ckpt-%d.safetensors", (int)getpid());
    int32_t rng[PG_RNG_STATE_LEN];
    pg_rng *r = pg_rng_new_seeded(11);
    CHECK(r && pg_rng_get_state(r, rng) == 0);
    pg_rng_free(r);
    /* two epochs: epoch, the logs (loss 0.1 / NaN, the rest NaN but time), one metric "auc" */
    double hist[NCOL * 2];
    for (int i = 0; i < NCOL * 2; i++) hist[i] = NAN;
    hist[0] = 1, hist[1] = 2;
    hist[(1 + PG_FIT_LOG_LOSS) * 2] = 0.1;
    hist[(1 + PG_FIT_LOG_TIME_TRAIN) * 2 + 1] = INFINITY; /* not finite: null too */
    hist[(NCOL - 1) * 2 + 1] = 0.75;
    const char *metrics[1] = {"auc"};
    const char *cbs[2] = {"{\"best\": 0.5, \"best_epoch\": 1, \"wait\": 0}", NULL};

    int64_t need = pg_fit_ckpt_extra(SETTINGS, hist, 2, 1, metrics, NAN, 2, rng, 2, cbs, NULL, 0);
    CHECK(need > 0);
    char *text = malloc((size_t)need + 1);
    CHECK(pg_fit_ckpt_extra(SETTINGS, hist, 2, 1, metrics, NAN, 2, rng, 2, cbs, text, need + 1) ==
          need);
    CHECK(strlen(text) == (size_t)need);
    CHECK(strstr(text, "\"loss\": [0.1, null]") != NULL); /* NaN as null */
    CHECK(strstr(text, "\"time_train\": [null, null]") != NULL);
    CHECK(strstr(text, "\"auc\": [null, 0.75], \"stopped_epoch\": null, \"best_epoch\": 2}"));
    CHECK(strstr(text, "\"callbacks\": [{\"best\": 0.5, \"best_epoch\": 1, \"wait\": 0}, null]"));
    CHECK(pg_json_check(text, need, "extra", 0) == 0);
    /* a short buffer: truncated, NUL-terminated, the whole length returned */
    char small[10];
    CHECK(pg_fit_ckpt_extra(SETTINGS, hist, 2, 1, metrics, NAN, 2, rng, 2, cbs, small, 10) == need);
    CHECK(strlen(small) == 9);

    /* read back: what was written, in the same column order */
    write_file(path, text);
    pg_fit_ckpt *c = NULL;
    CHECK(pg_fit_ckpt_open(path, SETTINGS, (int64_t)strlen(SETTINGS), &c) == 0 && c);
    CHECK(pg_fit_ckpt_epoch(c) == 2 && pg_fit_ckpt_epochs(c) == 2);
    CHECK(pg_fit_ckpt_columns(c) == NCOL);
    int32_t seed = 0, st[PG_RNG_STATE_LEN];
    CHECK(pg_fit_ckpt_seed(c, &seed) == 1 && seed == 7);
    CHECK(pg_fit_ckpt_split_state(c, st) == 0);
    pg_fit_ckpt_rng_state(c, st);
    CHECK(!memcmp(st, rng, sizeof st));
    for (int64_t j = 0; j < NCOL; j++) {
        double col[2];
        pg_fit_ckpt_column(c, j, col);
        for (int i = 0; i < 2; i++) {
            double want = hist[j * 2 + i];
            CHECK(isfinite(want) ? col[i] == want : isnan(col[i]));
        }
        const char *want = j == 0 ? "epoch" : j < NCOL - 1 ? pg_fit_log_name((int)j - 1) : "auc";
        CHECK(!strcmp(pg_fit_ckpt_column_name(c, j), want));
    }
    CHECK(isnan(pg_fit_ckpt_stopped_epoch(c)) && pg_fit_ckpt_best_epoch(c) == 2);
    CHECK(pg_fit_ckpt_callbacks(c) == 2);
    CHECK(!strcmp(pg_fit_ckpt_callback_state(c, 0), cbs[0]));
    CHECK(pg_fit_ckpt_callback_state(c, 1) == NULL && pg_fit_ckpt_callback_state(c, 2) == NULL);
    /* the history as one JSON object (fit_cb.c): whole epochs, real values, NaN as null */
    char hj[1024];
    int64_t hn = pg_fit_ckpt_history_json(c, hj, sizeof hj);
    CHECK(hn > 0 && hn == (int64_t)strlen(hj) && pg_fit_ckpt_history_json(c, NULL, 0) == hn);
    const char *hp = "{\"epoch\": [1, 2], \"loss\": [0.1, null], ";
    CHECK(!strncmp(hj, hp, strlen(hp)));
    CHECK(strstr(hj, "\"time_train\": [null, null]") && strstr(hj, "\"auc\": [null, 0.75]"));
    CHECK(strstr(hj, "\"stopped_epoch\": null, \"best_epoch\": 2}") != NULL);
    CHECK(pg_fit_ckpt_history_json(c, hj, 10) == hn && strlen(hj) == 9);
    CHECK_ERR(pg_fit_ckpt_history_json(NULL, hj, 10) < 0, PG_STATUS_ERR_ARG, "NULL handle");
    /* the whole run state as one JSON object: epoch, that history, the stream, the states */
    char sj[16384], want[256];
    pg_fit_ckpt_history_json(c, hj, sizeof hj);
    int64_t sn = pg_fit_ckpt_state_json(c, sj, sizeof sj);
    CHECK(sn > 0 && sn == (int64_t)strlen(sj) && pg_fit_ckpt_state_json(c, NULL, 0) == sn);
    snprintf(want, sizeof want, "{\"epoch\": 2, \"history\": %.40s", hj);
    CHECK(!strncmp(sj, want, strlen(want)) && strstr(sj, hj + 40));
    snprintf(want, sizeof want, "}, \"rng_state\": [%d, %d, ", (int)rng[0], (int)rng[1]);
    CHECK(strstr(sj, want) != NULL);
    snprintf(want, sizeof want, "], \"callbacks\": [%s, null]}", cbs[0]);
    CHECK(sn > (int64_t)strlen(want) && !strcmp(sj + sn - strlen(want), want));
    CHECK(pg_fit_ckpt_state_json(c, sj, 10) == sn && strlen(sj) == 9);
    CHECK_ERR(pg_fit_ckpt_state_json(NULL, sj, 10) < 0, PG_STATUS_ERR_ARG, "NULL handle");
    pg_fit_ckpt_free(c);

    /* refused checkpoints: the resume check's texts, no handle */
    const char *other = "{\"n\": 9, \"batch_size\": 4, \"nbatch_logical\": 4, \"val_split\": 0.25, "
                        "\"shuffle\": true, \"loss\": \"mse\"}";
    c = (pg_fit_ckpt *)1;
    CHECK_ERR(pg_fit_ckpt_open(path, other, (int64_t)strlen(other), &c) != 0, PG_STATUS_ERR_VALUE,
              "ag_fit: cannot resume: n was 8 in the checkpoint, now 9");
    CHECK(c == NULL);
    char *ragged = strdup(text), *p = strstr(ragged, "\"loss\": [0.1, null]");
    memcpy(p, "\"loss\": [0.1      ]", 19);
    write_file(path, ragged);
    CHECK_ERR(pg_fit_ckpt_open(path, SETTINGS, (int64_t)strlen(SETTINGS), &c) != 0,
              PG_STATUS_ERR_VALUE, "unusable training state (history or random stream)");
    free(ragged);
    write_file(path,
               "{\"fit\": {\"settings\": {\"n\": 8, \"batch_size\": 4, \"nbatch_logical\": "
               "4, \"val_split\": 0.25, \"shuffle\": true, \"loss\": \"mse\"}, "
               "\"history\": {}, \"rng_state\": [], \"callbacks\": 3}}");
    CHECK_ERR(pg_fit_ckpt_open(path, SETTINGS, (int64_t)strlen(SETTINGS), &c) != 0,
              PG_STATUS_ERR_VALUE, "(callbacks: not an array)");
    CHECK_ERR(pg_fit_ckpt_open(path, SETTINGS, 1, NULL) != 0, PG_STATUS_ERR_ARG, "out is NULL");
    unlink(path);

    /* bad input: a status and message, nothing written */
    char out[64] = "untouched";
    const char *bad_cb[1] = {"{\"best\": NaN}"};
    CHECK_ERR(pg_fit_ckpt_extra("{", hist, 2, 1, metrics, NAN, NAN, rng, 0, NULL, out, 64) < 0,
              PG_STATUS_ERR_VALUE, "ag_model_checkpoint: the run's settings is not valid JSON");
    CHECK_ERR(pg_fit_ckpt_extra("[1]", hist, 2, 1, metrics, NAN, NAN, rng, 0, NULL, out, 64) < 0,
              PG_STATUS_ERR_VALUE, "settings must be a JSON object");
    CHECK_ERR(pg_fit_ckpt_extra(SETTINGS, hist, 2, 1, metrics, NAN, NAN, rng, 1, bad_cb, out, 64) <
                  0,
              PG_STATUS_ERR_VALUE, "callback 1's state is not valid JSON");
    const char *dup[2] = {"auc", "loss"};
    CHECK_ERR(pg_fit_ckpt_extra(SETTINGS, hist, 2, 2, dup, NAN, NAN, rng, 0, NULL, out, 64) < 0,
              PG_STATUS_ERR_VALUE, "history column 1 has no usable name");
    int32_t bad_rng[PG_RNG_STATE_LEN];
    memcpy(bad_rng, rng, sizeof bad_rng);
    bad_rng[0] = 99;
    CHECK_ERR(
        pg_fit_ckpt_extra(SETTINGS, hist, 2, 1, metrics, NAN, NAN, bad_rng, 0, NULL, out, 64) < 0,
        PG_STATUS_ERR_VALUE, "random stream's state");
    CHECK_ERR(pg_fit_ckpt_extra(NULL, hist, 2, 1, metrics, NAN, NAN, rng, 0, NULL, out, 64) < 0,
              PG_STATUS_ERR_ARG, "pg_fit_ckpt_extra(): NULL");
    CHECK(!strcmp(out, "untouched"));
    free(text);

    /* the callbacks' tensor names, both ways */
    char nm[64];
    CHECK(pg_fit_ckpt_tensor_name(3, PG_FIT_CKPT_BUFFER, "bn.mean", nm, sizeof nm) == 24);
    CHECK(!strcmp(nm, "callback3.buffer.bn.mean"));
    int64_t cb = -1, rest = -1;
    int kind = -1;
    CHECK(pg_fit_ckpt_tensor_parse(nm, &cb, &kind, &rest) == 1);
    CHECK(cb == 3 && kind == PG_FIT_CKPT_BUFFER && !strcmp(nm + rest, "bn.mean"));
    CHECK(pg_fit_ckpt_tensor_parse("callback12.param.w", &cb, &kind, &rest) == 1 && cb == 12 &&
          kind == PG_FIT_CKPT_PARAM && !strcmp("callback12.param.w" + rest, "w"));
    CHECK(pg_fit_ckpt_tensor_parse("callback.param.w", NULL, NULL, NULL) == 0);
    CHECK(pg_fit_ckpt_tensor_parse("callback1.weight.w", NULL, NULL, NULL) == 0);
    CHECK(pg_fit_ckpt_tensor_parse("callback1.param", NULL, NULL, NULL) == 0);
    CHECK(pg_fit_ckpt_tensor_parse("layer.0.w", NULL, NULL, NULL) == 0);
    CHECK_ERR(pg_fit_ckpt_tensor_name(-1, 0, "w", nm, sizeof nm) < 0, PG_STATUS_ERR_ARG,
              "bad arguments");
}
