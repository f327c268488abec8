"""Model files: weights in safetensors format, the architecture as JSON in its metadata.

Format (docs/model-format.md has the full description, shared with the R package):
8-byte little-endian header length N, N bytes of JSON header (space padded to a multiple of 8),
then the raw little-endian data. Each tensor entry: {"dtype": "F32"|"F64", "shape": [rows, cols],
"data_offsets": [begin, end]} (offsets relative to the end of the header). Values are stored
row-major (C order), as every safetensors reader expects: an R matrix m is written as
as.vector(t(m)) and read back with matrix(v, rows, cols, byrow = TRUE). ``__metadata__`` (string
values only) holds format, format_version, config (the model's to_config() as JSON), the
ordered parameter and buffer names, and optionally epoch, optimizer state and extra JSON.

Reading never unpickles or evaluates anything; every size, offset, dtype and JSON field is
checked, and any problem raises PyggmlrValueError."""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Dict, Tuple, Union

import numpy as np

from ._core import check, ffi, lib
from .errors import ArgumentError, PyggmlrError, PyggmlrValueError
from .io_check import check_json, clean, config_match, epoch_value, os_error
from .tensor import Tensor

__all__ = ["ag_model_info"]  # ag_save_model / ag_load_model: state.py

FORMAT = "pyggmlr.ag_model"
FORMAT_VERSION = "1"
MAX_HEADER = (
    100 * 1024 * 1024
)  # bytes of JSON header the core accepts when reading (native/codec.c)
_DT: Dict[str, np.dtype] = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8")}


# ---------------------------------------------------------------------------------------------
# safetensors writer / reader: the C core's codec (native/codec*.c), shared with the R package


def _write_safetensors(path, tensors, metadata):
    """tensors: list of (name, 2-D numpy float32/float64 array); metadata: dict str -> str.
    The core writes it atomically: a temp file in the same directory, fsynced, renamed over
    path, the directory fsynced."""
    path = _path_arg(path, "ag_save_model()")
    keep, arr = [], ffi.new("pg_st_tensor[]", max(len(tensors), 1))
    for i, (name, a) in enumerate(tensors):
        a = np.asarray(a)
        code = lib.PG_ST_DTYPE_F64 if a.dtype == np.float64 else lib.PG_ST_DTYPE_F32
        raw = np.ascontiguousarray(a, dtype=_DT["F64" if code == lib.PG_ST_DTYPE_F64 else "F32"])
        if raw.ndim > 2:
            raise PyggmlrValueError(
                f"ag_save_model(): tensor {name!r} has {raw.ndim} dimensions (at most 2)"
            )
        nm = ffi.new("char[]", str(name).encode("utf-8", "surrogatepass"))
        keep += [nm, raw]
        e = arr[i]
        e.name, e.dtype, e.ndim = nm, code, raw.ndim
        e.rows = raw.shape[0] if raw.ndim else 1
        e.cols = raw.shape[1] if raw.ndim == 2 else 1
        e.data = ffi.from_buffer(raw) if raw.size else ffi.NULL
    ks = [ffi.new("char[]", str(k).encode("utf-8", "surrogatepass")) for k in metadata]
    vs = [ffi.new("char[]", str(v).encode("utf-8", "surrogatepass")) for v in metadata.values()]
    rc = lib.pg_st_write(
        path.encode("utf-8", "surrogateescape"),
        arr,
        len(tensors),
        ffi.new("char *[]", ks or [ffi.NULL]),
        ffi.new("char *[]", vs or [ffi.NULL]),
        len(ks),
    )
    if rc == lib.PG_STATUS_ERR_IO:  # FileNotFoundError, PermissionError, ... with errno and path
        raise os_error(path)
    check(rc)
    return path


def _last_msg():
    msg = ffi.string(lib.pg_last_error()).decode("utf-8", "replace")
    lib.pg_clear_error()
    return msg


def _bad(path, msg):
    return PyggmlrValueError(f"{os.fspath(path)!s}: {msg}")


def _json(text, what, path, budget=0):
    """Parse a metadata JSON text: the core checks it first (strict syntax, limits, no duplicate
    keys; with budget, the architecture's plausible sizes), then the json module reads it."""
    raw = text.encode("utf-8", "surrogatepass")
    if lib.pg_json_check(raw, len(raw), what.encode("utf-8", "replace"), budget) != 0:
        raise _bad(path, _last_msg())
    return json.loads(text)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _path_arg(path, fn):
    """path as str/bytes; an int or bool is refused (open() would take it as a file descriptor:
    ag_load_model(0) read stdin and closed it), as is anything else that is not a path."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentError(
            f"{fn}: path must be a file name (str, bytes or os.PathLike), got {type(path).__name__} {path!r:.40}"
        )
    return os.fspath(path)


def _regular_file(path, fn):
    """The language's ordinary errors for a missing file or a directory; a FIFO, device or
    socket is refused before anything opens it (reading one would block or never end)."""
    kind = lib.pg_file_kind(os.fsencode(path))
    if kind == lib.PG_FILE_KIND_MISSING:
        os.stat(path)  # FileNotFoundError / PermissionError with the system's text
    if kind == lib.PG_FILE_KIND_DIR:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if kind != lib.PG_FILE_KIND_REGULAR:
        raise PyggmlrValueError(
            f"{fn}: {os.fspath(path)!s}: not a regular file (a FIFO, device or socket): model files are regular files"
        )


def _read_safetensors(path, fn="ag_load_model()"):
    """Validate and read a safetensors file (the core checks everything before any tensor is
    read): returns (dict name -> 2-D C-ordered numpy array in file order, metadata dict). A file
    refused on its framing or header names fn too ("ag_load_model(): <path>: header length ...")."""
    path = _path_arg(path, fn)
    _regular_file(path, fn)
    h = ffi.new("pg_st_file **")
    rc = lib.pg_st_open(os.fsencode(path), h)
    if rc != 0:
        if rc == lib.PG_STATUS_ERR_IO:
            raise os_error(path)
        msg = _last_msg()
        if rc == lib.PG_STATUS_ERR_NOMEM:
            raise MemoryError(f"{fn}: {msg}")
        raise PyggmlrValueError(f"{fn}: {os.fspath(path)!s}: {msg}")
    f = h[0]
    try:
        out = {}
        for i in range(lib.pg_st_count(f)):
            dt = _DT["F64" if lib.pg_st_dtype(f, i) == lib.PG_ST_DTYPE_F64 else "F32"]
            r, c = lib.pg_st_rows(f, i), lib.pg_st_cols(f, i)
            a = np.empty((r, c), dtype=dt.newbyteorder("="))
            if a.nbytes and lib.pg_st_read(f, i, ffi.from_buffer(a), a.nbytes) != 0:
                raise _bad(path, _last_msg())
            out[ffi.string(lib.pg_st_name(f, i)).decode("utf-8")] = a
        meta = {
            ffi.string(lib.pg_st_meta_key(f, i)).decode("utf-8"): ffi.string(
                lib.pg_st_meta_value(f, i)
            ).decode("utf-8")
            for i in range(lib.pg_st_meta_count(f))
        }
    finally:
        lib.pg_st_close(f)
    return out, meta


# ---------------------------------------------------------------------------------------------
# model <-> file


def _model_parts(model):
    from .fit import _buffers, _params

    try:
        params = _params(model)
    except ArgumentError:
        raise ArgumentError(
            f"ag_save_model(): model must have parameters(), got {type(model).__name__}"
        ) from None
    bufs = _buffers(model)
    for k, t in list(params.items()) + list(bufs.items()):
        if not isinstance(k, str):
            raise ArgumentError(f"model names must be strings, got {k!r}")
        if not isinstance(t, Tensor):
            raise ArgumentError(f"model entry {k!r} is a {type(t).__name__}, not a tensor")
    return params, bufs


def _opt_names(opt, params):
    by_id = {t.id: k for k, t in params.items()}
    return [by_id.get(t.id, f"#{i + 1}") for i, t in enumerate(opt.params.values())]


def _save(model, path, optimizer=None, epoch=None, extra=None, more=None):
    from . import __version__

    _path_arg(path, "ag_save_model()")
    from .optim import Optimizer

    params, bufs = _model_parts(model)
    clash = set(params) & set(bufs)
    if clash:
        raise PyggmlrValueError(
            f"ag_save_model(): names used by both a parameter and a buffer: {sorted(clash)}"
        )
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_by": f"pyggmlr {__version__}",
        "parameters": json.dumps(list(params)),
        "buffers": json.dumps(list(bufs)),
    }
    to_config = getattr(model, "to_config", None)
    if callable(to_config):
        try:
            cfg = to_config()
        except PyggmlrValueError as e:  # e.g. a custom layer without to_config(): weights only
            import warnings

            warnings.warn(
                f"ag_save_model(): saving the weights without the architecture ({e}); "
                "load with ag_load_model(path, model=...)",
                stacklevel=3,
            )
        else:
            what = "the model's architecture config"
            cfg = clean(cfg, what)  # too deep, a cycle: PyggmlrValueError
            try:
                meta["config"] = json.dumps(cfg, allow_nan=False)
            except (TypeError, ValueError) as e:  # a function or an object in a custom config
                raise ArgumentError(
                    f"ag_save_model(): {what} must be JSON-serialisable ({e})"
                ) from None
            from .io_check import check_config

            check_config(meta["config"], params, bufs)  # whatever is saved must load
    tensors = [(k, t.numpy()) for k, t in params.items()] + [
        (k, t.numpy()) for k, t in bufs.items()
    ]
    if epoch is not None:
        from .io_check import check_epoch

        meta["epoch"] = str(check_epoch(epoch))
    if optimizer is not None:
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(
                f"ag_save_model(): optimizer must be an optimizer object, got {type(optimizer).__name__}"
            )
        st = optimizer._file_state()  # this file's layout (ggmlR's state() has another)
        names = _opt_names(optimizer, params)
        slots = sorted({s for entry in st["params"] for s in entry})
        meta["optimizer"] = json.dumps(
            clean(
                {
                    "kind": st["kind"],
                    "t": st["t"],
                    "accum_count": st["accum_count"],
                    "hyper": st["hyper"],
                    "params": names,
                    "slots": slots,
                },
                "the optimizer state",
            ),
            allow_nan=False,
        )
        for nm, entry in zip(names, st["params"]):
            for s, v in entry.items():
                if v is not None:
                    tensors.append((f"optimizer.{s}.{nm}", v))
    if extra is not None:
        ex = clean(extra, "extra")  # bounded depth, no cycles: typed errors, not RecursionError
        try:
            meta["extra"] = json.dumps(ex, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ArgumentError(f"ag_save_model(): extra must be JSON-serialisable ({e})") from None
        check_json(meta["extra"], "metadata 'extra'")  # whatever is saved must load
    for k, v in (more or {}).items():
        tensors.append((k, v))
    return _write_safetensors(path, tensors, meta)


# ag_save_model / ag_load_model (ggmlR's arguments): pyggmlr/state.py


def _meta_json(meta, key, path, kind, budget=0):
    if key not in meta:
        return None
    v = _json(meta[key], f"metadata {key!r}", path, budget)
    if not isinstance(v, kind):
        raise _bad(path, f"metadata {key!r} has the wrong type ({type(v).__name__})")
    return v


def _names(meta, key, tensors, path):
    v = _meta_json(meta, key, path, list)
    if v is None:
        return None
    if not all(isinstance(s, str) for s in v) or len(set(v)) != len(v):
        raise _bad(path, f"metadata {key!r} must list distinct names")
    missing = [s for s in v if s not in tensors]
    if missing:
        raise _bad(
            path,
            f"metadata {key!r} names tensors that are not in the file: {', '.join(missing[:5])}",
        )
    return v


def _files_dtype(tensors, pnames):
    dts = {tensors[n].dtype for n in (tensors if pnames is None else pnames)}
    return "f64" if dts == {np.dtype(np.float64)} else "f32"


def _rebuild(meta, tensors, pnames, path, dtype=None, bnames=None):
    from .tensor import ag_dtype

    # the budget: the most elements one layer may ask for (the product of its integer fields),
    # from the file's own tensors, so a hostile config cannot make the rebuild allocate gigabytes
    budget = 16 * sum(int(a.size) for a in tensors.values()) + 65536
    cfg = _meta_json(meta, "config", path, dict, budget)
    if cfg is None:
        raise _bad(
            path,
            "the file has no architecture (metadata 'config'); pass model= to load its weights into a model",
        )
    # every built-in layer's tensors must be in the file with the config's shapes before any
    # layer is built (the budget alone let a 900-byte file ask for a 2 GB attention layer)
    why = config_match(meta["config"], tensors, None if pnames is None else pnames + (bnames or []))
    if why is not None:
        raise PyggmlrValueError(f"ag_load_model(): {os.fspath(path)!s}: {why}")
    prev = ag_dtype(dtype or _files_dtype(tensors, pnames or []))
    try:
        from .nn import ag_module_from_config

        model = ag_module_from_config(cfg)
    except Exception as e:  # untrusted content: any failure to build is a bad file
        raise _bad(
            path, f"cannot rebuild the model from its architecture config: {type(e).__name__}: {e}"
        ) from None
    finally:
        ag_dtype(prev)
    return model


def _shape_str(s):
    return f"{s[0]}x{s[1]}"


def _match(kind, model_d, file_names, tensors, path):
    """ggmlR's checks: the same names, then the same shapes. Returns [(tensor, array)]."""
    m, f = set(model_d), set(file_names)
    if m != f:
        miss = [k for k in model_d if k not in f]
        extra = [k for k in file_names if k not in m]
        raise PyggmlrValueError(
            f"{kind} mismatch between saved state and model. missing in file: {', '.join(miss) or '(none)'}; "
            f"not in model: {', '.join(extra) or '(none)'}"
        )
    out = []
    for k, t in model_d.items():
        a = tensors[k]
        if tuple(t.shape) != a.shape:
            raise PyggmlrValueError(
                f"shape mismatch for {kind} '{k}': model {_shape_str(t.shape)} vs file {_shape_str(a.shape)}"
            )
        out.append((t, a))
    return out


def _opt_state(meta, tensors, optimizer, params, path):
    info = _meta_json(meta, "optimizer", path, dict)
    if info is None:
        raise _bad(path, "the file has no optimizer state")
    names, slots = info.get("params"), info.get("slots")
    if (
        not isinstance(names, list)
        or not all(isinstance(s, str) for s in names)
        or not isinstance(slots, list)
        or not all(isinstance(s, str) for s in slots)
    ):
        raise _bad(path, "optimizer metadata: params and slots must be lists of names")
    t, ac, hyper, kind = (
        info.get("t"),
        info.get("accum_count"),
        info.get("hyper", {}),
        info.get("kind"),
    )
    if not (_is_int(t) and t >= 0 and _is_int(ac) and ac >= 0):
        raise _bad(path, "optimizer metadata: t and accum_count must be integers >= 0")
    if not isinstance(hyper, dict) or not all(
        v is None or isinstance(v, (int, float)) for v in hyper.values()
    ):
        raise _bad(path, "optimizer metadata: hyper must map names to numbers")
    from .optim import _ADAM

    okind = "adam" if optimizer._kind == _ADAM else "sgd"
    if kind != okind:
        raise PyggmlrValueError(
            f"optimizer state mismatch: the file's state is for {kind}, this optimizer is {okind}"
        )
    mine = _opt_names(optimizer, params)
    if sorted(mine) != sorted(names):
        raise PyggmlrValueError(
            f"optimizer state mismatch: the optimizer's parameters are {', '.join(mine)}; "
            f"the file has {', '.join(names)}"
        )
    per = []
    for nm, p in zip(mine, optimizer.params.values()):
        entry = {}
        for s in slots:
            a = tensors.get(f"optimizer.{s}.{nm}")
            if a is not None and a.shape != tuple(p.shape):
                raise _bad(
                    path,
                    f"optimizer state '{s}' for '{nm}' is {_shape_str(a.shape)}, the parameter is {_shape_str(p.shape)}",
                )
            entry[s] = None if a is None else np.asfortranarray(a)
        per.append(entry)
    return {
        "format": "ggmlR.ag_opt_state",
        "version": 1,
        "kind": kind,
        "t": t,
        "accum_count": ac,
        "hyper": {k: v for k, v in hyper.items() if v is not None},
        "params": per,
    }


def _load(
    path, model=None, optimizer=None, quiet_hyper=False, need_epoch=False, builder=None, dtype=None
):
    import warnings

    tensors, meta = _read_safetensors(path)
    fmt = meta.get("format")
    if fmt is not None and fmt != FORMAT:
        raise _bad(path, f"not a pyggmlr model file (format {fmt!r})")
    if fmt is not None and meta.get("format_version") != FORMAT_VERSION:
        raise _bad(
            path,
            f"unsupported model file version {meta.get('format_version')!r} (this pyggmlr reads {FORMAT_VERSION})",
        )
    if fmt is None and model is None and builder is None:
        raise _bad(
            path,
            "not a pyggmlr model file (no 'format' metadata); pass model= to load its tensors by name",
        )
    pnames = _names(meta, "parameters", tensors, path)
    bnames = _names(meta, "buffers", tensors, path)
    epoch = meta.get("epoch")
    if epoch is not None:
        text, epoch = epoch, epoch_value(epoch)  # ASCII digits only, as R's loader
        if epoch is None:
            raise _bad(path, f"metadata 'epoch' is not a non-negative integer: {text[:20]!r}")
    elif need_epoch:
        raise _bad(
            path, "not a training checkpoint (no epoch; write checkpoints with ag_model_checkpoint)"
        )
    extra = _meta_json(meta, "extra", path, (dict, list, str, int, float, bool, type(None)))
    if (
        model is None and builder is not None
    ):  # built in dtype, else the file's (ggmlR: param_dtypes)
        from .state import _build

        model = _build(builder, dtype or _files_dtype(tensors, pnames))
        params, bufs = _model_parts(model)
    elif model is None:
        model = _rebuild(meta, tensors, pnames, path, dtype, bnames)
        try:
            params, bufs = _model_parts(model)
        except PyggmlrError as e:
            raise _bad(path, f"the rebuilt model is not usable: {e}") from None
    else:
        params, bufs = _model_parts(model)
    if dtype is not None:
        from .state import _check_built_dtype

        _check_built_dtype(params, dtype)
    if pnames is None:  # a foreign safetensors file: take the model's names
        pnames = (
            [k for k in params if k in tensors] if set(params) <= set(tensors) else list(tensors)
        )
    if bnames is None:
        bnames = [k for k in bufs if k in tensors]
    writes = _match("parameter", params, pnames, tensors, path) + _match(
        "buffer", bufs, bnames, tensors, path
    )
    ostate = None
    if optimizer is not None:
        from .optim import Optimizer

        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(
                f"ag_load_model(): optimizer must be an optimizer object, got {type(optimizer).__name__}"
            )
        ostate = _opt_state(meta, tensors, optimizer, params, path)
        try:
            optimizer._load_file_state(ostate, check_only=True)
        except PyggmlrValueError as e:
            raise _bad(path, str(e)) from None
    from .io_check import check_fits

    for (t, a), k in zip(writes, list(params) + list(bufs)):
        try:
            check_fits(t, a, f"tensor '{k}'")
        except PyggmlrValueError as e:
            raise _bad(path, str(e)) from None
    for t, a in writes:  # everything checked: now write
        t.data = np.asfortranarray(a)
    if ostate is not None:
        with warnings.catch_warnings():
            if quiet_hyper:
                warnings.simplefilter("ignore")
            optimizer._load_file_state(ostate)
    from .fit import _set_mode

    _set_mode(model, False)
    return model, {"epoch": epoch, "extra": extra, "tensors": tensors, "meta": meta}


def _load_checkpoint(path, model, optimizer):
    model, info = _load(path, model=model, optimizer=optimizer, quiet_hyper=True, need_epoch=True)
    more: Dict[int, Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]] = {}  # i: (params, bufs)
    for k, a in info["tensors"].items():
        if k.startswith("callback"):
            head, _, rest = k.partition(".")
            kind, _, name = rest.partition(".")
            if head[8:].isdigit() and kind in ("param", "buffer"):
                ps, bs = more.setdefault(int(head[8:]), ({}, {}))
                (ps if kind == "param" else bs)[name] = np.asfortranarray(a)
    return {"epoch": info["epoch"], "extra": info["extra"], "more": more}


def ag_model_info(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """What a model file holds, without building anything: a dict with format, parameter and
    buffer names with their shapes and dtypes, config (dict or None), epoch, optimizer kind and
    extra."""
    tensors, meta = _read_safetensors(path, "ag_model_info()")
    pn = _names(meta, "parameters", tensors, path) or []
    bn = _names(meta, "buffers", tensors, path) or []
    opt = _meta_json(meta, "optimizer", path, dict)
    ep = meta.get("epoch")
    return {
        "format": meta.get("format"),
        "format_version": meta.get("format_version"),
        "parameters": {
            k: (tensors[k].shape, "f64" if tensors[k].dtype == np.float64 else "f32") for k in pn
        },
        "buffers": {
            k: (tensors[k].shape, "f64" if tensors[k].dtype == np.float64 else "f32") for k in bn
        },
        "config": _meta_json(meta, "config", path, dict),
        "epoch": epoch_value(ep),
        "optimizer": opt.get("kind") if opt else None,
        "extra": _meta_json(meta, "extra", path, (dict, list, str, int, float, bool, type(None))),
    }
