"""ag_evaluate and the metric names of ag_fit(metrics=): every value is computed in the core
(native/metrics.c, the same calls as R's), this file validates and converts."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .._core import NULL, check, ffi, lib
from ..errors import ArgumentError
from ..io.check import model_target
from .labels import code_labels
from .predict import _predict, check_threshold
from .util import _as_cols

__all__: List[str] = ["ag_evaluate"]


def metric_codes(metrics: Any, fn: str, classify: int, in_fit: bool) -> List[int]:
    """The core's codes of metrics (None, a name or a list of names), checked against the task
    (pg_metric_code: unknown names, metrics that do not fit the loss)."""
    if metrics is None:
        return []
    names = [metrics] if isinstance(metrics, str) else metrics
    if not isinstance(names, (list, tuple)) or not all(isinstance(m, str) for m in names):
        raise ArgumentError(
            f"{fn}: metrics must be None, a metric name or a list of names, got {metrics!r}"[:200]
        )
    codes = []
    for m in names:
        c = lib.pg_metric_code(fn.encode(), m.encode("utf-8", "replace"), classify, int(in_fit))
        if c < 0:
            check(-c)
        if c not in codes:
            codes.append(c)
    return codes


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
    check_threshold(threshold, fn)
    if loss is not None and not isinstance(loss, str):
        raise ArgumentError(f"{fn}: loss must be None or a loss name such as 'mse', got {loss!r}")
    rec_loss, classes = model_target(model)  # what ag_fit recorded (model files keep it)
    if loss is None:
        loss = rec_loss
    check(lib.pg_metric_asked(fn.encode(), loss is not None, metrics is not None))
    ids = None if classes is None else code_labels(y, classes, fn, "y", "the model's classes")
    Y = _as_cols(y if ids is None else ids, "y", fn)
    o = np.asfortranarray(_predict(model, x, batch_size, fn), dtype=np.float64)
    t = np.asfortranarray(Y, dtype=np.float64)
    code, classify = ffi.new("int *"), ffi.new("int *")  # how the outputs are read: the core's
    name = NULL if loss is None else loss.encode("utf-8", "replace")
    check(lib.pg_metric_read(fn.encode(), name, threshold is not None, *o.shape, t.shape[1], code,
                             classify))  # fmt: skip
    cl = int(classify[0])
    codes = metric_codes(metrics, fn, cl, False)
    thr = float("nan") if threshold is None else float(threshold)
    # o [k, n] against t [rows, n] (float64, column-major) for each of the core's calls
    args = (ffi.cast("double *", o.ctypes.data), *o.shape, ffi.cast("double *", t.ctypes.data),
            t.shape[0])  # fmt: skip
    res: Dict[str, Any] = {}
    v = ffi.new("double *")
    if loss is not None:  # over all samples at once, in f64, by the core
        check(lib.pg_metric_loss_value(fn.encode(), code[0], *args, v))
        res["loss"] = float(v[0])
    for c in codes:
        if c != lib.PG_METRIC_CONFUSION_MATRIX:
            check(lib.pg_metric_value(fn.encode(), c, cl, thr, *args, v))
            res[metric_name(c)] = float(v[0])
            continue
        m = int(lib.pg_metric_nclass(cl, o.shape[0]))
        counts = np.zeros(m * m, dtype=np.int64)  # rows: the true class, columns: the predicted
        check(lib.pg_confusion_matrix(fn.encode(), cl, thr, *args,
                                      ffi.cast("int64_t *", counts.ctypes.data)))  # fmt: skip
        res[metric_name(c)] = counts.reshape((m, m), order="F")
    return res


# ---- ag_fit(metrics=): the plan keeps the epoch's outputs, the core computes at epoch end ----


def fit_metric_codes(metrics: Any, classify: int, has_y: bool) -> List[int]:
    """ag_fit's metric codes, checked before training (names, the loss, confusion_matrix)."""
    mc = metric_codes(metrics, "ag_fit", classify, True)
    codes = ffi.new("int[]", mc or [0])
    n = lib.pg_fit_metric_codes_fit(codes, len(mc), has_y)
    check(-n if n < 0 else 0)  # "accuracy" left to the History's own column; targets needed
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
