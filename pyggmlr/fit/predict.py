"""ag_predict and ag_accuracy: a trained model's outputs (raw, as probabilities or as classes:
the core's pg_predict_transform, as R's), and the share of arg-max hits or of binary hits
(the core's pg_accuracy, as R's)."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .. import _core
from .._args import as_float, check_int, plain
from .._core import ffi, lib
from ..errors import ArgumentError, ShapeError
from ..io.check import model_target
from ..tape import ag_no_grad
from ..tensor import ag_tensor
from .labels import category_ids
from .util import (
    _as_cols,
    _forward,
    _forward_fail,
    _input_rows,
    _model_dtype,
    _return_state,
    _set_mode,
)

__all__: List[str] = ["ag_predict", "ag_accuracy"]


def ag_predict(
    model: Any, x: Any, batch_size: int = 256, type: str = "response", loss: Optional[str] = None
) -> np.ndarray:
    """The model's outputs for x [features, n] in eval mode, without a tape (computed in batches
    of batch_size columns; the model's mode is put back afterwards).

    type: "response" (default): the outputs as a numpy [outputs, n] array. "prob": probabilities
    [outputs, n], read as the model's loss reads its outputs: softmax over each column for
    cross_entropy (logits), sigmoid for bce_with_logits, as they are for binary_cross_entropy.
    "class": the predicted classes, a numpy array of n: the arg-max row (cross_entropy), or 1
    where the output is above the threshold (0.5 on probabilities, 0 on logits) else 0 (the BCE
    losses; a multi-label model gives [outputs, n]); as the model's labels (classes_, from ag_fit
    with string labels or a file that keeps them) when it has them, else 0-based class ids.
    loss: how the outputs are read, one of ag_fit's loss names; None (default): the loss ag_fit
    trained the model with (its loss_ attribute, kept in model files). A model without a known
    classifier loss refuses "prob" and "class" (PyggmlrValueError saying how to give loss=).
    x of rows a built-in layer refuses: a ShapeError naming that layer, as ag_fit's."""
    fn = "ag_predict"
    kind = ffi.new("int *")
    shown = f"{type!r:.60}".encode("utf-8", "replace")
    t = type.encode("utf-8", "replace") if isinstance(type, str) else ffi.NULL
    _core.check(lib.pg_predict_type_parse(fn.encode(), t, shown, kind))
    rec_loss, classes = model_target(model)
    if loss is not None and not isinstance(loss, str):
        raise ArgumentError(
            f"{fn}: loss must be one of ag_fit's loss names or None, got {loss!r:.60}"
        )
    name = rec_loss if loss is None else loss
    classify, lb = ffi.new("int *"), ffi.NULL if name is None else name.encode("utf-8", "replace")
    _core.check(lib.pg_predict_classify(fn.encode(), lb, classify))  # no loss: none (the core's)
    out = _predict(model, x, batch_size, fn)
    if kind[0] == lib.PG_PREDICT_RESPONSE:
        return out
    o = np.asfortranarray(out, dtype=np.float64)
    res = np.empty_like(o, order="F")
    rows = ffi.new("int64_t *")
    _core.check(
        lib.pg_predict_transform(
            fn.encode(), ffi.cast("double *", o.ctypes.data), o.shape[0], o.shape[1], kind[0],
            classify[0], lb, -1 if classes is None else len(classes),
            ffi.cast("double *", res.ctypes.data), rows,
        )
    )  # fmt: skip
    if kind[0] == lib.PG_PREDICT_PROB:  # in the model's dtype, as "response" (f32: float32)
        return res.astype(out.dtype, copy=False)
    # the core wrote [rows[0], n] column-major at the buffer's start
    ids = res.ravel(order="F")[: rows[0] * o.shape[1]].reshape(rows[0], o.shape[1], order="F")
    ids = ids[0] if rows[0] == 1 else ids  # one class a sample: a vector of n
    nan = np.isnan(ids)
    if classes is None:
        return ids if nan.any() else ids.astype(np.int64)
    labels = np.asarray(classes)
    if nan.any():  # a NaN output has no class: None there
        return np.array([None if m else labels[int(i)] for i, m in zip(ids, nan)], dtype=object)
    return labels[ids.astype(np.int64)]


def _predict(model: Any, x: Any, batch_size: Any, fn: str) -> np.ndarray:
    """ag_predict's work; fn: the user-facing function its errors name. The model first (a
    return_state layer, then no forward(x)), then x, then batch_size: R's order."""
    _return_state(model, fn)
    if not (callable(getattr(model, "forward", None)) or callable(model)):  # R's is.function
        _forward_fail(model, fn)
    X = _as_cols(x, "x", fn, True)  # none: the core's text
    bs = check_int(batch_size, fn, "batch_size", 1)
    dtype = _model_dtype(model)
    was_training = bool(getattr(model, "training", False))
    outs: List[np.ndarray] = []
    try:
        _set_mode(model, False)  # inside: the mode comes back on every exit path
        with ag_no_grad():
            for s in range(0, X.shape[1], bs):
                xb = ag_tensor(X[:, s : s + bs], dtype=dtype)
                o = _forward(model, xb, fn).numpy()
                n = xb.shape[1]  # one output column per sample: the core's rule and text, as R's
                _core.check(lib.pg_predict_batch_cols(fn.encode(), o.shape[0], o.shape[1], n, bs))
                if outs:  # numpy's concatenate would fail in its words: the core's text, as R's
                    _core.check(lib.pg_predict_batch_rows(fn.encode(), len(outs[0]), len(o), bs))
                outs.append(o)
    except ShapeError:  # x's rows a layer refused: ag_fit's text naming it, when the rules know
        _input_rows(model, X.shape[0], fn, X.shape[1])  # (walked only then: a third of a predict)
        raise
    finally:
        if was_training:
            _set_mode(model, True)
    return np.asfortranarray(np.concatenate(outs, axis=1))


def ag_accuracy(
    model: Any, x: Any, y: Any, batch_size: int = 256, threshold: Optional[float] = None
) -> float:
    """Fraction of samples whose arg-max output row equals y (0-based ids or one-hot columns).

    Binary and multi-label models (keras' binary_accuracy): a 1-output model, or any model when
    threshold is given, is scored per element: an output above threshold predicts 1, a target
    (0/1 labels in [0, 1]; one above 0.5 counts as 1) of the output's shape is compared with it,
    and the result is the share of matching elements. threshold None (the default) means 0.5 on
    a 1-output model and arg-max on a multi-output one; pass 0 for a model that outputs logits
    (bce_with_logits)."""
    fn = "ag_accuracy"
    threshold = check_threshold(threshold, fn)
    Y = _as_cols(category_ids(y), "y", fn)  # a Categorical: its codes, as R's factor
    o = np.asfortranarray(_predict(model, x, batch_size, fn), dtype=np.float64)
    t = np.asfortranarray(Y, dtype=np.float64)
    v = ffi.new("double *")  # the rule (binary or arg-max) and the count: the core's, as R's
    _core.check(
        lib.pg_accuracy(
            fn.encode(), ffi.cast("double *", o.ctypes.data), o.shape[0], o.shape[1],
            ffi.cast("double *", t.ctypes.data), t.shape[0], t.shape[1],
            threshold is not None, 0.5 if threshold is None else float(threshold),
            Y.dtype.kind == "b", v,
        )
    )  # fmt: skip
    return float(v[0])


def check_threshold(threshold: Any, fn: str) -> Optional[float]:
    """ag_accuracy's and ag_evaluate's threshold: a number or None; returned as a float (10**400:
    inf, as R's 1e400, which the core then refuses) or None."""
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number))
    ):
        raise ArgumentError(f"{fn}: threshold must be a number or None, got {plain(threshold)!r}")
    return None if threshold is None else as_float(threshold)
