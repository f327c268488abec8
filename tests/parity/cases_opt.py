"""Parity cases for ggmlR 0.8.6's optimizer semantics: the $grad accumulation idiom (backward()
into .grad, ``if (opt$step()) opt$zero_grad()``), the step(backward()) trap with
accumulate_steps > 1, and state() / load_state() continuing a run, R against Python; each side
is a program of its own language (ScriptCase; R: optim.R), written as a ggmlR user writes it."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .cases_api import _mlp_inputs
from .core import CASES, ScriptCase, _u, as_dtype, call_r

_Record = Dict[str, np.ndarray]
_NAMES = ("W1", "b1", "W2", "b2")
_MICRO = [[0, 1], [2, 3], [4, 5], [6, 7]]  # column blocks of x: one micro-batch each

# optimizer constructors (p: the named parameter list); optim.R's make_optimizer is the R twin
_OPTS = {
    "sgd": lambda pg, p, k, avg: pg.optimizer_sgd(
        p, lr=0.1, momentum=0.9, accumulate_steps=k, average=avg
    ),
    "adam": lambda pg, p, k, avg: pg.optimizer_adam(p, lr=0.01, accumulate_steps=k, average=avg),
}


def _py(kind: str, k: int, avg: bool, trap: bool, resume: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[_Record]:
        import pickle

        import pyggmlr as pg

        prev = pg.ag_dtype(dtype)
        make = _OPTS[kind]

        def lossf(p, cols):
            h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(p["W1"], pg.ag_tensor(d["x"][:, cols])), p["b1"]))
            return pg.ag_mse_loss(
                pg.ag_add(pg.ag_matmul(p["W2"], h), p["b2"]), pg.ag_tensor(d["y"][:, cols])
            )

        def run(p, opt, steps):
            out = []
            for s in range(steps):
                with pg.with_grad_tape():
                    loss = lossf(p, _MICRO[s % 4])
                if trap:
                    applied = opt.step(pg.backward(loss))
                else:
                    pg.backward(loss)
                    applied = opt.step()
                    if applied:
                        opt.zero_grad()
                rec = {
                    "loss": loss.numpy(),
                    "applied": np.array([float(applied)]),
                    "accum_count": np.array([float(opt.accum_count)]),
                }
                if kind == "adam":
                    rec["t"] = np.array([float(opt.t)])
                for nm, t in p.items():
                    rec[nm] = t.numpy()
                out.append(rec)
            return out

        try:
            p = {nm: pg.ag_param(d[nm + "_0"]) for nm in _NAMES}
            opt = make(pg, p, k, avg)
            out = run(p, opt, steps)
            if resume:
                snap = pickle.loads(
                    pickle.dumps({"w": {nm: t.numpy() for nm, t in p.items()}, "st": opt.state()})
                )
                out += run(p, opt, steps)
                p2 = {nm: pg.ag_param(t.numpy() * 0 + 7) for nm, t in p.items()}
                opt2 = make(pg, p2, k, avg)
                for nm, t in p2.items():
                    t.data = snap["w"][nm]
                opt2.load_state(snap["st"])
                out += run(p2, opt2, steps)
                slots = opt2.state()["slots"]
                out.append({f"{s} {nm}": slots[s][i] for s in slots for i, nm in enumerate(_NAMES)})
            return out
        finally:
            pg.ag_dtype(prev)

    return run_case


def _rr(kind: str, k: int, avg: bool, trap: bool, resume: bool):
    def run_case(d: Dict[str, Any], steps: int, dtype: str) -> List[_Record]:
        # k as an R double, as in R code written by hand (accumulate_steps = 4)
        flags = dict(kind=kind, k=float(k), avg=avg, trap=trap, resume=resume)
        weights = {f"{nm}_0": d[nm + "_0"] for nm in _NAMES}
        res = call_r("parity_opt", dtype=dtype, steps=steps, x=d["x"], y=d["y"], **flags, **weights)
        out = []
        for rec in res:
            out.append(
                {
                    key: (
                        np.array([float(v)])
                        if np.ndim(v) == 0
                        else (
                            as_dtype(v, dtype)
                            if key in _NAMES or key == "loss"
                            else np.asarray(v, dtype=np.float64)
                        )
                    )
                    for key, v in rec.items()
                }
            )
        return out

    return run_case


def _inputs(rng) -> Dict[str, Any]:
    d = _mlp_inputs(rng)
    return {**{nm + "_0": d[nm] for nm in _NAMES}, "x": d["x"], "y": _u(rng, 3, 8)}


def _case(
    name: str,
    kind: str,
    k: int,
    avg: bool = True,
    trap: bool = False,
    resume: bool = False,
    steps: int = 8,
) -> None:
    CASES.append(
        ScriptCase(
            name,
            _py(kind, k, avg, trap, resume),
            _rr(kind, k, avg, trap, resume),
            steps,
            _inputs,
            group="optim",
        )
    )


_case("opt: $grad accumulation idiom, sgd momentum k=4", "sgd", 4)
_case("opt: $grad accumulation idiom, adam k=2", "adam", 2)
_case("opt: $grad accumulation, adam k=3 average=FALSE", "adam", 3, avg=False, steps=9)
_case("opt: step(backward()) trap, sgd k=2", "sgd", 2, trap=True)
_case("opt: state/load_state via a file, adam k=2", "adam", 2, resume=True, steps=4)
_case("opt: state/load_state via a file, sgd k=1", "sgd", 1, resume=True, steps=3)
