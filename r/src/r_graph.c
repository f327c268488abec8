/* .Call glue: static (compiled) graphs, ag_compile (see native/pg_api_graph.h). */
#include "r_util.h"

/* out, inputs: an ag_tensor handle and a list of handles; opt: an optimizer handle or NULL.
 * The optimizer handle is kept alive by the graph's external pointer. */
SEXP R_pg_graph_record_end(SEXP out, SEXP inputs, SEXP build, SEXP opt)
{
    R_xlen_t n = XLENGTH(inputs);
    pg_tensor **in = (pg_tensor **)R_alloc(n > 0 ? n : 1, sizeof(pg_tensor *));
    for (R_xlen_t i = 0; i < n; i++) in[i] = r_get(VECTOR_ELT(inputs, i), R_TENSOR);
    pg_tensor *o = r_get(out, R_TENSOR);
    pg_optim *op = Rf_isNull(opt) ? NULL : r_get(opt, R_OPTIM);
    pg_graph *g = pg_graph_record_end(o, in, (int64_t)n, Rf_asInteger(build), op);
    return r_wrap_keep(g, R_GRAPH, opt);
}

/* value: R numbers of the recorded shape (a vector is a column, as ag_tensor reads it) */
SEXP R_pg_graph_set_input(SEXP gp, SEXP i, SEXP value)
{
    pg_graph *g = r_get(gp, R_GRAPH);
    char op[48]; /* the input's number in the refusals, as Python's ("compiled step: input 1") */
    snprintf(op, sizeof op, "compiled step: input %d", Rf_asInteger(i) + 1);
    pg_tensor *src = r_new_tensor(value, PG_DTYPE_F64, op);
    if (!src) r_fail();
    int64_t nr = pg_tensor_nrow(src), nc = pg_tensor_ncol(src);
    int rc = pg_graph_set_input(g, (int64_t)Rf_asInteger(i), pg_tensor_data(src), PG_DTYPE_F64, nr,
                                nc, 1, nr);
    pg_tensor_release(src);
    if (rc) r_fail();
    return R_NilValue;
}

/* One replay. Returns the loss (a number) for builds grad/opt, NULL for forward. */
SEXP R_pg_graph_run(SEXP gp)
{
    pg_graph *g = r_get(gp, R_GRAPH);
    /* nodes that draw (dropout, ...) draw from R's stream as they replay: .Random.seed is synced
     * in and written back only then (two 626-int copies and an R vector a step otherwise) */
    const int draws = pg_graph_draws(g) == 1;
    r_draw c = {0};
    if (draws) c = r_draw_enter();
    int rc = pg_graph_run(g);
    if (draws) r_draw_leave(c, rc >= 0);
    if (rc < 0) r_fail();
    pg_tensor *o = pg_graph_output(g);
    if (pg_tensor_nrow(o) != 1 || pg_tensor_ncol(o) != 1) return R_NilValue;
    return Rf_ScalarReal(pg_tensor_dtype(o) == PG_DTYPE_F32
                             ? (double)*(const float *)pg_tensor_data(o)
                             : *(const double *)pg_tensor_data(o));
}

/* the recorded ops' names, in execution order */
SEXP R_pg_graph_ops(SEXP gp)
{
    pg_graph *g = r_get(gp, R_GRAPH);
    int64_t n = pg_graph_nodes(g);
    SEXP out = PROTECT(Rf_allocVector(STRSXP, (R_xlen_t)n));
    for (int64_t i = 0; i < n; i++)
        SET_STRING_ELT(out, (R_xlen_t)i, Rf_mkChar(pg_graph_node_op(g, i)));
    UNPROTECT(1);
    return out;
}

/* the dropout masks each replay redraws (for the memory report) */
SEXP R_pg_graph_dropout_masks(SEXP gp)
{
    return Rf_ScalarInteger((int)pg_graph_dropout_masks(r_get(gp, R_GRAPH)));
}

/* the output tensor (reused by every replay) as an ag_tensor */
SEXP R_pg_graph_output(SEXP gp)
{
    pg_tensor *o = pg_graph_output(r_get(gp, R_GRAPH));
    pg_tensor_retain(o);
    return r_wrap_tensor(o);
}

/* free a graph now (its planned buffers with it) rather than at R's next collection: a
 * measurement's graph (ag_estimate_training_memory(static = TRUE)) is gone when it returns, as
 * in Python; the handle is dead afterwards */
SEXP R_pg_graph_free(SEXP gp)
{
    r_get(gp, R_GRAPH);
    r_free_now(gp, R_GRAPH);
    return R_NilValue;
}

/* gradients of the last run: a list of matrices named by tensor id */
SEXP R_pg_graph_grads(SEXP gp)
{
    pg_gradmap *m = pg_graph_grads(r_get(gp, R_GRAPH));
    int64_t n = m ? pg_gradmap_size(m) : 0;
    SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
    SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
    for (int64_t i = 0; i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)pg_gradmap_key_id(m, i));
        SET_STRING_ELT(nm, i, Rf_mkChar(buf));
        SET_VECTOR_ELT(out, i, r_matrix(pg_gradmap_value(m, i)));
    }
    Rf_setAttrib(out, R_NamesSymbol, nm);
    UNPROTECT(2);
    return out;
}
