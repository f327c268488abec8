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
SEXP R_pg_layer_types(void)
{
    int n = 0;
    while (pg_layer_type_name(n)) n++;
    SEXP out = PROTECT(Rf_allocVector(STRSXP, n));
    for (int i = 0; i < n; i++) SET_STRING_ELT(out, i, Rf_mkChar(pg_layer_type_name(i)));
    UNPROTECT(1);
    return out;
}
