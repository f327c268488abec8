/* ag_fit's rules on its data arguments that are not about numbers (pg_api_train.h), once for R
 * and Python: an ag_dataloader's precedence, class labels against the loss, string labels' classes
 * and their codes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

int pg_fit_loader_check(int has_y, double batch_size, int shuffle_true)
{
    const pg_fit_params d = pg_fit_default_params();
    if (has_y)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_fit: x is an ag_dataloader, which holds the targets: pass y to "
                       "ag_dataloader(x, y), not to ag_fit");
    if (!(batch_size == (double)d.batch_size) || !shuffle_true || !d.shuffle)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's; "
                       "set them on ag_dataloader(), not on ag_fit");
    return 0;
}

int pg_fit_labels_missing(int validation, int64_t nmissing, int64_t first)
{
    if (nmissing < 0 || first < 0)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: negative missing-label count or position");
    if (nmissing > 0) /* worded as the core's non-finite check (pg_fit_check_finite) */
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s has %lld missing value%s (NA), the first at row 1, column "
                       "%lld; give finite data (remove or impute those samples)",
                       validation ? "validation_data y" : "y", (long long)nmissing,
                       nmissing > 1 ? "s" : "", (long long)first + 1);
    return 0;
}

int pg_fit_labels_check(const char *loss, int64_t nlabels, const double *ids, int64_t n, int factor)
{
    if (!loss || (n && !ids) || n < 0)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL loss or labels");
    int64_t nmissing = 0, first = 0;
    for (int64_t i = n - 1; i >= 0; i--) /* !(>= 0): NaN (R's NA) too */
        if (!(ids[i] >= 0)) nmissing++, first = i;
    const int st = pg_fit_labels_missing(0, nmissing, first);
    if (st) return st;
    /* two labels are a binary target too: the second is 1 (as glm's) */
    const int binary =
        (!strcmp(loss, "binary_cross_entropy") || !strcmp(loss, "bce_with_logits")) && nlabels == 2;
    if (strcmp(loss, "cross_entropy") && !binary)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_fit: %s need%s loss = \"cross_entropy\" (or, with 2 %s, "
                       "\"binary_cross_entropy\" / \"bce_with_logits\")",
                       factor ? "a factor or character y" : "labels y (strings or a Categorical)",
                       factor ? "s" : "", factor ? "levels" : "labels");
    return 0;
}

int64_t pg_fit_static_notice(const char *why, int r_spelling, char *buf, int64_t cap)
{
    if (!why || cap < 0 || (cap && !buf))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_fit_static_notice(): NULL or negative argument");
    const char *none = r_spelling ? "static = NULL" : "static=None";
    const char *off = r_spelling ? "static = FALSE" : "static=False";
    const int n = snprintf(buf, (size_t)cap,
                           "ag_fit: %s runs this model eagerly (its step cannot be compiled "
                           "safely: %s); %s silences this notice",
                           none, why, off);
    return n;
}

int pg_fit_return_state(const char *fn, const char *model)
{
    return pg_fail(PG_STATUS_ERR_ARG,
                   "%s: the model (%s) has return_state set: its forward returns (output, "
                   "h_n[, c_n]), not a tensor; use return_state = FALSE for this call (the same "
                   "weights)",
                   fn ? fn : "ag_fit", model ? model : "?");
}

int pg_fit_model_fail(const char *fn, int params, const char *got)
{
    return pg_fail(PG_STATUS_ERR_ARG, "%s: model must have %s, got %s", fn ? fn : "ag_fit",
                   params ? "parameters()" : "forward(x)", got ? got : "?");
}

int64_t pg_fit_metric_codes_fit(int *codes, int64_t n, int has_y)
{
    if (n < 0 || (n && !codes)) return -pg_fail(PG_STATUS_ERR_ARG, "ag_fit: NULL metric codes");
    int64_t k = 0; /* "accuracy" is the History's own column (the same count, its uncertainty) */
    for (int64_t i = 0; i < n; i++) k += codes[i] != PG_METRIC_ACCURACY;
    if (k && !has_y) return -pg_fail(PG_STATUS_ERR_ARG, "ag_fit: metrics need targets y");
    k = 0;
    for (int64_t i = 0; i < n; i++)
        if (codes[i] != PG_METRIC_ACCURACY) codes[k++] = codes[i];
    return k;
}

/* the byte length of s's first max code points (UTF-8): a label is shown to 40, as R's substr */
size_t pg_utf8_prefix(const char *s, int max)
{
    size_t i = 0;
    for (int k = 0; s[i] && k < max; k++) {
        i++; /* then the code point's continuation bytes (10xxxxxx) */
        while (((unsigned char)s[i] & 0xC0) == 0x80) i++;
    }
    return i;
}

/* "'a', 'b', ..." (the first 10 classes, each to 40 code points) into list */
static void labels_list(char *list, size_t size, const char *const *classes, int64_t n)
{
    size_t len = 0;
    list[0] = 0;
    for (int64_t i = 0; i < n && i < 10 && len < size; i++) {
        const char *c = classes[i] ? classes[i] : "";
        len += (size_t)snprintf(list + len, size - len, "%s'%.*s'", i ? ", " : "",
                                (int)pg_utf8_prefix(c, 40), c);
    }
    if (n > 10 && len < size) snprintf(list + len, size - len, ", ...");
}

static int labels_unknown(const char *fn, const char *what, const char *whose, const char *label,
                          const char *const *classes, int64_t n)
{
    char list[700];
    labels_list(list, sizeof list, classes, n);
    return pg_fail(PG_STATUS_ERR_VALUE, "%s: %s has the label '%.*s', which is not one of %s (%s)",
                   fn, what, (int)pg_utf8_prefix(label, 40), label, whose, list);
}

int pg_fit_class_keys(const char *const *keys, int64_t n, const char *const *classes,
                      int64_t nclasses, double *ids)
{
    if (n < 0 || (n && (!keys || !ids)) || (nclasses > 0 && !classes))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_fit_class_keys(): NULL or negative argument");
    for (int64_t i = 0; i < n; i++) {
        const char *k = keys[i];
        if (!k)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_fit: class_weight has a missing key (NA or "
                           "None); key each weight by its class");
        const int w = (int)pg_utf8_prefix(k, 40);
        if (nclasses < 0) { /* ids y: a number's text, whole and >= 0 (pg_fit_set_weights) */
            char *end = NULL;
            ids[i] = *k && !isspace((unsigned char)*k) ? strtod(k, &end) : 0;
            if (!end || end == k || *end)
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "ag_fit: class_weight's keys must be 0-based class ids (y holds "
                               "class ids, not labels); got '%.*s'",
                               w, k);
            continue;
        }
        int64_t c = 0; /* labels y: a key is a label, never an id ("0" may be a label) */
        while (c < nclasses && strcmp(classes[c] ? classes[c] : "", k)) c++;
        if (c == nclasses) {
            char list[700];
            labels_list(list, sizeof list, classes, nclasses);
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "ag_fit: class_weight's key '%.*s' is not one of y's labels (%s); with "
                           "labels y, class_weight is keyed by label, not by class id",
                           w, k, list);
        }
        for (int64_t j = 0; j < i; j++)
            if (ids[j] == (double)c)
                return pg_fail(PG_STATUS_ERR_VALUE,
                               "ag_fit: class_weight names the class '%.*s' twice", w, k);
        ids[i] = (double)c;
    }
    return 0;
}

/* a class's name (or a label) and its index, sorted by the bytes (UTF-8: code-point order), then
 * the index: the first of equal names wins, as R's match, and leads its run */
typedef struct {
    const char *name;
    int64_t i;
} label_ix;

static int label_ix_cmp(const void *a, const void *b)
{
    const label_ix *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

int pg_labels_code(const char *fn, const char *what, const char *whose, const char *const *labels,
                   int64_t n, const char *const *classes, int64_t nclasses, int validation,
                   double *ids)
{
    if (!fn || !what || !whose || n < 0 || nclasses < 0 || (n && (!labels || !ids)) ||
        (nclasses && !classes))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_labels_code(): NULL or negative argument");
    if (validation) { /* missing labels first, worded as the non-finite check */
        int64_t nmiss = 0, first = 0;
        for (int64_t j = n - 1; j >= 0; j--)
            if (!labels[j]) nmiss++, first = j;
        const int st = pg_fit_labels_missing(1, nmiss, first);
        if (st) return st;
    }
    label_ix *ix = malloc((size_t)(nclasses ? nclasses : 1) * sizeof *ix);
    if (!ix) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory coding %s's labels", fn, what);
    for (int64_t c = 0; c < nclasses; c++) ix[c] = (label_ix){classes[c] ? classes[c] : "", c};
    qsort(ix, (size_t)nclasses, sizeof *ix, label_ix_cmp);
    for (int64_t j = 0; j < n; j++) {
        const label_ix key = {labels[j], -1}; /* -1: the first of equal names */
        const label_ix *hit = NULL;
        if (labels[j]) {
            int64_t lo = 0, hi = nclasses;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (label_ix_cmp(&ix[mid], &key) < 0) lo = mid + 1;
                else hi = mid;
            }
            if (lo < nclasses && !strcmp(ix[lo].name, labels[j])) hit = &ix[lo];
        }
        if (!hit) { /* a missing label is shown as R's NA */
            free(ix);
            return labels_unknown(fn, what, whose, labels[j] ? labels[j] : "NA", classes, nclasses);
        }
        ids[j] = (double)hit->i;
    }
    free(ix);
    return 0;
}

int64_t pg_labels_classes(const char *const *labels, int64_t n, int64_t *ids, int64_t *first)
{
    if (n < 0 || (n && (!labels || !ids || !first)))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_labels_classes(): NULL or negative argument");
    label_ix *ix = malloc((size_t)(n ? n : 1) * sizeof *ix);
    if (!ix)
        return -pg_fail(PG_STATUS_ERR_NOMEM, "ag_fit: out of memory for %lld labels", (long long)n);
    int64_t m = 0, c = -1;
    for (int64_t j = 0; j < n; j++) {
        ids[j] = -1; /* a missing label stays -1 */
        if (labels[j]) ix[m++] = (label_ix){labels[j], j};
    }
    qsort(ix, (size_t)m, sizeof *ix, label_ix_cmp); /* a class's first label leads its run */
    for (int64_t i = 0; i < m; i++) {
        if (!i || strcmp(ix[i].name, ix[i - 1].name)) first[++c] = ix[i].i;
        ids[ix[i].i] = c;
    }
    free(ix);
    return c + 1;
}
