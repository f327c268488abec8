"""ag_normalization: keras3's layer_normalization() + adapt(), an input scaling kept in the
model (and so in its state dict and model file) and applied by every forward and predict."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Optional

import numpy as np

from .. import _core
from .._args import check_int, check_num, show
from .._core import lib
from ..errors import ArgumentError, ShapeError
from ..tensor import ArrayLike, Tensor, _wrap, ag_tensor
from .base import Module, _as_tensor, _config, _layer_memory

__all__ = ["ag_normalization"]

FN = "ag_normalization"


def _vec(v: Any, name: str, like: Optional[Tensor]) -> Tensor:
    """mean / variance as an [F, 1] tensor (a vector, or an [F, 1] / [1, F] matrix)."""
    if isinstance(v, Tensor):
        return ag_tensor(v)
    try:  # numbers only: True, "1" or a ragged list are refused as in R (not taken as 1.0)
        a = np.asarray(v) if not isinstance(v, (str, bytes)) else None
    except (ValueError, TypeError, OverflowError):
        a = None
    if a is None or a.dtype.kind not in "iuf":
        a = None
    if a is None or a.ndim > 2 or (a.ndim == 2 and 1 not in a.shape) or a.size == 0:
        dims = np.shape(v) if isinstance(v, np.ndarray) or a is not None else ()
        got = show(v, False)  # a matrix by its shape, as R's (its values could be thousands)
        if len(dims) >= 2:
            got = f"a [{'x'.join(map(str, dims))}] {'matrix' if len(dims) == 2 else 'array'}"
        raise ArgumentError(
            f"{FN}: {name} must be a non-empty numeric vector (one value per feature), got {got}"
        )
    return _as_tensor(a.astype(np.float64).reshape(-1, 1), FN, like)


class ag_normalization(Module):
    """Input scaling as keras3's Normalization layer: out = (x - mean) / max(sqrt(variance),
    eps) per feature (row) of x [F, batch]. mean and variance are buffers [F, 1], not
    parameters: no optimizer sees them, the state dict and model files keep them.

    Args: x: data [F, n] to compute them from (adapt: the mean and population variance of each
    row, in the core; x must be finite); mean, variance: the values instead (F each, variance
    >= 0); features: F when neither is given (mean 0, variance 1: the identity until
    ``adapt``); eps: >= 0, the smallest divisor (keras's epsilon, 1e-7): a constant feature
    (variance 0) maps its training value to 0 and others to (x - mean) / eps.
    Raises: ArgumentError for a missing or doubled source, ShapeError for lengths that
    disagree, PyggmlrValueError for non-finite x, mean or variance, or a negative variance."""

    kind = "normalization"

    def __init__(
        self,
        x: Any = None,
        mean: Any = None,
        variance: Any = None,
        features: Any = None,
        eps: float = 1e-7,
    ) -> None:
        self.eps = check_num(eps, FN, "eps", 0)
        F = None if features is None else check_int(features, FN, "features", 1)
        if (mean is None) != (variance is None):
            raise ArgumentError(f"{FN}: give both mean and variance, or neither")
        if x is not None and mean is not None:
            raise ArgumentError(
                f"{FN}: give x (to compute mean and variance) or mean and variance, not both"
            )
        if x is None and mean is None and F is None:
            raise ArgumentError(f"{FN}: give x, mean and variance, or features")
        if mean is not None:
            self.mean, self.variance = _vec(mean, "mean", None), _vec(variance, "variance", None)
            _core.check(lib.pg_normalization_check(self.mean._p, self.variance._p, F or 0))
            self.features = int(self.mean.shape[0])
        else:
            xt = None if x is None else _as_tensor(x, FN)
            F2 = int(xt.shape[0]) if xt is not None else int(F or 0)
            if xt is not None and F is not None and F2 != F:
                shape = "x".join(str(d) for d in xt.shape)  # R's [2x3]
                raise ShapeError(f"{FN}: features = {F} but x has {F2} rows ([{shape}])")
            like = xt
            with _layer_memory(
                FN, f"allocating features = {F2} ([{F2}x1] mean and variance)", 2.0 * F2
            ):
                self.mean = _as_tensor(np.zeros((F2, 1)), FN, like)
                self.variance = _as_tensor(np.ones((F2, 1)), FN, like)
            self.features = F2
            if xt is not None:
                self.adapt(xt)
        self.training = True

    def adapt(self, x: ArrayLike) -> "ag_normalization":
        """Set mean and variance from data x [F, n] (population variance, as keras); returns
        the layer."""
        xt = _as_tensor(x, FN, self.mean)
        _core.check(lib.pg_normalization_adapt(xt._p, self.mean._p, self.variance._p))
        return self

    @property
    def name(self) -> str:
        return f"normalization({self.features})"

    def __repr__(self) -> str:
        return f"ag_normalization({self.features}) | eps={self.eps:g}"

    def forward(self, x: ArrayLike) -> Tensor:
        """Scale x [F, batch] -> a new tensor [F, batch]; ShapeError when x has not F rows."""
        x = _as_tensor(x, FN, self.mean)
        return _wrap(lib.pg_normalization(x._p, self.mean._p, self.variance._p, self.eps))

    def parameters(self) -> OrderedDict[str, Tensor]:
        """None: the statistics are buffers."""
        return OrderedDict()

    def buffers(self) -> OrderedDict[str, Tensor]:
        """``mean`` and ``variance``, each [features, 1]."""
        return OrderedDict([("mean", self.mean), ("variance", self.variance)])

    def to_config(self) -> Dict[str, Any]:
        return _config(self, "normalization", "features", "eps")
