"""The training loops' side of MPI data parallelism (see mpi.py, docs/distributed.md):
DistributedOptimizer and the collectives ag_fit(distributed=True) runs (FitSync, the same calls
as R's ag_fit). ag_fit_distributed, an alias of ag_fit(distributed=True), is in
pyggmlr/distributed.py, above fit/."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .. import _core
from .._args import check_real
from .._core import ffi, lib
from ..errors import ArgumentError
from ..optim.optimizer import Optimizer, clip_grad_norm
from ..tape import Gradients
from .mpi import (
    Comm,
    Params,
    _comm,
    _import_mpi,
    ag_allreduce_gradients,
    ag_broadcast_parameters,
    ag_rank_slice,
)

__all__ = ["DistributedOptimizer", "ag_distributed_setup"]


class FitSync:
    """ag_fit(distributed=True)'s collectives, in the order R's ag_fit runs them: rank 0's
    weights and buffers broadcast at the start; per micro-batch the gradients all-reduced in an
    f64 buffer weighted by the shard's width (so the result is the global batch's mean gradient,
    rounded once, whatever the shard sizes); per epoch the training statistics summed over ranks
    (every rank's history describes all samples)."""

    def __init__(self, model: Any, params: list, comm: Optional[Comm] = None) -> None:
        self.comm = _comm(comm, "ag_fit")
        self.params, self.first = params, True
        self.rank, self.world = self.comm.Get_rank(), self.comm.Get_size()
        ag_broadcast_parameters(model, comm=self.comm)

    def grads(self, grads: Any, width: int) -> None:
        ag_allreduce_gradients(
            self.params, grads, weight=width, comm=self.comm, dtype="f64", check=self.first
        )
        self.first = False

    def stats(self, plan: Any) -> None:
        n = lib.pg_fit_stats_len(plan._p)
        if n < 0:
            _core.raise_last()
        buf = np.empty(n, dtype=np.float64)
        p = ffi.cast("double *", buf.ctypes.data)
        _core.check(lib.pg_fit_stats_export(plan._p, p, n))
        if self.world > 1:
            self.comm.Allreduce(_import_mpi().IN_PLACE, buf, op=_import_mpi().SUM)
        _core.check(lib.pg_fit_stats_import(plan._p, p, n))


class DistributedOptimizer:
    """Wrap an optimizer so each step() first averages the gradients over all ranks.

    ``opt = DistributedOptimizer(optimizer_adam(model, lr=1e-3))``; then per step
    ``grads = backward(loss); opt.step(grads, weight=n_samples_here)``. Everything else
    (lr, zero_grad, state, accumulate_steps, ...) goes to the wrapped optimizer. The layout is
    checked across ranks on the first step. max_norm: when finite, the averaged gradients are
    clipped (clip_grad_norm) before the step, identically on every rank.

    Args: optimizer: an Optimizer; comm: default the one from init; dtype: the all-reduce
    buffer precision ('f64', the default as R's, or 'f32'); max_norm: a number.
    Raises: ArgumentError when optimizer is not an Optimizer, DistributedError when MPI is
    missing."""

    def __init__(
        self,
        optimizer: Optimizer,
        comm: Optional[Comm] = None,
        dtype: Optional[str] = None,
        max_norm: float = float("inf"),
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(
                f"DistributedOptimizer: expected an optimizer (optimizer_adam / optimizer_sgd), got {type(optimizer).__name__}"
            )
        # the plain arguments first: they need no MPI (the comm check starts it)
        max_norm = check_real(max_norm, "DistributedOptimizer", "max_norm")
        object.__setattr__(self, "optimizer", optimizer)
        object.__setattr__(self, "comm", _comm(comm, "DistributedOptimizer"))
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "_steps", 0)
        object.__setattr__(self, "max_norm", max_norm)

    def step(
        self, grads: Optional[Gradients] = None, weight: float = 1.0, sum_grads: bool = False
    ) -> bool:
        """All-reduce the gradients across ranks (weighted by `weight`, e.g. this rank's sample
        count), clip them when max_norm is finite, then step the wrapped optimizer (sum_grads:
        passed on, see Optimizer.step). Returns its result (True when the weights changed).
        Raises what ag_allreduce_gradients raises."""
        params = list(self.optimizer.params.values())
        ag_allreduce_gradients(
            params, grads, weight=weight, comm=self.comm, dtype=self.dtype, check=self._steps == 0
        )
        object.__setattr__(self, "_steps", self._steps + 1)
        if math.isfinite(self.max_norm):
            clip_grad_norm(params, grads, self.max_norm)
        return self.optimizer.step(grads, sum_grads=sum_grads)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.optimizer, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "max_norm":
            object.__setattr__(self, name, float(value))
        else:
            setattr(self.optimizer, name, value)

    def __repr__(self):
        return f"DistributedOptimizer(rank {self.comm.Get_rank()} of {self.comm.Get_size()}) over {self.optimizer!r}"


def ag_distributed_setup(
    model: Params,
    optimizer: Optimizer,
    batch_size: int,
    nbatch_logical: Optional[int] = None,
    comm: Optional[Comm] = None,
) -> Tuple[DistributedOptimizer, int, int, Callable[[Any], np.ndarray]]:
    """The hook a training loop needs to run data-parallel (what ag_fit(distributed=True) uses):
    broadcasts rank 0's weights and buffers, wraps the optimizer in DistributedOptimizer and
    scales the batch sizes to global ones. Returns (optimizer, global_batch_size,
    global_nbatch_logical, take) where take(global_batch_indices) gives this rank's part.
    With every global batch full, each rank's part has batch_size samples and opt.step(grads)
    applies exactly the global batch's gradient.
    Raises: DistributedError when MPI is missing or the ranks' models differ, ArgumentError
    when optimizer is not an Optimizer."""
    comm = _comm(comm, "ag_distributed_setup")
    W = comm.Get_size()
    ag_broadcast_parameters(model, comm=comm)
    opt = (
        optimizer
        if isinstance(optimizer, DistributedOptimizer)
        else DistributedOptimizer(optimizer, comm=comm)
    )
    nbl = batch_size if nbatch_logical is None else nbatch_logical
    return opt, int(batch_size) * W, int(nbl) * W, lambda idx: ag_rank_slice(idx, comm=comm)
