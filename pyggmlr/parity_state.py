"""Parity cases for ggmlR 0.8.6's state dicts (0.8.6 spec s9.1-9.2): a state dict taken in one
language loads in the other and gives the same weights and forward output, bit for bit.

The reference is the Python model trained in memory (Adam, `steps` steps, batch norm moving its
running statistics). "R -> Python": R trains the same model from the same values, its
ag_state_dict() comes over as a dict (pyggmlr.r.from_r) and loads into a Python model built with
other weights. "Python -> R": Python's ag_state_dict() goes to R (as a named list) and loads into
an R model with other weights. Each side records the loaded weights (through ag_state_dict) and
ag_predict on the loaded model, both languages' where the side has two."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .parity import (CASES, ScriptCase, _ARCHS, _R_DP, _R_MODEL_HELPERS, _arch_inputs, _as_dtype, _dp_record,
                     _io_train_py, _py_model, _r_values, _u, _with_dtype)

Record = Dict[str, np.ndarray]

_R_TRAIN = _R_MODEL_HELPERS + """
train <- function(m, n) {
  force(m)  # built (its initial draws) before the seed, as in Python
  set.seed(17L)  # the same dropout masks as Python's ggml_set_seed(17)
  opt <- optimizer_adam(m$parameters(), lr = 0.01, weight_decay = 0.05)
  for (s in seq_len(n)) {
    loss <- with_grad_tape(ag_mse_loss(m$forward(ag_tensor(x)), y))
    opt$step(backward(loss))
    opt$zero_grad()
  }
  ag_eval(m)
  m
}
"""

_R_SAVE = _R_TRAIN + """
with_dtype(dtype, function() {
  m <- train(set_values(eval(parse(text = arch)), init, binit), n_train)
  list(state = ag_state_dict(m), y = ag_predict(m, x))
})
"""

_R_LOAD = _R_TRAIN + """
with_dtype(dtype, function() {
  m <- set_values(eval(parse(text = arch)), other, list())
  ag_load_state_dict(m, state)
  ag_eval(m)
  list(state = ag_state_dict(m), y = ag_predict(m, x))
})
"""


def _record(sd: Dict[str, Any], y_py: Any, y_r: Any, dtype: str) -> List[Record]:
    rec = {f"param {k}": _as_dtype(v, dtype) for k, v in sd["parameters"].items()}
    rec.update({f"buffer {k}": _as_dtype(v, dtype) for k, v in sd["buffers"].items()})
    dts = sd["param_dtypes"]
    rec["param_dtypes f64"] = np.array([float(v == "f64") for v in (dts.values() if isinstance(dts, dict) else dts)])
    rec["ag_predict (Python)"] = _as_dtype(y_py, dtype)
    rec["ag_predict (R)"] = _as_dtype(y_r, dtype)
    return [rec]


def _other(d: Dict[str, Any]) -> Dict[str, np.ndarray]:
    return {k: v * 0.5 - 0.25 for k, v in d["init"].items()}  # weights unlike the state's


def _reference(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    def run():
        m = _py_model(d["arch"], d["init"], d["binit"])
        pg.ggml_set_seed(17)
        _io_train_py(m, d, steps)
        pg.ag_eval(m)
        y = pg.ag_predict(m, d["x"])
        return _record(pg.ag_state_dict(m), y, y, dtype)
    return _with_dtype(dtype, run)


def _r_to_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg
    from . import r
    res = r.run(_R_SAVE, dtype=dtype, arch=_ARCHS[d["arch"]][0], init=d["init"], binit=d["binit"], x=d["x"],
                y=d["y"], n_train=steps)

    def load():
        m = _py_model(d["arch"], _other(d), {})
        pg.ag_load_state_dict(m, res["state"])  # R's list, as from_r gives it
        pg.ag_eval(m)
        return _record(pg.ag_state_dict(m), pg.ag_predict(m, d["x"]), res["y"], dtype)
    return _with_dtype(dtype, load)


def _py_to_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg
    from . import r

    def save():
        m = _py_model(d["arch"], d["init"], d["binit"])
        pg.ggml_set_seed(17)
        _io_train_py(m, d, steps)
        pg.ag_eval(m)
        return pg.ag_state_dict(m), pg.ag_predict(m, d["x"])
    state, y_py = _with_dtype(dtype, save)
    res = r.run(_R_LOAD, dtype=dtype, arch=_ARCHS[d["arch"]][0], other=_other(d), state=state, x=d["x"], y=d["y"])
    sd = res["state"]
    return _record(sd, y_py, res["y"], dtype)


def _inputs(arch: str) -> Any:
    def inputs(rng: Any) -> Dict[str, Any]:
        init, binit = _arch_inputs(rng, arch)
        return {"init": init, "binit": binit, "x": _u(rng, 4, 7, lo=-2, hi=2), "y": _u(rng, 3, 7), "arch": arch}
    return inputs


for _arch in ("bn", "io"):
    CASES.append(ScriptCase(f"state dict: R -> Python ({_arch}, adam)", _reference, _r_to_py, 3, _inputs(_arch),
                            group="state"))
    CASES.append(ScriptCase(f"state dict: Python -> R ({_arch}, adam)", _reference, _py_to_r, 3, _inputs(_arch),
                            group="state"))


# ---- dp_train(n_gpu = 2): ggmlR's name for the replica count, in both languages (s10.2) ------

def _dp_ngpu_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    def run():
        per = d["x"].shape[1] // 4
        data = [{"x": d["x"][:, j * per:(j + 1) * per], "y": d["y"][:, j * per:(j + 1) * per]} for j in range(4)]
        res = pg.dp_train(lambda: _py_model(d["arch"], d["init"], d["binit"]), data, loss_fn=pg.ag_mse_loss,
                          forward_fn=lambda m, smp: m.forward(pg.ag_tensor(smp["x"])), target_fn=lambda smp: smp["y"],
                          n_gpu=2, n_iter=steps, lr=0.02, max_norm=0.5, verbose=False)
        return _dp_record(res["loss_history"], {k: t.numpy() for k, t in res["params"].items()},
                          {k: t.numpy() for k, t in res["model"].buffers().items()})
    return _with_dtype(dtype, run)


def _dp_ngpu_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    from . import r
    code = _R_DP.replace("n_replicas = 2L", "n_gpu = 2L")
    assert code != _R_DP
    res = r.run(code, dtype=dtype, arch=_ARCHS[d["arch"]][0], init=d["init"], binit=d["binit"], x=d["x"], y=d["y"],
                n_samples=4, per=d["x"].shape[1] // 4, n_iter=steps, lr=0.02, max_norm=0.5)
    return _dp_record(_r_values(res["loss_history"]), {k: _r_values(v) for k, v in res["params"].items()},
                      {k: _r_values(v) for k, v in (res["buffers"] or {}).items()})


def _dp_inputs(rng: Any) -> Dict[str, Any]:
    init, binit = _arch_inputs(rng, "bn")
    return {"init": init, "binit": binit, "x": _u(rng, 4, 12, lo=-2, hi=2), "y": _u(rng, 3, 12), "arch": "bn"}


CASES.append(ScriptCase("dp_train: n_gpu = 2 (CPU replicas), batch_norm", _dp_ngpu_py, _dp_ngpu_r, 4, _dp_inputs,
                        group="dp"))
