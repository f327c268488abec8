/* A model and an optimizer against a model file (pg_api_modelfile.h): ggmlR's name-set then
 * shape checks, and the optimizer metadata with its slot tensors, with the loaders' texts. */
#include <stdio.h>
#include <string.h>
#include "modelfile_internal.h"

static void shape(char *out, size_t cap, int64_t r, int64_t c)
{
    snprintf(out, cap, "%lldx%lld", (long long)r, (long long)c);
}

/* the file's names for list: the metadata's, else the model's (see pg_mf_match); idx[i] >= 0 */
static int64_t file_list(const pg_mf *mf, int list, int64_t n, const int64_t *midx, int64_t *out)
{
    const mf_names *nm = &mf->names[list];
    int64_t k = 0, all = 1;
    if (nm->present) {
        memcpy(out, nm->idx, sizeof(int64_t) * (size_t)nm->n);
        return nm->n;
    }
    for (int64_t i = 0; i < n; i++) all &= midx[i] >= 0;
    if (list == PG_MF_LIST_PARAMETERS && !all) {
        for (int64_t t = 0; t < mf->n; t++) out[t] = t;
        return mf->n;
    }
    for (int64_t i = 0; i < n; i++)
        if (midx[i] >= 0) out[k++] = midx[i];
    return k;
}

int pg_mf_match(pg_mf *mf, int list, int64_t n, const char **names, const int64_t *rows,
                const int64_t *cols, int64_t *index_out)
{
    if (!mf || list < 0 || list >= PG_MF_LIST_COUNT || n < 0 || (n && (!names || !rows || !cols)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_match(): bad arguments");
    const char *kind = list == PG_MF_LIST_PARAMETERS ? "parameter" : "buffer";
    size_t cap = (size_t)(mf->n > n ? mf->n : n) + 1;
    int64_t *midx = malloc(sizeof(int64_t) * cap), *fidx = malloc(sizeof(int64_t) * cap);
    char *infile = calloc((size_t)mf->n + 1, 1), *inmodel = calloc((size_t)mf->n + 1, 1);
    int rc = 0;
    if (!midx || !fidx || !infile || !inmodel) {
        rc = pg_fail(PG_STATUS_ERR_NOMEM, "out of memory matching the model with the file");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        midx[i] = names[i] ? pg_mf_index(mf, names[i]) : -1;
        if (midx[i] >= 0) inmodel[midx[i]] = 1;
    }
    int64_t nf = file_list(mf, list, n, midx, fidx);
    for (int64_t j = 0; j < nf; j++) infile[fidx[j]] = 1;
    mf_str miss = {0}, extra = {0};
    int64_t n_miss = 0, n_extra = 0;
    for (int64_t i = 0; i < n; i++)
        if (midx[i] < 0 || !infile[midx[i]]) {
            if (n_miss++) mf_str_add(&miss, ", ");
            mf_str_add(&miss, names[i] ? names[i] : "(null)");
        }
    for (int64_t j = 0; j < nf; j++)
        if (!inmodel[fidx[j]]) {
            if (n_extra++) mf_str_add(&extra, ", ");
            mf_str_add(&extra, pg_st_name(mf->st, fidx[j]));
        }
    if (miss.oom || extra.oom)
        rc = pg_fail(PG_STATUS_ERR_NOMEM, "out of memory matching the model with the file");
    else if (n_miss || n_extra)
        rc = pg_fail(PG_STATUS_ERR_VALUE,
                     "%s mismatch between saved state and model. missing in file: %s; not in "
                     "model: %s",
                     kind, n_miss ? miss.s : "(none)", n_extra ? extra.s : "(none)");
    free(miss.s), free(extra.s);
    for (int64_t i = 0; !rc && i < n; i++) {
        int64_t r = pg_st_rows(mf->st, midx[i]), c = pg_st_cols(mf->st, midx[i]);
        if (r != rows[i] || c != cols[i]) {
            char a[64], b[64];
            shape(a, sizeof a, rows[i], cols[i]), shape(b, sizeof b, r, c);
            rc = pg_fail(PG_STATUS_ERR_VALUE, "shape mismatch for %s '%s': model %s vs file %s",
                         kind, names[i], a, b);
        }
    }
    if (!rc && index_out) memcpy(index_out, midx, sizeof(int64_t) * (size_t)n);
done:
    free(midx), free(fidx), free(infile), free(inmodel);
    return rc;
}

void mf_opt_clear(pg_mf *mf)
{
    if (mf->opt_checked) pj_free(&mf->opt_doc);
    free(mf->hyper_name), free(mf->hyper_value), free(mf->hyper_type);
    free(mf->opt_list[0]), free(mf->opt_list[1]);
    mf->hyper_name = NULL, mf->hyper_value = NULL, mf->hyper_type = NULL;
    mf->opt_list[0] = mf->opt_list[1] = NULL;
    mf->opt_n[0] = mf->opt_n[1] = mf->n_hyper = 0;
    mf->opt_checked = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* the optimizer metadata's own rules; fills the opt fields of tmp (owning d) */
static int opt_meta(const pg_mf *mf, pj_doc *d, pg_mf *tmp)
{
    const char *bad_lists = "optimizer metadata: params and slots must be lists of names";
    const char *keys[2] = {"params", "slots"};
    for (int w = 0; w < 2; w++) {
        int64_t o = pj_get(d, 0, keys[w]);
        if (o < 0 || d->nodes[o].type != PJ_ARR) return mf_bad(mf, "%s", bad_lists);
        int64_t n = d->nodes[o].count, k = 0;
        tmp->opt_list[w] = malloc(sizeof(char *) * (size_t)(n ? n : 1));
        if (!tmp->opt_list[w]) return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory");
        for (int64_t c = d->nodes[o].first; c >= 0; c = d->nodes[c].next) {
            if (d->nodes[c].type != PJ_STR) return mf_bad(mf, "%s", bad_lists);
            tmp->opt_list[w][k++] = d->pool + d->nodes[c].str;
        }
        tmp->opt_n[w] = n;
    }
    int64_t t = pj_get(d, 0, "t"), ac = pj_get(d, 0, "accum_count");
    const pj_node *tn = t >= 0 ? &d->nodes[t] : NULL, *an = ac >= 0 ? &d->nodes[ac] : NULL;
    if (!tn || !an || tn->type != PJ_NUM || an->type != PJ_NUM || !tn->is_int || !an->is_int ||
        tn->big || an->big || tn->ival < 0 || an->ival < 0)
        return mf_bad(mf, "optimizer metadata: t and accum_count must be integers >= 0");
    tmp->opt_t = tn->ival, tmp->opt_ac = an->ival;
    int64_t h = pj_get(d, 0, "hyper");
    if (h < 0) return 0;
    const pj_node *hn = &d->nodes[h];
    int ok = hn->type == PJ_OBJ;
    for (int64_t c = ok ? hn->first : -1; c >= 0; c = d->nodes[c].next)
        ok &= d->nodes[c].type == PJ_NULL || d->nodes[c].type == PJ_NUM ||
            d->nodes[c].type == PJ_TRUE || d->nodes[c].type == PJ_FALSE;
    if (!ok) return mf_bad(mf, "optimizer metadata: hyper must map names to numbers");
    size_t m = (size_t)(hn->count ? hn->count : 1);
    tmp->hyper_name = malloc(sizeof(char *) * m);
    tmp->hyper_value = malloc(sizeof(double) * m);
    tmp->hyper_type = malloc(sizeof(int) * m);
    if (!tmp->hyper_name || !tmp->hyper_value || !tmp->hyper_type)
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory");
    for (int64_t c = hn->first; c >= 0; c = d->nodes[c].next) {
        const pj_node *v = &d->nodes[c];
        if (v->type == PJ_NULL) continue; /* null: not a value (a non-finite one when saved) */
        int64_t i = tmp->n_hyper++;
        tmp->hyper_name[i] = d->pool + v->kstr;
        tmp->hyper_type[i] = v->type == PJ_NUM
            ? (v->is_int && !v->big ? PG_MF_NUM_INT : PG_MF_NUM_DOUBLE)
            : PG_MF_NUM_BOOL;
        tmp->hyper_value[i] = v->type == PJ_NUM ? pj_number(d, v) : v->type == PJ_TRUE;
    }
    return 0;
}

/* the optimizer against the file: its kind, its parameter names (as multisets), each slot
 * tensor's shape */
static int opt_against(const pg_mf *mf, const pj_doc *d, const pg_mf *tmp, const char *kind,
                       int64_t n, const char **names, const int64_t *rows, const int64_t *cols)
{
    int64_t k = pj_get(d, 0, "kind");
    const char *fk = k >= 0 && d->nodes[k].type == PJ_STR ? d->pool + d->nodes[k].str : NULL;
    if (!fk || strcmp(fk, kind))
        return mf_bad(mf,
                      "optimizer state mismatch: the file's state is for %s, this optimizer is %s",
                      fk ? fk : "(unknown)", kind);
    int same = n == tmp->opt_n[0];
    if (same && n) {
        const char **a = malloc(sizeof(char *) * (size_t)n),
                   **b = malloc(sizeof(char *) * (size_t)n);
        if (!a || !b) {
            free(a), free(b);
            return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory");
        }
        memcpy(a, names, sizeof(char *) * (size_t)n);
        memcpy(b, tmp->opt_list[0], sizeof(char *) * (size_t)n);
        qsort(a, (size_t)n, sizeof(char *), cmp_str), qsort(b, (size_t)n, sizeof(char *), cmp_str);
        for (int64_t i = 0; i < n && same; i++) same = !strcmp(a[i], b[i]);
        free(a), free(b);
    }
    if (!same) {
        mf_str mine = {0}, theirs = {0};
        for (int64_t i = 0; i < n; i++) {
            if (i) mf_str_add(&mine, ", ");
            mf_str_add(&mine, names[i]);
        }
        for (int64_t i = 0; i < tmp->opt_n[0]; i++) {
            if (i) mf_str_add(&theirs, ", ");
            mf_str_add(&theirs, tmp->opt_list[0][i]);
        }
        int rc = mine.oom || theirs.oom
            ? pg_fail(PG_STATUS_ERR_NOMEM, "out of memory")
            : mf_bad(mf,
                     "optimizer state mismatch: the optimizer's parameters are %s; the file has %s",
                     mine.s ? mine.s : "", theirs.s ? theirs.s : "");
        free(mine.s), free(theirs.s);
        return rc;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t s = 0; s < tmp->opt_n[1]; s++) {
            const char *slot = tmp->opt_list[1][s];
            size_t L = strlen(slot) + strlen(names[i]) + 16;
            char *tn = malloc(L);
            if (!tn) return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory");
            snprintf(tn, L, "optimizer.%s.%s", slot, names[i]);
            int64_t t = pg_mf_index(mf, tn);
            free(tn);
            if (t < 0) continue;
            int64_t r = pg_st_rows(mf->st, t), c = pg_st_cols(mf->st, t);
            if (r != rows[i] || c != cols[i]) {
                char a[64], b[64];
                shape(a, sizeof a, r, c), shape(b, sizeof b, rows[i], cols[i]);
                return mf_bad(mf, "optimizer state '%s' for '%s' is %s, the parameter is %s", slot,
                              names[i], a, b);
            }
        }
    return 0;
}

int pg_mf_opt_check(pg_mf *mf, const char *kind, int64_t n, const char **names, const int64_t *rows,
                    const int64_t *cols)
{
    if (!mf || !kind || n < 0 || (n && (!names || !rows || !cols)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_opt_check(): bad arguments");
    for (int64_t i = 0; i < n; i++)
        if (!names[i]) return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_opt_check(): a NULL name");
    pg_mf tmp;
    memset(&tmp, 0, sizeof tmp);
    int present, rc = mf_json(mf, "optimizer", PJ_OBJ, 0, &tmp.opt_doc, &present);
    if (rc) return rc;
    if (!present) return mf_bad(mf, "the file has no optimizer state");
    tmp.opt_checked = 1;
    rc = opt_meta(mf, &tmp.opt_doc, &tmp);
    if (!rc) rc = opt_against(mf, &tmp.opt_doc, &tmp, kind, n, names, rows, cols);
    if (rc) {
        mf_opt_clear(&tmp);
        return rc;
    }
    char *k = malloc(strlen(kind) + 1);
    if (!k) {
        mf_opt_clear(&tmp);
        return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory");
    }
    strcpy(k, kind);
    mf_opt_clear(mf);
    free(mf->opt_kind);
    mf->opt_kind = k;
    mf->opt_checked = 1, mf->opt_doc = tmp.opt_doc;
    mf->opt_t = tmp.opt_t, mf->opt_ac = tmp.opt_ac, mf->n_hyper = tmp.n_hyper;
    mf->hyper_name = tmp.hyper_name, mf->hyper_value = tmp.hyper_value;
    mf->hyper_type = tmp.hyper_type;
    for (int w = 0; w < 2; w++) mf->opt_list[w] = tmp.opt_list[w], mf->opt_n[w] = tmp.opt_n[w];
    return 0;
}

const char *pg_mf_opt_kind(const pg_mf *mf) { return mf ? mf->opt_kind : NULL; }
int64_t pg_mf_opt_t(const pg_mf *mf) { return mf && mf->opt_checked ? mf->opt_t : -1; }
int64_t pg_mf_opt_accum_count(const pg_mf *mf) { return mf && mf->opt_checked ? mf->opt_ac : -1; }

int64_t pg_mf_opt_count(const pg_mf *mf, int what)
{
    if (!mf || !mf->opt_checked || what < 0 || what > 2) return 0;
    return what == 0 ? mf->n_hyper : mf->opt_n[what - 1];
}

const char *pg_mf_opt_name(const pg_mf *mf, int what, int64_t i)
{
    if (i < 0 || i >= pg_mf_opt_count(mf, what)) return NULL;
    return what == 0 ? mf->hyper_name[i] : mf->opt_list[what - 1][i];
}

double pg_mf_opt_hyper_value(const pg_mf *mf, int64_t i)
{
    return i >= 0 && i < pg_mf_opt_count(mf, 0) ? mf->hyper_value[i] : 0;
}

int pg_mf_opt_hyper_type(const pg_mf *mf, int64_t i)
{
    return i >= 0 && i < pg_mf_opt_count(mf, 0) ? mf->hyper_type[i] : -1;
}
