/* ag_load_state_dict()'s rules and write (pg_api_state_dict.h), once for both front ends: each
 * used to carry its own copy (pyggmlr/nn/state.py, r/R/state.R) and they drifted. The order is
 * ggmlR's: names (parameters, then buffers), each used value's shape and finiteness, then the
 * dtype range, and only then the writes, so a refused load leaves every weight as it was. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"

static const char *const KIND[2] = {"parameter", "buffer"};

/* a name as the messages show it: R's NA (a NULL entry) prints as NA */
static const char *shown(const char *s) { return s ? s : "NA"; }

/* name j of a side; an unnamed state list reads as "" (R's names() of it, filled) */
static const char *name_at(const pg_state_dict_side *s, int64_t j)
{
    return s->names ? s->names[j] : "";
}

/* NA equals only NA (R's match / setdiff) */
static int same_name(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* index of the first entry of s named nm, -1 when none (R's `[[`, first match) */
static int64_t find(const pg_state_dict_side *s, const char *nm)
{
    for (int64_t j = 0; j < s->n; j++)
        if (same_name(name_at(s, j), nm)) return j;
    return -1;
}

/* a ", "-joined list of names for a message: the core's error text holds 1024 bytes, so a long
 * list ends with "... (N more)" rather than being cut mid-name (and the message's tail with it) */
typedef struct name_list {
    char s[440];
    size_t at;
    int64_t n, more;
} name_list;

static void add(name_list *l, const char *name)
{
    size_t need = strlen(name) + (l->n ? 2 : 0);
    if (!l->more && l->at + need + 24 < sizeof l->s) {
        snprintf(l->s + l->at, sizeof l->s - l->at, "%s%s", l->n ? ", " : "", name);
        l->at += need, l->n++;
    } else l->more++;
}

static const char *listed(name_list *l)
{
    if (l->more)
        snprintf(l->s + l->at, sizeof l->s - l->at, "%s... (%lld more)", l->n ? ", " : "",
                 (long long)l->more);
    return l->s;
}

/* the model's names of one kind: all there (no NA, no ""), none twice */
static int check_distinct(const char *caller, int kind, const pg_state_dict_side *m)
{
    int bad = m->n > 0 && !m->names;
    for (int64_t i = 0; i < m->n && !bad; i++) {
        bad = !m->names[i] || !m->names[i][0];
        for (int64_t j = 0; j < i && !bad; j++) bad = same_name(m->names[i], m->names[j]);
    }
    if (!bad) return 0;
    name_list got = {{0}, 0, 0, 0};
    if (!m->names) add(&got, "an unnamed list");
    for (int64_t i = 0; m->names && i < m->n; i++) add(&got, shown(m->names[i]));
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "%s: the model's %ss need distinct names to be matched with a state (got %s)",
                   caller, KIND[kind], listed(&got));
}

/* strict: model names missing in the state (model order), then the state's names not in the
 * model (state order, each once: R's setdiff) */
static int check_strict(const char *caller, int kind, const pg_state_dict_side *m,
                        const pg_state_dict_side *s, int file)
{
    name_list miss = {{0}, 0, 0, 0}, extra = {{0}, 0, 0, 0};
    for (int64_t i = 0; i < m->n; i++)
        if (find(s, m->names[i]) < 0) add(&miss, shown(m->names[i]));
    for (int64_t j = 0; j < s->n; j++) {
        const char *k = name_at(s, j);
        int seen = 0;
        for (int64_t i = 0; i < j && !seen; i++) seen = same_name(name_at(s, i), k);
        for (int64_t i = 0; i < m->n && !seen; i++) seen = same_name(m->names[i], k);
        if (!seen) add(&extra, shown(k));
    }
    if (!miss.n && !miss.more && !extra.n && !extra.more) return 0;
    if (file)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "%s: parameter mismatch between saved state and rebuilt model.\n  missing "
                       "in file: %s\n  not in model: %s\nThe `model_fn` architecture must match "
                       "the saved one.",
                       caller, listed(&miss), listed(&extra));
    return pg_fail(
        PG_STATUS_ERR_VALUE,
        "%s: %s names differ (strict = TRUE)\n  missing in state: %s\n  not in model: %s", caller,
        KIND[kind], listed(&miss), listed(&extra));
}

/* the state's dims as the messages show them: "3x3", "2" for a vector, "1" without dims */
static const char *dims_text(char *buf, size_t n, const pg_host_matrix *v)
{
    size_t at = 0;
    snprintf(buf, n, v->present ? "1" : "0");
    for (int k = 0; v->present && v->dims && k < v->ndim && at < n; k++) {
        int w = snprintf(buf + at, n - at, k ? "x%lld" : "%lld", (long long)v->dims[k]);
        at += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* one used entry: numbers of the model's shape, then finite */
static int check_value(const char *caller, int kind, const char *nm, const pg_tensor *t,
                       const pg_host_matrix *v, int file)
{
    if (!(v->present && v->numeric && v->ndim == 2 && v->dims && v->dims[0] == t->ne[0] &&
          v->dims[1] == t->ne[1])) {
        char got[200];
        if (file)
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "%s: shape mismatch for %s '%s': model %lldx%lld vs file %s.", caller,
                           KIND[kind], nm, (long long)t->ne[0], (long long)t->ne[1],
                           dims_text(got, sizeof got, v));
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: shape mismatch for '%s': model %lldx%lld, state %s", caller, nm,
                       (long long)t->ne[0], (long long)t->ne[1], dims_text(got, sizeof got, v));
    }
    int64_t n = t->ne[0] * t->ne[1];
    if (n > 0 && !v->data)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: '%s' has no values in the description", caller, nm);
    for (int64_t e = 0; e < n; e++)
        if (!isfinite(v->data[e]))
            return file
                ? pg_fail(PG_STATUS_ERR_VALUE,
                          "%s: %s '%s' in the file contains NA, NaN "
                          "or Inf",
                          caller, KIND[kind], nm)
                : pg_fail(PG_STATUS_ERR_VALUE, "%s: '%s' contains NA, NaN or Inf", caller, nm);
    return 0;
}

/* the used pairs in check order: tensor k of kind, value j of the state */
typedef struct used {
    int kind;
    int64_t k, j;
} used;

/* strict: both kinds' names must match; file: a container's rules (the parameters' names must
 * match, the buffers' need not) and texts; dtype: the one its parameters must be in (-1: any) */
typedef struct mode {
    int strict, file, dtype;
} mode;

static int run(const char *caller, const pg_state_dict_side *model, const pg_state_dict_side *state,
               mode md, used *u)
{
    int64_t nu = 0;
    for (int kind = 0; kind < 2; kind++) {
        const pg_state_dict_side *m = &model[kind], *s = &state[kind];
        int rc = check_distinct(caller, kind, m);
        if (!rc && (md.file ? kind == PG_STATE_DICT_PARAMETERS : md.strict))
            rc = check_strict(caller, kind, m, s, md.file);
        if (rc) return rc;
        for (int64_t k = 0; k < m->n; k++) {
            int64_t j = find(s, m->names[k]);
            if (j >= 0) u[nu++] = (used){kind, k, j};
        }
    }
    for (int64_t i = 0; i < nu; i++) {
        const pg_state_dict_side *m = &model[u[i].kind];
        int rc = check_value(caller, u[i].kind, m->names[u[i].k], m->tensors[u[i].k],
                             &state[u[i].kind].values[u[i].j], md.file);
        if (rc) return rc;
    }
    /* a finite double beyond the f32 range would become Inf in an f32 tensor */
    for (int64_t i = 0; i < nu; i++) {
        const pg_state_dict_side *m = &model[u[i].kind];
        const pg_tensor *t = m->tensors[u[i].k];
        char what[600];
        snprintf(what, sizeof what, "%s: '%.500s'", caller, m->names[u[i].k]);
        int rc = pg_values_fit(state[u[i].kind].values[u[i].j].data, t->ne[0] * t->ne[1], t->dtype,
                               what);
        if (rc) return rc;
    }
    int rc = md.file
        ? pg_mf_built_dtype_check(md.dtype, model[0].n, (const char *const *)model[0].names,
                                  model[0].tensors)
        : 0;
    if (rc) return rc;
    /* every check passed: the writes, into the same tensor objects (optimizers stay bound) */
    for (int64_t i = 0; i < nu; i++) {
        pg_tensor *t = model[u[i].kind].tensors[u[i].k];
        int rc = pg_tensor_write(t, state[u[i].kind].values[u[i].j].data, PG_DTYPE_F64, t->ne[0],
                                 t->ne[1], 1, t->ne[0]);
        if (rc) return rc;
    }
    return 0;
}

static int load(const char *caller, const pg_state_dict_side *model,
                const pg_state_dict_side *state, mode md)
{
    if (!model || !state) return pg_fail(PG_STATUS_ERR_ARG, "%s: NULL model or state", caller);
    int64_t n = 0;
    for (int kind = 0; kind < 2; kind++) {
        const pg_state_dict_side *m = &model[kind], *s = &state[kind];
        if (m->n < 0 || s->n < 0 || (m->n > 0 && !m->tensors) || (s->n > 0 && !s->values))
            return pg_fail(PG_STATUS_ERR_ARG, "%s: %ss without their tensors or values", caller,
                           KIND[kind]);
        /* every tensor usable before any check, so no write can fail half way */
        for (int64_t k = 0; k < m->n; k++)
            if (pg_not_live(m->tensors[k], caller, "model")) return PG_STATUS_ERR_ARG;
        n += m->n;
    }
    used *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
    if (!u) return pg_fail(PG_STATUS_ERR_NOMEM, "%s: out of memory", caller);
    int rc = run(caller, model, state, md, u);
    free(u);
    return rc;
}

int pg_state_dict_load(const char *caller, const pg_state_dict_side *model,
                       const pg_state_dict_side *state, int strict)
{
    return load(caller ? caller : "ag_load_state_dict()", model, state, (mode){strict, 0, -1});
}

int pg_state_dict_load_file(const char *caller, const pg_state_dict_side *model,
                            const pg_state_dict_side *state, int dtype)
{
    return load(caller ? caller : "ag_load_model()", model, state, (mode){1, 1, dtype});
}

const char *pg_state_dict_format(void) { return "ggmlR.ag_state_dict"; }

int pg_state_dict_check_args(const char *caller, int state_ok, int strict_ok, int buffers_ok)
{
    if (!caller) caller = "ag_load_state_dict()";
    if (!state_ok)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: `state` is not a state dict (no $parameters)",
                       caller);
    if (!strict_ok) return pg_fail(PG_STATUS_ERR_ARG, "%s: `strict` must be TRUE or FALSE", caller);
    if (!buffers_ok)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: `state` is not a state dict ($buffers is not a list)", caller);
    return 0;
}

int pg_state_dict_model_fail(const char *caller, int64_t index, const char *name, const char *shown)
{
    if (!caller) caller = "ag_state_dict()";
    if (!shown) shown = "?";
    if (index == 0)
        return pg_fail(PG_STATUS_ERR_ARG, "%s: `model` has no parameters() / params() method",
                       caller);
    if (index < 0)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "%s: parameters() returned a %s, not a list of ag_tensors", caller, shown);
    return pg_fail(PG_STATUS_ERR_ARG, "%s: parameter %lld (%s) is a %s, not an ag_tensor", caller,
                   (long long)index, name && *name ? name : "unnamed", shown);
}

int pg_state_dict_container_check(const pg_state_dict_container *c, int *asked, int *build)
{
    static const char *const FMT = "ggmlR.ag_state";
    if (!c || !c->path || !asked || !build)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_state_dict_container_check(): NULL argument");
    const char *p = c->path;
    if (!c->is_list || !c->format || strcmp(c->format, FMT))
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_load_model(): file is not a ggmlR ag_state container. (%s: an R data "
                       "file without format \"%s\")",
                       p, FMT);
    if (!c->version_ok)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_load_model(): unsupported container version %s (this ggmlR supports "
                       "version 1).",
                       c->version ? c->version : "");
    if (!c->have_model && !c->have_model_fn && c->stored_fn && !c->trust)
        return pg_fail(PG_STATUS_ERR_STATE,
                       "ag_load_model(): %s stores its model_fn as R code (a closure), and code "
                       "from a file is run only with trust = TRUE. Pass trust = TRUE if you trust "
                       "the file (its model_fn is then called, as ggmlR 0.8.6 always did), or "
                       "model_fn = / model = to build the model yourself. Nothing from the file "
                       "was run.",
                       p);
    if (!c->have_model && !c->have_model_fn && !c->stored_fn)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_load_model(): no `model_fn` available. Pass one via the `model_fn` "
                       "argument, or re-save the model with `model_fn` so it is stored in the "
                       "file.");
    *asked = -1;
    int rc = c->have_dtype ? pg_mf_load_dtype(c->dtype, c->dtype_shown, asked) : 0;
    if (rc) return rc;
    if (!c->params_list)
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "ag_load_model(): the container's parameters are not a list");
    /* ggmlR's "f32" is a label over R doubles; only an all-"f64" file builds in f64 by itself */
    *build = pg_mf_build_dtype(*asked, c->all_f64);
    return 0;
}
