"""R's random streams, bit for bit, from the C core (native/rng.c).

Every draw of the package (initialisers, dropout masks, shuffles, validation splits) goes
through this generator: R's default Mersenne-Twister, seeded as ``set.seed(k)`` seeds it,
"Inversion" normals and "Rejection" integers. So ``pg.ggml_set_seed(k)`` in Python and
``set.seed(k)`` in R start the same stream, and the same script gives the same numbers in both
languages. The draws R users make themselves are here too, with R's arguments and results::

    pg.ggml_set_seed(42)
    pg.random.runif(3)        # 0.914806043496355, 0.937075413297862, 0.286139534786344
    pg.random.sample(10)      # R's sample(10) after runif(3): 9 4 2 8 1 10 6 5 7 3

A state is R's ``.Random.seed`` (626 integers), so it can move between R and Python. Module
functions use the calling thread's current stream: the process-wide default, or a
``Generator`` made current with ``with gen.active():`` (``ag_fit(seed=)`` runs on one of its own
this way). Each stream has a lock: sharing one between threads never tears its state.
"""

from __future__ import annotations

import contextlib
import numbers
import threading
import warnings
from typing import Any, Iterator, Optional, Sequence, SupportsInt, Union, cast

import numpy as np

from . import _core
from ._args import as_float, plain, show
from ._native import ffi, lib
from .errors import ArgumentError, PyggmlrValueError

__all__ = [
    "ggml_set_seed",
    "set_seed",
    "ag_rng",
    "Generator",
    "runif",
    "rnorm",
    "sample",
    "sample_int",
    "get_state",
    "set_state",
    "STATE_LEN",
]

STATE_LEN = lib.PG_RNG_STATE_LEN  # 626, as R's .Random.seed
_INT_MAX = 2**31 - 1
_active = threading.local()  # per thread: the Generators made current (kept alive while they are)


def _seed_int(seed: Any, fn: str) -> int:
    """R's as.integer(seed) for set.seed, the core's rule (pg_seed_parse, as R's): a number
    truncated toward zero, a string read as one ("42", " 3.9"), in R's integer range."""
    a = ffi.new("pg_seed_arg *", lib.pg_seed_default_arg())
    keep = [ffi.new("char[]", fn.encode()), ffi.new("char[]", b"None")]  # alive for the call
    a.fn, a.null_name = keep[0], keep[1]
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (numbers.Real, str)):
        a.kind = lib.PG_SEED_OTHER
        keep.append(ffi.new("char[]", repr(plain(seed))[:80].encode("utf-8", "replace")))
        a.shown = keep[-1]
    elif isinstance(seed, str):
        a.kind = lib.PG_SEED_STRING
        keep.append(ffi.new("char[]", seed.encode("utf-8", "replace")))
        a.s = keep[-1]
    else:  # an int beyond a double (10**400) is R's Inf, not Python's OverflowError
        a.kind, a.v = lib.PG_SEED_NUMBER, as_float(seed)
    out = ffi.new("int32_t *")
    _core.check(lib.pg_seed_parse(a, out))
    return int(out[0])


def _count(n: Any, fn: str) -> int:
    """R's n argument of runif/rnorm: a count, or a sequence whose length is the count."""
    if isinstance(n, (np.ndarray, list, tuple)) and np.size(n) != 1:
        return int(np.size(n))
    if isinstance(n, (np.ndarray, list, tuple)):
        n = np.asarray(n).reshape(-1)[0]
    if (
        isinstance(n, (bool, np.bool_))
        or not isinstance(n, numbers.Real)
        or not np.isfinite(as_float(n))  # 10**400: refused, not an OverflowError
        or n < 0
    ):
        raise PyggmlrValueError(
            f"{fn}: n must be a count >= 0 (or a sequence, whose length is used), got {show(n)}"
        )
    return int(cast(SupportsInt, n))  # a finite Real (typeshed's Real declares no __int__)


def _vec(v: Any, fn: str, name: str, empty_ok: bool = False):
    try:
        if _text_like(v):  # R's "invalid arguments" (numpy reads None as NaN, "1.5" as 1.5)
            raise TypeError
        a = np.ascontiguousarray(np.asarray(v, dtype=np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise PyggmlrValueError(f"{fn}: {name} must be numbers, got {plain(v)!r}") from None
    if a.size < 1 and not empty_ok:
        raise PyggmlrValueError(f"{fn}: {name} must have at least one value")
    return a


def _text_like(v: Any) -> bool:
    """None, or None or text among the values."""
    if v is None:
        return True
    if np.asarray(v).dtype.kind not in "USO":
        return False
    return any(x is None or isinstance(x, (str, bytes)) for x in np.asarray(v, object).reshape(-1))


class Generator:
    """One stream of R's default generator, with R's draws as methods.

    ``Generator(seed)`` is seeded as ``set.seed(seed)``; ``Generator()`` from the clock (as R
    before any set.seed). ``Generator.default()`` is the process-wide stream that
    ``ggml_set_seed`` seeds. ``with gen.active():`` makes it the calling thread's current stream,
    which the package's layers and module functions draw from."""

    def __init__(self, seed: Optional[int] = None) -> None:
        if seed is None:
            h = lib.pg_rng_new()
        else:
            h = lib.pg_rng_new_seeded(_seed_int(seed, "Generator"))
        if h == ffi.NULL:
            _core.raise_last()
        self._h = ffi.gc(h, lib.pg_rng_free)

    @classmethod
    def default(cls) -> "Generator":
        g = cls.__new__(cls)
        g._h = lib.pg_rng_default()  # borrowed, lives for the process
        return g

    @classmethod
    def current(cls) -> "Generator":
        """The calling thread's current stream (the default unless one is active)."""
        stack = getattr(_active, "stack", None)
        return stack[-1] if stack else cls.default()

    def seed(self, seed: int) -> None:
        """Reseed exactly as set.seed(seed)."""
        _core.check(lib.pg_rng_seed(self._h, _seed_int(seed, "seed")))

    def get_state(self) -> np.ndarray:
        """R's .Random.seed of this stream: int32 [626], 10403 first."""
        out = np.empty(STATE_LEN, dtype=np.int32)
        _core.check(lib.pg_rng_get_state(self._h, ffi.cast("int32_t *", out.ctypes.data)))
        return out

    def set_state(self, state: Union[Sequence[int], np.ndarray]) -> None:
        """Load a .Random.seed (626 integers of R's default kinds, as get_state gives or R's
        ``.Random.seed`` holds)."""
        a = np.asarray(state)
        if (
            a.dtype.kind not in "iuf"
            or (a.dtype.kind == "f" and not np.all(np.isfinite(a)))
            or (a.dtype.kind == "f" and np.any(a != np.round(a)))
        ):
            raise PyggmlrValueError(
                f"set_state: state must hold {STATE_LEN} integers (R's .Random.seed)"
            )
        if a.dtype.kind == "u" or a.dtype.kind == "f":
            a = a.astype(np.int64)
        if np.any(a < -(2**31)) or np.any(a > _INT_MAX):
            raise PyggmlrValueError(
                "set_state: state values must be 32-bit integers (R's .Random.seed)"
            )
        a = np.ascontiguousarray(a.astype(np.int32).reshape(-1))
        _core.check(lib.pg_rng_set_state(self._h, ffi.cast("int32_t *", a.ctypes.data), a.size))

    @contextlib.contextmanager
    def active(self) -> Iterator["Generator"]:
        """Make this the calling thread's current stream inside the block."""
        stack = _active.__dict__.setdefault("stack", [])
        prev = lib.pg_rng_use(self._h)
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()
            lib.pg_rng_use(prev)

    def runif(self, n: Any, min: Any = 0.0, max: Any = 1.0) -> np.ndarray:
        """R's runif(n, min, max): min + (max - min) * u per element, min and max recycled; NaN
        (drawing nothing) where they are not finite or max < min; min where min == max."""
        return _draw2(self._h, lib.pg_rng_runif, "runif", n, min, "min", max, "max")

    def rnorm(self, n: Any, mean: Any = 0.0, sd: Any = 1.0) -> np.ndarray:
        """R's rnorm(n, mean, sd) by inversion (two uniforms a normal); mean and sd recycled."""
        return _draw2(self._h, lib.pg_rng_rnorm, "rnorm", n, mean, "mean", sd, "sd")

    def sample_int(
        self,
        n: Any,
        size: Optional[int] = None,
        replace: bool = False,
        prob: Optional[Any] = None,
        use_hash: Optional[bool] = None,
    ) -> np.ndarray:
        """R's sample.int(n, size, replace, prob, useHash): int64 values in 1..n (1-based, as R).
        use_hash None is R's default (n > 1e7, no replacement, no prob, size <= n / 2)."""
        return _sample_int(self._h, n, size, replace, prob, use_hash)

    def sample(
        self, x: Any, size: Optional[int] = None, replace: bool = False, prob: Optional[Any] = None
    ) -> np.ndarray:
        """R's sample(x, size, replace, prob): a single number x >= 1 samples 1..x (as
        sample.int); otherwise the elements of x (a sequence or 1-D array) are drawn."""
        if (
            isinstance(x, numbers.Real)
            and not isinstance(x, (bool, np.bool_))
            and np.isfinite(float(x))
            and float(x) >= 1
        ):
            return _sample_int(self._h, x, size, replace, prob, None)
        arr = np.asarray(x)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        arr = arr.reshape(-1)
        idx = _sample_int(
            self._h, arr.size, arr.size if size is None else size, replace, prob, None
        )
        return arr[idx - 1]


def _alloc(n, fn, copies=1):
    """The result array of a draw, refused up front when it (and its copies) cannot fit in memory."""
    _core.check(lib.pg_rng_check_size(float(n) * copies, 8, fn.encode()))
    return np.empty(n, dtype=np.float64)


def _draw2(h, cfn, fn, n, a, an, b, bn):
    n = _count(n, fn)
    out = _alloc(n, fn)
    if n == 0:
        return out
    av, bv = _vec(a, fn, an), _vec(b, fn, bn)
    nnan = ffi.new("int64_t *")
    _core.check(
        cfn(
            h,
            n,
            ffi.cast("double *", av.ctypes.data),
            av.size,
            ffi.cast("double *", bv.ctypes.data),
            bv.size,
            ffi.cast("double *", out.ctypes.data),
            nnan,
        )
    )
    if nnan[0]:
        warnings.warn(f"{fn}: NAs produced", RuntimeWarning, stacklevel=3)
    return out


def _sample_int(h, n, size, replace, prob, use_hash):
    fn = "sample.int"
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Real):
        raise PyggmlrValueError(
            f"{fn}: invalid first argument (n must be a number, got {plain(n)!r})"
        )
    dn = float(n)
    if size is None:
        size = dn
    if (
        isinstance(size, (bool, np.bool_))
        or not isinstance(size, numbers.Real)
        or not np.isfinite(float(size))
        or size < 0
    ):
        raise PyggmlrValueError(f"{fn}: invalid 'size' argument ({size!r})")
    k = int(cast(SupportsInt, size))  # a Real (typeshed's Real declares no __int__)
    if not isinstance(replace, (bool, np.bool_)):
        raise ArgumentError(f"{fn}: replace must be True or False, got {plain(replace)!r}")
    out = _alloc(k, fn, copies=2)  # and its int64 copy
    pptr, plen, keep = ffi.NULL, 0, None
    if prob is not None:
        keep = _vec(prob, fn, "prob", empty_ok=True)  # the core checks its length against n
        pptr, plen = ffi.cast("double *", keep.ctypes.data), keep.size
    uh = -1 if use_hash is None else int(bool(use_hash))
    _core.check(
        lib.pg_rng_sample(
            h, dn, k, int(bool(replace)), pptr, plen, uh, ffi.cast("double *", out.ctypes.data)
        )
    )
    return out.astype(np.int64)


# ---- the current stream (module functions, as R's calls on .Random.seed) ----


@contextlib.contextmanager
def keep_rng_on_error() -> Iterator[None]:
    """Put the current stream back when the body raises: a call that fails draws nothing (a
    model built part-way, or an ag_fit set up, before a refusal). R's .keep_rng_on_error."""
    gen = Generator.current()
    state = gen.get_state()
    try:
        yield
    except BaseException:
        gen.set_state(state)
        raise


def ggml_set_seed(seed: Optional[int]) -> Optional[int]:
    """Seed the process-wide stream exactly as R's set.seed(seed) (ggmlR's ggml_set_seed):
    None is a no-op (returns None), otherwise returns the seed as an int (R's as.integer: 3.9
    and "3.9" give 3, "42" gives 42). Everything the package
    draws (initialisers, dropout, shuffles) comes from this stream, so the same seed gives the
    same numbers in R and Python."""
    if seed is None:
        return None
    s = _seed_int(seed, "ggml_set_seed")
    _core.check(lib.pg_rng_seed(lib.pg_rng_default(), s))
    return s


set_seed = ggml_set_seed


def ag_rng() -> Generator:
    """The calling thread's current stream as a Generator (the default one unless a
    Generator is active)."""
    return Generator.current()


# The module functions are bound methods of one Generator whose handle is NULL, the core's name
# for the calling thread's current stream (numpy.random's functions are a hidden RandomState's).
_current = Generator.__new__(Generator)
_current._h = ffi.NULL
runif, rnorm = _current.runif, _current.rnorm
sample_int, sample = _current.sample_int, _current.sample
get_state, set_state = _current.get_state, _current.set_state
