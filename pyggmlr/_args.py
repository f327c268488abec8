"""Argument checks, in one place: each returns the value converted (int, float, bool, array) or
raises an error naming the function, the argument, what is accepted and the value. One integer
rule (check_int) for every integer argument. R's counterparts are .arg_int / .arg_num /
.arg_flag in r/R/args.R; the integer and number rules and their texts are the core's
(pg_arg_int / pg_arg_num, native/arg_check.c), for both."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np

from ._native import ffi, lib
from .errors import ArgumentError, PyggmlrValueError, error_for_status

NULL = ffi.NULL

INT_MAX = 2**31 - 1  # R's integer range: the same bound in both languages


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))  # numpy 2 names its type "bool", not "bool_"


def _bound(b):
    """An optional bound for the core (NULL: unbounded); big ints stay finite doubles."""
    return NULL if b is None else ffi.new("double *", float(max(min(b, 2**1000), -(2**1000))))


def as_float(v) -> float:
    """float(v) of a real number; one past a double (10**400, Fraction(10**400, 3)) is +/-Inf, as
    R reads 1e400 (float() raised OverflowError). Every front-end conversion of a user's number
    to the core's double goes through here (issue 29: conv, pooling, schedulers raised it)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def is_real(v) -> bool:
    """v is one real number (a Python or numpy int or float, a Fraction), not a bool."""
    return isinstance(v, numbers.Real) and not _is_bool(v)


def plain(v):
    """v as Python users write it: a numpy scalar as its Python value (np.float64(inf): inf,
    np.int64(3): 3, np.True_: True), what R shows for that value; anything else as it is."""
    return v.item() if isinstance(v, np.generic) and not isinstance(v, np.void) else v


def r_num(v) -> str:
    """A number as R's cat() / format() writes it (7 significant digits: 1e-04, 123456789), the
    core's pg_format_r: ggmlR's printed formats show numbers this way in both languages."""
    buf = ffi.new("char[]", 64)
    return ffi.string(lib.pg_format_r(buf, 64, as_float(v))).decode()


def r_sprintf(v, spec: str) -> str:
    """float v formatted with spec (".6f", ".2e") as R's sprintf() writes it: NaN, Inf and -Inf
    spelled as R does (Python's format gave nan / inf / -inf)."""
    f = as_float(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Inf" if f > 0 else "-Inf"
    return format(f, spec)


def show(v, kind=True):
    """v in an error text as R's .arg_show shows it: one line, at most 80 characters, an int past
    a double as the double it reads as (R's 1e400: inf in Python's words, as the core's texts
    write it; spelled out it ran to 400 digits); the type first for the wrong kind."""
    v = plain(v)  # np.float64(inf) as inf (its repr named numpy's type: issue 29)
    if kind and isinstance(v, numbers.Integral) and math.isinf(as_float(v)):
        return "inf" if as_float(v) > 0 else "-inf"
    s = " ".join((repr(v) if kind else f"{type(v).__name__} {v!r}").split())
    return s if len(s) <= 80 else s[:77] + "..."


def _refused(rc):
    if rc:
        msg = ffi.string(lib.pg_last_error()).decode("utf-8", "replace")
        lib.pg_clear_error()
        raise error_for_status(rc, msg)


def check_int(v, fn, arg, lo=None, hi=INT_MAX, rule=None, core=None):
    """The one integer rule (R's .arg_int is the same; its texts are the core's, pg_arg_int): v
    as an int when it is one whole number of any real kind (a Python or numpy integer, or a
    float with an integral value: 2.0 is 2), finite and in [lo, hi] (None: unbounded; hi
    defaults to R's integer range). ArgumentError for other kinds (bool, str, None, arrays...),
    PyggmlrValueError for fractions, NaN, +/-Inf and values out of range; the text is
    "<fn>: <arg> must be <rule>, got <v>", the rule "an integer >= lo" (or "in [lo, hi]")
    unless the caller words it. core: a core rule of (value, shown, wrong_kind) with its own
    range and text instead (pg_mf_epoch_arg)."""
    if (core is None and type(v) is int and v >= (-INT_MAX if lo is None else lo)
            and (hi is None or v <= hi)):  # fmt: skip
        return v  # the common case: no text to make
    kind = is_real(v)
    iv: Any  # None only where the core refuses v
    if kind and isinstance(v, numbers.Integral):
        iv, f = int(v), as_float(v)  # 10**400: Inf, refused as R's 1e400 (not a big double)
    else:
        f = as_float(v) if kind else 0.0  # Fraction(10**400, 3): Inf (it raised OverflowError)
        iv = int(f) if math.isfinite(f) and f.is_integer() else None
    b = show(v, kind).encode("utf-8", "replace")
    _refused(core(f, b, not kind) if core else
             lib.pg_arg_int(fn.encode(), arg.encode(), f, _bound(lo), _bound(hi),
                            NULL if rule is None else rule.encode(), b, not kind))  # fmt: skip
    return iv


def check_as_integer(v, fn, arg, rule, lo=1, shown=None, kind_error=True):
    """A count as R's as.integer() takes it (the core's rule and text, pg_arg_count, as R's
    .arg_as_integer): one real number >= lo and below INT_MAX + 1, truncated toward zero (1.9 is 1).
    The wrong kind an ArgumentError (kind_error False: read as NaN, a PyggmlrValueError)."""
    kind = is_real(v)
    out, b = ffi.new("double *"), (show(v, kind) if shown is None else shown).encode()
    f = as_float(v) if kind else math.nan
    _refused(lib.pg_arg_count(fn.encode(), arg.encode(), f, lo, rule.encode(), b,
                              kind_error and not kind, out))  # fmt: skip
    return int(out[0])


def check_num(v, fn, arg, lo=None, hi=None, lo_open=False, hi_open=False):
    """v as a float when it is one finite number in the range (open or closed at each end; None:
    unbounded); ArgumentError for other kinds, PyggmlrValueError for NaN, +/-Inf or out of range
    (the core's rule and texts, pg_arg_num, as R's .arg_num)."""
    kind = not _is_bool(v) and isinstance(v, numbers.Real)
    f = as_float(v) if kind else 0.0  # 10**400: Inf (it raised OverflowError)
    _refused(lib.pg_arg_num(fn.encode(), arg.encode(), f, _bound(lo), _bound(hi), lo_open,
                            hi_open, show(v, kind).encode("utf-8", "replace"), not kind))  # fmt: skip
    return f


def match_arg(v, choices, fn, arg):
    """The choice v names, as R's .arg_match (match.arg's pmatch, as ggmlR's: issue 29): v itself,
    else the one choice v is a prefix of ("def": "default"); an empty or ambiguous prefix is
    refused with match.arg's text, an ArgumentError for a non-string, a PyggmlrValueError for
    another string."""
    if isinstance(v, str) and v in choices:
        return v
    hits = [c for c in choices if c.startswith(v)] if isinstance(v, str) and v else []
    if len(hits) == 1:
        return hits[0]
    quoted = ", ".join(f"\u201c{c}\u201d" for c in choices)
    msg = f"{fn}: 'arg' should be one of {quoted} ({arg} = {plain(v)!r})"
    raise (PyggmlrValueError if isinstance(v, str) else ArgumentError)(msg[:300])


def check_flag(v, fn, arg):
    """v as a bool when it is True or False (numpy's too); ArgumentError otherwise ("no", 1, None)."""
    if not _is_bool(v):
        raise ArgumentError(f"{fn}: {arg} must be True or False, got {show(v, False)}"[:300])
    return bool(v)


def asarray(v: Any, error: Callable[[Exception], Exception]) -> np.ndarray:
    """np.asarray(v), with numpy's own refusals (ragged lists, objects, 10**400) raised as
    error(numpy's exception) instead: the caller's class and text."""
    try:
        return _big_ints(np.asarray(v))
    except (ValueError, TypeError, OverflowError) as e:
        raise error(e) from None


def _big_ints(a: np.ndarray) -> np.ndarray:
    """An object array of plain numbers (numpy's fallback for ints past int64: [2**70, 1]) as
    float64, the value R reads for 2^70 (10**400: inf, as R's 1e400), so ids and targets reach
    the core's range checks; any other object array is returned as it is."""
    if a.dtype != object or not a.size:
        return a
    flat = a.ravel()
    num = (int, float, np.integer, np.floating)
    if not all(isinstance(x, num) and not isinstance(x, (bool, np.bool_)) for x in flat):
        return a
    out = np.empty(flat.size, dtype=np.float64)
    for i, x in enumerate(flat):
        try:
            out[i] = float(x)
        except OverflowError:  # an int past the doubles: R's 1e400 is Inf
            out[i] = math.inf if x > 0 else -math.inf
    return out.reshape(a.shape)


def as_numeric(v, fn, arg):
    """np.asarray(v) for numeric data (bool, int, float), with numpy's own refusals (ragged lists,
    objects, 10**400) turned into an ArgumentError naming fn, arg and v's type (R's text for a
    list(): issue 29)."""
    a = asarray(v, lambda e: ArgumentError(f"{fn}: {arg} must be numeric, got {type(v).__name__}"))
    if a.dtype.kind not in "biuf":
        raise ArgumentError(f"{fn}: {arg} must be numeric, got dtype {a.dtype}")
    return a


def check_number(v: Any, fn: str, arg: str) -> float:
    """float(v) for one number of any kind float() takes (NaN and Inf too: the core checks the
    range); PyggmlrValueError for bools, strings, None and what float() refuses."""
    if isinstance(v, (bool, np.bool_, str, bytes)) or v is None:
        raise PyggmlrValueError(f"{fn}: {arg} must be a single number, got {show(v)}")
    try:
        return as_float(v)  # 10**400: Inf (it raised OverflowError)
    except (TypeError, ValueError):  # complex, an array of several
        raise PyggmlrValueError(f"{fn}: {arg} must be a single number, got {show(v)}") from None


def check_real(v, fn, arg):
    """v as a float when it is a real number (Inf and NaN pass: the callers decide); a typed
    error naming the function and the argument otherwise (not float()'s bare TypeError)."""
    if not is_real(v):
        raise ArgumentError(f"{fn}: {arg} must be a number, got {show(v, False)}"[:200])
    return as_float(v)  # 10**400: Inf (it raised OverflowError)
