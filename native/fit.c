/* ag_fit's data plan and statistics (pg_api_train.h): the split, the shuffles, the batch gather
 * and the per-epoch numbers, one definition for R and Python. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

typedef struct { /* one part's statistics for the current epoch */
    double *loss, *w;
    int64_t n, cap, ncorrect, ndata;
} fit_stats;

struct pg_fit {
    pg_tensor *x, *y; /* owned refs */
    int classify;
    int64_t n, n_train, n_val, bs, accum, n_batches, n_valb, rank, world;
    int shuffle;
    pg_rng *rng;              /* borrowed; NULL: the current stream */
    int64_t *order;           /* [n] 0-based: training part first, then validation */
    int64_t *perm;            /* [n_train] this epoch's order of the training part */
    int64_t *idx;             /* [bs] the gathered batch's samples */
    int64_t *lab;             /* [bs] their classes */
    int64_t *am;              /* [bs] arg-max scratch */
    int64_t width, width_val; /* the last gathered batch */
    int32_t split_state[PG_RNG_STATE_LEN];
    int no_state; /* the stream is external (R's non-default RNGkind): nothing to save */
    pg_tensor *xb[2], *yb[2]; /* reused batch tensors: [0] full width, [1] a narrower last batch */
    pg_tensor *w, *wb[2], *wcur; /* sample weights [1, n] (fit_weight.c), their batch rows, the
                                  * last training batch's row (borrowed); NULL: unweighted */
    int fixed;                   /* validation_data: the last n_val columns were appended */
    pg_fit_keep *keep;           /* metrics (fit_metrics.c): the epoch's outputs; NULL: none */
    fit_stats st[2];
};

static const char *OP = "ag_fit";

void pg_fit_free(pg_fit *f)
{
    if (!f) return;
    pg_tensor_release(f->x);
    pg_tensor_release(f->y);
    pg_tensor_release(f->w);
    for (int k = 0; k < 2; k++) {
        pg_tensor_release(f->xb[k]);
        pg_tensor_release(f->yb[k]);
        pg_tensor_release(f->wb[k]);
        free(f->st[k].loss);
        free(f->st[k].w);
    }
    pg_fit_keep_free(f->keep);
    PG_FREE_ALL(f->order, f->perm, f->idx, f->lab, f->am, f);
}

/* sample.int(m) from the fit's stream into idx as 0-based positions */
static int draw_perm(pg_fit *f, int64_t m, int64_t *out)
{
    double *d = malloc((size_t)(m ? m : 1) * sizeof *d);
    if (!d)
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for a shuffle of %lld", OP,
                       (long long)m);
    int rc = pg_rng_sample(f->rng, (double)m, m, 0, NULL, 0, -1, d);
    for (int64_t i = 0; rc == 0 && i < m; i++) out[i] = (int64_t)d[i] - 1;
    free(d);
    return rc;
}

static int check_ids(const pg_tensor *y)
{
    const int64_t n = y->ne[1];
    PG_DISPATCH(y->dtype, {
        const T *v = pg_data(y);
        for (int64_t j = 0; j < n; j++)
            if (!(v[j] >= 0) || v[j] != floor(v[j])) {
                char nb[40];
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "%s: cross_entropy targets must be 0-based class ids (whole numbers "
                               ">= 0) or a one-hot matrix; "
                               "sample %lld has %s",
                               OP, (long long)j + 1, pg_fmt_num(nb, sizeof nb, (double)v[j]));
            }
    });
    return 0;
}

pg_fit_params pg_fit_default_params(void)
{
    pg_fit_params p = {0, 32, 0, 0.0, 1, NULL, NULL, 0, NULL, NULL};
    return p;
}

pg_fit *pg_fit_new_cols(pg_tensor *x, pg_tensor *y, const pg_fit_params *params)
{
    if (!params) return pg_fail_null(PG_STATUS_ERR_ARG, "%s: params is NULL", OP);
    if (pg_not_live(x, OP, "x") || (y && pg_not_live(y, OP, "y"))) return NULL;
    const int classify = params->classify, shuffle = params->shuffle;
    const int64_t batch_size = params->batch_size;
    const int64_t nbatch_logical = params->nbatch_logical ? params->nbatch_logical : batch_size;
    const double val_split = params->val_split;
    pg_rng *rng = params->rng;
    const int32_t *split_state = params->split_state;
    const int64_t n = x->ne[1];
    if (y && y->ne[1] != n)
        return pg_fail_null(PG_STATUS_ERR_SHAPE, "%s: x has %lld samples (columns) but y has %lld",
                            OP, (long long)n, (long long)y->ne[1]);
    if (y && y->dtype != x->dtype)
        return pg_fail_null(PG_STATUS_ERR_DTYPE,
                            "%s: x is %s but y is %s; give both in the model's dtype", OP,
                            pg_desc(x), pg_desc(y));
    if (batch_size < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: batch_size must be an integer >= 1, got %lld",
                            OP, (long long)batch_size);
    if (nbatch_logical < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: nbatch_logical must be an integer >= 1, got %lld", OP,
                            (long long)nbatch_logical);
    if (pg_fit_batches_check(batch_size, nbatch_logical)) return NULL;
    if (!(val_split >= 0 && val_split < 1)) { /* R's format() of the number, in both languages */
        char v[40]; /* the non-finite in each language's words (pg_fmt_num) */
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: val_split must be in [0, 1), got %s", OP,
                            isfinite(val_split) ? pg_format_r(v, sizeof v, val_split)
                                                : pg_fmt_num(v, sizeof v, val_split));
    }
    int64_t n_val = (int64_t)nearbyint(val_split * (double)n); /* R's round(): halves to even */
    if (val_split > 0 && n_val < 1) n_val = 1;
    const int64_t n_main = params->fixed_split ? n - n_val : n; /* the rest: validation_data */
    if (pg_fit_check_finite(x, "x", n_main) || (y && pg_fit_check_finite(y, "y", n_main)))
        return NULL;
    if (classify < PG_FIT_CLASSIFY_NONE || classify > PG_FIT_CLASSIFY_LOGITS)
        return pg_fail_null(PG_STATUS_ERR_VALUE, "%s: classify code %d is out of range", OP,
                            classify);
    if (classify == PG_FIT_CLASSIFY_ARGMAX && y && y->ne[0] == 1 && check_ids(y)) return NULL;
    if (classify > PG_FIT_CLASSIFY_ARGMAX && y && pg_fit_binary_targets(y, classify, n_main))
        return NULL;
    const int64_t n_train = n - n_val, n_logical = pg_batch_count(OP, n_train, nbatch_logical, 1);
    if (n_logical < 1)
        return pg_fail_null(PG_STATUS_ERR_VALUE,
                            "%s: %lld training samples do not fill one logical batch of %lld", OP,
                            (long long)n_train, (long long)nbatch_logical);
    pg_fit *f = calloc(1, sizeof *f);
    if (!f) return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", OP);
    f->n = n;
    f->n_train = n_train;
    f->n_val = n_val;
    f->bs = batch_size;
    f->accum = nbatch_logical / batch_size;
    f->n_batches = n_logical * f->accum;
    f->n_valb = pg_batch_count(OP, n_val, batch_size, 0);
    f->shuffle = shuffle != 0;
    f->rng = rng;
    f->classify = classify;
    f->rank = 0;
    f->world = 1;
    f->fixed = params->fixed_split != 0;
    f->x = x;
    pg_tensor_retain(x);
    f->y = y;
    if (y) pg_tensor_retain(y);
    f->order = malloc((size_t)(n ? n : 1) * sizeof *f->order);
    f->perm = malloc((size_t)(n_train ? n_train : 1) * sizeof *f->perm);
    f->idx = malloc((size_t)batch_size * sizeof *f->idx);
    f->lab = malloc((size_t)batch_size * sizeof *f->lab);
    f->am = malloc((size_t)batch_size * sizeof *f->am);
    if (!f->order || !f->perm || !f->idx || !f->lab || !f->am) {
        pg_fit_free(f);
        return pg_fail_null(PG_STATUS_ERR_NOMEM, "%s: out of memory", OP);
    }
    /* an external stream (R's non-default RNGkind) shuffles like R's sample.int, but has no
     * state to save: such a run trains, its checkpoints are refused (pg_fit_split_state) */
    int has = pg_rng_has_state(rng), rc = has < 0 ? -has : 0;
    if (!rc && split_state && !has)
        rc = pg_fail(PG_STATUS_ERR_STATE,
                     "%s: cannot resume on a random stream without a state (R with a non-default "
                     "RNGkind()): use R's default generator, or seed = in the run that saved",
                     OP);
    else if (!rc && split_state) rc = pg_rng_set_state(rng, split_state, PG_RNG_STATE_LEN);
    if (!rc && has) rc = pg_rng_get_state(rng, f->split_state);
    f->no_state = !has;
    if (!rc && f->shuffle && !params->fixed_split) rc = draw_perm(f, n, f->order);
    else
        for (int64_t i = 0; i < n; i++) f->order[i] = i;
    if (rc) {
        pg_fit_free(f);
        return NULL;
    }
    memcpy(f->perm, f->order, (size_t)n_train * sizeof *f->perm);
    return f;
}

/* each rank would keep only its shard of the epoch's outputs, and AUC, F1 or R^2 of shards do
 * not all-reduce into the whole epoch's */
static int distributed_metrics(void)
{
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: metrics cannot be combined with distributed training: each rank sees "
                   "only its shard of the epoch's outputs; evaluate on rank 0 with ag_evaluate",
                   OP);
}

int pg_fit_shard(pg_fit *f, int64_t rank, int64_t world)
{
    if (!f) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    if (world < 1 || rank < 0 || rank >= world)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: rank %lld is not in [0, %lld)", OP,
                       (long long)rank, (long long)world);
    if (world > 1 && f->keep) return distributed_metrics();
    f->rank = rank;
    f->world = world;
    return 0;
}

int pg_fit_metrics(pg_fit *f, int64_t n, const int *codes)
{
    if (!f || n < 0 || (n > 0 && !codes)) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL metrics", OP);
    if (n > 0 && f->world > 1) return distributed_metrics();
    pg_fit_keep *k = n > 0 ? pg_fit_keep_new(n, codes, f->classify) : NULL;
    if (n > 0 && !k) return -1;
    pg_fit_keep_free(f->keep);
    f->keep = k;
    return 0;
}

int pg_fit_metrics_epoch(const pg_fit *f, int val, double *values)
{
    if (!f || (f->keep && !values)) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or values", OP);
    return f->keep ? pg_fit_keep_values(f->keep, val, values) : 0;
}

int64_t pg_fit_metric_codes(const pg_fit *f, const int **codes)
{
    return f ? pg_fit_keep_codes(f->keep, codes) : (*codes = NULL, 0);
}

int pg_fit_monitor_mask(const pg_fit *f)
{
    if (!f) return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    return (f->classify != PG_FIT_CLASSIFY_NONE) | pg_fit_keep_mask(f->keep);
}

int pg_fit_sizes(const pg_fit *f, pg_fit_dims *out)
{
    if (!f || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or output", OP);
    out->n = f->n;
    out->n_train = f->n_train;
    out->n_val = f->n_val;
    out->n_batches = f->n_batches;
    out->accum = f->accum;
    out->n_val_batches = f->n_valb;
    return 0;
}

int64_t pg_fit_total_batches(const pg_fit *f, int64_t nepoch, int64_t first_epoch)
{
    if (!f) return -pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    return nepoch >= first_epoch ? (nepoch - first_epoch + 1) * f->n_batches : 0;
}

int pg_fit_split_state(const pg_fit *f, int32_t *out)
{
    if (!f || !out) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or output", OP);
    if (f->no_state)
        return pg_fail(PG_STATUS_ERR_STATE,
                       "%s: the run's random stream has no state to save (R with a non-default "
                       "RNGkind()): pass seed = to checkpoint the run",
                       OP);
    memcpy(out, f->split_state, sizeof f->split_state);
    return 0;
}

int pg_fit_epoch_begin(pg_fit *f)
{
    if (!f) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    if (f->shuffle) {
        int64_t *p = malloc((size_t)(f->n_train ? f->n_train : 1) * sizeof *p);
        if (!p) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for a shuffle", OP);
        int rc = draw_perm(f, f->n_train, p);
        for (int64_t i = 0; rc == 0 && i < f->n_train; i++) f->perm[i] = f->order[p[i]];
        free(p);
        if (rc) return rc;
    }
    for (int k = 0; k < 2; k++) f->st[k].n = f->st[k].ncorrect = f->st[k].ndata = 0;
    pg_fit_keep_clear(f->keep);
    return 0;
}

/* the batch tensor of width w for part k: slot 0 holds the full width, slot 1 a narrower one */
static pg_tensor *slot(pg_tensor **s, int dtype, int64_t rows, int64_t w, int64_t full)
{
    pg_tensor **t = &s[w == full ? 0 : 1];
    if (*t && (*t)->ne[1] != w) {
        pg_tensor_release(*t);
        *t = NULL;
    }
    if (!*t) *t = pg_new(dtype, rows, w, PG_MEM_CATEGORY_OTHER);
    return *t;
}

static void gather(const pg_tensor *src, pg_tensor *dst, const int64_t *idx, int64_t w)
{
    const size_t col = (size_t)src->ne[0] * pg_dtype_size(src->dtype);
    const char *s = pg_data(src);
    char *d = pg_data(dst);
    for (int64_t j = 0; j < w; j++) memcpy(d + (size_t)j * col, s + (size_t)idx[j] * col, col);
    pg_bump(dst);
}

static void labels(const pg_fit *f, int64_t w)
{
    const pg_tensor *y = f->y;
    const int64_t K = y->ne[0];
    PG_DISPATCH(y->dtype, {
        const T *v = pg_data(y);
        for (int64_t j = 0; j < w; j++) {
            const T *c = v + f->idx[j] * K;
            int64_t best = 0;
            if (K == 1) best = (int64_t)c[0];
            else
                for (int64_t i = 1; i < K; i++)
                    if (c[i] > c[best]) best = i;
            f->lab[j] = best;
        }
    });
}

int64_t pg_fit_batch(pg_fit *f, int val, int64_t b, pg_tensor **xb, pg_tensor **yb)
{
    if (!f || !xb || !yb) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or output", OP);
    const int64_t nb = val ? f->n_valb : f->n_batches;
    if (b < 0 || b >= nb)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s batch %lld is not in [0, %lld)", OP,
                       val ? "validation" : "training", (long long)b, (long long)nb);
    const int64_t *src = val ? f->order + f->n_train : f->perm;
    const int64_t total = val ? f->n_val : f->n_train;
    int64_t lo = b * f->bs, len = total - lo < f->bs ? total - lo : f->bs;
    if (!val && f->world > 1) { /* this rank's chunk of the global batch (array_split) */
        const int64_t q = len / f->world, r = len % f->world;
        lo += f->rank * q + (f->rank < r ? f->rank : r);
        len = q + (f->rank < r ? 1 : 0);
    }
    if (len < 1)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: rank %lld has no sample in batch %lld", OP,
                       (long long)f->rank, (long long)b);
    memcpy(f->idx, src + lo, (size_t)len * sizeof *f->idx);
    const int64_t full = (!val && f->world > 1) ? (f->bs + f->world - 1) / f->world : f->bs;
    pg_tensor *xt = slot(f->xb, f->x->dtype, f->x->ne[0], len, full);
    pg_tensor *yt = f->y ? slot(f->yb, f->y->dtype, f->y->ne[0], len, full) : NULL;
    if (!xt || (f->y && !yt))
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for a batch of %lld", OP,
                       (long long)len);
    gather(f->x, xt, f->idx, len);
    if (yt) gather(f->y, yt, f->idx, len);
    if (!val && f->w) { /* validation stays unweighted (keras without validation weights) */
        f->wcur = slot(f->wb, f->w->dtype, 1, len, full);
        if (!f->wcur)
            return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for a batch of %lld", OP,
                           (long long)len);
        gather(f->w, f->wcur, f->idx, len);
    }
    if (f->classify == PG_FIT_CLASSIFY_ARGMAX && f->y) labels(f, len);
    if (val) f->width_val = len;
    else f->width = len;
    pg_tensor_retain(xt);
    if (yt) pg_tensor_retain(yt);
    *xb = xt;
    *yb = yt;
    return len;
}

int pg_fit_record(pg_fit *f, int val, double loss, pg_tensor *out)
{
    if (!f) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    fit_stats *s = &f->st[val ? 1 : 0];
    const int64_t w = val ? f->width_val : f->width;
    if (s->n == s->cap) {
        const int64_t cap = s->cap ? 2 * s->cap : 64;
        double *l = realloc(s->loss, (size_t)cap * sizeof *l);
        if (l) s->loss = l;
        double *ww = l ? realloc(s->w, (size_t)cap * sizeof *ww) : NULL;
        if (!l || !ww)
            return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory for the epoch's losses", OP);
        s->w = ww;
        s->cap = cap;
    }
    if (f->classify > PG_FIT_CLASSIFY_ARGMAX && f->y) { /* idx: still this batch's samples */
        int64_t h = 0;
        if (pg_not_live(out, OP, "the model's output") ||
            pg_fit_binary_hits(out, f->y, f->idx, w, f->classify, &h))
            return -1;
        s->ncorrect += h;
        s->ndata += w * f->y->ne[0];
    } else if (f->classify && f->y) {
        if (pg_not_live(out, OP, "the model's output")) return -1;
        if (out->ne[1] != w)
            return pg_fail(PG_STATUS_ERR_SHAPE,
                           "%s: the model's output is %s for a batch of %lld samples", OP,
                           pg_desc(out), (long long)w);
        if (pg_argmax(out, f->am)) return -1;
        for (int64_t j = 0; j < w; j++) s->ncorrect += f->am[j] == f->lab[j];
        s->ndata += w;
    }
    if (f->keep &&
        (pg_not_live(out, OP, "the model's output") ||
         pg_fit_keep_add(f->keep, val, out, f->y, f->idx, w)))
        return -1;
    s->loss[s->n] = loss;
    /* training batches weigh equally (all full), validation ones by width; a shard keeps its
     * width until pg_fit_stats_import merges the ranks' global batches */
    s->w[s->n] = (val || f->world > 1) ? (double)w : 1.0;
    s->n++;
    return 0;
}

int64_t pg_fit_stats_len(const pg_fit *f)
{
    if (!f) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    return 2 * f->st[0].n + 2;
}

int pg_fit_stats_export(const pg_fit *f, double *buf, int64_t len)
{
    if (!f || !buf) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or buffer", OP);
    const fit_stats *s = &f->st[0];
    if (len != 2 * s->n + 2)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: statistics buffer has %lld values, the epoch needs %lld", OP,
                       (long long)len, (long long)(2 * s->n + 2));
    for (int64_t i = 0; i < s->n; i++) {
        buf[i] = s->w[i] * s->loss[i];
        buf[s->n + i] = s->w[i];
    }
    buf[2 * s->n] = (double)s->ncorrect;
    buf[2 * s->n + 1] = (double)s->ndata;
    return 0;
}

int pg_fit_stats_import(pg_fit *f, const double *buf, int64_t len)
{
    if (!f || !buf) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or buffer", OP);
    fit_stats *s = &f->st[0];
    if (len != 2 * s->n + 2)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: statistics buffer has %lld values, the epoch needs %lld", OP,
                       (long long)len, (long long)(2 * s->n + 2));
    for (int64_t i = 0; i < s->n; i++)
        if (!(buf[s->n + i] > 0))
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: global batch %lld has no samples", OP,
                           (long long)i);
    for (int64_t i = 0; i < s->n; i++) {
        s->loss[i] = buf[i] / buf[s->n + i];
        s->w[i] = 1.0;
    }
    s->ncorrect = (int64_t)buf[2 * s->n];
    s->ndata = (int64_t)buf[2 * s->n + 1];
    return 0;
}

int pg_fit_running(const pg_fit *f, double *loss, double *accuracy)
{
    if (!f || !loss || !accuracy) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or output", OP);
    const fit_stats *s = &f->st[0];
    double sum = 0;
    for (int64_t i = 0; i < s->n; i++) sum += s->loss[i];
    *loss = s->n ? sum / (double)s->n : NAN;
    *accuracy = (f->classify && f->y && s->ndata) ? (double)s->ncorrect / (double)s->ndata : NAN;
    return 0;
}

int pg_fit_epoch_end(const pg_fit *f, int per_datapoint, pg_fit_result *train, pg_fit_result *val)
{
    if (!f || !train || !val) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or output", OP);
    for (int k = 0; k < 2; k++) {
        const fit_stats *s = &f->st[k];
        pg_fit_result *o = k ? val : train;
        o->loss = o->loss_unc = o->accuracy = o->accuracy_unc = NAN;
        if (k == 1 && !f->n_val) continue;
        if (pg_loss_stats(s->loss, s->w, s->n, per_datapoint, &o->loss, &o->loss_unc)) return -1;
        if (f->classify && f->y &&
            pg_acc_stats(s->ncorrect, s->ndata, &o->accuracy, &o->accuracy_unc))
            return -1;
    }
    return 0;
}

int pg_fit_loss_diverged(const pg_fit *f, const pg_fit_result *r, int64_t epoch, char *msg,
                         int64_t n)
{
    if (!f || !r || !msg || n < 1) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL argument", OP);
    msg[0] = 0;
    for (int k = 0; k < 2; k++) {
        const double v = r[k].loss;
        if ((k == 1 && !f->n_val) || isfinite(v)) continue;
        snprintf(msg, (size_t)n,
                 "ag_fit: the %s loss of epoch %lld is %s: training stops here (the weights may "
                 "no longer be finite; lower lr, clip gradients with max_norm, or scale x and y "
                 "to smaller values)",
                 k ? "validation" : "training", (long long)epoch,
                 isnan(v) ? "NaN" : (v > 0 ? "Inf" : "-Inf"));
        return 1;
    }
    return 0;
}

int64_t pg_fit_run_static(pg_fit *f, int val, int64_t b0, int64_t b1, pg_graph *g, pg_tensor *out)
{
    if (!f || !g) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit or compiled step", OP);
    for (int64_t b = b0; b < b1; b++) {
        pg_tensor *xb = NULL, *yb = NULL;
        if (pg_fit_batch(f, val, b, &xb, &yb) < 0) return -1;
        /* the step must read the tensors the plan gathers into: no copy per batch */
        const int same = pg_graph_input(g, 0) == xb && (!yb || pg_graph_input(g, 1) == yb) &&
            (val || !f->w || pg_graph_input(g, yb ? 2 : 1) == f->wcur); /* the weight row next */
        pg_tensor_release(xb);
        pg_tensor_release(yb);
        if (!same)
            return pg_fail(PG_STATUS_ERR_STATE,
                           "%s: the compiled step was not recorded on the plan's batch tensors",
                           OP);
        if (pg_graph_run(g) < 0) return -1;
        if (pg_fit_record(f, val, pg_scalar_get(pg_graph_output(g)), out)) return -1;
    }
    return b1 - b0;
}

int pg_fit_train_step(pg_fit *f, pg_tensor *loss, pg_tensor *out, pg_optim *o, double *lval)
{
    if (!f || !o || !lval)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL fit, optimizer or value", OP);
    if (pg_not_live(loss, OP, "the loss")) return -1;
    if (loss->ne[0] != 1 || loss->ne[1] != 1)
        return pg_fail(PG_STATUS_ERR_SHAPE, "%s: the loss must be a 1x1 tensor, got %s", OP,
                       pg_desc(loss));
    *lval = pg_scalar_get(loss);
    pg_gradmap *g = pg_backward(loss);
    if (!g) return -1;
    const int rc = pg_optim_step_sum(o, g); /* one map per micro-batch: the optimizer sums them */
    pg_gradmap_free(g);
    if (rc < 0 || pg_optim_zero_grad(o)) return -1;
    if (pg_fit_record(f, 0, *lval, out)) return -1;
    pg_tape_clear();
    return 0;
}

int64_t pg_fit_nrecorded(const pg_fit *f, int val, double *last)
{
    const fit_stats *s = &f->st[val ? 1 : 0];
    if (last) *last = s->n ? s->loss[s->n - 1] : NAN;
    return s->n;
}

int64_t pg_fit_width(const pg_fit *f, int val, int64_t b)
{
    const int64_t nb = val ? f->n_valb : f->n_batches, total = val ? f->n_val : f->n_train;
    if (b < 0 || b >= nb) return 0;
    int64_t len = total - b * f->bs < f->bs ? total - b * f->bs : f->bs;
    if (!val && f->world > 1) len = len / f->world + (f->rank < len % f->world ? 1 : 0);
    return len;
}

pg_tensor *pg_fit_batch_weights(pg_fit *f)
{
    if (!f) return pg_fail_null(PG_STATUS_ERR_ARG, "%s: NULL fit", OP);
    if (f->w && f->wcur) pg_tensor_retain(f->wcur);
    return f->w ? f->wcur : NULL;
}

pg_tensor **pg_fit_weight_slot(pg_fit *f, pg_tensor **x, pg_tensor **y, int64_t *n_given)
{
    *x = f->x;
    *y = f->y;
    *n_given = f->fixed ? f->n - f->n_val : f->n;
    return &f->w;
}
