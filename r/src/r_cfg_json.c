/* .Call glue: R values as JSON, in C. R_pg_to_json: what a model file holds (config, extra,
 * callback states) by the rules R's jsonlite writer had (auto_unbox, NA / NaN / Inf as null,
 * doubles as the shortest of 15-17 digits, "json" texts verbatim), refused in the core's words
 * (pg_mf_json_refuse). R_pg_cfg_json: a layer's config for the core's layer table. jsonlite
 * took about 0.2 ms a value, so ag_fit's class-count check (the model's output rows, from the
 * configs) cost more than a small model's whole fit. Plain values only: anything else gives
 * NULL and R's own writer (io_config.R) takes over. The text is Python's (and was R's):
 * `"key": value` at the top, values compact (`[1,2]`), non-ASCII as \u escapes, as the core's
 * messages quote a bad value as written. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "r_util.h"
#include "codec_internal.h"

typedef struct {
    char *s;
    int64_t n, cap;
    int bad;      /* cfg: a value R's writer must handle; file: 1 + the PG_MF_JSON_* refusal */
    char cls[96]; /* file: the class of a value JSON cannot hold */
} jbuf;

static void put(jbuf *b, const char *s, int64_t n)
{
    if (b->bad) return;
    if (b->n + n + 1 > b->cap) { /* R_alloc: freed when the .Call returns or fails */
        int64_t cap = 2 * (b->n + n + 1) + 256;
        char *p = R_alloc((size_t)cap, 1);
        if (b->n) memcpy(p, b->s, (size_t)b->n);
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, (size_t)n);
    b->n += n;
}

static void put_str(jbuf *b, const char *s)
{
    int64_t need = pj_quote(NULL, 0, 0, s, (int64_t)strlen(s));
    char *q = R_alloc((size_t)need + 1, 1);
    pj_quote(q, need, 0, s, (int64_t)strlen(s));
    put(b, q, need);
}

/* a CHARSXP as UTF-8; a "bytes" string has no text (translating it is an unclassed R error):
 * refused as a value JSON cannot hold */
static const char *utf8(jbuf *b, SEXP c)
{
    if (Rf_getCharCE(c) != CE_BYTES) return Rf_translateCharUTF8(c);
    if (!b->bad) snprintf(b->cls, sizeof b->cls, "string in \"bytes\" encoding");
    if (!b->bad) b->bad = 1 + PG_MF_JSON_NOT_JSON;
    return "";
}

/* a finite double as the shortest of 15-17 significant digits that reads back the same (R's
 * .json_num); NA, NaN and Inf are null, as R's writer and Python give them */
static void put_num(jbuf *b, double x)
{
    char s[40];
    if (!isfinite(x)) snprintf(s, sizeof s, "null");
    else
        for (int d = 15; d <= 17; d++) {
            snprintf(s, sizeof s, "%.*g", d, x);
            if (strtod(s, NULL) == x) break;
        }
    put(b, s, (int64_t)strlen(s));
}

static void value(jbuf *b, SEXP v, int depth);

/* element i of an atomic vector */
static void elem(jbuf *b, SEXP v, R_xlen_t i, int factor)
{
    switch (TYPEOF(v)) {
    case LGLSXP:
        if (LOGICAL(v)[i] == NA_LOGICAL) put(b, "null", 4);
        else if (LOGICAL(v)[i]) put(b, "true", 4);
        else put(b, "false", 5);
        break;
    case INTSXP:
        if (INTEGER(v)[i] == NA_INTEGER) put(b, "null", 4);
        else if (factor) {
            SEXP lev = Rf_getAttrib(v, R_LevelsSymbol);
            int k = INTEGER(v)[i];
            if (!Rf_isString(lev) || k < 1 || k > XLENGTH(lev)) b->bad = 1;
            else put_str(b, utf8(b, STRING_ELT(lev, k - 1)));
        } else {
            char s[16];
            snprintf(s, sizeof s, "%d", INTEGER(v)[i]);
            put(b, s, (int64_t)strlen(s));
        }
        break;
    case REALSXP: put_num(b, REAL(v)[i]); break;
    case STRSXP:
        if (STRING_ELT(v, i) == NA_STRING) put(b, "null", 4);
        else put_str(b, utf8(b, STRING_ELT(v, i)));
        break;
    default: b->bad = 1;
    }
}

/* attributes other than names (and a factor's) mean a class R's writer knows better */
static int plain(SEXP v, int *factor)
{
    *factor = Rf_isFactor(v);
    for (SEXP a = ATTRIB(v); a != R_NilValue; a = CDR(a)) {
        SEXP tag = TAG(a);
        if (tag == R_NamesSymbol) continue;
        if (*factor && (tag == R_LevelsSymbol || tag == R_ClassSymbol)) continue;
        return 0;
    }
    return 1;
}

static void value(jbuf *b, SEXP v, int depth)
{
    int factor;
    if (b->bad) return;
    if (v == R_NilValue) {
        put(b, "null", 4);
        return;
    }
    const int t = TYPEOF(v);
    if ((t != VECSXP && t != LGLSXP && t != INTSXP && t != REALSXP && t != STRSXP) ||
        !plain(v, &factor) || depth > 8) {
        b->bad = 1;
        return;
    }
    SEXP nm = Rf_getAttrib(v, R_NamesSymbol);
    R_xlen_t n = XLENGTH(v);
    if (t == VECSXP) {
        int obj = nm != R_NilValue;
        put(b, obj ? "{" : "[", 1);
        for (R_xlen_t i = 0; i < n && !b->bad; i++) {
            if (i) put(b, ", ", depth ? 1 : 2); /* R's and Python's spacing: see the header */
            if (obj) {
                if (STRING_ELT(nm, i) == NA_STRING || !*CHAR(STRING_ELT(nm, i))) b->bad = 1;
                else put_str(b, utf8(b, STRING_ELT(nm, i)));
                put(b, ": ", depth ? 1 : 2);
            }
            value(b, VECTOR_ELT(v, i), depth + 1);
        }
        put(b, obj ? "}" : "]", 1);
        return;
    }
    if (nm != R_NilValue && n != 1) { /* a named vector is an object in jsonlite */
        b->bad = 1;
        return;
    }
    if (n == 1) { /* auto_unbox */
        elem(b, v, 0, factor);
        return;
    }
    put(b, "[", 1);
    for (R_xlen_t i = 0; i < n && !b->bad; i++) {
        if (i) put(b, ",", 1);
        elem(b, v, i, factor);
    }
    put(b, "]", 1);
}

/* v as a call's argument that evaluates to v itself (a symbol or call is not evaluated) */
static SEXP quoted(SEXP v) { return Rf_lang2(Rf_install("quote"), v); }

/* file values: lists to depth PG_JSON_MAX_DEPTH, atomic vectors as jsonlite wrote them */
static void fvalue(jbuf *b, SEXP v, int depth)
{
    if (b->bad) return;
    const int t = TYPEOF(v), factor = Rf_isFactor(v);
    if (v == R_NilValue) return put(b, "null", 4);
    const R_xlen_t n = Rf_isVector(v) ? XLENGTH(v) : 0;
    if (t == STRSXP && Rf_inherits(v, "json") && n == 1) /* verbatim */
        return put(b, CHAR(STRING_ELT(v, 0)), (int64_t)strlen(CHAR(STRING_ELT(v, 0))));
    SEXP nm = Rf_getAttrib(v, R_NamesSymbol), dim = Rf_getAttrib(v, R_DimSymbol);
    int num = (t == INTSXP || t == REALSXP) && !factor;
    if (num && OBJECT(v)) /* a Date, a difftime: not numeric to R */
        num = Rf_asLogical(Rf_eval(PROTECT(Rf_lang2(Rf_install("is.numeric"), v)), R_BaseEnv)),
        UNPROTECT(1);
    if ((t == VECSXP && Rf_inherits(v, "data.frame")) ||
        (t != VECSXP && t != LGLSXP && t != STRSXP && !num && !factor)) {
        SEXP cl = PROTECT(Rf_eval(PROTECT(Rf_lang2(Rf_install("class"), quoted(v))), R_BaseEnv));
        snprintf(b->cls, sizeof b->cls, "%s", CHAR(STRING_ELT(cl, 0)));
        UNPROTECT(2);
        b->bad = 1 + PG_MF_JSON_NOT_JSON;
        return;
    }
    if (t == VECSXP && depth >= PG_JSON_MAX_DEPTH) {
        b->bad = 1 + PG_MF_JSON_DEEP;
        return;
    }
    int obj = nm != R_NilValue && (t == VECSXP || (t == REALSXP && n != 1));
    if (t != VECSXP && (n == 1 || (t == REALSXP && !obj))) { /* auto_unbox; doubles flat */
        if (n == 1) return elem(b, v, 0, factor);
    } else if (t != VECSXP && t != REALSXP && Rf_length(dim) == 2 && n) { /* row-major rows */
        int r = INTEGER(dim)[0], c = INTEGER(dim)[1];
        put(b, "[", 1);
        for (int i = 0; i < r; i++) {
            put(b, i ? ",[" : "[", i ? 2 : 1);
            for (int j = 0; j < c; j++) {
                if (j) put(b, ",", 1);
                elem(b, v, (R_xlen_t)j * r + i, factor);
            }
            put(b, "]", 1);
        }
        return put(b, "]", 1);
    }
    put(b, obj ? "{" : "[", 1);
    for (R_xlen_t i = 0; i < n && !b->bad; i++) {
        if (i) put(b, ",", 1);
        if (obj) { /* jsonlite's keys: NA as "NA", an empty name as its position */
            char pos[24];
            const char *k = STRING_ELT(nm, i) == NA_STRING ? "NA" : utf8(b, STRING_ELT(nm, i));
            if (!*k) snprintf(pos, sizeof pos, "%lld", (long long)i + 1), k = pos;
            put_str(b, k);
            put(b, ":", 1);
        }
        if (t == VECSXP) fvalue(b, VECTOR_ELT(v, i), depth + 1);
        else elem(b, v, i, factor);
    }
    put(b, obj ? "}" : "]", 1);
}

/* v as a model file's JSON text; what names it in a refusal (a status list then) */
SEXP R_pg_to_json(SEXP v, SEXP what)
{
    jbuf b = {NULL, 0, 0, 0, ""};
    fvalue(&b, v, 0);
    if (b.bad) {
        char why[160];
        snprintf(why, sizeof why, "a %s cannot be written as JSON", b.cls);
        return r_status_list(pg_mf_json_refuse(b.bad - 1, Rf_translateCharUTF8(STRING_ELT(what, 0)),
                                               b.bad - 1 == PG_MF_JSON_DEEP ? NULL : why));
    }
    if (b.n > INT32_MAX) Rf_error("ag_save_model(): the JSON text is too long");
    return Rf_ScalarString(Rf_mkCharLenCE(b.s ? b.s : "", (int)b.n, CE_UTF8));
}

/* TRUE when v nests lists deeper than k levels (R's .nested_over) */
static int nested_over(SEXP v, int k)
{
    if (TYPEOF(v) != VECSXP) return 0;
    if (k <= 0) return 1;
    for (R_xlen_t i = 0; i < XLENGTH(v); i++)
        if (nested_over(VECTOR_ELT(v, i), k - 1)) return 1;
    return 0;
}

static void append(jbuf *b, const jbuf *e) { put(b, e->s ? e->s : "", e->n); }

/* cfg: a list with names (the caller checked) -> `{"key": value, ...}`. A value the plain writer
 * leaves is written as a file's JSON is, else, where JSON cannot hold it or it nests deeper than
 * 8 lists, as a string describing it (show(v), R's .arg_show), which the core's table then
 * refuses by name. */
SEXP R_pg_cfg_json(SEXP cfg, SEXP show)
{
    SEXP nm = Rf_getAttrib(cfg, R_NamesSymbol);
    jbuf b = {NULL, 0, 0, 0, ""};
    put(&b, "{", 1);
    for (R_xlen_t i = 0; i < XLENGTH(cfg); i++) {
        SEXP v = VECTOR_ELT(cfg, i);
        jbuf e = {NULL, 0, 0, 0, ""}, f = {NULL, 0, 0, 0, ""};
        if (i) put(&b, ", ", 2);
        put_str(&b, nm == R_NilValue ? "" : utf8(&b, STRING_ELT(nm, i)));
        put(&b, ": ", 2);
        value(&e, v, 1);
        if (!e.bad) {
            append(&b, &e);
            continue;
        }
        if (nested_over(v, 8)) {
            put_str(&b, "a list nested deeper than 8 levels");
            continue;
        }
        fvalue(&f, v, 0);
        if (!f.bad) {
            append(&b, &f);
            continue;
        }
        SEXP s = PROTECT(Rf_eval(PROTECT(Rf_lang2(show, quoted(v))), R_GlobalEnv));
        put_str(&b, Rf_isString(s) && XLENGTH(s) ? utf8(&b, STRING_ELT(s, 0)) : "?");
        UNPROTECT(2);
    }
    put(&b, "}", 1);
    if (b.bad) /* only a key in "bytes" encoding stops the writer itself */
        r_stopf(PG_STATUS_ERR_ARG,
                "ag_module_from_config: a config key is a string in \"bytes\" "
                "encoding, which JSON cannot hold");
    if (b.n > INT32_MAX) Rf_error("ag_module_from_config: the config is too long");
    return Rf_ScalarString(Rf_mkCharLenCE(b.s, (int)b.n, CE_UTF8));
}
