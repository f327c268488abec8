"""Exception types (and the shared argument checks, at the end). Every error raised by the C core maps onto one of these; each also
inherits the matching builtin so ``except ValueError`` keeps working."""

from ._native import lib as _lib  # the core's status codes (enum pg_status)


class PyggmlrError(Exception):
    """Base class of all pyggmlr errors."""


class ShapeError(PyggmlrError, ValueError):
    """Operand shapes do not fit the operation (the message names the op and the shapes)."""


class DTypeError(PyggmlrError, TypeError):
    """A dtype is not allowed or operands disagree."""


class PyggmlrValueError(PyggmlrError, ValueError):
    """A bad argument value (out-of-range index, negative size, unknown option...)."""


class PyggmlrMemoryError(PyggmlrError, MemoryError):
    """The C core could not allocate memory."""


class StateError(PyggmlrError, RuntimeError):
    """The call is not valid in the current state (dead handle, tape misuse...)."""


class ArgumentError(PyggmlrError, TypeError):
    """An argument of the wrong kind (not a tensor, freed or foreign object...)."""


class GradientKeyError(PyggmlrError, KeyError):
    """A gradient map has no entry for that tensor or id (a KeyError, as Mapping lookups need)."""


class ModifiedTensorError(StateError):
    """backward() needs a tensor whose values were overwritten after the forward pass recorded
    it (``x.data = ...``, a write through a numpy view, an optimizer step): the message names
    the tensor, the op and both versions (as PyTorch's in-place modification error)."""


# C status code -> exception type (enum pg_status in native/pg_api.h)
_BY_STATUS = {
    _lib.PG_STATUS_ERR_SHAPE: ShapeError,
    _lib.PG_STATUS_ERR_DTYPE: DTypeError,
    _lib.PG_STATUS_ERR_VALUE: PyggmlrValueError,
    _lib.PG_STATUS_ERR_NOMEM: PyggmlrMemoryError,
    _lib.PG_STATUS_ERR_STATE: StateError,
    _lib.PG_STATUS_ERR_ARG: ArgumentError,
    _lib.PG_STATUS_ERR_MODIFIED: ModifiedTensorError,
}


def caller_op(depth=2):
    """Name of the nearest ag_* function up the stack from the caller's caller (for messages
    raised by shared helpers on their failure paths only); "pyggmlr" if there is none."""
    import sys
    f = sys._getframe(depth)
    for _ in range(5):
        if f is None:
            break
        name = f.f_code.co_name
        if name.startswith("ag_") or name in ("backward", "clip_grad_norm", "with_grad_tape"):
            return name
        f = f.f_back
    return "pyggmlr"


def error_for_status(status, message):
    """The typed exception (not raised) for a C status code and message: ShapeError for 1,
    DTypeError, ...; PyggmlrError for an unknown code."""
    return _BY_STATUS.get(status, PyggmlrError)(message)


# ---------------------------------------------------------------------------------------------
# Argument checks shared by the front-end helpers (issue 19): one place for "an integer in a
# range" and "a finite number in a range", each message naming the function, the argument, the
# accepted range and the value. R's counterparts are .arg_int / .arg_num in r/R/fit_util.R.

INT_MAX = 2**31 - 1  # R's integer range: the same bound in both languages


def _is_bool(v):
    return isinstance(v, bool) or type(v).__name__ == "bool_"


def check_int(v, fn, arg, lo=None, hi=INT_MAX):
    """v as an int when it is one whole number in [lo, hi] (a Python or numpy integer, or a float
    with an integral value); ArgumentError for other kinds (bool, str, arrays, None...),
    PyggmlrValueError for fractions, non-finite values and values out of range."""
    import numbers
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
    import numbers
    if hi is None:
        rng = "a finite number" + ("" if lo is None else f" {'>' if lo_open else '>='} {lo:g}")
    else:
        rng = (f"a finite number in {'(' if lo_open else '['}{'-Inf' if lo is None else format(lo, 'g')}, "
               f"{hi:g}{')' if hi_open else ']'}")
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
        raise ArgumentError(f"{fn}: {arg} must be True or False, got {type(v).__name__} {v!r}"[:300])
    return bool(v)


def as_numeric(v, fn, arg):
    """np.asarray(v) for numeric data (bool, int, float), with numpy's own refusals (ragged lists,
    objects, 10**400) turned into an ArgumentError naming fn and arg."""
    import numpy as np
    try:
        a = np.asarray(v)
    except (ValueError, TypeError, OverflowError) as e:
        raise ArgumentError(f"{fn}: {arg} must be a numeric array (a rectangular list of numbers or an array), "
                            f"got {type(v).__name__}: {str(e).split('.')[0]}") from None
    if a.dtype.kind not in "biuf":
        raise ArgumentError(f"{fn}: {arg} must be numeric, got dtype {a.dtype}")
    return a


def as_flag(v, fn, arg):
    """bool(v) for a single value (Python's truthiness, as before), but a container or an array is
    an ArgumentError naming fn and arg instead of numpy's "truth value is ambiguous"."""
    import numpy as np
    if isinstance(v, (list, tuple, dict, set, np.ndarray)):
        raise ArgumentError(f"{fn}: {arg} must be True or False, got {type(v).__name__}")
    return bool(v)
