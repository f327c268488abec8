/* pyggmlr C core: data-parallel helpers (dist.c). cdef-clean like pg_api.h.
 *
 * The arithmetic of data parallelism: flattening a parameter list's gradients (or values) into
 * one contiguous buffer for a fused all-reduce / broadcast and scattering it back, averaging the
 * gradients of in-process replicas (dp_train) and copying weights between replicas. The
 * communication itself (MPI) is done by the bindings on the buffers these functions fill.
 *
 * Parameter lists are matched by POSITION: entry i of one list corresponds to entry i of the
 * other (never by name). `grads` is a gradient map from pg_backward(), or NULL to use each
 * parameter's .grad. Buffers hold PG_DTYPE_F32 or PG_DTYPE_F64 elements.
 *
 * Flat layout (what = PG_DIST_WHAT_GRAD or PG_DIST_WHAT_VALUE): the elements of params[0] (column-major),
 * then params[1], ...: sum of numel elements in all; with flags != 0 (gradients only), n more
 * elements follow: 1 where params[i] has a gradient on this process, 0 where it has none. */

enum pg_dist_what { PG_DIST_WHAT_GRAD = 0, PG_DIST_WHAT_VALUE = 1, PG_DIST_WHAT_COUNT };

/* Elements the flat layout needs: sum of numel (+ n when flags). -1 + error on a bad list. */
int64_t pg_dist_flat_len(pg_tensor **params, int64_t n, int flags);

/* *out: a 32-bit hash of the list's layout (each entry's shape and dtype, in order) that ranks
 * compare before a collective. */
int pg_dist_layout_sig(pg_tensor **params, int64_t n, uint32_t *out);

/* Pack into buf (buf_len elements of buf_dtype) the gradients (a missing one packs as zeros)
 * or the values of params, each element multiplied by scale, followed by the presence flags
 * (not scaled) when flags. Elements of buf past the layout are left untouched. */
int pg_dist_pack(pg_tensor **params, int64_t n, pg_gradmap *grads, int what, int flags,
                 double scale, void *buf, int buf_dtype, int64_t buf_len);

/* Inverse of pg_dist_pack: writes buf[k] * scale into each gradient (what = PG_DIST_WHAT_GRAD) or
 * value (PG_DIST_WHAT_VALUE). Gradients with flags: a parameter whose flag is 0 (no process had a
 * gradient) is left without one; one whose flag is > 0 but that has no local gradient gets a
 * new .grad when grads is NULL, and is an error (PG_STATUS_ERR_STATE) with a map, which cannot grow.
 * Without flags every parameter must have a local gradient. Gradients are written in place
 * (a map's entries and a first-backward .grad share storage, so both see the result). */
int pg_dist_unpack(pg_tensor **params, int64_t n, pg_gradmap *grads, int what, int flags,
                   double scale, const void *buf, int buf_dtype, int64_t buf_len);

/* In-process replicas (dp_train): params holds n_rep lists of n parameters, replica r's
 * parameter i at params[r * n + i]; grads[r] is replica r's gradient map (NULL entry: .grad).
 * For each i, replica 0's gradient of parameter i becomes the sum over replicas divided by
 * n_rep (a replica without that gradient contributes zeros). When replica 0 has none but
 * another replica has one: a new .grad is made if grads[0] is NULL, PG_STATUS_ERR_STATE otherwise.
 * Shapes and dtypes must agree across replicas. */
int pg_dist_average_replicas(pg_tensor **params, int64_t n, int64_t n_rep, pg_gradmap **grads);

/* dst[i] <- values of src[i] (same shapes; dtypes converted); tensors listed in both are
 * skipped. Does not touch gradients or the tape. */
int pg_dist_copy_values(pg_tensor **dst, pg_tensor **src, int64_t n);

/* Drop the .grad of every tensor in the list (pg_tensor_set_grad(t, NULL) on each). */
int pg_dist_zero_grad(pg_tensor **params, int64_t n);

/* The mean of x[0..n-1] exactly as R's mean() of a double vector computes it (summary.c):
 * s = long-double sum / n (when the sum overflows, the sum of x[i] / n instead), then, when s is
 * finite, one correction pass s += (long-double sum of (x[i] - s)) / n; the result rounded to
 * double. NaN for n <= 0 or a NULL x. dp_train averages its replicas' losses with it in both
 * languages (numpy's pairwise mean differs from R's in the last bit). */
double pg_mean_r(const double *x, int64_t n);
