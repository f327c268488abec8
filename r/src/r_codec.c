/* R glue for the model-file codec (native/codec*.c): convert, call the core, hand back. Errors
 * come back as list(status, message) rather than an R error, so io.R can name the file the way
 * Python does, and nothing here long-jumps while a file or a core buffer is open. */
#include "r_util.h"
#include <limits.h>
#include <string.h>

/* list(status, message, errno): errno is the system's behind a PG_STATUS_ERR_IO, else 0 */
SEXP r_status_list(int rc)
{
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 3)), nm = PROTECT(Rf_allocVector(STRSXP, 3));
    SET_VECTOR_ELT(out, 0, Rf_ScalarInteger(rc));
    SET_VECTOR_ELT(out, 1, Rf_ScalarString(Rf_mkCharCE(pg_last_error(), CE_UTF8)));
    SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(pg_last_errno()));
    SET_STRING_ELT(nm, 0, Rf_mkChar("status"));
    SET_STRING_ELT(nm, 1, Rf_mkChar("message"));
    SET_STRING_ELT(nm, 2, Rf_mkChar("errno"));
    Rf_setAttrib(out, R_NamesSymbol, nm);
    pg_clear_error();
    UNPROTECT(2);
    return out;
}

static const char *utf8_arg(SEXP s, const char *what)
{
    if (!Rf_isString(s) || XLENGTH(s) != 1 || STRING_ELT(s, 0) == NA_STRING)
        r_stopf(PG_STATUS_ERR_ARG, "%s must be a single string", what);
    return Rf_translateCharUTF8(STRING_ELT(s, 0));
}

/* list(tensors = named list of double matrices, each with attr dtype "F32"/"F64",
 * meta = named list of strings), or list(status, message) when the file is refused. */
SEXP R_pg_st_read(SEXP path)
{
    const char *p = utf8_arg(path, "path");
    pg_st_file *f = NULL;
    int rc = pg_st_open(Rf_translateChar(STRING_ELT(path, 0)), &f);
    (void)p;
    if (rc) return r_status_list(rc);
    SEXP out = r_st_contents(f, 1);
    return out;
}

/* f's tensors and metadata as R_pg_st_read hands them out; close: f is closed here (a long
 * jump from an allocation would leak it, so the sizes were bounded by the header checks) */
SEXP r_st_contents(pg_st_file *f, int close)
{
    int rc;
    int64_t n = pg_st_count(f), nm = pg_st_meta_count(f);
    /* everything R needs is allocated before the file is read; an allocation error (a
     * long jump) would leak f, so the sizes were bounded by the header checks */
    SEXP tens = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)n)),
         tn = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
    SEXP dsym = Rf_install("dtype");
    for (int64_t i = 0; i < n; i++) {
        int64_t r = pg_st_rows(f, i), c = pg_st_cols(f, i);
        if (r > INT_MAX || c > INT_MAX) {
            pg_fail(PG_STATUS_ERR_VALUE, "tensor %s is too large for an R matrix",
                    pg_st_name(f, i));
            if (close) pg_st_close(f);
            UNPROTECT(2);
            return r_status_list(PG_STATUS_ERR_VALUE);
        }
        SEXP m = PROTECT(Rf_allocMatrix(REALSXP, (int)r, (int)c));
        rc = pg_st_read_colmajor_f64(f, i, REAL(m), r * c);
        if (rc) {
            if (close) pg_st_close(f);
            UNPROTECT(3);
            return r_status_list(rc);
        }
        Rf_setAttrib(m, dsym, Rf_mkString(pg_st_dtype(f, i) == PG_ST_DTYPE_F64 ? "F64" : "F32"));
        SET_VECTOR_ELT(tens, (R_xlen_t)i, m);
        SET_STRING_ELT(tn, (R_xlen_t)i, Rf_mkCharCE(pg_st_name(f, i), CE_UTF8));
        UNPROTECT(1);
    }
    Rf_setAttrib(tens, R_NamesSymbol, tn);
    SEXP meta = PROTECT(Rf_allocVector(VECSXP, (R_xlen_t)nm)),
         mn = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)nm));
    for (int64_t i = 0; i < nm; i++) {
        SET_VECTOR_ELT(meta, (R_xlen_t)i,
                       Rf_ScalarString(Rf_mkCharCE(pg_st_meta_value(f, i), CE_UTF8)));
        SET_STRING_ELT(mn, (R_xlen_t)i, Rf_mkCharCE(pg_st_meta_key(f, i), CE_UTF8));
    }
    Rf_setAttrib(meta, R_NamesSymbol, mn);
    if (close) pg_st_close(f);
    SEXP out = PROTECT(Rf_allocVector(VECSXP, 2)), on = PROTECT(Rf_allocVector(STRSXP, 2));
    SET_VECTOR_ELT(out, 0, tens);
    SET_VECTOR_ELT(out, 1, meta);
    SET_STRING_ELT(on, 0, Rf_mkChar("tensors"));
    SET_STRING_ELT(on, 1, Rf_mkChar("meta"));
    Rf_setAttrib(out, R_NamesSymbol, on);
    UNPROTECT(6);
    return out;
}

/* One double matrix v as a tensor to write (row-major in an R_alloc buffer, F32 rounded as
 * writeBin(size = 4) does when f64 is 0) */
void r_st_tensor(SEXP v, int f64, const char *name, pg_st_tensor *t)
{
    SEXP dim = Rf_getAttrib(v, R_DimSymbol);
    if (TYPEOF(v) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2 ||
        (double)INTEGER(dim)[0] * INTEGER(dim)[1] != (double)XLENGTH(v))
        Rf_error("ag_save_model(): internal: tensor '%s' is not a double matrix whose length "
                 "matches its dim",
                 name);
    int r = INTEGER(dim)[0], c = INTEGER(dim)[1], dbl = f64;
    const double *x = REAL(v);
    char *buf = R_alloc((size_t)r * (size_t)c + 1, dbl ? 8 : 4);
    for (int a = 0; a < r; a++)
        for (int b = 0; b < c; b++) {
            double y = x[(size_t)b * (size_t)r + (size_t)a];
            size_t k = (size_t)a * (size_t)c + (size_t)b;
            if (dbl) memcpy(buf + 8 * k, &y, 8);
            else {
                float z = (float)y;
                memcpy(buf + 4 * k, &z, 4);
            }
        }
    t->name = name;
    t->dtype = dbl ? PG_ST_DTYPE_F64 : PG_ST_DTYPE_F32;
    t->ndim = 2;
    t->rows = r;
    t->cols = c;
    t->data = buf;
}

/* names: character; f64: logical (file dtype F64, else F32); values: list of double matrices
 * (column-major; written row-major, F32 rounded as writeBin(size = 4) does); keys/vals:
 * character. Returns list(status, message): status 0 = written. */
SEXP R_pg_st_write(SEXP path, SEXP names, SEXP f64, SEXP values, SEXP keys, SEXP vals)
{
    const char *p = utf8_arg(path, "path");
    R_xlen_t n = XLENGTH(values), nm = XLENGTH(keys);
    if (!Rf_isString(names) || XLENGTH(names) != n || !Rf_isLogical(f64) || XLENGTH(f64) != n ||
        !Rf_isString(keys) || !Rf_isString(vals) || XLENGTH(vals) != nm)
        Rf_error("ag_save_model(): internal: bad arguments to the model-file writer");
    pg_st_tensor *t = (pg_st_tensor *)R_alloc((size_t)n + 1, sizeof(pg_st_tensor));
    for (R_xlen_t i = 0; i < n; i++)
        r_st_tensor(VECTOR_ELT(values, i), LOGICAL(f64)[i] == TRUE,
                    Rf_translateCharUTF8(STRING_ELT(names, i)), &t[i]);
    const char **k = (const char **)R_alloc((size_t)nm + 1, sizeof(char *));
    const char **w = (const char **)R_alloc((size_t)nm + 1, sizeof(char *));
    for (R_xlen_t i = 0; i < nm; i++) {
        k[i] = Rf_translateCharUTF8(STRING_ELT(keys, i));
        w[i] = Rf_translateCharUTF8(STRING_ELT(vals, i));
    }
    (void)p;
    return r_status_list(
        pg_st_write(Rf_translateChar(STRING_ELT(path, 0)), t, (int64_t)n, k, w, (int64_t)nm));
}

/* NULL when text (a metadata JSON string) passes the core's checks, else the message. */
SEXP R_pg_json_check(SEXP text, SEXP what, SEXP budget)
{
    const char *s = utf8_arg(text, "text"), *w = utf8_arg(what, "what");
    double b = Rf_asReal(budget);
    int rc = pg_json_check(s, (int64_t)strlen(s), w, b > 0 && b < 9e18 ? (int64_t)b : 0);
    if (!rc) return R_NilValue;
    SEXP out = Rf_ScalarString(Rf_mkCharCE(pg_last_error(), CE_UTF8));
    pg_clear_error();
    return out;
}

/* NULL when the architecture config (text) is backed by the file's tensors (names, and their
 * rows and cols: pg_config_match), else the message. */
SEXP R_pg_config_match(SEXP text, SEXP names, SEXP rows, SEXP cols)
{
    const char *s = utf8_arg(text, "text");
    R_xlen_t n = XLENGTH(names);
    if (!Rf_isString(names) || TYPEOF(rows) != REALSXP || TYPEOF(cols) != REALSXP ||
        XLENGTH(rows) != n || XLENGTH(cols) != n)
        Rf_error("ag_load_model(): internal: bad arguments to the config check");
    const char **nm = (const char **)R_alloc((size_t)n + 1, sizeof(char *));
    int64_t *r = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    int64_t *c = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    for (R_xlen_t i = 0; i < n; i++) {
        nm[i] = Rf_translateCharUTF8(STRING_ELT(names, i));
        r[i] = r_i64(REAL(rows)[i]);
        c[i] = r_i64(REAL(cols)[i]);
    }
    if (!pg_config_match(s, (int64_t)strlen(s), (int64_t)n, nm, r, c)) return R_NilValue;
    SEXP out = Rf_ScalarString(Rf_mkCharCE(pg_last_error(), CE_UTF8));
    pg_clear_error();
    return out;
}
