/* pyggmlr C core: R's default random streams, bit for bit (rng.c). cdef-clean like pg_api.h.
 *
 * A pg_rng is one stream of R's default generator: Mersenne-Twister seeded as set.seed()
 * seeds it, uniforms fixed up into (0, 1), normals by "Inversion" (two uniforms, 2^27, AS 241),
 * integers by "Rejection" (R >= 3.6). Its state is R's .Random.seed: 626 integers, the first
 * the kind code 10403 (Mersenne-Twister + 100 * Inversion + 10000 * Rejection), the second the
 * position in the block, then the 624 state words.
 *
 * Every draw of the package goes through this module: initialisers, dropout masks, shuffles,
 * validation splits, sampling ops. Each stream has its own lock, so one stream may be shared by
 * threads (each call draws a contiguous run of the stream); the process-wide default stream is
 * the one ggml_set_seed(k) seeds. pg_rng_use(r) makes r the calling thread's "current" stream
 * (ag_fit(seed =) runs on a stream of its own this way); the package's layers draw from
 * pg_rng_current(). Functions that take a pg_rng * accept NULL for the current stream.
 */

typedef struct pg_rng pg_rng;

enum pg_rng_const {
    PG_RNG_STATE_LEN = 626,     /* length of a state, as R's .Random.seed */
    PG_RNG_KIND_DEFAULT = 10403 /* .Random.seed[1] of R's default kinds */
};

/* ---- streams ---- */
pg_rng *pg_rng_new(void);                /* seeded from the clock and pid (R without set.seed) */
pg_rng *pg_rng_new_seeded(int32_t seed); /* as set.seed(seed) */
void pg_rng_free(pg_rng *r);             /* NULL and the default stream are ignored */
pg_rng *pg_rng_default(void);            /* borrowed: the process-wide stream */
pg_rng *pg_rng_current(void); /* borrowed: the calling thread's stream (default if none set) */
/* Make r the calling thread's current stream (NULL: back to the default). Returns the previous
 * one (NULL when it was the default), to put back with another pg_rng_use. r must outlive its use. */
pg_rng *pg_rng_use(pg_rng *r);
/* A stream whose draws come from someone else's generator (R with a non-default RNGkind):
 * unif() must return R's unif_rand(), norm() its norm_rand(), index(dn) its R_unif_index(dn).
 * Such a stream has no state to get or set. */
pg_rng *pg_rng_new_external(double (*unif)(void), double (*norm)(void), double (*index)(double));

/* ---- state ---- */
int pg_rng_seed(pg_rng *r, int32_t seed);      /* exactly set.seed(seed) (seed mod 2^32) */
int pg_rng_get_state(pg_rng *r, int32_t *out); /* writes PG_RNG_STATE_LEN integers */
/* 1 when r has a state to get and set, 0 for an external stream, a negative status on error. */
int pg_rng_has_state(pg_rng *r);
/* Load a .Random.seed. len must be PG_RNG_STATE_LEN and state[0] PG_RNG_KIND_DEFAULT (another
 * kind is PG_STATUS_ERR_VALUE: the core reproduces R's default kinds only); as R, a position outside
 * 1..624 is read as 624, and an all-zero state reseeds from the clock. */
int pg_rng_set_state(pg_rng *r, const int32_t *state, int64_t len);

/* ---- R's draws ----
 * a, b (and mean, sd) are recycled over n as R recycles vector arguments (na, nb >= 1);
 * *n_nan (may be NULL) receives the count of NaN results, for R's "NAs produced" warning. */
int pg_rng_runif(pg_rng *r, int64_t n, const double *a, int64_t na, const double *b, int64_t nb,
                 double *out, int64_t *n_nan);
int pg_rng_rnorm(pg_rng *r, int64_t n, const double *mean, int64_t nm, const double *sd, int64_t ns,
                 double *out, int64_t *n_nan);
/* sample.int(n, size, replace, prob, useHash) -> out[size], 1-based values (whole doubles).
 * prob: NULL or prob_len weights (prob_len must equal n; normalised, R's checks). use_hash:
 * -1 R's default (n > 1e7, no replacement, no prob, size <= n/2), 0 or 1 forced as useHash.
 * Errors carry R's messages ("cannot take a sample larger than the population when
 * 'replace = FALSE'", "invalid first argument", "too few positive probabilities", ...). */
int pg_rng_sample(pg_rng *r, double n, int64_t size, int replace, const double *prob,
                  int64_t prob_len, int use_hash, double *out);
/* 0 when n values of elem_size bytes fit in the memory available now, else PG_STATUS_ERR_NOMEM naming
 * fn. Front ends call it before allocating a draw's result, and the core before its pools (for
 * the pool and the result together): an allocation the kernel grants lazily but cannot back
 * would kill the process instead of failing. */
int pg_rng_check_size(double n, int64_t elem_size, const char *fn);

/* ---- draws of the package's layers (ggmlR's calls, in its order) ---- */
/* Inverted dropout as one op: out = x * mask, mask = (u > rate) / (1 - rate) of x's shape and
 * dtype (computed in double), u one runif(length(x)) drawn column-major from the current stream
 * when the op runs: eagerly, and again at every replay of a compiled graph, so no mask crosses
 * to the host. transpose != 0: the draw fills [ncol, nrow] and is transposed (ggmlR's order for
 * attention weights, which it holds as [queries, keys] where the core holds [keys, queries]).
 * Backward: g * mask. 0 <= rate < 1. */
pg_tensor *pg_dropout(pg_tensor *x, double rate, int transpose);
/* Orthogonal initialiser: G = matrix(rnorm(n * k), n, k), n = max(out, in), k = min(out, in);
 * thin Householder QR of G, columns of Q times sign(R_jj) (0 counts as +1); w [out, in]
 * column-major = Q (out >= in) or t(Q), times gain. */
int pg_rng_orthogonal(pg_rng *r, int64_t out, int64_t in, double gain, double *w);

/* The seed rule (rng_seed.c) of ggml_set_seed, ag_fit(seed =), ag_dataloader(seed =) and the
 * generators: R's as.integer(seed), then set.seed's refusal of NA. A number is truncated toward
 * zero; a string is read as a number (blanks around it allowed, " 3.9" is 3); anything else (a
 * logical, a vector) is PG_STATUS_ERR_ARG; NaN PG_STATUS_ERR_VALUE (ggmlR's text); a value
 * outside R's integers or a string that is no number PG_STATUS_ERR_VALUE (set.seed's text). The
 * front end says what it got: kind, the number v or the string s, how its language shows the
 * value (shown, NULL: the core formats v as R does) and its word for no value (null_name). */
enum pg_seed_kind { PG_SEED_NUMBER = 0, PG_SEED_STRING = 1, PG_SEED_OTHER = 2 };
typedef struct pg_seed_arg {
    const char *fn;        /* the user-facing function, for messages */
    const char *arg;       /* the argument as messages name it ("`seed`") */
    int kind;              /* enum pg_seed_kind */
    double v;              /* PG_SEED_NUMBER: the value (NaN for NA) */
    const char *s;         /* PG_SEED_STRING: UTF-8 text */
    const char *shown;     /* how the host shows the value; NULL: the core's */
    const char *null_name; /* "NULL" (R) or "None" (Python) */
} pg_seed_arg;
pg_seed_arg pg_seed_default_arg(void);
int pg_seed_parse(const pg_seed_arg *a, int32_t *out);
