/* pg_config_match (pg_api_codec.h): an architecture config against a file's tensors, before a
 * loader builds anything. Each built-in layer's tensors, named as both front ends name them
 * (pyggmlr/nn/layers.py, r/R/layers.R: a layer's own names, prefixed layer<i>_ for the i-th
 * layer, 1-based, of each enclosing sequential), must be in the file with the config's shape. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

typedef struct {
    const pj_doc *d;
    int64_t n;
    const char **names;
    const int64_t *rows, *cols;
} M;

/* a size field: a whole number in [1, 2^31 - 1] (3e7 and 30000000.0 count, as R reads them);
 * -1 for anything else, which the front end's builder refuses before allocating */
static int64_t size_field(const pj_doc *d, int64_t o, const char *key)
{
    int64_t c = pj_get(d, o, key);
    if (c < 0 || d->nodes[c].type != PJ_NUM) return -1;
    double v = pj_number(d, &d->nodes[c]);
    if (!(v >= 1 && v <= 2147483647.0) || v != floor(v)) return -1;
    return (int64_t)v;
}

/* a flag: 1 (true, or missing / null: the builders' default), 0 (false), -1 (anything else) */
static int flag_field(const pj_doc *d, int64_t o, const char *key)
{
    int64_t c = pj_get(d, o, key);
    if (c < 0 || d->nodes[c].type == PJ_NULL || d->nodes[c].type == PJ_TRUE) return 1;
    return d->nodes[c].type == PJ_FALSE ? 0 : -1;
}

/* tensor prefix + nm of rows x cols must be in the file; optional: only when present */
static int need(const M *m, const char *prefix, const char *type, const char *nm, int64_t r,
                int64_t c, int optional)
{
    char full[1400], who[1400];
    snprintf(full, sizeof full, "%s%s", prefix, nm);
    size_t pl = strlen(prefix);
    if (pl) snprintf(who, sizeof who, "layer '%.*s' (%s)", (int)(pl - 1), prefix, type);
    else snprintf(who, sizeof who, "the %s layer", type);
    for (int64_t i = 0; i < m->n; i++) {
        if (!m->names[i] || strcmp(m->names[i], full)) continue;
        if (m->rows[i] == r && m->cols[i] == c) return 0;
        return pg_fail(PG_STATUS_ERR_VALUE,
                       "architecture config: %s needs tensor '%s' [%lldx%lld] (%.0f values), the "
                       "file holds [%lldx%lld]",
                       who, full, (long long)r, (long long)c, (double)r * (double)c,
                       (long long)m->rows[i], (long long)m->cols[i]);
    }
    if (optional) return 0;
    return pg_fail(PG_STATUS_ERR_VALUE,
                   "architecture config: %s needs tensor '%s' [%lldx%lld] (%.0f values), which the "
                   "file does not hold",
                   who, full, (long long)r, (long long)c, (double)r * (double)c);
}

/* ag_lstm / ag_gru / ag_rnn: per layer l and direction, torch's four tensors (W_ih_l0,
 * W_hh_l0, b_ih_l0, b_hh_l0, then the _reverse ones) */
static int rnn_layer(const M *m, const pj_doc *d, int64_t o, const char *prefix, const char *type)
{
    int64_t F = size_field(d, o, "input_size"), H = size_field(d, o, "hidden_size");
    int64_t L = pj_get(d, o, "num_layers") >= 0 ? size_field(d, o, "num_layers") : 1;
    int64_t bd = pj_get(d, o, "bidirectional"), G = 1; /* gates: lstm 4, gru 3, rnn 1 */
    if (!strcmp(type, "lstm")) G = 4;
    else if (!strcmp(type, "gru")) G = 3;
    int D = bd >= 0 && d->nodes[bd].type == PJ_TRUE ? 2 : 1, bias = flag_field(d, o, "bias"),
        rc = 0;
    if (F < 1 || H < 1 || L < 1 || L > 1000) return 0;
    for (int64_t l = 0; l < L && !rc; l++)
        for (int k = 0; k < D && !rc; k++) {
            char nm[4][64];
            const char *sx = k ? "_reverse" : "";
            snprintf(nm[0], 64, "W_ih_l%lld%s", (long long)l, sx);
            snprintf(nm[1], 64, "W_hh_l%lld%s", (long long)l, sx);
            snprintf(nm[2], 64, "b_ih_l%lld%s", (long long)l, sx);
            snprintf(nm[3], 64, "b_hh_l%lld%s", (long long)l, sx);
            if (!(rc = need(m, prefix, type, nm[0], G * H, l ? D * H : F, 0)) &&
                !(rc = need(m, prefix, type, nm[1], G * H, H, 0)) && bias)
                if (!(rc = need(m, prefix, type, nm[2], G * H, 1, bias < 0)))
                    rc = need(m, prefix, type, nm[3], G * H, 1, bias < 0);
        }
    return rc;
}

/* a convolution's kernel_size as kH * kW: a number k (conv2d: k * k), a list [kW] or [kH, kW];
 * -1 for anything else (the builder's error) */
static int64_t kernel_field(const pj_doc *d, int64_t o, int dims)
{
    int64_t c = pj_get(d, o, "kernel_size");
    if (c < 0) return -1;
    if (d->nodes[c].type == PJ_NUM) {
        int64_t k = size_field(d, o, "kernel_size");
        return k < 0 ? -1 : dims == 2 ? k * k : k;
    }
    if (d->nodes[c].type != PJ_ARR) return -1;
    int64_t p = 1, n = 0;
    for (int64_t e = d->nodes[c].first; e >= 0; e = d->nodes[e].next, n++) {
        double v = d->nodes[e].type == PJ_NUM ? pj_number(d, &d->nodes[e]) : -1;
        if (!(v >= 1 && v <= 65535) || v != floor(v)) return -1;
        p *= (int64_t)v;
    }
    return n >= 1 && n <= dims ? (n == 1 && dims == 2 ? p * p : p) : -1;
}

static int layer(const M *m, int64_t o, const char *prefix, int depth)
{
    const pj_doc *d = m->d;
    if (depth > PG_CONFIG_MAX_DEPTH)
        return pg_fail(PG_STATUS_ERR_VALUE, "architecture config is nested deeper than %d levels",
                       PG_CONFIG_MAX_DEPTH);
    int64_t tn = d->nodes[o].type == PJ_OBJ ? pj_get(d, o, "type") : -1;
    if (tn < 0 || d->nodes[tn].type != PJ_STR) return 0; /* the builder's error */
    const char *type = d->pool + d->nodes[tn].str;
    int rc = 0;
    if (!strcmp(type, "sequential")) {
        int64_t ls = pj_get(d, o, "layers"), i = 1;
        if (ls < 0 || d->nodes[ls].type != PJ_ARR) return 0;
        for (int64_t c = d->nodes[ls].first; c >= 0 && !rc; c = d->nodes[c].next, i++) {
            char sub[1400];
            if (snprintf(sub, sizeof sub, "%slayer%lld_", prefix, (long long)i) >= (int)sizeof sub)
                return pg_fail(PG_STATUS_ERR_VALUE, "architecture config: layer names too long");
            rc = layer(m, c, sub, depth + 1);
        }
    } else if (!strcmp(type, "linear")) {
        int64_t in = size_field(d, o, "in_features"), out = size_field(d, o, "out_features");
        if (in > 0 && out > 0)
            if (!(rc = need(m, prefix, type, "W", out, in, 0)))
                rc = need(m, prefix, type, "b", out, 1, 0);
    } else if (!strcmp(type, "batch_norm")) {
        int64_t f = size_field(d, o, "num_features");
        static const char *nm[] = {"gamma", "beta", "running_mean", "running_var"};
        for (int k = 0; k < 4 && f > 0 && !rc; k++) rc = need(m, prefix, type, nm[k], f, 1, 0);
    } else if (!strcmp(type, "layer_norm")) {
        int64_t f = pj_get(d, o, "normalized_shape") >= 0 ? size_field(d, o, "normalized_shape")
                                                          : size_field(d, o, "num_features");
        int aff = flag_field(d, o, "elementwise_affine");
        if (f > 0 && aff)
            if (!(rc = need(m, prefix, type, "gamma", f, 1, aff < 0)))
                rc = need(m, prefix, type, "beta", f, 1, aff < 0);
    } else if (!strcmp(type, "embedding")) {
        int64_t v = size_field(d, o, "vocab_size"), dim = size_field(d, o, "dim");
        if (v > 0 && dim > 0) rc = need(m, prefix, type, "weight", dim, v, 0);
    } else if (!strcmp(type, "normalization")) {
        int64_t f = size_field(d, o, "features");
        if (f > 0 && !(rc = need(m, prefix, type, "mean", f, 1, 0)))
            rc = need(m, prefix, type, "variance", f, 1, 0);
    } else if (!strcmp(type, "lstm") || !strcmp(type, "gru") || !strcmp(type, "rnn")) {
        rc = rnn_layer(m, d, o, prefix, type);
    } else if (!strcmp(type, "conv1d") || !strcmp(type, "conv2d")) {
        int64_t in = size_field(d, o, "in_channels"), out = size_field(d, o, "out_channels");
        int64_t g = pj_get(d, o, "groups") >= 0 ? size_field(d, o, "groups") : 1;
        int64_t kk = kernel_field(d, o, type[4] == '1' ? 1 : 2);
        int bias = flag_field(d, o, "bias");
        if (in > 0 && out > 0 && g > 0 && kk > 0 && in % g == 0)
            if (!(rc = need(m, prefix, type, "weight", out, in / g * kk, 0)) && bias)
                rc = need(m, prefix, type, "bias", out, 1, bias < 0);
    } else if (!strcmp(type, "conv_transpose1d") || !strcmp(type, "conv_transpose2d")) {
        /* weight [C_in, (C_out/g)*kH*kW] */
        int64_t in = size_field(d, o, "in_channels"), out = size_field(d, o, "out_channels");
        int64_t g = pj_get(d, o, "groups") >= 0 ? size_field(d, o, "groups") : 1;
        int64_t kk = kernel_field(d, o, type[14] == '1' ? 1 : 2);
        int bias = flag_field(d, o, "bias");
        if (in > 0 && out > 0 && g > 0 && kk > 0 && out % g == 0)
            if (!(rc = need(m, prefix, type, "weight", in, out / g * kk, 0)) && bias)
                rc = need(m, prefix, type, "bias", out, 1, bias < 0);
    } else if (!strcmp(type, "multihead_attention")) {
        int64_t dm = size_field(d, o, "d_model");
        int bias = flag_field(d, o, "bias");
        static const char *nm[] = {"W_q", "W_k", "W_v", "W_o"};
        for (int k = 0; k < 4 && dm > 0 && !rc; k++) rc = need(m, prefix, type, nm[k], dm, dm, 0);
        if (!rc && dm > 0 && bias) rc = need(m, prefix, type, "b_o", dm, 1, bias < 0);
    }
    return rc; /* dropout holds no tensor; other types are the front end's */
}

int pg_config_match(const char *text, int64_t len, int64_t n, const char **names,
                    const int64_t *rows, const int64_t *cols)
{
    if (!text || len < 0 || n < 0 || (n && (!names || !rows || !cols)))
        return pg_fail(PG_STATUS_ERR_ARG, "pg_config_match(): NULL text or tensor list");
    char why[480];
    pj_doc d;
    int rc = pj_parse(text, len, NULL, &d, why, sizeof why);
    if (rc == PG_STATUS_ERR_NOMEM) return pg_fail(rc, "out of memory reading the config");
    if (rc) return pg_fail(PG_STATUS_ERR_VALUE, "architecture config is not valid JSON (%s)", why);
    M m = {&d, n, names, rows, cols};
    rc = layer(&m, 0, "", 0);
    pj_free(&d);
    return rc;
}
