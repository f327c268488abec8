/* pyggmlr C core: fused multi-head attention (ops_attention.c; ggmlR 0.8.6 §3,
 * ag_flash_attention). cdef-clean like pg_api.h.
 *
 * q [d_model, seq_q], k and v [d_model, seq_kv] (one dtype); head h is the row block
 * h*d_head .. (h+1)*d_head - 1, d_head = d_model / n_heads. Per head, with keys on the rows:
 * St = scale k_h^T q_h + M ([seq_kv, seq_q]), P = softmax down each column (over the keys),
 * out_h = v_h P ([d_head, seq_q]); heads stacked by rows -> [d_model, seq_q]. One tape node with
 * inputs q, k, v (the mask gets no gradient), replayable by a compiled graph. */

/* ggmlR's argument checks, in its order and with its texts: n_heads divides d_model, q, k, v share
 * d_model, k and v share seq_kv, mask xor causal, mask is a matrix, mask is [seq_kv, seq_q].
 * mask_nd: 0 no mask, 2 a matrix [mask_nrow, mask_ncol], any other value a mask that is not a
 * matrix (front ends call this to report that one in its place). 0 or a status with the
 * message set. */
int pg_flash_attention_check(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads, int mask_nd,
                             int64_t mask_nrow, int64_t mask_ncol, int causal);

/* The attention above. scale: NaN means 1 / sqrt(d_head). mask: NULL or a [seq_kv, seq_q]
 * tensor of q's dtype added to the scaled scores (0 attend, -Inf blocked; its current values are
 * read by every run, so a compiled graph may refill it); causal != 0 blocks key r > query j
 * (0-based; queries past seq_kv see every key). A query whose keys are all blocked gives 0 (and
 * no gradient). The forward works one block of queries at a time (never more than
 * [seq_kv, block] scores) and keeps only each query's max and sum of exp per head; the backward
 * recomputes P from q, k, v: dV = G P^T, dPt = v^T G, dSt = P (dPt - colsum(G out)),
 * dQ = scale k dSt, dK = scale q dSt^T (per head, with keys on the rows). */
pg_tensor *pg_flash_attention(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads,
                              double scale, pg_tensor *mask, int causal);

/* ag_multihead_attention's forward inputs (the layer's projections come after): q
 * [d_model, seq_q], k and v [d_model, seq_kv]. 0, or PG_STATUS_ERR_SHAPE naming the layer, the
 * input, its shape and d_model (PG_STATUS_ERR_ARG for a dead tensor). */
int pg_mha_check_inputs(int64_t d_model, pg_tensor *q, pg_tensor *k, pg_tensor *v);
/* ag_multihead_attention's sizes (d_model, n_heads >= 1, checked by the front ends' integer
 * rule): n_heads divides d_model, else PG_STATUS_ERR_VALUE "ag_multihead_attention: d_model (<d>)
 * must be divisible by n_heads (<h>)", once for both front ends. */
int pg_mha_check_sizes(int64_t d_model, int64_t n_heads);

/* ag_multihead_attention's heads (ops_mha.c), after its projections: Q [d_model, seq_q], K and V
 * [d_model, seq_kv] -> the heads stacked by rows [d_model, seq_q]. Per head h (rows
 * h*d_k .. (h+1)*d_k - 1, d_k = d_model / n_heads): St = scale K_h^T Q_h [seq_kv, seq_q], key
 * i > query j set to -Inf when causal, P = softmax down each column, with dropout_rate > 0 an
 * inverted-dropout mask drawn per head (in head order, [queries, keys] order, as ag_dropout with
 * transpose) from the current stream, head_h = V_h (P mask). The same kernels and order as the
 * composed ops (slice rows, matmul_t, causal mask, softmax, dropout, matmul, concat rows), so
 * forward and gradients are theirs bit for bit. One tape node; saves P (and the masks) for
 * backward; a compiled graph's replay redraws the masks. Pass dropout_rate 0 in eval mode. */
pg_tensor *pg_mha_heads(pg_tensor *q, pg_tensor *k, pg_tensor *v, int64_t n_heads, double scale,
                        int causal, double dropout_rate);
