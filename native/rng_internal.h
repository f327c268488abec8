/* Unlocked draws of rng.c for the core's other files (the caller holds the stream's lock:
 * pg_rng_lock / pg_rng_unlock around a whole call, so each call draws a contiguous run). */
#ifndef PG_RNG_INTERNAL_H
#define PG_RNG_INTERNAL_H

pg_rng *pg_rng_lock(pg_rng *r, const char *fn); /* NULL r: the current stream; NULL on error */
void pg_rng_unlock(pg_rng *r);
double pg_rng_u01(pg_rng *r);                        /* unif_rand() */
double pg_rng_z(pg_rng *r);                          /* norm_rand() */
double pg_rng_index(pg_rng *r, double dn);           /* R_unif_index(dn) */
double pg_rng_runif1(pg_rng *r, double a, double b); /* runif(1, a, b), NaN without a draw */
double pg_rng_rnorm1(pg_rng *r, double mu, double sigma);
/* rng_layers.c: pg_dropout's mask drawn into an existing f32/f64 tensor (locks the stream itself) */
int pg_rng_dropout_fill(pg_rng *r, pg_tensor *mask, double rate, int transpose);
/* the same draws and values into a plain [nrow, ncol] f32/f64 buffer (ops_mha.c's per-head masks) */
int pg_rng_dropout_fill_raw(pg_rng *r, int dtype, void *dst, int64_t nrow, int64_t ncol,
                            double rate, int transpose);

#endif
