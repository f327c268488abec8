"""Selection and sampling down each column (ggmlR 0.8.6): ag_argmax, ag_log_softmax, ag_gather,
ag_max, ag_sample_categorical, ag_sample_normal; thin calls into native/ops_select.c.

x is [n, batch] (a tensor, or data: a vector is one column); indices are 0-based, as in ggmlR.
The two samplers draw from the package's random stream (R's generator in the core), in ggmlR's
calls: the same seed gives the same samples in R and Python."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._args import asarray
from ._core import ffi, lib
from .errors import ArgumentError
from .ops import _out, _pair, _unary_arg
from .tensor import ArrayLike, Tensor, _as_tensor

__all__ = [
    "ag_argmax",
    "ag_log_softmax",
    "ag_gather",
    "ag_max",
    "ag_sample_categorical",
    "ag_sample_normal",
]


def _ids_out(x: Tensor):
    return np.empty(x.shape[1], dtype=np.int64)


def _f64_arg(x: ArrayLike, op: str) -> Tensor:
    """Ops with integer results read plain data as f64, as ggmlR ranks R's doubles themselves (an
    f32 copy could turn a near tie into a tie); a conversion error names op, as R's."""
    return _as_tensor(x, op, code=lib.PG_DTYPE_F64)


def ag_argmax(x: ArrayLike) -> np.ndarray:
    """0-based row index of each column's largest entry (an int64 array of length ncol): NaN
    counts as -Inf (never chosen), ties go to the first index, a column with nothing above -Inf
    gives 0. Not differentiable: records and draws nothing."""
    t = _f64_arg(x, "ag_argmax")
    out = _ids_out(t)
    _core.check(lib.pg_argmax(t._handle("ag_argmax"), ffi.cast("int64_t *", out.ctypes.data)))
    return out


def ag_log_softmax(x: ArrayLike) -> Tensor:
    """Per column y = z - log(sum(exp(z))), z = x - max(x), one tape node; backward
    dx = g - exp(y) * colSums(g). Mask entries with a large finite negative number (-1e4) to keep
    p * log(p) finite."""
    op = "ag_log_softmax"
    t = _unary_arg(x, op)  # held: a temporary's handle would be freed before the call
    return _out(lib.pg_log_softmax(t._handle(op)))


def _gather_index(index: Any) -> np.ndarray:
    """ag_gather's index as doubles, its kind checked (ggmlR's text); its length, NA, whole
    numbers and range are the core's rules and texts, in ggmlR's order (pg_gather_f64, as R's)."""
    msg = "ag_gather: index must be numeric (0-based integers)"  # a ragged list too (ggmlR)
    a = asarray(index, lambda e: ArgumentError(msg))  # R's classes: the wrong kind, a shape
    # a Tensor is not an index (R's is.numeric, ggmlR's): its values would pass as numpy's
    if a.dtype.kind not in "iuf" or isinstance(index, (bool, np.bool_, Tensor)):
        raise ArgumentError(msg)
    return np.ascontiguousarray(a.reshape(-1), dtype=np.float64)


def ag_gather(x: ArrayLike, index: Any) -> Tensor:
    """out[0, j] = x[index[j], j] (0-based), a [1, batch] tensor; the gradient of column j lands on
    the picked entry only. index: one whole number per column, in 0..nrow-1."""
    op = "ag_gather"
    t = _unary_arg(x, op)
    idx = _gather_index(index)
    return _out(lib.pg_gather_f64(t._handle(op), ffi.cast("double *", idx.ctypes.data), idx.size))


def ag_max(x: ArrayLike) -> Tensor:
    """Column maxima [1, batch] (ag_gather at ag_argmax), differentiable: the whole gradient goes
    to the first maximum."""
    op = "ag_max"
    t = _unary_arg(x, op)
    return _out(lib.pg_colmax(t._handle(op)))


def ag_sample_categorical(x: ArrayLike) -> np.ndarray:
    """One draw per column with probabilities softmax(x[:, j]) (x: logits or log-probabilities):
    0-based int64 ids. As ggmlR: first one runif(n * batch) from the current stream, then the
    argmax of x + Gumbel noise -log(-log(u)). Not differentiable; entries masked with -1e4 are
    never drawn while another is not."""
    t = _f64_arg(x, "ag_sample_categorical")
    out = _ids_out(t)
    ids = ffi.cast("int64_t *", out.ctypes.data)
    _core.check(lib.pg_sample_categorical(ffi.NULL, t._handle("ag_sample_categorical"), ids))
    return out


def ag_sample_normal(mu: ArrayLike, log_std: ArrayLike) -> Tensor:
    """mu + eps * exp(log_std) with eps one rnorm(n * batch) from the current stream, drawn after
    the shape check (log_std is [n, batch] or [n, 1]); differentiable in mu and log_std
    (reparameterisation). In a compiled graph every replay draws a new eps."""
    op = "ag_sample_normal"
    m, s = _pair(mu, log_std, op)  # plain data take the other operand's dtype, as in R
    return _out(lib.pg_sample_normal(m._handle(op), s._handle(op)))
