"""ggmlR 0.8.6's captured functions and training steps (spec §11): on a GPU ggmlR records them
into replayable graphs; this engine computes on the CPU, so a captured function runs fn eagerly
with ggmlR's argument handling, checks and outputs (its ``captures`` stay empty). A captured
step fixes its input shapes at the first call, as ggmlR's does."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional

import numpy as np

from .. import _core
from .._args import as_float, plain, show
from .._core import lib
from ..errors import ArgumentError, PyggmlrValueError, ShapeError, StateError
from ..optim.optimizer import clip_grad_norm, optimizer_adam
from ..tape import backward, with_grad_tape
from ..tensor import Tensor, _as_tensor

__all__ = ["ag_capture", "ag_capture_step", "ag_capture_set", "ag_capture_free", "Captured"]


def _check_params(params: Any, where: str) -> None:
    if params is None:
        return
    items = params.values() if isinstance(params, dict) else params
    if not isinstance(params, (list, tuple, dict)) or not all(isinstance(p, Tensor) for p in items):
        raise ArgumentError(f"{where}: params must be a list of ag_tensors")


def _matrix(v: Any, where: str, name: str) -> Tensor:
    # numbers only, as R's is.numeric / is.logical: None (made a NaN), "1" (read as 1.0) and
    # other kinds are refused up front, before fn runs
    try:
        a = v.numpy() if isinstance(v, Tensor) else np.asarray(v)
    except (TypeError, ValueError):
        a = None
    if a is None or a.dtype.kind not in "biuf":
        raise ArgumentError(
            f"{where}: argument {name!r} must be numeric (a matrix or a vector), got {type(v).__name__}"
        )
    return _as_tensor(_as_r_matrix(a.astype(np.float64)), where, prefix=False)


def _as_r_matrix(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(-1, 1)  # a vector is one column
    return a


def _out(v: Any) -> Any:
    return v.numpy() if isinstance(v, Tensor) else v


def _result(out: Any) -> Any:
    """A captured function's result as R's: a tensor as its matrix, a dict / list of outputs
    element by element, anything else as.matrix (a number a 1x1 matrix, a vector a column)."""
    if isinstance(out, Tensor):
        return out.numpy()
    if isinstance(out, dict):
        return {k: _out(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [_out(v) for v in out]
    try:
        a = np.asarray(out)
    except (TypeError, ValueError):
        return out
    return _as_r_matrix(a) if a.dtype.kind in "biufc" and a.ndim <= 2 else out


def _check_max_norm(v: Any, fn: str) -> Optional[float]:
    if v is None:
        return None
    kind = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    f = as_float(v) if kind else math.nan  # the core's rule and text (pg_arg_real, as R's)
    rule, shown = b"one positive finite number", repr(plain(v)).encode()
    _core.check(lib.pg_arg_real(fn.encode(), b"max_grad_norm", f, 0, 1, rule, shown, 0))
    return f


class Captured:
    """A function from ag_capture / ag_capture_step: call it with keyword arguments (arrays or
    vectors, made double matrices); returns numpy arrays. ``captures``: empty on the CPU."""

    def __init__(
        self, fn: Callable[..., Any], where: str, step: Optional[Dict[str, Any]] = None
    ) -> None:
        self._fn, self._where, self._step = fn, where, step
        self.captures: Dict[str, Any] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            raise ArgumentError(f"{self._where}: call the captured function with named arguments")
        tensors = {k: _matrix(v, self._where, k) for k, v in kwargs.items()}
        if self._step is None:
            return _result(self._fn(**tensors))
        return _run_step(self._step, self._fn, tensors)


def _run_step(st: Dict[str, Any], fn: Callable[..., Any], tensors: Dict[str, Tensor]) -> Any:
    shapes = ", ".join(f"{k}:{t.shape[0]}x{t.shape[1]}" for k, t in tensors.items())
    if st["shapes"] is not None and shapes != st["shapes"]:
        raise ShapeError(
            f"ag_capture_step: inputs ({shapes}) differ from the first call ({st['shapes']}); shapes are "
            "fixed by the recording -- pad the batch or run this step uncaptured"
        )
    opt = st["optimizer"]
    opt.zero_grad()
    with with_grad_tape():
        res = fn(**tensors)
    outs: Dict[str, Any]
    if isinstance(res, Tensor):
        loss, outs = res, {"loss": res}
    elif isinstance(res, dict) and isinstance(res.get("loss"), Tensor):
        loss, outs = res["loss"], dict(res)
    else:
        raise PyggmlrValueError(
            "ag_capture_step: fn must return the loss, or a named list with an element 'loss'"
        )
    grads = backward(loss)
    if st["clipping"]:
        norm = clip_grad_norm(opt.params, grads, math.inf)
        if not math.isfinite(norm):
            raise PyggmlrValueError(
                "ag_capture_step: the gradient norm is NaN; the update was not applied "
                "(weights, moments and the step counter are unchanged)"
            )
        clip_grad_norm(opt.params, grads, st["limit"])
        outs["grad_norm"] = np.array([[norm]])
    opt.step(grads)
    if st["shapes"] is None:  # fixed by the first call that succeeds (a failed one records nothing)
        st["shapes"] = shapes
    if isinstance(res, Tensor) and not st["clipping"]:
        return res.numpy()
    return {k: _out(v) for k, v in outs.items()}


def ag_capture(fn: Callable[..., Any], params: Any = None) -> Captured:
    """fn wrapped as ggmlR's captured function: called with keyword arguments only, each made a
    double matrix tensor; returns fn's result as a numpy array (or a dict / list of them).
    Raises ArgumentError when fn is not callable or params is not a list of tensors."""
    if not callable(fn):
        # ggmlR's stopifnot text, with what was given (R's words)
        raise ArgumentError(f"ag_capture: is.function(fn) is not TRUE (got {show(fn)})")
    _check_params(params, "ag_capture")
    return Captured(fn, "ag_capture")


def ag_capture_step(
    fn: Callable[..., Any],
    params: Any = None,
    optimizer: Any = None,
    max_grad_norm: Optional[float] = None,
) -> Captured:
    """One Adam training step as ggmlR's captured step: zero_grad, fn(**inputs) under a tape (the
    loss, or a dict with "loss"), backward, optional global-norm clipping (a non-finite norm
    applies nothing), step. Returns the loss array, or a dict of all outputs with "grad_norm"
    last when clipping. Input shapes are fixed at the first call (ShapeError after)."""
    _check_max_norm(max_grad_norm, "ag_capture_step")
    _check_params(params, "ag_capture_step")
    if not isinstance(optimizer, optimizer_adam):
        raise ArgumentError("ag_capture_step: only optimizer_adam() is supported")
    if not callable(fn):
        raise ArgumentError("ag_capture_step: fn must be a function")
    st = {
        "optimizer": optimizer,
        "limit": max_grad_norm,
        "clipping": max_grad_norm is not None,
        "shapes": None,
    }
    return Captured(fn, "ag_capture_step", st)


def ag_capture_set(f: Any, max_grad_norm: float) -> Captured:
    """Change the clipping limit of a step from ag_capture_step (created with one); returns f."""
    if not isinstance(f, Captured) or f._step is None:
        raise ArgumentError("ag_capture_set: not a function from ag_capture_step()")
    if not f._step["clipping"]:  # the step's state, not the value: StateError, as R's
        raise StateError(
            "ag_capture_set: this step was created without max_grad_norm; create it with one to clip"
        )
    v = _check_max_norm(max_grad_norm, "ag_capture_set")
    if v is None:
        raise PyggmlrValueError(
            "ag_capture_set: max_grad_norm must be one positive finite number, got None"
        )
    f._step["limit"] = v
    return f


def ag_capture_free(f: Any) -> Captured:
    """Empty a captured function's captures (nothing is held on the CPU); returns f."""
    if not isinstance(f, Captured):
        raise ArgumentError("ag_capture_free: not a captured function")
    f.captures.clear()
    return f
