"""ag_fit(sample_weight=, class_weight=): the arguments as arrays for the core, which checks the
values, builds the plan's weight row and owns the weighted losses (native/fit_weight.c,
native/fit_wloss.c; R's fit_weight.R converts the same way)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _core
from .._args import as_numeric, plain
from .._core import NULL, ffi, lib
from .._host import HostValues, dims
from ..errors import ArgumentError
from ..tensor import Tensor
from .labels import _r_str

__all__: List[str] = []


def _no_flags(a: np.ndarray, arg: str) -> None:
    """True / False are no weights (R refuses a logical vector: the same rule)."""
    if a.dtype.kind == "b":
        raise ArgumentError(f"ag_fit: {arg} must be numeric, got dtype bool")


def sample_weights(v: Any) -> Optional[np.ndarray]:
    """A numeric vector of n (a [1, n] or [n, 1] array too) as float64, or None."""
    if v is None:
        return None
    a = v.numpy() if isinstance(v, Tensor) else as_numeric(v, "ag_fit", "sample_weight")
    _no_flags(a, "sample_weight")
    _core.check(lib.pg_fit_weight_shape(*dims(a)))
    return np.ascontiguousarray(a.reshape(-1), dtype=np.float64)  # the core's rule, as R's


def _number(v: Any, what: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ArgumentError(f"ag_fit: class_weight's {what}, got {plain(v)!r}")
    return float(v)


def _key(k: Any, labels: bool) -> Optional[str]:
    """A dict key as the core reads it (R's names): a label as given, a number as its text
    (an int as R writes it, a float's repr: exact; with labels y, as a numeric Categorical's
    category reads, R's factor level: 1.0 is "1"), None as a missing key."""
    if k is None or isinstance(k, str):
        return k
    v = _number(k, "keys must be class labels (strings) or 0-based class ids (numbers)")
    if isinstance(k, (int, np.integer)):
        return str(int(k))
    return _r_str(v) if labels else repr(plain(v))


def class_weights(
    v: Any, classes: Optional[List[str]]
) -> Optional[Tuple[Optional[np.ndarray], np.ndarray]]:
    """A dict {class: weight} as (ids, weights), its keys mapped to 0-based class ids by the core
    (pg_fit_class_keys, R's names too: with labels y (classes) the labels, else ids); a sequence
    indexed by class id as (None, weights) (the core checks both: whole-number ids, each once,
    finite weights >= 0); None."""
    if v is None:
        return None
    if isinstance(v, dict):
        keys = [_key(k, classes is not None) for k in v]
        w = np.array([_number(x, "values must be numbers") for x in v.values()], dtype=np.float64)
        h = HostValues()
        ids = np.empty(len(keys), dtype=np.float64)
        nclass = -1 if classes is None else len(classes)
        _core.check(
            lib.pg_fit_class_keys(h.strings(keys), len(keys), h.strings(classes or []), nclass,
                                  ffi.cast("double *", ids.ctypes.data))
        )  # fmt: skip
        return ids, w
    if isinstance(v, (str, bytes)):
        raise ArgumentError(
            "ag_fit: class_weight must be a dict {class: weight} or a sequence of weights in "
            f"class-id order, got {plain(v)!r}"
        )
    a = as_numeric(v, "ag_fit", "class_weight")
    _no_flags(a, "class_weight")
    a = a.astype(np.float64)
    if a.ndim != 1:  # the wrong kind, as R's refusal of a matrix
        raise ArgumentError(
            "ag_fit: class_weight must be a dict or a 1-d sequence indexed by class, got shape "
            f"{a.shape}"
        )
    return None, np.ascontiguousarray(a)


def attach(
    plan: Any,
    loss_code: int,
    sw: Optional[np.ndarray],
    cw: Any,
    nclass: int,
    classes: Optional[List[str]] = None,
) -> None:
    """The weights on the plan, if any (the core's checks; nclass: the run's classes when known,
    else -1; classes: labels y's labels, which name a class in the core's texts)."""
    if sw is None and cw is None:
        return
    ids, w = (None, None) if cw is None else cw
    ptr = [NULL if a is None else ffi.cast("double *", ffi.from_buffer(a)) for a in (sw, ids, w)]
    nsw, nw = (0 if a is None else a.size for a in (sw, w))
    h, k = HostValues(), len(classes or [])
    labels = h.strings(classes or []) if k else NULL
    _core.check(
        lib.pg_fit_set_weights(
            plan._p, loss_code, ptr[0], nsw, ptr[1], ptr[2], nw, nclass, labels, k
        )
    )
