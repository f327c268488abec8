"""Model files edited by hand for tests: one field of the metadata changed, the data kept."""

import json
import os
import struct

import numpy as np

from pyggmlr._core import check, ffi, lib
from pyggmlr.errors import PyggmlrValueError
from pyggmlr.io.check import os_error
from pyggmlr.io.modelfile import _ModelFile, _path_arg


def _st_tensor(e, name, a, keep):
    """Fill the pg_st_tensor e with a 2-D (or fewer) numpy array; keep holds the buffers."""
    a = np.asarray(a)
    code = lib.PG_ST_DTYPE_F64 if a.dtype == np.float64 else lib.PG_ST_DTYPE_F32
    raw = np.ascontiguousarray(a, dtype="<f8" if code == lib.PG_ST_DTYPE_F64 else "<f4")
    if raw.ndim > 2:
        raise PyggmlrValueError(f"tensor {name!r} has {raw.ndim} dimensions (at most 2)")
    nm = ffi.new("char[]", str(name).encode("utf-8", "surrogatepass"))
    keep += [nm, raw]
    e.name, e.dtype, e.ndim = nm, code, raw.ndim
    e.rows = raw.shape[0] if raw.ndim else 1
    e.cols = raw.shape[1] if raw.ndim == 2 else 1
    e.data = ffi.from_buffer(raw) if raw.size else ffi.NULL
    return e


def write_safetensors(path, tensors, metadata):
    """A raw safetensors file through the core's writer (pg_st_write: atomic, fsynced): tensors a
    list of (name, 2-D float32/float64 array), metadata a dict str -> str."""
    path = _path_arg(path, "ag_save_model()")
    keep: list = []
    arr = ffi.new("pg_st_tensor[]", max(len(tensors), 1))
    for i, (name, a) in enumerate(tensors):
        _st_tensor(arr[i], name, a, keep)
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
    if rc == lib.PG_STATUS_ERR_IO:
        raise os_error(path)
    check(rc)
    return path


def read_safetensors(path, fn="ag_load_model()"):
    """A model file's (name -> 2-D C-ordered array in file order, metadata dict), read through the
    core (every check before any tensor is read; a refusal names fn)."""
    with _ModelFile(os.fspath(path), fn) as f:
        t = lambda p: ffi.string(p).decode("utf-8")  # noqa: E731
        n = range(lib.pg_st_meta_count(f.st))
        meta = {t(lib.pg_st_meta_key(f.st, i)): t(lib.pg_st_meta_value(f.st, i)) for i in n}
        return f.tensors(), meta


def edit_meta(path, fn, out=None):
    """Rewrite a model file's __metadata__ with fn(meta dict), data untouched, to out (default:
    path itself)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    h = json.loads(data[8 : 8 + n])
    fn(h["__metadata__"])
    hb = json.dumps(h, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(out or path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data[8 + n :])


def _history(meta, keep=None, **kv):
    """meta with the checkpoint's history entries kv set (its run state, metadata "extra"), and
    every per-epoch column cut to its first `keep` rows."""
    ex = json.loads(meta["extra"])
    h = ex["fit"]["history"]
    if keep is not None:
        h.update({k: v[:keep] for k, v in h.items() if isinstance(v, list)})
    h.update(kv)
    meta["extra"] = json.dumps(ex)


# checkpoints of 2 epochs whose history is not the epochs done, numbered 1 to epoch: (edit of
# the metadata, the end of the core's text, the same in R) for ag_fit(resume_from =)
HISTORY_EDITS = {
    "short": (
        lambda meta: _history(meta, keep=1),
        "(its history has 1 epoch, the checkpoint's epoch is 2)",
    ),
    "epoch_up": (
        lambda meta: meta.update(epoch="1000000"),
        "(its history has 2 epochs, the checkpoint's epoch is 1000000)",
    ),
    "renumbered": (
        lambda meta: _history(meta, epoch=[3, 4]),
        "(its history's epochs are not numbered 1 to 2)",
    ),
    "best": (
        lambda meta: _history(meta, best_epoch=7),
        "(its history's best_epoch is not an epoch from 0 to 2)",
    ),
}
