/* ag_fit's set-up (native/fit_setup.c): static / distributed, the batch sizes over ranks, the
 * run's settings kept from the resume check to the checkpoint; a refusal makes or changes
 * nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"

static double ext_unif(void) { return 0.5; }
static double ext_index(double dn) { return floor(dn / 2); }

/* static_step and auto_static of a fresh setup (-1 -1 when refused) */
static void decide(int static_mode, int distributed, int builtin, int *st, int *au)
{
    pg_fit_setup_params p = pg_fit_setup_default_params();
    p.static_mode = static_mode, p.distributed = distributed, p.builtin = builtin;
    pg_fit_setup *s = NULL;
    pg_fit_setup_info i;
    *st = *au = -1;
    if (pg_fit_setup_new(&p, &s) == 0 && pg_fit_setup_get(s, &i) == 0)
        *st = i.static_step, *au = i.auto_static;
    pg_fit_setup_free(s);
}

static char *settings(const pg_fit_setup *s)
{
    int64_t n = pg_fit_setup_settings(s, NULL, 0);
    char *t = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (t) CHECK(pg_fit_setup_settings(s, t, n + 1) == n && strlen(t) == (size_t)n);
    return t;
}

void test_fit_setup(void)
{
    pg_fit_setup_params d = pg_fit_setup_default_params();
    CHECK(d.static_mode == PG_FIT_STATIC_AUTO && !d.distributed && !d.builtin && d.n == 0);
    CHECK(d.batch_size == 32 && d.nbatch_logical == 0 && d.val_split == 0 && d.shuffle == 1);
    CHECK(!strcmp(d.loss, "cross_entropy") && !d.weighted);

    /* the static rules: None compiles unless distributed, probing a model or loss not all
     * built-in; True / False as given; True with distributed refused */
    int st, au;
    decide(PG_FIT_STATIC_AUTO, 0, 1, &st, &au), CHECK(st == 1 && au == 0);
    decide(PG_FIT_STATIC_AUTO, 0, 0, &st, &au), CHECK(st == 1 && au == 1);
    decide(PG_FIT_STATIC_AUTO, 1, 0, &st, &au), CHECK(st == 0 && au == 0);
    decide(PG_FIT_STATIC_AUTO, 1, 1, &st, &au), CHECK(st == 0 && au == 0);
    decide(0, 0, 0, &st, &au), CHECK(st == 0 && au == 0);
    decide(0, 1, 1, &st, &au), CHECK(st == 0 && au == 0);
    decide(1, 0, 0, &st, &au), CHECK(st == 1 && au == 0);
    { /* built-in layers with the user's loss function: probed */
        pg_fit_setup_params pc = pg_fit_setup_default_params();
        pg_fit_setup *t = NULL;
        pg_fit_setup_info i;
        pc.builtin = 1, pc.loss = "callable";
        CHECK(pg_fit_setup_new(&pc, &t) == 0 && pg_fit_setup_get(t, &i) == 0);
        CHECK(i.static_step == 1 && i.auto_static == 1);
        pg_fit_setup_free(t);
    }
    pg_fit_setup *s = (pg_fit_setup *)&d; /* refusals leave *out NULL */
    d.static_mode = 1, d.distributed = 1;
    CHECK_ERR(pg_fit_setup_new(&d, &s) == PG_STATUS_ERR_VALUE && s == NULL, PG_STATUS_ERR_VALUE,
              "ag_fit: static cannot be true with distributed training (the compiled step has "
              "no gradient all-reduce)");
    d = pg_fit_setup_default_params();
    d.static_mode = 2;
    CHECK_ERR(pg_fit_setup_new(&d, &s) != 0 && !s, PG_STATUS_ERR_ARG, "out of range");
    d = pg_fit_setup_default_params();
    d.batch_size = 0;
    CHECK_ERR(pg_fit_setup_new(&d, &s) != 0 && !s, PG_STATUS_ERR_ARG, "out of range");
    d = pg_fit_setup_default_params();
    d.loss = NULL;
    CHECK_ERR(pg_fit_setup_new(&d, &s) != 0 && !s, PG_STATUS_ERR_ARG, "loss is NULL");
    CHECK_ERR(pg_fit_setup_new(NULL, &s) != 0, PG_STATUS_ERR_ARG, "NULL");
    CHECK_ERR(pg_fit_setup_new(&d, NULL) != 0, PG_STATUS_ERR_ARG, "out is NULL");

    /* the settings: nbatch_logical 0 is batch_size; a shortest val_split; the loss quoted */
    d = pg_fit_setup_default_params();
    d.n = 100, d.batch_size = 4, d.val_split = 0.25, d.shuffle = 0, d.loss = "my \"loss\"";
    CHECK(pg_fit_setup_new(&d, &s) == 0 && s);
    d.loss = "mse"; /* copied */
    char *t = settings(s);
    CHECK(t &&
          !strcmp(t,
                  "{\"n\": 100, \"batch_size\": 4, \"nbatch_logical\": 4, \"val_split\": "
                  "0.25, \"shuffle\": false, \"loss\": \"my \\\"loss\\\"\", \"seed\": "
                  "null, \"split_state\": null, \"weighted\": null, \"metrics\": []}"));
    char small[8];
    CHECK(pg_fit_setup_settings(s, small, sizeof small) == (int64_t)strlen(t));
    CHECK(strlen(small) == 7 && !strncmp(small, t, 7));
    free(t);
    CHECK_ERR(pg_fit_setup_settings(s, NULL, 4) < 0, PG_STATUS_ERR_ARG, "NULL or negative");
    /* the world size is a distributed run's only */
    pg_fit_setup_info i;
    CHECK_ERR(pg_fit_setup_world(s, 2) == PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE,
              "not distributed");
    CHECK(pg_fit_setup_get(s, &i) == 0 && i.batch_size == 4 && i.nbatch_logical == 4 &&
          i.accum == 1);
    CHECK(pg_fit_setup_split_state(s, NULL) == 0 && !i.has_seed && !i.has_split);
    pg_fit_setup_free(s);

    /* distributed: per-rank sizes times the world, once; a bad world changes nothing */
    d = pg_fit_setup_default_params();
    d.distributed = 1, d.n = 64, d.batch_size = 4, d.nbatch_logical = 8, d.weighted = 1;
    CHECK(pg_fit_setup_new(&d, &s) == 0);
    CHECK_ERR(pg_fit_setup_world(s, 0) == PG_STATUS_ERR_VALUE, PG_STATUS_ERR_VALUE,
              "ag_fit: 0 ranks (world size) out of range");
    CHECK(pg_fit_setup_get(s, &i) == 0 && i.batch_size == 4 && i.nbatch_logical == 8 &&
          i.accum == 2); /* the optimizer's accumulate_steps */
    CHECK(pg_fit_setup_world(s, 3) == 0);
    CHECK(pg_fit_setup_get(s, &i) == 0 && i.batch_size == 12 && i.nbatch_logical == 24 &&
          i.accum == 2); /* per rank as globally */
    CHECK(i.static_step == 0 && i.auto_static == 0 && i.per_datapoint == 1);
    { /* the loss's epoch statistics rule, the session's: a mean per sample but for "sum" */
        const char *names[] = {"sum", "mean", "callable", "Sum"};
        const int want[] = {0, 1, 1, 1};
        for (int k = 0; k < 4; k++) {
            pg_fit_setup_params pl = pg_fit_setup_default_params();
            pg_fit_setup *t = NULL;
            pl.loss = names[k];
            CHECK(pg_fit_setup_new(&pl, &t) == 0 && pg_fit_setup_get(t, &i) == 0);
            CHECK(i.per_datapoint == want[k]);
            pg_fit_setup_free(t);
        }
        CHECK(pg_fit_setup_get(s, &i) == 0);
    }
    pg_fit_params q = pg_fit_default_params(); /* the plan's fields set, the rest kept */
    q.classify = PG_FIT_CLASSIFY_ARGMAX, q.shuffle = 0, q.val_split = 0.5;
    CHECK(pg_fit_setup_plan_params(s, &q) == 0 && q.classify == PG_FIT_CLASSIFY_ARGMAX);
    CHECK(q.batch_size == 12 && q.nbatch_logical == 24 && q.val_split == 0 && q.shuffle == 1);
    CHECK(q.split_state == NULL && q.rng == NULL);
    CHECK_ERR(pg_fit_setup_plan_params(s, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    CHECK_ERR(pg_fit_setup_world(s, 2) == PG_STATUS_ERR_STATE, PG_STATUS_ERR_STATE, "set already");
    CHECK(pg_fit_setup_get(s, &i) == 0 && i.batch_size == 12);
    t = settings(s);
    CHECK(t && strstr(t, "\"batch_size\": 12, \"nbatch_logical\": 24, \"val_split\": 0,"));
    CHECK(t && strstr(t, "\"weighted\": true, \"metrics\": []}"));
    free(t);
    pg_fit_setup_free(s);

    /* seed, then the plan's split state; a checkpoint of that run resumes into a new setup,
     * which takes its seed and split state; another run's settings are refused, the setup as
     * it was */
    double xv[2 * 8], yv[8];
    for (int k = 0; k < 16; k++) xv[k] = k;
    for (int k = 0; k < 8; k++) yv[k] = k % 2;
    pg_tensor *x = pg_tensor_new(PG_DTYPE_F64, 2, 8, xv, PG_DTYPE_F64, 1, 2);
    pg_tensor *y = pg_tensor_new(PG_DTYPE_F64, 1, 8, yv, PG_DTYPE_F64, 1, 1);
    pg_rng *r = pg_rng_new_seeded(7);
    pg_fit_params fp = pg_fit_default_params();
    fp.batch_size = 2, fp.val_split = 0.25, fp.rng = r;
    pg_fit *f = pg_fit_new(x, y, &fp);
    CHECK(f != NULL);
    d = pg_fit_setup_default_params();
    d.n = 8, d.batch_size = 2, d.val_split = 0.25, d.loss = "mse";
    CHECK(pg_fit_setup_new(&d, &s) == 0 && pg_fit_setup_seed(s, 7) == 0);
    CHECK(pg_fit_setup_plan(s, f) == 0);
    int32_t st1[PG_RNG_STATE_LEN], st2[PG_RNG_STATE_LEN];
    CHECK(pg_fit_split_state(f, st1) == 0 && pg_fit_setup_split_state(s, st2) == 1);
    CHECK(!memcmp(st1, st2, sizeof st1));
    t = settings(s);
    CHECK(t && strstr(t, "\"seed\": 7, \"split_state\": [") &&
          strstr(t, "], \"weighted\": null, \"metrics\": []}"));
    CHECK(pg_json_check(t, (int64_t)strlen(t), "settings", 0) == 0);
    int32_t rng[PG_RNG_STATE_LEN];
    CHECK(pg_rng_get_state(r, rng) == 0);
    double hist[1 + PG_FIT_LOG_COUNT];
    for (int k = 0; k < 1 + PG_FIT_LOG_COUNT; k++) hist[k] = k ? NAN : 1;
    int64_t n = pg_fit_ckpt_extra(t, hist, 1, 0, NULL, NAN, NAN, rng, 0, NULL, NULL, 0);
    char *extra = n > 0 ? malloc((size_t)n + 1) : NULL;
    CHECK(extra &&
          pg_fit_ckpt_extra(t, hist, 1, 0, NULL, NAN, NAN, rng, 0, NULL, extra, n + 1) == n);
    free(t);
    char path[64];
    snprintf(path, sizeof path, "/tmp/pg-setup-%d.safetensors", (int)getpid());
    float w = 1;
    pg_st_tensor tw = {"W", PG_ST_DTYPE_F32, 2, 1, 1, &w};
    const char *keys[2] = {"epoch", "extra"}, *vals[2] = {"1", extra};
    CHECK(pg_st_write(path, &tw, 1, keys, vals, 2) == 0);
    free(extra);
    pg_fit_setup_free(s);

    pg_fit_ckpt *c = NULL;
    d.n = 9; /* another run */
    CHECK(pg_fit_setup_new(&d, &s) == 0);
    CHECK_ERR(pg_fit_setup_resume(s, path, &c) == PG_STATUS_ERR_VALUE && !c, PG_STATUS_ERR_VALUE,
              "ag_fit: cannot resume: n was 8 in the checkpoint, now 9");
    CHECK(pg_fit_setup_get(s, &i) == 0 && !i.has_seed && !i.has_split);
    CHECK_ERR(pg_fit_setup_resume(s, NULL, &c) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    pg_fit_setup_free(s);
    d.n = 8;
    CHECK(pg_fit_setup_new(&d, &s) == 0);
    CHECK(pg_fit_setup_resume(s, path, &c) == 0 && c && pg_fit_ckpt_epoch(c) == 1);
    CHECK(pg_fit_setup_get(s, &i) == 0 && i.has_seed && i.seed == 7 && i.has_split);
    CHECK(pg_fit_setup_split_state(s, st2) == 1 && !memcmp(st1, st2, sizeof st1));
    pg_fit_ckpt_free(c);
    /* the same split again from the saved state; an external stream leaves none */
    CHECK(pg_fit_setup_plan_params(s, &fp) == 0 && fp.split_state && fp.batch_size == 2);
    CHECK(!memcmp(fp.split_state, st1, sizeof st1));
    pg_fit *f2 = pg_fit_new(x, y, &fp);
    CHECK(f2 && pg_fit_setup_plan(s, f2) == 0 && pg_fit_setup_split_state(s, NULL) == 1);
    pg_fit_free(f2);
    f2 = pg_fit_setup_new_plan(s, x, y, 0, r, NULL, NULL); /* both in one call (ag_fit's) */
    CHECK(f2 && pg_fit_setup_split_state(s, st2) == 1 && !memcmp(st1, st2, sizeof st1));
    pg_fit_free(f2);
    CHECK_ERR(pg_fit_setup_new_plan(NULL, x, y, 0, r, NULL, NULL) == NULL, PG_STATUS_ERR_ARG,
              "NULL argument");
    pg_rng *ext = pg_rng_new_external(ext_unif, ext_unif, ext_index);
    fp.split_state = NULL, fp.rng = ext;
    f2 = pg_fit_new(x, y, &fp);
    CHECK(f2 && pg_fit_setup_plan(s, f2) == 0 && pg_fit_setup_split_state(s, NULL) == 0);
    CHECK(pg_last_status() == 0);
    CHECK_ERR(pg_fit_setup_plan(s, NULL) != 0, PG_STATUS_ERR_ARG, "NULL argument");
    pg_fit_free(f2);
    pg_fit_setup_free(s);
    pg_fit_setup_free(NULL);
    pg_rng_free(ext);
    pg_fit_free(f);
    pg_rng_free(r);
    REL(x);
    REL(y);
    unlink(path);
}
