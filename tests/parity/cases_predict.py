"""ag_predict(type=) on a model file written by the other language (issue 31): a model trained
with class labels (R: a factor; Python: strings) and saved; the other language loads the file
alone and must give the same outputs, probabilities, classes, labels and loss, bit for bit. The
R halves are predict.R."""

from __future__ import annotations

import os
import zlib

import numpy as np

from .cases_io import _io_tmp
from .cases_models import arch_inputs, call_r_arch, py_model
from .core import CASES, ScriptCase, _u, call_r, r_values, with_dtype

LABELS = {"cross_entropy": ["cat", "dog", "\u00e9mu"], "bce_with_logits": ["no", "yes"]}


def _crc(strings):
    return np.array([float(zlib.crc32(str(s).encode("utf-8"))) for s in strings])


def _record(response, prob, codes, labels, loss, dtype):
    # "prob" in the model's dtype (Python's float32 for f32; R's doubles rounded to it)
    pdt = np.float32 if dtype == "f32" else np.float64
    return [
        {
            "response": np.asarray(response, dtype=np.float64),
            "prob": np.asarray(prob, dtype=pdt).astype(np.float64),
            "class": np.asarray(codes, dtype=np.float64),
            "labels": _crc(labels),
            "loss": _crc([loss]),
        }
    ]


def _py_load(d, path, dtype):
    """Python reads the file alone."""
    import pyggmlr as pg

    m = pg.ag_load_model(path)
    cl = pg.ag_predict(m, d["x"], type="class")
    labels = list(m.classes_)
    codes = [labels.index(c) for c in cl]
    return _record(
        pg.ag_predict(m, d["x"]),
        pg.ag_predict(m, d["x"], type="prob"),
        codes,
        labels,
        m.loss_,
        dtype,
    )


def _r_to_py(d, steps, dtype):
    """R trains on a factor and saves; Python loads and predicts."""
    s = d["settings"]
    path = _io_tmp()
    try:
        call_r_arch("parity_predict_save", s["arch"], d, dtype=dtype, loss=s["loss"], path=path)
        return with_dtype(dtype, lambda: _py_load(d, path, dtype))
    finally:
        os.unlink(path)


def _py_to_r(d, steps, dtype):
    """Python trains on string labels and saves; R loads and predicts."""
    import pyggmlr as pg

    s = d["settings"]
    path = _io_tmp()
    try:

        def save():
            m = py_model(s["arch"], d["init"], d["binit"])
            y = np.array(LABELS[s["loss"]])[d["ids"].astype(int)]
            pg.ag_fit(
                m,
                d["x"],
                y,
                loss=s["loss"],
                nepoch=2,
                batch_size=8,
                shuffle=False,
                lr=0.05,
                silent=True,
            )
            pg.ag_save_model(m, path)

        with_dtype(dtype, save)
        res = call_r("parity_predict_load", dtype=dtype, x=d["x"], path=path)
    finally:
        os.unlink(path)
    labels = [res["labels"]] if isinstance(res["labels"], str) else list(res["labels"])
    return _record(
        r_values(res["response"]),
        r_values(res["prob"]),
        r_values(res["class"]),
        labels,
        res["loss"],
        dtype,
    )


def _case(name, arch, loss):
    settings = {"arch": arch, "loss": loss}

    def inputs(rng):
        init, binit = arch_inputs(rng, arch)
        x = _u(rng, 4, 20, lo=-2, hi=2)
        ids = rng.integers(0, len(LABELS[loss]), size=20).astype(np.float64)
        return {"init": init, "binit": binit, "x": x, "y": ids, "ids": ids, "settings": settings}

    CASES.append(
        ScriptCase(f"predict: labels in files, {name}", _r_to_py, _py_to_r, 1, inputs, group="io")
    )


_case("cross_entropy", "mlp", "cross_entropy")
_case("bce_with_logits", "mlp1", "bce_with_logits")
