/* Metadata 'target' of a model file (pg_api_modelfile.h, docs/model-format.md): the loss a
 * model was trained with, how its outputs are read (pg_fit_classify) and its class labels, so
 * that a file alone turns new data into labels (ag_predict(type = "class")) in either language.
 * One schema for the writer and the readers; a file without the key has none. */
#include <stdio.h>
#include <string.h>
#include "modelfile_internal.h"

#define MAX_CLASSES 1000000 /* labels a file may list (a sanity bound, far above any use) */

typedef struct {
    const char *loss; /* NULL: none */
    int classify;
    int64_t n; /* -1: no labels */
    const char **classes;
} target;

/* the schema on a parsed object: 0, or 1 with the reason in why (t->classes malloc'd on 0) */
static int check(const pj_doc *d, target *t, char *why, size_t cap)
{
    memset(t, 0, sizeof *t);
    t->n = -1;
    const pj_node *nd = d->nodes;
    if (nd[0].type != PJ_OBJ) return snprintf(why, cap, "not a JSON object"), 1;
    int64_t l = pj_get(d, 0, "loss"), c = pj_get(d, 0, "classify"), k = pj_get(d, 0, "classes");
    int rule = PG_FIT_CLASSIFY_NONE;
    if (l >= 0 && nd[l].type != PJ_NULL) {
        if (nd[l].type != PJ_STR) return snprintf(why, cap, "'loss' is not a string"), 1;
        t->loss = d->pool + nd[l].str;
        if (pg_predict_classify("model file", t->loss, &rule)) {
            char q[80];
            pg_clear_error();
            pj_qname(t->loss, q, sizeof q);
            return snprintf(why, cap, "'loss' %s is not one of ag_fit's losses", q), 1;
        }
    }
    t->classify = rule;
    if (c >= 0 && nd[c].type != PJ_NULL) {
        int kind = nd[c].type == PJ_STR ? pg_fit_classify_parse(d->pool + nd[c].str) : -1;
        if (kind < 0)
            return snprintf(why, cap,
                            "'classify' must be \"none\", \"argmax\", \"probs\" or \"logits\""),
                   1;
        if (t->loss && kind != rule)
            return snprintf(why, cap,
                            "'classify' \"%s\" is not how loss \"%s\" reads outputs (\"%s\")",
                            pg_fit_classify_name(kind), t->loss, pg_fit_classify_name(rule)),
                   1;
        t->classify = kind;
    }
    if (k < 0 || nd[k].type == PJ_NULL) return 0;
    if (nd[k].type != PJ_ARR || nd[k].count < 1 || nd[k].count > MAX_CLASSES)
        return snprintf(why, cap, "'classes' must be an array of 1 to %d strings", MAX_CLASSES), 1;
    t->classes = malloc(sizeof(char *) * (size_t)nd[k].count);
    if (!t->classes) return -1;
    for (int64_t e = nd[k].first; e >= 0; e = nd[e].next) {
        if (nd[e].type != PJ_STR) {
            free(t->classes), t->classes = NULL;
            return snprintf(why, cap, "'classes' entry %lld is not a string", (long long)t->n + 2),
                   1;
        }
        const char *s = d->pool + nd[e].str;
        for (int64_t i = 0; i <= t->n; i++)
            if (!strcmp(t->classes[i], s)) {
                char q[80];
                pj_qname(s, q, sizeof q);
                free(t->classes), t->classes = NULL;
                return snprintf(why, cap, "'classes' lists %s twice", q), 1;
            }
        t->classes[++t->n] = s;
    }
    t->n++;
    return 0;
}

int mf_target_read(pg_mf *mf)
{
    pj_doc d;
    int present = 0;
    int rc = mf_json(mf, "target", PJ_OBJ, 0, &d, &present);
    if (rc || !present) {
        if (!rc) mf_target_free(mf);
        return rc;
    }
    target t;
    char why[400];
    int bad = check(&d, &t, why, sizeof why);
    if (bad) {
        pj_free(&d);
        if (bad < 0) return pg_fail(PG_STATUS_ERR_NOMEM, "out of memory reading metadata 'target'");
        return mf_bad(mf, "metadata 'target': %s", why);
    }
    mf_target_free(mf);
    mf->target_present = 1, mf->target_doc = d;
    mf->target_loss = t.loss, mf->target_classify = t.classify;
    mf->n_classes = t.n, mf->classes = t.classes;
    return 0;
}

void mf_target_free(pg_mf *mf)
{
    if (mf->target_present) pj_free(&mf->target_doc);
    free(mf->classes);
    mf->target_present = 0, mf->target_loss = NULL, mf->classes = NULL;
    mf->target_classify = PG_FIT_CLASSIFY_NONE, mf->n_classes = -1;
}

int pg_mf_has_target(const pg_mf *mf) { return mf && mf->target_present; }
const char *pg_mf_target_loss(const pg_mf *mf) { return mf ? mf->target_loss : NULL; }
int pg_mf_target_classify(const pg_mf *mf) { return mf ? mf->target_classify : 0; }
int64_t pg_mf_class_count(const pg_mf *mf) { return mf ? mf->n_classes : -1; }
const char *pg_mf_class(const pg_mf *mf, int64_t i)
{
    return mf && i >= 0 && i < mf->n_classes ? mf->classes[i] : NULL;
}

/* a quoted JSON string appended at pos (the text grows as needed); -1 out of memory */
static int64_t put(char **s, int64_t *cap, int64_t pos, const char *v, int quote)
{
    int64_t L = (int64_t)strlen(v);
    int64_t need = quote ? pj_quote(NULL, 0, pos, v, L) : pos + L;
    if (need + 1 > *cap) {
        int64_t nc = (need + 1) * 2;
        char *p = realloc(*s, (size_t)nc);
        if (!p) return -1;
        *s = p, *cap = nc;
    }
    if (quote) pj_quote(*s, *cap, pos, v, L);
    else memcpy(*s + pos, v, (size_t)L);
    (*s)[need] = 0;
    return need;
}

int pg_mf_writer_set_target(pg_mf_writer *w, const char *loss, int classify, int64_t n_classes,
                            const char *const *classes)
{
    static const char *F = "ag_save_model()";
    if (!w || n_classes < -1 || (n_classes > 0 && !classes))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_mf_writer_set_target(): bad arguments");
    if (classify == -1) { /* the loss's own kind */
        int rc = pg_predict_classify(F, loss, &classify);
        if (rc) return rc;
    }
    if (!pg_fit_classify_name(classify))
        return pg_fail(PG_STATUS_ERR_VALUE, "%s: classify kind %d is out of range", F, classify);
    for (int64_t i = 0; i < n_classes; i++)
        if (!classes[i] ||
            !pj_utf8_ok((const unsigned char *)classes[i], (int64_t)strlen(classes[i])))
            return pg_fail(PG_STATUS_ERR_VALUE, "%s: class label %lld is missing or not UTF-8 text",
                           F, (long long)i + 1);
    char *s = NULL;
    int64_t cap = 0, pos = 0;
    pos = put(&s, &cap, pos, "{\"loss\":", 0);
    if (pos >= 0) pos = loss ? put(&s, &cap, pos, loss, 1) : put(&s, &cap, pos, "null", 0);
    if (pos >= 0) pos = put(&s, &cap, pos, ",\"classify\":", 0);
    if (pos >= 0) pos = put(&s, &cap, pos, pg_fit_classify_name(classify), 1);
    if (pos >= 0 && n_classes >= 0) pos = put(&s, &cap, pos, ",\"classes\":[", 0);
    for (int64_t i = 0; pos >= 0 && i < n_classes; i++) {
        if (i) pos = put(&s, &cap, pos, ",", 0);
        if (pos >= 0) pos = put(&s, &cap, pos, classes[i], 1);
    }
    if (pos >= 0 && n_classes >= 0) pos = put(&s, &cap, pos, "]", 0);
    if (pos >= 0) pos = put(&s, &cap, pos, "}", 0);
    if (pos < 0) {
        free(s);
        return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", F);
    }
    int rc = mf_writer_adopt(w, s);
    return rc ? rc : pg_mf_writer_set(w, PG_MF_FIELD_TARGET, s); /* checked there */
}

int mf_target_check(const char *text)
{
    pj_doc d;
    char why[400];
    target t;
    int bad = pj_parse(text, (int64_t)strlen(text), NULL, &d, why, sizeof why);
    if (bad == PG_STATUS_ERR_NOMEM) return pg_fail(bad, "ag_save_model(): out of memory");
    if (!bad) {
        bad = check(&d, &t, why, sizeof why);
        if (!bad) free(t.classes);
        pj_free(&d);
    }
    if (bad < 0) return pg_fail(PG_STATUS_ERR_NOMEM, "ag_save_model(): out of memory");
    if (bad)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_save_model(): metadata 'target': %s; nothing was written", why);
    return 0;
}
