"""Data parallelism's collectives (layer 5, below fit/; pyggmlr.distributed is the public module): synchronous data parallelism across processes over MPI (mpi4py), launched with ``mpirun -np N python train.py``.

All arithmetic (packing gradients into one fused buffer, averaging, unpacking, copying weights)
runs in the C core (native/dist.c); this module validates, moves buffers through MPI and calls.
MPI is optional: importing pyggmlr never imports mpi4py; the MPI functions import it on first
use and raise DistributedError with install instructions when it is missing.

Guarantees of the MPI path (see docs/distributed.md):
  * weights start identical (broadcast from rank 0) and stay identical: every rank applies the
    same update (same optimizer state, same averaged gradient) to the same weights;
  * an N-rank step with per-rank batch b applies the gradient of the global batch of N*b
    samples: gradients are weighted by each rank's sample count, summed in one all-reduce and
    divided by the total count, which is the gradient of a per-sample mean loss over the union.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from .. import _core, _walk
from .._args import check_flag, check_int, check_real, plain
from .._core import F32, F64, NULL, ffi, lib
from ..errors import ArgumentError, PyggmlrError
from ..optim.optimizer import _grads_handle
from ..tape import Gradients
from ..tensor import Tensor, _dtype_code

#: A parameter list as the functions here accept it: a model (anything with parameters()), a
#: dict name -> tensor, a single tensor or an iterable of tensors; matched by position.
Params = Any
#: An mpi4py communicator (mpi4py is optional, so it is not typed more precisely).
Comm = Any

__all__ = [
    "DistributedError",
    "init",
    "is_initialized",
    "rank",
    "world_size",
    "barrier",
    "mpi_available",
    "ag_mpi_init",
    "ag_mpi_rank",
    "ag_mpi_world_size",
    "ag_mpi_barrier",
    "ag_mpi_available",
    "ag_mpi_stats",
    "ag_broadcast_parameters",
    "ag_allreduce_gradients",
    "ag_allreduce_mean",
    "ag_parameters_spread",
    "ag_rank_slice",
]

_GRAD, _VALUE = lib.PG_DIST_WHAT_GRAD, lib.PG_DIST_WHAT_VALUE

INSTALL_HINT = (
    "MPI support needs an MPI library and mpi4py. On Debian/Ubuntu:\n"
    "    apt-get install -y openmpi-bin libopenmpi-dev\n"
    "    pip install mpi4py\n"
    "then launch with: mpirun -np 2 python your_script.py "
    "(as root add --allow-run-as-root; on a machine with fewer cores than ranks add --oversubscribe)"
)


class DistributedError(PyggmlrError, RuntimeError):
    """MPI is missing, or the ranks disagree (different models, layouts or step counts)."""


# ---------------------------------------------------------------------------------------------
# parameter lists (identity, order kept)

_tensors = _walk.tensors


def _arr(tensors):
    return ffi.new("pg_tensor *[]", [t._handle() for t in tensors] or 1)


def _buf_dtype(tensors, dtype, fn=None):
    """The buffer's dtype code: dtype's (fn: the caller, named in a refusal), else f64 when fn
    (an all-reduce: sums in f64, as R's, whose Rmpi reduces doubles only), else the tensors'
    (a broadcast: f32 values pass exactly in an f32 buffer)."""
    if dtype is not None or fn is not None:
        return F64 if dtype is None else _dtype_code(dtype, fn)
    return F64 if any(lib.pg_tensor_dtype(t._p) == F64 for t in tensors) else F32


def _np_dtype(code):
    return np.float32 if code == F32 else np.float64


def _flat_len(arr, n, flags):
    L = lib.pg_dist_flat_len(arr, n, int(flags))
    if L < 0:
        _core.raise_last()
    return L


def _pack_call(fn, arr, n, gh, what, flags, scale, buf):
    """pg_dist_pack or pg_dist_unpack (fn) between the tensors and the numpy buffer buf."""
    code = F32 if buf.dtype == np.float32 else F64
    buf_p = ffi.cast("void *", buf.ctypes.data)
    _core.check(fn(arr, n, gh, what, int(flags), float(scale), buf_p, code, buf.size))


def _pack(arr, n, gh, what, flags, scale, buf):
    _pack_call(lib.pg_dist_pack, arr, n, gh, what, flags, scale, buf)


def _unpack(arr, n, gh, what, flags, scale, buf):
    _pack_call(lib.pg_dist_unpack, arr, n, gh, what, flags, scale, buf)


# ---------------------------------------------------------------------------------------------
# MPI backend

_state: Dict[str, Any] = {"comm": None, "MPI": None, "hook": False, "prev_hook": None}
_stats = {
    "allreduce_calls": 0,
    "allreduce_bytes": 0,
    "bcast_calls": 0,
    "bcast_bytes": 0,
    "check_calls": 0,
}


def _import_mpi():
    if _state["MPI"] is not None:
        return _state["MPI"]
    try:
        from mpi4py import MPI  # noqa: WPS433 (optional dependency, imported on first use)
    except ImportError as e:  # mpi4py missing, or built against an MPI library that is gone
        raise DistributedError(
            f"pyggmlr.distributed: MPI is not available ({e}).\n{INSTALL_HINT}"
        ) from None
    except OSError as e:
        raise DistributedError(
            f"pyggmlr.distributed: the MPI library could not be loaded ({e}).\n{INSTALL_HINT}"
        ) from None
    _state["MPI"] = MPI
    return MPI


def mpi_available() -> bool:
    """True when mpi4py can be imported (does not initialise anything else); never raises."""
    try:
        _import_mpi()
    except DistributedError:
        return False
    return True


def _abort_hook(exc_type, exc, tb):
    """An uncaught exception on one rank aborts the whole job instead of leaving the other
    ranks blocked in a collective forever."""
    (_state["prev_hook"] or sys.__excepthook__)(exc_type, exc, tb)
    try:
        sys.stderr.flush()
        sys.stdout.flush()
    finally:
        comm = _state["comm"]
        if comm is not None and comm.Get_size() > 1:
            r = comm.Get_rank()
            sys.stderr.write(
                f"[pyggmlr.distributed] rank {r}: uncaught {exc_type.__name__}; aborting all ranks\n"
            )
            sys.stderr.flush()
            comm.Abort(1)


def init(comm: Optional[Comm] = None, abort_on_error: bool = True) -> Comm:
    """Start (or join) MPI and pick the communicator (default MPI.COMM_WORLD); returns it.

    abort_on_error: install a sys.excepthook that calls MPI Abort on an uncaught exception, so a
    failing rank ends the job (non-zero exit) rather than leaving the others hanging. Calling
    init() again only changes the communicator when one is given.
    Raises: DistributedError (with install instructions) when mpi4py or the MPI library is
    missing."""
    # checked before anything changes
    abort_on_error = check_flag(abort_on_error, "ag_mpi_init", "abort_on_error")
    MPI = _import_mpi()
    _check_comm(MPI, comm, "ag_mpi_init")
    if comm is not None or _state["comm"] is None:
        _state["comm"] = comm if comm is not None else MPI.COMM_WORLD
    if abort_on_error and not _state["hook"]:
        _state["prev_hook"] = sys.excepthook
        sys.excepthook = _abort_hook
        _state["hook"] = True
    return _state["comm"]


def is_initialized() -> bool:
    """True once init() (ag_mpi_init) has set up the MPI communicator in this process; never
    raises."""
    return _state["comm"] is not None


def _check_comm(MPI, comm, fn):
    """A comm that is not an mpi4py communicator would fail deep inside a collective (an
    AttributeError, or a hang on other ranks): refused up front, naming the function."""
    # duck-typed (mpi4py's Comm, or a stand-in with its methods), as the collectives use it
    if comm is not None and not (
        isinstance(comm, MPI.Comm) or all(hasattr(comm, m) for m in ("Get_rank", "Get_size"))
    ):
        raise ArgumentError(
            f"{fn}: comm must be an mpi4py communicator (e.g. MPI.COMM_WORLD) or None, got "
            f"{type(plain(comm)).__name__} {plain(comm)!r}"[:200]
        )


def _comm(comm, fn):
    if comm is not None:
        _check_comm(_import_mpi(), comm, fn)
        return comm
    return _state["comm"] if _state["comm"] is not None else init()


def rank(comm: Optional[Comm] = None) -> int:
    """This process's rank (0-based) in comm (default: the one from init, started on demand).
    Raises DistributedError when MPI is not available."""
    return _comm(comm, "ag_mpi_rank").Get_rank()


def world_size(comm: Optional[Comm] = None) -> int:
    """Number of ranks in comm (default: the one from init, started on demand). Raises
    DistributedError when MPI is not available."""
    return _comm(comm, "ag_mpi_world_size").Get_size()


def barrier(comm: Optional[Comm] = None) -> None:
    """Block until every MPI rank of comm (default: the one from init) reaches this call.
    Raises DistributedError when MPI is not available."""
    _comm(comm, "ag_mpi_barrier").Barrier()


ag_mpi_init, ag_mpi_rank, ag_mpi_world_size, ag_mpi_barrier, ag_mpi_available = (
    init,
    rank,
    world_size,
    barrier,
    mpi_available,
)


def ag_mpi_stats(reset: bool = False) -> Dict[str, int]:
    """Counters of this process's collectives: calls and bytes of the fused all-reduce buffers
    and broadcasts (each rank contributes that many bytes per call), as a dict with
    allreduce_calls, allreduce_bytes, bcast_calls, bcast_bytes, check_calls. reset=True zeroes
    them after reading. Never raises; needs no MPI."""
    out = dict(_stats)
    if reset:
        for k in _stats:
            _stats[k] = 0
    return out


def _layout_sig(tensors):
    out = ffi.new("uint32_t *")
    _core.check(lib.pg_dist_layout_sig(_arr(tensors), len(tensors), out))
    return int(out[0])


def _check_layout(comm, tensors, op):
    """All ranks must pass the same shapes in the same order: one small all-reduce (max) of
    (n, -n, sig, -sig); every rank sees the same verdict, so all raise or none does."""
    MPI = _import_mpi()
    mine = np.array([len(tensors), _layout_sig(tensors)], dtype=np.int64)
    buf = np.concatenate([mine, -mine])
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
    _stats["check_calls"] += 1
    if buf[0] != -buf[2]:
        what = f"different numbers of tensors ({-buf[2]} to {buf[0]})"
    elif buf[1] != -buf[3]:
        what = f"{buf[0]} tensors each, but with different shapes or dtypes"
    else:
        return
    raise DistributedError(
        f"{op}: the ranks pass different parameter lists: {what}; every rank must build "
        f"the same model and call the same collectives in the same order"
    )


def ag_broadcast_parameters(
    model: Params, root: int = 0, comm: Optional[Comm] = None, buffers: bool = True
) -> None:
    """Overwrite every rank's parameters (and, with buffers=True, the model's tensor buffers such
    as batch-norm running statistics) with rank `root`'s values, in one fused broadcast.

    Args: model: a model, dict or list of tensors (same layout on every rank); root: the rank
    whose values win; comm: default the one from init.
    Returns: None (tensors are overwritten in place).
    Raises: DistributedError when MPI is missing or the ranks' layouts (count, shapes, dtypes)
    differ (raised on every rank)."""
    comm = _comm(comm, "ag_broadcast_parameters")
    # an invalid root reaches MPI_Bcast, whose default error handler may abort the process
    root = check_int(root, "ag_broadcast_parameters", "root", 0, comm.Get_size() - 1)
    tensors = _tensors(model, "ag_broadcast_parameters")
    buffers = check_flag(buffers, "ag_broadcast_parameters", "buffers")  # as R's
    if buffers and not isinstance(model, (dict, list, tuple, Tensor)):
        ids = {t.id for t in tensors}
        bufs = [t for _, t in _walk.items(model, "buffers", own=False) if isinstance(t, Tensor)]
        tensors += [t for t in bufs if t.id not in ids]
    if comm.Get_size() == 1:
        return
    _check_layout(comm, tensors, "ag_broadcast_parameters")
    arr, n = _arr(tensors), len(tensors)
    code = _buf_dtype(tensors, None)
    buf = np.empty(_flat_len(arr, n, 0), dtype=_np_dtype(code))
    if comm.Get_rank() == root:
        _pack(arr, n, NULL, _VALUE, 0, 1.0, buf)
    comm.Bcast(buf, root=root)
    _stats["bcast_calls"] += 1
    _stats["bcast_bytes"] += buf.nbytes
    if comm.Get_rank() != root:
        _unpack(arr, n, NULL, _VALUE, 0, 1.0, buf)


def ag_allreduce_gradients(
    params: Params,
    grads: Optional[Gradients] = None,
    weight: float = 1.0,
    comm: Optional[Comm] = None,
    dtype: Optional[str] = None,
    check: bool = True,
) -> float:
    """Average the gradients of `params` over all ranks, in place, with ONE fused all-reduce.

    params: model, dict or list (matched by position; every rank passes the same layout).
    grads: the map from backward() (its entries are overwritten), or None for each parameter's
    .grad (a fresh .grad tensor is set). weight: this rank's share, normally its number of
    samples in the step: the result is sum_r(weight_r * g_r) / sum_r(weight_r), the gradient of
    a per-sample mean loss over all ranks' samples (weight 1 everywhere: the plain mean).
    A rank with weight 0 (no data this step) still has to call. Parameters no rank has a
    gradient for stay without one. dtype: the buffer's precision, "f64" (None, the default, as
    R's: the sums R gives, bit for bit) or "f32" (half the bytes; Python only, since Rmpi reduces
    doubles only; the last bits differ from f64's). check: first verify with a tiny all-reduce that all ranks agree on the
    layout (a mismatch raises DistributedError on every rank instead of corrupting memory).
    Returns the total weight (a float).
    Raises: DistributedError (MPI missing, layouts differ), PyggmlrValueError for a negative or
    non-finite weight or a dtype other than 'f32' / 'f64', ArgumentError when grads is not a
    gradient map."""
    comm = _comm(comm, "ag_allreduce_gradients")
    tensors = _tensors(params, "ag_allreduce_gradients")
    gh = _grads_handle(grads, "ag_allreduce_gradients")
    weight = check_real(weight, "ag_allreduce_gradients", "weight")
    fn, rule = b"ag_allreduce_gradients", b"finite and >= 0"  # the core's rule and text, as R's
    _core.check(lib.pg_arg_real(fn, b"weight", weight, 0, 0, rule, NULL, 0))
    code = _buf_dtype(tensors, dtype, "ag_allreduce_gradients")  # before any MPI call, as R's
    check = check_flag(check, "ag_allreduce_gradients", "check")  # "no" is not True (R's too)
    MPI = _import_mpi()
    if check and comm.Get_size() > 1:
        _check_layout(comm, tensors, "ag_allreduce_gradients")
    arr, n = _arr(tensors), len(tensors)
    L = _flat_len(arr, n, 1)
    buf = np.empty(L + 1, dtype=_np_dtype(code))  # gradients * weight | presence flags | weight
    _pack(arr, n, gh, _GRAD, 1, weight, buf)
    buf[L] = weight
    if comm.Get_size() > 1:
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    _stats["allreduce_calls"] += 1
    _stats["allreduce_bytes"] += buf.nbytes
    total = float(buf[L])
    if total > 0:
        _unpack(arr, n, gh, _GRAD, 1, 1.0 / total, buf)
    return total


def ag_allreduce_mean(
    values: Union[float, Sequence[float], np.ndarray],
    weight: float = 1.0,
    comm: Optional[Comm] = None,
) -> Union[float, np.ndarray]:
    """Weighted mean over ranks of a number or array of numbers (f64):
    sum_r(weight_r * v_r) / sum_r(weight_r). NaN when the total weight is 0.

    Returns: a float for a scalar values, else a flat f64 numpy array of values' size (every
    rank must pass the same size). Raises DistributedError when MPI is missing."""
    comm = _comm(comm, "ag_allreduce_mean")
    MPI = _import_mpi()
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    buf = np.concatenate([v * float(weight), [float(weight)]])
    if comm.Get_size() > 1:
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    out = buf[:-1] / buf[-1] if buf[-1] > 0 else np.full(v.shape, math.nan)
    return float(out[0]) if np.ndim(values) == 0 else out


def ag_parameters_spread(model: Params, comm: Optional[Comm] = None) -> float:
    """Largest difference of any parameter element between ranks (0.0: bit-identical weights
    everywhere). Every rank gets the same answer. Costs an all-reduce of twice the model.
    Raises DistributedError when MPI is missing or the ranks' layouts differ."""
    comm = _comm(comm, "ag_parameters_spread")
    MPI = _import_mpi()
    tensors = _tensors(model, "ag_parameters_spread")
    arr, n = _arr(tensors), len(tensors)
    L = _flat_len(arr, n, 0)
    buf = np.empty(2 * L, dtype=np.float64)
    _pack(arr, n, NULL, _VALUE, 0, 1.0, buf[:L])  # f32 -> f64 is exact
    buf[L:] = -buf[:L]
    if comm.Get_size() > 1:
        _check_layout(comm, tensors, "ag_parameters_spread")
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
    return float(np.max(buf[:L] + buf[L:])) if L else 0.0


def ag_rank_slice(idx: Union[Sequence[int], np.ndarray], comm: Optional[Comm] = None) -> np.ndarray:
    """This rank's part of a global batch of indices: consecutive chunks, rank r gets chunk r
    (sizes differ by at most one; equal when the batch is a multiple of the world size).
    Returns a numpy array (a view of idx). Raises DistributedError when MPI is missing."""
    comm = _comm(comm, "ag_rank_slice")
    idx = np.asarray(idx)
    return np.array_split(idx, comm.Get_size())[comm.Get_rank()]
