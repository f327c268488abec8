"""Parity cases for ag_lstm, ag_gru, ag_rnn (native/ops_rnn.c): from one seed each language draws
the weights (torch's U(+-1/sqrt(hidden)) through the core's generator), runs a stacked
bidirectional layer with dropout under ag_fit eagerly or compiled (static = TRUE), and records
the init, the history, the final weights and predictions, bit for bit. R half: recurrent.R."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Case, Record, ScriptCase, _u, call_r, r_values, with_dtype

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


# ---- return_state: the final states (h_n, and the LSTM's c_n) in the loss, Adam steps eager or
# through ag_compile; records the loss, the states and the weights per step (R: recurrent.R) ----


def _state_py(kind: str, static: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
        import pyggmlr as pg

        def run():
            pg.ggml_set_seed(_SEED)
            layer = {"lstm": pg.ag_lstm, "gru": pg.ag_gru}[kind](
                2, 3, num_layers=2, bidirectional=True, return_state=True
            )
            head = pg.ag_linear(6, 1)
            params = dict(layer.parameters())
            params.update({f"head {k}": v for k, v in head.parameters().items()})
            opt = pg.optimizer_adam(params, lr=0.01)

            def f(x, y):
                res = layer(x)
                loss = pg.ag_add(
                    pg.ag_mse_loss(head(res[0]), y), pg.ag_sum(pg.ag_mul(res[1], res[1]))
                )
                return pg.ag_add(loss, pg.ag_sum(res[2])) if kind == "lstm" else loss

            step = pg.ag_compile(f, d["x"], d["y"], optimizer=opt) if static else None
            out: List[Record] = []
            for _ in range(steps):
                if step is not None:
                    rec = {"loss": np.array([step(d["x"], d["y"])], dtype=np.float64)}
                else:
                    with pg.with_grad_tape():
                        loss = f(pg.ag_tensor(d["x"]), pg.ag_tensor(d["y"]))
                    opt.step(pg.backward(loss))
                    opt.zero_grad()
                    rec = {"loss": loss.numpy().astype(np.float64).ravel()}
                for k, v in params.items():
                    rec[k] = v.numpy().astype(np.float64)
                res = layer(pg.ag_tensor(d["x"]))
                assert isinstance(res, tuple)
                for i, r in enumerate(res):
                    rec[f"result {i}"] = r.numpy().astype(np.float64)
                out.append(rec)
            return out

        return with_dtype(dtype, run)

    return run_case


def _state_r(kind: str, static: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
        res = call_r(
            "parity_recurrent_state",
            dtype=dtype,
            seed=_SEED,
            kind=kind,
            static=static,
            x=d["x"],
            y=d["y"],
            steps=steps,
        )
        return [{k: r_values(v) for k, v in rec.items()} for rec in res]

    return run_case


for _kind in ("lstm", "gru"):
    for _static in (False, True):
        _name = f"script: recurrent {_kind} return_state {'compiled' if _static else 'eager'}"
        CASES.append(
            ScriptCase(
                _name, _state_py(_kind, _static), _state_r(_kind, _static), 2, _inputs, group="seed"
            )
        )


def _sequences(P: Any, d: Dict[str, Any], steps: int) -> List[Record]:
    """ag_sequences from the same arrays (numpy's (N, T, F) handed to R as an R array of those
    dims): NTF, TNF, one feature per step, and an explicit f64; then an LSTM's output on it."""
    x = d["x"].reshape(3, 4, 2)  # 3 sequences, 4 steps, 2 features
    rec = {
        "NTF": P.np(P.ag_sequences(x)),
        "TNF": P.np(P.ag_sequences(np.ascontiguousarray(x.transpose(1, 0, 2)), layout="TNF")),
        "one feature": P.np(P.ag_sequences(x[:, :, 0])),
        "f64": P.np(P.ag_sequences(x, dtype="f64")),
    }
    P.ggml_set_seed(_SEED)
    lstm = P.ag_lstm(2, 3)
    rec["lstm"] = P.np(lstm.forward(P.ag_sequences(x)))
    return [{k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}]


CASES.append(
    Case(
        "ag_sequences: (N,T,F), (T,N,F), (N,T) to [F*T, N]",
        "layers",
        _sequences,
        inputs=lambda rng: {"x": _u(rng, 4, 6)},
        ggmlr=False,
    )
)
