"""ag_fit's printed text, R vs Python (issue 31): the same run (verbose = 2, one line per epoch)
prints the same epoch lines and the same History table in both languages, byte for byte. The
texts are the core's (native/fit_history.c); the measured times are the only part that differs
between two runs, so the lines' time is masked (checked for keras' units) and the History is
printed with fixed times (one per unit) in both."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any, Dict

import numpy as np

from .cases_models import ARCHS, arch_inputs, py_model
from .core import CASES, ScriptCase, _u, call_r, with_dtype

_TIMES = {"time_train": [0.0004, 0.0126, 1.5, 125.0], "time_val": [0.0, 0.0004, 0.001, 0.5]}
_TIME = re.compile(r"\((\d+us|\d+ms|\d+\.\d\ds|\d+m \d\ds|\d+h \d\dm \d\ds)\)$")
_FIT: Dict[str, Any] = {
    "shuffle": False,
    "batch_size": 4,
    "val_split": 0.25,
    "lr": 0.05,
    "verbose": 2,
}


def _inputs(rng):
    init, binit = arch_inputs(rng, "mlp")
    x = _u(rng, 4, 24, lo=-2, hi=2)
    y = np.argmax(_u(rng, 3, 4) @ x, axis=0).astype(np.float64)
    return {"init": init, "binit": binit, "x": x, "y": y}


def _records(lines, table, steps):
    """One record per epoch (its line, time masked, as bytes); the last adds the History."""

    def as_bytes(s):
        return np.frombuffer(s.encode(), dtype=np.uint8).astype(np.float64)

    assert len(lines) == steps, lines
    out = []
    for line in lines:
        assert _TIME.search(line), line  # a measured time in keras' units, never "0.00s"
        out.append({"epoch line": as_bytes(_TIME.sub("(T)", line))})
    out[-1]["History table"] = as_bytes(table)
    return out


def _py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        m = py_model("mlp", d["init"], d["binit"])
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            h = pg.ag_fit(m, d["x"], d["y"], nepoch=steps, **_FIT)
        for k, v in _TIMES.items():
            setattr(h, k, v[:steps])
        table = repr(h).replace("<History:", "<ag_history:")
        return _records(err.getvalue().splitlines(), table, steps)

    return with_dtype(dtype, run)


def _r(d, steps, dtype):
    res = call_r(
        "parity_fit_text",
        dtype=dtype,
        arch=ARCHS["mlp"][0],
        init=d["init"],
        binit=d["binit"],
        x=d["x"],
        y=d["y"],
        steps=steps,
        **{k: np.array(v[:steps]) for k, v in _TIMES.items()},
    )  # fmt: skip  (tests/parity/progress.R)
    lines = [str(s) for s in np.atleast_1d(res["lines"])]
    return _records(lines, str(np.atleast_1d(res["table"])[0]), steps)


CASES.append(
    ScriptCase("ag_fit text: epoch lines, History table", _py, _r, 4, _inputs,
               group="fit")
)  # fmt: skip
