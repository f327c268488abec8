/* pyggmlr C core: host nodes, tape nodes whose backward rule is the front end's code (host.c).
 * cdef-clean like pg_api.h. ag_checkpoint is built on them: its segment runs without recording
 * and is replayed, on a private tape, when backward() reaches the node.
 *
 * The core keeps what gradients need: the rule runs with a private, empty, recording tape (the
 * caller's tape set aside and given back afterwards, also on failure); the front end re-runs its
 * code there and calls pg_host_replay(out) once, which walks that tape seeded with the node's
 * incoming gradient at `out`, into the running backward's own gradient slots. So the caller's
 * inputs and any tensor the segment reads (its parameters) get their gradients in backward()'s
 * map and .grad exactly as if the segment had been recorded; tensors the replay made are dropped. */

typedef int (*pg_host_bw_fn)(void *ctx); /* 0 ok; else failure (message via pg_host_fail) */
typedef void (*pg_host_free_fn)(void *ctx);

/* Appends a host node: its output is a new copy of `value` (requires grad), its inputs in[0..n_in)
 * (retained, no NULLs; they need not require grad), `label` its op name (copied, at most 31
 * bytes used). The node owns ctx from this call on: destroy(ctx) runs when the node is freed,
 * and before returning when this call fails. The tape must be recording (PG_STATUS_ERR_STATE if not).
 * Returns the output (new reference) or NULL. */
pg_tensor *pg_host_record(pg_tensor *value, pg_tensor **in, int64_t n_in, const char *label,
                          pg_host_bw_fn bw, void *ctx, pg_host_free_fn destroy);

/* Inside a host rule only, once: walk the private tape seeded at out (same shape and dtype as
 * the node's output) with the node's incoming gradient. Returns 0 or a status. */
int pg_host_replay(pg_tensor *out);

/* Host rules running on this thread (0 outside backward's replays). */
int pg_host_depth(void);

/* For a front end's rule: record its failure message (status PG_STATUS_ERR_STATE when status <= 0). */
int pg_host_fail(int status, const char *msg);

/* ag_checkpoint()'s refusals of its function, once for both front ends (PG_STATUS_ERR_ARG):
 * shown NULL, the first argument is no function; else fn returned a `shown`, not a tensor, when
 * called (replayed 0) or when replayed in backward() (1). Returns the status. */
int pg_ckpt_fail(const char *shown, int replayed);
