/* pyggmlr C core: selection and sampling ops down each column (ops_select.c; ggmlR 0.8.6 §2).
 * cdef-clean like pg_api.h. x is [n, batch]; indices are 0-based. */

/* Row index of each column's largest entry -> out[ncol]: NaN counts as -Inf (never chosen), ties
 * go to the first index, a column with nothing above -Inf gives 0. Not differentiable. */
int pg_argmax(pg_tensor *x, int64_t *out);
/* Per column y = z - log(sum(exp(z))), z = x - max(x) (the sum in double, in pg_vsum's fixed
 * order); backward dx = g - exp(y) * colSums(g). */
pg_tensor *pg_log_softmax(pg_tensor *x);
/* out[1, j] = x[idx[j], j] for n = ncol(x) ids in [0, nrow); the gradient of column j goes to the
 * picked entry only. */
pg_tensor *pg_gather(pg_tensor *x, const int64_t *idx, int64_t n);
/* ag_gather with the index as the front ends hold it (doubles: R's numbers, NaN for NA): its
 * checks in ggmlR's order, each over the whole index, with ggmlR's texts: the length (n must be
 * ncol(x), PG_STATUS_ERR_SHAPE), "ag_gather: index contains NA", "ag_gather: index must be whole
 * numbers (0-based)" (+/-Inf are whole), then the range (+/-Inf, 1e300: out of range 0..nrow-1),
 * PG_STATUS_ERR_VALUE; then pg_gather. */
pg_tensor *pg_gather_f64(pg_tensor *x, const double *v, int64_t n);
/* ag_max: [1, batch] column maxima, x[argmax, j] (taken again by every replay); the whole
 * gradient goes to the first maximum. */
pg_tensor *pg_colmax(pg_tensor *x);
/* One categorical draw per column with probabilities softmax(x[, j]) (x: logits or log-
 * probabilities), by the Gumbel-max trick as ggmlR: one runif(n * batch) from the stream r (NULL:
 * the current one), column-major, G = -log(-log(u)), out[j] = argmax of x + G (in double, NaN as
 * -Inf, first index on ties). No tape node. */
int pg_sample_categorical(pg_rng *r, pg_tensor *x, int64_t *out);
/* mu + eps * exp(log_std), eps [n, batch] one rnorm(n * batch) from the current stream, column-
 * major; log_std is [n, batch] or [n, 1] (checked before anything is drawn). Recorded as a
 * "randn" node (redrawn by every replay of a compiled graph), then exp, mul and add:
 * d mu = g, d log_std = g * eps * exp(log_std) (summed over the columns for [n, 1]). */
pg_tensor *pg_sample_normal(pg_tensor *mu, pg_tensor *log_std);
