/* pyggmlr C core: learning-rate schedules and gradient helpers (sched.c, optim.c), as ggmlR 0.8.6
 * defines them (spec §7, §8). cdef-clean like pg_api.h.
 *
 * A schedule is its kind, its parameters par[PG_SCHED_NPAR] (fixed at construction) and its state
 * st[PG_SCHED_NSTATE] (counters); the front ends keep both and show them as ggmlR's fields. */

enum pg_sched_kind {
    PG_SCHED_KIND_STEP = 0, /* par: step_size, gamma; st: last_epoch */
    PG_SCHED_KIND_COSINE =
        1, /* par: T_max, lr_min, restart, T_mult, lr_max; st: last_epoch, T_cur, cycle_pos */
    PG_SCHED_KIND_CYCLIC =
        2, /* par: base_lr, max_lr, up, down, mode (0 triangular, 1 triangular2, 2 exp_range), gamma; st: last_step */
    PG_SCHED_KIND_ONECYCLE =
        3, /* par: max_lr, total, initial, final, step_up, anneal (0 cos, 1 linear), base_m, max_m; st: last_step */
    PG_SCHED_KIND_WARMUP_COSINE =
        4, /* par: warmup, total, lr_max, lr_min, warmup_start_lr; st: last_step */
    PG_SCHED_KIND_WARMUP =
        5, /* par: warmup_steps, base_lr, start_factor; st: last_epoch (step's lr NaN after: hand over) */
    PG_SCHED_KIND_COUNT = 6
};
enum pg_sched_sizes { PG_SCHED_NPAR = 8, PG_SCHED_NSTATE = 3 };

/* Check par (ggmlR's messages, e.g. "T_max must be >= 1"), after truncating the counts (step_size,
 * T_max, step_size_up / _down, total_steps, warmup_steps) as R's as.integer does: toward zero,
 * NaN (the front ends' non-number), +-Inf or past R's integers NA, refused; fill the derived ones (cosine's T_cur,
 * onecycle's initial, final and step_up from pct_start, div_factor and final_div_factor passed in
 * par[2], par[3], par[4]) and zero st. *lr0 = the learning rate the schedule sets at construction
 * (NaN: leave the optimizer's), *mom0 = the momentum it sets (NaN: none). cur_lr: the optimizer's. */
int pg_sched_init(int kind, double *par, double *st, double cur_lr, double *lr0, double *mom0);
/* One step: st advances; *lr = the new rate, *mom = the new momentum / beta1 (NaN: leave it). */
int pg_sched_step(int kind, const double *par, double *st, double cur_lr, double *lr, double *mom);

/* clip_grad_value: each parameter's gradient (from grads, or .grad when grads is NULL; a
 * parameter listed twice once) clamped into [-c, c] (NaN stays NaN, +-Inf -> +-c); *max_abs =
 * the largest finite |g| before (0 if no gradient). c must be finite and > 0. */
int pg_clip_grad_value(pg_tensor **params, int64_t n, pg_gradmap *grads, double clip_value,
                       double *max_abs);
/* check_grad_anomaly's counts for parameter i: found[i] 0 when it has no gradient, else n_nan[i]
 * (R's NA excluded, as ggmlR's is.nan()), n_inf[i] and max_abs[i] (the largest finite |g|, NaN if
 * none). */
int pg_grad_anomaly(pg_tensor **params, int64_t n, pg_gradmap *grads, int *found, int64_t *n_nan,
                    int64_t *n_inf, double *max_abs);
