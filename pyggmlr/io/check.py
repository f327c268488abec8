"""Checks that keep a model file round-trip safe (issue 19, "nothing lost"): what ag_save_model
would write is checked against what ag_load_model accepts before the old file is touched, and
what a load would write into the user's objects is checked before the first write."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _walk
from .._args import plain
from .._core import check, ffi, last_message, lib
from ..errors import ArgumentError, PyggmlrError, PyggmlrValueError
from ..nn.modules import ag_module_from_config
from ..random import Generator
from ..tensor import Tensor, ag_dtype

__all__: list = []


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
            check(lib.pg_mf_json_refuse(lib.PG_MF_JSON_DEEP, what.encode(), ffi.NULL))
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


def rebuild_why(e: BaseException) -> bytes:
    """Why a config did not rebuild, for the core's text: the library's own errors by their
    message alone, as R's conditionMessage (they name their function); others with their type
    (a builder's KeyError('x') says only 'x')."""
    why = str(e) if isinstance(e, PyggmlrError) else f"{type(e).__name__}: {e}"
    return why.encode("utf-8", "surrogatepass")


def to_json(v: Any, what: str) -> str:
    """v as the JSON text a file holds (clean's copy); what JSON cannot hold is refused in the
    core's words (ArgumentError)."""
    v = clean(v, what)  # too deep, a cycle: PyggmlrValueError
    try:
        return json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as e:  # a function or an object in a custom config
        why = str(e).encode("utf-8", "surrogatepass")
    check(lib.pg_mf_json_refuse(lib.PG_MF_JSON_NOT_JSON, what.encode(), why))
    raise AssertionError("unreachable")  # pg_mf_json_refuse always fails


def _model_parts(model, fn=lib.PG_MF_FN_SAVE):
    """(parameters, buffers) by name; a model without parameters(): the core's text naming fn
    (PG_MF_FN_SAVE / LOAD), as R's"""
    try:  # fit/util.py's _params
        if not _walk.is_model(model):
            raise ArgumentError("no parameters()")
        got = [_walk.source(model, alt="params")]
        params = dict(_walk.pairs(got[0]))
    except ArgumentError:  # pg_mf_arg_fail always refuses
        lib.pg_mf_arg_fail(fn, lib.PG_MF_BAD_MODEL, type(model).__name__.encode())
        raise ArgumentError(last_message()) from None
    got.append(_walk.source(model, "buffers", own=False))
    bufs = dict(_walk.pairs(got[1]))
    where = "ag_load_model()" if fn == lib.PG_MF_FN_LOAD else "ag_save_model()"
    for kind, d, c in (("parameter", params, got[0]), ("buffer", bufs, got[1])):  # R's (io.R)
        for k in d:
            if not isinstance(k, str):
                raise ArgumentError(f"{where}: model names must be strings, got {plain(k)!r}")
        if "" in d or (d and not isinstance(c, Mapping)):  # a list's entries have no names
            raise PyggmlrValueError(f"{where}: every {kind} needs a name")
        for k, t in d.items():
            if not isinstance(t, Tensor):
                why = f"is a {type(t).__name__}, not an ag_tensor"
                raise ArgumentError(f"{where}: model entry '{k}' {why}")
    return params, bufs


class _Model:
    """A model's named tensors and its optimizer as the core's pg_mf_model: the core copies
    them into a file, loads a file into them and checks a config's rebuild against them
    (native/modelfile_model.c, modelfile_check.c)."""

    def __init__(self, params, bufs, optimizer=None):
        self.c = ffi.new("pg_mf_model *", lib.pg_mf_model_default())
        self.keep = [self.c]
        for d, n, nm, ts in (
            (params, "n_params", "param_names", "params"),
            (bufs, "n_buffers", "buffer_names", "buffers"),
        ):
            names = [ffi.new("char[]", k.encode("utf-8", "surrogatepass")) for k in d]
            arrs = (
                ffi.new("char *[]", names or 1),
                ffi.new("pg_tensor *[]", [t._handle() for t in d.values()] or 1),
            )
            self.keep += names + list(arrs) + list(d.values())
            setattr(self.c, n, len(d))
            setattr(self.c, nm, arrs[0])
            setattr(self.c, ts, arrs[1])
        if optimizer is not None:
            self.c.optim, self.opt = optimizer._o, optimizer


def check_config(text: str, m: _Model) -> None:
    """The architecture as the loader will rebuild it (native/modelfile_check.c: the budget,
    the comparison, the texts, the cache of checked configs); this rebuilds, with the random
    stream put back afterwards, so a save draws nothing."""
    raw = text.encode("utf-8", "surrogatepass")
    checked, dt = ffi.new("int *"), ffi.new("int *")
    check(lib.pg_mf_config_check_begin(raw, m.c, checked, dt))
    if checked[0]:
        return
    gen = Generator.current()
    state = gen.get_state()
    prev = ag_dtype("f64" if dt[0] == lib.PG_DTYPE_F64 else "f32")
    try:
        built = _Model(*_model_parts(ag_module_from_config(json.loads(text))))
    except Exception as e:  # noqa: BLE001 - any failure to rebuild: the file would be refused
        check(lib.pg_mf_rebuild_fail(ffi.NULL, lib.PG_MF_REBUILD_SAVE, rebuild_why(e)))
    else:
        check(lib.pg_mf_config_check_end(raw, m.c, built.c))
    finally:
        ag_dtype(prev)
        gen.set_state(state)


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
