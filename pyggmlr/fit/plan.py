"""The Python face of the core's fit plan (native/fit.c, pg_api_fit.h): the split, the
shuffles, the batches and the per-epoch statistics of ag_fit live once in C; ag_fit (loop.py)
runs the model, the loss and the optimizer between batch() and record()."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from .._core import NULL, ffi, lib
from ..random import Generator
from ..tape import _pending, _raise_pending
from ..tensor import Tensor, _wrap, ag_tensor
from .util import kind_fail

__all__: List[str] = []


def _ok(rc: int) -> int:
    """A count or flag the core returns, or its -status raised."""
    return _core.check(rc) if rc < 0 else int(rc)


def _new(p: Any, free: Any) -> Any:
    """An object the core made (NULL: its error raised), freed with the wrapper."""
    if p == NULL:
        _core.raise_last()
    return ffi.gc(p, free)


def _fwd(fn: Any, after: Any = None) -> Any:
    """A method that only forwards its arguments to the core's fn (self._p first)."""

    def m(self: Any, *a: Any) -> None:
        _core.check(fn(self._p, *a))
        if after:
            after(self)

    return m


class FitSetup:
    """ag_fit's set-up, the core's (native/fit_setup.c): static / distributed, the batch sizes
    over ranks (world()), and the run's settings from the resume check to every checkpoint;
    info: static_step, auto_static, batch_size, nbatch_logical, has_seed, seed."""

    def __init__(self, static: Any, loss: str, **fields: Any) -> None:
        """fields: pg_fit_setup_params' other fields by name (distributed, builtin, n, batch_size,
        nbatch_logical, val_split, shuffle, weighted); one not given keeps the core's default."""
        p = ffi.new("pg_fit_setup_params *", lib.pg_fit_setup_default_params())
        p.static_mode = lib.PG_FIT_STATIC_AUTO if static is None else int(static)
        for k, v in fields.items():
            setattr(p, k, int(v) if isinstance(v, bool) else v)
        name = ffi.new("char[]", loss.encode())  # copied by the core
        p.loss, h = name, ffi.new("pg_fit_setup **")
        _core.check(lib.pg_fit_setup_new(p, h))
        self._p, self.info = ffi.gc(h[0], lib.pg_fit_setup_free), ffi.new("pg_fit_setup_info *")
        self._get()

    def _get(self) -> None:
        _core.check(lib.pg_fit_setup_get(self._p, self.info))

    world = _fwd(lib.pg_fit_setup_world, _get)  # ranks, then the info again
    seed = _fwd(lib.pg_fit_setup_seed, _get)

    def metrics(self, codes: Any) -> None:
        """ag_fit(metrics=)'s codes, recorded in the settings (the resume check compares them)."""
        arr = ffi.new("int[]", list(codes) or [0])
        _core.check(lib.pg_fit_setup_metrics(self._p, len(codes), arr))


class FitPlan:
    """x, y: [F, n] / [K, n] arrays (y None: no targets) made the model's dtype; stream: the
    Generator the split and the shuffles draw from; setup: the run's FitSetup (batch sizes,
    val_split, shuffle and, resuming, the split state loaded before the split; it keeps the
    plan's); xv, yv: validation_data's, appended by the core as the plan's validation part
    (split fixed: no initial shuffle of the split, the training part still reshuffled)."""

    def __init__(
        self, x: Any, y: Any, dtype: str, classify: int, stream: Generator, setup: FitSetup,
        xv: Any = None, yv: Any = None,
    ) -> None:  # fmt: skip
        keep = [None if a is None else ag_tensor(a, dtype=dtype) for a in (x, y, xv, yv)]
        h = [NULL if t is None else t._handle() for t in keep]  # alive through the call
        # the set-up's settings (its split state when resuming), then the plan's split state
        p = lib.pg_fit_setup_new_plan(setup._p, h[0], h[1], int(classify), stream._h, h[2], h[3])
        self._p = _new(p, lib.pg_fit_free)
        self._stream = stream  # the plan borrows its stream: keep it alive
        self._keep: List[Any] = []  # compiled steps a session borrows
        # one Tensor per reused batch tensor, so compiled steps see the same inputs
        self._wrappers: Dict[int, Tensor] = {}
        s = ffi.new("pg_fit_dims *")
        _core.check(lib.pg_fit_sizes(self._p, s))
        self.n_val = int(s.n_val)  # what ag_fit reads

    shard = _fwd(lib.pg_fit_shard)  # (rank, world): this rank's chunk of every global batch

    def monitor_mask(self) -> int:
        """The monitors' has_accuracy once the metrics are set (bit 0 accuracy, bit c metric c)."""
        return _ok(lib.pg_fit_monitor_mask(self._p))

    def total(self, nepoch: int, first: int) -> int:
        """The training batches epochs first..nepoch walk (the progress total, the core's)."""
        return _ok(lib.pg_fit_total_batches(self._p, nepoch, first))

    def _tensor(self, p: Any) -> Optional[Tensor]:
        if p == NULL:
            return None
        key = lib.pg_tensor_id(p)
        t = self._wrappers.get(key)
        if t is not None:
            lib.pg_tensor_release(p)  # the extra reference the core handed out
            return t
        t = _wrap(p)
        self._wrappers[key] = t
        return t

    def batch(self, val: bool, b: int) -> Tuple[Tensor, Optional[Tensor]]:
        """Batch b gathered in the core: (x [F, w], y [K, w] or None), reused tensors."""
        xb, yb = ffi.new("pg_tensor **"), ffi.new("pg_tensor **")
        _ok(lib.pg_fit_batch(self._p, int(val), b, xb, yb))
        x = self._tensor(xb[0])
        assert x is not None
        return x, self._tensor(yb[0])

    def record(self, val: bool, loss: float, out: Tensor) -> None:
        _core.check(lib.pg_fit_record(self._p, int(val), float(loss), out._handle()))

    def train_step(self, loss: Any, out: Tensor, opt: Any) -> float:
        """One eager micro-batch after the forward and the loss, in the core: backward, the
        optimizer's summed step, zero grad, record, tape clear; returns the loss value. loss:
        a Tensor (ag_fit's check_loss)."""
        v = ffi.new("double *")
        _pending.exc = None
        if lib.pg_fit_train_step(self._p, loss._handle("ag_fit"), out._handle(), opt._o, v):
            _raise_pending()  # an error inside an ag_checkpoint segment's replay, as raised
            _core.raise_last()
        return float(v[0])

    def running(self) -> Tuple[float, float]:
        o = ffi.new("double[2]")
        _core.check(lib.pg_fit_running(self._p, o, o + 1))
        return o[0], o[1]


class Session:
    """The core's training session (native/fit_session.c) over a plan: next() gives the events
    ag_fit answers (lib.PG_SESSION_*); the loop's bookkeeping is the core's."""

    def __init__(
        self, plan: FitPlan, setup: FitSetup, nepoch: int, first_epoch: int, batch_events: bool
    ) -> None:
        """setup: the run's FitSetup: the core reads its static mode and loss rule once."""
        prm = ffi.new("pg_session_params *", lib.pg_session_default_params())
        prm.setup, prm.batch_events = setup._p, int(batch_events)
        prm.nepoch, prm.first_epoch = nepoch, first_epoch
        self._p = p = _new(lib.pg_session_new(plan._p, prm), lib.pg_session_free)
        self._plan = plan  # borrowed by the session: keep it alive
        self._ev, self._at = ffi.new("int *"), ffi.new("pg_session_pos *")
        n = lib.pg_session_log_count(p)  # the History's columns, metrics included (the core's)
        self._names = [ffi.string(lib.pg_session_log_name(p, i)).decode() for i in range(n)]
        self._logs, self._msg = ffi.new("double[]", max(n, 1)), ffi.new("char[512]")

    def next(self) -> Tuple[int, Any]:
        """The next event and where the run is then: epoch, batch (0-based), step, stopped_epoch,
        loss (the last training batch's), other (the probe's second batch); read, not kept."""
        _core.check(lib.pg_session_next(self._p, self._ev))
        _core.check(lib.pg_session_where(self._p, self._at))
        return int(self._ev[0]), self._at

    def batch(self) -> Tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
        """The batch event's batch as the plan's reused tensors: x, y (None without targets) and
        a training batch's weight row (None unless sample_weight / class_weight)."""
        t = ffi.new("pg_tensor *[3]")
        _ok(lib.pg_session_batch(self._p, t, t + 1, t + 2))
        x, y, w = (self._plan._tensor(p) for p in t)
        assert x is not None  # every batch has x
        return x, y, w

    set_lr = _fwd(lib.pg_session_set_lr)
    probe = _fwd(lib.pg_session_probe)  # (eager, replay): the probe's losses for the verdict
    stop = _fwd(lib.pg_session_stop)

    def set_static(self, val: bool, width: int, step: Any, out: Tensor) -> None:
        """Hand a compiled step to the session (and with it the batch being answered)."""
        _core.check(lib.pg_session_set_static(self._p, int(val), width, step._g, out._handle()))
        self._plan._keep.append((step, out))

    def static_fail(self, why: str) -> bool:
        """A compiled step's recording failed: True when ag_fit raises that error."""
        return _ok(lib.pg_session_static_fail(self._p, why.encode("utf-8", "replace"))) == 1

    def notice(self) -> str:
        """The fallback notice (NOTICE), the core's text."""
        buf = ffi.new("char[1024]")
        _ok(lib.pg_session_notice(self._p, buf, 1024))  # R's cap too
        return ffi.string(buf).decode("utf-8", "replace")

    def logs(self, epoch: int) -> Tuple[Dict[str, float], Optional[str]]:
        """The epoch's logs (ag_fit's dict, the metrics' columns included) and the divergence
        warning, or None."""
        rc = _ok(lib.pg_session_epoch_logs(self._p, self._logs, len(self._names), self._msg, 512))
        logs: Dict[str, float] = {"epoch": epoch}
        logs.update((k, float(self._logs[i])) for i, k in enumerate(self._names))
        return logs, ffi.string(self._msg).decode("utf-8", "replace") if rc else None


def check_loss(loss: Any) -> None:
    """ag_fit's loss must be a tensor (the core checks that it is 1x1)."""
    if not isinstance(loss, Tensor):
        kind_fail(lib.PG_FIT_KIND_LOSS_VALUE, type(loss).__name__)  # the core's text, R's too
