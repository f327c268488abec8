"""Losses beyond ggmlR's (and ggml-opt's) mse / cross-entropy, with PyTorch's definitions: binary
cross-entropy on probabilities and on logits, Huber, mean absolute error, weighted MSE. Thin calls
into native/ops_loss2.c (forward, exact backward and the compiled-graph replay live there).

Each returns a [1, 1] tensor: the mean over all elements of pred (the reduction of ag_mse_loss).
Only pred / logits receive a gradient; target (and weight) are constants: numeric data become
tensors of pred's dtype. Errors: ShapeError when target's shape is not pred's, DTypeError on
mixed dtypes, PyggmlrValueError for values outside a loss's domain (the message names the
function, the argument, the element and the shape)."""

from __future__ import annotations

import numbers
from typing import Optional

from ._args import as_float, show
from ._core import lib
from .errors import PyggmlrValueError
from .ops import _loss_weights, _out, _pair
from .tensor import ArrayLike, Tensor, _as_tensor

__all__ = [
    "ag_binary_cross_entropy_loss",
    "ag_bce_with_logits_loss",
    "ag_huber_loss",
    "ag_mae_loss",
    "ag_weighted_mse_loss",
]


def ag_binary_cross_entropy_loss(
    pred: ArrayLike, target: ArrayLike, pos_weight: Optional[ArrayLike] = None
) -> Tensor:
    """Binary cross-entropy of probabilities, torch's BCELoss (mean):
    mean(-(t * log(p) + (1 - t) * log(1 - p))) with each log clamped to >= -100 (so p = 0 or 1
    gives a finite loss of at most 100 per element).

    Args: pred: probabilities in [0, 1] (e.g. ag_sigmoid output), [outputs, batch]; target: the
    same shape, values in [0, 1] (hard 0/1 or soft labels); pos_weight: None, or the weight of
    the positive term per output row (one value per row of pred, or one value), finite and >= 0:
    -(pw * t * log(p) + (1 - t) * log(1 - p)), the rule of ag_bce_with_logits_loss's pos_weight
    (torch's BCELoss has none).
    Returns: a [1, 1] tensor; gradient (-pw * t / p + (1 - t) / (1 - p)) / numel into pred, each
    term 0 where its log is clamped (the exact derivative of the clamped loss).
    Raises: PyggmlrValueError when a pred or target value is outside [0, 1] or NaN (for logits use
    ag_bce_with_logits_loss) or a pos_weight is negative or not finite; ShapeError when
    pos_weight has not one value per row, ShapeError / DTypeError as the other losses."""
    op = "ag_binary_cross_entropy_loss"
    p, t = _pair(pred, target, op)
    pw = _loss_weights(pos_weight, p, op, "pos_weight")
    if pw is None:
        return _out(lib.pg_bce_loss(p._handle(op), t._handle(op)))
    return _out(lib.pg_bce_loss_pw(p._handle(op), t._handle(op), pw._handle(op)))


def ag_bce_with_logits_loss(
    logits: ArrayLike, target: ArrayLike, pos_weight: Optional[ArrayLike] = None
) -> Tensor:
    """Binary cross-entropy on logits, torch's BCEWithLogitsLoss (mean), in the stable form
    mean(max(x, 0) - x * t + log1p(exp(-|x|))) (no overflow for any finite x).

    Args: logits: raw scores x, [outputs, batch]; target: the same shape, values in [0, 1];
    pos_weight: None, or torch's pos_weight: the weight of the positive term per output row (one
    value per row of logits, or one value), finite and >= 0; the loss is then
    (1 - t) * x + (1 + (pw - 1) * t) * (log1p(exp(-|x|)) + max(-x, 0)), exactly torch's.
    Returns: a [1, 1] tensor; gradient (sigmoid(x) - t) / numel into logits,
    ((1 - t) * sigmoid(x) - pw * t * sigmoid(-x)) / numel with pos_weight.
    Raises: PyggmlrValueError for a target value outside [0, 1] or NaN or a negative or
    non-finite pos_weight, ShapeError when pos_weight has not one value per row, ShapeError /
    DTypeError as the other losses."""
    op = "ag_bce_with_logits_loss"
    x, t = _pair(logits, target, op)
    pw = _loss_weights(pos_weight, x, op, "pos_weight")
    if pw is None:
        return _out(lib.pg_bce_logits_loss(x._handle(op), t._handle(op)))
    return _out(lib.pg_bce_logits_loss_pw(x._handle(op), t._handle(op), pw._handle(op)))


def _delta(delta) -> float:
    """A number goes to the core, which checks it (finite, > 0) with R's message."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise PyggmlrValueError(
            f"ag_huber_loss: delta must be a finite number > 0, got {show(delta)}"
        )
    return as_float(delta)  # 10**400: Inf, refused by the core (it raised OverflowError)


def ag_huber_loss(pred: ArrayLike, target: ArrayLike, delta: float = 1.0) -> Tensor:
    """Huber loss, torch's HuberLoss (mean): with d = pred - target, 0.5 * d^2 where |d| < delta
    and delta * (|d| - 0.5 * delta) elsewhere.

    Args: pred, target: the same shape; delta: the switch point, a finite number > 0.
    Returns: a [1, 1] tensor; gradient clip(d, -delta, delta) / numel into pred.
    Raises: PyggmlrValueError for a non-finite or non-positive delta, ShapeError / DTypeError as
    the other losses."""
    op = "ag_huber_loss"
    d = _delta(delta)
    p, t = _pair(pred, target, op)
    return _out(lib.pg_huber_loss(p._handle(op), t._handle(op), d))


def ag_mae_loss(pred: ArrayLike, target: ArrayLike) -> Tensor:
    """Mean absolute error, torch's L1Loss (mean): mean(|pred - target|).

    Args: pred, target: the same shape.
    Returns: a [1, 1] tensor; gradient sign(pred - target) / numel into pred, 0 where they are
    equal (torch's subgradient).
    Raises: ShapeError / DTypeError as the other losses."""
    op = "ag_mae_loss"
    p, t = _pair(pred, target, op)
    return _out(lib.pg_mae_loss(p._handle(op), t._handle(op)))


def ag_weighted_mse_loss(pred: ArrayLike, target: ArrayLike, weight: ArrayLike) -> Tensor:
    """Weighted mean squared error sum(weight * (pred - target)^2) / numel(pred): ag_mse_loss's
    reduction (divided by the element count, not by sum(weight)); weight 1 gives ag_mse_loss's
    bits.

    Args: pred, target: the same shape [rows, cols]; weight: pred's shape, a [rows, 1] column
    (per output), a [1, cols] row (per sample) or [1, 1], broadcast over pred; finite, >= 0, a
    constant (numeric data or a tensor that does not require grad).
    Returns: a [1, 1] tensor; gradient 2 * weight * (pred - target) / numel into pred.
    Raises: ShapeError when weight neither matches nor broadcasts, PyggmlrValueError for a
    negative or non-finite weight or a weight that requires grad, DTypeError on mixed dtypes."""
    op = "ag_weighted_mse_loss"
    # plain data takes the dtype of the first tensor among the three (R's rule, as conv's)
    like = next((v for v in (pred, target, weight) if isinstance(v, Tensor)), None)
    p, t, w = (
        v if isinstance(v, Tensor) else _as_tensor(v, op, like) for v in (pred, target, weight)
    )
    return _out(lib.pg_weighted_mse_loss(p._handle(op), t._handle(op), w._handle(op)))
