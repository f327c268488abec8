"""MPI data parallelism, the public module (see docs/distributed.md): parallel/mpi.py's
collectives, parallel/sync.py's DistributedOptimizer and ag_distributed_setup, and
ag_fit_distributed, an alias of ag_fit(distributed=True) (here, above fit/, which it calls).
MPI is optional: importing pyggmlr never imports mpi4py."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Optional, Union

from . import fit
from ._args import check_flag, check_real
from .errors import PyggmlrValueError
from .fit.history import History
from .optim.optimizer import Optimizer
from .parallel.mpi import *  # noqa: F403  (the collectives: mpi.py's __all__)
from .parallel.mpi import INSTALL_HINT as INSTALL_HINT  # (public before: kept)
from .parallel.mpi import Comm as Comm
from .parallel.mpi import Params as Params
from .parallel.mpi import __all__ as _MPI_ALL
from .parallel.mpi import _comm
from .parallel.sync import DistributedOptimizer, ag_distributed_setup
from .parallel.sync import FitSync as FitSync
from .tensor import ArrayLike, Tensor

__all__ = [*_MPI_ALL, "DistributedOptimizer", "ag_fit_distributed", "ag_distributed_setup"]


def _refuse(arg: str, value: Any, instead: str) -> PyggmlrValueError:
    return PyggmlrValueError(f"ag_fit_distributed: {arg}={value!r} is not supported; {instead}")


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
    seed: Optional[int] = 0,
    max_norm: float = float("inf"),
    drop_last: bool = True,
    verbose: Union[bool, int] = True,
    comm: Optional[Comm] = None,
) -> History:
    """Alias of ``ag_fit(model, x, y, ..., distributed=True)`` (one MPI training path); run
    the same call on every rank. Returns what ag_fit returns: the History (per-epoch loss over
    all ranks' samples, the same on every rank), no longer a dict.

    Mapped: loss, optimizer ('adam' is ag_fit's 'adamw'; 'sgd'; an optimizer object), lr,
    nepoch, batch_size (per rank), shuffle and seed (ag_fit's split and shuffle draws) pass
    through; verbose True / 1 is ag_fit's verbose=2 (a line per epoch, rank 0, stderr) and
    False / 0 its verbose=0. So N ranks with batch_size b follow one rank with batch_size N*b.
    Refused (ag_fit has no equivalent): a max_norm other than Inf (NaN included) (clip in a loop of your own with
    DistributedOptimizer(opt, max_norm=)), drop_last=False (ag_fit leaves out the samples that
    do not fill a global batch, as ggml), verbose above 1, a comm other than the one
    ag_mpi_init picked (pass it to ag_mpi_init(comm) first).
    Raises: PyggmlrValueError naming ag_fit_distributed for a refused value (before any MPI
    call, comm excepted); ArgumentError for a max_norm that is not a number or a drop_last
    that is not a bool; otherwise what ag_fit(distributed=True) raises."""
    if check_real(max_norm, "ag_fit_distributed", "max_norm") != math.inf:  # NaN, < 0 too
        raise _refuse(
            "max_norm",
            max_norm,
            "ag_fit has no gradient clipping: clip in a loop of "
            "your own with DistributedOptimizer(opt, max_norm=...)",
        )
    if not check_flag(drop_last, "ag_fit_distributed", "drop_last"):
        raise _refuse(
            "drop_last",
            drop_last,
            "ag_fit leaves out the samples that do not fill "
            "a whole global batch (ggml's rule): use drop_last=True",
        )
    if isinstance(verbose, numbers.Real) and verbose in (0, 1):  # 1.0 too; not an array
        level = 2 if verbose else 0
    else:
        raise _refuse(
            "verbose",
            verbose,
            "use True (a line per epoch) or False, or ag_fit's verbose / callbacks",
        )
    if comm is not None and _comm(comm, "ag_fit_distributed") != _comm(None, "ag_fit"):
        raise _refuse(
            "comm",
            comm,
            "ag_fit(distributed=True) runs on the communicator "
            "ag_mpi_init picked: call ag_mpi_init(comm) first",
        )
    return fit.ag_fit(
        model,
        x,
        y,
        loss=loss,
        optimizer="adamw" if isinstance(optimizer, str) and optimizer == "adam" else optimizer,
        lr=lr,
        nepoch=nepoch,
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
        verbose=level,
        distributed=True,
    )
