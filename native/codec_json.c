/* A strict, bounded JSON parser for model-file headers and their metadata strings. Two passes
 * over the text: the first checks the syntax and the limits and counts the values without
 * allocating; the second fills exactly that many nodes (and a string pool no larger than the
 * text), so a hostile header can never make it allocate more than its own size allows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pg.h"
#include "codec_internal.h"

const pj_limits pj_default_limits = {100LL * 1024 * 1024, PG_JSON_MAX_DEPTH, 64LL * 1024 * 1024,
                                     1LL << 21};

typedef struct {
    const unsigned char *s;
    int64_t n, i;
    const pj_limits *lim;
    pj_doc *d;        /* NULL in the counting pass */
    int64_t nn;       /* nodes so far */
    int64_t pp;       /* pool bytes so far */
    int64_t *scratch; /* member indices, for the duplicate-key check */
    char *why;
    size_t cap;
} P;

static int perr(P *p, const char *what)
{
    snprintf(p->why, p->cap, "%s at byte %lld", what, (long long)p->i);
    return -1;
}

static void ws(P *p)
{
    while (p->i < p->n &&
           (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int c = s[k], h;
        if (c >= '0' && c <= '9') h = c - '0';
        else if (c >= 'a' && c <= 'f') h = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') h = c - 'A' + 10;
        else return -1;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

static void put(P *p, char **o, int c)
{
    if (p->d) *(*o)++ = (char)c;
    p->pp++;
}

/* A string at p->i (the opening quote). Decoded into the pool when building; *off, *len. */
static int str(P *p, int64_t *off, int64_t *len)
{
    char *o = p->d ? p->d->pool + p->pp : NULL;
    int64_t start = p->pp;
    p->i++;
    for (;;) {
        if (p->i >= p->n) return perr(p, "unterminated string");
        unsigned c = p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c < 0x20) return perr(p, "control character in a string");
        if (c != '\\') {
            put(p, &o, (int)c);
            p->i++;
        } else {
            if (p->i + 1 >= p->n) return perr(p, "unterminated string");
            unsigned e = p->s[p->i + 1];
            const char *simple = strchr("\"\\/bfnrt", (int)e);
            if (e && simple) {
                static const char rep[] = "\"\\/\b\f\n\r\t";
                put(p, &o, rep[simple - "\"\\/bfnrt"]);
                p->i += 2;
            } else if (e == 'u') {
                unsigned cp, lo;
                if (p->i + 6 > p->n || hex4(p->s + p->i + 2, &cp)) return perr(p, "bad \\u escape");
                p->i += 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return perr(p, "lone surrogate in \\u escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (p->i + 6 > p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' ||
                        hex4(p->s + p->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return perr(p, "lone surrogate in \\u escape");
                    p->i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0) return perr(p, "\\u0000 in a string");
                if (cp < 0x80) put(p, &o, (int)cp);
                else if (cp < 0x800) {
                    put(p, &o, 0xC0 | (cp >> 6));
                    put(p, &o, 0x80 | (cp & 63));
                } else if (cp < 0x10000) {
                    put(p, &o, 0xE0 | (cp >> 12));
                    put(p, &o, 0x80 | ((cp >> 6) & 63));
                    put(p, &o, 0x80 | (cp & 63));
                } else {
                    put(p, &o, 0xF0 | (cp >> 18));
                    put(p, &o, 0x80 | ((cp >> 12) & 63));
                    put(p, &o, 0x80 | ((cp >> 6) & 63));
                    put(p, &o, 0x80 | (cp & 63));
                }
            } else return perr(p, "bad escape in a string");
        }
        if (p->pp - start > p->lim->max_string) return perr(p, "string longer than the limit");
    }
    *off = start;
    *len = p->pp - start;
    put(p, &o, 0);
    return 0;
}

static int64_t value(P *p, int64_t depth);

static int cmp_key(const void *a, const void *b, const pj_doc *d)
{
    const pj_node *x = &d->nodes[*(const int64_t *)a], *y = &d->nodes[*(const int64_t *)b];
    int64_t m = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(d->pool + x->kstr, d->pool + y->kstr, (size_t)m);
    return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static _Thread_local const pj_doc *sort_doc;
static int cmp_key_q(const void *a, const void *b) { return cmp_key(a, b, sort_doc); }

/* Duplicate keys among object o's members (building pass only). */
static int dup_keys(P *p, int64_t o)
{
    pj_doc *d = p->d;
    int64_t k = 0;
    for (int64_t c = d->nodes[o].first; c >= 0; c = d->nodes[c].next) p->scratch[k++] = c;
    sort_doc = d;
    qsort(p->scratch, (size_t)k, sizeof(int64_t), cmp_key_q);
    for (int64_t j = 1; j < k; j++)
        if (!cmp_key(&p->scratch[j - 1], &p->scratch[j], d)) {
            char q[400];
            pj_qname(d->pool + d->nodes[p->scratch[j]].kstr, q, sizeof q);
            snprintf(p->why, p->cap, "duplicate key %s", q);
            return -1;
        }
    return 0;
}

static int64_t container(P *p, int64_t depth, int64_t self, int is_obj)
{
    if (depth + 1 > p->lim->max_depth) {
        char m[64];
        snprintf(m, sizeof m, "nested deeper than %lld", (long long)p->lim->max_depth);
        return perr(p, m);
    }
    int close = is_obj ? '}' : ']';
    int64_t count = 0, prev = -1;
    p->i++;
    ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        goto done;
    }
    for (;;) {
        int64_t koff = 0, klen = 0, child;
        ws(p);
        if (is_obj) {
            if (p->i >= p->n || p->s[p->i] != '"') return perr(p, "expected a string key");
            if (str(p, &koff, &klen)) return -1;
            ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return perr(p, "expected ':'");
            p->i++;
            ws(p);
        }
        if ((child = value(p, depth + 1)) < 0) return -1;
        if (p->d) {
            p->d->nodes[child].kstr = koff;
            p->d->nodes[child].klen = klen;
            if (prev < 0) p->d->nodes[self].first = child;
            else p->d->nodes[prev].next = child;
        }
        prev = child;
        count++;
        ws(p);
        if (p->i >= p->n) return perr(p, "unexpected end");
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->s[p->i] == close) {
            p->i++;
            break;
        }
        return perr(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
done:
    if (p->d) {
        p->d->nodes[self].count = count;
        if (is_obj && dup_keys(p, self)) return -1;
    }
    return self;
}

static int64_t number(P *p, pj_node *nd)
{
    int64_t b = p->i, v = 0;
    int neg = 0, big = 0, is_int = 1;
    if (p->s[p->i] == '-') {
        neg = 1;
        p->i++;
    }
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return perr(p, "bad number");
    if (p->s[p->i] == '0') p->i++;
    else
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            int dg = p->s[p->i++] - '0';
            if (v > (INT64_MAX - dg) / 10) big = 1;
            else v = v * 10 + dg;
        }
    if (p->i < p->n && p->s[p->i] == '.') {
        is_int = 0;
        p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return perr(p, "bad number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        is_int = 0;
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9') return perr(p, "bad number");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    }
    if (p->i - b > 400) return perr(p, "number longer than 400 characters");
    if (nd) {
        nd->is_int = is_int;
        nd->big = big;
        nd->ival = neg ? -v : v;
    }
    return 0;
}

static int64_t value(P *p, int64_t depth)
{
    if (p->nn >= p->lim->max_nodes) {
        char m[64];
        snprintf(m, sizeof m, "more than %lld values", (long long)p->lim->max_nodes);
        return perr(p, m);
    }
    int64_t self = p->nn++;
    pj_node tmp, *nd = p->d ? &p->d->nodes[self] : &tmp;
    memset(nd, 0, sizeof *nd);
    nd->first = nd->next = -1;
    nd->start = p->i;
    if (p->i >= p->n) return perr(p, "unexpected end");
    int c = p->s[p->i];
    int64_t r = self;
    if (c == '{' || c == '[') {
        nd->type = c == '{' ? PJ_OBJ : PJ_ARR;
        r = container(p, depth, self, c == '{');
    } else if (c == '"') {
        nd->type = PJ_STR;
        int64_t off, len;
        if (str(p, &off, &len)) return -1;
        nd = p->d ? &p->d->nodes[self] : &tmp;
        nd->str = off;
        nd->len = len;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        nd->type = PJ_NUM;
        if (number(p, p->d ? nd : NULL)) return -1;
    } else {
        static const char *lit[] = {"null", "false", "true"};
        int k;
        for (k = 0; k < 3; k++) {
            size_t L = strlen(lit[k]);
            if (p->n - p->i >= (int64_t)L && !memcmp(p->s + p->i, lit[k], L)) {
                p->i += (int64_t)L;
                break;
            }
        }
        if (k == 3) return perr(p, "unexpected character");
        nd->type = k == 0 ? PJ_NULL : k == 1 ? PJ_FALSE : PJ_TRUE;
    }
    if (r < 0) return -1;
    if (p->d) p->d->nodes[self].end = p->i;
    return self;
}

int pj_utf8_ok(const unsigned char *s, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        int k;
        unsigned cp, min;
        if ((c & 0xE0) == 0xC0) {
            k = 1;
            cp = c & 0x1F;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2;
            cp = c & 0x0F;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3;
            cp = c & 0x07;
            min = 0x10000;
        } else return 0;
        if (n - i <= k) return 0;
        for (int j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k + 1;
    }
    return 1;
}

int pj_parse(const char *text, int64_t n, const pj_limits *lim, pj_doc *doc, char *why,
             size_t why_cap)
{
    memset(doc, 0, sizeof *doc);
    if (!lim) lim = &pj_default_limits;
    P p = {(const unsigned char *)text, n, 0, lim, NULL, 0, 0, NULL, why, why_cap};
    if (n > lim->max_bytes) {
        snprintf(why, why_cap, "longer than %lld bytes", (long long)lim->max_bytes);
        return PG_STATUS_ERR_VALUE;
    }
    if (!pj_utf8_ok(p.s, n)) {
        snprintf(why, why_cap, "not UTF-8 text");
        return PG_STATUS_ERR_VALUE;
    }
    for (int pass = 0; pass < 2; pass++) {
        p.i = 0;
        p.nn = 0;
        p.pp = 0;
        ws(&p);
        int64_t r = value(&p, 0);
        if (r >= 0) {
            ws(&p);
            if (p.i != n) r = perr(&p, "extra data after the value");
        }
        if (r < 0) {
            free(p.scratch);
            pj_free(doc);
            return PG_STATUS_ERR_VALUE;
        }
        if (pass == 0) { /* sizes known and within the limits: allocate exactly */
            doc->nodes = malloc((size_t)p.nn * sizeof(pj_node));
            doc->pool = malloc((size_t)p.pp + 1);
            p.scratch = malloc((size_t)p.nn * sizeof(int64_t));
            if (!doc->nodes || !doc->pool || !p.scratch) {
                free(p.scratch);
                pj_free(doc);
                snprintf(why, why_cap, "out of memory");
                return PG_STATUS_ERR_NOMEM;
            }
            p.d = doc;
        }
    }
    free(p.scratch);
    doc->text = text;
    doc->n = n;
    doc->n_nodes = p.nn;
    return 0;
}

void pj_free(pj_doc *doc)
{
    free(doc->nodes);
    free(doc->pool);
    doc->nodes = NULL;
    doc->pool = NULL;
}

double pj_number(const pj_doc *d, const pj_node *x)
{
    if (x->is_int && !x->big) return (double)x->ival;
    char buf[448];
    int64_t L = x->end - x->start;
    if (L >= (int64_t)sizeof buf) return 1e308;
    memcpy(buf, d->text + x->start, (size_t)L);
    buf[L] = 0;
    return strtod(buf, NULL);
}

int64_t pj_get(const pj_doc *d, int64_t o, const char *key)
{
    size_t L = strlen(key);
    for (int64_t c = d->nodes[o].first; c >= 0; c = d->nodes[c].next)
        if ((size_t)d->nodes[c].klen == L && !memcmp(d->pool + d->nodes[c].kstr, key, L)) return c;
    return -1;
}

int64_t pj_quote(char *out, int64_t cap, int64_t pos, const char *s, int64_t n)
{
    static const char hx[] = "0123456789abcdef";
    char tmp[12];
#define EMIT(str_, len_)                                                                           \
    do {                                                                                           \
        int64_t l_ = (len_);                                                                       \
        if (pos + l_ <= cap) memcpy(out + pos, (str_), (size_t)l_);                                \
        pos += l_;                                                                                 \
    } while (0)
    EMIT("\"", 1);
    const unsigned char *u = (const unsigned char *)s;
    for (int64_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            EMIT((const char *)u + i, 1);
            i++;
            continue;
        }
        const char *esc = c == '"' ? "\\\""
            : c == '\\'            ? "\\\\"
            : c == '\n'            ? "\\n"
            : c == '\r'            ? "\\r"
            : c == '\t'            ? "\\t"
            : c == '\b'            ? "\\b"
            : c == '\f'            ? "\\f"
                                   : NULL;
        if (esc) {
            EMIT(esc, 2);
            i++;
            continue;
        }
        unsigned cp = c;
        int k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : 3;
        if (k) cp = c & (0x3F >> k);
        for (int j = 1; j <= k && i + j < n; j++) cp = (cp << 6) | (u[i + j] & 0x3F);
        i += k + 1;
        unsigned units[2] = {cp, 0};
        int nu = 1;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            units[0] = 0xD800 + (cp >> 10);
            units[1] = 0xDC00 + (cp & 0x3FF);
            nu = 2;
        }
        for (int j = 0; j < nu; j++) {
            tmp[0] = '\\';
            tmp[1] = 'u';
            for (int h = 0; h < 4; h++) tmp[2 + h] = hx[(units[j] >> (12 - 4 * h)) & 15];
            EMIT(tmp, 6);
        }
    }
    EMIT("\"", 1);
#undef EMIT
    return pos;
}

char *pj_quoted(const char *s)
{
    int64_t n = s ? (int64_t)strlen(s) : 0, need = s ? pj_quote(NULL, 0, 0, s, n) : 4;
    char *q = malloc((size_t)need + 1);
    if (q && s) pj_quote(q, need, 0, s, n), q[need] = '\0';
    else if (q) memcpy(q, "null", 5); /* JSON's null, unquoted */
    return q;
}

void pj_snippet(const pj_doc *d, int64_t node, int max, char *out, size_t cap)
{
    const pj_node *nd = &d->nodes[node];
    int64_t L = nd->end - nd->start;
    int cut = L > max;
    if (cut) L = max;
    if ((size_t)L + 4 > cap) L = (int64_t)cap - 4;
    memcpy(out, d->text + nd->start, (size_t)L);
    strcpy(out + L, cut ? "..." : "");
}

void pj_qname(const char *s, char *out, size_t cap)
{
    int64_t n = (int64_t)strlen(s), need;
    if (n > 60) n = 60;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* whole characters only */
    need = pj_quote(out, (int64_t)cap - 1, 0, s, n);
    out[need < (int64_t)cap - 1 ? need : (int64_t)cap - 1] = 0;
}
