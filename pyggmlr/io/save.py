"""ggmlR 0.8.6's ag_save_model / ag_load_model with ggmlR's arguments over this project's
safetensors model files (modelfile.py), and ggml_version()."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Union

from .. import _walk
from .._args import plain
from .._core import check, ffi, lib
from ..tensor import ag_device
from .check import _model_parts
from .modelfile import _load, _path_arg, _save

__all__ = ["ag_save_model", "ag_load_model", "ggml_version"]


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
    _path_arg(path, "ag_save_model()")  # path, model, then model_fn, as R's ag_save_model
    if not _walk.is_model(model):
        _model_parts(model)  # its refusal
    check(lib.pg_mf_builder_args(lib.PG_MF_FN_SAVE, _arg_kind(model_fn), 0))
    return _save(model, path, optimizer=optimizer, epoch=epoch, extra=extra)


def _arg_kind(model_fn: Any) -> int:
    if model_fn is None:
        return lib.PG_MF_ARG_NONE
    return lib.PG_MF_ARG_FUNCTION if callable(model_fn) else lib.PG_MF_ARG_OTHER


def _load_dtype(dtype: Any) -> int:
    """None (-1), "f32" or "f64" as the core's code: the rule and texts are the core's
    (pg_mf_load_dtype); a name it refuses: PyggmlrValueError; not a string: ArgumentError."""
    out = ffi.new("int *", -1)
    if dtype is not None:
        s = dtype.encode("utf-8", "surrogatepass") if isinstance(dtype, str) else ffi.NULL
        check(lib.pg_mf_load_dtype(s, repr(plain(dtype)).encode("utf-8", "backslashreplace"), out))
    return out[0]


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
    filled; model= fills a model you built (a model object given as model_fn is taken as model;
    a function given as model= is refused: model_fn= is its place).
    device: None or "cpu", the default device during the rebuild (restored after; "gpu" raises
    as ag_device("gpu") does). dtype: None, "f32" or "f64" (ggmlR's "f16"/"bf16" are refused).
    optimizer: restore its moments and counters from the file too. The model must have exactly
    the file's parameter and buffer names with the same shapes (ggmlR's "parameter mismatch ...
    missing in file: / not in model:" and "shape mismatch for parameter 'x': model AxB vs file
    CxD" errors). Nothing is changed unless the whole file checks out. Returns the model, in
    eval mode. A truncated, corrupt or foreign file raises PyggmlrValueError."""
    if model_fn is not None and model is None and _walk.is_model(model_fn):
        model, model_fn = model_fn, None  # a model object (parameters() or params(), as R's)
    # every argument before the file, as R's: path, model, then model_fn (ag_save_model's order)
    _path_arg(path, "ag_load_model()")
    if model is not None and not _walk.is_model(model):
        _model_parts(model, lib.PG_MF_FN_LOAD)  # its refusal (a builder's place is model_fn=)
    check(lib.pg_mf_builder_args(lib.PG_MF_FN_LOAD, _arg_kind(model_fn), model is not None))
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
