"""ggmlR 0.8.6's in-memory state dicts (0.8.6 spec s9.1-9.2); ag_save_model / ag_load_model and
ggml_version() are pyggmlr.io's. This module walks the model and converts; the format tag, the
argument checks, the load's rules and its write are the C core's (native/state_dict.c, shared
with R).

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
from .._core import NULL, check, ffi, lib
from .._host import HostValues
from ..tensor import Tensor

__all__ = ["ag_state_dict", "ag_load_state_dict"]

SD_FORMAT = ffi.string(lib.pg_state_dict_format()).decode()
_LAYER_FNS = ("forward", "parameters", "params")  # any of them: a layer (ggmlR's test)


def _state_params(model: Any, caller: str) -> List[Tuple[str, Tensor]]:
    """parameters() first, else params() (ggmlR's bare ag_linear); (name, tensor) pairs."""
    has = callable(getattr(model, "parameters", None)) or callable(getattr(model, "params", None))

    def fail(i: int, k: Any, what: Any) -> None:  # the core's texts, R's too
        check(lib.pg_state_dict_model_fail(caller.encode(), i, k, type(what).__name__.encode()))

    if not has or isinstance(model, Tensor):
        fail(0, NULL, None)
    got = _walk.source(model, "parameters", alt="params", own=False)
    if isinstance(got, Tensor):  # one tensor has no name to key it by: refused, as R's
        fail(-1, NULL, got)
    try:
        items = _walk.pairs(got)
    except TypeError:  # not iterable: no list of tensors
        fail(-1, NULL, got)
    for i, (k, t) in enumerate(items, 1):
        if not isinstance(t, Tensor):
            fail(i, str(k).encode("utf-8", "replace"), t)
    return [(str(k), t) for k, t in items]


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
        or not all(any(callable(getattr(x, f, None)) for f in _LAYER_FNS) for x in layers)
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
    return {
        "format": SD_FORMAT,
        "version": 1,
        "parameters": {k: t.numpy() for k, t in params},
        "param_dtypes": {k: t.dtype for k, t in params},
        "buffers": {k: t.numpy() for k, t in _state_buffers(model)},
    }


def ag_load_state_dict(model: Any, state: Mapping, strict: bool = True) -> Any:
    """Write a state dict into model, in place (ggmlR 0.8.6's ag_load_state_dict).

    Args: model: as for ag_state_dict; state: a mapping whose "parameters" maps names to
    [rows, cols] arrays ("buffers" may be missing; "format" is not checked, so a state converted
    from R loads); strict: True: parameter names, then buffer names, must match exactly; False:
    only the names on both sides are used.
    Every used entry is checked (shape, then finite, then the f32 range) before anything is
    written, so a failing load changes no weight (the rules and the write are the C core's,
    native/state_dict.c, shared with R); the same tensor objects get the values (an optimizer built on the
    model stays bound, converted to each tensor's dtype); .grad, the training flag and optimizer
    state are untouched. Returns: model.
    Raises: ArgumentError (``ag_load_state_dict(): `state` is not a state dict (no
    $parameters)``, strict not a bool); PyggmlrValueError for differing names under strict
    (``parameter names differ (strict = TRUE)`` + ``missing in state:`` / ``not in model:``
    lines), for NA/NaN/Inf values and for finite values beyond an f32 tensor's range; ShapeError ``shape mismatch for 'layer1_W': model 8x4,
    state 3x3``."""
    caller = "ag_load_state_dict()"
    st: Any = state if isinstance(state, Mapping) else {}
    sp, sb = st.get("parameters"), st.get("buffers")
    ok = (isinstance(sp, Mapping), isinstance(strict, (bool, np.bool_)), isinstance(sb, Mapping))
    check(lib.pg_state_dict_check_args(caller.encode(), ok[0], ok[1], ok[2] or sb is None))
    params = _state_params(model, caller)
    # the rules (names, then each used value's shape and finiteness, then the dtype's range) and
    # the write into the same tensors, all or nothing, are the C core's (native/state_dict.c),
    # shared with R
    h = HostValues()
    model_c, state_c = ffi.new("pg_state_dict_side[2]"), ffi.new("pg_state_dict_side[2]")
    for k, (have, saved) in enumerate([(params, sp), (_state_buffers(model), sb or {})]):
        model_c[k].n, model_c[k].names = len(have), h.strings([n for n, _ in have])
        model_c[k].tensors = handles = ffi.new("pg_tensor *[]", [t._handle() for _, t in have] or 1)
        h.keep.append(handles)
        state_c[k].n, state_c[k].names = len(saved), h.strings([str(n) for n in saved])
        # a None value is there (no numbers); doubles only for the entries the model may use
        used = {n for n, _ in have}
        use = {i for i, n in enumerate(saved) if str(n) in used}
        state_c[k].values = h.matrices(list(saved.values()), use, none=False, bad=(0,))
    check(lib.pg_state_dict_load(caller.encode(), model_c, state_c, bool(strict)))
    return model
