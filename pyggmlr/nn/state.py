"""ggmlR 0.8.6's model-state API (0.8.6 spec s9): state dicts, and ag_save_model / ag_load_model
with ggmlR's arguments over the safetensors files of pyggmlr.io; ggml_version().

A state dict is R's list as a dict: ``{"format": "ggmlR.ag_state_dict", "version": 1,
"parameters": {name: numpy array}, "param_dtypes": {name: "f32"|"f64"}, "buffers": {name:
numpy array}}``. R's named list of matrices becomes a dict of Fortran-ordered 2-D arrays in the
tensor's dtype (float32 for f32: the same values R holds as doubles); R's named character vector
``param_dtypes`` becomes a dict of strings. A state dict converted from R (pyggmlr.r.from_r) loads
as it is, and one from Python goes to R through pyggmlr.r.to_r."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Tuple

import numpy as np

from .. import _walk
from .._core import ffi, last_message, lib
from ..errors import ArgumentError, PyggmlrValueError, ShapeError
from ..tensor import Tensor

__all__ = ["ag_state_dict", "ag_load_state_dict"]

SD_FORMAT = "ggmlR.ag_state_dict"


def _state_params(model: Any, caller: str) -> List[Tuple[str, Tensor]]:
    """parameters() first, else params() (ggmlR's bare ag_linear); (name, tensor) pairs."""
    has = callable(getattr(model, "parameters", None)) or callable(getattr(model, "params", None))
    if not has or isinstance(model, Tensor):
        raise ArgumentError(f"{caller}: `model` has no parameters() / params() method")
    items = _walk.items(model, "parameters", alt="params", own=False)
    for i, (k, t) in enumerate(items, 1):
        if not isinstance(t, Tensor):
            raise ArgumentError(
                f"{caller}: parameter {i} ({k}) is a {type(t).__name__}, not a tensor"
            )
    return [(str(k), t) for k, t in items]


def _is_layer_like(x: Any) -> bool:
    return (
        callable(getattr(x, "forward", None))
        or callable(getattr(x, "parameters", None))
        or callable(getattr(x, "params", None))
    )


def _state_buffers(model: Any, prefix: str = "", depth: int = 0) -> List[Tuple[str, Tensor]]:
    """ggmlR 0.8.5's buffer keys: a layer's own buffers() (batch norm; ag_sequential, already
    nested ``layer2_layer1_running_mean``), else the ``layer<i>_`` prefixed buffers of its
    ``layers`` when every one is layer-like."""
    if callable(getattr(model, "buffers", None)):
        return [(prefix + str(k), t) for k, t in _walk.items(model, "buffers", own=False)]
    layers = getattr(model, "layers", None)
    if (
        depth > 64
        or not isinstance(layers, (list, tuple))
        or not layers
        or not all(map(_is_layer_like, layers))
    ):
        return []
    out: List[Tuple[str, Tensor]] = []
    for i, layer in enumerate(layers, 1):
        out += _state_buffers(layer, f"{prefix}layer{i}_", depth + 1)
    return out


def ag_state_dict(model: Any) -> Dict[str, Any]:
    """A copy of the model's weights as plain data (ggmlR 0.8.6's ag_state_dict).

    Args: model: anything with parameters() (or, failing that, ggmlR's params()).
    Returns: ``{"format": "ggmlR.ag_state_dict", "version": 1, "parameters": {name: array},
    "param_dtypes": {name: "f32"|"f64"}, "buffers": {name: array}}``: names as parameters(),
    buffers with ggmlR's keys (batch-norm ``layer<i>_running_mean`` / ``_running_var``, nested
    for nested sequentials); arrays are copies [rows, cols] in the tensor's dtype. Draws nothing.
    Raises: ArgumentError when model has no parameters() / params() or returns non-tensors."""
    params = _state_params(model, "ag_state_dict()")
    bufs = _state_buffers(model)
    return {
        "format": SD_FORMAT,
        "version": 1,
        "parameters": {k: t.numpy() for k, t in params},
        "param_dtypes": {k: t.dtype for k, t in params},
        "buffers": {k: t.numpy() for k, t in bufs},
    }


def _dim_str(v: Any) -> str:
    return "x".join(str(int(s)) for s in v.shape) if v.ndim else "1"


def _value(caller: str, nm: str, shape: Tuple[int, int], val: Any) -> np.ndarray:
    """ggmlR's checks of one used entry: numeric with the model's dims, then finite."""
    if isinstance(val, Tensor):
        val = val.numpy()
    try:
        a = np.asarray(val)
    except (TypeError, ValueError):
        a = np.asarray([])
    if a.dtype.kind not in "iuf" or a.ndim != 2 or tuple(a.shape) != tuple(shape):
        raise ShapeError(
            f"{caller}: shape mismatch for '{nm}': model {shape[0]}x{shape[1]}, state {_dim_str(a)}"
        )
    if not np.all(np.isfinite(a)):
        raise PyggmlrValueError(f"{caller}: '{nm}' contains NA, NaN or Inf")
    return np.asfortranarray(a if a.dtype.kind == "f" else a.astype(np.float64))


def _distinct(items: List[Tuple[str, Tensor]], caller: str, what: str) -> List[str]:
    names = [k for k, _ in items]
    if len(set(names)) != len(names) or any(not k for k in names):
        raise PyggmlrValueError(
            f"{caller}: the model's {what} need distinct names to be matched with a state "
            f"(got {', '.join(names)})"
        )
    return names


def ag_load_state_dict(model: Any, state: Mapping, strict: bool = True) -> Any:
    """Write a state dict into model, in place (ggmlR 0.8.6's ag_load_state_dict).

    Args: model: as for ag_state_dict; state: a mapping whose "parameters" maps names to
    [rows, cols] arrays ("buffers" may be missing; "format" is not checked, so a state converted
    from R loads); strict: True: parameter names, then buffer names, must match exactly; False:
    only the names on both sides are used.
    Every used entry is checked (shape, then finite) before anything is written, so a failing
    load changes no weight; the same tensor objects get the values (an optimizer built on the
    model stays bound, converted to each tensor's dtype); .grad, the training flag and optimizer
    state are untouched. Returns: model.
    Raises: ArgumentError (``ag_load_state_dict(): `state` is not a state dict (no
    $parameters)``, strict not a bool); PyggmlrValueError for differing names under strict
    (``parameter names differ (strict = TRUE)`` + ``missing in state:`` / ``not in model:``
    lines) and for NA/NaN/Inf values; ShapeError ``shape mismatch for 'layer1_W': model 8x4,
    state 3x3``."""
    caller = "ag_load_state_dict()"
    if not isinstance(state, Mapping) or not isinstance(state.get("parameters"), Mapping):
        raise ArgumentError(f"{caller}: `state` is not a state dict (no $parameters)")
    if not isinstance(strict, (bool, np.bool_)):
        raise ArgumentError(f"{caller}: `strict` must be TRUE or FALSE")
    params = _state_params(model, caller)
    bufs = _state_buffers(model)
    sp, sb = state["parameters"], state.get("buffers")
    if sb is None:
        sb = {}
    if not isinstance(sb, Mapping):
        raise ArgumentError(f"{caller}: `state` is not a state dict ($buffers is not a list)")

    def used(have, saved, what):
        hn = _distinct(have, caller, what + "s")
        sn = [str(k) for k in saved]
        missing, extra = [k for k in hn if k not in sn], [k for k in sn if k not in hn]
        if strict and (missing or extra):
            raise PyggmlrValueError(
                f"{caller}: {what} names differ (strict = TRUE)\n  missing in state: "
                f"{', '.join(missing)}\n  not in model: {', '.join(extra)}"
            )
        return [k for k in hn if k in sn]

    pn, bn = used(params, sp, "parameter"), used(bufs, sb, "buffer")
    pt, bt = dict(params), dict(bufs)
    pv = [(pt[k], _value(caller, k, pt[k].shape, sp[k])) for k in pn]
    bv = [(bt[k], _value(caller, k, bt[k].shape, sb[k])) for k in bn]
    for (t, a), k in zip(pv + bv, pn + bn):  # a finite double beyond f32 would become Inf
        check_fits(t, np.asarray(a, dtype=np.float64), f"{caller}: '{k}'")
    for t, a in pv + bv:  # all checked: now write
        t.data = a
    return model


def check_fits(t: Any, a: np.ndarray, what: str) -> None:
    """Values for tensor t: a finite double beyond the f32 range would become Inf there."""
    if a.size and a.dtype == np.float64 and t.dtype == "f32":
        b = np.ascontiguousarray(a)
        if lib.pg_values_fit(
            ffi.cast("double *", b.ctypes.data),
            b.size,
            lib.PG_DTYPE_F32,
            what.encode("utf-8", "replace"),
        ):
            raise PyggmlrValueError(last_message())
