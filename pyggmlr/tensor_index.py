"""Tensor indexing, numpy style: ``t[i, j]``, ``t[:, 2:5]``, ``t[0]``, negative indices, integer
lists / arrays and boolean masks, as one differentiable core op (pg_take, native/ops_index.c):
the key becomes a list of column-major element positions, the gradient scatters back (adding
where a position repeats).

Tensors stay 2-D: ``t[i, j]`` is [1, 1], ``t[i]`` (= ``t[i, :]``) a [1, ncol] row, ``t[:, j]``
an [nrow, 1] column. Two index arrays pair up element by element (numpy's rule) into a
[k, 1] column; an array with a slice or an integer selects the outer product. A boolean mask of
the tensor's full shape picks the True entries in column-major order (R's ``x[m]`` order; numpy
walks rows first) as a [k, 1] column.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from ._core import ffi, lib
from .errors import ArgumentError, PyggmlrError
from .tensor import Tensor, _wrap

__all__ = ["PyggmlrIndexError"]


class PyggmlrIndexError(PyggmlrError, IndexError):
    """An index out of range for the tensor's shape (also an IndexError, so iterating over a
    tensor's rows stops where Python expects)."""


def _axis(k: Any, n: int, axis: str, shape: Tuple[int, int]) -> Tuple[np.ndarray, bool]:
    """(0-based positions along one axis, whether the key was an array)."""
    if isinstance(k, Tensor):
        k = k.numpy().ravel(order="F")
    if k is None or k is Ellipsis:
        raise ArgumentError(
            f"tensor indexing: {k!r} is not supported along the {axis}s (tensors are 2-D [rows, cols])"
        )
    if isinstance(k, slice):
        return np.arange(n, dtype=np.int64)[k], False
    if isinstance(k, (bool, np.bool_)):
        raise ArgumentError(
            f"tensor indexing: a bare boolean is not an index along the {axis}s; pass a mask array"
        )
    if isinstance(k, (int, np.integer)):
        i = int(k)
        if not -n <= i < n:
            raise PyggmlrIndexError(
                f"tensor indexing: {axis} index {i} is out of range for a [{shape[0]}x{shape[1]}] "
                f"tensor (valid: {-n}..{n - 1}, 0-based)"
            )
        return np.array([i % n], dtype=np.int64), False
    a = np.asarray(k)
    if a.dtype == np.bool_:
        if a.ndim != 1 or a.size != n:
            raise PyggmlrIndexError(
                f"tensor indexing: a boolean {axis} mask needs {n} entries, got shape {a.shape}"
            )
        return np.flatnonzero(a).astype(np.int64), True
    if a.dtype.kind == "f" and a.size and np.all(np.mod(a, 1) == 0):
        a = a.astype(np.int64)  # whole numbers, as R's numeric indices
    if a.size == 0:
        return np.zeros(0, dtype=np.int64), True
    if a.dtype.kind not in "iu" or a.ndim != 1:
        raise ArgumentError(
            f"tensor indexing: {axis} index must be an integer, a slice, a 1-D integer list / array "
            f"or a boolean mask, got {type(k).__name__} {getattr(a, 'dtype', '')}"
        )
    bad = (a < -n) | (a >= n)
    if bad.any():
        raise PyggmlrIndexError(
            f"tensor indexing: {axis} index {int(a[bad][0])} is out of range for a "
            f"[{shape[0]}x{shape[1]}] tensor (valid: {-n}..{n - 1}, 0-based)"
        )
    return np.where(a < 0, a + n, a).astype(np.int64), True


def _positions(t: Tensor, key: Any) -> Tuple[np.ndarray, int, int]:
    """(column-major positions, result rows, result cols) for key on t."""
    R, C = t.shape
    mask = np.asarray(key) if isinstance(key, (list, np.ndarray)) else None
    if mask is not None and mask.dtype == np.bool_ and mask.ndim == 2:
        if mask.shape != (R, C):
            raise PyggmlrIndexError(
                f"tensor indexing: a boolean mask of shape {mask.shape} does not match the tensor [{R}x{C}]"
            )
        pos = np.flatnonzero(mask.ravel(order="F")).astype(np.int64)
        return pos, pos.size, 1
    if not isinstance(key, tuple):
        key = (key, slice(None))
    if len(key) != 2:
        raise ArgumentError(
            f"tensor indexing: tensors are 2-D [rows, cols]; got {len(key)} indices"
        )
    ri, ra = _axis(key[0], R, "row", (R, C))
    ci, ca = _axis(key[1], C, "column", (R, C))
    if ra and ca:  # numpy pairs two index arrays element by element
        if ri.size != ci.size:
            raise PyggmlrIndexError(
                f"tensor indexing: row and column index arrays pair up element by element and need "
                f"the same length, got {ri.size} and {ci.size}"
            )
        return ri + ci * R, ri.size, 1
    pos = (ri[:, None] + ci[None, :] * R).ravel(order="F")
    return pos, ri.size, ci.size


def _getitem(self: Tensor, key: Any) -> Tensor:
    """Tensor.__getitem__ (t[key]): the selected entries as a new 2-D tensor; differentiable
    (the gradient flows back to the selected entries of t, summed where one is selected more
    than once).

    Raises: PyggmlrIndexError (an IndexError) for an index out of range or a mask of the wrong
    size, ArgumentError for a key of another kind (None, ..., floats, 3 indices)."""
    pos, nr, nc = _positions(self, key)
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    ptr = ffi.cast("int64_t *", pos.ctypes.data) if pos.size else ffi.NULL
    return _wrap(lib.pg_take(self._handle(), ptr, int(pos.size), int(nr), int(nc)))
