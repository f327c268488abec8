/* pyggmlr C core: memory reports. cdef-clean like pg_api.h.
 *
 * The allocator's counters themselves (pg_memory_stats, pg_memory_reset_peak, pg_live_objects)
 * are in pg_api.h; this area adds what is built on top of them: the tape report (memory.c),
 * per-category peaks (tensor.c, next to the counters) and the tape stash (tape.c, which owns
 * the tape). */

/* What this thread's tape holds alive, from the core's real byte counts (storage bytes as the
 * allocator counts them; each storage counted once, charged to the first node that meets it
 * walking the tape in recording order: a node's inputs, then its saved tensors, then its output).
 *
 *  - snapshots: storage that ONLY the tape keeps alive (every reference to it comes from tape
 *    nodes, or from the .grad of a tensor only the tape keeps alive). pg_tape_clear() frees
 *    exactly these bytes.
 *  - inputs: storage the tape references but something else also holds (a Python/R handle, an
 *    optimizer, a gradient map, ...): it outlives the tape.
 *  - fields: the node structs' own bytes (nodes x pg_tape_node_bytes()); not allocator-counted.
 *
 * totals: the walk's pg_memory_totals (bytes_gradients 0).
 * Per-op rows: one per distinct op label ("<closure only>" for an unlabelled node), sorted by
 * bytes descending, ties by label ascending; at most max_ops rows are written (any of the row
 * arrays may be NULL when max_ops is 0). Labels are borrowed static strings. Returns the number
 * of distinct labels (which may exceed max_ops), or -status on failure. */
int64_t pg_tape_memory(pg_memory_totals *totals, const char **op_label, int64_t *op_nodes,
                       int64_t *op_bytes, int64_t max_ops);

/* Bytes of one tape node's bookkeeping (the "fields" charge per node). */
int64_t pg_tape_node_bytes(void);

/* Peak bytes per pg_category since the last pg_memory_reset_peak() (each category's own
 * maximum over time). out[0..4]; n = length of out (up to 5 filled). */
int pg_memory_category_peaks(int64_t *out, int n);

/* Run a measurement on a private, empty tape and give the caller's tape back afterwards:
 * pg_tape_stash() sets this thread's tape aside (nodes, scope depth, enabled flag) and starts an
 * empty one; pg_tape_unstash() clears the private tape and restores the stashed one. Stashes
 * nest (last in, first out). Returns 0 or a status. */
int pg_tape_stash(void);
int pg_tape_unstash(void);

/* ag_estimate_training_memory's `shapes` (ggmlR): n_shapes dimension vectors, shape i holding
 * lens[i] values read in turn from dims (lens[i] < 0: the front end could not read shape i as
 * numbers). Each needs at least one dimension, every one finite and > 0 (fractions pass, as
 * ggmlR's prod()). *params = the sum over the shapes of the products of their dimensions.
 * 0, or PG_STATUS_ERR_VALUE naming ag_estimate_training_memory() and, by position
 * (pg_index_base), the shape and the dimension; n_shapes 0 is the "non-empty list" error. */
int pg_estimate_params(const double *dims, const int64_t *lens, int64_t n_shapes, double *params);

/* ag_estimate_training_memory's budget and printed report (memory_report.c), once for R and
 * Python. The optimizer's names and state multipliers k: Adam 2 (m and v), SGD with momentum 1
 * (the velocity), plain SGD 0; an optimizer that accumulates gradients keeps one more buffer. */
enum pg_mem_optim {
    PG_MEM_OPTIM_ADAM = 0,
    PG_MEM_OPTIM_SGD = 1,
    PG_MEM_OPTIM_SGD_PLAIN = 2,
    PG_MEM_OPTIM_COUNT
};
const char *pg_mem_optim_name(int optim); /* "adam", "sgd", "sgd_plain"; NULL out of range */
/* R's match.arg rule (ggmlR's): an exact name, else the one name it uniquely begins. name: NULL
 * when the argument is no single string (shown: the host's text of it). PG_STATUS_ERR_VALUE
 * naming ag_estimate_training_memory(), the names and what was given. */
int pg_mem_optim_parse(const char *name, const char *shown, int *optim);
/* ag_estimate_training_memory(model =)'s dtypes, before anything runs: dtype (the argument's or
 * the model's) and x / y when given as tensors must be the model's parameters' model_dtype (a
 * dtype code; -1: a model without parameters, nothing to match). -1: not given / not a tensor.
 * PG_STATUS_ERR_DTYPE naming ag_estimate_training_memory(), the argument and both dtypes (the
 * forward failed later in an inner layer's words). */
int pg_mem_model_dtypes(int model_dtype, int dtype, int x_dtype, int y_dtype);
/* ag_estimate_training_memory(model =)'s y under the default loss_fn (ag_mse_loss): the model's
 * output shape [out_rows x out_cols], before the loss runs. PG_STATUS_ERR_SHAPE naming
 * ag_estimate_training_memory() and both shapes (the loss failed in ag_mse_loss's words). */
int pg_mem_target_shape(int64_t out_rows, int64_t out_cols, int64_t y_rows, int64_t y_cols);
/* ag_estimate_training_memory(model =, input_shape =)'s rule, once for both front ends: dims[0..n)
 * the sizes as doubles (NaN: one that is not a number; n 1: batch is the second), two whole
 * numbers in [1, INT_MAX] (R's matrix() limit) -> *rows, *cols. Else PG_STATUS_ERR_VALUE
 * "ag_estimate_training_memory(): input_shape must be <forms> with positive whole numbers, got
 * <shown>" (r_form: R's forms c(features) or c(features, batch), else Python's tuples). */
int pg_mem_input_shape(const double *dims, int64_t n, double batch, int r_form, const char *shown,
                       int64_t *rows, int64_t *cols);

/* where the activations come from */
enum pg_mem_source {
    PG_MEM_SOURCE_GUESS = 0,   /* activation_frac x weights x batch (ggmlR's) */
    PG_MEM_SOURCE_TAPE = 1,    /* measured: one forward and backward on the tape */
    PG_MEM_SOURCE_COMPILED = 2 /* measured: the compiled step's planned buffers */
};
typedef struct pg_mem_estimate {
    int optim;              /* enum pg_mem_optim (ADAM) */
    int accumulate;         /* 1: the optimizer accumulates gradients (0) */
    int dtype;              /* the dtype weights, gradients and state are stored in (F32) */
    int source;             /* enum pg_mem_source (GUESS) */
    int64_t batch;          /* the batch; measured: the one the step ran on (32) */
    double params;          /* the parameter count (0) */
    double activation_frac; /* GUESS (0.01) */
    double weights, gradients, activations; /* TAPE / COMPILED: measured bytes (0) */
} pg_mem_estimate;
pg_mem_estimate pg_mem_estimate_default(void);
typedef struct pg_mem_budget {
    double params, weights, gradients, optimizer, activations, total; /* bytes but params */
    int64_t bytes_per_scalar;                                         /* 4 (f32) or 8 (f64) */
    int64_t k;                                                        /* the state multiplier */
} pg_mem_budget;
/* The budget: GUESS counts weights and gradients as params x bytes per scalar; the optimizer's
 * state is k x the gradients; total = weights + gradients + optimizer + activations.
 * PG_STATUS_ERR_ARG for a field out of range. */
int pg_mem_budget_of(const pg_mem_estimate *e, pg_mem_budget *out);
/* The report's note (what 0) or the whole report as printed (what 1: "Training memory estimate
 * (adam, batch 32)", the seven lines, the note; lines joined by "\n", no final newline). As
 * pg_fit_history_format: at most cap bytes (NUL included) to buf, NULL to measure; returns the
 * length the whole text needs, or -status. */
int64_t pg_mem_estimate_text(const pg_mem_estimate *e, int what, char *buf, int64_t cap);

/* The printed report of a tape (build NULL: ag_tape_memory) or of a compiled graph (build its
 * kind, "opt" / "grad" / "forward": its planned buffers, gradients included) from totals and
 * the op rows pg_tape_memory / pg_graph_memory_report gave (nrows of them; the first `top`
 * listed, 0: totals only). ndropout: the graph's dropout nodes, whose masks each replay redraws.
 * Lines joined by "\n", no final newline. As pg_fit_history_format: at most cap bytes (NUL
 * included) to buf, NULL to measure; returns the length the whole text needs, or -status. */
int64_t pg_memory_report_text(const pg_memory_totals *totals, const char *build, int64_t ndropout,
                              const char *const *op_label, const int64_t *op_nodes,
                              const int64_t *op_bytes, int64_t nrows, int64_t top, char *buf,
                              int64_t cap);
