"""Parity cases for ag_fit(sample_weight=, class_weight=) (native/fit_weight.c, fit_wloss.c):
the same weighted run in each language, history, per-batch losses and weights every epoch, bit
for bit (eager and compiled). No ggmlR column: ggmlR's ag_fit has no weights."""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from .cases_models import HIST_KEYS, arch_inputs, call_r_arch, fit_py, fit_r_records, py_model
from .core import CASES, ScriptCase, _u, with_dtype


def _py(d: Dict[str, Any], steps: int, dtype: str) -> Any:
    s = d["settings"]

    def run():
        kw: Dict[str, Any] = {}
        if d["sw"] is not None:
            kw["sample_weight"] = d["sw"]
        if d["cw"] is not None:
            kw["class_weight"] = {int(c): float(w) for c, w in zip(d["cw_ids"], d["cw"])}
        m = py_model(s["arch"], d["init"], d["binit"])
        return fit_py(
            m,
            d["x"],
            d["y"],
            loss=s["loss"],
            optimizer=s["opt"],
            nepoch=steps,
            batch_size=s["batch_size"],
            val_split=s["val_split"],
            lr=s["lr"],
            static=s["static"],
            **kw,
        )

    return with_dtype(dtype, run)


def _r(d: Dict[str, Any], steps: int, dtype: str) -> Any:
    s = d["settings"]
    res = call_r_arch(
        "parity_fit_weighted",
        s["arch"],
        d,
        dtype=dtype,
        loss=s["loss"],
        opt_kind=s["opt"],
        lr=s["lr"],
        nepoch=steps,
        batch_size=s["batch_size"],
        val_split=s["val_split"],
        static=s["static"],
        sw=d["sw"],
        cw_ids=d["cw_ids"],
        cw=d["cw"],
        hist_keys=np.array(HIST_KEYS),
    )
    return fit_r_records(res)


def _case(
    name: str, n: int, loss: str, opt: str, static: bool, sw: bool, cw: bool, val_split: float = 0.0
) -> None:
    settings = dict(
        arch="mlp", loss=loss, opt=opt, lr=0.05, batch_size=4, val_split=val_split, static=static
    )

    def inputs(rng: Any) -> Dict[str, Any]:
        init, binit = arch_inputs(rng, "mlp")
        x = _u(rng, 4, n, lo=-2, hi=2)
        y = rng.integers(0, 3, size=n) if loss == "cross_entropy" else _u(rng, 3, n)
        return {
            "init": init,
            "binit": binit,
            "x": x,
            "y": y,
            "settings": settings,
            "sw": rng.uniform(0.0, 2.0, size=n) if sw else None,
            "cw_ids": np.array([0.0, 2.0]) if cw else None,
            "cw": rng.uniform(0.2, 3.0, size=2) if cw else None,
        }

    CASES.append(ScriptCase(f"ag_fit weights: {name}", _py, _r, 3, inputs, group="fit"))


_case("ce, class x sample, sgd", 24, "cross_entropy", "sgd", False, True, True)
_case("ce, class, adamw, static, val 0.25", 28, "cross_entropy", "adamw", True, False, True, 0.25)
_case("mse, sample, adamw, val 0.2", 30, "mse", "adamw", False, True, False, 0.2)
