/* pyggmlr C core: the bounded JSON parser shared by the model-file codec (codec_json.c, codec.c,
 * codec_write.c). Not part of the cdef'd API. */
#ifndef PG_CODEC_INTERNAL_H
#define PG_CODEC_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

enum { PJ_NULL, PJ_FALSE, PJ_TRUE, PJ_NUM, PJ_STR, PJ_ARR, PJ_OBJ };

/* One value, in document (pre-)order; a container's children follow it, linked by `next`. */
typedef struct {
    int type;
    int is_int, big; /* PJ_NUM: an integer token; big: it does not fit int64 */
    int64_t ival;
    int64_t start, end;         /* the value's bytes in the text: [start, end) */
    int64_t str, len;           /* PJ_STR: decoded string (NUL-terminated) at pool + str */
    int64_t kstr, klen;         /* member of an object: its key, decoded, at pool + kstr */
    int64_t count, first, next; /* containers: children; next sibling (-1 = none) */
} pj_node;

/* Limits, all checked while counting, before anything is allocated. */
typedef struct {
    int64_t max_bytes, max_depth, max_string, max_nodes;
} pj_limits;

typedef struct {
    const char *text;
    int64_t n;
    pj_node *nodes;
    int64_t n_nodes;
    char *pool;
} pj_doc;

extern const pj_limits pj_default_limits;

/* Parses text[0..n) (strict JSON: no NaN, no comments, no duplicate keys, no \u0000, one value
 * with surrounding whitespace). 0 on success; else a status, with a short reason in why. */
int pj_parse(const char *text, int64_t n, const pj_limits *lim, pj_doc *doc, char *why,
             size_t why_cap);
void pj_free(pj_doc *doc);
/* A PJ_NUM node's value as a double (its text through strtod when it is not a small integer). */
double pj_number(const pj_doc *d, const pj_node *x);
/* The member of object node o called key, or -1. */
int64_t pj_get(const pj_doc *d, int64_t o, const char *key);
/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or NUL bytes). */
int pj_utf8_ok(const unsigned char *s, int64_t n);
/* Appends s[0..n) as a JSON string (ASCII only: \uXXXX for the rest, as Python's json.dumps) to
 * out[*pos..cap); returns the length it needs (written only while it fits). */
int64_t pj_quote(char *out, int64_t cap, int64_t pos, const char *s, int64_t n);
/* The one quoting helper of the JSON the core writes (metadata, model info, checkpoints): s
 * quoted as pj_quote does, NUL-terminated, in a malloc'd copy the caller frees; NULL s: "null";
 * NULL when out of memory. */
char *pj_quoted(const char *s);
/* A short printable copy of a value's source text (for messages), truncated to max chars. */
void pj_snippet(const pj_doc *d, int64_t node, int max, char *out, size_t cap);
/* Same for a string: quoted, truncated. */
void pj_qname(const char *s, char *out, size_t cap);

/* layer_config.c for layer_shape.c: object node o's arguments normalized when it is a built-in
 * layer (not "sequential"), as pg_layer_config writes them; 0 for other types, -status when the
 * table refuses them. */
int64_t pg_layer_builtin_args(const pj_doc *d, int64_t o, char *out, int64_t cap);
/* layer_shape.c: 1 when the built-in type has an output-shape rule (tests/c: every one has) */
int pg_layer_shape_known(const char *type);

#endif
