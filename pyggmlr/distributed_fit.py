"""The training loops' side of MPI data parallelism (see distributed.py, docs/distributed.md):
DistributedOptimizer, the collectives ag_fit(distributed=True) runs (FitSync, the same calls as
R's ag_fit) and the standalone loop ag_fit_distributed."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np

from . import _core
from ._args import check_min_int, check_real
from ._core import ffi, lib
from .distributed import (
    Comm,
    Params,
    _comm,
    _import_mpi,
    _stats,
    _tensors,
    ag_allreduce_gradients,
    ag_broadcast_parameters,
    ag_rank_slice,
)
from .errors import ArgumentError, PyggmlrValueError
from .optim import Optimizer, clip_grad_norm, optimizer_adam, optimizer_sgd
from .tape import Gradients, ag_tape_clear, backward, with_grad_tape
from .tensor import ArrayLike, Tensor, ag_tensor

__all__ = ["DistributedOptimizer", "ag_distributed_setup", "ag_fit_distributed"]


class FitSync:
    """ag_fit(distributed=True)'s collectives, in the order R's ag_fit runs them: rank 0's
    weights and buffers broadcast at the start; per micro-batch the gradients all-reduced in an
    f64 buffer weighted by the shard's width (so the result is the global batch's mean gradient,
    rounded once, whatever the shard sizes); per epoch the training statistics summed over ranks
    (every rank's history describes all samples)."""

    def __init__(self, model: Any, params: list, comm: Optional[Comm] = None) -> None:
        self.comm = _comm(comm)
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
    buffer precision ('f32' / 'f64'; default from the parameters); max_norm: a number.
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
        object.__setattr__(self, "optimizer", optimizer)
        object.__setattr__(self, "comm", _comm(comm))
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "_steps", 0)
        object.__setattr__(
            self, "max_norm", check_real(max_norm, "DistributedOptimizer", "max_norm")
        )

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
    comm = _comm(comm)
    W = comm.Get_size()
    ag_broadcast_parameters(model, comm=comm)
    opt = (
        optimizer
        if isinstance(optimizer, DistributedOptimizer)
        else DistributedOptimizer(optimizer, comm=comm)
    )
    nbl = batch_size if nbatch_logical is None else nbatch_logical
    return opt, int(batch_size) * W, int(nbl) * W, lambda idx: ag_rank_slice(idx, comm=comm)


def _loss_callable(loss):
    from .ops import ag_mse_loss, ag_softmax_cross_entropy_loss

    if callable(loss):
        return loss
    if loss == "mse":
        return ag_mse_loss
    if loss == "cross_entropy":
        return ag_softmax_cross_entropy_loss
    raise PyggmlrValueError(
        f"ag_fit_distributed: loss must be 'mse', 'cross_entropy' or a callable(out, y), got {loss!r}"
    )


def ag_fit_distributed(
    model: Any,
    x: ArrayLike,
    y: Optional[ArrayLike] = None,
    loss: Union[str, Callable[..., Tensor]] = "mse",
    optimizer: Union[str, Optimizer] = "adam",
    lr: float = 1e-3,
    nepoch: int = 10,
    batch_size: int = 32,
    shuffle: bool = True,
    seed: int = 0,
    max_norm: float = float("inf"),
    drop_last: bool = False,
    verbose: Union[bool, int] = True,
    comm: Optional[Comm] = None,
) -> Dict[str, Any]:
    """Data-parallel training loop over MPI ranks; run the same call on every rank.

    Every rank holds the full x [features, n] / y (or the same view of it); each step takes a
    global batch of batch_size * world_size samples (the same permutation on every rank, from
    a stream seeded as set.seed(seed), one sample.int(n) per epoch), rank r trains on its slice r, the gradients are averaged over ranks in
    one fused all-reduce weighted by the slice sizes, clipped when max_norm is finite, and every
    rank applies the same optimizer step. So N ranks with batch_size b follow exactly the
    trajectory of one rank with batch_size N*b (to round-off). Weights are broadcast from rank
    0 first. loss: 'mse', 'cross_entropy' (logits; y class ids or one-hot) or a callable
    (out, y_batch) returning a per-sample MEAN. optimizer: 'adam', 'sgd' or an optimizer object
    on the model's parameters. Returns a dict: loss_history (per-epoch mean training loss over
    all samples, the same on every rank), steps, rank, world_size, bytes_per_step.
    Raises: DistributedError when MPI is missing or the ranks' models differ;
    PyggmlrValueError for an unknown loss / optimizer, nepoch or batch_size < 1, x and y with
    different sample counts, a model without parameters; ShapeError from the model when x
    has the wrong number of rows."""
    comm = _comm(comm)
    MPI = _import_mpi()
    lossfn = _loss_callable(loss)
    nepoch = check_min_int(nepoch, "ag_fit_distributed", "nepoch", 1)
    batch_size = check_min_int(batch_size, "ag_fit_distributed", "batch_size", 1)
    X = np.asarray(x)
    if X.ndim == 1:
        X = X.reshape(1, -1)
    n = X.shape[1]
    Y = None if y is None else np.asarray(y)
    if Y is not None and Y.shape[-1] != n:
        raise PyggmlrValueError(
            f"ag_fit_distributed: x has {n} samples (columns) but y has {Y.shape[-1]}"
        )
    params = _tensors(model, "ag_fit_distributed")
    if not params:
        raise PyggmlrValueError("ag_fit_distributed: the model has no parameters")
    dtype = params[0].dtype
    if isinstance(optimizer, Optimizer):
        opt = optimizer
    elif optimizer in ("adam", "adamw"):
        opt = optimizer_adam(params, lr=lr)
    elif optimizer == "sgd":
        opt = optimizer_sgd(params, lr=lr)
    else:
        raise PyggmlrValueError(
            f"ag_fit_distributed: optimizer must be 'adam', 'sgd' or an optimizer object, got {optimizer!r}"
        )
    max_norm = check_real(max_norm, "ag_fit_distributed", "max_norm")
    W, r = comm.Get_size(), comm.Get_rank()
    B = int(batch_size) * W
    ag_broadcast_parameters(model, comm=comm)
    before = _stats["allreduce_bytes"]
    history, steps, first = [], 0, True
    from .random import Generator

    stream = Generator(seed)  # every rank draws the same permutations: R's sample.int(n) per epoch
    try:
        for epoch in range(1, int(nepoch) + 1):
            perm = stream.sample_int(n) - 1 if shuffle else np.arange(n)
            lsum = np.zeros(2)
            for start in range(0, n, B):
                gidx = perm[start : start + B]
                if drop_last and len(gidx) < B:
                    break
                mine = np.array_split(gidx, W)[r]
                opt.zero_grad()
                if len(mine):
                    xb = ag_tensor(X[:, mine], dtype=dtype)
                    if Y is None:
                        yb = None
                    elif Y.ndim == 1:  # class ids
                        yb = Y[mine]
                    else:
                        yb = ag_tensor(Y[:, mine], dtype=dtype)
                    with with_grad_tape():
                        out = model.forward(xb)
                        lv = lossfn(out, yb) if yb is not None else lossfn(out)
                    backward(lv)  # into .grad; the optimizer steps from .grad
                    lsum += (lv.item() * len(mine), len(mine))
                    del out, lv
                ag_allreduce_gradients(params, None, weight=len(mine), comm=comm, check=first)
                first = False
                if math.isfinite(max_norm):
                    clip_grad_norm(params, None, max_norm)
                opt.step(
                    None, sum_grads=True
                )  # .grad is cleared per batch: the optimizer sums (accumulate_steps)
                ag_tape_clear()
                steps += 1
            comm.Allreduce(MPI.IN_PLACE, lsum, op=MPI.SUM)
            history.append(lsum[0] / lsum[1] if lsum[1] > 0 else math.nan)
            if verbose and r == 0 and (verbose is True or epoch == 1 or epoch % int(verbose) == 0):
                print(
                    f"[ag_fit_distributed] epoch {epoch:4d} / {nepoch}  loss = {history[-1]:.6f}  ({W} ranks)",
                    flush=True,
                )
    finally:
        opt.zero_grad()
        ag_tape_clear()
    return {
        "loss_history": np.asarray(history),
        "steps": steps,
        "rank": r,
        "world_size": W,
        "bytes_per_step": (_stats["allreduce_bytes"] - before) / steps if steps else 0.0,
    }
