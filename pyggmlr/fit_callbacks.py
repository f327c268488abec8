"""ag_fit's callbacks: Callback, ag_early_stopping, ag_model_checkpoint."""

from __future__ import annotations

import math
import os
from typing import List, Optional, Union

from ._args import as_flag, check_int, check_num
from .errors import ArgumentError, PyggmlrValueError
from .fit_util import _restore, _snapshot

__all__ = ["Callback", "ag_early_stopping", "ag_model_checkpoint"]


# ---------------------------------------------------------------------------------------------
# callbacks


class Callback:
    """Base class. ag_fit calls on_train_begin(fit), on_batch_end(step, logs),
    on_epoch_end(epoch, logs) (return False to stop) and on_train_end(fit); ``fit`` exposes
    model, optimizer, history, nepoch and stop (set True to stop after this epoch). Callbacks
    with state(): dict / load_state(dict) are saved in checkpoints and restored on resume."""

    def on_train_begin(self, fit):
        """Called once before the first epoch with the run state ``fit`` (model, optimizer,
        history, nepoch, stop)."""
        pass

    def on_batch_end(self, step, logs):
        """Called after every optimizer micro-step with the global step number and
        {epoch, batch, loss}."""
        pass

    def on_epoch_end(self, epoch, logs):
        """Called after each epoch's validation with the 1-based epoch and its logs (loss,
        accuracy, val_loss, val_accuracy, lr, times); return False to stop training."""
        return None

    def on_train_end(self, fit):
        """Called once when training ends (also after an early stop), before ag_fit returns."""
        pass


class _FnCallback(Callback):
    def __init__(self, fn):
        self.fn = fn

    def on_epoch_end(self, epoch, logs):
        return self.fn(epoch, logs)


class ag_early_stopping(Callback):
    """Stop when the monitored loss (val_loss with a validation split, else the training loss)
    has not improved by more than min_delta for `patience` epochs; with restore_best the model
    gets the weights (and batch-norm buffers) of the best epoch back at the end of training."""

    def __init__(
        self,
        patience: int = 5,
        min_delta: float = 0.0,
        restore_best: bool = True,
        monitor: Optional[str] = None,
    ) -> None:
        self.patience = check_int(patience, "ag_early_stopping", "patience", 1)
        self.min_delta = check_num(min_delta, "ag_early_stopping", "min_delta", 0)
        self.restore_best = as_flag(restore_best, "ag_early_stopping", "restore_best")
        if monitor is not None and not isinstance(monitor, str):
            raise ArgumentError(
                f"ag_early_stopping: monitor must be None or a log name such as 'val_loss', got {monitor!r}"
            )
        self.monitor = monitor
        self.best, self.best_epoch, self.wait, self.stopped_epoch = math.inf, None, 0, None
        self._best_weights = None

    def on_train_begin(self, fit):
        self._fit = fit

    def on_epoch_end(self, epoch, logs):
        key = self.monitor or (
            "val_loss" if not math.isnan(logs.get("val_loss", math.nan)) else "loss"
        )
        v = logs.get(key, math.nan)
        if v < self.best - self.min_delta:
            self.best, self.best_epoch, self.wait = v, epoch, 0
            if self.restore_best:
                self._best_weights = _snapshot(self._fit.model)
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                return False
        return None

    def on_train_end(self, fit):
        fit.history.best_epoch = self.best_epoch
        last = fit.history.epoch[-1] if fit.history.epoch else None
        if self.restore_best and self._best_weights is not None and self.best_epoch != last:
            _restore(fit.model, self._best_weights)

    def state(self):
        """(JSON-able counters, best weights or None): what a checkpoint saves for resuming."""
        return {"best": self.best, "best_epoch": self.best_epoch, "wait": self.wait}, (
            self._best_weights if self._best_weights is not None else None
        )

    def check_state(self, st):
        """Raise PyggmlrValueError unless st is a state load_state() takes (ag_fit asks before
        it writes anything on resume)."""
        b, be, w = (
            (st.get(k) for k in ("best", "best_epoch", "wait"))
            if isinstance(st, dict)
            else (0, 0, "?")
        )
        num = (int, float)
        if not (
            (b is None or (isinstance(b, num) and not isinstance(b, bool)))
            and (be is None or (isinstance(be, int) and not isinstance(be, bool)))
            and (w is None or (isinstance(w, int) and not isinstance(w, bool) and w >= 0))
        ):
            raise PyggmlrValueError(
                "ag_early_stopping: the checkpoint's callback state is not usable "
                f"(best, best_epoch, wait = {b!r}, {be!r}, {w!r})"
            )

    def load_state(self, st, arrays=None):
        """Restore the counters (and best weights, when given) saved by state(); all checked
        before the first is set."""
        self.check_state(st)
        b, be, w = st.get("best"), st.get("best_epoch"), st.get("wait")
        self.best = math.inf if b is None else float(b)
        self.best_epoch, self.wait = be, int(w or 0)
        if arrays is not None:
            self._best_weights = arrays

    def __repr__(self):
        return f"ag_early_stopping | patience={self.patience} | min_delta={self.min_delta:g} | restore_best={self.restore_best}"


def _checkpoint_path(path) -> str:
    """ag_model_checkpoint's path, checked now rather than after the first epoch: a string with
    no placeholder but {epoch}, in a directory that exists and can be written."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise PyggmlrValueError(
            f"ag_model_checkpoint: path must be a file name, got {type(path).__name__}"
        )
    p = os.fspath(path)
    try:
        first = p.format(epoch=1)
    except (KeyError, IndexError, ValueError) as e:
        raise PyggmlrValueError(
            f"ag_model_checkpoint: path {p!r} has a placeholder other than {{epoch}} "
            f"({type(e).__name__}: {e}); write a literal brace as {{{{ or }}}}"
        ) from None
    d = os.path.dirname(first) or "."
    if not os.path.isdir(d):
        raise PyggmlrValueError(
            f"ag_model_checkpoint: directory {d!r} of path {p!r} does not exist"
        )
    if not os.access(d, os.W_OK | os.X_OK):
        raise PyggmlrValueError(
            f"ag_model_checkpoint: directory {d!r} of path {p!r} is not writable"
        )
    return p


class ag_model_checkpoint(Callback):
    """Save model + optimizer state + epoch (+ everything ag_fit needs to resume: the run's seed,
    the random stream, history, callback states) to `path` every `every` epochs and at the last
    one. Continue with ag_fit(..., resume_from=path). `path` may contain "{epoch}"."""

    def __init__(self, path: Union[str, os.PathLike], every: int = 1) -> None:
        self.every = check_int(every, "ag_model_checkpoint", "every", 1)
        self.path = _checkpoint_path(path)
        self.saved: List[str] = []

    def on_train_begin(self, fit):
        self._fit = fit

    def on_epoch_end(self, epoch, logs):
        if epoch % self.every == 0 or epoch == self._fit.nepoch:
            p = self.path.format(epoch=epoch)
            self._fit.save_checkpoint(p, epoch)
            self.saved.append(p)
        return None

    def __repr__(self):
        return f"ag_model_checkpoint | path={self.path} | every={self.every}"
