/* pyggmlr C core: recurrent layers' ops (ops_rnn.c, ops_rnn_bw.c). cdef-clean like pg_api.h.
 *
 * A sequence batch is x [F*T, N]: column n is one sequence in numpy's (T, F) C-order (features
 * fastest), torch's batch_first (N, T, F) as x.reshape(N, -1).T. The parameters are torch's:
 * W_ih [G*H, F], W_hh [G*H, H], b_ih, b_hh [G*H, 1] (both or neither), gates stacked in torch's
 * order (LSTM i, f, g, o: G = 4; GRU r, z, n: G = 3; plain RNN G = 1). h0 (and, for the LSTM,
 * c0) [H, N]: the initial states (NULL: zeros; the LSTM takes both or neither). flags: bit
 * PG_RNN_REVERSE runs time backwards (a bidirectional layer's second direction): output row
 * block t is still the state at time t; bit PG_RNN_CELL (LSTM only) appends the last step's
 * cell state (c_T, or c_1 when reversed) as a last row block: [H*T + H, N] (keras'
 * return_state). Result: every hidden state, [H*T, N] (block t = h_t). Backward is exact
 * backpropagation through time into x, the weights, biases and initial states. */

enum pg_rnn_mode { PG_RNN_TANH = 0, PG_RNN_RELU = 1, PG_RNN_LSTM = 2, PG_RNN_GRU = 3 };
enum pg_rnn_flag { PG_RNN_REVERSE = 1, PG_RNN_CELL = 2 };

pg_tensor *pg_rnn(int mode, pg_tensor *x, pg_tensor *W_ih, pg_tensor *W_hh, pg_tensor *b_ih,
                  pg_tensor *b_hh, pg_tensor *h0, pg_tensor *c0, int flags);

/* Two sequence batches a [Fa*T, N], b [Fb*T, N] joined per time step -> [(Fa+Fb)*T, N] (block t
 * = a's block t over b's): a bidirectional layer's output, torch's order. fn names the caller. */
pg_tensor *pg_seq_concat(pg_tensor *a, pg_tensor *b, int64_t steps, const char *fn);
