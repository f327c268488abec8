/* R's random draws through the core's generator (pg_api_rng.h), with ONE stream shared with R:
 * before a draw the state is loaded from .Random.seed into a private core stream and written
 * back after it, so set.seed(), runif() and the package's draws interleave exactly as in ggmlR.
 * With another RNGkind the core's algorithms run on R's own unif_rand/norm_rand/R_unif_index.
 * A "run stream" made current with R_pg_rng_use (ag_fit(seed =)) is drawn from instead, and
 * .Random.seed is left alone. */
#include <limits.h>
#include <math.h>
#include <string.h>
#include <R_ext/Random.h>
#include "r_util.h"

static pg_rng *r_stream; /* mirrors .Random.seed during a draw */
static pg_rng *r_ext;    /* R's own generator, for non-default kinds */
static SEXP cur_stream;  /* R handle of the active run stream (preserved), NULL if none */

enum { M_RUN, M_SYNC, M_EXT };
typedef r_draw draw_ctx;

static SEXP seed_sym(void)
{
    static SEXP s;
    if (!s) s = Rf_install(".Random.seed");
    return s;
}

static SEXP seed_var(void)
{
    SEXP s = Rf_findVarInFrame(R_GlobalEnv, seed_sym());
    if (TYPEOF(s) == PROMSXP) s = Rf_eval(s, R_GlobalEnv);
    return s;
}

/* Pick the stream for one draw (may long-jump: nothing of the caller's must need freeing yet). */
static draw_ctx draw_begin(void)
{
    draw_ctx c = {NULL, M_RUN, NULL};
    if (pg_rng_current() != pg_rng_default()) {
        c.r = pg_rng_current();
        return c;
    }
    SEXP s = seed_var();
    if (s == R_UnboundValue) { /* R seeds itself from the clock and writes .Random.seed */
        GetRNGstate();
        PutRNGstate();
        s = seed_var();
    }
    if (TYPEOF(s) == INTSXP && XLENGTH(s) == PG_RNG_STATE_LEN &&
        INTEGER(s)[0] == PG_RNG_KIND_DEFAULT) {
        if (!r_stream && !(r_stream = pg_rng_new())) r_fail();
        r_check(pg_rng_set_state(r_stream, INTEGER(s), PG_RNG_STATE_LEN));
        c.r = r_stream;
        c.mode = M_SYNC;
        return c;
    }
    if (!r_ext && !(r_ext = pg_rng_new_external(unif_rand, norm_rand, R_unif_index))) r_fail();
    GetRNGstate(); /* R's own checks and messages for a foreign or broken .Random.seed */
    c.r = r_ext;
    c.mode = M_EXT;
    return c;
}

/* After the draw: write the state back as PutRNGstate does (a fresh vector), or PutRNGstate.
 * ok == 0 (the core refused before drawing): the synced state is left as it was. */
static void draw_end(draw_ctx c, int ok)
{
    if (c.mode == M_EXT) {
        PutRNGstate();
    } else if (c.mode == M_SYNC && ok) {
        SEXP s = PROTECT(Rf_allocVector(INTSXP, PG_RNG_STATE_LEN));
        int rc = pg_rng_get_state(c.r, INTEGER(s));
        if (rc == 0) Rf_defineVar(seed_sym(), s, R_GlobalEnv);
        UNPROTECT(1);
        r_check(rc);
    }
}

r_draw r_draw_enter(void)
{
    draw_ctx c = draw_begin();
    if (c.mode != M_RUN) c.prev = pg_rng_use(c.r);
    return c;
}

void r_draw_leave(r_draw c, int ok)
{
    if (c.mode != M_RUN) pg_rng_use(c.prev);
    draw_end(c, ok);
}

/* ---- runif / rnorm ---- */

/* R's resultLength: n itself, or the length of a longer vector */
static R_xlen_t result_length(SEXP sn)
{
    if (!Rf_isVector(sn)) Rf_errorcall(R_NilValue, "invalid arguments");
    if (XLENGTH(sn) != 1) return XLENGTH(sn);
    double d = Rf_asReal(sn);
    if (ISNAN(d) || d < 0 || d > R_XLEN_T_MAX) Rf_errorcall(R_NilValue, "invalid arguments");
    return (R_xlen_t)d;
}

static SEXP random2(SEXP sn, SEXP sa, SEXP sb, int normal)
{
    if (!Rf_isNumeric(sa) || !Rf_isNumeric(sb)) Rf_errorcall(R_NilValue, "invalid arguments");
    R_xlen_t n = result_length(sn), na = XLENGTH(sa), nb = XLENGTH(sb);
    r_check(
        pg_rng_check_size((double)n, 8, normal ? "rnorm" : "runif")); /* fail, not an OOM kill */
    SEXP x = PROTECT(Rf_allocVector(REALSXP, n));
    if (n == 0) {
        UNPROTECT(1);
        return x;
    }
    if (na < 1 || nb < 1) { /* as R: all NA, no draw */
        for (R_xlen_t i = 0; i < n; i++) REAL(x)[i] = NA_REAL;
        Rf_warningcall(R_NilValue, "NAs produced");
        UNPROTECT(1);
        return x;
    }
    SEXP a = PROTECT(Rf_coerceVector(sa, REALSXP)), b = PROTECT(Rf_coerceVector(sb, REALSXP));
    int64_t bad = 0;
    draw_ctx c = draw_begin();
    int rc = normal ? pg_rng_rnorm(c.r, n, REAL(a), na, REAL(b), nb, REAL(x), &bad)
                    : pg_rng_runif(c.r, n, REAL(a), na, REAL(b), nb, REAL(x), &bad);
    draw_end(c, rc == 0);
    r_check(rc);
    if (bad)
        Rf_warningcall(R_NilValue,
                       "NAs produced"); /* after the write-back: warn = 2 loses nothing */
    UNPROTECT(3);
    return x;
}

SEXP R_pg_rng_runif(SEXP n, SEXP min, SEXP max) { return random2(n, min, max, 0); }
SEXP R_pg_rng_rnorm(SEXP n, SEXP mean, SEXP sd) { return random2(n, mean, sd, 1); }

/* ---- sample.int ---- */

/* R's asVecSize for `size` (its messages); -999 (invalid) for anything else */
static R_xlen_t vec_size(SEXP s)
{
    if (!Rf_isVectorAtomic(s) || XLENGTH(s) < 1) return -999;
    switch (TYPEOF(s)) {
    case INTSXP: {
        int v = INTEGER(s)[0];
        if (v == NA_INTEGER) Rf_errorcall(R_NilValue, "vector size cannot be NA");
        return v;
    }
    case REALSXP: {
        double d = REAL(s)[0];
        if (ISNAN(d)) Rf_errorcall(R_NilValue, "vector size cannot be NA/NaN");
        if (!R_FINITE(d)) Rf_errorcall(R_NilValue, "vector size cannot be infinite");
        if (d > R_XLEN_T_MAX) Rf_errorcall(R_NilValue, "vector size specified is too large");
        return (R_xlen_t)d;
    }
    case STRSXP: {
        double d = Rf_asReal(s);
        if (ISNAN(d)) Rf_errorcall(R_NilValue, "vector size cannot be NA/NaN");
        if (!R_FINITE(d)) Rf_errorcall(R_NilValue, "vector size cannot be infinite");
        return (R_xlen_t)d;
    }
    default: return -999;
    }
}

/* sample.int(n, size, replace, prob, useHash): integer when n <= .Machine$integer.max, else
 * double, as R (the weighted path always gives integers). */
SEXP R_pg_rng_sample(SEXP sn, SEXP ssize, SEXP sreplace, SEXP sprob, SEXP shash)
{
    if (XLENGTH(sreplace) != 1) Rf_errorcall(R_NilValue, "invalid 'replace' argument");
    int replace = Rf_asLogical(sreplace);
    if (replace == NA_LOGICAL) Rf_errorcall(R_NilValue, "invalid 'replace' argument");
    int use_hash = Rf_asLogical(shash);
    if (use_hash == NA_LOGICAL) use_hash = -1;
    double dn;
    int64_t k;
    SEXP prob = R_NilValue;
    if (!Rf_isNull(sprob)) { /* R reads n and size with asInteger here */
        int n = Rf_asInteger(sn), ik = Rf_asInteger(ssize);
        dn = n == NA_INTEGER ? NAN : (double)n;
        k = ik == NA_INTEGER ? -1 : ik;
        prob = Rf_coerceVector(sprob, REALSXP);
    } else {
        dn = Rf_asReal(sn);
        if (use_hash ==
            1) { /* R's sample2 reads size with asInteger (the core checks size <= n/2) */
            int ik = Rf_asInteger(ssize);
            k = ik == NA_INTEGER ? -1 : ik;
        } else {
            k = vec_size(ssize);
        }
    }
    PROTECT(prob);
    int as_int = !Rf_isNull(prob) || !(dn > INT_MAX);
    if (k > 0) r_check(pg_rng_check_size((double)k, as_int ? 12 : 8, "sample.int"));
    SEXP y = PROTECT(Rf_allocVector(as_int ? INTSXP : REALSXP, k > 0 ? (R_xlen_t)k : 0));
    double *out = as_int ? (double *)R_alloc(k > 0 ? (size_t)k : 1, sizeof(double)) : REAL(y);
    draw_ctx c = draw_begin();
    int rc = pg_rng_sample(c.r, dn, k, replace, Rf_isNull(prob) ? NULL : REAL(prob),
                           Rf_isNull(prob) ? 0 : XLENGTH(prob), use_hash, out);
    draw_end(c, rc == 0);
    r_check(rc);
    if (as_int)
        for (int64_t i = 0; i < k; i++) INTEGER(y)[i] = (int)out[i];
    UNPROTECT(2);
    return y;
}

/* ---- the layers' draws ---- */

/* Orthogonal initialiser -> numeric matrix [out, in] (one rnorm(max * min), Householder QR) */
SEXP R_pg_rng_orthogonal(SEXP sout, SEXP sin, SEXP sgain)
{
    double out = r_num(sout, "ag_linear: out_features"), in = r_num(sin, "ag_linear: in_features");
    double gain = r_num(sgain, "ag_linear: gain");
    if (!(out >= 1 && in >= 1 && out <= INT_MAX && in <= INT_MAX))
        Rf_errorcall(R_NilValue, "ag_linear: orthogonal init needs out >= 1 and in >= 1");
    r_check(pg_rng_check_size(out * in, 8, "ag_linear (orthogonal init)"));
    SEXP w = PROTECT(Rf_allocMatrix(REALSXP, (int)out, (int)in));
    draw_ctx c = draw_begin();
    int rc = pg_rng_orthogonal(c.r, (int64_t)out, (int64_t)in, gain, REAL(w));
    draw_end(c, rc == 0);
    r_check(rc);
    UNPROTECT(1);
    return w;
}

/* Inverted dropout as one core op (pg_dropout): the mask is drawn from R's stream (or the run
 * stream) as the op runs, and by every replay of a compiled graph holding it. */
SEXP R_pg_dropout(SEXP sx, SEXP srate, SEXP stranspose)
{
    pg_tensor *x = r_get(r_handle(sx), R_TENSOR);
    double rate = r_num(srate, "ag_dropout: rate");
    int transpose = Rf_asLogical(stranspose) == 1;
    r_draw c = r_draw_enter();
    pg_tensor *out = pg_dropout(x, rate, transpose);
    r_draw_leave(c, out != NULL);
    return r_wrap_tensor(out);
}

/* ---- run streams: external pointers to pg_rng ---- */

/* A new stream seeded as set.seed(seed); NULL seeds from the clock, as set.seed(NULL) */
SEXP R_pg_rng_new(SEXP sseed)
{
    pg_rng *r;
    if (Rf_isNull(sseed)) {
        r = pg_rng_new();
    } else {
        int seed = Rf_asInteger(sseed);
        if (seed == NA_INTEGER) Rf_errorcall(R_NilValue, "supplied seed is not a valid integer");
        r = pg_rng_new_seeded(seed);
    }
    return r_wrap(r, R_RNG);
}

/* Make a stream the current one (NULL: back to R's stream). Returns the previous handle (NULL
 * for R's); the caller puts it back with on.exit. The active handle is preserved while active. */
SEXP R_pg_rng_use(SEXP x)
{
    pg_rng *r = Rf_isNull(x) ? NULL : r_get(x, R_RNG);
    SEXP prev = PROTECT(cur_stream ? cur_stream : R_NilValue);
    if (r) R_PreserveObject(x);
    pg_rng_use(r);
    cur_stream = r ? x : NULL;
    if (prev != R_NilValue) R_ReleaseObject(prev);
    UNPROTECT(1);
    return prev;
}

SEXP R_pg_rng_current(void) { return cur_stream ? cur_stream : R_NilValue; }

SEXP R_pg_rng_get_state(SEXP x)
{
    pg_rng *r = r_get(x, R_RNG);
    SEXP s = PROTECT(Rf_allocVector(INTSXP, PG_RNG_STATE_LEN));
    int rc = pg_rng_get_state(r, INTEGER(s));
    UNPROTECT(1);
    r_check(rc);
    return s;
}

SEXP R_pg_rng_set_state(SEXP x, SEXP state)
{
    pg_rng *r = r_get(x, R_RNG);
    if (!Rf_isNumeric(state))
        Rf_errorcall(R_NilValue, "set_state: state must be an integer vector (a .Random.seed)");
    SEXP s = PROTECT(Rf_coerceVector(state, INTSXP));
    int rc = pg_rng_set_state(r, INTEGER(s), XLENGTH(s));
    UNPROTECT(1);
    r_check(rc);
    return R_NilValue;
}

/* a seed argument as the core's rule reads it (pg_seed_parse); .seed_int says what R got */
SEXP R_pg_seed_parse(SEXP fn, SEXP arg, SEXP kind, SEXP v, SEXP s, SEXP shown)
{
    pg_seed_arg a = pg_seed_default_arg();
    a.fn = CHAR(STRING_ELT(fn, 0));
    a.arg = CHAR(STRING_ELT(arg, 0));
    a.kind = Rf_asInteger(kind);
    a.v = Rf_asReal(v);
    a.s = Rf_isNull(s) ? NULL : Rf_translateCharUTF8(STRING_ELT(s, 0));
    a.shown = Rf_isNull(shown) ? NULL : Rf_translateCharUTF8(STRING_ELT(shown, 0));
    a.null_name = "NULL";
    int32_t out = 0;
    r_check(pg_seed_parse(&a, &out));
    return Rf_ScalarInteger(out);
}
