"""Learning-rate schedules and gradient helpers as ggmlR 0.8.6 has them; the formulas live in the C
core (native/sched.c, pg_clip_grad_value / pg_grad_anomaly in optim.c), shared with R.

Every scheduler has ``step()`` (advance one step, usually one batch; sets the optimizer's lr, and
for the one-cycle schedule its momentum or beta1; returns the new lr) and ``get_lr()``."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from .. import _core
from .._args import as_float, check_flag, check_number, match_arg, plain
from .._core import ffi, lib
from ..errors import ArgumentError, PyggmlrValueError
from ..tensor import Tensor
from .optimizer import Optimizer, _grads_handle, _param_list, optimizer_adam, optimizer_sgd

__all__ = [
    "lr_scheduler_step",
    "lr_scheduler_cosine",
    "lr_scheduler_warmup",
    "lr_scheduler_cyclic",
    "lr_scheduler_onecycle",
    "lr_scheduler_warmup_cosine",
    "clip_grad_value",
    "check_grad_anomaly",
]


def _num_or_na(v: Any) -> float:
    """R's .sched_num: a number or a flag as a float, anything else NaN (the core's text)."""
    if isinstance(v, (str, bytes)) or v is None:
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


class _Schedule:
    """The core's schedule of `kind`: parameters `_par` and state `_st` (pg_api_sched.h)."""

    _kind = -1
    _name = ""

    def _init(self, optimizer: Any, par: List[float]) -> None:
        if not isinstance(optimizer, Optimizer):  # the wrong kind: ArgumentError, as R's
            what = "an ag_tensor" if isinstance(optimizer, Tensor) else type(optimizer).__name__
            raise ArgumentError(  # R's words too (issue 29)
                f"{self._name}: optimizer must be an optimizer (optimizer_sgd() or "
                f"optimizer_adam()), got {what}"
            )
        self.optimizer = optimizer
        self._par = ffi.new("double[]", list(par) + [0.0] * (lib.PG_SCHED_NPAR - len(par)))
        self._st = ffi.new("double[]", lib.PG_SCHED_NSTATE)
        lr0, mom0 = ffi.new("double *"), ffi.new("double *")
        rc = lib.pg_sched_init(self._kind, self._par, self._st, float(optimizer.lr), lr0, mom0)
        if rc:
            msg = ffi.string(lib.pg_last_error()).decode()
            lib.pg_clear_error()
            raise PyggmlrValueError(f"{self._name}: {msg}")
        self._apply(lr0[0], mom0[0])

    def _apply(self, lr: float, mom: float) -> None:
        if not math.isnan(lr):
            self.optimizer.lr = lr
        if not math.isnan(mom) and self._mom_field:
            setattr(self.optimizer, self._mom_field, mom)

    _mom_field: Optional[str] = None

    def step(self) -> float:
        """Advance one step and set the optimizer's learning rate; returns it."""
        lr, mom = ffi.new("double *"), ffi.new("double *")
        _core.check(
            lib.pg_sched_step(self._kind, self._par, self._st, float(self.optimizer.lr), lr, mom)
        )
        self._apply(lr[0], mom[0])
        return float(self.optimizer.lr)

    def get_lr(self) -> float:
        """The optimizer's current learning rate."""
        return float(self.optimizer.lr)

    def _steps(self) -> int:  # last_epoch / last_step (the subclasses keep ggmlR's two names)
        return int(self._st[0])

    def _repr(self, fields: str, count: str) -> str:
        """ "<name> | <fields> | <count>=<steps> | lr=<lr>", each schedule's print line."""
        return f"{self._name} | {fields} | {count}={self._steps()} | lr={self.optimizer.lr:.6f}"


class lr_scheduler_step(_Schedule):
    """Multiply the optimizer's lr by gamma every step_size calls of step()."""

    _kind, _name = lib.PG_SCHED_KIND_STEP, "lr_scheduler_step"

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        self.gamma = check_number(gamma, self._name, "gamma")
        self._init(optimizer, [check_number(step_size, self._name, "step_size"), self.gamma])
        self.step_size = int(self._par[0])

    last_epoch = property(_Schedule._steps, doc="Steps taken so far.")

    def __repr__(self):
        return self._repr(f"step_size={self.step_size} | gamma={self.gamma:.4f}", "epoch")


class lr_scheduler_cosine(_Schedule):
    """Cosine annealing from the optimizer's lr at construction (lr_max) to lr_min over T_max
    steps (the first step gives lr_max; without restart it stays at t = T_max - 1). restart: warm
    restarts, each cycle T_mult times longer than the last (rounded as R rounds)."""

    _kind, _name = lib.PG_SCHED_KIND_COSINE, "lr_scheduler_cosine"

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,
        lr_min: float = 0.0,
        restart: bool = False,
        T_mult: float = 1,
    ) -> None:
        self.lr_min, self.restart, self.T_mult = (
            check_number(lr_min, self._name, "lr_min"),
            check_flag(restart, self._name, "restart"),
            _num_or_na(T_mult),  # ggmlR's text says its kind: "a single number >= 1"
        )
        self._init(
            optimizer,
            [check_number(T_max, self._name, "T_max"), self.lr_min, self.restart, self.T_mult],
        )
        self.T_max, self.lr_max = int(self._par[0]), float(self._par[4])

    last_epoch = property(_Schedule._steps, doc="Steps taken so far.")

    @property
    def T_cur(self) -> int:
        """The current cycle's length (restarts: grows by T_mult)."""
        return int(self._st[1])

    @property
    def cycle_pos(self) -> int:
        """Position in the current cycle (restarts)."""
        return int(self._st[2])

    def __repr__(self):
        return self._repr(
            f"T_max={self.T_max} | lr_max={self.lr_max:.6f} | lr_min={self.lr_min:.6f}", "epoch"
        )


class lr_scheduler_cyclic(_Schedule):
    """Cyclical learning rate between base_lr and max_lr (ggmlR 0.8.3): up for step_size_up steps,
    down for step_size_down (default: the same); mode "triangular", "triangular2" (the amplitude
    halves every cycle) or "exp_range" (times gamma ** step). Sets the optimizer's lr to base_lr."""

    _kind, _name = lib.PG_SCHED_KIND_CYCLIC, "lr_scheduler_cyclic"
    _MODES = ("triangular", "triangular2", "exp_range")

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float,
        max_lr: float,
        step_size_up: int = 2000,
        step_size_down: Optional[int] = None,
        mode: str = "triangular",
        gamma: float = 1,
    ) -> None:
        mode = match_arg(mode, self._MODES, self._name, "mode")  # "triangular2" or a prefix
        n = self._name
        up = check_number(step_size_up, n, "step_size_up")
        down = up if step_size_down is None else check_number(step_size_down, n, "step_size_down")
        self.base_lr = check_number(base_lr, n, "base_lr")
        self.max_lr, self.mode = check_number(max_lr, n, "max_lr"), mode
        self.gamma = check_number(gamma, n, "gamma")
        self._init(
            optimizer,
            [self.base_lr, self.max_lr, up, down, float(self._MODES.index(mode)), self.gamma],
        )
        self.step_size_up, self.step_size_down = int(self._par[2]), int(self._par[3])

    last_step = property(_Schedule._steps, doc="Steps taken so far.")

    def __repr__(self):
        return self._repr(
            f"mode={self.mode} | base_lr={self.base_lr:.6f} | max_lr={self.max_lr:.6f}", "step"
        )


class lr_scheduler_onecycle(_Schedule):
    """One-cycle policy (ggmlR 0.8.3): lr from max_lr / div_factor up to max_lr over
    round(pct_start * total_steps) steps, then down to max_lr / final_div_factor ("cos" or
    "linear"); with cycle_momentum the momentum (SGD) or beta1 (Adam) cycles the other way between
    max_momentum and base_momentum (set to max_momentum at construction, as ggmlR does)."""

    _kind, _name = lib.PG_SCHED_KIND_ONECYCLE, "lr_scheduler_onecycle"

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float,
        total_steps: int,
        pct_start: float = 0.3,
        div_factor: float = 25,
        final_div_factor: float = 1e4,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float = 0.85,
        max_momentum: float = 0.95,
    ) -> None:
        anneal_strategy = match_arg(
            anneal_strategy, ("cos", "linear"), self._name, "anneal_strategy"
        )
        if check_flag(cycle_momentum, self._name, "cycle_momentum"):
            self._mom_field = (
                "momentum"
                if isinstance(optimizer, optimizer_sgd)
                else "beta1"
                if isinstance(optimizer, optimizer_adam)
                else None
            )
        n = self._name
        self.max_lr, self.anneal_strategy = check_number(max_lr, n, "max_lr"), anneal_strategy
        self.base_momentum = check_number(base_momentum, n, "base_momentum")
        self.max_momentum = check_number(max_momentum, n, "max_momentum")
        self._init(
            optimizer,
            [
                self.max_lr,
                check_number(total_steps, n, "total_steps"),
                check_number(pct_start, n, "pct_start"),
                check_number(div_factor, n, "div_factor"),
                check_number(final_div_factor, n, "final_div_factor"),
                float(anneal_strategy == "linear"),
                self.base_momentum,
                self.max_momentum,
            ],
        )
        self.total_steps, self.step_up = int(self._par[1]), int(self._par[4])
        self.initial_lr, self.final_lr = float(self._par[2]), float(self._par[3])
        # "momentum" (SGD), "beta1" (Adam) or None: the field it cycles
        self.mom_field = self._mom_field

    last_step = property(_Schedule._steps, doc="Steps taken so far.")

    def __repr__(self):
        return self._repr(f"max_lr={self.max_lr:.6f} | total_steps={self.total_steps}", "step")


class lr_scheduler_warmup_cosine(_Schedule):
    """Linear warmup from warmup_start_lr to the optimizer's lr over warmup_steps, then cosine
    decay to lr_min at total_steps, where it stays (ggmlR 0.8.3)."""

    _kind, _name = lib.PG_SCHED_KIND_WARMUP_COSINE, "lr_scheduler_warmup_cosine"

    def __init__(
        self,
        optimizer: Optimizer,
        warmup_steps: int,
        total_steps: int,
        lr_min: float = 0,
        warmup_start_lr: float = 0,
    ) -> None:
        n = self._name
        self.lr_min, self.warmup_start_lr = (
            check_number(lr_min, n, "lr_min"),
            check_number(warmup_start_lr, n, "warmup_start_lr"),
        )
        self._init(
            optimizer,
            [
                check_number(warmup_steps, n, "warmup_steps"),
                check_number(total_steps, n, "total_steps"),
                0.0,
                self.lr_min,
                self.warmup_start_lr,
            ],
        )
        self.warmup_steps, self.total_steps = int(self._par[0]), int(self._par[1])
        self.lr_max = float(self._par[2])

    last_step = property(_Schedule._steps, doc="Steps taken so far.")

    def __repr__(self):
        return self._repr(
            f"warmup={self.warmup_steps} | total={self.total_steps} | lr_max={self.lr_max:.6f}",
            "step",
        )


class lr_scheduler_warmup(_Schedule):
    """Linear warmup over warmup_steps calls, from base_lr * start_factor up to base_lr (the
    optimizer's lr, or `after`'s lr_max when `after` is a cosine schedule), then hand over to
    `after` (another schedule on the same optimizer), if given. The formula is the core's
    (pg_api_sched.h), the same in R."""

    _kind, _name = lib.PG_SCHED_KIND_WARMUP, "lr_scheduler_warmup"

    def __init__(
        self, optimizer: Optimizer, warmup_steps: int, after: Any = None, start_factor: float = 0.0
    ) -> None:
        self.after = after
        base = (
            after.lr_max
            if isinstance(after, lr_scheduler_cosine)
            else getattr(optimizer, "lr", math.nan)
        )
        self.start_factor = check_number(start_factor, self._name, "start_factor")
        self._init(
            optimizer,
            [
                check_number(warmup_steps, self._name, "warmup_steps"),
                float(base),
                self.start_factor,
            ],
        )
        self.warmup_steps, self.base_lr = int(self._par[0]), float(self._par[1])

    last_epoch = property(_Schedule._steps, doc="The number of step() calls so far.")

    def step(self) -> float:
        """Count one step: raise lr linearly during warmup_steps, then step the `after`
        schedule (if any). Returns the new lr."""
        super().step()
        if self.last_epoch > self.warmup_steps and self.after is not None:
            self.after.step()
        return float(self.optimizer.lr)

    def __repr__(self):
        return self._repr(f"warmup_steps={self.warmup_steps}", "epoch")


def clip_grad_value(params: Any, grads: Any = None, clip_value: Optional[float] = None) -> float:
    """Clamp every gradient entry into [-clip_value, clip_value] (NaN stays NaN, +-Inf becomes
    +-clip_value) in the map (or each parameter's .grad when grads is None); returns the largest
    finite |g| before clipping (0 without gradients). ggmlR 0.8.3. clip_value has no default (as
    R's and ggmlR's): None is refused."""
    if isinstance(clip_value, (bool, np.bool_)) or not isinstance(clip_value, numbers.Real):
        raise PyggmlrValueError(  # before params, as R's; the value shown as R's (issue 29)
            f"clip_grad_value: clip_value must be a single positive finite number, got {plain(clip_value)!r}"
        )
    _, tensors = _param_list(params, "clip_grad_value")
    arr = ffi.new("pg_tensor *[]", [t._handle() for t in tensors] or 1)
    out = ffi.new("double *")
    rc = lib.pg_clip_grad_value(
        arr, len(tensors), _grads_handle(grads, "clip_grad_value"), as_float(clip_value), out
    )
    if rc:
        _core.raise_last(rc)
    return float(out[0])


def check_grad_anomaly(
    params: Any, grads: Any = None, action: str = "warn", max_abs: Optional[float] = None
) -> List[Dict[str, Any]]:
    """One row per parameter (dicts: param, n_nan, n_inf, max_abs, status): status is the first of
    "nan+inf", "nan", "inf", "large" (max_abs given and exceeded), "ok", or "missing" (no gradient:
    counts None). Rows other than ok/missing make a message "gradient anomaly detected in k
    parameter(s):" that action "warn" warns (RuntimeWarning), "stop" raises
    (PyggmlrValueError) and "silent" keeps to itself. ggmlR 0.8.3."""
    action = match_arg(action, ("warn", "stop", "silent"), "check_grad_anomaly", "action")
    # then max_abs, as R's (issue 29): a wrong kind an ArgumentError, NaN a bad value
    if max_abs is not None:
        msg = f"check_grad_anomaly: max_abs must be None or a single number, got {plain(max_abs)!r}"
        if isinstance(max_abs, (bool, np.bool_)) or not isinstance(max_abs, numbers.Real):
            raise ArgumentError(msg)
        max_abs = as_float(max_abs)  # 10**400: Inf (math.isnan raised OverflowError)
        if math.isnan(max_abs):
            raise PyggmlrValueError(msg)
    names, tensors = _param_list(params, "check_grad_anomaly")
    n = len(tensors)
    arr = ffi.new("pg_tensor *[]", [t._handle() for t in tensors] or 1)
    found, nn, ni, mx = (
        ffi.new("int[]", n or 1),
        ffi.new("int64_t[]", n or 1),
        ffi.new("int64_t[]", n or 1),
        ffi.new("double[]", n or 1),
    )
    _core.check(
        lib.pg_grad_anomaly(arr, n, _grads_handle(grads, "check_grad_anomaly"), found, nn, ni, mx)
    )
    rows = []
    for i in range(n):
        if not found[i]:
            rows.append(
                {
                    "param": names[i],
                    "n_nan": None,
                    "n_inf": None,
                    "max_abs": None,
                    "status": "missing",
                }
            )
            continue
        m = None if math.isnan(mx[i]) else float(mx[i])
        st = (
            "nan+inf"
            if nn[i] and ni[i]
            else "nan"
            if nn[i]
            else "inf"
            if ni[i]
            else "large"
            if max_abs is not None and m is not None and m > max_abs
            else "ok"
        )
        rows.append(
            {
                "param": names[i],
                "n_nan": int(nn[i]),
                "n_inf": int(ni[i]),
                "max_abs": m,
                "status": st,
            }
        )
    bad = [r for r in rows if r["status"] not in ("ok", "missing")]
    if bad and action != "silent":
        msg = f"gradient anomaly detected in {len(bad)} parameter(s):\n" + "\n".join(
            f"  {r['param']:<20s} status={r['status']:<8s} n_nan={r['n_nan']} n_inf={r['n_inf']} "
            f"max_abs={'NA' if r['max_abs'] is None else format(r['max_abs'], '.4g')}"
            for r in bad
        )
        if action == "stop":
            raise PyggmlrValueError(msg)
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return rows
