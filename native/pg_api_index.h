/* pyggmlr C core: indexing by element positions (ops_index.c), behind Tensor.__getitem__.
 * cdef-clean like pg_api.h. Positions are 0-based and column-major (i + j * nrow(x)). */

/* out [nrow, ncol] with out[k] = x[pos[k]] (k column-major, n = nrow * ncol positions in
 * [0, numel(x)), repeats allowed); backward scatter-adds: dx[pos[k]] += g[k], in k order. */
pg_tensor *pg_take(pg_tensor *x, const int64_t *pos, int64_t n, int64_t nrow, int64_t ncol);
