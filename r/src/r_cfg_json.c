/* .Call glue: a layer's config (an R list) as JSON for the core's layer table, in C. jsonlite
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
    int bad; /* a value R's writer must handle */
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
            else put_str(b, Rf_translateCharUTF8(STRING_ELT(lev, k - 1)));
        } else {
            char s[16];
            snprintf(s, sizeof s, "%d", INTEGER(v)[i]);
            put(b, s, (int64_t)strlen(s));
        }
        break;
    case REALSXP: put_num(b, REAL(v)[i]); break;
    case STRSXP:
        if (STRING_ELT(v, i) == NA_STRING) put(b, "null", 4);
        else put_str(b, Rf_translateCharUTF8(STRING_ELT(v, i)));
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
                else put_str(b, Rf_translateCharUTF8(STRING_ELT(nm, i)));
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

/* cfg: a list with names throughout -> its JSON text, or NULL where R's writer is needed */
SEXP R_pg_cfg_json(SEXP cfg)
{
    if (TYPEOF(cfg) != VECSXP || Rf_getAttrib(cfg, R_NamesSymbol) == R_NilValue) return R_NilValue;
    jbuf b = {NULL, 0, 0, 0};
    value(&b, cfg, 0);
    if (b.bad || b.n > INT32_MAX) return R_NilValue;
    return Rf_ScalarString(Rf_mkCharLenCE(b.s, (int)b.n, CE_UTF8));
}
