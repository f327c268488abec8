/* ag_save_model's check that the architecture config it writes loads back, and the texts of a
 * rebuild that failed (pg_api_modelfile.h). The front ends only rebuild (the layers'
 * constructors are the language's) and hand over names and shapes; the budget, the comparison,
 * the refusal texts and the cache of checked configs are these, once for R and Python. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modelfile_internal.h"

#define PRE     "ag_save_model(): the model's architecture config would not load back"
#define CACHE_N 16

/* configs (text with the tensors' names, shapes and dtypes) that rebuilt, oldest first: ag_fit's
 * checkpoints save the same architecture every epoch */
static char *cache[CACHE_N];
static size_t cache_len[CACHE_N];
static int cache_n;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static int bad_args(const char *text, const pg_mf_model *m, const char *fn)
{
    if (!text) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL config text", fn);
    return mf_check_model(m, fn);
}

/* text, then each tensor as "\n<p|b><name>\t<rows>x<cols>:<dtype>": NULL when out of memory */
static char *cache_key(const char *text, const pg_mf_model *m, size_t *len)
{
    mf_str b = {NULL, 0, 0, 0};
    char num[80];
    mf_str_add(&b, text);
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < (k ? m->n_buffers : m->n_params); i++) {
            const pg_tensor *t = k ? m->buffers[i] : m->params[i];
            mf_str_add(&b, k ? "\nb" : "\np");
            mf_str_add(&b, k ? m->buffer_names[i] : m->param_names[i]);
            snprintf(num, sizeof num, "\t%lldx%lld:%d", (long long)t->ne[0], (long long)t->ne[1],
                     (int)t->dtype);
            mf_str_add(&b, num);
        }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    *len = b.n;
    return b.s;
}

static int cache_find(const char *key, size_t len)
{
    for (int i = 0; i < cache_n; i++)
        if (cache_len[i] == len && !memcmp(cache[i], key, len)) return i;
    return -1;
}

int pg_mf_config_check_begin(const char *text, const pg_mf_model *m, int *checked, int *dtype)
{
    int rc = bad_args(text, m, "pg_mf_config_check_begin()");
    if (rc) return rc;
    if (!checked || !dtype)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_config_check_begin(): NULL out");
    size_t len;
    char *key = cache_key(text, m, &len);
    if (!key) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    pthread_mutex_lock(&cache_mu);
    *checked = cache_find(key, len) >= 0;
    pthread_mutex_unlock(&cache_mu);
    free(key);
    int64_t total = 0, f64 = 0;
    for (int64_t i = 0; i < m->n_params; i++) {
        total += m->params[i]->ne[0] * m->params[i]->ne[1];
        f64 += m->params[i]->dtype == PG_DTYPE_F64;
    }
    for (int64_t i = 0; i < m->n_buffers; i++) total += m->buffers[i]->ne[0] * m->buffers[i]->ne[1];
    *dtype = m->n_params && f64 == m->n_params ? PG_DTYPE_F64 : PG_DTYPE_F32;
    if (*checked) return 0;
    /* the loader's budget (modelfile.c's check_config): what it would refuse is refused here */
    rc = pg_json_check(text, (int64_t)strlen(text), "metadata 'config'", 16 * total + 65536);
    if (rc == PG_STATUS_ERR_VALUE)
        return pg_mf_rebuild_fail(NULL, PG_MF_REBUILD_SAVE, pg_last_error());
    return rc;
}

int pg_mf_rebuild_fail(const pg_mf *mf, int what, const char *why)
{
    char copy[768]; /* why may be pg_last_error()'s own buffer */
    snprintf(copy, sizeof copy, "%s", why ? why : "?");
    if (what == PG_MF_REBUILD_SAVE)
        return pg_fail(PG_STATUS_ERR_VALUE, PRE " (%s); nothing was written", copy);
    if (!mf || (what != PG_MF_REBUILD_LOAD && what != PG_MF_REBUILD_UNUSABLE))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_rebuild_fail(): bad arguments");
    return mf_bad(mf, "%s: %s",
                  what == PG_MF_REBUILD_LOAD
                      ? "cannot rebuild the model from its architecture config"
                      : "the rebuilt model is not usable",
                  copy);
}

typedef struct {
    const char *name;
    int64_t r, c;
} ent;

static int cmp_ent(const void *a, const void *b)
{
    return strcmp(((const ent *)a)->name, ((const ent *)b)->name);
}

/* "'w' 3x4, 'b' 1x4" (none: "none") into t, at most ~400 bytes (pg_fail keeps 1023): then "... (N in all)" */
static void put_list(pg_text *t, const char *const *names, pg_tensor *const *ts, int64_t n)
{
    if (!n) pg_text_put(t, "none");
    int64_t start = t->len;
    for (int64_t i = 0; i < n; i++) {
        if (t->len - start > 250) {
            pg_text_put(t, ", ... (%lld in all)", (long long)n);
            return;
        }
        pg_text_put(t, "%s'%.100s' %lldx%lld", i ? ", " : "", names[i], (long long)ts[i]->ne[0],
                    (long long)ts[i]->ne[1]);
    }
}

/* the same names with the same shapes, in any order: 0 equal, 1 not, -1 out of memory */
static int differ(const char *const *an, pg_tensor *const *at, int64_t na, const char *const *bn,
                  pg_tensor *const *bt, int64_t nb)
{
    if (na != nb) return 1;
    ent *e = malloc(sizeof(ent) * (size_t)(2 * na + 1));
    if (!e) return -1;
    for (int64_t i = 0; i < na; i++) {
        e[i] = (ent){an[i], at[i]->ne[0], at[i]->ne[1]};
        e[na + i] = (ent){bn[i], bt[i]->ne[0], bt[i]->ne[1]};
    }
    qsort(e, (size_t)na, sizeof(ent), cmp_ent);
    qsort(e + na, (size_t)na, sizeof(ent), cmp_ent);
    int d = 0;
    for (int64_t i = 0; i < na && !d; i++)
        d = strcmp(e[i].name, e[na + i].name) || e[i].r != e[na + i].r || e[i].c != e[na + i].c;
    free(e);
    return d;
}

int pg_mf_config_check_end(const char *text, const pg_mf_model *m, const pg_mf_model *built)
{
    int rc = bad_args(text, m, "pg_mf_config_check_end()");
    if (!rc) rc = mf_check_model(built, "pg_mf_config_check_end()");
    if (rc) return rc;
    for (int k = 0; k < 2; k++) {
        const char *const *mn = k ? m->buffer_names : m->param_names;
        const char *const *bn = k ? built->buffer_names : built->param_names;
        pg_tensor *const *mt = k ? m->buffers : m->params,
                         *const *bt = k ? built->buffers : built->params;
        int64_t n_m = k ? m->n_buffers : m->n_params, n_b = k ? built->n_buffers : built->n_params;
        int d = differ(mn, mt, n_m, bn, bt, n_b);
        if (d < 0) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
        if (!d) continue;
        char msg[1024];
        pg_text t = {msg, sizeof msg, 0};
        pg_text_put(&t, "it rebuilds %s ", k ? "buffers" : "parameters");
        put_list(&t, bn, bt, n_b);
        pg_text_put(&t, ", the model has ");
        put_list(&t, mn, mt, n_m);
        return pg_fail(PG_STATUS_ERR_VALUE, PRE ": %s; nothing was written", msg);
    }
    size_t len;
    char *key = cache_key(text, m, &len);
    if (!key) return 0; /* checked; only not remembered */
    pthread_mutex_lock(&cache_mu);
    if (cache_find(key, len) >= 0) {
        free(key);
    } else {
        if (cache_n == CACHE_N) {
            free(cache[0]);
            memmove(cache, cache + 1, sizeof cache[0] * (CACHE_N - 1));
            memmove(cache_len, cache_len + 1, sizeof cache_len[0] * (CACHE_N - 1));
            cache_n--;
        }
        cache[cache_n] = key, cache_len[cache_n++] = len;
    }
    pthread_mutex_unlock(&cache_mu);
    return 0;
}

void pg_mf_config_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < cache_n; i++) free(cache[i]);
    cache_n = 0;
    pthread_mutex_unlock(&cache_mu);
}

int pg_mf_json_refuse(int why, const char *what, const char *detail)
{
    char d[512]; /* detail may be pg_last_error()'s own buffer */
    snprintf(d, sizeof d, "%s", detail ? detail : "?");
    if (!what) what = "a value";
    if (why == PG_MF_JSON_DEEP)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_save_model(): %s is nested deeper than %d levels (what ag_load_model "
                       "reads)",
                       what, PG_JSON_MAX_DEPTH);
    if (why == PG_MF_JSON_NOT_JSON)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_save_model(): %s must be JSON-serialisable (%s)",
                       what, d);
    return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_json_refuse(): bad arguments");
}
