/* pyggmlr C core: tensor versions and scope repair. cdef-clean like pg_api.h.
 *
 * Every tensor buffer has a version counter, bumped by every write into an existing tensor
 * (pg_tensor_write, optimizer updates, clipping, replica copies, batch norm's running
 * buffers, ag_fit's batch refills). Recording a node stores its inputs' and output's versions;
 * backward() refuses (PG_STATUS_ERR_MODIFIED, naming the tensor and both versions) to run a node whose
 * tensor changed since: the gradient would silently mix old and new values.
 *
 * A writable view handed to a front end (numpy) is "exposed": its writes bypass the core, so
 * for an exposed buffer a 64-bit hash of its bytes, taken whenever its version is read, stands
 * in for the counter (a changed hash counts as one write). Unexposed buffers cost nothing. */

/* The version of t's buffer (0 when never written after creation), -1 for a dead handle. */
int64_t pg_tensor_version(pg_tensor *t);
/* t's buffer is about to be written outside the core (a writable view): hashed while at least
 * one view is exposed; unexpose when a view dies (its writes are counted first). */
int pg_tensor_expose(pg_tensor *t);
int pg_tensor_unexpose(pg_tensor *t);

/* Scope repair for front ends that cannot pair begin/end on every exit path (R's interrupts,
 * restarts, callCC): closes tape scopes until depth <= `depth` (nothing when already there,
 * so closing twice is harmless); returns the depth reached. */
int pg_tape_end_to(int depth);
/* Tapes set aside by pg_tape_stash (pg_api_memory.h) and not yet given back; unstash_to gives
 * back until n <= `n` remain (harmless when already there). */
int pg_tape_stash_depth(void);
int pg_tape_unstash_to(int n);
