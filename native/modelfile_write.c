/* The model-file writer (pg_api_modelfile.h): collects a model's tensors by role and the
 * metadata texts, applies the save rules and builds the metadata map both front ends wrote
 * (docs/model-format.md), then hands everything to pg_st_write (atomic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modelfile_internal.h"

#define MAX_EPOCH 1000000000000LL /* the loader reads at most 12 digits */

typedef struct {
    pg_st_tensor t;
    int role;
    char *name; /* owned when the writer made it (optimizer.<slot>.<param>) */
} w_tensor;

struct pg_mf_writer {
    w_tensor *v;
    int64_t n, cap;
    char **slots; /* each add_slot's slot name (owned) */
    int64_t n_slots;
    const char *field[PG_MF_FIELD_COUNT];
    int64_t epoch;  /* -1: none */
    char *opt_head; /* the optimizer's JSON up to its slots, or NULL */
    void **owned;   /* buffers the writer frees with itself (mf_writer_adopt) */
    int64_t n_owned;
};

int mf_writer_adopt(pg_mf_writer *w, void *data)
{
    void **v = realloc(w->owned, sizeof(void *) * (size_t)(w->n_owned + 1));
    if (!v) {
        free(data);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    w->owned = v;
    w->owned[w->n_owned++] = data;
    return 0;
}

/* a growing text for the JSON the writer makes */
static void jb_raw(mf_str *b, const char *s) { mf_str_add(b, s); }

static void jb_names(mf_str *b, const char *const *v, int64_t n)
{
    jb_raw(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i) jb_raw(b, ",");
        mf_str_quote(b, v[i]);
    }
    jb_raw(b, "]");
}

/* a finite double as the shortest of 15-17 significant digits that reads back the same */
static void jb_num(mf_str *b, double x, int type)
{
    char s[64];
    if (type == PG_MF_NUM_BOOL) snprintf(s, sizeof s, "%s", x != 0 ? "true" : "false");
    else if (!isfinite(x)) snprintf(s, sizeof s, "null");
    else if (type == PG_MF_NUM_INT && fabs(x) < 9e15) snprintf(s, sizeof s, "%.0f", x);
    else
        for (int d = 15; d <= 17; d++) {
            snprintf(s, sizeof s, "%.*g", d, x);
            if (strtod(s, NULL) == x) break;
        }
    jb_raw(b, s);
}

pg_mf_opt_meta pg_mf_opt_meta_default(void)
{
    pg_mf_opt_meta m;
    memset(&m, 0, sizeof m);
    return m;
}

int pg_mf_writer_new(pg_mf_writer **out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_new(): out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    (*out)->epoch = -1;
    return 0;
}

void pg_mf_writer_free(pg_mf_writer *w)
{
    if (!w) return;
    for (int64_t i = 0; i < w->n; i++) free(w->v[i].name);
    for (int64_t i = 0; i < w->n_slots; i++) free(w->slots[i]);
    for (int64_t i = 0; i < w->n_owned; i++) free(w->owned[i]);
    free(w->owned);
    free(w->v), free(w->slots), free(w->opt_head), free(w);
}

static int push(pg_mf_writer *w, int role, const pg_st_tensor *t, char *owned)
{
    if (w->n == w->cap) {
        int64_t cap = w->cap ? 2 * w->cap : 16;
        w_tensor *v = realloc(w->v, sizeof *v * (size_t)cap);
        if (!v) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
        w->v = v, w->cap = cap;
    }
    w->v[w->n].t = *t;
    if (owned) w->v[w->n].t.name = owned;
    w->v[w->n].role = role, w->v[w->n].name = owned;
    w->n++;
    return 0;
}

int pg_mf_writer_add(pg_mf_writer *w, int role, const pg_st_tensor *t)
{
    if (!w || !t || !t->name || role < 0 || role >= PG_MF_ROLE_COUNT)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_add(): bad arguments");
    return push(w, role, t, NULL);
}

int pg_mf_writer_add_values(pg_mf_writer *w, int role, const char *name, int f64, int ndim,
                            const int64_t *dims, const double *colmajor)
{
    int64_t r = ndim > 0 && dims ? dims[0] : 1, c = ndim > 1 && dims ? dims[1] : 1;
    if (!w || !name || role < 0 || role >= PG_MF_ROLE_COUNT || ndim < 0 || (ndim && !dims) ||
        r < 0 || c < 0 || (c && r > INT64_MAX / 8 / c) || (r && c && !colmajor))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_add_values(): bad arguments");
    if (ndim > 2)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_save_model(): tensor '%s' has %d dimensions (at most 2)", name, ndim);
    char *nm = malloc(strlen(name) + 1), *buf = malloc((size_t)(r * c) * (f64 ? 8 : 4) + 1);
    if (!nm || !buf) {
        free(nm), free(buf);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    strcpy(nm, name);
    for (int64_t i = 0; i < r; i++) /* the file's layout: row-major */
        for (int64_t j = 0; j < c; j++) {
            double y = colmajor[j * r + i];
            float z = (float)y;
            memcpy(buf + (i * c + j) * (f64 ? 8 : 4), f64 ? (void *)&y : (void *)&z, f64 ? 8 : 4);
        }
    pg_st_tensor t = {nm, f64 ? PG_ST_DTYPE_F64 : PG_ST_DTYPE_F32, ndim, r, c, r && c ? buf : NULL};
    int rc = mf_writer_adopt(w, buf);
    if (rc) return free(nm), rc;
    rc = push(w, role, &t, nm);
    if (rc) free(nm);
    return rc;
}

int pg_mf_writer_add_slot(pg_mf_writer *w, const char *slot, const char *param,
                          const pg_st_tensor *t)
{
    if (!w || !slot || (t && !param))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_add_slot(): bad arguments");
    size_t L = strlen(slot) + (param ? strlen(param) : 0) + 16;
    char *name = malloc(L), *s = malloc(strlen(slot) + 1);
    char **slots = realloc(w->slots, sizeof(char *) * (size_t)(w->n_slots + 1));
    if (slots) w->slots = slots;
    if (!name || !s || !slots) {
        free(name), free(s);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    int rc = 0;
    if (t) {
        snprintf(name, L, "optimizer.%s.%s", slot, param);
        rc = push(w, PG_MF_ROLE_COUNT, t, name); /* after the model's, before ROLE_TENSOR's */
    } else free(name);
    if (rc) {
        free(name), free(s);
        return rc;
    }
    strcpy(s, slot);
    w->slots[w->n_slots++] = s;
    return 0;
}

int pg_mf_writer_set(pg_mf_writer *w, int field, const char *text)
{
    if (!w || field < 0 || field >= PG_MF_FIELD_COUNT)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_set(): bad arguments");
    if (text && field != PG_MF_FIELD_CREATED_BY) { /* whatever is saved must load */
        const char *what = field == PG_MF_FIELD_EXTRA ? "metadata 'extra'"
            : field == PG_MF_FIELD_TARGET             ? "metadata 'target'"
                                                      : "metadata 'config'";
        if (pg_json_check(text, (int64_t)strlen(text), what, 0)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", pg_last_error());
            return pg_fail(PG_STATUS_ERR_VALUE, "ag_save_model(): %s; nothing was written", msg);
        }
        int trc = field == PG_MF_FIELD_TARGET ? mf_target_check(text) : 0;
        if (trc) return trc;
    }
    w->field[field] = text;
    return 0;
}

int pg_mf_epoch_arg(double v, const char *shown, int wrong_kind)
{
    const double lo = 0, hi = (double)(MAX_EPOCH - 1);
    return pg_arg_int("ag_save_model()", "epoch", v, &lo, &hi,
                      "an integer in [0, 1e12) (what ag_load_model reads back)", shown, wrong_kind);
}

int pg_mf_writer_set_epoch(pg_mf_writer *w, int64_t epoch)
{
    if (!w) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_set_epoch(): NULL writer");
    char shown[32];
    snprintf(shown, sizeof shown, "%lld", (long long)epoch);
    int rc = pg_mf_epoch_arg((double)epoch, shown, 0);
    if (!rc) w->epoch = epoch;
    return rc;
}

int pg_mf_writer_set_optimizer(pg_mf_writer *w, const pg_mf_opt_meta *m)
{
    if (!w || !m || !m->kind || m->n_hyper < 0 || m->n_params < 0 ||
        (m->n_hyper && (!m->hyper_names || !m->hyper_values)) || (m->n_params && !m->params))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_set_optimizer(): bad arguments");
    if (m->t < 0 || m->accum_count < 0)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_save_model(): the optimizer's t and accum_count must be >= 0");
    mf_str b = {0};
    char num[64];
    jb_raw(&b, "{\"kind\":");
    mf_str_quote(&b, m->kind);
    snprintf(num, sizeof num, ",\"t\":%lld,\"accum_count\":%lld,\"hyper\":{", (long long)m->t,
             (long long)m->accum_count);
    jb_raw(&b, num);
    for (int64_t i = 0; i < m->n_hyper; i++) {
        if (i) jb_raw(&b, ",");
        mf_str_quote(&b, m->hyper_names[i]);
        jb_raw(&b, ":");
        jb_num(&b, m->hyper_values[i], m->hyper_types ? m->hyper_types[i] : PG_MF_NUM_DOUBLE);
    }
    jb_raw(&b, "},\"params\":");
    jb_names(&b, m->params, m->n_params);
    if (b.oom) {
        free(b.s);
        return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    }
    free(w->opt_head);
    w->opt_head = b.s;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* the model's names of role, in order (borrowed) */
static int64_t role_names(const pg_mf_writer *w, int role, const char **out)
{
    int64_t k = 0;
    for (int64_t i = 0; i < w->n; i++)
        if (w->v[i].role == role) out[k++] = w->v[i].t.name;
    return k;
}

/* names used by both a parameter and a buffer, in the parameters' order, into b */
static int64_t clashes(const char *const *p, int64_t np, const char *const *bu, int64_t nb,
                       mf_str *b)
{
    const char **s = malloc(sizeof(char *) * (size_t)(nb ? nb : 1));
    int64_t n = 0;
    if (!s) return b->oom = 1, 0;
    memcpy(s, bu, sizeof(char *) * (size_t)nb);
    qsort(s, (size_t)nb, sizeof(char *), cmp_str);
    for (int64_t i = 0; i < np; i++)
        if (bsearch(&p[i], s, (size_t)nb, sizeof(char *), cmp_str)) {
            if (n++) mf_str_add(b, ", ");
            mf_str_add(b, p[i]);
        }
    free(s);
    return n;
}

/* the refusal of a name used by both a parameter and a buffer (ok: the name lists were made) */
static int clash_check(int ok, const char *const *p, int64_t np, const char *const *bu, int64_t nb)
{
    mf_str clash = {0};
    int rc = 0;
    if (ok && clashes(p, np, bu, nb, &clash) && !clash.oom)
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "ag_save_model(): names used by both a parameter and a buffer: %s", clash.s);
    if (!ok || clash.oom) rc = pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    free(clash.s);
    return rc;
}

int pg_mf_writer_check(pg_mf_writer *w)
{
    if (!w) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_check(): NULL writer");
    size_t cap = (size_t)w->n + 1;
    const char **p = malloc(sizeof(char *) * cap), **bu = malloc(sizeof(char *) * cap);
    int64_t np = p && bu ? role_names(w, PG_MF_ROLE_PARAMETER, p) : 0;
    int64_t nb = p && bu ? role_names(w, PG_MF_ROLE_BUFFER, bu) : 0;
    int rc = clash_check(p && bu, p, np, bu, nb);
    free(p), free(bu);
    return rc;
}

int pg_mf_names_check(const pg_mf_model *m)
{
    if (!m || m->n_params < 0 || m->n_buffers < 0 || (m->n_params && !m->param_names) ||
        (m->n_buffers && !m->buffer_names))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_names_check(): bad arguments");
    return clash_check(1, m->param_names, m->n_params, m->buffer_names, m->n_buffers);
}

int pg_mf_writer_commit(pg_mf_writer *w, const char *path)
{
    if (!w) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_commit(): NULL writer");
    size_t cap = (size_t)w->n + 1;
    const char **p = malloc(sizeof(char *) * cap), **bu = malloc(sizeof(char *) * cap);
    pg_st_tensor *t = malloc(sizeof(pg_st_tensor) * cap);
    char **slots = malloc(sizeof(char *) * (size_t)(w->n_slots + 1));
    mf_str plist = {0}, blist = {0}, opt = {0};
    int rc = 0;
    if (!p || !bu || !t || !slots) {
        rc = pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
        goto done;
    }
    rc = pg_mf_writer_check(w);
    if (rc) goto done;
    int64_t np = role_names(w, PG_MF_ROLE_PARAMETER, p), nb = role_names(w, PG_MF_ROLE_BUFFER, bu);
    /* tensors: parameters, buffers, optimizer slots, then the rest, each in the order added */
    int order[4] = {PG_MF_ROLE_PARAMETER, PG_MF_ROLE_BUFFER, PG_MF_ROLE_COUNT, PG_MF_ROLE_TENSOR};
    int64_t k = 0, ns = 0;
    for (int o = 0; o < 4; o++)
        for (int64_t i = 0; i < w->n; i++)
            if (w->v[i].role == order[o]) t[k++] = w->v[i].t;
    jb_names(&plist, p, np);
    jb_names(&blist, bu, nb);
    if (w->opt_head) { /* slots: sorted, distinct */
        memcpy(slots, w->slots, sizeof(char *) * (size_t)w->n_slots);
        qsort(slots, (size_t)w->n_slots, sizeof(char *), cmp_str);
        for (int64_t i = 0; i < w->n_slots; i++)
            if (!ns || strcmp(slots[ns - 1], slots[i])) slots[ns++] = slots[i];
        jb_raw(&opt, w->opt_head);
        jb_raw(&opt, ",\"slots\":");
        jb_names(&opt, (const char *const *)slots, ns);
        jb_raw(&opt, "}");
    }
    if (plist.oom || blist.oom || opt.oom) {
        rc = pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
        goto done;
    }
    char epoch[32];
    snprintf(epoch, sizeof epoch, "%lld", (long long)w->epoch);
    const char *keys[10], *vals[10];
    int64_t nm = 0;
#define META(key, value)                                                                           \
    do {                                                                                           \
        if (value) keys[nm] = key, vals[nm++] = value;                                             \
    } while (0)
    META("format", MF_FORMAT);
    META("format_version", MF_VERSION);
    META("created_by", w->field[PG_MF_FIELD_CREATED_BY]);
    META("parameters", plist.s);
    META("buffers", blist.s);
    META("config", w->field[PG_MF_FIELD_CONFIG]);
    const char *ep = w->epoch >= 0 ? epoch : NULL;
    META("epoch", ep);
    META("optimizer", opt.s);
    META("extra", w->field[PG_MF_FIELD_EXTRA]);
    META("target", w->field[PG_MF_FIELD_TARGET]);
#undef META
    rc = pg_st_write(path, t, k, keys, vals, nm);
done:
    free(p), free(bu), free(t), free(slots);
    free(plist.s), free(blist.s), free(opt.s);
    return rc;
}
