"""ggmlR 0.8.6's model-state API (0.8.6 spec s9): state dicts, and ag_save_model / ag_load_model
with ggmlR's arguments over the safetensors files of pyggmlr.io; ggml_version().

A state dict is R's list as a dict: ``{"format": "ggmlR.ag_state_dict", "version": 1,
"parameters": {name: numpy array}, "param_dtypes": {name: "f32"|"f64"}, "buffers": {name:
numpy array}}``. R's named list of matrices becomes a dict of Fortran-ordered 2-D arrays in the
tensor's dtype (float32 for f32: the same values R holds as doubles); R's named character vector
``param_dtypes`` becomes a dict of strings. A state dict converted from R (pyggmlr.r.from_r) loads
as it is, and one from Python goes to R through pyggmlr.r.to_r."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _walk
from .._core import ffi, lib
from ..errors import ArgumentError, PyggmlrValueError, ShapeError
from ..tensor import Tensor, ag_device, ag_dtype

__all__ = ["ag_state_dict", "ag_load_state_dict", "ag_save_model", "ag_load_model", "ggml_version"]

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
    from ..io_check import check_fits

    for (t, a), k in zip(pv + bv, pn + bn):  # a finite double beyond f32 would become Inf
        check_fits(t, np.asarray(a, dtype=np.float64), f"{caller}: '{k}'")
    for t, a in pv + bv:  # all checked: now write
        t.data = a
    return model


# ---------------------------------------------------------------------------------------------
# ag_save_model / ag_load_model with ggmlR's arguments (the file format is pyggmlr.io's)


def ag_save_model(
    model: Any,
    path: Union[str, os.PathLike],
    model_fn: Optional[Callable[[], Any]] = None,
    optimizer: Any = None,
    epoch: Optional[int] = None,
    extra: Any = None,
) -> Union[str, os.PathLike]:
    """Save the model's parameters and buffers (batch-norm running statistics) by their ggmlR
    names to a safetensors file, with its architecture (to_config()) as JSON so that
    ag_load_model(path) can rebuild it; optionally the optimizer's state, the epoch and an
    `extra` JSON-able dict (for resuming). The write is atomic. Returns path.

    model_fn: ggmlR's rebuild closure: checked (a function or None, ggmlR's message) but not
    stored, since a safetensors file holds no code; pass it to ag_load_model again for a model
    without to_config(). Raises ArgumentError for a model without parameters(), a model_fn that
    is not callable or a bad optimizer; PyggmlrValueError for a bad epoch or extra."""
    from ..io import _save

    if model_fn is not None and not callable(model_fn):
        raise ArgumentError("ag_save_model(): `model_fn` must be a function or NULL.")
    return _save(model, path, optimizer=optimizer, epoch=epoch, extra=extra)


def _load_dtype(dtype: Optional[str]) -> Optional[str]:
    if dtype is None:
        return None
    if not isinstance(dtype, str) or dtype not in ("f32", "f64", "f16", "bf16"):
        raise PyggmlrValueError(
            f'ag_load_model(): dtype must be one of "f32", "f64" (or None), got {dtype!r}'
        )
    if dtype in ("f16", "bf16"):
        raise PyggmlrValueError(
            f'ag_load_model(): dtype "{dtype}" is not supported by the CPU engine; use "f32" or "f64"'
        )
    return dtype


def _build(builder: Callable[[], Any], dtype: str) -> Any:
    """Call a zero-argument builder with dtype as the default; it must return a model."""
    prev = ag_dtype(dtype)
    try:
        model = builder()
    finally:
        ag_dtype(prev)
    if not callable(getattr(model, "parameters", None)):
        raise ArgumentError(
            f"ag_load_model(): `model_fn` must return an ag_sequential or ag_* layer "
            f"(got class: {type(model).__name__})."
        )
    return model


def _check_built_dtype(params: Dict[str, Tensor], dtype: str) -> None:
    for k, t in params.items():
        if t.dtype != dtype:
            raise PyggmlrValueError(
                f'ag_load_model(): dtype = "{dtype}" was asked for, but the model\'s parameter '
                f"'{k}' is {t.dtype} (does model_fn fix its own dtype?)"
            )


def ag_load_model(
    path: Union[str, os.PathLike],
    model_fn: Optional[Callable[[], Any]] = None,
    device: Optional[str] = None,
    dtype: Optional[str] = None,
    model: Any = None,
    optimizer: Any = None,
) -> Any:
    """Load a file written by ag_save_model (ggmlR's arguments: path, model_fn, device, dtype).

    model_fn=None and model=None rebuild the architecture from the file's JSON config; model_fn
    (a function of no arguments returning the model, as in ggmlR) is called with ``dtype`` (else
    the file's dtype: f64 when all parameters are F64) as the default dtype and its model
    filled; model= fills a model you built (a model object given as model_fn is taken as model).
    device: None or "cpu", the default device during the rebuild (restored after; "gpu" raises
    as ag_device("gpu") does). dtype: None, "f32" or "f64" (ggmlR's "f16"/"bf16" are refused).
    optimizer: restore its moments and counters from the file too. The model must have exactly
    the file's parameter and buffer names with the same shapes (ggmlR's "parameter mismatch ...
    missing in file: / not in model:" and "shape mismatch for parameter 'x': model AxB vs file
    CxD" errors). Nothing is changed unless the whole file checks out. Returns the model, in
    eval mode. A truncated, corrupt or foreign file raises PyggmlrValueError."""
    from ..io import _load

    if model_fn is not None and model is None and callable(getattr(model_fn, "parameters", None)):
        model, model_fn = model_fn, None  # a model object where ggmlR has the builder
    if model_fn is not None and not callable(model_fn):
        raise ArgumentError(
            f"ag_load_model(): model_fn must be a function returning the model, got {type(model_fn).__name__}"
        )
    if model is not None and model_fn is not None:
        raise ArgumentError("ag_load_model(): give model= or model_fn=, not both")
    if model is not None and callable(model) and not callable(getattr(model, "parameters", None)):
        model, model_fn = None, model  # a builder given as model=
    dt = _load_dtype(dtype)
    prev = ag_device(device) if device is not None else None
    try:
        return _load(path, model=model, optimizer=optimizer, builder=model_fn, dtype=dt)[0]
    finally:
        if prev is not None:
            ag_device(prev)


def ggml_version() -> str:
    """The version string of the C core (pg_version(); the same in R and Python). ggmlR returns
    its vendored ggml library's version; this package has no ggml library."""
    return ffi.string(lib.pg_version()).decode()
