"""Parity cases for gradient checkpointing (ag_checkpoint, ggmlR 0.8.5): the same training loop
written in Python and in R (checkpoint.R), with a checkpointed segment holding a dropout (its mask drawn from
the seed, replayed in backward()) and a nested checkpoint, then a plain layer. Every record
(losses, gradients from backward()'s map, weights after the step, the stream after each step)
must agree bit for bit, and equal a plain tape's run in the same language (the record
``plain - checkpointed``, all zeros)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, _u, call_r, r_values, with_dtype

_SEED = 20261202
_KEYS = ("W1", "b1", "W2", "b2", "W3", "b3")


def _run_py(d: Dict[str, Any], steps: int, ck: bool) -> List[Record]:
    import pyggmlr as pg

    pg.ggml_set_seed(_SEED)
    p = {k: pg.ag_param(d[k]) for k in _KEYS}
    drop = pg.ag_dropout(0.3)

    def l1(h):
        return pg.ag_tanh(pg.ag_add(pg.ag_matmul(p["W1"], h), p["b1"]))

    def seg(h, scale):
        a = pg.ag_checkpoint(l1, h) if ck else l1(h)
        return drop(pg.ag_scale(pg.ag_relu(pg.ag_add(pg.ag_matmul(p["W2"], a), p["b2"])), scale))

    opt = pg.optimizer_sgd(list(p.values()), lr=0.1, momentum=0.9)
    out: List[Record] = []
    for _ in range(steps):
        with pg.with_grad_tape():
            x = pg.ag_tensor(d["x"])
            h = pg.ag_checkpoint(seg, x, scale=1.5) if ck else seg(x, 1.5)
            loss = pg.ag_mse_loss(pg.ag_add(pg.ag_matmul(p["W3"], h), p["b3"]), d["y"])
        g = pg.backward(loss)
        rec: Record = {"loss": loss.numpy()}
        for k, t in p.items():
            rec[f"grad {k}"] = g[t]
        opt.step(g)
        opt.zero_grad()
        for k, t in p.items():
            rec[k] = t.numpy()
        rec["stream"] = pg.random.runif(2)
        out.append(rec)
    return out


def _ckpt_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    def run():
        ck, plain = _run_py(d, steps, True), _run_py(d, steps, False)
        for c, q in zip(ck, plain):
            c["plain - checkpointed"] = np.concatenate([(q[k] - c[k]).ravel(order="F") for k in q])
        return [{k: np.asarray(v, dtype=np.float64) for k, v in rec.items()} for rec in ck]

    return with_dtype(dtype, run)


def _ckpt_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    res = call_r("parity_ckpt", dtype=dtype, seed=_SEED, steps=steps, **d)
    return [{k: r_values(v) for k, v in rec.items()} for rec in res]


def _ckpt_inputs(rng: Any) -> Dict[str, Any]:
    return {
        "W1": _u(rng, 6, 4),
        "b1": _u(rng, 6, 1, lo=-0.1, hi=0.1),
        "W2": _u(rng, 5, 6),
        "b2": _u(rng, 5, 1, lo=-0.1, hi=0.1),
        "W3": _u(rng, 3, 5),
        "b3": _u(rng, 3, 1, lo=-0.1, hi=0.1),
        "x": _u(rng, 4, 8, lo=-2, hi=2),
        "y": _u(rng, 3, 8),
    }


CASES.append(
    ScriptCase(
        "ag_checkpoint: nested, dropout, sgd momentum",
        _ckpt_py,
        _ckpt_r,
        4,
        _ckpt_inputs,
        group="checkpoint",
    )
)


# ---- the tape report: what a checkpoint saves, measured by the core in each language ---------


def _op_code(s: str) -> float:
    return float(sum(c * (i + 1) for i, c in enumerate(s.encode())))


def _mem_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import gc

    import pyggmlr as pg

    def run():
        p = {"W1": pg.ag_param(d["W1"]), "W2": pg.ag_param(d["W2"])}

        def body(h):
            return pg.ag_relu(pg.ag_matmul(p["W2"], pg.ag_tanh(pg.ag_matmul(p["W1"], h))))

        out: List[Record] = []
        for ck in (False, True):
            with pg.with_grad_tape():
                h = pg.ag_scale(pg.ag_tensor(d["x"]), 2.0)
                loss = pg.ag_sum(pg.ag_checkpoint(body, h) if ck else body(h))
            gc.collect()
            r = pg.ag_tape_memory(quiet=True)
            rec: Record = {
                k: np.array([float(r[k])])
                for k in ("nodes", "bytes_total", "bytes_snapshots", "bytes_fields", "bytes_inputs")
            }
            rec["by_op.nodes"] = np.array([float(row["nodes"]) for row in r["by_op"]])
            rec["by_op.op"] = np.array([_op_code(row["op"]) for row in r["by_op"]])
            rec["grad_W1"] = np.asarray(pg.backward(loss)[p["W1"]], dtype=np.float64)
            pg.ag_tape_clear()
            out.append(rec)
        return out

    return with_dtype(dtype, run)


def _mem_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    res = call_r("parity_ckpt_memory", dtype=dtype, **d)
    return [{k: r_values(v) for k, v in rec.items()} for rec in res]


CASES.append(
    ScriptCase(
        "ag_checkpoint: tape memory, plain vs checkpointed",
        _mem_py,
        _mem_r,
        2,
        lambda rng: {"W1": _u(rng, 16, 8), "W2": _u(rng, 4, 16), "x": _u(rng, 8, 32)},
        group="checkpoint",
    )
)
