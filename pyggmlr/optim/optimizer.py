"""Optimizers, gradient clipping and learning-rate schedulers. Updates run in the C core."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Dict, List, Optional

import numpy as np

from .. import _core, _walk
from .._args import check_as_integer, plain, r_num
from .._core import NULL, ffi, lib
from ..errors import ArgumentError, PyggmlrValueError, StateError
from ..tape import Gradients
from ..tensor import Tensor, _read, ag_tensor
from . import state as _state
from .state import OptimizerHyperWarning, _names

__all__ = [
    "optimizer_sgd",
    "optimizer_adam",
    "Optimizer",
    "clip_grad_norm",
    "OptimizerHyperWarning",
]  # schedulers: sched.py

_SGD, _ADAM = lib.PG_OPTIM_KIND_SGD, lib.PG_OPTIM_KIND_ADAM  # enum pg_optim_kind
# every hyper-parameter an optimizer has, from the core's table
_HYPER = {k: _names(lib.PG_OPTIM_NAMES_FILE_HYPER, k) for k in (_SGD, _ADAM)}


def _param_list(params, name):
    """(names, tensors): see params.named."""
    names, tensors, _ = _walk.named(params, name)
    return names, tensors


def _lookup(grads, t):
    """The entry of a user mapping for tensor t: keyed by the tensor, its id or str(id)."""
    try:
        if t in grads:
            return grads[t]
    except TypeError:
        pass
    for k in (t.id, str(t.id)):
        if k in grads:
            return grads[k]
    p = t.id
    for k, v in grads.items():
        if isinstance(k, Tensor) and k._p is not None and k.id == p:
            return v
    return None


def _check_step_grads(grads, cls):
    """step()'s grads: None, backward()'s map or a mapping keyed by tensor id / tensor; a bare
    tensor (the loss, most likely) is named as such (R: .check_step_grads)."""
    if grads is None or isinstance(grads, (Gradients, Mapping)):
        return
    what = (
        "a Tensor (pass backward(loss)'s result, not the loss)"
        if isinstance(grads, Tensor)
        else type(grads).__name__
    )
    raise ArgumentError(
        f"{cls} step(): grads must be the gradient map returned by backward() (or a dict keyed "
        f"by tensor id or tensor) or None, got {what}"
    )


class _Map:
    """A C gradient map for step(): backward()'s own, or one built from a user mapping (values
    converted to each parameter's dtype; freed on exit)."""

    def __init__(self, grads, tensors, name):
        self.m, self.own = NULL, False
        self.keep: List[Any] = []  # what the C map points into, alive until exit
        if grads is None:
            return
        if isinstance(grads, Gradients):
            self.m = grads._m
            return
        if not isinstance(grads, Mapping):
            raise ArgumentError(
                f"{name}: grads must be a mapping (the map returned by backward(), or a dict keyed by "
                f"tensor id or tensor) or None, got {type(grads).__name__}"
            )
        keys, vals = [], []
        for t in tensors:
            v = _lookup(grads, t)
            if v is None:
                continue
            if not (isinstance(v, Tensor) and v.dtype == t.dtype):
                v = ag_tensor(v.numpy() if isinstance(v, Tensor) else v, dtype=t.dtype)
            self.keep.append(v)
            keys.append(t._handle())
            vals.append(v._handle())
        self.keep.append(
            (ka := ffi.new("pg_tensor *[]", keys or 1), va := ffi.new("pg_tensor *[]", vals or 1))
        )
        m = lib.pg_gradmap_make(ka, va, len(keys))
        if m == NULL:
            _core.raise_last()
        self.m, self.own = m, True

    def __enter__(self):
        return self.m

    def __exit__(self, *exc):
        if self.own:
            lib.pg_gradmap_free(self.m)
        return False


def _grads_handle(grads, name):
    if grads is None:
        return NULL
    if isinstance(grads, Gradients):
        return grads._m
    raise ArgumentError(
        f"{name}: grads must be the map returned by backward() or None, got {type(grads).__name__}"
    )


class Optimizer:
    """Common base of optimizer_sgd / optimizer_adam (state lives in the C core).

    Parameters are walked by position (ggmlR 0.8.6); a tensor listed twice is kept once with
    ggmlR's warning. Hyper-parameters are attributes (``opt.lr = 0.01``; schedulers write it).
    """

    _kind: int = -1  # set by each subclass (enum pg_optim_kind)

    def __init__(self, params: Any, **hyper: Any) -> None:
        cls = type(self).__name__
        names, tensors, named = _walk.named(params, cls, optimizer=True)
        if (
            not tensors
        ):  # torch's ValueError too: an optimizer over nothing would train nothing silently
            raise PyggmlrValueError(
                f"{cls}: got no parameters to optimize (an empty model or list); pass the "
                "model's parameters(), e.g. register layers and ag_param tensors as attributes of a Module"
            )
        uniq = _walk.unique(zip(names, tensors), lambda nt: nt[1])  # by id, not handle
        if len(uniq) < len(tensors):
            warnings.warn(
                f"optimizer: {len(tensors) - len(uniq)} parameter(s) listed more than once (same tensor); "
                "keeping the first occurrence of each.",
                stacklevel=3,
            )
        if "accumulate_steps" in hyper:
            v = hyper["accumulate_steps"]  # ggmlR's as.integer (1.9 is 1): the core's rule
            rule = "a positive integer"
            hyper["accumulate_steps"] = check_as_integer(
                v, cls, "accumulate_steps", rule, 1, repr(plain(v))
            )
        if "average" in hyper:  # isTRUE(average)
            a = hyper["average"]
            hyper["average"] = a is True or (isinstance(a, np.bool_) and bool(a))
        arr = ffi.new("pg_tensor *[]", [t._handle() for _, t in uniq] or 1)
        o = lib.pg_optim_new(self._kind, arr, len(uniq), NULL)
        if o == NULL:
            _core.raise_last()
        object.__setattr__(self, "_o", o)
        if not named:  # positions of the kept list
            uniq = [(str(i + 1), t) for i, (_, t) in enumerate(uniq)]
        object.__setattr__(self, "params", dict(uniq))
        object.__setattr__(self, "_named", named)
        for hk, hv in hyper.items():
            setattr(self, hk, hv)

    def __copy__(self):  # the C state has one owner: a copy would free it twice
        raise StateError(
            f"{type(self).__name__}: optimizers cannot be copied; save state() and load_state() it into a new one"
        )

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return self.__copy__()

    def __del__(self, _free=lib.pg_optim_free):
        o = self.__dict__.get("_o")
        if o is not None:
            _free(o)

    def __getattr__(self, name):
        if name in _HYPER[self._kind] or name in ("t", "accum_count"):
            v = lib.pg_optim_get(self._o, name.encode())
            if name in ("t", "accum_count", "accumulate_steps"):
                return int(v)
            if name in ("nesterov", "average"):
                return bool(v)
            return v
        raise AttributeError(name)

    def __setattr__(self, name, value):
        if name in _HYPER[self._kind] or name in ("t", "accum_count"):
            # a string is no number (float("0.5") parses it; R refuses "0.5": issue 29)
            bad = isinstance(value, (str, bytes, np.str_, np.bytes_))
            if bad or (isinstance(value, (bool, np.bool_)) and name not in ("nesterov", "average")):
                raise ArgumentError(
                    f"{type(self).__name__}: {name} must be a single number, got {plain(value)!r}"
                )
            try:
                v = float(value)
            except OverflowError:  # an int past a double: infinite, as R reads 1e400
                v = float("inf") if value > 0 else float("-inf")
            except (TypeError, ValueError):
                raise ArgumentError(
                    f"{type(self).__name__}: {name} must be a single number, got {plain(value)!r}"
                ) from None
            _core.check(lib.pg_optim_set(self._o, name.encode(), v))
        else:
            object.__setattr__(self, name, value)

    def _slot(self, s):
        """Slot s of every parameter as float64 numpy (zeros when never used), by name."""
        out = {}
        for i, (n, p) in enumerate(self.params.items()):
            t = lib.pg_optim_state(self._o, i, s)
            out[n] = (
                np.zeros(p.shape, order="F")
                if t == NULL
                else _read(t).astype(np.float64, order="F")
            )
        return out

    def step(self, grads: Any = None, sum_grads: bool = False) -> bool:
        """ggmlR 0.8.6's step: from each parameter's .grad (grads None) or a mapping keyed like
        backward()'s result (that map, or a dict keyed by tensor id / tensor). With
        accumulate_steps = k, calls 1..k-1 only count and return False (nothing read, t
        unchanged); call k applies the gradients / k (average) and returns True. Accumulate k
        micro-batches with backward() (which adds into .grad), ``if opt.step(): opt.zero_grad()``.
        sum_grads=True (this project's): every call adds grads into the optimizer's own
        accumulator and call k applies their sum (mean), for loops that pass one map per call."""
        sum_grads = sum_grads is True or (
            isinstance(sum_grads, np.bool_) and bool(sum_grads)
        )  # isTRUE, as R
        tensors = list(self.params.values())
        _check_step_grads(grads, type(self).__name__)  # a counting call too
        k = self.accumulate_steps
        if not sum_grads and k > 1 and self.accum_count + 1 < k:
            grads = None  # a counting call reads nothing, as ggmlR
        with _Map(grads, tensors, "step") as m:
            rc = (lib.pg_optim_step_sum if sum_grads else lib.pg_optim_step)(self._o, m)
        if rc < 0:
            _core.raise_last(-rc)
        return rc == 1

    def zero_grad(self):
        """Set every parameter's .grad to None (by position) and empty the tape."""
        _core.check(lib.pg_optim_zero_grad(self._o))

    def state(self) -> Dict[str, Any]:
        """ggmlR 0.8.6's optimizer state: format, version 1, type, t, accum_count, names (None
        for an unnamed list), slots (velocity / m, v: float64 arrays by position), hyper."""
        return _state.state(self)

    def load_state(self, state: Any) -> bool:
        """Restore moments and counters from state() (ggmlR 0.8.6's checks, in order; nothing is
        written unless all pass). Hyper-parameters are not restored: OptimizerHyperWarning when
        they differ."""
        return _state.load_state(self, state)


class optimizer_sgd(Optimizer):
    """SGD: p -= lr * g; with momentum: v = momentum * v + g, p -= lr * v (Nesterov:
    p -= lr * (g + momentum * v)). weight_decay adds weight_decay * p to g (L2)."""

    _kind = _SGD

    def __init__(
        self,
        params: Any,
        lr: float = 0.01,
        momentum: float = 0.0,
        accumulate_steps: int = 1,
        average: bool = True,
        nesterov: bool = False,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(
            params,
            lr=lr,
            momentum=momentum,
            nesterov=nesterov,
            weight_decay=weight_decay,
            accumulate_steps=accumulate_steps,
            average=average,
        )

    @property
    def velocity(self) -> Dict[str, np.ndarray]:
        """The momentum buffers as a dict name -> float64 numpy array (copies; zeros before use)."""
        return self._slot(0)

    def __repr__(self):
        # ggmlR's cat() line, numbers as R writes them (1e-04, 123456789)
        lr, mom = r_num(self.lr), r_num(self.momentum)
        return f"SGD optimizer | lr = {lr} | momentum = {mom} | params: {len(self.params)} "


class optimizer_adam(Optimizer):
    """Adam (ggmlR's update): m, v moments with bias correction; weight_decay is decoupled
    (AdamW: p -= lr * weight_decay * p before the Adam update)."""

    _kind = _ADAM

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        accumulate_steps: int = 1,
        average: bool = True,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(
            params,
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            eps=eps,
            weight_decay=weight_decay,
            accumulate_steps=accumulate_steps,
            average=average,
        )

    @property
    def m(self) -> Dict[str, np.ndarray]:
        """First moments, dict name -> float64 numpy array (copies; zeros before the first step)."""
        return self._slot(0)

    @property
    def v(self) -> Dict[str, np.ndarray]:
        """Second moments, dict name -> float64 numpy array (copies)."""
        return self._slot(1)

    resident = False  # ggmlR's GPU-resident moments: never, on the CPU

    def __repr__(self):
        return (
            f"Adam optimizer | lr = {r_num(self.lr)} | beta1 = {r_num(self.beta1)} | "
            f"beta2 = {r_num(self.beta2)} | "
            f"step = {self.t} | params: {len(self.params)} "
        )


def clip_grad_norm(params: Any, grads: Any = None, max_norm: Optional[float] = None) -> float:
    """Scale gradients so their global L2 norm is at most max_norm (factor
    max_norm / (norm + 1e-6)), in the map (or the .grad of each parameter when grads is None).
    Returns the norm before clipping. max_norm has no default (as R's and ggmlR's: a silent 1.0
    would clip what the caller never asked to): None is refused."""
    _, tensors = _param_list(params, "clip_grad_norm")
    arr = ffi.new("pg_tensor *[]", [t._handle("clip_grad_norm") for t in tensors] or 1)
    out = ffi.new("double *")
    if max_norm is None or isinstance(max_norm, (str, bytes, bool, np.bool_)):
        raise ArgumentError(
            f"clip_grad_norm: max_norm must be a number, got {type(max_norm).__name__}"
        )
    try:
        mn = float(max_norm)
    except (TypeError, ValueError, OverflowError):
        raise ArgumentError(
            f"clip_grad_norm: max_norm must be a number, got {type(max_norm).__name__}"
        ) from None
    _core.check(
        lib.pg_clip_grad_norm(arr, len(tensors), _grads_handle(grads, "clip_grad_norm"), mn, out)
    )
    return out[0]
