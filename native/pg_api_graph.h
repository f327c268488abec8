/* pyggmlr C core: static (compiled) graphs, graph.c. cdef-clean like pg_api.h.
 *
 * A graph is one recorded call of a step function: record_begin opens an outermost tape scope
 * that records every op (also those no gradient needs), record_end takes the recorded nodes.
 * pg_graph_run replays them with the inputs' current values (write new values first with
 * pg_graph_set_input): the forward rule of every node, then for build GRAD/OPT backward into
 * gradient buffers planned at the first run and reused, then for OPT one optimizer step
 * (pg_optim_step, so accumulate_steps works as in the eager loop). Outputs, saved buffers
 * and gradients are reused: a replay allocates nothing after the first.
 * Every node of the graph must have a forward rule; record_end fails naming the first op
 * that has none. */

typedef struct pg_graph pg_graph;

enum pg_graph_build {
    PG_GRAPH_BUILD_FORWARD = 0,
    PG_GRAPH_BUILD_GRAD = 1,
    PG_GRAPH_BUILD_OPT = 2,
    PG_GRAPH_BUILD_COUNT
};

int pg_graph_record_begin(void);
void pg_graph_record_abort(void);
/* out: the value fn returned (1x1 for GRAD/OPT). inputs: tensors replays refill. opt: the
 * optimizer of build OPT (borrowed: the caller keeps it alive), NULL otherwise. */
pg_graph *pg_graph_record_end(pg_tensor *out, pg_tensor **inputs, int64_t n_inputs, int build,
                              pg_optim *opt);
/* Writes new values into input i (same strided reading as pg_tensor_write); the shape must be
 * the recorded one. */
int pg_graph_set_input(pg_graph *g, int64_t i, const void *src, int src_dtype, int64_t nrow,
                       int64_t ncol, int64_t rstride, int64_t cstride);
/* One replay: returns 0, or 1 when an OPT step changed the weights; negative on error. */
int pg_graph_run(pg_graph *g);
pg_tensor *pg_graph_output(pg_graph *g); /* borrowed */
pg_tensor *pg_graph_input(pg_graph *g,
                          int64_t i); /* borrowed: the i-th recorded input; NULL out of range */
/* GRAD/OPT: gradients of the last run by parameter (leaf requiring grad); borrowed, NULL before
 * the first run. */
pg_gradmap *pg_graph_grads(pg_graph *g);
int64_t pg_graph_nodes(pg_graph *g);
const char *pg_graph_node_op(pg_graph *g, int64_t i);
/* the dropout masks each replay redraws (memory reports): one per dropout node, n_heads per
 * multi-head attention node with dropout; -1 for NULL */
int64_t pg_graph_dropout_masks(pg_graph *g);
/* 1 when a replay draws from the random stream (a dropout mask, attention dropout, ag_sample_normal's
 * noise), else 0 (a front end that mirrors its own stream into the core skips that); -1 for NULL */
int pg_graph_draws(pg_graph *g);
/* A compiled graph's buffers by kind. */
typedef struct pg_graph_buffers {
    int64_t bytes_outputs;   /* node outputs */
    int64_t bytes_saved;     /* saved buffers (not graph inputs) */
    int64_t bytes_gradients; /* planned gradient buffers */
    int64_t nodes;
    int64_t gradients; /* number of gradient buffers */
} pg_graph_buffers;
int pg_graph_memory(pg_graph *g, pg_graph_buffers *out);
/* The graph's memory in ag_tape_memory's terms (same walk: each storage counted once, charged
 * to the first node that meets it: a node's inputs, then its saved buffers, then its output).
 * totals (pg_api.h): bytes_snapshots = the planned buffers (node outputs and saved
 * buffers: the activations the graph keeps for every replay), bytes_inputs = the operands (inputs
 * no node of the graph produces: weights, data, constants), bytes_gradients = the planned
 * gradient buffers, allocated at the first GRAD/OPT run, of every tensor that carries a gradient. Per-op rows as pg_tape_memory; returns the number of labels or -status. */
int64_t pg_graph_memory_report(pg_graph *g, pg_memory_totals *totals, const char **op_label,
                               int64_t *op_nodes, int64_t *op_bytes, int64_t max_ops);
void pg_graph_free(pg_graph *g);
