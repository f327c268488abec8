/* summary(model)'s output shapes and table (pg_api_layer_shape.h), once for R and Python: each
 * built-in layer's rule for its output size (torch's formulas for image layers) and the table's
 * layout. A layer type added to layer_config.c's table takes one line in RULES below. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

/* how a layer changes the state (rows; image C, H, W) */
enum {
    KEEP,   /* elementwise (dropout, norms): rows = arg when the layer names its size (the input
               must have it); the image kept while it still spans the rows, as tensors keep it */
    ROWS,   /* rows = arg, no image (linear, embedding, attention) */
    FLAT,   /* rows kept, no image */
    RNN,    /* recurrent: hidden (x2 bidirectional), per step when return_sequences */
    CONV,   /* convolution: input_shape or the input's image; "same" / "valid" padding */
    CONVT,  /* transposed convolution */
    POOL,   /* max / average pooling (stride null: the kernel) */
    GLOBAL, /* global pooling: one value per channel, no image */
    PAD,    /* padding */
    UP      /* upsampling by whole factors */
};

typedef struct {
    const char *type;
    int rule;
    int dims;        /* image layers: 1 (a signal (C, 1, L): only W changes) or 2 */
    const char *arg; /* KEEP, ROWS: the argument holding the output's rows */
} shape_rule;

/* every built-in type of layer_config.c's table (tests/c checks none is missing) */
static const shape_rule RULES[] = {
    {"avg_pool1d", POOL, 1, NULL},
    {"avg_pool2d", POOL, 2, NULL},
    {"batch_norm", KEEP, 0, "num_features"},
    {"conv1d", CONV, 1, NULL},
    {"conv2d", CONV, 2, NULL},
    {"conv_transpose1d", CONVT, 1, NULL},
    {"conv_transpose2d", CONVT, 2, NULL},
    {"dropout", KEEP, 0, NULL},
    {"embedding", ROWS, 0, "dim"},
    {"flatten", FLAT, 0, NULL},
    {"global_avg_pool", GLOBAL, 0, NULL},
    {"global_max_pool", GLOBAL, 0, NULL},
    {"gru", RNN, 0, NULL},
    {"layer_norm", KEEP, 0, "normalized_shape"},
    {"linear", ROWS, 0, "out_features"},
    {"lstm", RNN, 0, NULL},
    {"max_pool1d", POOL, 1, NULL},
    {"max_pool2d", POOL, 2, NULL},
    {"multihead_attention", ROWS, 0, "d_model"},
    {"normalization", KEEP, 0, "features"},
    {"pad1d", PAD, 1, NULL},
    {"pad2d", PAD, 2, NULL},
    {"rnn", RNN, 0, NULL},
    {"upsample1d", UP, 1, NULL},
    {"upsample2d", UP, 2, NULL},
};
#define N_RULES ((int)(sizeof RULES / sizeof RULES[0]))

static void unknown(int64_t *st)
{
    st[0] = -1;
    st[1] = st[2] = st[3] = -1;
}

/* a whole-number argument of the normalized arguments (object node 0 of a), else dflt */
static int64_t num(const pj_doc *a, const char *key, int64_t dflt)
{
    int64_t v = pj_get(a, 0, key);
    return v >= 0 && a->nodes[v].type == PJ_NUM ? (int64_t)pj_number(a, &a->nodes[v]) : dflt;
}

static int flag(const pj_doc *a, const char *key)
{
    int64_t v = pj_get(a, 0, key);
    return v >= 0 && a->nodes[v].type == PJ_TRUE;
}

/* argument key per axis (H, W): a number (both), a list of one (both) or two (H, W), dflt when
 * null or absent; 1-D layers take the first value. 1: the string "same", 2: another string. */
static int axes(const pj_doc *a, const char *key, int dims, int64_t dflt, int64_t v[2])
{
    v[0] = v[1] = dflt;
    int64_t n = pj_get(a, 0, key);
    if (n < 0) return 0;
    const pj_node *x = &a->nodes[n];
    if (x->type == PJ_STR) return strcmp(a->pool + x->str, "same") ? 2 : 1;
    if (x->type == PJ_NUM) v[0] = v[1] = (int64_t)pj_number(a, x);
    if (x->type == PJ_ARR && x->count >= 1) {
        const pj_node *f = &a->nodes[x->first];
        v[0] = v[1] = (int64_t)pj_number(a, f);
        if (x->count >= 2 && dims == 2) v[1] = (int64_t)pj_number(a, &a->nodes[f->next]);
    }
    return 0;
}

/* the image the layer reads: its input_shape when it has one, else the input's; 0 when none
 * (or a 1-D layer given an image with H != 1, which it refuses) */
static int in_image(const pj_doc *a, const int64_t *st, int dims, int64_t img[3])
{
    int64_t s = pj_get(a, 0, "input_shape");
    if (s >= 0 && a->nodes[s].type == PJ_ARR && a->nodes[s].count >= 2) {
        int64_t v[3] = {1, 1, 1}, k = 0;
        for (int64_t c = a->nodes[s].first; c >= 0 && k < 3; c = a->nodes[c].next)
            v[k++] = (int64_t)pj_number(a, &a->nodes[c]);
        img[0] = v[0], img[1] = k == 3 ? v[1] : 1, img[2] = v[k - 1];
    } else {
        if (st[1] <= 0) return 0;
        memcpy(img, st + 1, 3 * sizeof *img);
    }
    return dims != 1 || img[1] == 1;
}

/* one axis of n: convolution / pooling (torch's formula, ceil_mode off), transposed
 * convolution; -1 where the size would not be >= 1 or does not fit */
static int64_t window(int rule, int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op)
{
    int64_t span, t, o;
    if (k < 1 || s < 1 || d < 1 || p < 0 || __builtin_mul_overflow(d, k - 1, &span)) return -1;
    if (rule == CONVT) {
        if (__builtin_mul_overflow(n - 1, s, &t) || __builtin_add_overflow(t, span + op + 1, &o))
            return -1;
        o -= 2 * p;
        return o >= 1 ? o : -1;
    }
    t = n + 2 * p - span - 1;
    if (t < 0) return -1;
    return t / s + 1;
}

/* an image layer's output image from img (C, H, W); 0 when it has none */
static int image_out(const shape_rule *r, const pj_doc *a, int64_t img[3])
{
    int64_t k[2], s[2], p[2], d[2] = {1, 1}, op[2] = {0, 0}, v[2];
    int64_t pad[4] = {0, 0, 0, 0};    /* left, right, top, bottom */
    int first = r->dims == 1 ? 1 : 0; /* 1-D: W alone */
    switch (r->rule) {
    case PAD:
        if (axes(a, "padding", 2, 0, v)) return 0;
        pad[0] = pad[1] = v[1], pad[2] = pad[3] = v[0];
        if (r->dims == 1) pad[2] = pad[3] = 0;
        int64_t n = pj_get(a, 0, "padding");
        if (n >= 0 && a->nodes[n].type == PJ_ARR && a->nodes[n].count == 4) {
            int64_t i = 0;
            for (int64_t c = a->nodes[n].first; c >= 0; c = a->nodes[c].next)
                pad[i++] = (int64_t)pj_number(a, &a->nodes[c]);
        }
        if (r->dims == 1 && n >= 0 && a->nodes[n].type == PJ_ARR && a->nodes[n].count == 2) {
            pad[0] = (int64_t)pj_number(a, &a->nodes[a->nodes[n].first]);
            pad[1] = (int64_t)pj_number(a, &a->nodes[a->nodes[a->nodes[n].first].next]);
        }
        img[1] += pad[2] + pad[3]; /* negative pads crop */
        img[2] += pad[0] + pad[1];
        return img[1] >= 1 && img[2] >= 1;
    case UP:
        axes(a, "scale_factor", r->dims, 1, v);
        for (int ax = first; ax < 2; ax++)
            if (__builtin_mul_overflow(img[1 + ax], v[ax], &img[1 + ax])) return 0;
        return 1;
    default: break;
    }
    axes(a, "kernel_size", r->dims, 1, k);
    axes(a, "stride", r->dims, -1, s);
    int how = axes(a, "padding", r->dims, 0, p);
    if (r->rule != POOL) axes(a, "dilation", r->dims, 1, d);
    if (r->rule == CONVT) axes(a, "output_padding", r->dims, 0, op);
    for (int ax = first; ax < 2; ax++) {
        if (s[ax] < 0) s[ax] = k[ax]; /* pooling's stride null: the kernel */
        if (how == 1) continue;       /* "same": the input's size */
        if (how == 2) p[ax] = 0;      /* "valid" */
        img[1 + ax] = window(r->rule, img[1 + ax], k[ax], s[ax], p[ax], d[ax], op[ax]);
        if (img[1 + ax] < 1) return 0;
    }
    if (r->rule != POOL) img[0] = num(a, "out_channels", -1);
    return img[0] >= 1;
}

/* the rows of an image: C * H * W, -1 when it does not fit */
static int64_t image_rows(const int64_t img[3])
{
    int64_t hw, chw;
    if (__builtin_mul_overflow(img[1], img[2], &hw) || __builtin_mul_overflow(img[0], hw, &chw))
        return -1;
    return chw;
}

/* layer r with its normalized arguments a on state st */
static void apply_rule(const shape_rule *r, const pj_doc *a, int64_t *st)
{
    int64_t img[3];
    switch (r->rule) {
    case KEEP:
        if (r->arg) st[0] = num(a, r->arg, -1);
        if (st[0] < 0 || st[1] < 1 || image_rows(st + 1) != st[0]) st[1] = st[2] = st[3] = -1;
        return;
    case ROWS:
        st[0] = num(a, r->arg, -1);
        st[1] = st[2] = st[3] = -1;
        return;
    case FLAT: st[1] = st[2] = st[3] = -1; return;
    case RNN: {
        int64_t in = num(a, "input_size", 1), out = num(a, "hidden_size", -1);
        if (flag(a, "bidirectional")) out *= 2;
        if (flag(a, "return_sequences")) /* [input_size * T, batch] -> [out * T, batch] */
            out = st[0] >= 0 && st[0] % in == 0 ? st[0] / in * out : -1;
        unknown(st);
        st[0] = out;
        return;
    }
    case GLOBAL:
        if (!in_image(a, st, 0, img)) break;
        unknown(st);
        st[0] = img[0];
        return;
    default:
        if (!in_image(a, st, r->dims, img) || !image_out(r, a, img)) break;
        st[0] = image_rows(img);
        if (st[0] < 0) break;
        memcpy(st + 1, img, sizeof img);
        return;
    }
    unknown(st);
}

/* a built-in layer's rule and its normalized arguments (*a, freed by the caller) from object
 * node o of d; NULL (nothing to free) for a custom type or arguments the table refuses */
static const shape_rule *leaf(const pj_doc *d, int64_t o, pj_doc *a)
{
    int64_t t = d->nodes[o].type == PJ_OBJ ? pj_get(d, o, "type") : -1;
    char args[PG_LAYER_CONFIG_MAX], why[200];
    int64_t n = t >= 0 ? pg_layer_builtin_args(d, o, args, sizeof args) : -1;
    if (n <= 0 || d->nodes[t].type != PJ_STR) return NULL;
    const char *type = d->pool + d->nodes[t].str;
    int i = 0;
    while (i < N_RULES && strcmp(type, RULES[i].type)) i++;
    if (i == N_RULES || pj_parse(args, n, NULL, a, why, sizeof why)) return NULL;
    return &RULES[i];
}

/* ag_fit's input check (pg_layer_shape_check): fn, the transpose spelling, the layer's position
 * and x's rows and samples */
typedef struct {
    const char *fn, *tx;
    int64_t index, x_rows, x_cols;
} shape_check;

/* the rows per sample layer r (arguments a) takes: exact, or a multiple (*mult) of it; 0 when
 * its forward takes any (or the rule does not say). how: what the number comes from. */
static int64_t takes(const shape_rule *r, const pj_doc *a, int *mult, char *how, size_t cap)
{
    int64_t img[3], st[4] = {-1, -1, -1, -1};
    *mult = 0;
    how[0] = 0;
    if (!strcmp(r->type, "linear")) return num(a, "in_features", 0);
    if (!strcmp(r->type, "multihead_attention") || (r->rule == KEEP && r->arg))
        return num(a, r->arg, 0); /* d_model; the norms' sizes */
    if (r->rule == RNN) {
        int64_t in = num(a, "input_size", 0);
        snprintf(how, cap, " (input_size %lld per time step)", (long long)in);
        *mult = 1;
        return in;
    }
    if ((r->rule == CONV || r->rule == CONVT) && pj_get(a, 0, "input_shape") >= 0 &&
        in_image(a, st, r->dims, img)) { /* its forward reads input_shape, not a tag */
        if (r->dims == 1)
            snprintf(how, cap, " (input_shape C %lld, L %lld)", (long long)img[0],
                     (long long)img[2]);
        else
            snprintf(how, cap, " (input_shape C %lld, H %lld, W %lld)", (long long)img[0],
                     (long long)img[1], (long long)img[2]);
        return image_rows(img) > 0 ? image_rows(img) : 0;
    }
    return 0;
}

/* 0 when layer r (arguments a) takes got rows per sample, else its refusal (c's texts) */
static int refuse(const shape_check *c, const shape_rule *r, const pj_doc *a, int64_t got)
{
    char how[96];
    int mult;
    int64_t need = takes(r, a, &mult, how, sizeof how);
    if (need <= 0 || (mult ? got != 0 && got % need == 0 : got == need)) return 0;
    const char *m = mult ? "a multiple of " : "", *s = need == 1 && !mult ? "" : "s";
    char hint[200] = "; x is [features, n], one column per sample";
    if (c->index == 1 && !mult && c->tx && c->x_cols == need) /* x.T would fit: as pg_fit_targets */
        snprintf(hint, sizeof hint,
                 "; x looks row-major (%lld rows, one per sample): pyggmlr data are [features, "
                 "samples] with one column per sample, so pass %s",
                 (long long)got, c->tx);
    if (c->index == 1)
        return pg_fail(PG_STATUS_ERR_SHAPE,
                       "%s: x has %lld row%s but the model's first layer (%s) takes %s%lld "
                       "input%s per sample%s%s",
                       c->fn, (long long)got, got == 1 ? "" : "s", r->type, m, (long long)need, s,
                       how, hint);
    return pg_fail(PG_STATUS_ERR_SHAPE,
                   "%s: the model's layer %lld (%s) takes %s%lld input%s per sample%s but the "
                   "layers before it give %lld (x has %lld row%s)",
                   c->fn, (long long)c->index, r->type, m, (long long)need, s, how, (long long)got,
                   (long long)c->x_rows, c->x_rows == 1 ? "" : "s");
}

/* object node o of d (a layer's config) on st; sequentials walk their layers (unchecked: the
 * front ends walk their own). c: NULL, or the check of a built-in layer's rows first */
static int apply(const pj_doc *d, int64_t o, int64_t *st, int depth, const shape_check *c)
{
    int64_t t = d->nodes[o].type == PJ_OBJ ? pj_get(d, o, "type") : -1;
    if (t >= 0 && d->nodes[t].type == PJ_STR && !strcmp(d->pool + d->nodes[t].str, "sequential")) {
        int64_t ls = pj_get(d, o, "layers");
        if (ls < 0 || d->nodes[ls].type != PJ_ARR || depth >= PG_CONFIG_MAX_DEPTH) {
            unknown(st);
            return 0;
        }
        for (int64_t e = d->nodes[ls].first; e >= 0; e = d->nodes[e].next)
            apply(d, e, st, depth + 1, NULL);
        return 0;
    }
    pj_doc a;
    const shape_rule *r = leaf(d, o, &a);
    if (!r) {
        unknown(st); /* a custom type, or arguments the table refuses */
        return 0;
    }
    int rc = c && st[0] >= 0 ? refuse(c, r, &a, st[0]) : 0;
    if (!rc) apply_rule(r, &a, st);
    pj_free(&a);
    return rc;
}

/* text (one layer's config) on state, checked by c when given; a refusal leaves state as it was */
static int shape_text(const char *text, int64_t len, int64_t *state, const shape_check *c)
{
    pj_doc d;
    char why[200];
    if (pj_parse(text, len, NULL, &d, why, sizeof why)) {
        unknown(state);
        return 0;
    }
    int64_t st[PG_SHAPE_STATE];
    memcpy(st, state, sizeof st);
    if (st[0] < 0 || st[1] < 1 || st[2] < 1 || st[3] < 1 || image_rows(st + 1) != st[0])
        st[1] = st[2] = st[3] = -1; /* an image that does not span the rows: none */
    int rc = apply(&d, 0, st, 0, c);
    pj_free(&d);
    if (!rc) memcpy(state, st, sizeof st);
    return rc;
}

int pg_layer_shape_check(const char *fn, int64_t index, int64_t x_rows, int64_t x_cols,
                         const char *tx, const char *text, int64_t len, int64_t *state)
{
    if (!fn || !text || len < 0 || !state || index < 1)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_layer_shape_check(): bad arguments");
    const shape_check c = {fn, tx, index, x_rows, x_cols};
    return shape_text(text, len, state, &c);
}

int pg_layer_shape_known(const char *type)
{
    for (int i = 0; i < N_RULES; i++)
        if (!strcmp(type, RULES[i].type)) return 1;
    return 0;
}

int pg_layer_shape(const char *text, int64_t len, int64_t *state)
{
    if (!text || len < 0 || !state)
        return pg_fail(PG_STATUS_ERR_ARG, "pg_layer_shape(): bad arguments");
    return shape_text(text, len, state, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * the table */

typedef struct {
    char *buf;
    int64_t cap, len; /* len counts the whole text; bytes written only while they fit */
} text_out;

static void put(text_out *o, const char *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++, o->len++)
        if (o->buf && o->len < o->cap - 1) o->buf[o->len] = s[i];
}
static void puts_(text_out *o, const char *s) { put(o, s, (int64_t)strlen(s)); }
static void rep(text_out *o, char c, int64_t n)
{
    for (int64_t i = 0; i < n; i++) put(o, &c, 1);
}

/* UTF-8 characters of s (its bytes that do not continue a character) */
static int64_t width(const char *s)
{
    int64_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

int64_t pg_layer_shape_label(const int64_t *st, char *buf, int64_t cap)
{
    if (!st || cap < 0 || (cap > 0 && !buf))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_layer_shape_label(): bad arguments");
    char s[160];
    if (st[0] < 0) snprintf(s, sizeof s, "?");
    else if (st[1] < 1) snprintf(s, sizeof s, "[%lld x batch]", (long long)st[0]);
    else
        snprintf(s, sizeof s, "[%lld x batch] (%lld, %lld, %lld)", (long long)st[0],
                 (long long)st[1], (long long)st[2], (long long)st[3]);
    text_out o = {buf, cap, 0};
    puts_(&o, s);
    if (buf && cap > 0) buf[o.len < cap ? o.len : cap - 1] = 0;
    return o.len;
}

/* a count as R's format(v, big.mark = ",", scientific = FALSE): 1,234,567; NA */
static void count_text(double v, char *out, size_t cap)
{
    char d[64];
    if (!isfinite(v)) {
        snprintf(out, cap, "NA");
        return;
    }
    snprintf(d, sizeof d, "%.0f", fabs(v));
    size_t n = strlen(d), k = 0;
    if (v < 0 && k < cap - 1) out[k++] = '-';
    for (size_t i = 0; i < n && k < cap - 1; i++) {
        if (i && (n - i) % 3 == 0 && k < cap - 1) out[k++] = ',';
        if (k < cap - 1) out[k++] = d[i];
    }
    out[k] = 0;
}

/* one row: label left in w1, shape left in w2, count right in w3, two spaces apart */
static void row(text_out *o, const char *lab, const char *shp, const char *par, int64_t w[3])
{
    puts_(o, lab);
    rep(o, ' ', w[0] - width(lab) + 2);
    puts_(o, shp);
    rep(o, ' ', w[1] - width(shp) + 2 + w[2] - width(par));
    puts_(o, par);
    puts_(o, "\n");
}

int64_t pg_summary_text(const char *title, int64_t n, const char *const *layer,
                        const char *const *type, const char *const *shape, const double *params,
                        double trainable, double non_trainable, char *buf, int64_t cap)
{
    if (!title || n < 0 || (n > 0 && (!layer || !type || !shape || !params)) || cap < 0 ||
        (cap > 0 && !buf))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_summary_text(): bad arguments");
    for (int64_t i = 0; i < n; i++)
        if (!layer[i] || !type[i] || !shape[i])
            return -pg_fail(PG_STATUS_ERR_ARG, "pg_summary_text(): row %lld has a NULL string",
                            (long long)i + 1);
    int64_t w[3] = {width("Layer (type)"), width("Output shape"), width("Param #")};
    char num[64], no[32];
    for (int64_t i = 0; i < n; i++) {
        snprintf(no, sizeof no, "%lld ", (long long)i + 1);
        int64_t lw = width(no) + width(layer[i]) + width(type[i]) + 3; /* " (" and ")" */
        count_text(params[i], num, sizeof num);
        if (lw > w[0]) w[0] = lw;
        if (width(shape[i]) > w[1]) w[1] = width(shape[i]);
        if (width(num) > w[2]) w[2] = width(num);
    }
    text_out o = {buf, cap, 0};
    puts_(&o, title);
    puts_(&o, "\n");
    const int64_t line = w[0] + w[1] + w[2] + 4;
    rep(&o, '_', line);
    puts_(&o, "\n");
    row(&o, "Layer (type)", "Output shape", "Param #", w);
    rep(&o, '=', line);
    puts_(&o, "\n");
    for (int64_t i = 0; i < n; i++) {
        /* the label "<i> <layer> (<type>)" written in pieces: no bound on a layer's name */
        snprintf(no, sizeof no, "%lld ", (long long)i + 1);
        int64_t lw = width(no) + width(layer[i]) + width(type[i]) + 3;
        puts_(&o, no);
        puts_(&o, layer[i]);
        puts_(&o, " (");
        puts_(&o, type[i]);
        puts_(&o, ")");
        rep(&o, ' ', w[0] - lw + 2);
        count_text(params[i], num, sizeof num);
        puts_(&o, shape[i]);
        rep(&o, ' ', w[1] - width(shape[i]) + 2 + w[2] - width(num));
        puts_(&o, num);
        puts_(&o, "\n");
    }
    rep(&o, '=', line);
    puts_(&o, "\n");
    count_text(trainable + non_trainable, num, sizeof num);
    puts_(&o, "Total params: ");
    puts_(&o, num);
    count_text(trainable, num, sizeof num);
    puts_(&o, "\nTrainable params: ");
    puts_(&o, num);
    count_text(non_trainable, num, sizeof num);
    puts_(&o, "\nNon-trainable params: ");
    puts_(&o, num);
    puts_(&o, "\n");
    if (buf && cap > 0) buf[o.len < cap ? o.len : cap - 1] = 0;
    return o.len;
}

int64_t pg_layer_print_text(const char *kind, const char *name, double params, int training,
                            char *buf, int64_t cap)
{
    if (!kind || !name || cap < 0 || (cap > 0 && !buf))
        return -pg_fail(PG_STATUS_ERR_ARG, "pg_layer_print_text(): bad arguments");
    char num[64];
    if (isfinite(params)) snprintf(num, sizeof num, "%.0f", params);
    else snprintf(num, sizeof num, "NA");
    text_out o = {buf, cap, 0};
    puts_(&o, "ag_");
    puts_(&o, kind);
    puts_(&o, ": ");
    puts_(&o, name); /* in pieces: no bound on a layer's name */
    puts_(&o, " (");
    puts_(&o, num);
    if (training < 0) puts_(&o, " parameters)"); /* no mode: ag_linear, as R's list layer */
    else puts_(&o, training ? " parameters, train mode)" : " parameters, eval mode)");
    if (buf && cap > 0) buf[o.len < cap ? o.len : cap - 1] = 0;
    return o.len;
}
