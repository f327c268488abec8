"""Model files: weights in safetensors format, the architecture as JSON in its metadata.

Format (docs/model-format.md has the full description, shared with the R package):
8-byte little-endian header length N, N bytes of JSON header (space padded to a multiple of 8),
then the raw little-endian data. Each tensor entry: {"dtype": "F32"|"F64", "shape": [rows, cols],
"data_offsets": [begin, end]} (offsets relative to the end of the header). Values are stored
row-major (C order), as every safetensors reader expects: an R matrix m is written as
as.vector(t(m)) and read back with matrix(v, rows, cols, byrow = TRUE). ``__metadata__`` (string
values only) holds format, format_version, config (the model's to_config() as JSON), the
ordered parameter and buffer names, and optionally epoch, optimizer state and extra JSON.

Reading never unpickles or evaluates anything. The codec and the schema (every size, offset,
dtype, metadata rule, name and shape match, and the save rules) are the C core's
(native/codec*.c, native/modelfile*.c); this module converts and raises PyggmlrValueError."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Union

import numpy as np

from .. import _walk
from .._args import check_int
from .._core import check, ffi, last_message, lib
from .._version import __version__
from ..errors import ArgumentError, PyggmlrError, PyggmlrValueError
from ..nn.base import ag_eval
from ..nn.modules import ag_module_from_config
from ..optim.optimizer import Optimizer
from ..optim.state import warn_hyper
from ..random import keep_rng_on_error
from ..tensor import ag_dtype
from .check import (
    _Model,
    _model_parts,
    check_config,
    model_target,
    os_error,
    rebuild_why,
    set_target,
    to_json,
)

__all__ = ["ag_model_info"]  # ag_save_model / ag_load_model: save.py

_DTN = {lib.PG_DTYPE_F32: "f32", lib.PG_DTYPE_F64: "f64"}

# ---------------------------------------------------------------------------------------------
# safetensors writer / reader: the C core's codec (native/codec*.c), shared with the R package


def _path_arg(path, fn):
    """path as str/bytes; an int or bool is refused (open() would take it as a file descriptor:
    ag_load_model(0) read stdin and closed it), as is anything else that is not a path."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentError(
            f"{fn}: path must be a file name (str, bytes or os.PathLike), got {type(path).__name__} {path!r:.40}"
        )
    return os.fspath(path)


def _raise(rc, path):
    """A failed core call on a model file as the language's error: the OSError of its errno,
    MemoryError, else the status's typed exception with the core's text."""
    if rc == lib.PG_STATUS_ERR_IO:  # FileNotFoundError, PermissionError, ... with errno and path
        raise os_error(path)
    if rc == lib.PG_STATUS_ERR_NOMEM:
        raise MemoryError(last_message())
    check(rc)


def _text(p):
    return None if p == ffi.NULL else ffi.string(p).decode("utf-8")


class _ModelFile:
    """An open model file (native/modelfile.c's pg_mf): the core checks the framing when it
    opens and the schema in pg_mf_check_*; this only converts what it hands out."""

    def __init__(self, path, fn):
        self.path = _path_arg(path, fn)
        # a missing file, a directory: the OSError of its errno; a FIFO or device: refused
        shown = os.fsdecode(self.path).encode("utf-8", "surrogateescape")  # bytes shown decoded
        _raise(lib.pg_mf_path_check(os.fsencode(self.path), shown, fn.encode(), 0), self.path)
        h = ffi.new("pg_mf **")
        _raise(lib.pg_mf_open(os.fsencode(self.path), fn.encode(), h), self.path)
        self.h, self.st = h[0], lib.pg_mf_st(h[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        lib.pg_mf_close(self.h)

    def call(self, rc):
        _raise(rc, self.path)  # 0: nothing

    def tensors(self, prefix=""):
        """name -> 2-D C-ordered numpy array, in file order (those whose names start with prefix)"""
        out, f = {}, self.st
        for i in range(lib.pg_st_count(f)):
            if not _text(lib.pg_st_name(f, i)).startswith(prefix):
                continue
            dt = np.float64 if lib.pg_st_dtype(f, i) == lib.PG_ST_DTYPE_F64 else np.float32
            a = np.empty((lib.pg_st_rows(f, i), lib.pg_st_cols(f, i)), dtype=dt)
            if a.nbytes:
                self.call(lib.pg_st_read(f, i, ffi.from_buffer(a), a.nbytes))
            out[_text(lib.pg_st_name(f, i))] = a
        return out

    def build(self, fn):
        """fn() in the load's dtype (the one asked, else the file's: pg_mf_dtype)"""
        prev = ag_dtype(_DTN[lib.pg_mf_dtype(self.h)])
        try:
            return fn()
        finally:
            ag_dtype(prev)

    def json(self, p):
        text = _text(p)
        return None if text is None else json.loads(text)  # checked by the core


# ---------------------------------------------------------------------------------------------
# model <-> file


def _opt_arg(optimizer, fn):
    """a given optimizer that is none: the core's text (pg_mf_arg_fail), naming the type"""
    if optimizer is not None and not isinstance(optimizer, Optimizer):
        check(lib.pg_mf_arg_fail(fn, lib.PG_MF_BAD_OPTIMIZER, type(optimizer).__name__.encode()))


def _save(model, path, optimizer=None, epoch=None, extra=None, more=None, extra_text=None):
    """extra_text: extra already as JSON text (ag_fit's checkpoints: the core's layout); the
    write is the core's (pg_mf_save), as R's"""
    path = _path_arg(path, "ag_save_model()")
    params, bufs = _model_parts(model)
    _opt_arg(optimizer, lib.PG_MF_FN_SAVE)
    m = _Model(params, bufs, optimizer)
    check(lib.pg_mf_names_check(m.c))  # a name both a parameter's and a buffer's: before the config
    s = ffi.new("pg_mf_save_spec *", lib.pg_mf_save_spec_default())
    keep: List[Any] = [m]  # every buffer the spec points to, alive until the write returns

    def text(v):
        keep.append(ffi.new("char[]", str(v).encode("utf-8", "surrogatepass")))
        return keep[-1]

    s.model, s.fields[lib.PG_MF_FIELD_CREATED_BY] = m.c, text(f"pyggmlr {__version__}")
    to_config = getattr(model, "to_config", None)
    if callable(to_config):
        try:
            cfg = to_config()
        # a PyggmlrValueError (e.g. a custom layer without to_config()): the weights alone, with
        # the core's note; any other exception is a fault in to_config() and propagates, as in R
        except PyggmlrValueError as e:
            note = lib.pg_mf_no_config_note(str(e).encode("utf-8", "surrogatepass"), 0)
            warnings.warn(ffi.string(note).decode("utf-8", "surrogatepass"), stacklevel=3)
        else:
            text_cfg = to_json(cfg, "the model's architecture config")
            check_config(text_cfg, m)  # whatever is saved must load
            s.fields[lib.PG_MF_FIELD_CONFIG] = text(text_cfg)
    if epoch is not None:
        s.epoch = check_int(epoch, "ag_save_model()", "epoch", core=lib.pg_mf_epoch_arg)  # its rule
    if extra is not None:  # bounded depth, no cycles: typed errors, not RecursionError
        s.fields[lib.PG_MF_FIELD_EXTRA] = text(to_json(extra, "extra"))  # checked: loads back
    if extra_text is not None:
        s.fields[lib.PG_MF_FIELD_EXTRA] = text(extra_text)
    loss, classes = model_target(model)  # metadata 'target': what ag_fit recorded (none: none)
    if loss is not None or classes is not None:
        s.has_target, s.target_loss = 1, ffi.NULL if loss is None else text(loss)
        s.n_classes = -1 if classes is None else len(classes)
        keep.append(ffi.new("char *[]", [text(c) for c in classes or []] or 1))
        s.classes = keep[-1]
    arrs = [np.asarray(a) for a in (more or {}).values()]  # ag_fit's callback arrays
    if arrs:
        cols = [np.asfortranarray(a, dtype=np.float64) for a in arrs]
        keep += cols
        parts = (
            ffi.new("char *[]", [text(k) for k in more]),
            ffi.new("int[]", [a.dtype == np.float64 for a in arrs]),
            ffi.new("int[]", [a.ndim for a in arrs]),
            ffi.new("int64_t[]", [d for a in arrs for d in (list(a.shape) + [1, 1])[:2]]),
            ffi.new("double *[]", [ffi.cast("double *", v.ctypes.data) for v in cols]),
        )
        keep += parts  # a struct field holds no reference: the owners stay here
        s.n_more = len(arrs)
        s.more_names, s.more_f64, s.more_ndim, s.more_dims, s.more_data = parts
    _raise(lib.pg_mf_save(os.fsencode(path), s), path)  # str or bytes
    return path


# ag_save_model / ag_load_model (ggmlR's arguments): io/save.py


def _hyper_value(f, j):
    v, ty = lib.pg_mf_opt_hyper_value(f.h, j), lib.pg_mf_opt_hyper_type(f.h, j)
    return int(v) if ty == lib.PG_MF_NUM_INT else bool(v) if ty == lib.PG_MF_NUM_BOOL else v


def _load(
    path, model=None, optimizer=None, quiet_hyper=False, need_epoch=False, builder=None, dtype=-1
):
    _opt_arg(optimizer, lib.PG_MF_FN_LOAD)  # before the file, as R
    # a load refused after the model was built (by model_fn or from the config) draws nothing
    with keep_rng_on_error(), _ModelFile(path, "ag_load_model()") as f:
        opts = ffi.new("pg_mf_load_opts *", lib.pg_mf_load_opts_default())
        opts.have_model = model is not None or builder is not None
        opts.need_epoch = bool(need_epoch)
        opts.rebuild = model is None and builder is None
        opts.dtype = dtype  # asked (a core code, -1: none): pg_mf_load_check checks the parameters
        f.call(lib.pg_mf_check_load(f.h, opts))  # format, names, epoch, extra, config
        more = f.tensors("callback") if need_epoch else {}  # ag_fit's callback arrays
        if model is None and builder is not None:  # in dtype, else the file's (ggmlR: param_dtypes)
            model = f.build(builder)
            if not _walk.is_model(model):  # params() too, as R's; else the core's text
                shown = type(model).__name__.encode()
                check(lib.pg_mf_arg_fail(lib.PG_MF_FN_LOAD, lib.PG_MF_BAD_BUILT, shown))
        # else rebuilt from the file's config (checked and matched against its tensors by
        # pg_mf_check_load): untrusted content, so a failure to build, or a model that is none,
        # is a bad file
        rebuilt = model is None
        try:
            if rebuilt:
                model = f.build(lambda: ag_module_from_config(f.json(lib.pg_mf_config(f.h))))
        except Exception as e:  # noqa: BLE001
            f.call(lib.pg_mf_rebuild_fail(f.h, lib.PG_MF_REBUILD_LOAD, rebuild_why(e)))
        try:
            params, bufs = _model_parts(model, lib.PG_MF_FN_LOAD)
        except PyggmlrError as e:
            if not rebuilt:
                raise
            why = str(e).encode("utf-8", "surrogatepass")
            f.call(lib.pg_mf_rebuild_fail(f.h, lib.PG_MF_REBUILD_UNUSABLE, why))
        # names, shapes, the optimizer's state, every value: all checked before anything is written
        m, d = _Model(params, bufs, optimizer), ffi.new("pg_optim_hyper_diff *")
        f.call(lib.pg_mf_load_check(f.h, m.c, d))
        if d.n and not quiet_hyper:
            warn_hyper(optimizer, d, lambda j: _hyper_value(f, j), stacklevel=3)
        f.call(lib.pg_mf_load_commit(f.h))
        if lib.pg_mf_has_target(f.h):  # the file's metadata 'target' onto the model
            n = lib.pg_mf_class_count(f.h)
            cls = None if n < 0 else [_text(lib.pg_mf_class(f.h, i)) for i in range(n)]
            set_target(model, _text(lib.pg_mf_target_loss(f.h)), cls)
    ag_eval(model)  # as ag_fit leaves a model
    return model, more


def ag_model_info(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """What a model file holds, without building anything: a dict with format, parameter and
    buffer names with their shapes and dtypes, config (dict or None), epoch, optimizer kind,
    extra and target (the loss, classify kind and class labels ag_fit recorded, or None)."""
    return model_info(path, "ag_model_info()")


def model_info(path: Any, fn: str) -> Dict[str, Any]:
    """ag_model_info's answer, its errors naming fn (ag_fit's resume_from checks its file so)."""
    with _ModelFile(path, fn) as f:
        text = ffi.new("char **")
        f.call(lib.pg_mf_info_json(f.h, text))  # the checks and the layout: the core's
        info = json.loads(ffi.string(text[0]).decode("utf-8"))
    for k in ("parameters", "buffers"):
        info[k] = {n: (tuple(d["shape"]), d["dtype"]) for n, d in info[k].items()}
    return info
