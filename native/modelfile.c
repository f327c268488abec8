/* The model-file schema on top of the codec (pg_api_modelfile.h): the metadata rules both
 * loaders applied (docs/model-format.md, "Loading rules"), checked once here with the texts
 * the front ends had. A check either succeeds and records its values or changes nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "modelfile_internal.h"

pg_mf_load_opts pg_mf_load_opts_default(void)
{
    pg_mf_load_opts o = {0, 0, 0, "model=", -1};
    return o;
}

int mf_bad(const pg_mf *mf, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s", mf->path, msg);
}

void mf_str_add(mf_str *b, const char *s)
{
    size_t L = strlen(s);
    if (b->oom) return;
    if (b->n + L + 1 > b->cap) {
        size_t cap = (b->n + L + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, L + 1);
    b->n += L;
}

void mf_str_quote(mf_str *b, const char *s)
{
    char *q = pj_quoted(s);
    if (q) mf_str_add(b, q);
    else b->oom = 1;
    free(q);
}

static const char *type_name(int t)
{
    static const char *names[] = {"null",     "a boolean", "a boolean", "a number",
                                  "a string", "an array",  "an object"};
    return t >= 0 && t <= PJ_OBJ ? names[t] : "?";
}

int mf_json(const pg_mf *mf, const char *key, int want, int64_t budget, pj_doc *doc, int *present)
{
    const char *v = pg_mf_meta(mf, key);
    char what[80], why[480], copy[1024];
    *present = 0;
    if (!v) return 0;
    snprintf(what, sizeof what, "metadata '%s'", key);
    int64_t len = (int64_t)strlen(v);
    int rc = pg_json_check(v, len, what, budget);
    if (rc == PG_STATUS_ERR_NOMEM) return rc;
    if (rc) {
        snprintf(copy, sizeof copy, "%s", pg_last_error());
        return mf_bad(mf, "%s", copy);
    }
    rc = pj_parse(v, len, NULL, doc, why, sizeof why);
    if (rc) return pg_fail(rc, "out of memory reading %s", what);
    int t = doc->nodes[0].type;
    if (want >= 0 && t != want) {
        pj_free(doc);
        return mf_bad(mf, "metadata '%s' has the wrong type (%s; %s expected)", key, type_name(t),
                      type_name(want));
    }
    *present = 1;
    return 0;
}

static _Thread_local pg_mf *sort_mf; /* qsort has no context argument */
static int cmp_idx(const void *a, const void *b)
{
    return strcmp(pg_st_name(sort_mf->st, *(const int64_t *)a),
                  pg_st_name(sort_mf->st, *(const int64_t *)b));
}

int pg_mf_open(const char *path, const char *fn, pg_mf **out)
{
    if (!out) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_open(): out is NULL");
    *out = NULL;
    if (!path) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_open(): path is NULL");
    if (!fn) fn = "ag_load_model()";
    pg_st_file *st = NULL;
    int rc = pg_st_open(path, &st);
    if (rc) {
        char msg[1024];
        if (rc == PG_STATUS_ERR_IO) return rc; /* the system's text and errno, as they are */
        snprintf(msg, sizeof msg, "%s", pg_last_error());
        if (rc == PG_STATUS_ERR_NOMEM) return pg_fail(rc, "%s: %s", fn, msg);
        return pg_fail(rc, "%s: %s: %s", fn, path, msg);
    }
    pg_mf *mf = calloc(1, sizeof *mf);
    int64_t n = pg_st_count(st);
    if (mf) mf->dtype = -1, mf->sorted = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (mf) mf->path = malloc(strlen(path) + 1);
    if (!mf || !mf->sorted || !mf->path) {
        if (mf) free(mf->sorted), free(mf->path), free(mf);
        pg_st_close(st);
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory opening %s", fn, path);
    }
    strcpy(mf->path, path);
    mf->st = st, mf->n = n, mf->epoch = -1, mf->n_classes = -1;
    for (int64_t i = 0; i < n; i++) mf->sorted[i] = i;
    sort_mf = mf;
    qsort(mf->sorted, (size_t)n, sizeof(int64_t), cmp_idx);
    *out = mf;
    return 0;
}

static void names_free(mf_names *nm)
{
    if (nm->present) pj_free(&nm->doc);
    free(nm->v);
    free(nm->idx);
    memset(nm, 0, sizeof *nm);
}

void pg_mf_close(pg_mf *mf)
{
    if (!mf) return;
    mf_stage_free(mf);
    for (int k = 0; k < PG_MF_LIST_COUNT; k++) names_free(&mf->names[k]);
    mf_opt_clear(mf);
    mf_target_free(mf);
    free(mf->opt_kind);
    free(mf->info);
    pg_st_close(mf->st);
    free(mf->sorted);
    free(mf->path);
    free(mf);
}

pg_st_file *pg_mf_st(pg_mf *mf) { return mf ? mf->st : NULL; }

const char *pg_mf_meta(const pg_mf *mf, const char *key)
{
    if (!mf || !key) return NULL;
    for (int64_t i = 0; i < pg_st_meta_count(mf->st); i++)
        if (!strcmp(pg_st_meta_key(mf->st, i), key)) return pg_st_meta_value(mf->st, i);
    return NULL;
}

int64_t pg_mf_index(const pg_mf *mf, const char *name)
{
    if (!mf || !name) return -1;
    int64_t lo = 0, hi = mf->n - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(pg_st_name(mf->st, mf->sorted[mid]), name);
        if (!c) return mf->sorted[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* metadata 'parameters' / 'buffers': a JSON array of distinct strings naming tensors */
static int read_names(pg_mf *mf, int list, mf_names *out)
{
    const char *key = list == PG_MF_LIST_PARAMETERS ? "parameters" : "buffers";
    memset(out, 0, sizeof *out);
    int present, rc = mf_json(mf, key, PJ_ARR, 0, &out->doc, &present);
    if (rc || !present) return rc;
    const pj_doc *d = &out->doc;
    int64_t n = d->nodes[0].count, k = 0;
    out->v = malloc(sizeof(char *) * (size_t)(n ? n : 1));
    out->idx = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    char *seen = calloc((size_t)(mf->n ? mf->n : 1), 1);
    if (!out->v || !out->idx || !seen) {
        free(seen), free(out->v), free(out->idx), pj_free(&out->doc);
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading metadata '%s'", key);
    }
    mf_str miss = {0};
    int64_t n_miss = 0;
    rc = 0;
    for (int64_t c = d->nodes[0].first; c >= 0; c = d->nodes[c].next, k++) {
        if (d->nodes[c].type != PJ_STR) {
            rc = -1;
            continue;
        }
        out->v[k] = d->pool + d->nodes[c].str;
        out->idx[k] = pg_mf_index(mf, out->v[k]);
    }
    /* distinct: names of tensors are marked; a name not in the file compares to the others */
    for (int64_t i = 0; !rc && i < n; i++) {
        if (out->idx[i] >= 0) {
            if (seen[out->idx[i]]) rc = -1;
            seen[out->idx[i]] = 1;
        } else {
            for (int64_t j = 0; j < i && !rc; j++)
                if (out->idx[j] < 0 && !strcmp(out->v[i], out->v[j])) rc = -1;
        }
    }
    for (int64_t i = 0; !rc && i < n; i++)
        if (out->idx[i] < 0 && n_miss++ < 5) {
            if (n_miss > 1) mf_str_add(&miss, ", ");
            mf_str_add(&miss, out->v[i]);
        }
    free(seen);
    if (rc) rc = mf_bad(mf, "metadata '%s' must list distinct names", key);
    else if (miss.oom) rc = pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading '%s'", key);
    else if (n_miss)
        rc = mf_bad(mf, "metadata '%s' names tensors that are not in the file: %s", key, miss.s);
    free(miss.s);
    if (rc) {
        free(out->v), free(out->idx), pj_free(&out->doc);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->present = 1, out->n = n;
    return 0;
}

/* 1 to 12 ASCII digits, else -1 */
static int64_t epoch_of(const char *s)
{
    size_t L = s ? strlen(s) : 0;
    if (L == 0 || L > 12) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < L; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static void quoted(const char *s, size_t max_chars, char *out, size_t cap)
{
    char cut[256];
    size_t i = 0, chars = 0;
    while (s[i] && chars < max_chars && i < sizeof cut - 5) {
        size_t j = i + 1;
        while (s[j] && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
        if (j >= sizeof cut - 1) break;
        i = j, chars++;
    }
    memcpy(cut, s, i);
    cut[i] = 0;
    pj_qname(cut, out, cap);
}

static int check_format(pg_mf *mf, const pg_mf_load_opts *o)
{
    const char *fmt = pg_mf_meta(mf, "format"), *ver = pg_mf_meta(mf, "format_version");
    char q[400];
    if (fmt && strcmp(fmt, MF_FORMAT)) {
        quoted(fmt, 60, q, sizeof q);
        return mf_bad(mf, "not a pyggmlr model file (format %s)", q);
    }
    if (fmt && (!ver || strcmp(ver, MF_VERSION))) {
        if (ver) quoted(ver, 60, q, sizeof q);
        return mf_bad(mf, "unsupported model file version %s (this pyggmlr reads %s)",
                      ver ? q : "None", MF_VERSION);
    }
    if (!fmt && !o->have_model)
        return mf_bad(mf,
                      "not a pyggmlr model file (no 'format' metadata); pass %s to load its "
                      "tensors by name",
                      o->model_arg);
    return 0;
}

/* the rebuild's config: an object within the file's size budget, its layers backed by the
 * listed tensors (all tensors when the file lists no parameters) */
static int check_config(pg_mf *mf, const pg_mf_load_opts *o, const mf_names *nm)
{
    int64_t total = 0;
    for (int64_t i = 0; i < mf->n; i++) total += pg_st_rows(mf->st, i) * pg_st_cols(mf->st, i);
    pj_doc d;
    int present, rc = mf_json(mf, "config", PJ_OBJ, 16 * total + 65536, &d, &present);
    if (rc) return rc;
    if (!present)
        return mf_bad(mf,
                      "the file has no architecture (metadata 'config'); pass %s to load its "
                      "weights into a model",
                      o->model_arg);
    pj_free(&d);
    int64_t n = nm[0].present ? nm[0].n + (nm[1].present ? nm[1].n : 0) : mf->n;
    const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
    int64_t *rows = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int64_t *cols = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!names || !rows || !cols) {
        free(names), free(rows), free(cols);
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory matching the config");
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t t = !nm[0].present ? i : i < nm[0].n ? nm[0].idx[i] : nm[1].idx[i - nm[0].n];
        names[i] = pg_st_name(mf->st, t);
        rows[i] = pg_st_rows(mf->st, t), cols[i] = pg_st_cols(mf->st, t);
    }
    const char *text = pg_mf_meta(mf, "config");
    rc = pg_config_match(text, (int64_t)strlen(text), n, names, rows, cols);
    free(names), free(rows), free(cols);
    if (rc == PG_STATUS_ERR_VALUE) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", pg_last_error());
        return pg_fail(rc, "ag_load_model(): %s: %s", mf->path, msg);
    }
    return rc;
}

int pg_mf_check_load(pg_mf *mf, const pg_mf_load_opts *opts)
{
    if (!mf || !opts) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_check_load(): NULL argument");
    pg_mf_load_opts o = *opts;
    if (!o.model_arg) o.model_arg = "model=";
    mf->dtype = o.dtype;
    int rc = check_format(mf, &o);
    if (rc) return rc;
    mf_names nm[PG_MF_LIST_COUNT];
    rc = read_names(mf, PG_MF_LIST_PARAMETERS, &nm[0]);
    if (rc) return rc;
    rc = read_names(mf, PG_MF_LIST_BUFFERS, &nm[1]);
    if (rc) {
        names_free(&nm[0]);
        return rc;
    }
    const char *ep = pg_mf_meta(mf, "epoch");
    int64_t epoch = ep ? epoch_of(ep) : -1;
    pj_doc d;
    int present = 0;
    char q[400];
    if (ep && epoch < 0) {
        quoted(ep, 20, q, sizeof q);
        rc = mf_bad(mf, "metadata 'epoch' is not a non-negative integer: %s", q);
    } else if (!ep && o.need_epoch) {
        rc = mf_bad(mf,
                    "not a training checkpoint (no epoch; write checkpoints with "
                    "ag_model_checkpoint)");
    }
    if (!rc) rc = mf_json(mf, "extra", -1, 0, &d, &present);
    if (!rc && present) pj_free(&d);
    if (!rc && o.rebuild) rc = check_config(mf, &o, nm);
    if (!rc) rc = mf_target_read(mf);
    if (rc) {
        names_free(&nm[0]), names_free(&nm[1]);
        return rc;
    }
    for (int k = 0; k < PG_MF_LIST_COUNT; k++) names_free(&mf->names[k]), mf->names[k] = nm[k];
    mf->epoch = epoch;
    mf->extra = present ? pg_mf_meta(mf, "extra") : NULL;
    mf->config = o.rebuild ? pg_mf_meta(mf, "config") : NULL;
    return 0;
}

int pg_mf_check_info(pg_mf *mf)
{
    if (!mf) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_check_info(): NULL argument");
    mf_names nm[PG_MF_LIST_COUNT];
    int rc = read_names(mf, PG_MF_LIST_PARAMETERS, &nm[0]);
    if (rc) return rc;
    rc = read_names(mf, PG_MF_LIST_BUFFERS, &nm[1]);
    pj_doc od, cd, ed;
    int op = 0, cp = 0, ep = 0;
    if (!rc) rc = mf_json(mf, "optimizer", PJ_OBJ, 0, &od, &op);
    if (!rc) rc = mf_json(mf, "config", PJ_OBJ, 0, &cd, &cp);
    if (!rc) rc = mf_json(mf, "extra", -1, 0, &ed, &ep);
    if (!rc) rc = mf_target_read(mf);
    char *kind = NULL;
    if (!rc && op) {
        int64_t k = pj_get(&od, 0, "kind");
        if (k >= 0 && od.nodes[k].type == PJ_STR) {
            const char *s = od.pool + od.nodes[k].str;
            kind = malloc(strlen(s) + 1);
            if (!kind) rc = pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading the optimizer");
            else strcpy(kind, s);
        }
    }
    if (op) pj_free(&od);
    if (cp) pj_free(&cd);
    if (ep) pj_free(&ed);
    if (rc) {
        free(kind);
        names_free(&nm[0]), names_free(&nm[1]);
        return rc;
    }
    for (int k = 0; k < PG_MF_LIST_COUNT; k++) names_free(&mf->names[k]), mf->names[k] = nm[k];
    free(mf->opt_kind);
    mf->opt_kind = kind;
    mf->epoch = epoch_of(pg_mf_meta(mf, "epoch"));
    mf->config = cp ? pg_mf_meta(mf, "config") : NULL;
    mf->extra = ep ? pg_mf_meta(mf, "extra") : NULL;
    return 0;
}

int pg_mf_has_names(const pg_mf *mf, int list)
{
    return mf && list >= 0 && list < PG_MF_LIST_COUNT && mf->names[list].present;
}
int64_t pg_mf_name_count(const pg_mf *mf, int list)
{
    return pg_mf_has_names(mf, list) ? mf->names[list].n : 0;
}
const char *pg_mf_name(const pg_mf *mf, int list, int64_t i)
{
    if (!pg_mf_has_names(mf, list) || i < 0 || i >= mf->names[list].n) return NULL;
    return mf->names[list].v[i];
}
int64_t pg_mf_epoch(const pg_mf *mf) { return mf ? mf->epoch : -1; }
const char *pg_mf_config(const pg_mf *mf) { return mf ? mf->config : NULL; }
const char *pg_mf_extra(const pg_mf *mf) { return mf ? mf->extra : NULL; }

int pg_mf_all_f64(const pg_mf *mf)
{
    if (!mf) return 0;
    const mf_names *p = &mf->names[PG_MF_LIST_PARAMETERS];
    int64_t n = p->present ? p->n : mf->n;
    if (!n) return 0;
    for (int64_t i = 0; i < n; i++)
        if (pg_st_dtype(mf->st, p->present ? p->idx[i] : i) != PG_ST_DTYPE_F64) return 0;
    return 1;
}

int pg_mf_dtype(const pg_mf *mf)
{
    return mf ? pg_mf_build_dtype(mf->dtype, pg_mf_all_f64(mf)) : -1;
}
