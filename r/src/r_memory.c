/* .Call glue: the allocator's counters beyond R_pg_memory_stats (the same calls as Python's
 * memory.py), the kernels' thread count and ag_estimate_training_memory's shapes rule. */
#include <math.h>
#include "r_util.h"

const char *const r_mem_categories[PG_MEM_CATEGORY_COUNT] = {[PG_MEM_CATEGORY_PARAM] = "param",
                                                             [PG_MEM_CATEGORY_GRAD] = "grad",
                                                             [PG_MEM_CATEGORY_OPTIM] = "optim",
                                                             [PG_MEM_CATEGORY_SAVED] = "saved",
                                                             [PG_MEM_CATEGORY_OTHER] = "other"};

/* peak bytes per category, named as R's ag_memory_stats() reports them */
SEXP R_pg_memory_category_peaks(void)
{
    int64_t v[PG_MEM_CATEGORY_COUNT] = {0};
    r_check(pg_memory_category_peaks(v, PG_MEM_CATEGORY_COUNT));
    return r_named_counts(v, r_mem_categories, PG_MEM_CATEGORY_COUNT);
}

SEXP R_pg_memory_cached(void) { return Rf_ScalarReal((double)pg_memory_cached()); }

SEXP R_pg_memory_trim(void)
{
    double n = (double)pg_memory_cached();
    pg_memory_trim();
    return Rf_ScalarReal(n);
}

SEXP R_pg_memory_reset_peak(void)
{
    pg_memory_reset_peak();
    return R_NilValue;
}

SEXP R_pg_get_threads(void) { return Rf_ScalarInteger(pg_get_threads()); }

/* ag_estimate_training_memory's parameter count from `shapes`, a list of dimension vectors
 * (numeric; anything else is reported as not numeric), by the core's rule and texts
 * (pg_estimate_params); NULL or a non-list is the empty list */
SEXP R_pg_estimate_params(SEXP shapes)
{
    const R_xlen_t n = TYPEOF(shapes) == VECSXP ? XLENGTH(shapes) : 0;
    int64_t *lens = (int64_t *)R_alloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    R_xlen_t total = 0;
    for (R_xlen_t i = 0; i < n; i++) {
        SEXP s = VECTOR_ELT(shapes, i);
        const int num = (TYPEOF(s) == REALSXP || TYPEOF(s) == INTSXP) && !Rf_isFactor(s);
        lens[i] = num ? (int64_t)XLENGTH(s) : -1;
        if (num) total += XLENGTH(s);
    }
    double *dims = (double *)R_alloc((size_t)(total > 0 ? total : 1), sizeof(double));
    R_xlen_t at = 0;
    for (R_xlen_t i = 0; i < n; i++) {
        SEXP s = VECTOR_ELT(shapes, i);
        for (R_xlen_t j = 0; j < (R_xlen_t)(lens[i] > 0 ? lens[i] : 0); j++)
            dims[at++] = TYPEOF(s) == REALSXP ? REAL(s)[j]
                : INTEGER(s)[j] == NA_INTEGER ? NAN
                                              : (double)INTEGER(s)[j];
    }
    double params = 0;
    r_check(pg_estimate_params(dims, lens, (int64_t)n, &params));
    return Rf_ScalarReal(params);
}

/* ag_estimate_training_memory's optimizer name (the core's match.arg rule and text) */
SEXP R_pg_mem_optim_parse(SEXP name, SEXP shown)
{
    int optim = -1;
    const char *n = Rf_isString(name) && XLENGTH(name) == 1 && STRING_ELT(name, 0) != NA_STRING
        ? Rf_translateCharUTF8(STRING_ELT(name, 0))
        : NULL;
    r_check(pg_mem_optim_parse(n, Rf_translateCharUTF8(STRING_ELT(shown, 0)), &optim));
    return Rf_ScalarInteger(optim);
}

/* ag_estimate_training_memory(model =)'s dtype codes (-1: none): the core's rule and text */
SEXP R_pg_mem_model_dtypes(SEXP codes)
{
    if (TYPEOF(codes) != INTSXP || XLENGTH(codes) != 4) Rf_error("R_pg_mem_model_dtypes: 4 ints");
    const int *c = INTEGER(codes);
    r_check(pg_mem_model_dtypes(c[0], c[1], c[2], c[3]));
    return R_NilValue;
}

/* ag_estimate_training_memory(model =)'s y against the output under the default loss_fn: the
 * core's rule and text (dims: out rows, out cols, y rows, y cols) */
SEXP R_pg_mem_target_shape(SEXP dims)
{
    if (TYPEOF(dims) != REALSXP || XLENGTH(dims) != 4) Rf_error("R_pg_mem_target_shape: 4 doubles");
    const double *d = REAL(dims);
    r_check(pg_mem_target_shape((int64_t)d[0], (int64_t)d[1], (int64_t)d[2], (int64_t)d[3]));
    return R_NilValue;
}

/* ag_estimate_training_memory(model =)'s input_shape (dims: its sizes as doubles, NaN for a
 * non-number) with batch: the core's rule and text; c(rows, cols) */
SEXP R_pg_mem_input_shape(SEXP dims, SEXP batch, SEXP shown)
{
    if (TYPEOF(dims) != REALSXP || !Rf_isString(shown) || XLENGTH(shown) != 1)
        Rf_error("R_pg_mem_input_shape: doubles and one string");
    int64_t rows = 0, cols = 0;
    r_check(pg_mem_input_shape(REAL(dims), (int64_t)XLENGTH(dims), Rf_asReal(batch), 1,
                               Rf_translateCharUTF8(STRING_ELT(shown, 0)), &rows, &cols));
    SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
    REAL(out)[0] = (double)rows;
    REAL(out)[1] = (double)cols;
    UNPROTECT(1);
    return out;
}

/* The budget, note and report of one estimate (pg_mem_budget_of / pg_mem_estimate_text). ints:
 * optim, accumulate, dtype, source, batch; dbl: params, activation_frac and the measured
 * weights, gradients, activations. */
SEXP R_pg_mem_estimate(SEXP ints, SEXP dbl)
{
    if (TYPEOF(ints) != INTSXP || XLENGTH(ints) != 5 || TYPEOF(dbl) != REALSXP || XLENGTH(dbl) != 5)
        r_stopf(PG_STATUS_ERR_ARG, "mem_estimate: 5 integers and 5 doubles expected");
    const int *i = INTEGER(ints);
    const double *d = REAL(dbl);
    pg_mem_estimate e = pg_mem_estimate_default();
    e.optim = i[0], e.accumulate = i[1], e.dtype = i[2], e.source = i[3], e.batch = i[4];
    e.params = d[0], e.activation_frac = d[1], e.weights = d[2], e.gradients = d[3];
    e.activations = d[4];
    pg_mem_budget b;
    r_check(pg_mem_budget_of(&e, &b));
    SEXP text[2];
    for (int w = 0; w < 2; w++) {
        const int64_t n = pg_mem_estimate_text(&e, w, NULL, 0);
        if (n < 0) r_fail();
        char *buf = R_alloc((size_t)n + 1, 1);
        pg_mem_estimate_text(&e, w, buf, n + 1);
        text[w] = PROTECT(Rf_mkCharCE(buf, CE_UTF8));
    }
    static const char *const names[] = {"params",           "weights",     "gradients",
                                        "optimizer",        "activations", "total",
                                        "bytes_per_scalar", "note",        "text"};
    SEXP out = PROTECT(r_named_list(names, 9));
    const double v[7] = {b.params,
                         b.weights,
                         b.gradients,
                         b.optimizer,
                         b.activations,
                         b.total,
                         (double)b.bytes_per_scalar};
    for (int k = 0; k < 7; k++) SET_VECTOR_ELT(out, k, Rf_ScalarReal(v[k]));
    SET_VECTOR_ELT(out, 7, Rf_ScalarString(text[0]));
    SET_VECTOR_ELT(out, 8, Rf_ScalarString(text[1]));
    UNPROTECT(3);
    return out;
}

/* ag_tape_memory: the tape's (gp NULL) or a compiled graph's memory walk and its printed report
 * (the core's text, Python's too). list(totals: nodes, bytes_total, bytes_snapshots,
 * bytes_fields, bytes_inputs, bytes_gradients; op labels, nodes, bytes; the text; a graph's
 * buffers by kind: outputs, saved, gradients). build: the graph's kind for the text. */
SEXP R_pg_memory_report(SEXP gp, SEXP top, SEXP build, SEXP ndropout)
{
    pg_graph *g = Rf_isNull(gp) ? NULL : r_get(gp, R_GRAPH);
    pg_memory_totals t;
    int64_t n = g ? pg_graph_memory_report(g, &t, NULL, NULL, NULL, 0)
                  : pg_tape_memory(&t, NULL, NULL, NULL, 0);
    if (n < 0) r_fail();
    const char **lab = (const char **)R_alloc(n > 0 ? n : 1, sizeof(char *));
    int64_t *nn = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof(int64_t));
    int64_t *nb = (int64_t *)R_alloc(n > 0 ? n : 1, sizeof(int64_t));
    n = g ? pg_graph_memory_report(g, &t, lab, nn, nb, n) : pg_tape_memory(&t, lab, nn, nb, n);
    if (n < 0) r_fail();
    const char *b = g ? Rf_translateCharUTF8(STRING_ELT(build, 0)) : NULL;
    const int64_t k = (int64_t)Rf_asInteger(top), nd = (int64_t)Rf_asInteger(ndropout);
    const int64_t len = pg_memory_report_text(&t, b, nd, lab, nn, nb, n, k, NULL, 0);
    if (len < 0) r_fail();
    char *text = R_alloc((size_t)len + 1, 1);
    pg_memory_report_text(&t, b, nd, lab, nn, nb, n, k, text, len + 1);
    pg_graph_buffers gb = {0};
    if (g) r_check(pg_graph_memory(g, &gb));
    const int64_t tot[6] = {t.nodes,        t.bytes_total,  t.bytes_snapshots,
                            t.bytes_fields, t.bytes_inputs, t.bytes_gradients};
    const int64_t kinds[3] = {gb.bytes_outputs, gb.bytes_saved, gb.bytes_gradients};
    SEXP items[6];
    items[0] = PROTECT(r_counts(tot, 6));
    items[1] = PROTECT(Rf_allocVector(STRSXP, n));
    items[2] = PROTECT(Rf_allocVector(INTSXP, n));
    items[3] = PROTECT(r_counts(nb, n));
    for (int64_t i = 0; i < n; i++) {
        SET_STRING_ELT(items[1], i, Rf_mkChar(lab[i]));
        INTEGER(items[2])[i] = (int)nn[i];
    }
    items[4] = PROTECT(Rf_mkString(text));
    items[5] = PROTECT(r_counts(kinds, 3));
    SEXP out = r_list(6, items);
    UNPROTECT(6);
    return out;
}
