"""ag_fit's History: per-epoch results, table, plot (statistics: the core's native/stats.c)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from .errors import PyggmlrValueError

__all__ = ["History"]


# ---------------------------------------------------------------------------------------------
# history


class History:
    """Per-epoch results of ag_fit (1-based epochs). Attributes are lists, one value per epoch:
    loss, loss_unc, accuracy, accuracy_unc, val_loss, val_loss_unc, val_accuracy,
    val_accuracy_unc (NaN where not applicable), lr, time_train, time_val (seconds).
    stopped_epoch: the epoch early stopping (or a callback) ended the run at, else None."""

    # declared once, for type checkers and for _KEYS (below): the per-epoch lists, then two per run
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
        self.stopped_epoch = None
        self.best_epoch = None

    def _append(self, logs):
        for k in _KEYS:
            getattr(self, k).append(logs.get(k, math.nan))

    def __len__(self):
        return len(self.epoch)

    def as_dict(self):
        """All per-epoch lists plus stopped_epoch and best_epoch as a plain dict (JSON-able)."""
        d: Dict[str, Any] = {k: list(getattr(self, k)) for k in _KEYS}
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
        # (title, width, cell text of epoch i): loss, then accuracy / val_* when recorded
        cols = [("loss", 18, lambda i: _pm(self.loss[i], self.loss_unc[i]))]
        if has_acc:
            cols.append(("accuracy", 17, lambda i: _pm_pct(self.accuracy[i], self.accuracy_unc[i])))
        if has_val:
            cols.append(("val_loss", 18, lambda i: _pm(self.val_loss[i], self.val_loss_unc[i])))
            if has_acc:
                cols.append(
                    (
                        "val_accuracy",
                        17,
                        lambda i: _pm_pct(self.val_accuracy[i], self.val_accuracy_unc[i]),
                    )
                )
        lines = [f"{'epoch':>5}" + "".join(f"  {t:>{w}}" for t, w, _ in cols) + f"  {'time':>7}"]
        for i, e in enumerate(self.epoch):
            cells = "".join(f"  {cell(i)}" for _, _, cell in cols)
            lines.append(f"{e:>5}{cells}  {self.time_train[i] + self.time_val[i]:6.2f}s")
        return "\n".join(lines)

    def __repr__(self):
        if not self.epoch:
            return "<History: no epochs>"
        return f"<History: {len(self)} epochs>\n" + self.table()

    def plot(self, path=None, show=False):
        """Loss curves (train and validation; accuracy on a second panel when available) with
        matplotlib. Saves to path when given; returns the figure."""
        if not self.epoch:  # as R's plot.ag_history
            raise PyggmlrValueError("History.plot: no epochs to plot")
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("History.plot() needs matplotlib (pip install matplotlib)") from None
        has_acc = any(not math.isnan(v) for v in self.accuracy)
        fig, axes = plt.subplots(
            1, 2 if has_acc else 1, figsize=(10 if has_acc else 6, 4), squeeze=False
        )
        ax = axes[0][0]
        ep = np.asarray(self.epoch)
        for key, lab in (("loss", "train"), ("val_loss", "validation")):
            v, u = (
                np.asarray(getattr(self, key), float),
                np.asarray(getattr(self, key + "_unc"), float),
            )
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


# the per-epoch lists, in History's order: all its fields but stopped_epoch and best_epoch
_KEYS = tuple(k for k in History.__annotations__ if k not in ("stopped_epoch", "best_epoch"))


def _pm(v, u):
    if math.isnan(v):
        return f"{'-':>18}"
    return f"{v:9.5f} ± {u:<7.5f}" if not math.isnan(u) else f"{v:9.5f}{'':9}"


def _pm_pct(v, u):
    if math.isnan(v):
        return f"{'-':>17}"
    return f"{100 * v:6.2f}% ± {100 * (0 if math.isnan(u) else u):5.2f}%"
