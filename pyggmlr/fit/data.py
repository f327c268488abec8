"""What ag_fit accepts as data besides arrays, keras style: an ag_dataloader as x, and
``validation_data=(x_val, y_val)`` (or a loader), plus keras' ``verbose`` levels.

Precedence (documented in ag_fit): a loader's x / y, batch_size and shuffle become the fit's
(its seed too when ag_fit has none); passing ag_fit's own batch_size / shuffle other than their
defaults, or y, together with a loader is an error rather than a silent choice. The batching
stays in the core's plan (plan.py): validation data are appended after the training data and
held out as the plan's validation part with the split fixed (never shuffled into the training
part); the rules on their shapes are the core's (pg_fit_val_join), which appends them in the
plan (pg_fit_new)."""

from __future__ import annotations

import numbers
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _core
from .._args import check_flag, plain
from .._core import NULL, ffi, lib
from ..data import ag_dataloader
from .labels import code_labels, encode_labels
from .util import _as_cols, kind_fail

__all__: list = []


class FitData:
    """ag_fit's data after the loader rules: x, y, batch_size, shuffle, seed; the validation
    columns (xv, yv) are appended by join() once x and y are checked."""

    def __init__(
        self, x: Any, y: Any, validation_data: Any, batch_size: Any, shuffle: Any, seed: Any
    ) -> None:
        self.seed, self.xv, self.yv, self.fixed_split = seed, None, None, False
        self.classes: Optional[List[str]] = None
        if isinstance(x, ag_dataloader):
            # only ag_fit's defaults exactly (32, True) leave the loader's settings alone: the
            # core's rule and texts (a bool is 0 / 1; not a number: NaN)
            bs = batch_size if isinstance(batch_size, numbers.Real) else float("nan")
            true = shuffle is True or shuffle is np.True_
            _core.check(lib.pg_fit_loader_check(y is not None, bs, true))
            batch_size, shuffle = x.batch_size, x.shuffle
            if seed is None:
                self.seed = getattr(x, "seed", None)
            x, y = x.x, x.y
        # labels y (strings or a Categorical) as 0-based ids and their classes (fit/labels.py)
        y, self.classes = encode_labels(y)
        self.x, self.y, self.batch_size, self.shuffle = x, y, batch_size, shuffle
        if validation_data is None:
            return
        vd = validation_data
        if isinstance(vd, ag_dataloader):
            vd = (vd.x, vd.y)
        elif not (isinstance(vd, tuple) and len(vd) in (1, 2)):
            kind_fail(lib.PG_FIT_KIND_VALIDATION_DATA, type(vd).__name__)
        self.xv = _as_cols(vd[0], "validation_data")  # a loader's x is never None
        yv = vd[1] if len(vd) == 2 else None
        if yv is not None and self.classes is not None:  # coded with y's labels, as R's
            ids = code_labels(yv, self.classes, "ag_fit", "validation_data's y", "y's labels", True)
            yv = yv if ids is None else ids
        self.yv = None if yv is None else _as_cols(yv, "validation_data")
        self.fixed_split = True

    def join(self, X: np.ndarray, Y: Optional[np.ndarray], val_split: float) -> Tuple[int, float]:
        """(the plan's samples, the val_split that holds out exactly validation_data's) once x
        and y are checked: the core's rules (pg_fit_val_join); the plan appends the columns."""
        if not self.fixed_split:
            return X.shape[1], val_split
        assert self.xv is not None  # fixed_split: set with it
        out = ffi.new("double *")
        shapes = (
            NULL if a is None else ffi.new("int64_t[2]", a.shape) for a in (X, Y, self.xv, self.yv)
        )
        _core.check(lib.pg_fit_val_join(*shapes, val_split, out))
        return X.shape[1] + self.xv.shape[1], float(out[0])


def verbosity(verbose: Any, progress: str, silent: Any) -> Tuple[str, bool]:
    """keras' verbose levels onto ag_fit's progress= / silent= (the core's rule, pg_fit_verbosity):
    0 silent, 1 the live bar, 2 one line per epoch; None or "auto" (keras' default): progress and
    silent as given, so progress="auto" picks 1 or 2 (fit/progress.py)."""
    silent = check_flag(silent, "ag_fit", "silent")
    if verbose is None or (isinstance(verbose, str) and verbose == "auto"):
        return progress, silent
    num = isinstance(verbose, numbers.Real) and not isinstance(verbose, bool)
    mode = ffi.new("int *")
    shown = repr(plain(verbose)).encode("utf-8", "replace")
    _core.check(lib.pg_fit_verbosity(num, float(verbose) if num else 0, shown, 0, mode))
    return ("none", "bar", "lines")[mode[0]], silent or mode[0] == 0
