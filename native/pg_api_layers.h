/* pyggmlr C core: layer ops (ops_layers.c). cdef-clean like pg_api.h.
 * All take and return column-major f32/f64 tensors [features, batch]; each result is a NEW
 * reference (NULL + pg_last_error() on failure) recorded on the tape with its backward rule. */

/* Batch normalisation of x [F, B]: each row (feature) is normalised over the columns (batch).
 * gamma, beta: [F, 1] scale and shift (NULL: 1 and 0). running_mean, running_var: [F, 1] buffers
 * (no gradient). training != 0: batch mean and biased variance are used and the running
 * buffers (if not NULL) are updated in place, running <- (1 - momentum) * running +
 * momentum * batch; training == 0: the running buffers are used (both required).
 * Backward: the exact gradient through the batch statistics in training mode
 * (dx = invstd / B * (B dxh - sum(dxh) - xhat * sum(dxh * xhat)) per row, dxh = g * gamma),
 * dx = g * gamma * invstd in eval mode; dgamma = rowSums(g * xhat), dbeta = rowSums(g). */
pg_tensor *pg_batch_norm(pg_tensor *x, pg_tensor *gamma, pg_tensor *beta, pg_tensor *running_mean,
                         pg_tensor *running_var, double eps, double momentum, int training);

/* Layer normalisation of x [F, B]: each column (sample) is normalised over its rows
 * (features) with the biased variance; out = gamma * xhat + beta, gamma/beta [F, 1] (NULL: 1
 * and 0). Exact gradient. */
pg_tensor *pg_layer_norm(pg_tensor *x, pg_tensor *gamma, pg_tensor *beta, double eps);

/* Embedding lookup: weight [D, V], idx[0..n) 0-based ids in [0, V) -> [D, n], column k being
 * weight[, idx[k]]. Backward scatter-adds the gradient's columns into dweight (repeated ids
 * accumulate). */
pg_tensor *pg_embedding(pg_tensor *weight, const double *idx, int64_t n);
/* The same lookup with the ids in a tensor (f32/f64 whole numbers, any shape, read column-major),
 * checked and read on every run: a compiled graph (ag_compile) refills them. The ids must not
 * require grad. */
pg_tensor *pg_embedding_ids(pg_tensor *weight, pg_tensor *ids);

/* Rows from .. from + n - 1 (0-based) of x [R, C] -> [n, C]; gradient added back into those rows. */
pg_tensor *pg_slice_rows(pg_tensor *x, int64_t from, int64_t n);

/* Row-wise concatenation of a [Ra, C] and b [Rb, C] -> [Ra + Rb, C] (a on top). */
pg_tensor *pg_concat_rows(pg_tensor *a, pg_tensor *b);

/* alpha * op(a) op(b), op = transpose when ta / tb is non-zero; the transposes are done by
 * the GEMM call (no copies). op(a) [m, k], op(b) [k, n] -> [m, n]. */
pg_tensor *pg_matmul_t(pg_tensor *a, pg_tensor *b, int ta, int tb, double alpha);

/* Causal mask for attention scores laid out [n_keys, n_queries] (one column per query, as the
 * column softmax wants them): entry (i, j) becomes -inf when key i comes after query j
 * (i > j), other entries pass through. Gradient: g where kept, 0 where masked. */
pg_tensor *pg_causal_mask(pg_tensor *x);

/* keras3's Normalization layer (ag_normalization): out = (x - mean) / max(sqrt(variance), eps)
 * per row of x [F, B]; mean, variance: [F, 1] buffers of x's dtype (no gradient). Backward:
 * dx = g / max(sqrt(variance), eps). A constant feature (variance 0) divides by eps. */
pg_tensor *pg_normalization(pg_tensor *x, pg_tensor *mean, pg_tensor *variance, double eps);
/* adapt(): mean and population variance (divided by n) of each row of x [F, n], n >= 1, into
 * the [F, 1] buffers, computed in double; x must be finite (the first bad row and column named). */
int pg_normalization_adapt(const pg_tensor *x, pg_tensor *mean, pg_tensor *variance);
/* given buffers: [F, 1] each, F = features when features > 0, finite, variance >= 0 */
int pg_normalization_check(const pg_tensor *mean, const pg_tensor *variance, int64_t features);
