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

from typing import Any, Callable, Dict, Optional, Union

import json
import math
import os
import tempfile

import numpy as np

from ._core import ffi
from .errors import ArgumentError, PyggmlrError, PyggmlrValueError
from .tensor import Tensor

__all__ = ["ag_model_info"]  # ag_save_model / ag_load_model: state.py

FORMAT = "pyggmlr.ag_model"
FORMAT_VERSION = "1"
MAX_HEADER = 100 * 1024 * 1024  # bytes of JSON header accepted when reading
_DT = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8")}
_MAX_CONFIG_INT = 10 ** 8  # an architecture asking for more units than this is not ours


# ---------------------------------------------------------------------------------------------
# safetensors writer / reader

def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_safetensors(path, tensors, metadata):
    """tensors: list of (name, 2-D numpy float32/float64 array); metadata: dict str -> str.
    Written atomically: a temp file in the same directory, flushed and fsynced, then
    os.replace()d over path."""
    header = {"__metadata__": dict(metadata)}
    blobs, off = [], 0
    for name, a in tensors:
        if name in header:
            raise PyggmlrValueError(f"ag_save_model(): duplicate tensor name {name!r}")
        a = np.asarray(a)
        code = "F64" if a.dtype == np.float64 else "F32"
        raw = np.ascontiguousarray(a, dtype=_DT[code]).tobytes()
        header[name] = {"dtype": code, "shape": [int(s) for s in a.shape], "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hb = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(len(hb).to_bytes(8, "little"))
            f.write(hb)
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)
    return path


def _bad(path, msg):
    return PyggmlrValueError(f"{os.fspath(path)!s}: {msg}")


def _no_dup_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def _json(text, what, path):
    try:
        return json.loads(text, object_pairs_hook=_no_dup_keys)
    except (ValueError, RecursionError, TypeError) as e:
        raise _bad(path, f"{what} is not valid JSON ({str(e)[:120]})") from None


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _read_safetensors(path):
    """Validate and read a safetensors file: returns (dict name -> 2-D C-ordered numpy array
    in file order, metadata dict str -> str)."""
    with open(path, "rb") as f:
        data = f.read()
    size = len(data)
    if size < 8:
        raise _bad(path, f"not a safetensors model file: {size} bytes, shorter than the 8-byte header length (truncated?)")
    hlen = int.from_bytes(data[:8], "little")
    if hlen < 2:
        raise _bad(path, f"not a safetensors model file: header length {hlen} is too small")
    if hlen > MAX_HEADER:
        raise _bad(path, f"not a safetensors model file: header length {hlen} exceeds the {MAX_HEADER}-byte limit")
    if 8 + hlen > size:
        raise _bad(path, f"truncated file: the header says {hlen} bytes but only {size - 8} follow")
    try:
        text = data[8:8 + hlen].decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(path, "not a safetensors model file: the header is not UTF-8 text") from None
    if not text.lstrip().startswith("{"):
        raise _bad(path, "not a safetensors model file: the header is not a JSON object")
    header = _json(text, "the header", path)
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    meta = header.pop("__metadata__", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise _bad(path, "__metadata__ must map strings to strings")
    base = 8 + hlen
    dlen = size - base
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise _bad(path, f"tensor {name!r}: entry must have exactly dtype, shape and data_offsets")
        dt, shape, offs = e["dtype"], e["shape"], e["data_offsets"]
        if not isinstance(dt, str) or dt not in _DT:
            raise _bad(path, f"tensor {name!r}: unsupported dtype {dt!r} (pyggmlr reads F32 and F64)")
        if not isinstance(shape, list) or len(shape) > 2 or not all(_is_int(s) and s >= 0 for s in shape):
            raise _bad(path, f"tensor {name!r}: shape must be a list of at most 2 non-negative integers, got {shape!r}")
        if not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) for o in offs):
            raise _bad(path, f"tensor {name!r}: data_offsets must be two integers, got {offs!r}")
        b, en = offs
        if not 0 <= b <= en <= dlen:
            raise _bad(path, f"tensor {name!r}: data_offsets [{b}, {en}] lie outside the {dlen} data bytes (truncated or corrupt file)")
        numel = math.prod(shape)
        if en - b != numel * _DT[dt].itemsize:
            raise _bad(path, f"tensor {name!r}: data_offsets span {en - b} bytes but shape {shape} of {dt} needs {numel * _DT[dt].itemsize}")
        spans.append((b, en, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise _bad(path, f"tensors {n0!r} and {n1!r} overlap in the data section")
    out = {}
    for name, e in header.items():
        dt, shape, (b, en) = _DT[e["dtype"]], e["shape"], e["data_offsets"]
        r, c = (1, 1) if len(shape) == 0 else ((shape[0], 1) if len(shape) == 1 else tuple(shape))
        out[name] = np.frombuffer(data, dtype=dt, count=r * c, offset=base + b).reshape(r, c).astype(dt.newbyteorder("="))
    return out, meta


# ---------------------------------------------------------------------------------------------
# model <-> file

def _ptr(t):
    return int(ffi.cast("intptr_t", t._handle()))


def _model_parts(model):
    from .fit import _buffers, _params
    try:
        params = _params(model)
    except ArgumentError:
        raise ArgumentError(f"ag_save_model(): model must have parameters(), got {type(model).__name__}") from None
    bufs = _buffers(model)
    for k, t in list(params.items()) + list(bufs.items()):
        if not isinstance(k, str):
            raise ArgumentError(f"model names must be strings, got {k!r}")
        if not isinstance(t, Tensor):
            raise ArgumentError(f"model entry {k!r} is a {type(t).__name__}, not a tensor")
    return params, bufs


def _opt_names(opt, params):
    by_ptr = {_ptr(t): k for k, t in params.items()}
    return [by_ptr.get(_ptr(t), f"#{i + 1}") for i, t in enumerate(opt.params.values())]


def _clean(v):
    """JSON-safe copy: non-finite floats become null; numpy scalars become Python numbers."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    return v


def _save(model, path, optimizer=None, epoch=None, extra=None, more=None):
    from . import __version__
    from .optim import Optimizer
    params, bufs = _model_parts(model)
    clash = set(params) & set(bufs)
    if clash:
        raise PyggmlrValueError(f"ag_save_model(): names used by both a parameter and a buffer: {sorted(clash)}")
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "created_by": f"pyggmlr {__version__}",
            "parameters": json.dumps(list(params)), "buffers": json.dumps(list(bufs))}
    to_config = getattr(model, "to_config", None)
    if callable(to_config):
        try:
            cfg = to_config()
        except PyggmlrValueError as e:  # e.g. a custom layer without to_config(): weights only
            import warnings
            warnings.warn(f"ag_save_model(): saving the weights without the architecture ({e}); "
                          "load with ag_load_model(path, model=...)", stacklevel=3)
        else:
            meta["config"] = json.dumps(_clean(cfg), allow_nan=False)
    tensors = [(k, t.numpy()) for k, t in params.items()] + [(k, t.numpy()) for k, t in bufs.items()]
    if epoch is not None:
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise PyggmlrValueError(f"ag_save_model(): epoch must be an integer >= 0, got {epoch!r}")
        meta["epoch"] = str(int(epoch))
    if optimizer is not None:
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"ag_save_model(): optimizer must be an optimizer object, got {type(optimizer).__name__}")
        st = optimizer._file_state()  # this file's layout (ggmlR's state() has another)
        names = _opt_names(optimizer, params)
        slots = sorted({s for entry in st["params"] for s in entry})
        meta["optimizer"] = json.dumps(_clean({"kind": st["kind"], "t": st["t"], "accum_count": st["accum_count"],
                                               "hyper": st["hyper"], "params": names, "slots": slots}), allow_nan=False)
        for nm, entry in zip(names, st["params"]):
            for s, v in entry.items():
                if v is not None:
                    tensors.append((f"optimizer.{s}.{nm}", v))
    if extra is not None:
        try:
            meta["extra"] = json.dumps(_clean(extra), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ArgumentError(f"ag_save_model(): extra must be JSON-serialisable ({e})") from None
    for k, v in (more or {}).items():
        tensors.append((k, v))
    return _write_safetensors(path, tensors, meta)


# ag_save_model / ag_load_model (ggmlR's arguments): pyggmlr/state.py


def _meta_json(meta, key, path, kind):
    if key not in meta:
        return None
    v = _json(meta[key], f"metadata {key!r}", path)
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
        raise _bad(path, f"metadata {key!r} names tensors that are not in the file: {', '.join(missing[:5])}")
    return v


def _check_config(cfg, path, depth=0, budget=None):
    """Plausible sizes only. budget: the most elements one layer may ask for (the product of a
    layer's integer fields, e.g. in_features * out_features), derived from the file's own
    tensors, so a hostile config cannot make the rebuild allocate gigabytes before the shapes
    are compared with the file."""
    if depth > 64:
        raise _bad(path, "architecture config is nested too deeply")
    if isinstance(cfg, dict):
        if budget is not None:
            prod = 1
            for v in cfg.values():
                if _is_int(v) and v > 1:
                    prod *= v
            if prod > budget:
                raise _bad(path, f"architecture config has an implausible layer size ({prod} elements; the file holds far fewer values)")
        for v in cfg.values():
            _check_config(v, path, depth + 1, budget)
    elif isinstance(cfg, list):
        for v in cfg:
            _check_config(v, path, depth + 1, budget)
    elif isinstance(cfg, (int, float)) and not isinstance(cfg, bool) and abs(cfg) > _MAX_CONFIG_INT:
        raise _bad(path, f"architecture config has an implausible size {cfg!r}")


def _files_dtype(tensors, pnames):
    dts = {tensors[n].dtype for n in (tensors if pnames is None else pnames)}
    return "f64" if dts == {np.dtype(np.float64)} else "f32"


def _rebuild(meta, tensors, pnames, path, dtype=None):
    from .tensor import ag_dtype
    cfg = _meta_json(meta, "config", path, dict)
    if cfg is None:
        raise _bad(path, "the file has no architecture (metadata 'config'); pass model= to load its weights into a model")
    _check_config(cfg, path, budget=16 * sum(int(a.size) for a in tensors.values()) + 65536)
    prev = ag_dtype(dtype or _files_dtype(tensors, pnames or []))
    try:
        from .nn import ag_module_from_config
        model = ag_module_from_config(cfg)
    except Exception as e:  # untrusted content: any failure to build is a bad file
        raise _bad(path, f"cannot rebuild the model from its architecture config: {type(e).__name__}: {e}") from None
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
            f"not in model: {', '.join(extra) or '(none)'}")
    out = []
    for k, t in model_d.items():
        a = tensors[k]
        if tuple(t.shape) != a.shape:
            raise PyggmlrValueError(f"shape mismatch for {kind} '{k}': model {_shape_str(t.shape)} vs file {_shape_str(a.shape)}")
        out.append((t, a))
    return out


def _opt_state(meta, tensors, optimizer, params, path):
    info = _meta_json(meta, "optimizer", path, dict)
    if info is None:
        raise _bad(path, "the file has no optimizer state")
    names, slots = info.get("params"), info.get("slots")
    if (not isinstance(names, list) or not all(isinstance(s, str) for s in names)
            or not isinstance(slots, list) or not all(isinstance(s, str) for s in slots)):
        raise _bad(path, "optimizer metadata: params and slots must be lists of names")
    t, ac, hyper, kind = info.get("t"), info.get("accum_count"), info.get("hyper", {}), info.get("kind")
    if not (_is_int(t) and t >= 0 and _is_int(ac) and ac >= 0):
        raise _bad(path, "optimizer metadata: t and accum_count must be integers >= 0")
    if not isinstance(hyper, dict) or not all(v is None or isinstance(v, (int, float)) for v in hyper.values()):
        raise _bad(path, "optimizer metadata: hyper must map names to numbers")
    from .optim import _ADAM
    okind = "adam" if optimizer._kind == _ADAM else "sgd"
    if kind != okind:
        raise PyggmlrValueError(f"optimizer state mismatch: the file's state is for {kind}, this optimizer is {okind}")
    mine = _opt_names(optimizer, params)
    if sorted(mine) != sorted(names):
        raise PyggmlrValueError(f"optimizer state mismatch: the optimizer's parameters are {', '.join(mine)}; "
                                f"the file has {', '.join(names)}")
    per = []
    for nm, p in zip(mine, optimizer.params.values()):
        entry = {}
        for s in slots:
            a = tensors.get(f"optimizer.{s}.{nm}")
            if a is not None and a.shape != tuple(p.shape):
                raise _bad(path, f"optimizer state '{s}' for '{nm}' is {_shape_str(a.shape)}, the parameter is {_shape_str(p.shape)}")
            entry[s] = None if a is None else np.asfortranarray(a)
        per.append(entry)
    return {"format": "ggmlR.ag_opt_state", "version": 1, "kind": kind, "t": t, "accum_count": ac,
            "hyper": {k: v for k, v in hyper.items() if v is not None}, "params": per}


def _load(path, model=None, optimizer=None, quiet_hyper=False, need_epoch=False, builder=None, dtype=None):
    import warnings
    tensors, meta = _read_safetensors(path)
    fmt = meta.get("format")
    if fmt is not None and fmt != FORMAT:
        raise _bad(path, f"not a pyggmlr model file (format {fmt!r})")
    if fmt is not None and meta.get("format_version") != FORMAT_VERSION:
        raise _bad(path, f"unsupported model file version {meta.get('format_version')!r} (this pyggmlr reads {FORMAT_VERSION})")
    if fmt is None and model is None and builder is None:
        raise _bad(path, "not a pyggmlr model file (no 'format' metadata); pass model= to load its tensors by name")
    pnames = _names(meta, "parameters", tensors, path)
    bnames = _names(meta, "buffers", tensors, path)
    epoch = meta.get("epoch")
    if epoch is not None:
        if not epoch.isdigit() or len(epoch) > 12:
            raise _bad(path, f"metadata 'epoch' is not a non-negative integer: {epoch[:20]!r}")
        epoch = int(epoch)
    elif need_epoch:
        raise _bad(path, "not a training checkpoint (no epoch; write checkpoints with ag_model_checkpoint)")
    extra = _meta_json(meta, "extra", path, (dict, list, str, int, float, bool, type(None)))
    if model is None and builder is not None:  # built in dtype, else the file's (ggmlR: param_dtypes)
        from .state import _build
        model = _build(builder, dtype or _files_dtype(tensors, pnames))
        params, bufs = _model_parts(model)
    elif model is None:
        model = _rebuild(meta, tensors, pnames, path, dtype)
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
        pnames = [k for k in params if k in tensors] if set(params) <= set(tensors) else list(tensors)
    if bnames is None:
        bnames = [k for k in bufs if k in tensors]
    writes = _match("parameter", params, pnames, tensors, path) + _match("buffer", bufs, bnames, tensors, path)
    ostate = None
    if optimizer is not None:
        from .optim import Optimizer
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"ag_load_model(): optimizer must be an optimizer object, got {type(optimizer).__name__}")
        ostate = _opt_state(meta, tensors, optimizer, params, path)
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
    more = {}
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
    tensors, meta = _read_safetensors(path)
    pn = _names(meta, "parameters", tensors, path) or []
    bn = _names(meta, "buffers", tensors, path) or []
    opt = _meta_json(meta, "optimizer", path, dict)
    ep = meta.get("epoch")
    return {"format": meta.get("format"), "format_version": meta.get("format_version"),
            "parameters": {k: (tensors[k].shape, "f64" if tensors[k].dtype == np.float64 else "f32") for k in pn},
            "buffers": {k: (tensors[k].shape, "f64" if tensors[k].dtype == np.float64 else "f32") for k in bn},
            "config": _meta_json(meta, "config", path, dict), "epoch": int(ep) if ep and ep.isdigit() else None,
            "optimizer": opt.get("kind") if opt else None,
            "extra": _meta_json(meta, "extra", path, (dict, list, str, int, float, bool, type(None)))}
