/* ag_fit's set-up before its loop, once for R and Python (pg_api_train_setup.h): static /
 * distributed, the batch sizes over ranks, and the run's settings, kept here from the resume
 * check to every checkpoint (the front ends used to build and pass a dict / list each). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

#define OP "ag_fit"

struct pg_fit_setup {
    pg_fit_setup_params p; /* p.loss points at loss below */
    pg_fit_setup_info info;
    int64_t world; /* 0: not set */
    int32_t split[PG_RNG_STATE_LEN];
    char *loss;
    int64_t nmetrics;
    int metrics[PG_FIT_LOG_ALL]; /* ag_fit(metrics =)'s codes, in their order */
};

pg_fit_setup_params pg_fit_setup_default_params(void)
{
    pg_fit_setup_params p = {PG_FIT_STATIC_AUTO, 0, 0, 0, 32, 0, 0.0, 1, "cross_entropy", 0};
    return p;
}

int pg_fit_batches_check(int64_t batch_size, int64_t nbatch_logical)
{
    if (batch_size < 1 || nbatch_logical % batch_size == 0) return 0;
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: nbatch_logical (%lld) must be a multiple of batch_size (%lld)", OP,
                   (long long)nbatch_logical, (long long)batch_size);
}

int pg_fit_optim_check(pg_optim *o, pg_tensor *const *params, int64_t n)
{
    if (!o || n < 0 || (n && !params))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_optim_check(): NULL optimizer or parameters");
    const int64_t k = pg_optim_nparams(o);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++)
            if (pg_optim_param(o, i) == params[j]) return 0; /* one is enough: a part fine-tunes */
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: the optimizer updates none of the model's parameters (its %lld are not "
                   "among the model's %lld); build it on this model's parameters",
                   OP, (long long)k, (long long)n);
}

int pg_fit_setup_new(const pg_fit_setup_params *params, pg_fit_setup **out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_new(): out is NULL");
    *out = NULL;
    if (!params || !params->loss)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_new(): params or loss is NULL");
    const pg_fit_setup_params *p = params;
    if (p->static_mode < PG_FIT_STATIC_AUTO || p->static_mode > 1 || p->distributed < 0 ||
        p->distributed > 1 || p->n < 0 || p->batch_size < 1 || p->nbatch_logical < 0)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "pg_fit_setup_new(): static_mode, distributed, n or a batch size out of "
                       "range");
    /* R's order: refused before MPI starts (the weights' broadcast) */
    if (p->static_mode == 1 && p->distributed)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: static cannot be true with distributed training (the compiled step "
                       "has no gradient all-reduce)",
                       OP);
    /* before the optimizer is given nbatch_logical / batch_size steps to accumulate */
    const int rc = p->nbatch_logical ? pg_fit_batches_check(p->batch_size, p->nbatch_logical) : 0;
    if (rc) return rc;
    pg_fit_setup *s = calloc(1, sizeof *s);
    if (s) s->loss = malloc(strlen(p->loss) + 1);
    if (!s || !s->loss) {
        free(s);
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", OP);
    }
    strcpy(s->loss, p->loss);
    s->p = *p;
    s->p.loss = s->loss;
    if (!s->p.nbatch_logical) s->p.nbatch_logical = p->batch_size;
    /* None: compiled unless distributed; a model or loss not all built-in is probed first */
    const int builtin = p->builtin && strcmp(p->loss, "callable") != 0;
    s->info.static_step = p->static_mode == PG_FIT_STATIC_AUTO ? !p->distributed : p->static_mode;
    s->info.auto_static = p->static_mode == PG_FIT_STATIC_AUTO && !p->distributed && !builtin;
    s->info.batch_size = s->p.batch_size;
    s->info.nbatch_logical = s->p.nbatch_logical;
    s->info.accum = s->p.nbatch_logical / s->p.batch_size;
    s->info.per_datapoint = strcmp(s->loss, pg_fit_loss_name(PG_FIT_LOSS_SUM)) != 0;
    *out = s;
    return 0;
}

void pg_fit_setup_free(pg_fit_setup *s)
{
    if (!s) return;
    free(s->loss);
    free(s);
}

int pg_fit_setup_get(const pg_fit_setup *s, pg_fit_setup_info *out)
{
    if (!s || !out) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_get(): NULL argument");
    *out = s->info;
    return 0;
}

int pg_fit_setup_world(pg_fit_setup *s, int64_t world)
{
    if (!s) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_world(): s is NULL");
    if (!s->p.distributed || s->world)
        return pg_fail(PG_STATUS_ERR_STATE, "pg_fit_setup_world(): %s",
                       s->world ? "the world size is set already" : "the run is not distributed");
    if (world < 1 || s->p.batch_size > INT64_MAX / world || s->p.nbatch_logical > INT64_MAX / world)
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: %lld ranks (world size) out of range", OP,
                       (long long)world);
    s->world = world;
    s->info.batch_size = s->p.batch_size * world;
    s->info.nbatch_logical = s->p.nbatch_logical * world;
    return 0;
}

int pg_fit_setup_seed(pg_fit_setup *s, int32_t seed)
{
    if (!s) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_seed(): s is NULL");
    s->info.has_seed = 1;
    s->info.seed = seed;
    return 0;
}

int pg_fit_setup_metrics(pg_fit_setup *s, int64_t n, const int *codes)
{
    if (!s || n < 0 || n > PG_FIT_LOG_ALL || (n && !codes))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_metrics(): NULL or too many codes");
    for (int64_t i = 0; i < n; i++)
        if (!*pg_metric_name(codes[i]))
            return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_metrics(): %d is no metric code",
                           codes[i]);
    s->nmetrics = n;
    if (n) memcpy(s->metrics, codes, sizeof(int) * (size_t)n);
    return 0;
}

int pg_fit_setup_resume(pg_fit_setup *s, const char *path, pg_fit_ckpt **out)
{
    if (out) *out = NULL;
    if (!s || !path || !out)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_resume(): NULL argument");
    int64_t n = pg_fit_setup_settings(s, NULL, 0);
    char *text = n < 0 ? NULL : malloc((size_t)n + 1);
    if (!text) return n < 0 ? (int)-n : pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", OP);
    pg_fit_setup_settings(s, text, n + 1);
    int rc = pg_fit_ckpt_open(path, text, n, out);
    free(text);
    if (rc) return rc;
    int32_t seed = 0;
    s->info.has_seed = pg_fit_ckpt_seed(*out, &seed);
    s->info.seed = seed;
    s->info.has_split = pg_fit_ckpt_split_state(*out, s->split);
    return 0;
}

int pg_fit_setup_split_state(const pg_fit_setup *s, int32_t *out)
{
    if (!s) return 0;
    if (s->info.has_split && out) memcpy(out, s->split, sizeof s->split);
    return s->info.has_split;
}

int pg_fit_setup_plan_params(const pg_fit_setup *s, pg_fit_params *p)
{
    if (!s || !p) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_plan_params(): NULL argument");
    p->batch_size = s->info.batch_size;
    p->nbatch_logical = s->info.nbatch_logical;
    p->val_split = s->p.val_split;
    p->shuffle = s->p.shuffle;
    p->split_state = s->info.has_split ? s->split : NULL;
    return 0;
}

int pg_fit_setup_plan(pg_fit_setup *s, const pg_fit *f)
{
    if (!s || !f) return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_plan(): NULL argument");
    int32_t v[PG_RNG_STATE_LEN];
    int rc = pg_fit_split_state(f, v);
    if (rc == PG_STATUS_ERR_STATE) { /* an external stream: no state to record */
        pg_clear_error();
        s->info.has_split = 0;
        return 0;
    }
    if (rc) return rc;
    memcpy(s->split, v, sizeof v);
    s->info.has_split = 1;
    return 0;
}

pg_fit *pg_fit_setup_new_plan(pg_fit_setup *s, pg_tensor *x, pg_tensor *y, int classify,
                              pg_rng *rng, pg_tensor *xv, pg_tensor *yv)
{
    pg_fit_params p = pg_fit_default_params();
    if (pg_fit_setup_plan_params(s, &p)) return NULL;
    p.classify = classify, p.rng = rng, p.xv = xv, p.yv = yv;
    pg_fit *f = pg_fit_new(x, y, &p);
    if (f && pg_fit_setup_plan(s, f)) {
        pg_fit_free(f); /* the error stays the set-up's */
        return NULL;
    }
    return f;
}

void pg_sbuf_printf(pg_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int64_t room = b->out && b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->out + b->len : NULL, (size_t)room, fmt, ap);
    va_end(ap);
    b->len += n > 0 ? n : 0;
}

int64_t pg_fit_setup_settings(const pg_fit_setup *s, char *out, int64_t cap)
{
    if (!s || cap < 0 || (cap && !out))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_fit_setup_settings(): NULL or negative argument");
    pg_sbuf b = {out, out ? cap : 0, 0};
    if (out && cap > 0) out[0] = '\0';
    char v[40] = "null"; /* val_split: the shortest text that reads back the same */
    if (isfinite(s->p.val_split))
        for (int d = 15; d <= 17; d++) {
            snprintf(v, sizeof v, "%.*g", d, s->p.val_split);
            if (strtod(v, NULL) == s->p.val_split) break;
        }
    pg_sbuf_printf(
        &b,
        "{\"n\": %lld, \"batch_size\": %lld, \"nbatch_logical\": %lld, \"val_split\": %s, "
        "\"shuffle\": %s, \"loss\": ",
        (long long)s->p.n, (long long)s->info.batch_size, (long long)s->info.nbatch_logical, v,
        s->p.shuffle ? "true" : "false");
    char *q = pj_quoted(s->loss);
    if (!q) return -pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory");
    pg_sbuf_printf(&b, "%s", q);
    free(q);
    if (s->info.has_seed) pg_sbuf_printf(&b, ", \"seed\": %d", (int)s->info.seed);
    else pg_sbuf_printf(&b, ", \"seed\": null");
    pg_sbuf_printf(&b, ", \"split_state\": ");
    for (int i = 0; i < PG_RNG_STATE_LEN && s->info.has_split; i++)
        pg_sbuf_printf(&b, i ? ", %d" : "[%d", (int)s->split[i]);
    pg_sbuf_printf(&b, "%s, \"weighted\": %s, \"metrics\": [", s->info.has_split ? "]" : "null",
                   s->p.weighted ? "true" : "null");
    for (int64_t i = 0; i < s->nmetrics; i++) /* the names: no JSON escapes needed */
        pg_sbuf_printf(&b, "%s\"%s\"", i ? ", " : "", pg_metric_name(s->metrics[i]));
    pg_sbuf_printf(&b, "]}");
    return b.len;
}
