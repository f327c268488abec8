"""ag_fit(sample_weight=, class_weight=): the arguments as arrays for the core, which checks the
values, builds the plan's weight row and owns the weighted losses (native/fit_weight.c,
native/fit_wloss.c; R's fit_weight.R converts the same way)."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _core
from .._args import as_numeric
from .._core import NULL, ffi, lib
from ..errors import ArgumentError, PyggmlrValueError, ShapeError
from ..tensor import Tensor

__all__: List[str] = []

_MAX_CLASS = 2**24  # R's fit_weight.R: the same bound


def sample_weights(v: Any) -> Optional[np.ndarray]:
    """A numeric vector of n (a [1, n] or [n, 1] array too) as float64, or None."""
    if v is None:
        return None
    a = v.numpy() if isinstance(v, Tensor) else as_numeric(v, "ag_fit", "sample_weight")
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ShapeError(
            f"ag_fit: sample_weight must be a vector of one weight per sample, got shape {a.shape}"
        )
    return np.ascontiguousarray(a, dtype=np.float64)


def _class_id(k: Any) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer, float, np.floating)):
        raise ArgumentError(
            f"ag_fit: class_weight's keys must be 0-based class ids (integers), got {k!r}"
        )
    f = float(k)
    if not (math.isfinite(f) and f >= 0 and f == math.floor(f)):
        raise PyggmlrValueError(
            f"ag_fit: class_weight's keys must be 0-based class ids (whole numbers >= 0), got {k!r}"
        )
    if k > _MAX_CLASS:  # the core takes a table by class id: a bound on its size
        raise PyggmlrValueError(f"ag_fit: class_weight's class id {k!r} is above {_MAX_CLASS}")
    return int(k)


def class_weights(v: Any) -> Optional[np.ndarray]:
    """A dict {class id: weight} or a sequence indexed by class id as a table by class id, NaN
    where a class is not given (it weighs 1, as keras'); None."""
    if v is None:
        return None
    if isinstance(v, dict):
        ids = [_class_id(k) for k in v]
        if len(set(ids)) != len(ids):
            raise PyggmlrValueError("ag_fit: class_weight names a class id twice")
        table = np.full(max(ids) + 1 if ids else 0, np.nan)
        for c, w in zip(ids, v.values()):
            if isinstance(w, (bool, np.bool_)) or not isinstance(
                w, (int, float, np.integer, np.floating)
            ):
                raise ArgumentError(
                    f"ag_fit: class_weight's values must be numbers, got {w!r} for class {c}"
                )
            table[c] = float(w)
            if math.isnan(table[c]):  # NaN means "not given" to the core: refuse it here
                raise PyggmlrValueError(
                    f"ag_fit: class_weight must be finite and >= 0; class {c} has nan"
                )
        return table
    if isinstance(v, (str, bytes)):
        raise ArgumentError(
            f"ag_fit: class_weight must be a dict {{class: weight}} or a sequence, got {v!r}"
        )
    a = as_numeric(v, "ag_fit", "class_weight").astype(np.float64)
    if a.ndim != 1:
        raise ShapeError(
            f"ag_fit: class_weight must be a dict or a 1-d sequence indexed by class, got shape {a.shape}"
        )
    bad = np.flatnonzero(np.isnan(a))
    if bad.size:
        raise PyggmlrValueError(
            f"ag_fit: class_weight must be finite and >= 0; class {int(bad[0])} has nan"
        )
    return np.ascontiguousarray(a)


def attach(plan: Any, loss_code: int, sw: Optional[np.ndarray], cw: Optional[np.ndarray]) -> bool:
    """The weights on the plan (the core's checks); True when the run is weighted."""
    if sw is None and cw is None:
        return False
    p_sw = NULL if sw is None else ffi.cast("double *", ffi.from_buffer(sw))
    p_cw = NULL if cw is None else ffi.cast("double *", ffi.from_buffer(cw))
    _core.check(
        lib.pg_fit_set_weights(
            plan._p,
            loss_code,
            p_sw,
            0 if sw is None else sw.size,
            p_cw,
            0 if cw is None else cw.size,
        )
    )
    return True


def weight_spec(sw: Any, cw: Any) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """ag_fit's (sample_weight, class_weight) as (float64 vector or None, table by class id or
    None); ArgumentError / ShapeError / PyggmlrValueError naming ag_fit and the argument."""
    return sample_weights(sw), class_weights(cw)
