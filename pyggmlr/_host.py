"""Host values (numbers, strings, matrices) as the core's structs, kept alive across calls:
shared by state dicts (nn), optimizer state (optim) and ag_fit's callbacks and hyper-parameters."""

from __future__ import annotations

import numbers
from typing import Any, Iterable, List, Optional, Tuple

import numpy as np

from ._core import ffi, lib
from .tensor import Tensor

__all__ = ["HostValues", "dims"]


def dims(a: np.ndarray) -> Tuple[Any, int]:
    """a's shape as the core takes it: (int64_t[], ndim)."""
    return ffi.new("int64_t[]", list(a.shape) or 1), a.ndim


class HostValues:
    """Host data as the core's structs (strings, pg_host_value, pg_host_matrix); keeps every
    buffer alive across calls."""

    def __init__(self) -> None:
        self.keep: List[Any] = []

    def text(self, s: str):
        b = ffi.new("char[]", s.encode("utf-8", "replace"))
        self.keep.append(b)
        return b

    def value(self, dst, v: Any, show: bool = False) -> None:
        """dst <- v: its kind and number; show: the display is str(v) whatever it is."""
        if v is None:
            dst.kind = lib.PG_HOST_ABSENT
        elif isinstance(v, (bool, np.bool_)):
            dst.kind, dst.num = lib.PG_HOST_BOOL, float(bool(v))
        elif isinstance(v, numbers.Integral):
            dst.kind, dst.num = lib.PG_HOST_INT, float(v)
        elif isinstance(v, numbers.Real):
            dst.kind, dst.num = lib.PG_HOST_NUM, float(v)
        elif isinstance(v, str):
            dst.kind, dst.text = lib.PG_HOST_TEXT, self.text(v)
        else:
            dst.kind, dst.text = lib.PG_HOST_OTHER, self.text(str(v))
        if show:
            dst.text = self.text(str(v))

    def strings(self, xs: Iterable[Any]):
        """xs as the core's const char *[]: UTF-8 strings, NULL for anything else (a missing
        label)."""
        arr = ffi.new(
            "const char *[]", [self.text(x) if isinstance(x, str) else ffi.NULL for x in xs] or 1
        )
        self.keep.append(arr)
        return arr

    def matrices(self, vals: List[Any], used: Any = None, none: bool = True, bad: tuple = ()):
        """vals as pg_host_matrix[]: absent for None (none), else the dims (a tensor stands for
        its values; bad: the dims of what numpy cannot take), numbers or not, and the Fortran
        doubles of a numeric 2-D value whose index is in used (None: every one)."""
        arr = ffi.new("pg_host_matrix[]", max(len(vals), 1))
        self.keep.append(arr)
        for i, (m, v) in enumerate(zip(arr, vals)):
            if v is None and none:
                continue
            try:
                a: Optional[np.ndarray] = np.asarray(v.numpy() if isinstance(v, Tensor) else v)
            except Exception:  # noqa: BLE001 - ragged or unconvertible: no numbers
                a = None
            shape = bad if a is None else a.shape
            dims = ffi.new("int64_t[]", [int(d) for d in shape] or 1)
            self.keep.append(dims)
            m.present, m.ndim, m.dims = 1, len(shape), dims
            m.numeric = a is not None and a.dtype.kind in "iuf"
            if a is not None and m.numeric and a.ndim == 2 and (used is None or i in used):
                d = np.asfortranarray(a, dtype=np.float64)
                self.keep.append(d)
                m.data = ffi.cast("double *", d.ctypes.data)
        return arr
