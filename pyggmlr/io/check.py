"""Checks that keep a model file round-trip safe (issue 19, "nothing lost"): what ag_save_model
would write is checked against what ag_load_model accepts before the old file is touched, and
what a load would write into the user's objects is checked before the first write."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import _walk
from .._args import check_int
from .._core import last_message, lib
from ..errors import ArgumentError, PyggmlrValueError
from ..nn.modules import ag_module_from_config
from ..random import Generator
from ..tensor import Tensor, ag_dtype

__all__: list = []

_CHECKED: Dict[Any, bool] = {}  # configs (with their shapes) that rebuilt, newest last
MAX_EPOCH = 10**12  # the loader reads at most 12 digits (io._load, R's .load_model)


def os_error(path: Any) -> OSError:
    """The core's PG_STATUS_ERR_IO as the OSError subclass of its errno (FileNotFoundError,
    PermissionError, ...), with errno, its message and the file name set."""
    err = lib.pg_last_errno()
    msg = last_message()
    return OSError(err, msg, os.fspath(path)) if err else OSError(msg)


def clean(v: Any, what: str, depth: int = 0, path: Optional[set] = None) -> Any:
    """JSON-safe copy: non-finite floats become null; numpy scalars become Python numbers. A
    structure nested deeper than the loader reads (PG_JSON_MAX_DEPTH) or holding a reference
    cycle is refused (PyggmlrValueError naming what) instead of recursing without end."""
    if isinstance(v, (dict, list, tuple)):
        if depth >= lib.PG_JSON_MAX_DEPTH:
            raise PyggmlrValueError(
                f"ag_save_model(): {what} is nested deeper than {lib.PG_JSON_MAX_DEPTH} levels "
                "(what ag_load_model reads)"
            )
        path = set() if path is None else path
        if id(v) in path:
            raise PyggmlrValueError(
                f"ag_save_model(): {what} contains a reference cycle (a list or dict that holds itself)"
            )
        path.add(id(v))
        try:
            if isinstance(v, dict):
                return {str(k): clean(x, what, depth + 1, path) for k, x in v.items()}
            return [clean(x, what, depth + 1, path) for x in v]
        finally:
            path.discard(id(v))
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    return v


def config_budget(sizes: Any) -> int:
    """The most elements one layer of a file's config may ask for (io._rebuild's bound)."""
    return 16 * int(sum(sizes)) + 65536


def check_epoch(epoch: Any) -> int:
    """ag_save_model(epoch=): an integer the loader reads back."""
    rule = "an integer in [0, 1e12) (what ag_load_model reads back)"
    return check_int(epoch, "ag_save_model()", "epoch", 0, MAX_EPOCH - 1, rule=rule)


def _model_parts(model):
    try:  # fit/util.py's _params, with ag_save_model's text
        if not hasattr(model, "parameters"):
            raise ArgumentError("no parameters()")
        params = dict(_walk.items(model))
    except ArgumentError:
        raise ArgumentError(
            f"ag_save_model(): model must have parameters(), got {type(model).__name__}"
        ) from None
    bufs = dict(_walk.items(model, "buffers", own=False))
    for k, t in list(params.items()) + list(bufs.items()):
        if not isinstance(k, str):
            raise ArgumentError(f"model names must be strings, got {k!r}")
        if not isinstance(t, Tensor):
            raise ArgumentError(f"model entry {k!r} is a {type(t).__name__}, not a tensor")
    return params, bufs


def check_config(text: str, params: Dict[str, Any], bufs: Dict[str, Any]) -> None:
    """The architecture as the loader will rebuild it: the core's plausibility checks with the
    budget of this file's tensors, then a rebuild (the random stream put back afterwards, so a
    save draws nothing) whose parameter and buffer names and shapes must be the model's."""
    pre = "ag_save_model(): the model's architecture config would not load back"
    key = (
        text,
        tuple((k, tuple(t.shape), t.dtype) for k, t in list(params.items()) + list(bufs.items())),
    )
    if key in _CHECKED:  # ag_fit's checkpoints save the same architecture every epoch
        return
    raw = text.encode("utf-8", "surrogatepass")
    budget = config_budget(t.size for t in list(params.values()) + list(bufs.values()))
    if lib.pg_json_check(raw, len(raw), b"metadata 'config'", budget) != 0:
        raise PyggmlrValueError(f"{pre} ({last_message()}); nothing was written")
    gen = Generator.current()
    state = gen.get_state()
    dts = {t.dtype for t in params.values()}
    prev = ag_dtype("f64" if dts == {"f64"} else "f32")
    try:
        built = ag_module_from_config(json.loads(text))
        bp, bb = _model_parts(built)
    except Exception as e:  # noqa: BLE001 - any failure to rebuild: the file would be refused
        raise PyggmlrValueError(f"{pre} ({type(e).__name__}: {e}); nothing was written") from None
    finally:
        ag_dtype(prev)
        gen.set_state(state)
    for kind, mine, theirs in (("parameter", params, bp), ("buffer", bufs, bb)):
        shapes = {k: tuple(t.shape) for k, t in mine.items()}
        back = {k: tuple(t.shape) for k, t in theirs.items()}
        if shapes != back:
            raise PyggmlrValueError(
                f"{pre}: it rebuilds {kind}s {back}, the model has {shapes}; nothing was written"
            )
    _CHECKED[key] = True
    while len(_CHECKED) > 16:
        _CHECKED.pop(next(iter(_CHECKED)))


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


# ---------------------------------------------------------------------------------------------
# what a model says about its outputs (issue 31): ag_fit records it, model files keep it
# (metadata 'target'), ag_predict(type=) reads it. Attributes, as scikit-learn's: loss_ (one of
# ag_fit's loss names, or None) and classes_ (a numpy array of str labels in class-id order, or
# None).


def model_target(model: Any) -> Tuple[Optional[str], Optional[List[str]]]:
    """(loss name or None, list of str labels or None) recorded on model."""
    loss = getattr(model, "loss_", None)
    classes = getattr(model, "classes_", None)
    return (
        loss if isinstance(loss, str) else None,
        None if classes is None else [str(c) for c in np.asarray(classes).ravel()],
    )


def set_target(model: Any, loss: Optional[str], classes: Any) -> None:
    """Record loss / classes on model where it takes attributes (a plain function or an object
    with __slots__ does not: ag_predict then needs loss=)."""
    try:
        model.loss_ = loss
        model.classes_ = None if classes is None else np.asarray([str(c) for c in classes])
    except (AttributeError, TypeError):
        pass
