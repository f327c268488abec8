# The package's argument checks (as Python's pyggmlr/_args.py; ag_fit's and every other
# function's), kept out of ag_fit's files since they serve every front-end function.

# Argument checks shared by the R front end (issue 19), as Python's check_int / check_num /
# check_flag (pyggmlr/errors.py): the same texts, raised as classed conditions
# (pyggmlr_argument_error for the wrong kind, pyggmlr_value_error for a bad value).
.arg_fail <- function(kind, fmt, ...) .pg_stop(kind, sprintf(fmt, ...))

# a message already formed (as stop() pastes its arguments), raised classed: "argument" for the
# wrong kind of value, "value" for a bad one, or any kind r_guard.c names
.arg_stop <- function(..., kind = "argument") .arg_fail(kind, "%s", paste0(...))

# a required argument not given: R's text, classed and naming the function (R's own error was an
# unclassed simpleError)
.arg_missing <- function(fn, arg)
  .arg_fail("argument", "%s: argument \"%s\" is missing, with no default", fn, arg)

# match.arg's rule (an exact or unique partial match; the default vector gives its first) with
# its text ("'arg' should be one of", as ggmlR's), naming the function, the argument and what was
# given, classed
.arg_match <- function(v, choices, fn, arg) {
  if (identical(v, choices)) return(choices[[1L]])
  i <- if (is.character(v) && length(v) == 1L && !is.na(v) && nzchar(v)) pmatch(v, choices)
       else NA_integer_
  if (is.na(i))
    .arg_fail(if (is.character(v) && length(v) == 1L) "value" else "argument",
              "%s: 'arg' should be one of %s (%s = %s)", fn,
              paste0("\u201c", choices, "\u201d", collapse = ", "), arg, .arg_show(v))
  choices[[i]]
}

.arg_show <- function(v) {
  s <- if (is.factor(v)) sprintf("factor %s", paste(deparse(as.character(v)), collapse = " "))
       else paste(deparse(v, width.cutoff = 60L), collapse = " ")
  if (nchar(s) > 80L) paste0(substr(s, 1L, 77L), "...") else s
}

.INT_MAX <- .Machine$integer.max

# The one integer rule (Python's check_int is the same): one whole number of any numeric type
# (2.0 is 2), finite and in [lo, hi] (NULL: unbounded; hi defaults to R's integer range), as an
# integer (a double when the range goes beyond R's integers). Logicals, factors, strings, arrays
# and vectors of length != 1 are the wrong kind (pyggmlr_argument_error); fractions, NA, +/-Inf
# and values out of range bad values (pyggmlr_value_error), with the core's texts (pg_arg_int):
# "<fn>: <arg> must be <rule>, got <v>", the rule "an integer >= lo" unless the caller words it.
# core: a core rule of (value, shown, wrong_kind) with its own range and text instead (as Python's
# check_int(core =): R_pg_mf_epoch_arg); the value comes back as a double.
.arg_int <- function(v, fn, arg, lo = NULL, hi = .INT_MAX, rule = NULL, core = NULL) {
  # the common case first: a good value costs no text (ag_fit checks several per call)
  if (is.null(core) && is.numeric(v) && length(v) == 1L && !is.factor(v) && length(dim(v)) <= 1L &&
      !is.na(v) && is.finite(v) && v == floor(v) && (is.null(lo) || v >= lo) &&
      (is.null(hi) || v <= hi))
    return(if (abs(v) <= .INT_MAX) as.integer(v) else as.double(v))
  kind <- is.numeric(v) && !is.factor(v) && length(v) == 1L && length(dim(v)) <= 1L
  x <- if (kind) as.double(v) else 0
  if (is.null(core)) return(.Call(R_pg_arg_int, fn, arg, x, lo, hi, rule, .arg_show(v), !kind))
  .Call(core, x, .arg_show(v), !kind)
  x
}

# one finite number in the range (open or closed at each end; NULL: unbounded) as a double (the
# core's rule and texts, pg_arg_num, as Python's check_num)
.arg_num <- function(v, fn, arg, lo = NULL, hi = NULL, lo_open = FALSE, hi_open = FALSE) {
  kind <- is.numeric(v) && !is.factor(v) && length(v) == 1L && length(dim(v)) <= 1L
  .Call(R_pg_arg_num, fn, arg, if (kind) as.double(v) else 0, lo, hi, lo_open, hi_open,
        .arg_show(v), !kind)
  as.double(v)
}

# a count as as.integer() takes it (truncated: 1.9 is 1), >= lo and below .INT_MAX + 1: the core's
# rule and text (pg_arg_count, as Python's check_as_integer); the wrong kind an argument error, or
# (kind_error FALSE) read as NaN, a bad value
.arg_as_integer <- function(v, fn, arg, rule, lo = 1, kind_error = TRUE) {
  kind <- is.numeric(v) && !is.factor(v) && length(v) == 1L && length(dim(v)) <= 1L
  .Call(R_pg_arg_count, fn, arg, if (kind) as.double(v) else NaN, lo, rule,
        function() .arg_show(v), kind_error && !kind)  # the text only for a refusal
}

# TRUE or FALSE (not "no", 1, NA or a vector)
.arg_flag <- function(v, fn, arg) {
  if (!is.logical(v) || length(v) != 1L || is.na(v) || length(dim(v)) > 1L)
    .arg_fail("argument", "%s: %s must be TRUE or FALSE, got %s", fn, arg, .arg_show(v))
  v
}
