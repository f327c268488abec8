"""Argument checks, in one place: each returns the value converted (int, float, bool, array) or
raises an error naming the function, the argument, what is accepted and the value. One integer
rule (check_int) for every integer argument. R's counterparts are .arg_int / .arg_num /
.arg_flag in r/R/fit_util.R, with the same rules and texts."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

import numpy as np

from .errors import ArgumentError, PyggmlrValueError

INT_MAX = 2**31 - 1  # R's integer range: the same bound in both languages


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))  # numpy 2 names its type "bool", not "bool_"


def check_int(v, fn, arg, lo=None, hi=INT_MAX, rule=None):
    """The one integer rule (R's .arg_int is the same): v as an int when it is one whole number
    of any real kind (a Python or numpy integer, or a float with an integral value: 2.0 is 2),
    finite and in [lo, hi] (None: unbounded; hi defaults to R's integer range). ArgumentError
    for other kinds (bool, str, None, arrays...), PyggmlrValueError for fractions, NaN, +/-Inf
    and values out of range; the text is "<fn>: <arg> must be <rule>, got <v>", the rule
    "an integer >= lo" (or "in [lo, hi]") unless the caller words it."""
    if rule is not None:
        rng = rule
    elif lo is None and hi is None:
        rng = "an integer"
    elif lo is not None and (hi is None or hi == INT_MAX):
        rng = f"an integer >= {lo}"  # R's bound is named only when it is hit
    else:
        rng = f"an integer in [{'-Inf' if lo is None else lo}, {hi}]"
    if _is_bool(v) or not isinstance(v, numbers.Real):
        raise ArgumentError(f"{fn}: {arg} must be {rng}, got {type(v).__name__} {v!r}"[:300])
    if isinstance(v, numbers.Integral):
        iv = int(v)
    else:
        f = float(v)
        if not math.isfinite(f) or not f.is_integer():
            raise PyggmlrValueError(f"{fn}: {arg} must be {rng}, got {v!r}")
        iv = int(f)
    if (lo is not None and iv < lo) or (hi is not None and iv > hi):
        if hi == INT_MAX and iv > hi and rule is None:
            rng += f" and <= {INT_MAX} (R's integer range)"
        raise PyggmlrValueError(f"{fn}: {arg} must be {rng}, got {v!r}")
    return iv


def check_num(v, fn, arg, lo=None, hi=None, lo_open=False, hi_open=False):
    """v as a float when it is one finite number in the range (open or closed at each end; None:
    unbounded); ArgumentError for other kinds, PyggmlrValueError for NaN, +/-Inf or out of range."""
    if hi is None:
        rng = "a finite number" + ("" if lo is None else f" {'>' if lo_open else '>='} {lo:g}")
    else:
        rng = (
            f"a finite number in {'(' if lo_open else '['}{'-Inf' if lo is None else format(lo, 'g')}, "
            f"{hi:g}{')' if hi_open else ']'}"
        )
    if _is_bool(v) or not isinstance(v, numbers.Real):
        raise ArgumentError(f"{fn}: {arg} must be {rng}, got {type(v).__name__} {v!r}"[:300])
    f = float(v)
    ok = f == f and f not in (float("inf"), float("-inf"))
    if ok and lo is not None:
        ok = f > lo if lo_open else f >= lo
    if ok and hi is not None:
        ok = f < hi if hi_open else f <= hi
    if not ok:
        raise PyggmlrValueError(f"{fn}: {arg} must be {rng}, got {v!r}")
    return f


def check_flag(v, fn, arg):
    """v as a bool when it is True or False (numpy's too); ArgumentError otherwise ("no", 1, None)."""
    if not _is_bool(v):
        raise ArgumentError(
            f"{fn}: {arg} must be True or False, got {type(v).__name__} {v!r}"[:300]
        )
    return bool(v)


def asarray(v: Any, error: Callable[[Exception], Exception]) -> np.ndarray:
    """np.asarray(v), with numpy's own refusals (ragged lists, objects, 10**400) raised as
    error(numpy's exception) instead: the caller's class and text."""
    try:
        return np.asarray(v)
    except (ValueError, TypeError, OverflowError) as e:
        raise error(e) from None


def as_numeric(v, fn, arg):
    """np.asarray(v) for numeric data (bool, int, float), with numpy's own refusals (ragged lists,
    objects, 10**400) turned into an ArgumentError naming fn and arg."""
    a = asarray(
        v,
        lambda e: ArgumentError(
            f"{fn}: {arg} must be a numeric array (a rectangular list of numbers or an array), "
            f"got {type(v).__name__}: {str(e).split('.')[0]}"
        ),
    )
    if a.dtype.kind not in "biuf":
        raise ArgumentError(f"{fn}: {arg} must be numeric, got dtype {a.dtype}")
    return a


def check_number(v: Any, fn: str, arg: str) -> float:
    """float(v) for one number of any kind float() takes (NaN and Inf too: the core checks the
    range); PyggmlrValueError for bools, strings, None and what float() refuses."""
    if isinstance(v, (bool, np.bool_, str, bytes)) or v is None:
        raise PyggmlrValueError(f"{fn}: {arg} must be a single number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise PyggmlrValueError(f"{fn}: {arg} must be a single number, got {v!r}") from None


def check_real(v, fn, arg):
    """v as a float when it is a real number (Inf and NaN pass: the callers decide); a typed
    error naming the function and the argument otherwise (not float()'s bare TypeError)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ArgumentError(f"{fn}: {arg} must be a number, got {type(v).__name__} {v!r}"[:200])
    return float(v)
