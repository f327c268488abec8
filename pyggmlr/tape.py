"""The gradient tape and backward()."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional

from . import _core
from ._core import NULL, lib
from .errors import ArgumentError, GradientKeyError, StateError
from .tensor import Tensor, _read

__all__ = ["with_grad_tape", "backward", "Gradients", "ag_no_grad", "ag_tape_clear"]


# An exception raised by Python code the core called back during backward() (an ag_checkpoint
# replay), kept per thread until the call into the core returns, then raised unchanged.
_pending = threading.local()


def _raise_pending() -> None:
    exc = getattr(_pending, "exc", None)
    if exc is not None:
        _pending.exc = None
        raise exc


class _TapeScope:
    __slots__ = ()

    def __enter__(self):
        d = lib.pg_tape_depth()
        try:
            _core.check(lib.pg_tape_begin())
        except BaseException:  # an interrupt right after the begin: the scope is not left open
            lib.pg_tape_end_to(d)
            raise
        return self

    def __exit__(self, *exc):
        lib.pg_tape_end()  # a refused second close (depth 0) changes nothing
        return False


class ag_no_grad:
    """Context manager: ops inside are not recorded on the tape."""

    def __enter__(self):
        self._prev = lib.pg_tape_enabled()  # read first: nothing changed until __exit__ is due
        lib.pg_tape_set_enabled(0)
        return self

    def __exit__(self, *exc):
        lib.pg_tape_set_enabled(self._prev)
        return False


def with_grad_tape(fn: Optional[Callable[..., Any]] = None, *args: Any, **kwargs: Any) -> Any:
    """Record ops for backward().

    ``with with_grad_tape(): ...`` records the block; ``with_grad_tape(fn, *args)`` calls fn
    under the tape and returns its value. The outermost scope empties the tape first (as
    ggmlR does); nested scopes record onto the same tape and leave the outer one intact.
    Nodes stay after the scope closes, for backward(), until zero_grad() or the next tape.
    """
    if fn is None:
        return _TapeScope()
    if not callable(fn):
        raise ArgumentError(
            f"with_grad_tape(): expected a callable or no argument, got {type(fn).__name__}"
        )
    with _TapeScope():
        return fn(*args, **kwargs)


def ag_tape_clear() -> None:
    """Drop all recorded nodes (and the activations only they keep alive)."""
    lib.pg_tape_clear()


class Gradients(Mapping):
    """Gradient map returned by backward(): keyed by tensor id, also indexable by the tensor
    itself or by str(id) (as ggmlR's environment). Values are numpy arrays (copied on first
    access). Holds the C map, so optimizers read the gradients without copies."""

    __slots__ = ("_m", "_cache", "__weakref__")

    def __init__(self, m: Any) -> None:
        self._m = m
        self._cache: Dict[int, Any] = {}

    def __copy__(self):  # the C map has one owner: a copy would free it twice
        raise StateError(
            "gradient maps cannot be copied; use {k: v for k, v in grads.items()} for numpy copies"
        )

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return self.__copy__()

    def __del__(self, _free=lib.pg_gradmap_free):
        m = getattr(self, "_m", None)
        if m is not None:
            _free(m)

    def _lookup(self, key):
        m = self._m
        if isinstance(key, Tensor):
            return lib.pg_gradmap_get(m, key._handle())
        if isinstance(key, str):
            try:
                key = int(key)
            except ValueError:
                return NULL
        if isinstance(key, int):
            return lib.pg_gradmap_get_id(m, key)
        return NULL

    def __getitem__(self, key):
        g = self._lookup(key)
        if g == NULL:
            raise GradientKeyError(key)
        k = lib.pg_tensor_id(g)
        v = self._cache.get(k)
        if v is None:
            v = self._cache[k] = _read(g)
        return v

    def get_tensor(self, key):
        """The gradient as a Tensor sharing the map's storage (no copy)."""
        g = self._lookup(key)
        if g == NULL:
            raise GradientKeyError(key)
        lib.pg_tensor_retain(g)
        t = Tensor.__new__(Tensor)
        t._p = g
        return t

    def __contains__(self, key):
        return self._lookup(key) != NULL

    def __iter__(self):
        m = self._m
        for i in range(lib.pg_gradmap_size(m)):
            yield lib.pg_gradmap_key_id(m, i)

    def __len__(self):
        return lib.pg_gradmap_size(self._m)

    def __repr__(self):
        return f"<Gradients: {len(self)} tensors>"


def backward(loss: Tensor) -> Gradients:
    """Reverse-mode gradients of a 1x1 loss over the current tape.

    Returns a Gradients map (tensor id -> numpy gradient; also indexable by the tensor). Adds
    each leaf parameter's gradient to its ``.grad`` once (accumulating across calls, as in
    PyTorch). Raises ShapeError if loss is not 1x1."""
    if not isinstance(loss, Tensor):
        raise ArgumentError(f"backward() requires an ag_tensor, got {type(loss).__name__}")
    _pending.exc = None
    m = lib.pg_backward(loss._handle("backward"))
    if m == NULL:
        _raise_pending()  # an error inside an ag_checkpoint segment's replay, as raised
        _core.raise_last()
    return Gradients(m)
