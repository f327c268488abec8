/* ag_module_from_config's layer table (pg_api_layer_config.h): the built-in layer types, each
 * argument's kind, range and default, and the refusals' texts, once for both front ends. The
 * ranges are the constructors' own (pyggmlr/nn/layers.py, r/R/layers.R), so a config the core
 * passes builds, and one it refuses is named by ag_module_from_config and the layer. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

#define FN        "ag_module_from_config"
#define SIZE_MAX_ 2147483647.0 /* R's integer range: the bound both languages' sizes share */

static const char *const ACTIVATIONS[] = {"gelu", "relu", "sigmoid", "softmax", "tanh", NULL};
static const char *const INITS[] = {"glorot_uniform", "orthogonal", NULL};
static const char *const CONV_INITS[] = {"torch", "glorot_uniform", "he_uniform", NULL};
static const char *const NONLIN[] = {"tanh", "relu", NULL};
static const char *const PADS[] = {"same", "valid", NULL};
static const char *const PAD_MODES[] = {"constant", "reflect", "replicate", NULL};
static const char *const UP_MODES[] = {"nearest", "bilinear", NULL};
static const char *const UP1_MODES[] = {"nearest", "linear", NULL};

typedef struct {
    const char *name;
    int kind;                   /* enum pg_layer_arg_kind */
    const char *def;            /* the default as JSON text; NULL: the argument is required */
    double lo, hi;              /* PG_LAYER_ARG_NUMBER: the range (-/+HUGE_VAL: open-ended) */
    int hi_open;                /* hi itself is out of range */
    const char *const *choices; /* PG_LAYER_ARG_CHOICE: the strings it takes */
    int null_ok;                /* PG_LAYER_ARG_CHOICE: null too (no activation) */
} arg_spec;

#define MAX_ARGS 12
typedef struct {
    const char *type;
    arg_spec args[MAX_ARGS];
} layer_spec;

#define SIZE(n)                                                                                    \
    {                                                                                              \
        n, PG_LAYER_ARG_SIZE, NULL, 0, 0, 0, NULL, 0                                               \
    }
#define SIZE_D(n, d)                                                                               \
    {                                                                                              \
        n, PG_LAYER_ARG_SIZE, d, 0, 0, 0, NULL, 0                                                  \
    }
#define NUM(n, d, l, h, o)                                                                         \
    {                                                                                              \
        n, PG_LAYER_ARG_NUMBER, d, l, h, o, NULL, 0                                                \
    }
#define FLAG(n, d)                                                                                 \
    {                                                                                              \
        n, PG_LAYER_ARG_FLAG, d, 0, 0, 0, NULL, 0                                                  \
    }
/* DIMS: a whole number in [lo, 2^31 - 1] or (count 2) a pair [H, W] of them; z: null too */
#define DIMS(n, d, lo, count, z)                                                                   \
    {                                                                                              \
        n, PG_LAYER_ARG_DIMS, d, lo, count, 0, NULL, z                                             \
    }
#define PAIR(n, d, l, c)                                                                           \
    {                                                                                              \
        n, PG_LAYER_ARG_PAIR, d, l, 0, 0, c, 0                                                     \
    }
#define SHAPE(n, l, h)                                                                             \
    {                                                                                              \
        n, PG_LAYER_ARG_SHAPE, "null", l, h, 0, NULL, 1                                            \
    }
/* the convolutions' arguments (ag_conv1d / ag_conv2d), in their constructors' order */
#define CONV_ARGS(k)                                                                               \
    {                                                                                              \
        SIZE("in_channels"), SIZE("out_channels"), PAIR("kernel_size", NULL, 1, NULL),             \
            PAIR("stride", "1", 1, NULL), PAIR("padding", "0", 0, PADS),                           \
            PAIR("dilation", "1", 1, NULL), SIZE_D("groups", "1"), FLAG("bias", "true"),           \
            SHAPE("input_shape", k, k), CHOICE("activation", "null", ACTIVATIONS, 1),              \
            CHOICE("init", "\"torch\"", CONV_INITS, 0)                                             \
    }
/* ag_conv_transpose1d's / ag_conv_transpose2d's, in torch's ConvTranspose2d order */
#define CONVT_ARGS(k)                                                                              \
    {                                                                                              \
        SIZE("in_channels"), SIZE("out_channels"), PAIR("kernel_size", NULL, 1, NULL),             \
            PAIR("stride", "1", 1, NULL), PAIR("padding", "0", 0, NULL),                           \
            PAIR("output_padding", "0", 0, NULL), SIZE_D("groups", "1"), FLAG("bias", "true"),     \
            PAIR("dilation", "1", 1, NULL), SHAPE("input_shape", k, k),                            \
            CHOICE("activation", "null", ACTIVATIONS, 1),                                          \
            CHOICE("init", "\"torch\"", CONV_INITS, 0)                                             \
    }
/* padding layers (ag_pad1d / ag_pad2d): padding a number or a list of up to `c` (pad2d: 1, 2 or
 * 4; never 3) whole numbers, negative ones cropping (torch's F.pad) */
#define PAD_ARGS(c)                                                                                \
    {                                                                                              \
        {"padding", PG_LAYER_ARG_PAIR, NULL, -SIZE_MAX_, c, 0, NULL, 0},                           \
            NUM("value", "0", -HUGE_VAL, HUGE_VAL, 0),                                             \
            CHOICE("mode", "\"constant\"", PAD_MODES, 0)                                           \
    }
#define CHOICE(n, d, c, z)                                                                         \
    {                                                                                              \
        n, PG_LAYER_ARG_CHOICE, d, 0, 0, 0, c, z                                                   \
    }

/* the recurrent layers' (ag_lstm, ag_gru, ag_rnn) */
#define RNN_ARGS                                                                                   \
    SIZE("input_size"), SIZE("hidden_size"), SIZE_D("num_layers", "1"), FLAG("bias", "true"),      \
        NUM("dropout", "0", 0, 1, 1), FLAG("bidirectional", "false"),                              \
        FLAG("return_sequences", "false"), FLAG("return_state", "false")

/* sorted by type: the unknown-type message lists them in this order, after "sequential" */
#define POOL_ARGS(c, p0)                                                                           \
    {                                                                                              \
        DIMS("kernel_size", NULL, 1, c, 0), DIMS("stride", "null", 1, c, 1),                       \
            DIMS("padding", p0, 0, c, 0)                                                           \
    }
static const layer_spec LAYERS[] = {
    {"avg_pool1d", POOL_ARGS(1, "0")},
    {"avg_pool2d", POOL_ARGS(2, "[0, 0]")},
    {"batch_norm",
     {SIZE("num_features"), NUM("eps", "1e-05", 0, HUGE_VAL, 0), NUM("momentum", "0.1", 0, 1, 0)}},
    {"conv1d", CONV_ARGS(2)},
    {"conv2d", CONV_ARGS(3)},
    {"conv_transpose1d", CONVT_ARGS(2)},
    {"conv_transpose2d", CONVT_ARGS(3)},
    {"dropout", {NUM("rate", NULL, 0, 1, 1)}},
    {"embedding", {SIZE("vocab_size"), SIZE("dim")}},
    {"flatten", {{NULL, 0, NULL, 0, 0, 0, NULL, 0}}},
    {"global_avg_pool", {{NULL, 0, NULL, 0, 0, 0, NULL, 0}}},
    {"global_max_pool", {{NULL, 0, NULL, 0, 0, 0, NULL, 0}}},
    {"gru", {RNN_ARGS}},
    {"layer_norm",
     {SIZE("normalized_shape"), NUM("eps", "1e-05", 0, HUGE_VAL, 0),
      FLAG("elementwise_affine", "true")}},
    {"linear",
     {SIZE("in_features"), SIZE("out_features"), CHOICE("activation", "null", ACTIVATIONS, 1),
      CHOICE("init", "\"glorot_uniform\"", INITS, 0), NUM("gain", "1", -HUGE_VAL, HUGE_VAL, 0)}},
    {"lstm", {RNN_ARGS}},
    {"max_pool1d", POOL_ARGS(1, "0")},
    {"max_pool2d", POOL_ARGS(2, "[0, 0]")},
    {"multihead_attention",
     {SIZE("d_model"), SIZE("n_heads"), NUM("dropout", "0", 0, 1, 1), FLAG("bias", "true")}},
    {"normalization", {SIZE("features"), NUM("eps", "1e-07", 0, HUGE_VAL, 0)}},
    {"pad1d", PAD_ARGS(2)},
    {"pad2d", PAD_ARGS(4)},
    {"rnn", {RNN_ARGS, CHOICE("nonlinearity", "\"tanh\"", NONLIN, 0)}},
    {"upsample1d",
     {DIMS("scale_factor", NULL, 1, 1, 0), CHOICE("mode", "\"nearest\"", UP1_MODES, 0)}},
    {"upsample2d",
     {DIMS("scale_factor", NULL, 1, 2, 0), CHOICE("mode", "\"nearest\"", UP_MODES, 0)}},
};
#define N_LAYERS ((int)(sizeof LAYERS / sizeof LAYERS[0]))

const char *pg_layer_type_name(int i)
{
    if (i == 0) return "sequential";
    return i > 0 && i <= N_LAYERS ? LAYERS[i - 1].type : NULL;
}

/* s quoted for a message: 'name' (escaped as JSON escapes it, at most 60 characters) */
static void squote(const char *s, char *out, size_t cap)
{
    char q[400];
    pj_qname(s, q, sizeof q);
    size_t n = strlen(q);
    if (n >= 2) q[0] = q[n - 1] = '\'';
    snprintf(out, cap, "%s", q);
}

/* a value for a message: numbers as pg_fmt_num15 (the same in both languages, whatever printed
 * them; a huge whole number's digits),
 * strings quoted, containers as their (cut) source text */
static void show(const pj_doc *d, int64_t v, char *out, size_t cap)
{
    const pj_node *x = &d->nodes[v];
    if (x->type == PJ_NUM) pg_fmt_num15(out, cap, pj_number(d, x));
    else if (x->type == PJ_STR) pj_qname(d->pool + x->str, out, cap);
    else pj_snippet(d, v, 60, out, cap);
}

/* a number, shortest text that reads back as the same double */
static void num_text(double v, char *out, size_t cap)
{
    for (int p = 15; p <= 17; p++) {
        snprintf(out, cap, "%.*g", p, v);
        if (strtod(out, NULL) == v) return;
    }
}

static int bad(const char *type, const char *fmt, const char *a, const char *b)
{
    char t[300];
    squote(type, t, sizeof t);
    char what[1024]; /* fmt, a (< 600) and b (< 300) fit whole */
    snprintf(what, sizeof what, fmt, a, b);
    return pg_fail(PG_STATUS_ERR_VALUE, FN ": bad arguments for a %s layer: %s", t, what);
}

/* the rule an argument breaks, as "must be ..." */
static void rule(const arg_spec *a, char *out, size_t cap)
{
    size_t k = 0;
    switch (a->kind) {
    case PG_LAYER_ARG_SIZE: snprintf(out, cap, "a whole number in [1, 2147483647]"); break;
    case PG_LAYER_ARG_NUMBER:
        if (a->lo == -HUGE_VAL && a->hi == HUGE_VAL) snprintf(out, cap, "a finite number");
        else if (a->hi == HUGE_VAL) snprintf(out, cap, "a number >= %s", pg_num(a->lo));
        else
            snprintf(out, cap, "a number in [%s, %s%c", pg_num(a->lo), pg_num(a->hi),
                     a->hi_open ? ')' : ']');
        break;
    case PG_LAYER_ARG_FLAG: snprintf(out, cap, "true or false"); break;
    case PG_LAYER_ARG_DIMS:
        snprintf(out, cap, "a whole number >= %g%s%s", a->lo,
                 a->hi == 2 ? " or a pair [H, W] of them" : "", a->null_ok ? " or null" : "");
        break;
    case PG_LAYER_ARG_PAIR:
        if (a->lo < 0) /* padding's: negative crops */
            snprintf(out, cap, "a whole number or a list of %s",
                     a->hi == 4 ? "1, 2 or 4" : "1 or 2");
        else if (a->hi == 4)
            snprintf(out, cap, "a whole number >= %g or a list of 1, 2 or 4", a->lo);
        else
            snprintf(out, cap, "a whole number >= %g or a list of %s%s", a->lo,
                     a->hi == 2 ? "1 or 2" : "two", a->choices ? ", \"same\" or \"valid\"" : "");
        break;
    case PG_LAYER_ARG_SHAPE:
        snprintf(out, cap, "null or a list of %g whole numbers >= 1", a->lo);
        break;
    default:
        k = (size_t)snprintf(out, cap, "one of ");
        for (int i = 0; a->choices[i] && k < cap; i++)
            k += (size_t)snprintf(out + k, cap - k, "%s\"%s\"",
                                  i == 0                                ? ""
                                      : a->choices[i + 1] || a->null_ok ? ", "
                                                                        : " or ",
                                  a->choices[i]);
        if (a->null_ok && k < cap) snprintf(out + k, cap - k, " or null");
    }
}

/* a DIMS value: a number (both of a pair) or an array of a->hi numbers, each whole in
 * [a->lo, 2^31 - 1]; into dv[2] and its text ("[h, w]", or "l" for one) into val */
static int dims_arg(const pj_doc *d, const arg_spec *a, int64_t v, char *val, size_t cap,
                    int64_t *dv)
{
    const pj_node *x = &d->nodes[v];
    const int count = (int)a->hi;
    int n = 0;
    if (x->type == PJ_NULL && a->null_ok) {
        snprintf(val, cap, "null");
        return 1;
    }
    if (x->type == PJ_NUM) {
        n = 1;
        dv[0] = dv[1] = -1;
        double f = pj_number(d, x);
        if (f >= a->lo && f <= SIZE_MAX_ && f == floor(f)) dv[0] = dv[1] = (int64_t)f;
    } else if (x->type == PJ_ARR && (x->count == count || x->count == 1)) {
        for (int64_t c = x->first; c >= 0; c = d->nodes[c].next, n++) {
            double f = d->nodes[c].type == PJ_NUM ? pj_number(d, &d->nodes[c]) : NAN;
            dv[n] = f >= a->lo && f <= SIZE_MAX_ && f == floor(f) ? (int64_t)f : -1;
        }
        if (n == 1) dv[1] = dv[0];
    } else return 0;
    if (dv[0] < 0 || dv[1] < 0) return 0;
    if (count == 2) snprintf(val, cap, "[%lld, %lld]", (long long)dv[0], (long long)dv[1]);
    else snprintf(val, cap, "%lld", (long long)dv[0]);
    return 1;
}

/* a whole number in [lo, 2^31 - 1] written into val at *k */
static int whole_item(const pj_doc *d, int64_t v, double lo, char *val, size_t cap, size_t *k)
{
    const pj_node *x = &d->nodes[v];
    double f = x->type == PJ_NUM ? pj_number(d, x) : NAN;
    if (!(f >= lo && f <= SIZE_MAX_ && f == floor(f))) return 0;
    *k += (size_t)snprintf(val + *k, cap - *k, "%lld", (long long)f);
    return 1;
}

/* PG_LAYER_ARG_PAIR (a number, a list of one or two, a choice) and _SHAPE (null, a list) */
static int list_arg(const pj_doc *d, const arg_spec *a, int64_t v, char *val, size_t cap)
{
    const pj_node *x = &d->nodes[v];
    size_t k = 0;
    if (a->kind == PG_LAYER_ARG_SHAPE && x->type == PJ_NULL) {
        snprintf(val, cap, "null");
        return 1;
    }
    for (int i = 0; x->type == PJ_STR && a->choices && a->choices[i]; i++)
        if (!strcmp(d->pool + x->str, a->choices[i])) {
            snprintf(val, cap, "\"%s\"", a->choices[i]);
            return 1;
        }
    if (a->kind == PG_LAYER_ARG_PAIR && x->type == PJ_NUM)
        return whole_item(d, v, a->lo, val, cap, &k);
    if (x->type != PJ_ARR) return 0;
    /* a PAIR with hi 0 is "a list of two" (the convolutions': torch refuses one) */
    int64_t lo = a->kind == PG_LAYER_ARG_PAIR ? (a->hi ? 1 : 2) : (int64_t)a->lo;
    int64_t hi = a->kind == PG_LAYER_ARG_PAIR ? (a->hi ? (int64_t)a->hi : 2) : (int64_t)a->hi;
    int64_t n = 0;
    k += (size_t)snprintf(val, cap, "[");
    for (int64_t c = x->first; c >= 0; c = d->nodes[c].next, n++) {
        if (n >= hi) return 0;
        if (n) k += (size_t)snprintf(val + k, cap - k, ", ");
        if (!whole_item(d, c, a->kind == PG_LAYER_ARG_PAIR ? a->lo : 1, val, cap, &k)) return 0;
    }
    snprintf(val + k, cap - k, "]");
    return n >= lo && (a->kind != PG_LAYER_ARG_PAIR || n != 3); /* 3: no padding's count */
}

/* value node v against a; its normalized text in val */
static int check_arg(const pj_doc *d, const char *type, const arg_spec *a, int64_t v, char *val,
                     size_t cap, int64_t *dv)
{
    const pj_node *x = &d->nodes[v];
    int ok = 0;
    if (a->kind == PG_LAYER_ARG_DIMS) {
        ok = dims_arg(d, a, v, val, cap, dv);
    } else if (a->kind == PG_LAYER_ARG_SIZE && x->type == PJ_NUM) {
        double f = pj_number(d, x);
        ok = f >= 1 && f <= SIZE_MAX_ && f == floor(f);
        if (ok) snprintf(val, cap, "%lld", (long long)f);
    } else if (a->kind == PG_LAYER_ARG_NUMBER && x->type == PJ_NUM) {
        double f = pj_number(d, x);
        ok = isfinite(f) && f >= a->lo && (a->hi_open ? f < a->hi : f <= a->hi);
        if (ok) num_text(f, val, cap);
    } else if (a->kind == PG_LAYER_ARG_FLAG && (x->type == PJ_TRUE || x->type == PJ_FALSE)) {
        ok = 1;
        snprintf(val, cap, "%s", x->type == PJ_TRUE ? "true" : "false");
    } else if (a->kind == PG_LAYER_ARG_PAIR || a->kind == PG_LAYER_ARG_SHAPE) {
        ok = list_arg(d, a, v, val, cap);
    } else if (a->kind == PG_LAYER_ARG_CHOICE) {
        if (x->type == PJ_NULL && a->null_ok) {
            ok = 1;
            snprintf(val, cap, "null");
        }
        for (int i = 0; x->type == PJ_STR && a->choices[i] && !ok; i++)
            if (!strcmp(d->pool + x->str, a->choices[i])) {
                ok = 1;
                snprintf(val, cap, "\"%s\"", a->choices[i]);
            }
    }
    if (ok) return 0;
    char r[200], got[300], what[600];
    rule(a, r, sizeof r);
    show(d, v, got, sizeof got);
    snprintf(what, sizeof what, "%s must be %s", a->name, r);
    return bad(type, "%s, got %s", what, got);
}

/* members of o the layer does not take ("type" and the table's; layer_norm: num_features) */
static int unknown_args(const pj_doc *d, int64_t o, const layer_spec *L)
{
    char list[600] = "";
    size_t k = 0;
    int n = 0;
    for (int64_t c = d->nodes[o].first; c >= 0; c = d->nodes[c].next) {
        const char *key = d->pool + d->nodes[c].kstr;
        int known = !strcmp(key, "type") ||
            (!strcmp(L->type, "layer_norm") && !strcmp(key, "num_features"));
        for (int i = 0; i < MAX_ARGS && L->args[i].name && !known; i++)
            known = !strcmp(key, L->args[i].name);
        if (known) continue;
        char q[300];
        squote(key, q, sizeof q);
        if (k < sizeof list - 1)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", n ? ", " : "", q);
        n++;
    }
    if (!n) return 0;
    return bad(L->type, "unknown argument%s %s", n > 1 ? "s" : "", list);
}

/* the built-in layer L's arguments from object o, normalized into out */
static int64_t layer_args(const pj_doc *d, int64_t o, const layer_spec *L, char *out, int64_t cap)
{
    int rc = unknown_args(d, o, L);
    if (rc) return -rc;
    char buf[PG_LAYER_CONFIG_MAX];
    size_t k = (size_t)snprintf(buf, sizeof buf, "{");
    int64_t size[MAX_ARGS] = {0}, dv[MAX_ARGS][2] = {{0}};
    for (int i = 0; i < MAX_ARGS && L->args[i].name; i++) {
        const arg_spec *a = &L->args[i];
        int64_t v = pj_get(d, o, a->name);
        if (v < 0 && !strcmp(a->name, "normalized_shape")) v = pj_get(d, o, "num_features");
        char val[64];
        if (v < 0 && !a->def) return -bad(L->type, "%s is missing%s", a->name, "");
        if (v < 0) snprintf(val, sizeof val, "%s", a->def);
        else if ((rc = check_arg(d, L->type, a, v, val, sizeof val, dv[i]))) return -rc;
        if (a->kind == PG_LAYER_ARG_SIZE) size[i] = strtoll(val, NULL, 10);
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s\"%s\": %s", i ? ", " : "", a->name, val);
    }
    snprintf(buf + k, sizeof buf - k, "}");
    /* convolutions: groups split both channel counts evenly */
    if (!strncmp(L->type, "conv", 4) && (size[0] % size[6] || size[1] % size[6])) {
        char a[64], b[32];
        snprintf(a, sizeof a, "%lld, %lld", (long long)size[0], (long long)size[1]);
        snprintf(b, sizeof b, "%lld", (long long)size[6]);
        return -bad(L->type, "in_channels and out_channels (%s) must be divisible by groups (%s)",
                    a, b);
    }
    /* the one rule across arguments: heads split d_model evenly */
    if (!strcmp(L->type, "multihead_attention") && size[0] % size[1]) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", (long long)size[0]);
        snprintf(b, sizeof b, "%lld", (long long)size[1]);
        return -bad(L->type, "d_model (%s) must be divisible by n_heads (%s)", a, b);
    }
    /* pooling: padding at most half the kernel (torch's rule, as the layer's constructor) */
    if (L->args[0].kind == PG_LAYER_ARG_DIMS && pj_get(d, o, "padding") >= 0 &&
        (2 * dv[2][0] > dv[0][0] || 2 * dv[2][1] > dv[0][1])) {
        char a[64], b[64];
        int two = L->args[0].hi == 2;
        snprintf(a, sizeof a, two ? "[%lld, %lld]" : "%lld", (long long)dv[2][0],
                 (long long)dv[2][1]);
        snprintf(b, sizeof b, two ? "[%lld, %lld]" : "%lld", (long long)dv[0][0],
                 (long long)dv[0][1]);
        return -bad(L->type, "padding %s must be at most half of kernel_size %s", a, b);
    }
    int64_t n = (int64_t)strlen(buf);
    if (out && cap > 0) {
        int64_t w = n < cap - 1 ? n : cap - 1;
        memcpy(out, buf, (size_t)w);
        out[w] = 0;
    }
    return n;
}

static int64_t check(const pj_doc *d, int custom, char *out, int64_t cap)
{
    int64_t t = d->nodes[0].type == PJ_OBJ ? pj_get(d, 0, "type") : -1;
    if (t < 0 || d->nodes[t].type != PJ_STR) {
        char got[300];
        show(d, 0, got, sizeof got);
        return -pg_fail(PG_STATUS_ERR_VALUE, FN ": expected an object with a 'type' string, got %s",
                        got);
    }
    const char *type = d->pool + d->nodes[t].str;
    if (!strcmp(type, "sequential")) {
        int64_t ls = pj_get(d, 0, "layers");
        if (ls < 0 || d->nodes[ls].type != PJ_ARR || d->nodes[0].count != 2)
            return -pg_fail(PG_STATUS_ERR_VALUE,
                            FN ": a sequential config is {\"type\": \"sequential\", \"layers\": "
                               "[...]}");
        if (out && cap > 2) snprintf(out, (size_t)cap, "{}");
        return 2;
    }
    for (int i = 0; i < N_LAYERS; i++)
        if (!strcmp(type, LAYERS[i].type)) return layer_args(d, 0, &LAYERS[i], out, cap);
    if (custom) return 0;
    char q[300], names[700];
    size_t k = 0;
    squote(type, q, sizeof q);
    for (int i = 0; pg_layer_type_name(i); i++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "",
                              pg_layer_type_name(i));
    return -pg_fail(PG_STATUS_ERR_VALUE,
                    FN ": unknown layer type %s (built-in: %s; register custom ones with "
                       "ag_register_layer)",
                    q, names);
}

/* layer_shape.c's question: object node o's arguments normalized (as pg_layer_config writes
 * them) when it is a built-in layer other than "sequential"; 0 for any other type (none written),
 * -status for arguments the table refuses. */
int64_t pg_layer_builtin_args(const pj_doc *d, int64_t o, char *out, int64_t cap)
{
    int64_t t = d->nodes[o].type == PJ_OBJ ? pj_get(d, o, "type") : -1;
    if (t < 0 || d->nodes[t].type != PJ_STR) return 0;
    for (int i = 0; i < N_LAYERS; i++)
        if (!strcmp(d->pool + d->nodes[t].str, LAYERS[i].type))
            return layer_args(d, o, &LAYERS[i], out, cap);
    return 0;
}

int64_t pg_layer_config(const char *text, int64_t len, int64_t depth, int custom, char *out,
                        int64_t cap)
{
    if (out && cap > 0) out[0] = 0;
    if (!text || len < 0 || depth < 0 || cap < 0)
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_layer_config(): bad arguments");
    if (depth > PG_CONFIG_MAX_DEPTH)
        return -pg_fail(PG_STATUS_ERR_VALUE, FN ": the config is nested deeper than %d levels",
                        PG_CONFIG_MAX_DEPTH);
    pj_doc d;
    char why[200];
    int rc = pj_parse(text, len, NULL, &d, why, sizeof why);
    if (rc == PG_STATUS_ERR_NOMEM) return -pg_fail(rc, FN ": out of memory reading the config");
    if (rc) return -pg_fail(PG_STATUS_ERR_VALUE, FN ": the config is not valid JSON (%s)", why);
    int64_t n = check(&d, custom, out, cap);
    pj_free(&d);
    return n;
}

int pg_layer_register_check(const char *type, int builder_ok)
{
    if (!type || !*type)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_register_layer: type must be a non-empty string");
    char q[300];
    squote(type, q, sizeof q);
    for (int i = 0; pg_layer_type_name(i); i++)
        if (!strcmp(type, pg_layer_type_name(i)))
            return pg_fail(PG_STATUS_ERR_VALUE, "ag_register_layer: %s is a built-in layer type",
                           q);
    if (!builder_ok)
        return pg_fail(PG_STATUS_ERR_ARG,
                       "ag_register_layer: builder must be a function (cfg -> layer)");
    return 0;
}

int pg_layer_arg_fail(int what, const char *type, const char *shown)
{
    char q[300];
    squote(type ? type : "?", q, sizeof q);
    if (!shown) shown = "?";
    if (what == PG_LAYER_BAD_BUILT)
        return pg_fail(PG_STATUS_ERR_ARG,
                       FN ": the builder registered for %s returned a %.200s, not a layer with "
                          "forward()",
                       q, shown);
    if (what == PG_LAYER_BAD_NO_CONFIG)
        return pg_fail(PG_STATUS_ERR_ARG, "ag_to_config: the model has no to_config() (got %.200s)",
                       shown);
    return pg_fail(PG_STATUS_ERR_ARG, "pg_layer_arg_fail(): bad what %d", what);
}
