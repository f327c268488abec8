"""Optimizers, gradient clipping and learning-rate schedulers. Updates run in the C core."""
from __future__ import annotations

from typing import Any

import math
import warnings

from . import _core
from ._core import NULL, ffi, lib
from .errors import ArgumentError, PyggmlrValueError, StateError
from .tape import Gradients
from .tensor import Tensor, _read, _wrap

__all__ = ["optimizer_sgd", "optimizer_adam", "Optimizer", "clip_grad_norm"]  # schedulers: sched.py

_SGD, _ADAM = 0, 1
_SLOTS = {_SGD: ("velocity", "accum"), _ADAM: ("m", "v", "accum")}
_HYPER = {_SGD: ("lr", "momentum", "nesterov", "weight_decay", "accumulate_steps", "average"),
          _ADAM: ("lr", "beta1", "beta2", "eps", "weight_decay", "accumulate_steps", "average")}


def _param_list(params, name):
    """dict name -> tensor, or any iterable of tensors (a model's parameters() works too)."""
    if hasattr(params, "parameters") and callable(params.parameters):
        params = params.parameters()
    if isinstance(params, Tensor):
        params = [params]
    if isinstance(params, dict):
        names, tensors = list(params.keys()), list(params.values())
    else:
        try:
            tensors = list(params)
        except TypeError:
            raise ArgumentError(f"{name}: params must be a dict of tensors or a list of tensors, got {type(params).__name__}") from None
        names = [str(i + 1) for i in range(len(tensors))]
    for n, t in zip(names, tensors):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"{name}: parameter {n!r} is a {type(t).__name__}, not a tensor")
    return names, tensors


def _grads_handle(grads, name):
    if grads is None:
        return NULL
    if isinstance(grads, Gradients):
        return grads._m
    raise ArgumentError(f"{name}: grads must be the map returned by backward() or None, got {type(grads).__name__}")


class Optimizer:
    """Common base of optimizer_sgd / optimizer_adam (state lives in the C core).

    Parameters are matched by identity, never by name; a tensor listed twice is kept once
    (with a warning). Hyper-parameters are attributes (``opt.lr = 0.01``; schedulers write it).
    """

    _kind: int = -1  # set by each subclass (enum of native/optim.c)

    def __init__(self, params: Any, **hyper: Any) -> None:
        cls = type(self).__name__
        names, tensors = _param_list(params, cls)
        arr = ffi.new("pg_tensor *[]", [t._handle() for t in tensors] or 1)
        dropped = ffi.new("int64_t *")
        o = lib.pg_optim_new(self._kind, arr, len(tensors), dropped)
        if o == NULL:
            _core.raise_last()
        object.__setattr__(self, "_o", o)
        # identity by C pointer (two Python handles can share one tensor)
        uniq, ptrs = [], set()
        for n, t in zip(names, tensors):
            k = int(ffi.cast("intptr_t", t._p))
            if k not in ptrs:
                ptrs.add(k)
                uniq.append((n, t))
        object.__setattr__(self, "params", dict(uniq))
        if dropped[0]:
            warnings.warn(f"{cls}: {dropped[0]} duplicate parameter tensor(s) dropped (parameters are matched by identity)",
                          stacklevel=3)
        for hk, hv in hyper.items():
            setattr(self, hk, hv)

    def __copy__(self):  # the C state has one owner: a copy would free it twice
        raise StateError(f"{type(self).__name__}: optimizers cannot be copied; save state() and load_state() it into a new one")

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
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise ArgumentError(f"{type(self).__name__}: {name} must be a number, got {value!r}") from None
            _core.check(lib.pg_optim_set(self._o, name.encode(), v))
        else:
            object.__setattr__(self, name, value)

    def step(self, grads=None):
        """Update the parameters from the map returned by backward(), or from each parameter's
        .grad when grads is None. With accumulate_steps = k, calls 1..k-1 only accumulate and
        call k applies the sum (mean if average) of exactly those k gradients.
        Returns True when the weights changed."""
        rc = lib.pg_optim_step(self._o, _grads_handle(grads, "step"))
        if rc < 0:
            _core.raise_last(-rc)
        return rc == 1

    def zero_grad(self):
        """Clear the parameters' .grad and the tape."""
        _core.check(lib.pg_optim_zero_grad(self._o))

    def state(self):
        """Checkpointable state: format, step counters and per-parameter moments (numpy)."""
        slots = _SLOTS[self._kind]
        per = []
        for i in range(lib.pg_optim_nparams(self._o)):
            entry = {}
            for s, nm in enumerate(slots):
                t = lib.pg_optim_state(self._o, i, s)
                entry[nm] = None if t == NULL else _read(t)
            per.append(entry)
        return {"format": "ggmlR.ag_opt_state", "version": 1, "kind": "adam" if self._kind == _ADAM else "sgd",
                "t": self.t, "accum_count": self.accum_count,
                "hyper": {k: getattr(self, k) for k in _HYPER[self._kind]}, "params": per}

    def load_state(self, state):
        """Restore moments and counters from state(); hyper-parameters are kept (warns if they differ)."""
        if not isinstance(state, dict) or state.get("format") != "ggmlR.ag_opt_state":
            raise PyggmlrValueError("load_state(): not an optimizer state (format 'ggmlR.ag_opt_state')")
        kind = "adam" if self._kind == _ADAM else "sgd"
        if state.get("kind", kind) != kind:
            raise PyggmlrValueError(f"load_state(): state is for {state.get('kind')}, this optimizer is {kind}")
        per = state["params"]
        n = lib.pg_optim_nparams(self._o)
        if len(per) != n:
            raise PyggmlrValueError(f"load_state(): state has {len(per)} parameters, optimizer has {n}")
        diff = [k for k, v in state.get("hyper", {}).items() if k in _HYPER[self._kind] and getattr(self, k) != v]
        if diff:
            warnings.warn(f"load_state(): hyper-parameters differ from the saved ones and are kept: {', '.join(diff)}", stacklevel=2)
        for i, entry in enumerate(per):
            for s, nm in enumerate(_SLOTS[self._kind]):
                v = entry.get(nm)
                if v is None:
                    _core.check(lib.pg_optim_set_state(self._o, i, s, NULL))
                else:
                    a = _f64(v)  # keep the array alive across the C call
                    t = _wrap(lib.pg_tensor_new(lib.PG_F64, a.shape[0], a.shape[1], ffi.cast("void *", a.ctypes.data), lib.PG_F64, 1, a.shape[0]))
                    _core.check(lib.pg_optim_set_state(self._o, i, s, t._p))
        self.t = state.get("t", 0)
        self.accum_count = state.get("accum_count", 0)


def _f64(v):
    import numpy as np
    a = np.asarray(v, dtype=np.float64)
    return np.asfortranarray(a.reshape(a.shape[0], -1) if a.ndim != 2 else a)


def _shape2(v):
    a = _f64(v)
    return a.shape[0], a.shape[1]


class optimizer_sgd(Optimizer):
    """SGD: p -= lr * g; with momentum: v = momentum * v + g, p -= lr * v (Nesterov:
    p -= lr * (g + momentum * v)). weight_decay adds weight_decay * p to g (L2)."""

    _kind = _SGD

    def __init__(self, params: Any, lr: float = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, accumulate_steps: int = 1, average: bool = True) -> None:
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                         accumulate_steps=accumulate_steps, average=average)

    @property
    def velocity(self):
        """The momentum buffers as a dict name -> numpy array (copies)."""
        return {n: self.state()["params"][i]["velocity"] for i, n in enumerate(self.params)}

    def __repr__(self):
        return f"SGD optimizer | lr = {self.lr:g} | momentum = {self.momentum:g} | params: {len(self.params)} "


class optimizer_adam(Optimizer):
    """Adam (ggmlR's update): m, v moments with bias correction; weight_decay is decoupled
    (AdamW: p -= lr * weight_decay * p before the Adam update)."""

    _kind = _ADAM

    def __init__(self, params: Any, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.0, accumulate_steps: int = 1, average: bool = True) -> None:
        super().__init__(params, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                         accumulate_steps=accumulate_steps, average=average)

    def __repr__(self):
        return (f"Adam optimizer | lr = {self.lr:g} | beta1 = {self.beta1:g} | beta2 = {self.beta2:g} | "
                f"step = {self.t} | params: {len(self.params)} ")


def clip_grad_norm(params: Any, grads: Any = None, max_norm: float = 1.0) -> float:
    """Scale gradients so their global L2 norm is at most max_norm (factor
    max_norm / (norm + 1e-6)), in the map (or the .grad of each parameter when grads is None).
    Returns the norm before clipping."""
    _, tensors = _param_list(params, "clip_grad_norm")
    arr = ffi.new("pg_tensor *[]", [t._handle() for t in tensors] or 1)
    out = ffi.new("double *")
    if isinstance(max_norm, (str, bytes, bool)):
        raise ArgumentError(f"clip_grad_norm: max_norm must be a number, got {type(max_norm).__name__}")
    try:
        mn = float(max_norm)
    except (TypeError, ValueError, OverflowError):
        raise ArgumentError(f"clip_grad_norm: max_norm must be a number, got {type(max_norm).__name__}") from None
    _core.check(lib.pg_clip_grad_norm(arr, len(tensors), _grads_handle(grads, "clip_grad_norm"), mn, out))
    return out[0]
