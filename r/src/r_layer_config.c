/* .Call glue: ag_module_from_config's layer table (the core's layer_config.c). */
#include <string.h>
#include "r_util.h"

/* One layer's config (JSON text, a sequential's layers emptied) at nesting depth: its
 * arguments normalized as JSON text, "" for a registered custom type (custom TRUE), or the
 * core's classed error. */
SEXP R_pg_layer_config(SEXP text, SEXP depth, SEXP custom)
{
    if (!Rf_isString(text) || XLENGTH(text) != 1 || STRING_ELT(text, 0) == NA_STRING)
        r_stopf(PG_STATUS_ERR_ARG, "ag_module_from_config: internal: the config text");
    const char *s = Rf_translateCharUTF8(STRING_ELT(text, 0));
    char out[PG_LAYER_CONFIG_MAX];
    int64_t n = pg_layer_config(s, (int64_t)strlen(s), (int64_t)Rf_asInteger(depth),
                                Rf_asLogical(custom) == TRUE, out, sizeof out);
    if (n < 0) r_fail();
    return Rf_ScalarString(Rf_mkCharCE(out, CE_UTF8));
}

/* the core's built-in layer types ("sequential" first): ag_register_layer refuses them */
SEXP R_pg_layer_types(void) { return r_name_table(pg_layer_type_name); }

static const char *one_string(SEXP x)
{
    return Rf_isString(x) && XLENGTH(x) == 1 && STRING_ELT(x, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(x, 0))
        : NULL;
}

/* ag_register_layer's rules (pg_layer_register_check): type as given, builder_ok TRUE for a
 * function; the core's classed refusal */
SEXP R_pg_layer_register_check(SEXP type, SEXP builder_ok)
{
    r_check(pg_layer_register_check(one_string(type), Rf_asLogical(builder_ok) == TRUE));
    return R_NilValue;
}

/* the config API's refusal what (PG_LAYER_BAD_*) of type's value, shown: R's class of it */
SEXP R_pg_layer_arg_fail(SEXP what, SEXP type, SEXP shown)
{
    r_check(pg_layer_arg_fail(Rf_asInteger(what), one_string(type), one_string(shown)));
    return R_NilValue;
}

/* summary(model): the state c(rows, C, H, W) (-1: unknown, C -1: no image) after the layer
 * whose config is text (JSON; NULL: a layer without one, unknown) (the core's
 * pg_layer_shape). check: NULL, or ag_fit's input check of a built-in layer, list(fn, index,
 * x_rows, x_cols) (pg_layer_shape_check: the classed refusal where its forward would refuse) */
SEXP R_pg_layer_shape(SEXP text, SEXP state, SEXP check)
{
    int64_t st[PG_SHAPE_STATE] = {-1, -1, -1, -1};
    if (!Rf_isReal(state) || XLENGTH(state) != PG_SHAPE_STATE)
        r_stopf(PG_STATUS_ERR_ARG, "summary: internal: the shape state");
    for (int i = 0; i < PG_SHAPE_STATE; i++) st[i] = r_i64(REAL(state)[i]);
    if (Rf_isString(text) && XLENGTH(text) == 1 && STRING_ELT(text, 0) != NA_STRING) {
        const char *s = Rf_translateCharUTF8(STRING_ELT(text, 0));
        if (Rf_isNull(check)) r_check(pg_layer_shape(s, (int64_t)strlen(s), st));
        else
            r_check(pg_layer_shape_check(
                Rf_translateCharUTF8(STRING_ELT(VECTOR_ELT(check, 0), 0)),
                r_i64(Rf_asReal(VECTOR_ELT(check, 1))), r_i64(Rf_asReal(VECTOR_ELT(check, 2))),
                r_i64(Rf_asReal(VECTOR_ELT(check, 3))), "t(x)", s, (int64_t)strlen(s), st));
    } else st[0] = st[1] = st[2] = st[3] = -1;
    SEXP out = PROTECT(Rf_allocVector(REALSXP, PG_SHAPE_STATE));
    for (int i = 0; i < PG_SHAPE_STATE; i++) REAL(out)[i] = (double)st[i];
    UNPROTECT(1);
    return out;
}

/* the output-shape label of a state ("?", "[10 x batch]", "[1024 x batch] (16, 8, 8)") */
SEXP R_pg_layer_shape_label(SEXP state)
{
    int64_t st[PG_SHAPE_STATE];
    if (!Rf_isReal(state) || XLENGTH(state) != PG_SHAPE_STATE)
        r_stopf(PG_STATUS_ERR_ARG, "summary: internal: the shape state");
    for (int i = 0; i < PG_SHAPE_STATE; i++) st[i] = r_i64(REAL(state)[i]);
    char b[160];
    if (pg_layer_shape_label(st, b, sizeof b) < 0) r_fail();
    return Rf_mkString(b);
}

/* the summary table's text (pg_summary_text): the title, the rows' layer names, types, shape
 * labels and parameter counts, the trainable and non-trainable totals */
SEXP R_pg_summary_text(SEXP title, SEXP layer, SEXP type, SEXP shape, SEXP params, SEXP totals)
{
    const R_xlen_t n = XLENGTH(layer);
    if (!Rf_isString(title) || XLENGTH(title) != 1 || !Rf_isString(layer) || !Rf_isString(type) ||
        !Rf_isString(shape) || !Rf_isReal(params) || XLENGTH(type) != n || XLENGTH(shape) != n ||
        XLENGTH(params) != n || !Rf_isReal(totals) || XLENGTH(totals) != 2)
        r_stopf(PG_STATUS_ERR_ARG, "summary: internal: the table's columns");
    const char **cols = (const char **)R_alloc((size_t)(3 * n + 1), sizeof(char *));
    SEXP src[3] = {layer, type, shape};
    for (int c = 0; c < 3; c++)
        for (R_xlen_t i = 0; i < n; i++)
            cols[c * n + i] = STRING_ELT(src[c], i) == NA_STRING
                ? "NA"
                : Rf_translateCharUTF8(STRING_ELT(src[c], i));
    const char *t = Rf_translateCharUTF8(STRING_ELT(title, 0));
    const double *p = REAL(params), tr = REAL(totals)[0], nt = REAL(totals)[1];
    const int64_t len =
        pg_summary_text(t, (int64_t)n, cols, cols + n, cols + 2 * n, p, tr, nt, NULL, 0);
    if (len < 0) r_fail();
    char *text = R_alloc((size_t)len + 1, 1);
    pg_summary_text(t, (int64_t)n, cols, cols + n, cols + 2 * n, p, tr, nt, text, len + 1);
    return Rf_ScalarString(Rf_mkCharCE(text, CE_UTF8));
}

/* a built-in layer printed alone (pg_layer_print_text): kind, its name, the parameter count, the
 * training flag */
SEXP R_pg_layer_print_text(SEXP kind, SEXP name, SEXP params, SEXP training)
{
    if (!Rf_isString(kind) || XLENGTH(kind) != 1 || !Rf_isString(name) || XLENGTH(name) != 1 ||
        !Rf_isReal(params) || XLENGTH(params) != 1)
        r_stopf(PG_STATUS_ERR_ARG, "print: internal: the layer's kind, name and count");
    const char *k = Rf_translateCharUTF8(STRING_ELT(kind, 0));
    const char *nm = Rf_translateCharUTF8(STRING_ELT(name, 0));
    const int lg = Rf_asLogical(training), tr = lg == NA_LOGICAL ? -1 : lg == TRUE; /* NA: none */
    const int64_t len = pg_layer_print_text(k, nm, REAL(params)[0], tr, NULL, 0);
    if (len < 0) r_fail();
    char *text = R_alloc((size_t)len + 1, 1);
    pg_layer_print_text(k, nm, REAL(params)[0], tr, text, len + 1);
    return Rf_ScalarString(Rf_mkCharCE(text, CE_UTF8));
}
