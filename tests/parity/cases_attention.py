"""Parity cases for ag_flash_attention (ggmlR 0.8.6 §3): R against Python on the same inputs, values
and the gradients of q, k and v, 0 ULP: plain, several heads, causal, cross-attention, logical and
numeric masks, a blocked query, q = k = v, and shapes that span several query blocks."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .cases_api import _op
from .cases_models import r_record
from .core import CASES, ScriptCase, _u, call_r

_M = np.array(
    [[1, 1, 0, 1], [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 0], [0, 1, 1, 1]], dtype=bool
)  # [seq_kv 5, seq_q 4]
_B = _M.copy()
_B[:, 2] = False  # query 3 sees no key: 0


def _fa(name: str, D: int, Sq: int, Skv: int, H: int, **kw: Any) -> None:
    """An op case: ag_flash_attention(q [D, Sq], k and v [D, Skv], H heads, **kw)."""
    shapes = [(D, Sq), (D, Skv), (D, Skv)]
    _op(name, shapes, lambda P, q, k, v: P.ag_flash_attention(q, k, v, H, **kw))


_fa("flash_attention", 8, 4, 4, 1)
_fa("flash_attention heads 2", 8, 4, 4, 2)
_fa("flash_attention causal heads 4", 16, 6, 6, 4, causal=True)
_fa("flash_attention cross 4 vs 5 scale", 6, 4, 5, 3, scale=0.7)
_fa("flash_attention logical mask", 8, 4, 5, 2, mask=_M)
_fa("flash_attention numeric mask", 8, 4, 5, 2, mask=np.where(_M, 0.0, -np.inf))
_fa("flash_attention blocked query", 8, 4, 5, 2, mask=_B)
_op(
    "flash_attention q = k = v causal",
    [(6, 5)],
    lambda P, x: P.ag_flash_attention(x, x, x, 3, causal=True),
)
_fa("flash_attention blocks 70 vs 66 causal", 16, 70, 66, 4, causal=True)


# ---- ag_compile: Adam steps through a compiled graph holding the fused node, R vs Python ------
# (the R half: compile.R's parity_compile_flash)


def _fa_inputs(rng: Any) -> Dict[str, np.ndarray]:
    return {"Wq": _u(rng, 8, 8), "x": _u(rng, 8, 6), "y": _u(rng, 8, 6)}


def _compile_fa_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    import pyggmlr as pg

    prev = pg.ag_dtype(dtype)
    try:
        Wq = pg.ag_param(d["Wq"])
        opt = pg.optimizer_adam({"Wq": Wq}, lr=0.02)
        step = pg.ag_compile(
            lambda x, y: pg.ag_mse_loss(
                pg.ag_flash_attention(pg.ag_matmul(Wq, x), x, x, 2, causal=True), y
            ),
            d["x"],
            d["y"],
            optimizer=opt,
        )
        return [
            {"loss": np.array([step(d["x"] * (1 + 0.1 * s), d["y"])]), "Wq": Wq.numpy()}
            for s in range(1, steps + 1)
        ]
    finally:
        pg.ag_dtype(prev)


def _compile_fa_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Dict[str, np.ndarray]]:
    res = call_r("parity_compile_flash", dtype=dtype, steps=steps, x=d["x"], y=d["y"], Wq_0=d["Wq"])
    return [r_record(dtype, rec) for rec in res]


CASES.append(
    ScriptCase(
        "ag_compile: flash_attention adam steps",
        _compile_fa_py,
        _compile_fa_r,
        4,
        _fa_inputs,
        group="compile",
    )
)
