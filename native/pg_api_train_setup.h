/* pyggmlr C core: ag_fit's set-up before its loop (fit_setup.c), once for R and Python: whether
 * the step is compiled (static / distributed), the plan's batch sizes over MPI ranks, and the
 * run's settings, which the handle keeps from the resume check (pg_fit_ckpt_open's) to every
 * checkpoint (pg_fit_ckpt_extra's), so no front end builds them. Named to sort after
 * pg_api_train.h (it reads a pg_fit); pg.h includes it after pg_api_train_stop.h (pg_fit_ckpt).
 * cdef-clean like pg_api.h. */
typedef struct pg_fit_setup pg_fit_setup;

/* ggml_opt_params-style: start from pg_fit_setup_default_params() and set what differs (ag_fit's
 * defaults in brackets). static_mode: ag_fit(static =): 0, 1 or PG_FIT_STATIC_AUTO (None /
 * NULL) [AUTO]. distributed: data-parallel over MPI ranks [0]. builtin: every layer of the
 * model is a built-in one (with a built-in loss name, static = None compiles it without a
 * probe; the front ends ask no more) [0]. n: samples, validation_data's included [0].
 * batch_size, nbatch_logical: per rank (the front end's checked values, >= 1; nbatch_logical 0:
 * batch_size) [32, 0]. val_split, shuffle: as given (pg_fit_new checks them) [0, 1]. loss: the
 * loss's name, "callable" for the user's function (copied) ["cross_entropy"]. weighted:
 * sample_weight or class_weight given [0]. */
enum { PG_FIT_STATIC_AUTO = -1 };
typedef struct pg_fit_setup_params {
    int static_mode;
    int distributed;
    int builtin;
    int64_t n;
    int64_t batch_size;
    int64_t nbatch_logical;
    double val_split;
    int shuffle;
    const char *loss;
    int weighted;
} pg_fit_setup_params;
pg_fit_setup_params pg_fit_setup_default_params(void);

/* The rules, checked and decided: static 1 with distributed is PG_STATUS_ERR_VALUE naming
 * ag_fit (the compiled step has no gradient all-reduce); static AUTO is compiled unless
 * distributed, and probed first (auto_static) unless builtin. *out NULL on failure. */
int pg_fit_setup_new(const pg_fit_setup_params *params, pg_fit_setup **out);
void pg_fit_setup_free(pg_fit_setup *s);

/* What the run does: static_step (the step is compiled), auto_static (static = None's probe
 * decides), the plan's batch_size / nbatch_logical (the global batch's when distributed), the
 * run stream's seed (has_seed: ag_fit(seed =), or a resumed checkpoint's), and accum: the
 * micro-batches per optimizer step (nbatch_logical / batch_size, the optimizer's
 * accumulate_steps). per_datapoint: the loss is a mean per sample (every loss but "sum": the
 * epoch statistics' rule, pg_fit_loss_rules'), for the session. */
typedef struct pg_fit_setup_info {
    int static_step, auto_static;
    int64_t batch_size, nbatch_logical;
    int has_seed;
    int32_t seed;
    int has_split; /* pg_fit_setup_split_state has a state: the checkpoint's, then the plan's */
    int64_t accum;
    int per_datapoint;
} pg_fit_setup_info;
int pg_fit_setup_get(const pg_fit_setup *s, pg_fit_setup_info *out);

/* distributed: the ranks' count (MPI's world size, >= 1); the batch sizes become the global
 * batch's (each rank's times world). Once, before the resume check; PG_STATUS_ERR_STATE when not
 * distributed or already set. */
int pg_fit_setup_world(pg_fit_setup *s, int64_t world);
/* ag_fit(seed =): the run's own stream's seed (a resumed run takes the checkpoint's instead). */
int pg_fit_setup_seed(pg_fit_setup *s, int32_t seed);
/* ag_fit(metrics =)'s codes (n pg_metric_code values, in the History's column order), recorded in
 * the settings: a checkpoint that records other metrics is refused by the resume check (one
 * without the record, from before it, resumes). Before pg_fit_setup_resume. */
int pg_fit_setup_metrics(pg_fit_setup *s, int64_t n, const int *codes);
/* ag_fit(resume_from = path): the checkpoint checked against the run's settings and handed out
 * as pg_fit_ckpt_open does (nothing written); the run takes its seed and split state. On failure
 * *out is NULL and the handle unchanged. */
int pg_fit_setup_resume(pg_fit_setup *s, const char *path, struct pg_fit_ckpt **out);
/* PG_RNG_STATE_LEN integers to out (when not NULL) and 1 when the run has a split state (the
 * checkpoint's before the plan is made, to draw the same split; the plan's after
 * pg_fit_setup_plan), else 0. */
int pg_fit_setup_split_state(const pg_fit_setup *s, int32_t *out);
/* The plan's settings from the set-up: batch_size and nbatch_logical (the global batch's),
 * val_split, shuffle and split_state (resuming; borrowed from s, which must outlive
 * pg_fit_new); the other fields of *p as they were. */
int pg_fit_setup_plan_params(const pg_fit_setup *s, pg_fit_params *p);
/* The plan is made: its split state (none when it draws from an external stream) is the run's. */
int pg_fit_setup_plan(pg_fit_setup *s, const pg_fit *f);
/* Both around pg_fit_new, ag_fit's one call: the plan of x and y (NULL: no targets) with
 * classify (a pg_fit_classify code), rng (NULL: the process stream) and validation_data's xv /
 * yv (NULL: none) on the set-up's settings, its split state then the run's. NULL on error. */
pg_fit *pg_fit_setup_new_plan(pg_fit_setup *s, pg_tensor *x, pg_tensor *y, int classify,
                              pg_rng *rng, pg_tensor *xv, pg_tensor *yv);
/* The settings as a checkpoint records them (JSON: n, batch_size, nbatch_logical, val_split,
 * shuffle, loss, seed, split_state, weighted; null where none; metrics: the names' array) for
 * pg_fit_ckpt_extra. At most cap bytes (NUL included) to out, NULL to measure; returns the
 * text's length, or -status. */
int64_t pg_fit_setup_settings(const pg_fit_setup *s, char *out, int64_t cap);
