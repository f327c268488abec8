"""ag_fit: the high-level training loop (ggml's ggml_opt_fit contract on the ag_* path).

Per epoch: shuffle the training part (R's sample.int from the run's random stream, whose state
a checkpoint keeps, so a resumed run repeats the same shuffles), walk it in logical batches of
``nbatch_logical`` samples made of ``nbatch_logical / batch_size`` micro-batches whose gradients
the optimizer accumulates (its ``accumulate_steps``) and applies once per logical batch, then
evaluate the held-out part in eval mode. Loss/accuracy and their uncertainties follow
ggml_opt_result_loss / ggml_opt_result_accuracy."""
from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence, Union

import json
import math
import time

import numpy as np

from . import _core
from .errors import ArgumentError, PyggmlrValueError, ShapeError
from .ops import ag_mean, ag_mse_loss, ag_softmax_cross_entropy_loss, ag_sum
from .ops_loss import ag_bce_with_logits_loss, ag_binary_cross_entropy_loss, ag_huber_loss, ag_mae_loss
from .ops_select import ag_argmax
from .optim import Optimizer, optimizer_adam, optimizer_sgd
from .tape import ag_no_grad, ag_tape_clear, backward, with_grad_tape
from .tensor import Tensor, ag_default_dtype, ag_tensor

__all__ = ["ag_fit", "ag_predict", "ag_accuracy", "History", "Callback", "ag_early_stopping",
           "ag_model_checkpoint"]

_LOSSES = ("cross_entropy", "mse", "mean", "sum")
# opt_params keys: ggml's names are accepted as aliases of the optimizer attributes
_HYPER_ALIASES = {"alpha": "lr", "wd": "weight_decay"}


# ---------------------------------------------------------------------------------------------
# model helpers (work with nn modules and with any object with forward/parameters)

def _forward(model, x):
    if hasattr(model, "forward"):
        return model.forward(x)
    if callable(model):
        return model(x)
    raise ArgumentError(f"ag_fit: model must have forward(x), got {type(model).__name__}")


def _params(model):
    if not hasattr(model, "parameters"):
        raise ArgumentError(f"model must have parameters(), got {type(model).__name__}")
    p = model.parameters()
    return dict(p) if isinstance(p, dict) else {str(i + 1): t for i, t in enumerate(p)}


def _buffers(model):
    b = getattr(model, "buffers", None)
    return dict(b()) if callable(b) else {}


def _set_mode(model, training):
    from . import nn
    fn = getattr(nn, "ag_train" if training else "ag_eval", None)
    if fn is not None:
        fn(model)
    elif hasattr(model, "training"):
        model.training = training


def _model_dtype(model):
    for t in _params(model).values():
        return t.dtype
    return ag_default_dtype()


def _snapshot(model):
    """Exact copies of the parameters and buffers (numpy, own dtype)."""
    return ({k: t.data for k, t in _params(model).items()},
            {k: (t.data if isinstance(t, Tensor) else np.array(t)) for k, t in _buffers(model).items()})


def _restore(model, snap):
    ps, bs = snap
    for k, t in _params(model).items():
        t.data = ps[k]
    for k, t in _buffers(model).items():
        if isinstance(t, Tensor):
            t.data = bs[k]


# ---------------------------------------------------------------------------------------------
# data

def _as_cols(v, name):
    a = v.numpy() if isinstance(v, Tensor) else np.asarray(v)
    if a.dtype.kind not in "biuf":
        raise ArgumentError(f"ag_fit: {name} must be numeric, got dtype {a.dtype}")
    if a.ndim == 1:
        a = a.reshape(1, -1)
    elif a.ndim != 2:
        raise ShapeError(f"ag_fit: {name} must be a [features, n] matrix (samples are columns), got shape {a.shape}")
    return np.asfortranarray(a)


def _row_major_hint(X, Y):
    """A hint for the common mistake of passing row-major [samples, features] data."""
    if X.shape[0] == Y.shape[1]:
        what, rows = "x", X.shape[0]
    elif Y.shape[0] == X.shape[1] and Y.shape[0] != Y.shape[1]:
        what, rows = "y", Y.shape[0]
    elif X.shape[0] == Y.shape[0]:
        return (f"; x and y look row-major ({X.shape[0]} rows each, one per sample): pyggmlr data are "
                f"[features, samples] with one column per sample, so pass x.T and y.T")
    else:
        return ""
    return (f"; {what} looks row-major ({rows} rows, one per sample): pyggmlr data are [features, samples] "
            f"with one column per sample, so pass {what}.T")


def _loss_fn(loss):
    if callable(loss):
        return loss, True
    if loss == "cross_entropy":
        return ag_softmax_cross_entropy_loss, False
    if loss == "mse":
        return ag_mse_loss, True
    if loss == "mean":
        return (lambda out, y: ag_mean(out)), True
    if loss == "sum":
        return (lambda out, y: ag_sum(out)), True
    if isinstance(loss, str) and loss in _EXTRA_LOSSES:
        return _EXTRA_LOSSES[loss], True
    raise PyggmlrValueError(f"ag_fit: unknown loss {loss!r}; use 'cross_entropy', 'mse', 'mean', 'sum', "
                            f"{', '.join(repr(k) for k in _EXTRA_LOSSES)} or a callable(output, y) -> 1x1 tensor")


# the losses beyond ggml-opt's (ops_loss.py), each against y of the output's shape
_EXTRA_LOSSES = {"binary_cross_entropy": ag_binary_cross_entropy_loss, "bce_with_logits": ag_bce_with_logits_loss,
                 "huber": ag_huber_loss, "mae": ag_mae_loss}


# ---------------------------------------------------------------------------------------------
# statistics as ggml reports them

def _loss_stats(values, weights, per_datapoint):
    """Mean of per-batch losses (weighted by batch size; equal weights for full batches) and the
    standard error of the per-batch values (ggml_opt_result_loss); a sum loss reports the total.
    Computed by the C core (pg_loss_stats), the same function R's ag_fit calls."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if v.shape != w.shape:
        raise PyggmlrValueError(f"loss statistics: {v.size} values but {w.size} weights")
    out = _core.ffi.new("double[2]")
    _core.check(_core.lib.pg_loss_stats(_core.ffi.cast("double *", v.ctypes.data), _core.ffi.cast("double *", w.ctypes.data),
                                        v.size, int(bool(per_datapoint)), out))
    return out[0], out[1]


def _acc_stats(ncorrect, ndata):
    """Accuracy and its standard error (ggml_opt_result_accuracy), from the core (pg_acc_stats)."""
    if ncorrect is None:
        return math.nan, math.nan
    out = _core.ffi.new("double[2]")
    _core.check(_core.lib.pg_acc_stats(int(ncorrect), int(ndata), out))
    return out[0], out[1]


# ---------------------------------------------------------------------------------------------
# history

_KEYS = ("epoch", "loss", "loss_unc", "accuracy", "accuracy_unc", "val_loss", "val_loss_unc",
         "val_accuracy", "val_accuracy_unc", "lr", "time_train", "time_val")


class History:
    """Per-epoch results of ag_fit (1-based epochs). Attributes are lists, one value per epoch:
    loss, loss_unc, accuracy, accuracy_unc, val_loss, val_loss_unc, val_accuracy,
    val_accuracy_unc (NaN where not applicable), lr, time_train, time_val (seconds).
    stopped_epoch: the epoch early stopping (or a callback) ended the run at, else None."""

    def __init__(self) -> None:
        for k in _KEYS:
            setattr(self, k, [])
        self.stopped_epoch: Optional[int] = None
        self.best_epoch: Optional[int] = None

    def _append(self, logs):
        for k in _KEYS:
            getattr(self, k).append(logs.get(k, math.nan))

    def __len__(self):
        return len(self.epoch)

    def as_dict(self):
        """All per-epoch lists plus stopped_epoch and best_epoch as a plain dict (JSON-able)."""
        d = {k: list(getattr(self, k)) for k in _KEYS}
        d["stopped_epoch"], d["best_epoch"] = self.stopped_epoch, self.best_epoch
        return d

    @classmethod
    def from_dict(cls, d):
        h = cls()
        for k in _KEYS:
            setattr(h, k, [(math.nan if v is None else v) for v in d.get(k, [])])
        h.stopped_epoch, h.best_epoch = d.get("stopped_epoch"), d.get("best_epoch")
        return h

    def table(self):
        """The per-epoch table as text: loss, accuracy, val_loss, val_accuracy (each with its
        uncertainty, columns only when present) and the epoch's time."""
        has_val = any(not math.isnan(v) for v in self.val_loss)
        has_acc = any(not math.isnan(v) for v in self.accuracy)
        head = f"{'epoch':>5}  {'loss':>18}"
        if has_acc:
            head += f"  {'accuracy':>17}"
        if has_val:
            head += f"  {'val_loss':>18}"
            if has_acc:
                head += f"  {'val_accuracy':>17}"
        head += f"  {'time':>7}"
        lines = [head]
        for i, e in enumerate(self.epoch):
            s = f"{e:>5}  {_pm(self.loss[i], self.loss_unc[i])}"
            if has_acc:
                s += f"  {_pm_pct(self.accuracy[i], self.accuracy_unc[i])}"
            if has_val:
                s += f"  {_pm(self.val_loss[i], self.val_loss_unc[i])}"
                if has_acc:
                    s += f"  {_pm_pct(self.val_accuracy[i], self.val_accuracy_unc[i])}"
            s += f"  {self.time_train[i] + self.time_val[i]:6.2f}s"
            lines.append(s)
        return "\n".join(lines)

    def __repr__(self):
        if not self.epoch:
            return "<History: no epochs>"
        return f"<History: {len(self)} epochs>\n" + self.table()

    def plot(self, path=None, show=False):
        """Loss curves (train and validation; accuracy on a second panel when available) with
        matplotlib. Saves to path when given; returns the figure."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("History.plot() needs matplotlib (pip install matplotlib)") from None
        has_acc = any(not math.isnan(v) for v in self.accuracy)
        fig, axes = plt.subplots(1, 2 if has_acc else 1, figsize=(10 if has_acc else 6, 4), squeeze=False)
        ax = axes[0][0]
        ep = np.asarray(self.epoch)
        for key, lab in (("loss", "train"), ("val_loss", "validation")):
            v, u = np.asarray(getattr(self, key), float), np.asarray(getattr(self, key + "_unc"), float)
            if np.all(np.isnan(v)):
                continue
            ax.plot(ep, v, label=lab)
            ax.fill_between(ep, v - np.nan_to_num(u), v + np.nan_to_num(u), alpha=0.2)
        ax.set_xlabel("epoch")
        ax.set_ylabel("loss")
        ax.legend()
        if has_acc:
            ax = axes[0][1]
            for key, lab in (("accuracy", "train"), ("val_accuracy", "validation")):
                v = np.asarray(getattr(self, key), float)
                if not np.all(np.isnan(v)):
                    ax.plot(ep, v, label=lab)
            ax.set_xlabel("epoch")
            ax.set_ylabel("accuracy")
            ax.legend()
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=100)
        if show:
            plt.show()
        else:
            plt.close(fig)
        return fig


def _pm(v, u):
    if math.isnan(v):
        return f"{'-':>18}"
    return f"{v:9.5f} ± {u:<7.5f}" if not math.isnan(u) else f"{v:9.5f}{'':9}"


def _pm_pct(v, u):
    if math.isnan(v):
        return f"{'-':>17}"
    return f"{100 * v:6.2f}% ± {100 * (0 if math.isnan(u) else u):5.2f}%"


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

    def __init__(self, patience: int = 5, min_delta: float = 0.0, restore_best: bool = True,
                 monitor: Optional[str] = None) -> None:
        if isinstance(patience, bool) or int(patience) != patience or patience < 1:
            raise PyggmlrValueError(f"ag_early_stopping: patience must be an integer >= 1, got {patience!r}")
        self.patience, self.min_delta, self.restore_best = int(patience), float(min_delta), bool(restore_best)
        self.monitor = monitor
        self.best, self.best_epoch, self.wait, self.stopped_epoch = math.inf, None, 0, None
        self._best_weights = None

    def on_train_begin(self, fit):
        self._fit = fit

    def on_epoch_end(self, epoch, logs):
        key = self.monitor or ("val_loss" if not math.isnan(logs.get("val_loss", math.nan)) else "loss")
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
            self._best_weights if self._best_weights is not None else None)

    def load_state(self, st, arrays=None):
        """Restore the counters (and best weights, when given) saved by state()."""
        self.best = math.inf if st.get("best") is None else float(st["best"])
        self.best_epoch, self.wait = st.get("best_epoch"), int(st.get("wait", 0))
        if arrays is not None:
            self._best_weights = arrays

    def __repr__(self):
        return f"ag_early_stopping | patience={self.patience} | min_delta={self.min_delta:g} | restore_best={self.restore_best}"


class ag_model_checkpoint(Callback):
    """Save model + optimizer state + epoch (+ everything ag_fit needs to resume: the run's seed,
    the random stream, history, callback states) to `path` every `every` epochs and at the last
    one. Continue with ag_fit(..., resume_from=path). `path` may contain "{epoch}"."""

    def __init__(self, path: Union[str, os.PathLike], every: int = 1) -> None:
        if isinstance(every, bool) or int(every) != every or every < 1:
            raise PyggmlrValueError(f"ag_model_checkpoint: every must be an integer >= 1, got {every!r}")
        self.path, self.every = str(path), int(every)
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


# ---------------------------------------------------------------------------------------------
# the loop

class _Fit:
    """Run state shared with callbacks."""

    def __init__(self, model, optimizer, history, nepoch, settings):
        self.model, self.optimizer, self.history, self.nepoch = model, optimizer, history, nepoch
        self.settings = settings
        self.callbacks = []
        self.stop = False
        self.stream: Any = None  # the run's random stream (its state goes into checkpoints)

    def save_checkpoint(self, path, epoch):
        from .io import _save
        cb_states, cb_arrays = [], {}
        for i, cb in enumerate(self.callbacks):
            st = getattr(cb, "state", None)
            if callable(st):
                js, arrays = st()
                cb_states.append(js)
                if arrays is not None:
                    ps, bs = arrays
                    for k, v in ps.items():
                        cb_arrays[f"callback{i}.param.{k}"] = v
                    for k, v in bs.items():
                        cb_arrays[f"callback{i}.buffer.{k}"] = v
            else:
                cb_states.append(None)
        extra = {"fit": {"settings": self.settings, "history": self.history.as_dict(),
                         "rng_state": self.stream.get_state().tolist(), "callbacks": cb_states}}
        _save(self.model, path, optimizer=self.optimizer, epoch=epoch, extra=extra, more=cb_arrays)




def _make_optimizer(optimizer, params, lr):
    if isinstance(optimizer, Optimizer):
        return optimizer
    if isinstance(optimizer, str):
        o = optimizer.lower()
        if o in ("adamw", "adam"):
            return optimizer_adam(params, lr=lr)
        if o == "sgd":
            return optimizer_sgd(params, lr=lr)
    raise PyggmlrValueError(f"ag_fit: unknown optimizer {optimizer!r}; use 'adamw', 'sgd' or an optimizer object")


def _apply_hyper(opt, hp, epoch):
    if hp is None:
        return
    if not isinstance(hp, dict):
        raise ArgumentError(f"ag_fit: opt_params(epoch) must return a dict, got {type(hp).__name__} at epoch {epoch}")
    for k, v in hp.items():
        name = _HYPER_ALIASES.get(k, k)
        try:
            getattr(opt, name)
        except AttributeError:
            raise PyggmlrValueError(f"ag_fit: opt_params returned unknown hyper-parameter {k!r} for {type(opt).__name__}") from None
        setattr(opt, name, v)


def _builtin_model(model):
    """True when every layer is a built-in pyggmlr layer (whose whole forward runs in C ops a
    compiled graph replays), so ag_fit can compile its step by default."""
    from . import nn
    if isinstance(model, nn.ag_sequential):
        return all(_builtin_model(m) for m in model.layers)
    return type(model) in (nn.ag_linear, nn.ag_dropout, nn.ag_batch_norm, nn.ag_layer_norm, nn.ag_embedding,
                           nn.ag_multihead_attention)


class _StaticSteps:
    """ag_fit's compiled graphs: one "opt" graph for the training batches (all of batch_size
    columns: a partial last batch is never trained on) recorded in training mode, and
    "forward" graphs for validation recorded in eval mode, one per batch width (the full one
    and the last partial batch). Recording leaves the model as it was: no optimizer step, no
    random draws and the buffers (batch-norm running statistics) put back, so the run equals
    the eager one bit for bit."""

    def __init__(self, model, lossfn, opt, has_y):
        self.model, self.lossfn, self.opt, self.has_y = model, lossfn, opt, has_y
        self.train = None
        self.val = {}

    def _record(self, xv, yv, build):
        from .compile import ag_compile
        holder = {}

        def fn(x, y=None):
            out = _forward(self.model, x)
            holder["out"] = out
            return self.lossfn(out, y)
        bufs = {k: t.data for k, t in _buffers(self.model).items() if isinstance(t, Tensor)}
        ins = [xv] + ([yv] if self.has_y else [])  # the plan's batch tensors: each gather refills the graph's inputs
        try:
            step = ag_compile(fn, *ins, build=build, optimizer=self.opt if build == "opt" else None)
        finally:
            for k, t in _buffers(self.model).items():
                if k in bufs:
                    t.data = bufs[k]
        return step, holder["out"]

    def train_step(self, xv, yv):
        """Loss of one replayed training step, and the model output tensor (reused buffer)."""
        if self.train is None:
            self.train = self._record(xv, yv, "opt")
        step, out = self.train
        return (step(xv, yv) if self.has_y else step(xv)), out

    def val_step(self, xv, yv):
        w = xv.shape[1]  # one graph per width (and per batch tensor: the plan reuses one per width)
        if w not in self.val:
            self.val[w] = self._record(xv, yv, "forward")
        step, out = self.val[w]
        return (step(xv, yv) if self.has_y else step(xv)).item(), out


def ag_fit(model: Any, x: Any, y: Any = None, loss: Union[str, Callable[[Tensor, Any], Tensor]] = "cross_entropy",
           optimizer: Union[str, Optimizer] = "adamw", opt_params: Optional[Callable[[int], dict]] = None,
           nepoch: int = 30, batch_size: int = 32, nbatch_logical: Optional[int] = None, val_split: float = 0.0,
           shuffle: bool = True, callbacks: Sequence[Any] = (), silent: bool = False, seed: Optional[int] = None,
           lr: float = 1e-3, resume_from: Optional[Union[str, os.PathLike]] = None, distributed: bool = False,
           static: Optional[bool] = None, progress: str = "auto") -> History:
    """Train `model` on x [features, n] (samples are columns) and y; returns a History.

    loss: "cross_entropy" (fused softmax + CE on the model's logits; y are 0-based class ids, a
    vector of n, or a one-hot [classes, n] matrix), "mse" (y [outputs, n]), "mean" / "sum" (of the
    model's output; y unused), "binary_cross_entropy" (the output are probabilities: end the model
    in a sigmoid), "bce_with_logits", "huber" (delta 1), "mae" (ag_binary_cross_entropy_loss ...
    ag_mae_loss against y [outputs, n]; no accuracy) or a callable(output, y_batch_tensor) -> 1x1
    tensor (e.g. lambda out, y: ag_weighted_mse_loss(out, y, w) for a weighted MSE).
    optimizer: "adamw" (optimizer_adam with decoupled weight decay, default 0 as in ggml),
    "sgd", or an optimizer object built on the model's parameters (lr is then ignored; ag_fit
    sets its accumulate_steps to nbatch_logical / batch_size).
    opt_params: callable(epoch) -> dict of hyper-parameters (lr/alpha, weight_decay/wd, beta1,
    momentum, ...) applied at the start of each epoch (1-based).
    batch_size: samples per forward/backward (physical batch). nbatch_logical: samples per
    optimizer step, a multiple of batch_size (default batch_size); the micro-batch gradients of
    one logical batch are averaged, so each step applies exactly that logical batch's gradient.
    Training data that do not fill a whole logical batch are left out of that epoch (as ggml).
    val_split: fraction held out at the end of the data (after one shuffle when shuffle) and
    evaluated in eval mode after every epoch (all of it, in batches of batch_size).
    shuffle: reshuffle the training part every epoch. seed: the run draws from a random stream
    of its own, seeded as set.seed(seed) would be (the process-wide stream is left alone, and
    fits in several threads are as reproducible as one after another); None: from the current
    stream (ggml_set_seed). The draws, the same in R: sample.int(n) once when shuffle (the
    training part is its first n - n_val entries, validation the rest), then per epoch
    sample.int(n_train) over the training part, and the dropout masks of the forward passes.
    callbacks: ag_early_stopping, ag_model_checkpoint, Callback objects or functions fn(epoch, logs)
    (returning False stops). silent: no progress display (the same as progress="none"; it wins).
    progress: "auto" (default): one bar for the whole run (tqdm when installed; epoch, running
    loss / accuracy, the last epoch's val_loss / val_acc, ETA) and a compact line per finished
    epoch above it, on stderr, shown only in interactive sessions (a terminal on stderr, IPython);
    "bar": always; "none": never (as R's ag_fit). resume_from: a checkpoint written by
    ag_model_checkpoint; training continues after its epoch exactly as the uninterrupted run would.
    distributed: data-parallel over MPI ranks (launch with mpirun; see docs/distributed.md):
    batch_size and nbatch_logical are per rank, rank 0's weights are broadcast first, gradients
    are averaged every step, and only rank 0 prints.
    static: run each training step as one replay of a compiled graph (ag_compile, build
    "opt") and validation through compiled "forward" graphs (one per batch width: the last,
    partial validation batch gets its own), with exactly the eager results (same kernels, same
    order, same random draws, batch-norm statistics updated once per step). None (default):
    static when the model is made of built-in layers, the loss is a built-in name and the run
    is not distributed; otherwise eager. True: require it (raises when the step cannot be
    compiled or with distributed). False: the eager tape.
    The model is in train mode while training and in eval mode when ag_fit returns."""
    from .fit_plan import FitPlan
    from .fit_progress import FitProgress, progress_mode
    from .random import Generator, _seed_int

    pmode = progress_mode(progress, silent)
    lossfn, _ = _loss_fn(loss)
    loss_name = loss if isinstance(loss, str) else "callable"
    per_datapoint = loss_name != "sum"
    for name, v in (("nepoch", nepoch), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise PyggmlrValueError(f"ag_fit: {name} must be an integer >= 1, got {v!r}")
    nepoch, batch_size = int(nepoch), int(batch_size)
    if nbatch_logical is None:
        nbatch_logical = batch_size
    if isinstance(nbatch_logical, bool) or not isinstance(nbatch_logical, (int, np.integer)) or nbatch_logical < 1:
        raise PyggmlrValueError(f"ag_fit: nbatch_logical must be an integer >= 1, got {nbatch_logical!r}")
    nbatch_logical = int(nbatch_logical)
    if nbatch_logical % batch_size:
        raise PyggmlrValueError(f"ag_fit: nbatch_logical ({nbatch_logical}) must be a multiple of batch_size ({batch_size})")
    accum = nbatch_logical // batch_size
    val_split = float(val_split)
    if not 0.0 <= val_split < 1.0:
        raise PyggmlrValueError(f"ag_fit: val_split must be in [0, 1), got {val_split}")
    if opt_params is not None and not callable(opt_params):
        raise ArgumentError("ag_fit: opt_params must be a callable(epoch) -> dict or None")

    X = _as_cols(x, "x")
    n = X.shape[1]
    if y is None and loss_name in ("cross_entropy", "mse", *_EXTRA_LOSSES):
        raise PyggmlrValueError(f"ag_fit: loss {loss_name!r} needs targets y")
    Y = None if y is None else _as_cols(y, "y")
    if Y is not None and Y.shape[1] != n:
        raise ShapeError(f"ag_fit: x has {n} samples (columns) but y has {Y.shape[1]}" + _row_major_hint(X, Y))
    classify = loss_name == "cross_entropy"

    params = _params(model)
    if not params:
        raise PyggmlrValueError("ag_fit: the model has no parameters to train")
    dtype = _model_dtype(model)
    opt = _make_optimizer(optimizer, params, lr)
    opt.accumulate_steps = accum
    opt.accum_count = 0
    take = None
    if distributed:
        from .distributed import ag_distributed_setup, rank
        opt, batch_size, nbatch_logical, take = ag_distributed_setup(model, opt, batch_size, nbatch_logical)
        pmode = "none" if rank() != 0 else pmode  # only rank 0 prints

    if static is None:
        static = not distributed and isinstance(loss, str) and _builtin_model(model)
    elif static and distributed:
        raise PyggmlrValueError("ag_fit: static=True cannot be combined with distributed=True (the compiled step has no gradient all-reduce)")
    static_steps = _StaticSteps(model, lossfn, opt, Y is not None) if static else None

    settings = {"n": n, "batch_size": batch_size, "nbatch_logical": nbatch_logical, "val_split": val_split,
                "shuffle": bool(shuffle), "loss": loss_name, "seed": None, "split_state": None}
    history = History()
    start_epoch = 1
    resume = None
    if resume_from is not None:
        from .io import _load_checkpoint
        resume = _load_checkpoint(resume_from, model, opt)
        fs = resume["extra"].get("fit") if isinstance(resume["extra"], dict) else None
        if not isinstance(fs, dict):
            raise PyggmlrValueError(f"ag_fit: {resume_from!r} is not an ag_fit checkpoint (no training state)")
        saved = fs["settings"]
        for k in ("n", "batch_size", "nbatch_logical", "val_split", "shuffle", "loss"):
            if saved.get(k) != settings[k]:
                raise PyggmlrValueError(f"ag_fit: cannot resume: {k} was {saved.get(k)!r} in the checkpoint, now {settings[k]!r}")
        settings["seed"], settings["split_state"] = saved.get("seed"), saved.get("split_state")
        history = History.from_dict(fs["history"])
        start_epoch = int(resume["epoch"]) + 1
        opt.accumulate_steps = accum
    elif seed is not None:
        settings["seed"] = _seed_int(seed, "ag_fit")
    stream = Generator(settings["seed"]) if settings["seed"] is not None else Generator.current()
    # the split, the shuffles and the batches live in the core (fit_plan.py, native/fit.c)
    try:
        plan = FitPlan(ag_tensor(X, dtype=dtype), None if Y is None else ag_tensor(Y, dtype=dtype), classify,
                       batch_size, nbatch_logical, val_split, shuffle, stream,
                       settings["split_state"] if resume is not None else None)
    except (TypeError, ValueError) as e:
        if resume is not None and "state" in str(e).lower():
            raise PyggmlrValueError(f"ag_fit: {resume_from!r} holds an unusable random-stream state") from None
        raise
    if take is not None:
        from .distributed import ag_mpi_rank, ag_mpi_world_size
        plan.shard(ag_mpi_rank(), ag_mpi_world_size())
    settings["split_state"] = plan.split_state()
    if resume is not None:
        try:
            stream.set_state(fs["rng_state"])  # type: ignore[index]  # fs is a dict when resuming
        except (TypeError, ValueError, KeyError):
            raise PyggmlrValueError(f"ag_fit: {resume_from!r} holds an unusable random-stream state") from None

    fit = _Fit(model, opt, history, nepoch, settings)
    fit.stream = stream
    cbs = []
    for cb in callbacks if not callable(callbacks) else (callbacks,):
        if isinstance(cb, Callback) or hasattr(cb, "on_epoch_end"):
            cbs.append(cb)
        elif callable(cb):
            cbs.append(_FnCallback(cb))
        else:
            raise ArgumentError(f"ag_fit: callbacks must be Callback objects or functions, got {type(cb).__name__}")
    fit.callbacks = cbs
    for cb in cbs:
        if hasattr(cb, "on_train_begin"):
            cb.on_train_begin(fit)
    if resume is not None:
        states = (fs or {}).get("callbacks") or []
        for i, cb in enumerate(cbs):
            if i < len(states) and states[i] is not None and hasattr(cb, "load_state"):
                arrays = resume["more"].get(i)
                cb.load_state(states[i], arrays)

    step = 0
    replay = static_steps is not None and pmode == "none" and not any(hasattr(cb, "on_batch_end") for cb in cbs)
    prog = FitProgress(pmode, plan.running, max(0, nepoch - start_epoch + 1) * plan.n_batches, nepoch,
                       start_epoch)
    in_stream = stream.active()  # dropout and user code draw from the run's stream
    in_stream.__enter__()
    try:
        for epoch in range(start_epoch, nepoch + 1):
            if opt_params is not None:
                _apply_hyper(opt, opt_params(epoch), epoch)
            logs = {"epoch": epoch, "lr": float(getattr(opt, "lr", math.nan))}
            plan.epoch_begin()
            _set_mode(model, True)
            t0 = time.perf_counter()
            prog.epoch_begin(epoch)
            for b in range(plan.n_batches):
                if replay and static_steps is not None and static_steps.train is not None:
                    # nothing runs between batches: the rest of the epoch in one core call
                    step += plan.run_static(False, b, plan.n_batches, *static_steps.train)
                    break
                xb, yb = plan.batch(False, b)
                if static_steps is not None:
                    lval, out = static_steps.train_step(xb, yb)
                else:
                    with with_grad_tape():
                        out = _forward(model, xb)
                        lv = lossfn(out, yb)
                    grads = backward(lv)
                    opt.step(grads, sum_grads=True)  # one map per micro-batch: the optimizer sums them
                    opt.zero_grad()
                    del grads
                    lval = lv.item()
                    del lv
                plan.record(False, lval, out)  # accuracy: arg-max in C, no copy of out
                del out
                if static_steps is None:
                    ag_tape_clear()
                step += 1
                prog.tick()
                for cb in cbs:
                    if hasattr(cb, "on_batch_end"):
                        cb.on_batch_end(step, {"epoch": epoch, "batch": b + 1, "loss": lval})
                b += 1
            logs["time_train"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            if plan.n_val:
                _set_mode(model, False)
                with ag_no_grad():
                    for b in range(plan.n_val_batches):
                        w = min(batch_size, plan.n_val - b * batch_size)
                        if static_steps is not None and w in static_steps.val:  # recorded: in C
                            plan.run_static(True, b, b + 1, *static_steps.val[w])
                            continue
                        xb, yb = plan.batch(True, b)
                        if static_steps is not None:
                            lval, out = static_steps.val_step(xb, yb)
                        else:
                            out = _forward(model, xb)
                            lval = lossfn(out, yb).item()
                        plan.record(True, lval, out)
                _set_mode(model, True)
            logs.update(plan.epoch_end(per_datapoint))
            logs["time_val"] = time.perf_counter() - t1
            history._append(logs)
            prog.epoch_end(logs)
            stop = False
            for cb in cbs:
                if cb.on_epoch_end(epoch, dict(logs)) is False:
                    stop = True
            if stop or fit.stop:
                history.stopped_epoch = epoch
                break
        for cb in cbs:
            if hasattr(cb, "on_train_end"):
                cb.on_train_end(fit)
    finally:
        prog.close()
        in_stream.__exit__(None, None, None)
        opt.zero_grad()
        ag_tape_clear()
        _set_mode(model, False)
    return history


def ag_predict(model: Any, x: Any, batch_size: int = 256) -> np.ndarray:
    """The model's outputs for x [features, n] in eval mode, without a tape, as a numpy
    [outputs, n] array (computed in batches of batch_size columns). The model's mode is put
    back afterwards."""
    X = _as_cols(x, "x")
    dtype = _model_dtype(model)
    was_training = bool(getattr(model, "training", False))
    _set_mode(model, False)
    outs = []
    try:
        with ag_no_grad():
            for s in range(0, X.shape[1], int(batch_size)):
                xb = ag_tensor(X[:, s:s + int(batch_size)], dtype=dtype)
                outs.append(_forward(model, xb).numpy())
    finally:
        if was_training:
            _set_mode(model, True)
    if not outs:
        raise ShapeError("ag_predict: x has no samples")
    return np.asfortranarray(np.concatenate(outs, axis=1))


def ag_accuracy(model: Any, x: Any, y: Any, batch_size: int = 256) -> float:
    """Fraction of samples whose arg-max output row equals y (0-based ids or one-hot columns)."""
    out = ag_predict(model, x, batch_size=batch_size)
    Y = _as_cols(y, "y")
    if Y.shape[1] != out.shape[1]:
        raise ShapeError(f"ag_accuracy: x has {out.shape[1]} samples but y has {Y.shape[1]}")
    labels = Y[0].astype(np.int64) if Y.shape[0] == 1 else np.argmax(Y, axis=0)
    return float(np.mean(np.argmax(out, axis=0) == labels))
