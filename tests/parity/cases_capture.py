"""Parity cases for ggmlR 0.8.6's captured steps (ag_capture_step with clipping, ag_capture):
the same Adam steps, clipping and outputs in R (capture.R) and Python from the same inputs."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, ScriptCase, _u, call_r


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    import pyggmlr as pg

    prev = pg.ag_dtype(dtype)
    try:
        W, b = pg.ag_param(d["W0"]), pg.ag_param(d["b0"])
        opt = pg.optimizer_adam({"W": W, "b": b}, lr=0.05)
        step = pg.ag_capture_step(
            lambda x, y: {
                "loss": pg.ag_mse_loss(pg.ag_add(pg.ag_matmul(W, x), b), y),
                "out": pg.ag_matmul(W, x),
            },
            optimizer=opt,
            max_grad_norm=0.5,
        )
        fwd = pg.ag_capture(lambda x: pg.ag_tanh(pg.ag_add(pg.ag_matmul(W, x), b)))
        out = []
        for s in range(1, steps + 1):
            if s == 3:
                pg.ag_capture_set(step, 0.05)
            r = step(x=d["x"], y=d["y"])
            out.append(
                {
                    "loss": r["loss"],
                    "out": r["out"],
                    "grad_norm": r["grad_norm"],
                    "W": W.numpy(),
                    "b": b.numpy(),
                    "fwd": fwd(x=d["x"]),
                }
            )
        return out
    finally:
        pg.ag_dtype(prev)


def _rr(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    res = call_r("parity_capture", dtype=dtype, steps=steps, **d)
    return [{k: np.asarray(v) for k, v in rec.items()} for rec in res]


CASES.append(
    ScriptCase(
        "ag_capture_step: adam, clipping, ag_capture",
        _py,
        _rr,
        4,
        lambda rng: {
            "W0": _u(rng, 3, 4),
            "b0": _u(rng, 3, 1),
            "x": _u(rng, 4, 6),
            "y": _u(rng, 3, 6),
        },
        group="optim",
    )
)
