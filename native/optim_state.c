/* Optimizer state() / load_state() in ggmlR 0.8.6's layout and the model files' layout: the name
 * tables, load_state()'s checks in ggmlR's order with its texts, the hyper-parameter comparison
 * (R's all.equal) and its message (R's format()), once for both front ends. The write itself is
 * pg_optim_load / pg_optim_load_file (optim.c), all or nothing. */
#include "pg_fp.h" /* first: the build-independent rounding and vectoriser flags */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"

#define WHERE "optimizer load_state(): "
#define KINDS PG_OPTIM_KIND_COUNT

static const char *const SLOTS[KINDS][3] = {{"velocity"}, {"m", "v"}};
static const char *const HYPER[KINDS][5] = {{"lr", "momentum"}, {"lr", "beta1", "beta2", "eps"}};
static const char *const EXTRA[KINDS][3] = {{"nesterov", "weight_decay"}, {"weight_decay"}};
static const double EXTRA_DEFAULT[KINDS][2] = {{0, 0}, {0}};
static const char *const FILE_SLOTS[KINDS][4] = {{"velocity", "accum"}, {"m", "v", "accum"}};
static const char *const FILE_HYPER[KINDS][8] = {
    {"lr", "momentum", "nesterov", "weight_decay", "accumulate_steps", "average"},
    {"lr", "beta1", "beta2", "eps", "weight_decay", "accumulate_steps", "average"}};

const char *pg_optim_name(int table, int kind, int j)
{
    if (kind < 0 || kind >= KINDS || j < 0) return NULL;
    switch (table) {
    case PG_OPTIM_NAMES_SLOTS: return j < 3 ? SLOTS[kind][j] : NULL;
    case PG_OPTIM_NAMES_HYPER: return j < 5 ? HYPER[kind][j] : NULL;
    case PG_OPTIM_NAMES_EXTRA: return j < 3 ? EXTRA[kind][j] : NULL;
    case PG_OPTIM_NAMES_FILE_SLOTS: return j < 4 ? FILE_SLOTS[kind][j] : NULL;
    case PG_OPTIM_NAMES_FILE_HYPER: return j < 8 ? FILE_HYPER[kind][j] : NULL;
    default: return NULL;
    }
}

static int count_of(int table, int kind)
{
    int n = 0;
    while (pg_optim_name(table, kind, n)) n++;
    return n;
}

double pg_optim_extra_default(int kind, int j)
{
    return (kind >= 0 && kind < KINDS && j >= 0 && j < count_of(PG_OPTIM_NAMES_EXTRA, kind))
        ? EXTRA_DEFAULT[kind][j]
        : NAN;
}

int pg_optim_is_flag(const char *name)
{
    return name && (!strcmp(name, "nesterov") || !strcmp(name, "average"));
}

const char *pg_optim_kind_name(int kind)
{
    return kind == PG_OPTIM_KIND_SGD ? "sgd" : kind == PG_OPTIM_KIND_ADAM ? "adam" : NULL;
}

const char *pg_optim_state_format(void) { return "ggmlR.ag_opt_state"; }

/* R's format(x) of one double (digits 7): the fewest significant digits (<= 7) that give the
 * value rounded to 7, fixed notation unless scientific is narrower (R: fixed width <= sci). */
const char *pg_format_r(char *buf, int64_t n, double x) { return pg_format_r_digits(buf, n, x, 7); }

const char *pg_format_r_digits(char *buf, int64_t n, double x, int digits)
{
    if (!buf || n <= 0) return buf;
    digits = digits < 1 ? 1 : digits > 15 ? 15 : digits;
    size_t sz = (size_t)n;
    if (isnan(x)) snprintf(buf, sz, "NaN");
    else if (isinf(x)) snprintf(buf, sz, x > 0 ? "Inf" : "-Inf");
    else if (x == 0) snprintf(buf, sz, "0");
    else {
        char ref_s[40], sci[40], fixed[400];
        snprintf(ref_s, sizeof ref_s, "%.*e", digits - 1, x);
        double ref = strtod(ref_s, NULL);
        int d = 1;
        for (; d < digits; d++) {
            snprintf(sci, sizeof sci, "%.*e", d - 1, x);
            if (strtod(sci, NULL) == ref) break;
        }
        snprintf(sci, sizeof sci, "%.*e", d - 1, x); /* C writes e+XX / e-XX as R does */
        int e = atoi(strchr(sci, 'e') + 1);
        int dec = d - 1 - e > 0 ? d - 1 - e : 0;
        snprintf(fixed, sizeof fixed, "%.*f", dec, x); /* R: all the integer digits */
        const char *src = strlen(fixed) <= strlen(sci) ? fixed : sci;
        size_t len = strlen(src) < sz ? strlen(src) : sz - 1; /* cut to buf, as snprintf */
        memcpy(buf, src, len);
        buf[len] = '\0';
    }
    return buf;
}

/* a value's display: the host's text when given, else NULL / TRUE / FALSE / R's format() */
static const char *show(char *buf, size_t n, const pg_host_value *v)
{
    if (v->text) return v->text;
    switch (v->kind) {
    case PG_HOST_ABSENT: return "NULL";
    case PG_HOST_BOOL: return v->num != 0 ? "TRUE" : "FALSE";
    case PG_HOST_NUM:
    case PG_HOST_INT: /* the non-finite in each language's words (pg_fmt_num) */
        return isfinite(v->num) ? pg_format_r(buf, (int64_t)n, v->num) : pg_fmt_num(buf, n, v->num);
    default: return "?";
    }
}

int pg_optim_state_form_of(int has_type, int has_kind, int params_is_list)
{
    return !has_type && has_kind && params_is_list ? PG_OPTIM_STATE_FORM_LEGACY
                                                   : PG_OPTIM_STATE_FORM_GGMLR;
}

pg_optim_state_in pg_optim_state_in_default(void)
{
    pg_optim_state_in in;
    memset(&in, 0, sizeof in);
    in.form = PG_OPTIM_STATE_FORM_GGMLR;
    return in;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pg_fail(PG_STATUS_ERR_VALUE, WHERE "%s", msg);
}

/* a counter: a number (not a flag), finite, >= 0, whole; absent reads 0 where allowed */
static int is_count(const pg_host_value *v, int absent_ok)
{
    if (v->kind == PG_HOST_ABSENT) return absent_ok;
    if (v->kind != PG_HOST_NUM && v->kind != PG_HOST_INT) return 0;
    return isfinite(v->num) && v->num >= 0 && v->num == floor(v->num);
}

static double count_value(const pg_host_value *v) { return v->kind == PG_HOST_ABSENT ? 0 : v->num; }

/* "2x3" from a host matrix's dims ("" when it has none) */
static const char *dims_text(char *buf, size_t n, const pg_host_matrix *m)
{
    buf[0] = 0;
    size_t at = 0;
    for (int k = 0; m->present && m->dims && k < m->ndim && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, k ? "x%lld" : "%lld", (long long)m->dims[k]);
    return buf;
}

static int shape_ok(const pg_tensor *p, const pg_host_matrix *m)
{
    return m->present && m->numeric && m->ndim == 2 && m->dims && m->dims[0] == p->ne[0] &&
        m->dims[1] == p->ne[1];
}

static int shape_fail(const char *slot, int64_t i, const pg_tensor *p, const pg_host_matrix *m)
{
    char got[200];
    return fail("slot '%s' of parameter %lld has shape %s, expected %lldx%lld", slot,
                (long long)i + 1, dims_text(got, sizeof got, m), (long long)p->ne[0],
                (long long)p->ne[1]);
}

static int type_fail(const pg_host_value *v, int kind)
{
    char b[40];
    return fail("state is for a '%s' optimizer, this one is '%s'", show(b, sizeof b, v),
                pg_optim_kind_name(kind));
}

static int is_type(const pg_host_value *v, int kind)
{
    return v->kind == PG_HOST_TEXT && v->text && !strcmp(v->text, pg_optim_kind_name(kind));
}

/* names joined by ", " into buf (cut at its size) */
static const char *join(char *buf, size_t n, const char *const *s, int64_t k)
{
    buf[0] = 0;
    size_t at = 0;
    for (int64_t j = 0; j < k && at < n; j++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", j ? ", " : "", s[j] ? s[j] : "NA");
    return buf;
}

static int names_differ(const pg_optim_state_in *in)
{
    if (in->n_names != in->n_opt_names) return 1;
    for (int64_t j = 0; j < in->n_names; j++)
        if (!in->names[j] || !in->opt_names[j] || strcmp(in->names[j], in->opt_names[j])) return 1;
    return 0;
}

/* ggmlR's checks 4-7 on its own layout: counts, names, shapes and values, counters */
static int check_ggmlr(pg_optim *o, const pg_optim_state_in *in)
{
    int kind = pg_optim_kind(o), ns = count_of(PG_OPTIM_NAMES_SLOTS, kind);
    char b[40];
    if (in->version.kind != PG_HOST_INT || in->version.num != 1)
        return fail("unsupported state version %s (this ggmlR reads version 1)",
                    show(b, sizeof b, &in->version));
    if (!is_type(&in->type, kind)) return type_fail(&in->type, kind);
    for (int s = 0; s < ns; s++)
        if (in->slot_len[s] != pg_optim_nparams(o))
            return fail("state has %lld parameters, optimizer has %lld", (long long)in->slot_len[s],
                        (long long)pg_optim_nparams(o));
    if (in->names_bad)
        return fail("names must be NULL or one name per parameter, got %s", in->names_bad);
    if (in->opt_names && in->names_given && (in->n_names > 0 && !in->names))
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "names without their values");
    if (in->opt_names && in->names_given && names_differ(in)) {
        char mine[600], theirs[600];
        return fail("parameter names differ from the state's (position is the key, names are the "
                    "check)\n  optimizer: %s\n  state:     %s",
                    join(mine, sizeof mine, in->opt_names, in->n_opt_names),
                    join(theirs, sizeof theirs, in->names, in->n_names));
    }
    if (in->n_slots != ns * pg_optim_nparams(o) || (in->n_slots > 0 && !in->slots))
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "%lld slot values for %lld parameters",
                       (long long)in->n_slots, (long long)pg_optim_nparams(o));
    for (int s = 0; s < ns; s++)
        for (int64_t i = 0; i < pg_optim_nparams(o); i++) {
            const pg_host_matrix *m = &in->slots[s * pg_optim_nparams(o) + i];
            const pg_tensor *p = pg_optim_param(o, i);
            if (!shape_ok(p, m)) return shape_fail(SLOTS[kind][s], i, p, m);
            if (!m->data) return pg_fail(PG_STATUS_ERR_ARG, WHERE "slot values without data");
            for (int64_t e = 0; e < p->ne[0] * p->ne[1]; e++)
                if (!isfinite(m->data[e]))
                    return fail("slot '%s' of parameter %lld is not finite", SLOTS[kind][s],
                                (long long)i + 1);
        }
    if (!is_count(&in->t, 0) || !is_count(&in->accum_count, 0))
        return fail("t / accum_count are not counts");
    return 0;
}

/* pyggmlr's earlier state() (the model files' layout): kind, parameter count, shapes of the
 * slots present, counters (absent: 0) */
static int check_legacy(pg_optim *o, const pg_optim_state_in *in)
{
    int kind = pg_optim_kind(o), ns = count_of(PG_OPTIM_NAMES_FILE_SLOTS, kind);
    if (!is_type(&in->type, kind)) return type_fail(&in->type, kind);
    if (in->slot_len[0] != pg_optim_nparams(o))
        return fail("state has %lld parameters, optimizer has %lld", (long long)in->slot_len[0],
                    (long long)pg_optim_nparams(o));
    if (in->n_slots != ns * pg_optim_nparams(o) || (in->n_slots > 0 && !in->slots))
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "%lld slot values for %lld parameters",
                       (long long)in->n_slots, (long long)pg_optim_nparams(o));
    for (int64_t i = 0; i < pg_optim_nparams(o); i++)
        for (int s = 0; s < ns; s++) {
            const pg_host_matrix *m = &in->slots[i * ns + s];
            if (m->present && !shape_ok(pg_optim_param(o, i), m))
                return shape_fail(FILE_SLOTS[kind][s], i, pg_optim_param(o, i), m);
        }
    return 0;
}

/* the model file's values (and the legacy state's) as pg_optim_load_file takes them */
static int load_file(pg_optim *o, const pg_optim_state_in *in, int check_only)
{
    int ns = count_of(PG_OPTIM_NAMES_FILE_SLOTS, pg_optim_kind(o));
    if (in->n_slots != ns * pg_optim_nparams(o) || (in->n_slots > 0 && !in->slots))
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "%lld slot values for %lld parameters",
                       (long long)in->n_slots, (long long)pg_optim_nparams(o));
    const double **v = calloc((size_t)(in->n_slots > 0 ? in->n_slots : 1), sizeof *v);
    if (!v) return pg_fail(PG_STATUS_ERR_NOMEM, WHERE "out of memory");
    for (int64_t j = 0; j < in->n_slots; j++) {
        const pg_host_matrix *m = &in->slots[j];
        if (!m->present) continue;
        if (!shape_ok(pg_optim_param(o, j / ns), m) ||
            !m->data) { /* the reader checked the shapes */
            free(v);
            return pg_fail(PG_STATUS_ERR_VALUE,
                           "optimizer state: slot value %lld is not a double "
                           "matrix of its parameter's size",
                           (long long)j + 1);
        }
        v[j] = m->data;
    }
    int rc = pg_optim_load_file(o, v, in->n_slots, count_value(&in->t),
                                count_value(&in->accum_count), check_only);
    free(v);
    return rc;
}

int pg_optim_state_load(pg_optim *o, const pg_optim_state_in *in, int check_only)
{
    if (!o || !in) return pg_fail(PG_STATUS_ERR_ARG, WHERE "NULL optimizer or state");
    if (in->form < 0 || in->form >= PG_OPTIM_STATE_FORM_COUNT)
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "unknown state form %d", in->form);
    if (in->form != PG_OPTIM_STATE_FORM_FILE &&
        !(in->is_map && in->format.kind == PG_HOST_TEXT && in->format.text &&
          !strcmp(in->format.text, pg_optim_state_format())))
        return fail("not an optimizer state (from opt$state())");
    int rc = in->form == PG_OPTIM_STATE_FORM_GGMLR ? check_ggmlr(o, in)
        : in->form == PG_OPTIM_STATE_FORM_LEGACY   ? check_legacy(o, in)
                                                   : 0;
    if (rc) return rc;
    if (in->form != PG_OPTIM_STATE_FORM_GGMLR) {
        if (!is_count(&in->t, 1) || !is_count(&in->accum_count, 1))
            return fail("t / accum_count are not counts");
        return load_file(o, in, check_only);
    }
    if (check_only) return 0;
    int ns = count_of(PG_OPTIM_NAMES_SLOTS, pg_optim_kind(o));
    const double **v =
        calloc((size_t)(ns * pg_optim_nparams(o) > 0 ? ns * pg_optim_nparams(o) : 1), sizeof *v);
    if (!v) return pg_fail(PG_STATUS_ERR_NOMEM, WHERE "out of memory");
    for (int64_t j = 0; j < ns * pg_optim_nparams(o); j++) v[j] = in->slots[j].data;
    rc = pg_optim_load(o, v, ns * pg_optim_nparams(o), in->t.num, in->accum_count.num);
    free(v);
    return rc;
}

/* R's all.equal(current, state) on one value: flags equal flags; numbers by the mean relative
 * difference (absolute when |current| <= the tolerance) <= 1.5e-8; NaN equals NaN only */
static int all_equal(double cur, int cur_flag, const pg_host_value *sv)
{
    const double tol = 1.5e-8;
    if (cur_flag || sv->kind == PG_HOST_BOOL)
        return cur_flag && sv->kind == PG_HOST_BOOL && (cur != 0) == (sv->num != 0);
    if (sv->kind != PG_HOST_NUM && sv->kind != PG_HOST_INT) return 0;
    double s = sv->num;
    if (isnan(cur) || isnan(s)) return isnan(cur) && isnan(s);
    if (cur == s) return 1;
    double xy = fabs(cur - s), xn = fabs(cur);
    if (isfinite(xn) && xn > tol) xy /= xn;
    return xy <= tol;
}

static int64_t find_hyper(const pg_optim_state_in *in, const char *name)
{
    for (int64_t j = 0; j < in->n_hyper; j++)
        if (in->hyper_names && in->hyper_names[j] && !strcmp(in->hyper_names[j], name) &&
            in->hyper && in->hyper[j].kind != PG_HOST_ABSENT)
            return j;
    return -1;
}

static void note_diff(pg_optim *o, pg_optim_hyper_diff *out, const char *name, int64_t entry,
                      const pg_host_value *sv, double dflt)
{
    double cur = pg_optim_get(o, name);
    int flag = pg_optim_is_flag(name);
    if (all_equal(cur, flag, sv)) return;
    int k = out->n++;
    out->name[k] = name;
    out->entry[k] = entry;
    out->default_value[k] = dflt;
    out->is_flag[k] = flag;
    char a[40], b[40];
    pg_host_value c = {flag ? PG_HOST_BOOL : PG_HOST_NUM, cur, NULL};
    size_t at = strlen(out->message);
    if (at < sizeof out->message)
        snprintf(out->message + at, sizeof out->message - at, "%s%s = %s (state %s)", k ? ", " : "",
                 name, show(a, sizeof a, &c), show(b, sizeof b, sv));
}

int pg_optim_hyper_diff_of(pg_optim *o, const pg_optim_state_in *in, pg_optim_hyper_diff *out)
{
    if (!o || !in || !out) return pg_fail(PG_STATUS_ERR_ARG, WHERE "NULL argument");
    if (in->n_hyper < 0 || (in->n_hyper > 0 && (!in->hyper_names || !in->hyper)))
        return pg_fail(PG_STATUS_ERR_ARG, WHERE "hyper-parameter names without values");
    memset(out, 0, sizeof *out);
    static const char head[] =
        WHERE "hyperparameters differ from the state's and are NOT restored: ";
    snprintf(out->message, sizeof out->message, "%s", head);
    int kind = pg_optim_kind(o);
    for (int j = 0; pg_optim_name(PG_OPTIM_NAMES_HYPER, kind, j); j++) {
        const char *nm = pg_optim_name(PG_OPTIM_NAMES_HYPER, kind, j);
        int64_t e = find_hyper(in, nm);
        if (e >= 0) note_diff(o, out, nm, e, &in->hyper[e], NAN);
    }
    for (int j = 0; pg_optim_name(PG_OPTIM_NAMES_EXTRA, kind, j); j++) {
        const char *nm = pg_optim_name(PG_OPTIM_NAMES_EXTRA, kind, j);
        int64_t e = find_hyper(in, nm);
        double d = pg_optim_extra_default(kind, j);
        pg_host_value dv = {pg_optim_is_flag(nm) ? PG_HOST_BOOL : PG_HOST_NUM, d, NULL};
        note_diff(o, out, nm, e, e >= 0 ? &in->hyper[e] : &dv, d);
    }
    if (!out->n) out->message[0] = 0;
    return 0;
}

int pg_optim_state_check(pg_optim *o, const pg_optim_state_in *in, pg_optim_hyper_diff *diff)
{
    if (!diff) return pg_fail(PG_STATUS_ERR_ARG, WHERE "NULL argument");
    pg_optim_hyper_diff d;
    int rc = pg_optim_state_load(o, in, 1);
    if (!rc) rc = pg_optim_hyper_diff_of(o, in, &d);
    if (!rc) *diff = d;
    return rc;
}

int pg_optim_state_of(pg_optim *o, pg_optim_state_out *out)
{
    if (!o || !out) return pg_fail(PG_STATUS_ERR_ARG, "optimizer state(): NULL argument");
    memset(out, 0, sizeof *out);
    int kind = pg_optim_kind(o), nh = count_of(PG_OPTIM_NAMES_HYPER, kind);
    out->format = pg_optim_state_format();
    out->version = 1;
    out->type = pg_optim_kind_name(kind);
    out->t = kind == PG_OPTIM_KIND_ADAM ? (int64_t)pg_optim_get(o, "t") : 0;
    out->accum_count = (int64_t)pg_optim_get(o, "accum_count");
    for (; pg_optim_name(PG_OPTIM_NAMES_SLOTS, kind, out->n_slots); out->n_slots++)
        out->slot[out->n_slots] = pg_optim_name(PG_OPTIM_NAMES_SLOTS, kind, out->n_slots);
    for (int j = 0; j < nh + count_of(PG_OPTIM_NAMES_EXTRA, kind); j++) {
        const char *nm = j < nh ? pg_optim_name(PG_OPTIM_NAMES_HYPER, kind, j)
                                : pg_optim_name(PG_OPTIM_NAMES_EXTRA, kind, j - nh);
        double v = pg_optim_get(o, nm);
        if (j >= nh && v == pg_optim_extra_default(kind, j - nh)) continue;
        out->hyper_name[out->n_hyper] = nm;
        out->hyper_is_flag[out->n_hyper] = pg_optim_is_flag(nm);
        out->hyper_value[out->n_hyper++] = v;
    }
    if (out->accum_count > 0) {
        out->has_note = 1;
        snprintf(out->note, sizeof out->note,
                 "optimizer state(): taken mid-accumulation (%lld of %lld backward passes); the "
                 "accumulated gradients live in the parameters' $grad and are not part of the "
                 "state",
                 (long long)out->accum_count, (long long)pg_optim_get(o, "accumulate_steps"));
    }
    return 0;
}
