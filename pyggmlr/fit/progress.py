"""ag_fit's progress display, as R's (r/R/fit_progress.R): one bar for the whole run (epochs x
batches, tqdm when installed) whose postfix shows the epoch, the running loss / accuracy (from the
core's plan), the last epoch's validation values and the ETA, plus one compact line per finished
epoch written above it. Where nothing can redraw a bar (stderr a file or pipe: scripts' logs, CI,
pytest) it is one line per epoch instead, as keras' progress bar prints only finished epochs there."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Dict, Optional, Tuple

from .._args import plain
from .._core import check, ffi, lib, text
from .callbacks import _log_values

_BAR = {"unit": "batch", "leave": True, "dynamic_ncols": True}  # tqdm's settings besides the file


def _interactive() -> bool:
    """Whether a bar can be redrawn for a person: a terminal on stderr or an IPython shell /
    kernel (R: cli's dynamic console, not while knitting)."""
    ip = sys.modules.get("IPython")
    if ip is not None and getattr(ip, "get_ipython", lambda: None)() is not None:
        return True
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


def progress_mode(progress: Any, silent: bool) -> str:
    """ "bar" (verbose=1), "lines" (verbose=2) or "none" for ag_fit's progress= and silent=
    (silent wins): "auto" and "bar" draw the bar where it can be redrawn, else the lines."""
    name = progress.encode() if isinstance(progress, str) else ffi.NULL
    mode = ffi.new("int *")  # the core's rule and text; "got" shows a string as it is, else repr
    shown = (
        progress if isinstance(progress, str) else repr(plain(progress))
    )  # (str: [1 2] of an array)
    check(lib.pg_fit_progress_parse(name, shown.encode(), bool(silent), mode))
    if mode[0] == lib.PG_FIT_PROGRESS_BAR:
        return "bar" if _interactive() else "lines"
    return "lines" if mode[0] == lib.PG_FIT_PROGRESS_LINES else "none"


def epoch_line(logs: Dict[str, Any], nepoch: int) -> str:
    """The compact per-epoch line (the core's, as R prints it)."""
    return text(lib.pg_fit_epoch_line, _log_values(logs), int(logs["epoch"]), nepoch)


class FitProgress:
    """tick() after every training batch, epoch_begin(epoch) / epoch_end(logs) around an
    epoch, close() when the run ends; all no-ops when the mode is "none". Without tqdm only
    the per-epoch lines are written (to stderr)."""

    _EVERY = 0.1  # seconds between postfix refreshes: plan.running() is not needed per batch

    def __init__(
        self, mode: str, running: Callable[[], Tuple[float, float]], total: int, nepoch: int,
        first: int = 1,
    ) -> None:  # fmt: skip
        self.on = mode in ("bar", "lines") and total > 0
        # only a bar needs each batch ("lines": the per-epoch lines only): the lines leave a
        # static run its one-call epochs
        self.ticks = self.on and mode == "bar"
        self.running, self.total, self.nepoch, self._first = running, total, nepoch, first
        self.epoch, self.last, self.bar, self._t = 0, ffi.NULL, None, 0.0

    def _status(self) -> str:
        """The bar's status: the running loss / accuracy, the last epoch's validation (the core's)"""
        return text(lib.pg_fit_status_line, *self.running(), self.last)

    def epoch_begin(self, epoch: int) -> None:
        self.epoch = epoch
        desc = f"epoch {epoch}/{self.nepoch}"
        if self.ticks and self.bar is None and epoch == self._first:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=self.total, desc=desc, file=sys.stderr, **_BAR)
        elif self.bar is not None:
            self.bar.set_description_str(desc, refresh=False)

    def tick(self) -> None:
        if self.bar is None:
            return
        now = time.monotonic()
        if now - self._t >= self._EVERY:
            self._t = now
            self.bar.set_postfix_str(self._status(), refresh=False)
        self.bar.update(1)

    def epoch_end(self, logs: Dict[str, Any]) -> None:
        if not self.on:
            return
        self.last = _log_values(logs)
        line = epoch_line(logs, self.nepoch)
        if self.bar is not None:
            self.bar.set_postfix_str(self._status(), refresh=False)
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        bar: Optional[Any]
        bar, self.bar = self.bar, None
        if bar is not None:
            bar.close()
