/* Shared by ops_rnn.c (checks, forward) and ops_rnn_bw.c (backpropagation through time). */
#ifndef OPS_RNN_INTERNAL_H
#define OPS_RNN_INTERNAL_H
#include "pg.h"

/* a recurrent node's sizes: mode, input size F, hidden size H, G*H gate rows, steps L, batch N */
typedef struct {
    int mode, rev, rnn, cell;
    int64_t F, H, GH, L, N, OS; /* OS: the output's column stride, H*L (+ H with the cell) */
    const char *fn;             /* the user-facing name: ag_lstm, ag_gru, ag_rnn */
} pg_rnn_dims;

static inline int64_t pg_rnn_gates(int mode)
{
    return mode == PG_RNN_LSTM ? 4 : mode == PG_RNN_GRU ? 3 : 1;
}
const char *pg_rnn_fn(int mode);
void pg_rnn_dims_of(const pg_node *nd, pg_rnn_dims *d);
int pg_rnn_bw(pg_node *nd, pg_tensor *g);
#endif
