"""ag_evaluate and the metric names of ag_fit(metrics=): every value is computed and assembled in
the core (native/metrics.c, native/evaluate.c: the same calls as R's), this file validates,
converts and shapes the results."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .._args import plain
from .._core import NULL, check, ffi, lib
from .._host import HostValues
from ..errors import ArgumentError
from ..io.check import model_target
from .labels import category_ids, code_labels
from .predict import _predict, check_threshold
from .util import _as_cols

__all__: List[str] = ["ag_evaluate"]


def _names(metrics: Any, fn: str) -> List[str]:
    """metrics (None, a name or a list of names) as a list of names (the core checks them)."""
    if metrics is None:
        return []
    names = [metrics] if isinstance(metrics, str) else metrics
    if not isinstance(names, (list, tuple)) or not all(isinstance(m, str) for m in names):
        raise ArgumentError(
            f"{fn}: metrics must be None, a metric name or a list of names, got {plain(metrics)!r}"[
                :200
            ]
        )
    return list(names)


def metric_name(code: int) -> str:
    """The core's name of a metric code ("auc", ...)."""
    return ffi.string(lib.pg_metric_name(code)).decode()


def ag_evaluate(
    model: Any,
    x: Any,
    y: Any,
    metrics: Any = None,
    batch_size: int = 256,
    loss: Optional[str] = None,
    threshold: Optional[float] = None,
) -> Dict[str, Any]:
    """The loss and metrics of model on x [features, n] against y, from ag_predict's outputs (eval
    mode, no tape), as a dict: "loss" (when loss names one of ag_fit's losses: its value over all
    samples at once, in float64) then each metric by name (floats; "confusion_matrix": an int64
    [classes, classes] array, rows the true class, columns the predicted one).

    How the outputs are read follows the loss: cross_entropy arg-max (logits), binary_cross_entropy
    probabilities (threshold 0.5), bce_with_logits logits (threshold 0), other losses regression
    (mae, mse, rmse, r2 only). Without a loss, a 1-output model (or any model given threshold) is
    read as probabilities above threshold (0.5 by default), a multi-output one by arg-max. The
    metric names and definitions (scikit-learn's) are in docs/metrics.md.

    loss None: the loss ag_fit trained the model with (model.loss_, kept in model files), if any.
    y: class ids, one-hot columns or targets; or labels (strings, a Categorical) when the model
    has classes_ (ag_fit on labels, or a file that keeps them), coded as ag_fit coded them."""
    fn = "ag_evaluate"
    threshold = check_threshold(threshold, fn)
    if loss is not None and not isinstance(loss, str):
        raise ArgumentError(
            f"{fn}: loss must be None or a loss name such as 'mse', got {plain(loss)!r}"
        )
    rec_loss, classes = model_target(model)  # what ag_fit recorded (model files keep it)
    if loss is None:
        loss = rec_loss
    check(lib.pg_metric_asked(fn.encode(), loss is not None, metrics is not None))
    ids = None if classes is None else code_labels(y, classes, fn, "y", "the model's classes")
    Y = _as_cols(category_ids(y) if ids is None else ids, "y", fn)  # codes: R's factor
    o = np.asfortranarray(_predict(model, x, batch_size, fn), dtype=np.float64)
    t = np.asfortranarray(Y, dtype=np.float64)
    names, h = _names(metrics, fn), HostValues()
    # counts room only when asked for (k outputs may be many): max(k, 2)^2 holds any
    cm = np.zeros(max(o.shape[0], 2) ** 2 if "confusion_matrix" in names else 0, dtype=np.int64)
    room = len(names) or 1
    codes, vals, lv = ffi.new("int[]", room), np.empty(room), ffi.new("double *")
    m = lib.pg_evaluate(  # the reading, the loss and each metric: the core's
        fn.encode(), NULL if loss is None else loss.encode("utf-8", "replace"),
        threshold is not None, float("nan") if threshold is None else float(threshold),
        h.strings(names), len(names), ffi.cast("double *", o.ctypes.data), *o.shape,
        ffi.cast("double *", t.ctypes.data), *t.shape, lv, codes,
        ffi.cast("double *", vals.ctypes.data), ffi.cast("int64_t *", cm.ctypes.data), cm.size,
    )  # fmt: skip
    check(-m if m < 0 else 0)
    res: Dict[str, Any] = {} if loss is None else {"loss": float(lv[0])}
    for c, v in zip(codes[0:m], vals):  # the confusion matrix: its side, rows the true class
        side = int(v) if c == lib.PG_METRIC_CONFUSION_MATRIX else 0
        res[metric_name(c)] = cm[: side * side].reshape(side, side, order="F") if side else float(v)
    return res


# ---- ag_fit(metrics=): the plan keeps the epoch's outputs, the core computes at epoch end ----


def fit_metric_codes(metrics: Any, classify: int, has_y: bool) -> List[int]:
    """ag_fit's metric codes, checked before training (names, the loss, confusion_matrix)."""
    names, h = _names(metrics, "ag_fit"), HostValues()
    codes = ffi.new("int[]", len(names) or 1)
    n = lib.pg_metric_codes(b"ag_fit", h.strings(names), len(names), classify, 1, codes)
    if n >= 0:  # "accuracy" left to the History's own column; targets needed
        n = lib.pg_fit_metric_codes_fit(codes, n, has_y)
    check(-n if n < 0 else 0)
    return list(codes)[:n]


def fit_metrics_set(plan: Any, codes: List[int], history: Any) -> None:
    """Turn keeping on in the plan (before plan.shard, which then refuses distributed) and give
    the History its columns: each name, then val_<name> with validation data."""
    if not codes:
        return
    arr = ffi.new("int[]", codes)
    check(lib.pg_fit_metrics(plan._p, len(codes), arr))
    names = [metric_name(c) for c in codes]
    history._set_metrics(names + (["val_" + m for m in names] if plan.n_val > 0 else []))
