/* pyggmlr C core: the front ends' argument rules (arg_check.c), once for R and Python: R's
 * .arg_int / .arg_num and Python's check_int / check_num test the kind of a value (theirs to
 * know) and hand the number here, which checks it and words the refusal. cdef-clean like
 * pg_api.h. */

/* The one integer rule: v whole, finite and in [*lo, *hi] (NULL: unbounded). rule: the caller's
 * wording of what is accepted, or NULL for "an integer >= lo" ("in [lo, hi]"; hi at R's integer
 * range is named only when exceeded). shown: v as the language prints it. wrong_kind: the value
 * was not one number (then v is not read): PG_STATUS_ERR_ARG, at most 300 bytes of text; a bad
 * value PG_STATUS_ERR_VALUE; the text "<fn>: <arg> must be <rule>, got <shown>". 0 when v
 * passes. */
int pg_arg_int(const char *fn, const char *arg, double v, const double *lo, const double *hi,
               const char *rule, const char *shown, int wrong_kind);
/* The number rule: v finite and in the range (lo_open / hi_open: that end open; NULL:
 * unbounded), "a finite number >= 0", "a finite number in (0, 1]", ...; as pg_arg_int. */
int pg_arg_num(const char *fn, const char *arg, double v, const double *lo, const double *hi,
               int lo_open, int hi_open, const char *shown, int wrong_kind);
/* A count as R's as.integer() takes it (ggmlR's accumulate_steps, layer_norm's size): v
 * truncated toward zero into *out when lo <= v < INT_MAX + 1 (NaN fails); else "<fn>: <arg>
 * must be <rule>, got <shown>", PG_STATUS_ERR_VALUE (wrong_kind: PG_STATUS_ERR_ARG, as
 * pg_arg_int, v not read). */
int pg_arg_count(const char *fn, const char *arg, double v, double lo, const char *rule,
                 const char *shown, int wrong_kind, double *out);
/* A number in the caller's words: v finite and > lo (lo_open) or >= lo; else "<fn>: <arg> must
 * be <rule>, got <shown>" (shown NULL: v as pg_fmt_num prints it), PG_STATUS_ERR_VALUE
 * (wrong_kind: PG_STATUS_ERR_ARG, v not read). For
 * ggmlR's own texts ("one positive finite number") that pg_arg_num would word otherwise. */
int pg_arg_real(const char *fn, const char *arg, double v, double lo, int lo_open, const char *rule,
                const char *shown, int wrong_kind);
/* Whole-number ids (ag_embedding's ids, 0-based rows or classes): each of v[0..n) finite and
 * whole, else "<fn>: <what> must be whole numbers (0-based), got non-integer values"
 * (PG_STATUS_ERR_VALUE; NaN / R's NA, +/-Inf and 2.5 alike). The front ends refuse the wrong kind
 * (booleans, non-numbers) with their own texts and hand the values here as doubles; the range
 * is the op's to check. 0 when all pass (n = 0 too). */
int pg_arg_whole_ids(const char *fn, const char *what, const double *v, int64_t n);
/* A finite number clamped to [lo, hi] and truncated toward zero into *out (dp_train's verbose:
 * past R's integers the largest, a negative 0); NaN and +/-Inf refused with "<fn>: <arg> must
 * be <rule>, got <shown>", PG_STATUS_ERR_VALUE (wrong_kind: PG_STATUS_ERR_ARG, v not read). */
int pg_arg_clamp(const char *fn, const char *arg, double v, double lo, double hi, const char *rule,
                 const char *shown, int wrong_kind, double *out);
/* ag_linear(gain =): one finite number, else ggmlR's "<fn>: gain must be a single finite number",
 * PG_STATUS_ERR_VALUE for the wrong kind too (wrong_kind: not one number, gain not read). */
int pg_arg_gain(const char *fn, double gain, int wrong_kind);
