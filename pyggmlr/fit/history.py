"""ag_fit's History: per-epoch results, table, plot (statistics: the core's native/stats.c)."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from typing import Any, Dict, List, Optional

import numpy as np

from .._args import check_flag
from .._core import ffi, lib, text
from ..errors import ArgumentError, PyggmlrValueError

__all__ = ["History"]

_NLOG = lib.PG_FIT_LOG_COUNT  # the per-epoch values after epoch, in the core's order


# ---------------------------------------------------------------------------------------------
# history


class History:
    """Per-epoch results of ag_fit (1-based epochs). Attributes are lists, one value per epoch:
    loss, loss_unc, accuracy, accuracy_unc, val_loss, val_loss_unc, val_accuracy,
    val_accuracy_unc (NaN where not applicable), lr, time_train, time_val (seconds).
    stopped_epoch: the epoch early stopping (or a callback) ended the run at, else None.
    metrics: the names of ag_fit(metrics=)'s columns ("auc", then "val_auc" with validation
    data, ...), each also an attribute: one value per epoch over the whole epoch's outputs."""

    # for type checkers: the per-epoch lists, then two per run (names and order: the core's, _KEYS)
    epoch: List[int]
    loss: List[float]
    loss_unc: List[float]
    accuracy: List[float]
    accuracy_unc: List[float]
    val_loss: List[float]
    val_loss_unc: List[float]
    val_accuracy: List[float]
    val_accuracy_unc: List[float]
    lr: List[float]
    time_train: List[float]
    time_val: List[float]
    stopped_epoch: Optional[int]
    best_epoch: Optional[int]

    def __init__(self) -> None:
        for k in _KEYS:
            setattr(self, k, [])
        self.stopped_epoch = self.best_epoch = None
        self.metrics: List[str] = []

    def _set_metrics(self, names):
        """ag_fit(metrics=)'s columns, empty lists for a new run (kept when resuming)."""
        for k in names:
            if k not in self.metrics:
                setattr(self, k, [math.nan] * len(self.epoch))
                self.metrics.append(k)

    def _append(self, logs):
        for k in _KEYS + tuple(self.metrics):
            getattr(self, k).append(logs.get(k, math.nan))

    def __len__(self):
        return len(self.epoch)

    def as_dict(self):
        """All per-epoch lists plus stopped_epoch and best_epoch as a plain dict (JSON-able)."""
        d: Dict[str, Any] = {k: list(getattr(self, k)) for k in _KEYS + tuple(self.metrics)}
        d["stopped_epoch"], d["best_epoch"] = self.stopped_epoch, self.best_epoch
        return d

    @classmethod
    def from_dict(cls, d):
        """A History from as_dict()'s form (a dict of per-epoch lists, stopped_epoch, best_epoch);
        ArgumentError for anything else, naming the key."""
        if not isinstance(d, Mapping):
            raise ArgumentError(f"History.from_dict: d must be a dict, got {type(d).__name__}")
        for k, v in d.items():  # the per-epoch columns: lists (None: NaN, as JSON writes it)
            if k not in ("stopped_epoch", "best_epoch") and (
                isinstance(v, (str, bytes, Mapping)) or not isinstance(v, (list, tuple, np.ndarray))
            ):
                raise ArgumentError(
                    f"History.from_dict: {k!r} must be a list of per-epoch values, got {type(v).__name__}"
                )
        h = cls()
        h.metrics = [k for k in d if k not in _KEYS and k not in ("stopped_epoch", "best_epoch")]
        for k in _KEYS + tuple(h.metrics):
            setattr(h, k, [(math.nan if v is None else v) for v in d.get(k, [])])
        h.stopped_epoch, h.best_epoch = d.get("stopped_epoch"), d.get("best_epoch")
        return h

    def table(self):
        """The per-epoch table as text: loss, accuracy, val_loss, val_accuracy (each with its
        uncertainty, columns only when present) and the epoch's time (the core's format, the
        one R's print shows)."""
        return self._format(None)

    def __repr__(self):
        return self._format("History")

    def _format(self, name):
        n, cols = len(self.epoch), [getattr(self, k) for k in _KEYS[1:]]
        if any(len(c) != n for c in cols):  # as R's print: hand-made histories included
            raise ArgumentError(
                f"{name or 'History'}: the history's columns are not {_NLOG + 1} numeric lists "
                "of one length per epoch"
            )
        if any(len(getattr(self, k, ())) != n for k in self.metrics):  # as R's print
            raise ArgumentError(
                f"{name or 'History'}: the metric columns are not numeric lists of one length "
                "per epoch"
            )
        names = [ffi.new("char[]", k.encode()) for k in self.metrics]  # metrics=' table below
        return text(  # the core's layout, R's print's too
            lib.pg_fit_history_text,
            ffi.NULL if name is None else name.encode(),
            _doubles(self.epoch),
            _doubles(cols),  # [k][i]: epoch i's log k
            n,
            _num(self.stopped_epoch),
            _num(self.best_epoch),
            " \u00b1 ".encode(),
            len(names),
            ffi.new("char *[]", names or 1),
            _doubles([getattr(self, k) for k in self.metrics]),
        )

    def plot(self, path=None, show=False):
        """Loss curves (train and validation), then a panel for accuracy when available and one
        per ag_fit(metrics=) metric (train and val_), with matplotlib. Saves to path when given;
        returns the figure."""
        if not self.epoch:  # as R's plot.ag_history
            raise PyggmlrValueError("History.plot: no epochs to plot")
        if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
            raise ArgumentError(
                f"History.plot: path must be a file name (a single string), got {type(path).__name__}"
            )
        show = check_flag(show, "History.plot", "show")
        try:
            import matplotlib.pyplot as plt
            from matplotlib.ticker import MaxNLocator
        except ImportError:
            raise ImportError("History.plot() needs matplotlib (pip install matplotlib)") from None
        panels = ["loss"] + (["accuracy"] if any(not math.isnan(v) for v in self.accuracy) else [])
        panels += [k for k in self.metrics if not k.startswith("val_")]
        ncol = min(len(panels), 3)
        nrow = -(-len(panels) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4 + 3 * ncol, 4 * nrow), squeeze=False)
        ep = np.asarray(self.epoch)
        for i, name in enumerate(panels):
            ax = axes[i // ncol][i % ncol]
            for key, lab in ((name, "train"), ("val_" + name, "validation")):
                v = np.asarray(getattr(self, key, [math.nan] * len(ep)), float)
                if np.all(np.isnan(v)):
                    continue
                ax.plot(ep, v, label=lab)
                if name == "loss":  # the loss's uncertainty band
                    u = np.nan_to_num(np.asarray(getattr(self, key + "_unc"), float))
                    ax.fill_between(ep, v - u, v + u, alpha=0.2)
            ax.set_xlabel("epoch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # whole epochs, never 1.5
            ax.set_ylabel(name)
            ax.legend()
        for j in range(len(panels), nrow * ncol):
            axes[j // ncol][j % ncol].set_visible(False)
        fig.tight_layout()
        if path is not None:
            fig.savefig(os.fsdecode(path), dpi=100)
        if show:
            plt.show()
        else:
            plt.close(fig)
        return fig


# the per-epoch lists: epoch, then the core's log columns in its order
_KEYS = ("epoch",) + tuple(ffi.string(lib.pg_fit_log_name(k)).decode() for k in range(_NLOG))


def _doubles(a):
    """a as the core's doubles (the array lives as long as the result)"""
    return ffi.from_buffer("double[]", np.ascontiguousarray(a, dtype=np.float64))


def _num(v):
    """stopped_epoch / best_epoch for the core: a number, or NaN (none)"""
    return float(v) if isinstance(v, numbers.Real) else math.nan
