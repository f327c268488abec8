/* ag_model_checkpoint's run state, written once for both front ends: the model file's metadata
 * 'extra' = {"fit": {"settings": {...}, "history": {...}, "rng_state": [...], "callbacks":
 * [...]}} and the names of the callbacks' tensors (docs/model-format.md). The reader of the
 * same layout is fit_resume.c's pg_fit_ckpt_open. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

/* the text written into out[0..cap) while it fits; len counts what the whole needs */
typedef struct {
    char *out;
    int64_t cap, len;
} buf_t;

static void put(buf_t *b, const char *s, int64_t n)
{
    if (n < 0) n = (int64_t)strlen(s);
    if (b->out && b->len < b->cap - 1) {
        int64_t k = b->cap - 1 - b->len < n ? b->cap - 1 - b->len : n;
        memcpy(b->out + b->len, s, (size_t)k);
        b->out[b->len + k] = '\0';
    }
    b->len += n;
}

static void put_str(buf_t *b, const char *s)
{
    char *q = pj_quoted(s);
    if (q) put(b, q, -1);
    else /* measured only: the caller's second pass fails alike, on its own allocation */
        b->len += pj_quote(NULL, 0, 0, s, (int64_t)strlen(s));
    free(q);
}

/* a double as the shortest text that reads back the same; not finite: null */
static void put_num(buf_t *b, double v)
{
    char s[40] = "null";
    if (isfinite(v))
        for (int d = 15; d <= 17; d++) {
            snprintf(s, sizeof s, "%.*g", d, v);
            if (strtod(s, NULL) == v) break;
        }
    put(b, s, -1);
}

/* 0 when text is one JSON value (an object when object), else a status naming what */
static int json_value(const char *text, int object, const char *what)
{
    char why[256];
    pj_doc d;
    int rc = pj_parse(text, (int64_t)strlen(text), NULL, &d, why, sizeof why);
    if (rc)
        return pg_fail(PG_STATUS_ERR_VALUE, "ag_model_checkpoint: %s is not valid JSON (%s)", what,
                       why);
    int ok = !object || d.nodes[0].type == PJ_OBJ;
    pj_free(&d);
    return ok ? 0
              : pg_fail(PG_STATUS_ERR_VALUE, "ag_model_checkpoint: %s must be a JSON object", what);
}

static int reserved(const char *k)
{
    if (!strcmp(k, "epoch") || !strcmp(k, "stopped_epoch") || !strcmp(k, "best_epoch")) return 1;
    for (int i = 0; i < PG_FIT_LOG_COUNT; i++)
        if (!strcmp(k, pg_fit_log_name(i))) return 1;
    return 0;
}

static int check_args(const char *settings, const double *hist, int64_t n, int64_t n_metrics,
                      const char *const *metrics, const int32_t *rng, int64_t n_cb,
                      const char *const *cb)
{
    if (!settings || n < 0 || (n > 0 && !hist) || n_metrics < 0 || (n_metrics && !metrics) ||
        !rng || n_cb < 0 || (n_cb && !cb))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_ckpt_extra(): NULL or negative argument");
    int rc = json_value(settings, 1, "the run's settings");
    for (int64_t i = 0; !rc && i < n_metrics; i++) {
        if (!metrics[i] || !*metrics[i] || reserved(metrics[i]) ||
            !pj_utf8_ok((const unsigned char *)metrics[i], (int64_t)strlen(metrics[i])))
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_model_checkpoint: history column %lld has no usable name",
                           (long long)i);
        for (int64_t j = 0; j < i; j++)
            if (!strcmp(metrics[i], metrics[j]))
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "ag_model_checkpoint: history column '%s' twice", metrics[i]);
    }
    for (int64_t i = 0; !rc && i < n_cb; i++) {
        char what[64];
        snprintf(what, sizeof what, "callback %lld's state", (long long)i + 1);
        if (cb[i]) rc = json_value(cb[i], 0, what);
    }
    if (rc) return rc;
    pg_rng *r = pg_rng_new_seeded(0); /* the generator's own rule, on a throwaway stream */
    if (!r) return pg_last_status();
    rc = pg_rng_set_state(r, rng, PG_RNG_STATE_LEN);
    pg_rng_free(r);
    if (rc)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_model_checkpoint: the random stream's state is not one R's default "
                       "generator takes");
    return 0;
}

int64_t pg_fit_ckpt_extra(const char *settings, const double *hist, int64_t n, int64_t n_metrics,
                          const char *const *metrics, double stopped_epoch, double best_epoch,
                          const int32_t *rng, int64_t n_cb, const char *const *cb, char *out,
                          int64_t cap)
{
    int rc = check_args(settings, hist, n, n_metrics, metrics, rng, n_cb, cb);
    if (rc) return -rc;
    buf_t b = {out, out ? cap : 0, 0};
    if (out && cap > 0) out[0] = '\0';
    put(&b, "{\"fit\": {\"settings\": ", -1);
    put(&b, settings, -1);
    put(&b, ", \"history\": {", -1);
    const int64_t ncol = 1 + PG_FIT_LOG_COUNT + n_metrics;
    for (int64_t c = 0; c < ncol; c++) {
        const char *k = c == 0      ? "epoch"
            : c <= PG_FIT_LOG_COUNT ? pg_fit_log_name((int)c - 1)
                                    : metrics[c - 1 - PG_FIT_LOG_COUNT];
        if (c) put(&b, ", ", 2);
        put_str(&b, k);
        put(&b, ": [", 3);
        for (int64_t i = 0; i < n; i++) {
            if (i) put(&b, ", ", 2);
            put_num(&b, hist[c * n + i]);
        }
        put(&b, "]", 1);
    }
    put(&b, ", \"stopped_epoch\": ", -1);
    put_num(&b, stopped_epoch);
    put(&b, ", \"best_epoch\": ", -1);
    put_num(&b, best_epoch);
    put(&b, "}, \"rng_state\": [", -1);
    for (int i = 0; i < PG_RNG_STATE_LEN; i++) {
        char s[16];
        snprintf(s, sizeof s, i ? ", %d" : "%d", (int)rng[i]);
        put(&b, s, -1);
    }
    put(&b, "], \"callbacks\": [", -1);
    for (int64_t i = 0; i < n_cb; i++) {
        if (i) put(&b, ", ", 2);
        put(&b, cb[i] ? cb[i] : "null", -1);
    }
    put(&b, "]}}", 3);
    return b.len;
}

static const char *KINDS[] = {"param", "buffer"};

int64_t pg_fit_ckpt_tensor_name(int64_t callback, int kind, const char *name, char *out,
                                int64_t cap)
{
    if (callback < 0 || kind < 0 || kind > 1 || !name || !*name)
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_fit_ckpt_tensor_name(): bad arguments");
    int n = snprintf(out, out ? (size_t)cap : 0, "callback%lld.%s.%s", (long long)callback,
                     KINDS[kind], name);
    return n;
}

int pg_fit_ckpt_tensor_parse(const char *name, int64_t *callback, int *kind, int64_t *rest)
{
    if (!name || strncmp(name, "callback", 8)) return 0;
    const char *p = name + 8;
    size_t d = strspn(p, "0123456789");
    if (d < 1 || d > 12 || p[d] != '.') return 0;
    const char *k = p + d + 1, *dot = strchr(k, '.');
    if (!dot) return 0;
    for (int i = 0; i < 2; i++)
        if ((size_t)(dot - k) == strlen(KINDS[i]) && !strncmp(k, KINDS[i], (size_t)(dot - k))) {
            if (callback) *callback = (int64_t)strtoll(p, NULL, 10);
            if (kind) *kind = i;
            if (rest) *rest = (int64_t)(dot + 1 - name);
            return 1;
        }
    return 0;
}
