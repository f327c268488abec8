"""Parity cases for ag_evaluate (native/metrics.c, issue 31): the loss and every metric of the
same model on the same data in each language, bit for bit (a classifier with class ids and a
regression). No ggmlR column: ggmlR has no ag_evaluate."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .cases_models import arch_inputs, call_r_arch, py_model, r_dict
from .core import CASES, ScriptCase, _u, with_dtype

CLS = ["accuracy", "auc", "precision", "recall", "f1", "f1_micro", "precision_macro",
       "recall_micro", "confusion_matrix"]  # fmt: skip
REG = ["mae", "mse", "rmse", "r2"]


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    def run():
        import pyggmlr as pg

        m = py_model("mlp", d["init"], d["binit"])
        y = d["y"] if d["loss"] == "mse" else np.asarray(d["y"], dtype=float)[None]
        mets = REG if d["loss"] == "mse" else CLS
        r = pg.ag_evaluate(m, d["x"], y, metrics=mets, loss=d["loss"], batch_size=5)
        return [{k: np.asarray(v, dtype=np.float64).reshape(-1, order="F") for k, v in r.items()}]

    return with_dtype(dtype, run)


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    mets = REG if d["loss"] == "mse" else CLS
    res = call_r_arch("parity_evaluate", "mlp", d, dtype=dtype, loss=d["loss"],
                      metrics=np.array(mets))  # fmt: skip
    return [{k: np.asarray(v, dtype=np.float64).reshape(-1) for k, v in r_dict(res).items()}]


def _case(name: str, n: int, loss: str) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        init, binit = arch_inputs(rng, "mlp")
        x = _u(rng, 4, n, lo=-2, hi=2)
        y = rng.integers(0, 3, size=n) if loss == "cross_entropy" else _u(rng, 3, n)
        return {"init": init, "binit": binit, "x": x, "y": y, "loss": loss}

    CASES.append(ScriptCase(f"ag_evaluate: {name}", _py, _r, 1, inputs, group="fit"))


_case("ce, class ids, 17 samples", 17, "cross_entropy")
_case("mse regression, 23 samples", 23, "mse")


# ---- ag_fit(metrics =): the History's metric columns, every epoch, bit for bit ----------------

FIT_METRICS = ["auc", "f1", "precision_micro", "recall"]


def _fit_keys() -> List[str]:
    return (
        ["loss", "accuracy", "val_loss", "val_accuracy"]
        + FIT_METRICS
        + ["val_" + m for m in FIT_METRICS]
    )


def _fit_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    def run():
        import pyggmlr as pg

        m = py_model("mlp", d["init"], d["binit"])
        h = pg.ag_fit(m, d["x"], d["y"], loss="cross_entropy", optimizer="sgd", lr=0.1, nepoch=steps,
                      batch_size=4, val_split=0.25, shuffle=False, verbose=0, static=d["static"],
                      metrics=FIT_METRICS)  # fmt: skip
        return [{k: np.array([float(getattr(h, k)[e])]) for k in _fit_keys()} for e in range(steps)]

    return with_dtype(dtype, run)


def _fit_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    res = call_r_arch("parity_fit_metrics", "mlp", d, dtype=dtype, nepoch=steps,
                      static=d["static"], metrics=np.array(FIT_METRICS), keys=np.array(_fit_keys()))  # fmt: skip
    h = r_dict(res)
    return [
        {k: np.array([float(np.asarray(h[k]).reshape(-1)[e])]) for k in _fit_keys()}
        for e in range(steps)
    ]


def _fit_case(name: str, n: int, static: bool) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        init, binit = arch_inputs(rng, "mlp")
        x = _u(rng, 4, n, lo=-2, hi=2)
        return {
            "init": init,
            "binit": binit,
            "x": x,
            "y": rng.integers(0, 3, size=n),
            "static": static,
        }

    CASES.append(ScriptCase(f"ag_fit metrics: {name}", _fit_py, _fit_r, 3, inputs, group="fit"))


_fit_case("ce, sgd, val 0.25, eager", 28, False)
_fit_case("ce, sgd, val 0.25, static", 28, True)
