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
