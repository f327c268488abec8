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

from .cases_io import adam_steps_py
from .cases_models import ARCHS, arch_data, arch_inputs, call_r_arch, dp_py, dp_r, py_model
from .core import CASES, Record, ScriptCase, _u, as_dtype, call_r, with_dtype


def _record(sd: Dict[str, Any], y_py: Any, y_r: Any, dtype: str) -> List[Record]:
    rec = {f"param {k}": as_dtype(v, dtype) for k, v in sd["parameters"].items()}
    rec.update({f"buffer {k}": as_dtype(v, dtype) for k, v in sd["buffers"].items()})
    dts = sd["param_dtypes"]
    rec["param_dtypes f64"] = np.array(
        [float(v == "f64") for v in (dts.values() if isinstance(dts, dict) else dts)]
    )
    rec["ag_predict (Python)"] = as_dtype(y_py, dtype)
    rec["ag_predict (R)"] = as_dtype(y_r, dtype)
    return [rec]


def _other(d: Dict[str, Any]) -> Dict[str, np.ndarray]:
    return {k: v * 0.5 - 0.25 for k, v in d["init"].items()}  # weights unlike the state's


def _trained_py(d: Dict[str, Any], steps: int) -> Any:
    """The Python model trained `steps` Adam steps (dropout masks from seed 17), in eval mode."""
    import pyggmlr as pg

    m = py_model(d["arch"], d["init"], d["binit"])
    pg.ggml_set_seed(17)
    adam_steps_py(m, d, steps)
    pg.ag_eval(m)
    return m


def _reference(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    def run():
        m = _trained_py(d, steps)
        y = pg.ag_predict(m, d["x"])
        return _record(pg.ag_state_dict(m), y, y, dtype)

    return with_dtype(dtype, run)


def _r_to_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    res = call_r_arch(
        "parity_state_save",
        d["arch"],
        d,
        dtype=dtype,
        n_train=steps,
    )

    def load():
        m = py_model(d["arch"], _other(d), {})
        pg.ag_load_state_dict(m, res["state"])  # R's list, as from_r gives it
        pg.ag_eval(m)
        return _record(pg.ag_state_dict(m), pg.ag_predict(m, d["x"]), res["y"], dtype)

    return with_dtype(dtype, load)


def _py_to_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    def save():
        m = _trained_py(d, steps)
        return pg.ag_state_dict(m), pg.ag_predict(m, d["x"])

    state, y_py = with_dtype(dtype, save)
    res = call_r(
        "parity_state_load",
        dtype=dtype,
        arch=ARCHS[d["arch"]][0],
        other=_other(d),
        state=state,
        x=d["x"],
    )
    return _record(res["state"], y_py, res["y"], dtype)


def _inputs(arch: str) -> Any:
    def inputs(rng: Any) -> Dict[str, Any]:
        return {**arch_data(rng, arch, 7), "arch": arch}

    return inputs


for _arch in ("bn", "io"):
    CASES.append(
        ScriptCase(
            f"state dict: R -> Python ({_arch}, adam)",
            _reference,
            _r_to_py,
            3,
            _inputs(_arch),
            group="state",
        )
    )
    CASES.append(
        ScriptCase(
            f"state dict: Python -> R ({_arch}, adam)",
            _reference,
            _py_to_r,
            3,
            _inputs(_arch),
            group="state",
        )
    )


# ---- dp_train(n_gpu = 2): ggmlR's name for the replica count, in both languages (s10.2) ------


def _dp_ngpu_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    return with_dtype(dtype, lambda: dp_py(d, steps, 4, n_gpu=2, lr=0.02, max_norm=0.5))


def _dp_ngpu_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    return dp_r(d, steps, 4, dtype=dtype, lr=0.02, max_norm=0.5, replicas="n_gpu")


def _dp_inputs(rng: Any) -> Dict[str, Any]:
    init, binit = arch_inputs(rng, "bn")
    return {
        "init": init,
        "binit": binit,
        "x": _u(rng, 4, 12, lo=-2, hi=2),
        "y": _u(rng, 3, 12),
        "arch": "bn",
    }


CASES.append(
    ScriptCase(
        "dp_train: n_gpu = 2 (CPU replicas), batch_norm",
        _dp_ngpu_py,
        _dp_ngpu_r,
        4,
        _dp_inputs,
        group="dp",
    )
)
