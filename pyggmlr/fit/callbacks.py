"""ag_fit's callbacks: Callback, ag_early_stopping, ag_model_checkpoint."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, List, Optional, Union

from .. import _core
from .._args import check_flag, check_int, check_num, r_num, show
from .._core import NULL, ffi, lib, text
from .._host import HostValues
from ..errors import ArgumentError
from .util import _restore, _snapshot

__all__ = ["Callback", "ag_early_stopping", "ag_model_checkpoint"]


# ---------------------------------------------------------------------------------------------
# callbacks


class Callback:
    """Base class. ag_fit calls on_train_begin(fit), on_batch_end(step, logs),
    on_epoch_end(epoch, logs) (return False to stop) and on_train_end(fit); ``fit`` exposes
    model, optimizer, history, nepoch and stop (set True to stop after this epoch). Callbacks
    with state() -> dict (any JSON-able value) and load_state(dict) are saved in checkpoints and
    restored on resume: ag_fit(resume_from=) calls load_state(state) with the saved value (the
    built-ins' state() is a tuple (json, arrays): load_state(json, arrays) when it saved
    arrays)."""

    def on_train_begin(self, fit):
        """Called once before the first epoch with the run state ``fit`` (model, optimizer,
        history, nepoch, stop)."""

    def on_batch_end(self, step, logs):
        """Called after every optimizer micro-step with the global step number and
        {epoch, batch, loss}."""

    def on_epoch_end(self, epoch, logs):
        """Called after each epoch's validation with the 1-based epoch and its logs (loss,
        accuracy, val_loss, val_accuracy, lr, times); return False to stop training."""

    def on_train_end(self, fit):
        """Called once when training ends (also after an early stop), before ag_fit returns."""


def hook(cb: Any, name: str) -> Any:
    """A callback's hook `name` when it is callable, else None: an attribute that is not a
    function is no hook, as R's ag_fit reads is.function(cb$name)."""
    f = getattr(cb, name, None)
    return f if callable(f) else None


def batch_callbacks(cbs: List[Any]) -> List[Any]:
    """The callbacks with an on_batch_end of their own: the base class's no-op is skipped, so a
    fit with only the built-ins asks for no per-batch events (as R's ag_fit)."""
    return [cb for cb in cbs if hook(cb, "on_batch_end") is not None
            and getattr(cb.on_batch_end, "__func__", None) is not Callback.on_batch_end]  # fmt: skip


def _f(name: str, doc: str) -> Any:
    """A read-only property: the core handle's field `name` (_Monitored._get)."""
    return property(lambda self: self._get(name), doc=doc)


class _Monitored(Callback):
    """A callback whose rule is a core object watching one logged value (pg_<_kind>_*)."""

    _kind = ""  # "early_stop" or "checkpoint"

    def _make(self, params):
        k = self._kind
        h = getattr(lib, f"pg_{k}_new")(ffi.new(f"pg_{k}_params *", params))
        if h == NULL:
            _core.raise_last()
        self._h = ffi.gc(h, getattr(lib, f"pg_{k}_free"))
        self._fit: Any = None
        self._best_weights: Any = None  # ag_early_stopping's snapshot (restore_best)

    def _get(self, name):
        """Field `name` of the core handle (its settings, one copy, then its last fit's counters):
        the core's table (pg_<kind>_field, R's fields too) and its value (ABSENT: None)."""
        f, v, k = getattr(lib, f"pg_{self._kind}_field"), ffi.new("pg_host_value *"), 0
        while ffi.string(f(NULL, k, NULL)).decode() != name:
            k += 1
        f(self._h, k, v)
        if v.kind == lib.PG_HOST_TEXT:
            return ffi.string(v.text).decode()
        return None if v.kind == lib.PG_HOST_ABSENT else (float, int, bool)[v.kind - 1](v.num)

    monitor: Optional[str] = _f("monitor", "The monitor asked for (None: auto).")
    mode: str = _f("mode", '"auto" (accuracy upwards, the rest down), "min" or "max".')
    best: float = _f("best", "The last fit's best monitored value (inf / -inf before any).")

    def _begin_args(self, fit):
        """(has validation data, the monitor mask) of the run by the core's rule and text
        (pg_fit_run_measures, R's too): a hand-written loop's run object may not say, or say
        None: then every value counts as measured."""
        h, v, out = HostValues(), ffi.new("pg_host_value[2]"), ffi.new("int[2]")
        for dst, k in zip(v, ("has_val", "has_accuracy")):
            x = getattr(fit, k, None)
            h.value(dst, x)
            dst.text = h.text(show(x, kind=False))  # the refusal's display
        _core.check(lib.pg_fit_run_measures(self._fn.encode(), v, v + 1, 0, out, out + 1))
        return out[0], out[1]

    @property
    def _fn(self):
        """The user-facing name the texts give."""
        return "ag_early_stopping" if self._kind == "early_stop" else "ag_model_checkpoint"

    def _run(self, fit, name, *fields):
        """The run object hook `name` reads (ag_fit's, or a hand-written loop's own with these
        fields): one without them is refused before anything is counted (R's rule and text)."""
        for f in fields:
            if getattr(fit, f, None) is None:
                raise ArgumentError(
                    f"{self._fn}: {name}(fit): fit has no {f} (ag_fit's run object has "
                    f"{', '.join(fields)})"
                )

    def _epoch_args(self, epoch, logs):
        """on_epoch_end's arguments as the core reads them: the 1-based epoch (0 is the core's
        "none") under the one integer rule, and a dict of the epoch's values (R's: a named list)."""
        fn = self._fn
        epoch = check_int(epoch, fn, "epoch", 1)
        if not isinstance(logs, Mapping):
            raise ArgumentError(
                f"{fn}: logs must be a dict of the epoch's values, got {type(logs).__name__}"
            )
        return epoch, _log_values(logs, fn)

    def state(self):
        """(JSON-able counters, best weights or None): what a checkpoint saves for resuming (the
        core's form: best, best_epoch and ag_early_stopping's wait)."""
        js = text(getattr(lib, f"pg_{self._kind}_state_json"), self._h)
        return json.loads(js), self._best_weights

    def check_state(self, st):
        """Raise PyggmlrValueError unless st is a state load_state() takes (ag_fit asks before
        it writes anything on resume)."""
        _state_load(getattr(lib, f"pg_{self._kind}_state_load"), NULL, st)

    def load_state(self, st, arrays=None):
        """Restore the counters saved by state() (and the best weights, when given); all checked
        before the first is set (by the core)."""
        _state_load(getattr(lib, f"pg_{self._kind}_state_load"), self._h, st)
        if arrays is not None:
            self._best_weights = arrays


class ag_early_stopping(_Monitored):
    """Stop when the monitored value has not improved by more than min_delta for `patience`
    epochs; with restore_best the model gets the weights (and batch-norm buffers) of the best
    epoch back at the end of training. The rule lives in the core (native/fit_stop.c).

    monitor: a History column ("val_loss", "val_accuracy", "loss", "accuracy", ...); None:
    val_loss when the fit has validation data, else loss. A name the fit never measures (a val_*
    without validation data, accuracy without classes) is an error before training starts.
    mode: "auto" (maximise accuracy values, minimise the rest), "min" or "max". Each ag_fit
    starts afresh: the object can be reused."""

    _kind = "early_stop"

    def __init__(
        self,
        patience: int = 5,
        min_delta: float = 0.0,
        restore_best: bool = True,
        monitor: Optional[str] = None,
        mode: str = "auto",
    ) -> None:
        fn = "ag_early_stopping"
        p = lib.pg_early_stop_default_params()
        p.patience = check_int(patience, fn, "patience", 1)
        p.min_delta = check_num(min_delta, fn, "min_delta", 0)
        p.restore_best = int(check_flag(restore_best, fn, "restore_best"))
        p.mode, p.monitor = _monitor_codes(fn, monitor, mode)
        self._make(p)

    patience: int = _f("patience", "Epochs without improvement before training stops.")
    min_delta: float = _f("min_delta", "The margin an improvement must exceed.")
    restore_best: bool = _f("restore_best", "Whether the best epoch's weights come back.")
    best_epoch: Optional[int] = _f("best_epoch", "The last fit's best epoch (None: none).")
    wait: int = _f("wait", "Epochs since the best.")
    stopped_epoch: Optional[int] = _f("stopped_epoch", "The last fit's stop (None: none).")

    def on_train_begin(self, fit):
        self._run(fit, "on_train_begin", "model")
        _core.check(lib.pg_early_stop_begin(self._h, *self._begin_args(fit)))
        self._fit, self._best_weights = fit, None

    def on_epoch_end(self, epoch, logs):
        act = ffi.new("int *")
        _core.check(lib.pg_early_stop_update(self._h, *self._epoch_args(epoch, logs), act))
        if act[0] == lib.PG_EARLY_STOP_SNAPSHOT:  # a new best with restore_best (the core's rule)
            self._best_weights = _snapshot(self._fit.model)
        return False if act[0] == lib.PG_EARLY_STOP_STOP else None

    def on_train_end(self, fit):
        self._run(fit, "on_train_end", "model", "history")
        fit.history.best_epoch = self.best_epoch
        last = fit.history.epoch[-1] if fit.history.epoch else 0
        restore = ffi.new("int *")
        _core.check(lib.pg_early_stop_end(self._h, last, restore))
        if restore[0] and self._best_weights is not None:
            _restore(fit.model, self._best_weights)
        self._fit = None

    def __repr__(self):
        md, rb = r_num(self.min_delta).encode(), str(self.restore_best).encode()  # R's format()
        return text(lib.pg_early_stop_format, self._h, md, rb)  # the core's layout, R's too


# the History's columns after epoch, in the core's order (its update reads them by position)
# (then ag_fit(metrics=)'s columns, two per metric code: PG_FIT_LOG_ALL in all)
_LOG_NAMES = tuple(ffi.string(lib.pg_fit_log_name(i)).decode() for i in range(lib.PG_FIT_LOG_ALL))


def _log_values(logs, fn="ag_fit"):
    """An epoch's logs as the core reads them: PG_FIT_LOG_ALL values in its order, by its rule
    and text (pg_fit_log_values, R's too: None is not measured, a non-number refused)."""
    h, v = HostValues(), ffi.new("pg_host_value[]", len(_LOG_NAMES))
    for dst, k in zip(v, _LOG_NAMES):
        x = logs.get(k) if k else None
        h.value(dst, x)
        if dst.kind in (lib.PG_HOST_TEXT, lib.PG_HOST_OTHER):
            dst.text = h.text(show(x, kind=False))
    out = ffi.new("double[]", len(_LOG_NAMES))
    _core.check(lib.pg_fit_log_values(fn.encode(), v, 0, out))
    return out


def _monitor_codes(fn, monitor, mode):
    """(mode, monitor) codes of the core from the callbacks' arguments, checked by its rule and
    text (pg_monitor_args, R's too; monitor None: -1, resolved when a fit begins)."""
    out, args = ffi.new("int[2]"), [fn.encode()]
    for v, none_ok in ((mode, False), (monitor, True)):  # a string, else what it is (or None)
        shown = NULL if none_ok and v is None else type(v).__name__.encode()
        args += [v.encode(), NULL] if isinstance(v, str) else [NULL, shown]
    _core.check(lib.pg_monitor_args(*args, 0, out, out + 1))
    return out[0], out[1]


class _Shown:
    """A value the core shows as this text and refuses (not a number: PG_HOST_OTHER)."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def _state_load(load, h, st):
    """A callback state checked by the core's rule and text (R's too), then set (load:
    pg_<kind>_state_load; h NULL: checked only)."""
    host, v, d = HostValues(), ffi.new("pg_host_value[3]"), st if isinstance(st, dict) else {}
    for i, dst in enumerate(v):  # the keys: the core's (pg_callback_state_key), R's too
        x = d.get(ffi.string(lib.pg_callback_state_key(i)).decode())
        if isinstance(x, (list, dict)):  # shown as compact JSON, as R's jsonlite writes it
            x = _Shown(json.dumps(x, separators=(",", ":"), default=repr))
        host.value(dst, x)
    _core.check(load(h, isinstance(st, dict), v))


class ag_model_checkpoint(_Monitored):
    """Save model + optimizer state + epoch (+ everything ag_fit needs to resume: the run's seed,
    the random stream, history, callback states) to `path` every `every` epochs and at the last
    one. Continue with ag_fit(..., resume_from=path). `path` may contain "{epoch}".

    save_best_only: of those epochs, save only when the monitored value (monitor and mode as
    ag_early_stopping's: val_loss with validation data, else loss; accuracy maximised) beats
    the best seen at the epochs looked at before (keras' ModelCheckpoint). The rule lives in
    the core (native/fit_stop.c)."""

    _kind = "checkpoint"

    def __init__(
        self,
        path: Union[str, os.PathLike],
        every: int = 1,
        save_best_only: bool = False,
        monitor: Optional[str] = None,
        mode: str = "auto",
    ) -> None:
        fn = "ag_model_checkpoint"
        if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):  # first, as R
            raise ArgumentError(
                f"{fn}: path must be a file name (a single string), got {type(path).__name__}"
            )
        # the arguments in the signature's order, as R's: path (checked now rather than after the
        # first epoch: the core's rule, pg_checkpoint_path_check: {epoch} or {epoch:03d}, {{ and
        # }}, a writable directory), every, save_best_only, then monitor and mode (the core's)
        self.path = os.fspath(path)
        _core.check(lib.pg_checkpoint_path_check(os.fsencode(self.path)))
        p = lib.pg_checkpoint_default_params()
        p.every = check_int(every, fn, "every", 1)
        p.best_only = int(check_flag(save_best_only, fn, "save_best_only"))
        p.mode, p.monitor = _monitor_codes(fn, monitor, mode)
        self._make(p)
        self.saved: List[str] = []

    every: int = _f("every", "Epochs between the saves looked at (the last one always is).")
    save_best_only: bool = _f("save_best_only", "Whether a save needs an improvement.")

    def on_train_begin(self, fit):
        self._run(fit, "on_train_begin", "nepoch", "save_checkpoint")
        nepoch = check_int(fit.nepoch, self._fn, "nepoch", 1)
        _core.check(lib.pg_checkpoint_begin(self._h, nepoch, *self._begin_args(fit)))
        self._fit = fit

    def on_epoch_end(self, epoch, logs):
        save = ffi.new("int *")
        epoch, vals = self._epoch_args(epoch, logs)
        _core.check(lib.pg_checkpoint_update(self._h, epoch, vals, save))
        if save[0]:
            p = text(lib.pg_checkpoint_path, os.fsencode(self.path), int(epoch))
            self._fit.save_checkpoint(p, epoch)
            self.saved.append(p)

    def __repr__(self):
        return text(lib.pg_checkpoint_format, self._h, os.fsencode(self.path), b"True")
