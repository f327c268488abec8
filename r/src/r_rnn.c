/* .Call glue for the recurrent ops of native/pg_api_rnn.h (ag_lstm, ag_gru, ag_rnn). */
#include "r_util.h"

static pg_tensor *opt_t(SEXP x) { return Rf_isNull(x) ? NULL : (pg_tensor *)r_get(x, R_TENSOR); }

SEXP R_pg_rnn(SEXP mode, SEXP x, SEXP wih, SEXP whh, SEXP bih, SEXP bhh, SEXP h0, SEXP c0,
              SEXP flags)
{
    return r_wrap(pg_rnn(Rf_asInteger(mode), r_get(x, R_TENSOR), r_get(wih, R_TENSOR),
                         r_get(whh, R_TENSOR), opt_t(bih), opt_t(bhh), opt_t(h0), opt_t(c0),
                         Rf_asInteger(flags)),
                  R_TENSOR);
}

SEXP R_pg_seq_concat(SEXP a, SEXP b, SEXP steps, SEXP fn)
{
    return r_wrap(pg_seq_concat(r_get(a, R_TENSOR), r_get(b, R_TENSOR),
                                (int64_t)r_num(steps, "pg_seq_concat: steps"),
                                CHAR(STRING_ELT(fn, 0))),
                  R_TENSOR);
}
