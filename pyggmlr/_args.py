"""Argument checks, in one place: each returns the value converted (int, float, bool, array) or
raises an error naming the function, the argument, what is accepted and the value. R's
counterparts are .arg_int / .arg_num in r/R/fit_util.R."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, SupportsInt, cast

import numpy as np

from .errors import ArgumentError, PyggmlrValueError

INT_MAX = 2**31 - 1  # R's integer range: the same bound in both languages


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))  # numpy 2 names its type "bool", not "bool_"


def check_int(v, fn, arg, lo=None, hi=INT_MAX):
    """v as an int when it is one whole number in [lo, hi] (a Python or numpy integer, or a float
    with an integral value); ArgumentError for other kinds (bool, str, arrays, None...),
    PyggmlrValueError for fractions, non-finite values and values out of range."""
    if hi is None or (hi == INT_MAX and lo is not None):
        rng = f"an integer >= {lo}"  # the bound is named only when it is hit
    else:
        rng = f"an integer in [{'-inf' if lo is None else lo}, {hi}]"
    if _is_bool(v) or not isinstance(v, numbers.Real):
        raise ArgumentError(f"{fn}: {arg} must be {rng}, got {type(v).__name__} {v!r}"[:300])
    if isinstance(v, numbers.Integral):
        iv = int(v)
    else:
        f = float(v)
        if f != f or f in (float("inf"), float("-inf")) or not f.is_integer():
            raise PyggmlrValueError(f"{fn}: {arg} must be {rng}, got {v!r}")
        iv = int(f)
    if (lo is not None and iv < lo) or (hi is not None and iv > hi):
        if hi == INT_MAX and iv > hi:
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


def as_flag(v, fn, arg):
    """bool(v) for a single value (Python's truthiness, as before), but a container or an array is
    an ArgumentError naming fn and arg instead of numpy's "truth value is ambiguous"."""
    if isinstance(v, (list, tuple, dict, set, np.ndarray)):
        raise ArgumentError(f"{fn}: {arg} must be True or False, got {type(v).__name__}")
    return bool(v)


def check_min_int(v, fn, arg, lo):
    """v as an int when it is a Python or numpy integer (not a bool) >= lo; PyggmlrValueError
    otherwise (floats too)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise PyggmlrValueError(f"{fn}: {arg} must be an integer >= {lo}, got {v!r}")
    return int(v)


def check_count(v, fn, arg):
    """v as an int when it is a finite whole number >= 0 of any real kind (3.0 too)."""
    # numbers.Real does not declare __int__ to type checkers, though every Real has one
    if (
        isinstance(v, bool)
        or not isinstance(v, numbers.Real)
        or not math.isfinite(v)
        or v < 0
        or v != int(cast(SupportsInt, v))
    ):
        raise PyggmlrValueError(f"{fn}: {arg} must be a non-negative whole number, got {v!r}")
    return int(cast(SupportsInt, v))


def check_r_int(v, fn, arg):
    """v as an int when it is an integer, or a float with an integral value, in R's integer
    range; ArgumentError for other kinds, PyggmlrValueError beyond the range."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            v = int(v)
        else:
            raise ArgumentError(f"{fn}: '{arg}' must be an integer, got {v!r}")
    if (
        abs(int(v)) > INT_MAX
    ):  # R's integer range in both languages (numpy's "maximum dimension" else)
        raise PyggmlrValueError(
            f"{fn}: '{arg}' must be an integer of at most {INT_MAX} in size "
            f"(R's integer range), got {v!r}"
        )
    return int(v)


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
