"""What ag_fit accepts as data besides arrays, keras style: an ag_dataloader as x, and
``validation_data=(x_val, y_val)`` (or a loader), plus keras' ``verbose`` levels.

Precedence (documented in ag_fit): a loader's x / y, batch_size and shuffle become the fit's
(its seed too when ag_fit has none); passing ag_fit's own batch_size / shuffle other than their
defaults, or y, together with a loader is an error rather than a silent choice. The batching
stays in the core's plan (plan.py): validation data are appended after the training data
and held out as the plan's validation part, with the split fixed (never shuffled into the
training part); the training part is still reshuffled every epoch when shuffle."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .._args import check_flag
from ..data import ag_dataloader
from ..errors import ArgumentError, PyggmlrValueError, ShapeError
from .util import _as_cols

__all__: list = []

_DEFAULT_BATCH, _DEFAULT_SHUFFLE = (
    32,
    True,
)  # ag_fit's defaults (an explicit other value with a loader is an error)


def _is_loader(v: Any) -> bool:

    return isinstance(v, ag_dataloader)


def _loader_xy(ld: Any, what: str) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    return _as_cols(ld.x, what), (None if ld.y is None else _as_cols(ld.y, what))


class FitData:
    """ag_fit's data after the loader / validation_data rules: x, y (arrays, the validation
    columns last), batch_size, shuffle, seed, val_split and fixed_split (the validation part is
    validation_data: the plan must not shuffle it into the training part)."""

    def __init__(
        self,
        x: Any,
        y: Any,
        validation_data: Any,
        batch_size: Any,
        shuffle: Any,
        seed: Any,
        val_split: Any,
    ) -> None:
        self.fixed_split = False
        self.seed = seed
        if _is_loader(x):
            if y is not None:
                raise ArgumentError(
                    "ag_fit: x is an ag_dataloader, which holds the targets: pass y to ag_dataloader(x, y), not to ag_fit"
                )
            if batch_size != _DEFAULT_BATCH or bool(shuffle) != _DEFAULT_SHUFFLE:
                raise ArgumentError(
                    "ag_fit: x is an ag_dataloader: its batch_size and shuffle are the fit's; set them on "
                    "ag_dataloader(), not on ag_fit"
                )
            batch_size, shuffle = x.batch_size, x.shuffle
            if seed is None:
                self.seed = getattr(x, "seed", None)
            x, y = _loader_xy(x, "x")
        self.batch_size, self.shuffle = batch_size, shuffle
        self.x, self.y, self.val_split = x, y, val_split
        if validation_data is None:
            return
        if (
            isinstance(val_split, (int, float))
            and not isinstance(val_split, bool)
            and float(val_split) != 0.0
        ):
            raise ArgumentError("ag_fit: give either val_split or validation_data, not both")
        if _is_loader(validation_data):
            xv, yv = _loader_xy(validation_data, "validation_data")
        elif isinstance(validation_data, tuple) and len(validation_data) in (1, 2):
            xv = _as_cols(validation_data[0], "validation_data")
            yv = (
                None
                if len(validation_data) == 1 or validation_data[1] is None
                else _as_cols(validation_data[1], "validation_data")
            )
        else:
            raise ArgumentError(
                "ag_fit: validation_data must be a tuple (x_val, y_val), (x_val,) or an ag_dataloader, "
                f"got {type(validation_data).__name__}"
            )
        X = _as_cols(x, "x")
        Y = None if y is None else _as_cols(y, "y")
        if (Y is None) != (yv is None):
            raise ArgumentError(
                "ag_fit: validation_data needs targets exactly when the training data have them "
                f"(training y {'given' if Y is not None else 'absent'}, validation y "
                f"{'given' if yv is not None else 'absent'})"
            )
        if xv.shape[0] != X.shape[0]:
            raise ShapeError(
                f"ag_fit: validation_data x has {xv.shape[0]} features (rows), x has {X.shape[0]}"
            )
        if Y is not None and yv is not None:
            if yv.shape[1] != xv.shape[1]:
                raise ShapeError(
                    f"ag_fit: validation_data x has {xv.shape[1]} samples (columns) but y has {yv.shape[1]}"
                )
            if yv.shape[0] != Y.shape[0]:
                raise ShapeError(
                    f"ag_fit: validation_data y has {yv.shape[0]} rows, y has {Y.shape[0]}"
                )
        n, nv = X.shape[1], xv.shape[1]
        if nv < 1 or n < 1:
            raise PyggmlrValueError(
                f"ag_fit: validation_data and x need at least one sample each, got {nv} and {n}"
            )
        self.x = np.concatenate([X, xv.astype(X.dtype, copy=False)], axis=1)
        if Y is not None and yv is not None:
            self.y = np.concatenate([Y, yv.astype(Y.dtype, copy=False)], axis=1)
        self.val_split = nv / (
            n + nv
        )  # the plan holds out round(val_split * total) = nv at the end
        self.fixed_split = True


def verbosity(verbose: Any, progress: str, silent: bool) -> Tuple[str, bool]:
    """keras' verbose levels onto ag_fit's progress= / silent=: 0 silent, 1 the progress bar
    (always, as progress="bar"), 2 one line per epoch and no bar ("lines"); None: progress and
    silent as given. Returns (progress, silent)."""
    silent = check_flag(silent, "ag_fit", "silent")
    if verbose is None:
        return progress, silent
    if isinstance(verbose, bool) or verbose not in (0, 1, 2):
        raise PyggmlrValueError(
            f"ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per epoch) or None, got {verbose!r}"
        )
    return ("none", "bar", "lines")[int(verbose)], silent or verbose == 0
