"""Parity cases for ag_lstm, ag_gru, ag_rnn (native/ops_rnn.c): from one seed each language draws
the weights (torch's U(+-1/sqrt(hidden)) through the core's generator), runs a stacked
bidirectional layer with dropout under ag_fit eagerly or compiled (static = TRUE), and records
the init, the history, the final weights and predictions, bit for bit. R half: recurrent.R."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, _u, call_r, r_values, with_dtype

_SEED = 20261204
_KINDS = ("lstm", "gru", "rnn")


def _inputs(rng):
    # 12 sequences of 4 steps with 2 features: x [2*4, 12], y [1, 12]
    return {"x": _u(rng, 8, 12), "y": _u(rng, 1, 12)}


def _py(kind: str, static: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
        import pyggmlr as pg

        def run():
            pg.ggml_set_seed(_SEED)
            layer = {"lstm": pg.ag_lstm, "gru": pg.ag_gru, "rnn": pg.ag_rnn}[kind]
            m = pg.ag_sequential(
                layer(2, 3, num_layers=2, bidirectional=True, dropout=0.3), pg.ag_linear(6, 1)
            )
            rec0 = {f"init {k}": v.numpy().astype(np.float64) for k, v in m.parameters().items()}
            h = pg.ag_fit(
                m,
                d["x"],
                d["y"],
                loss="mse",
                nepoch=steps,
                batch_size=4,
                shuffle=True,
                static=static,
                silent=True,
            )
            rec1 = {f"final {k}": v.numpy().astype(np.float64) for k, v in m.parameters().items()}
            rec1["loss"] = np.asarray(h.loss, dtype=np.float64)
            rec1["predict"] = np.asarray(pg.ag_predict(m, d["x"]), dtype=np.float64)
            return [rec0, rec1]

        return with_dtype(dtype, run)

    return run_case


def _r(kind: str, static: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
        res = call_r(
            "parity_recurrent_fit",
            dtype=dtype,
            seed=_SEED,
            kind=kind,
            static=static,
            x=d["x"],
            y=d["y"],
            nepoch=steps,
        )
        return [{k: r_values(v) for k, v in rec.items()} for rec in res]

    return run_case


for _kind in _KINDS:
    for _static in (False, True):
        _name = f"script: recurrent {_kind} fit {'compiled' if _static else 'eager'}"
        CASES.append(
            ScriptCase(_name, _py(_kind, _static), _r(_kind, _static), 2, _inputs, group="seed")
        )
