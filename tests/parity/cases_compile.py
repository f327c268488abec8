"""ag_compile and ag_fit(static = TRUE), R vs Python (the R halves are compile.R): a compiled
Adam step replayed with new inputs, and the compiled training loop."""

from __future__ import annotations

import numpy as np

from .cases_api import _mlp_inputs
from .cases_models import (
    HIST_KEYS,
    MLP,
    eval_arch,
    fit_py,
    fit_r_records,
    mlp_script_r,
    tensor_values,
)
from .core import CASES, ScriptCase, _u, call_r, with_dtype

# ---- ag_compile: a compiled Adam step replayed with new inputs, R vs Python ------------------


def _compile_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        P = {k: pg.ag_param(d[k]) for k in MLP}
        opt = pg.optimizer_adam(P, lr=0.01, weight_decay=0.05, accumulate_steps=2)

        def f(x, y):
            h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(P["W1"], x), P["b1"]))
            return pg.ag_softmax_cross_entropy_loss(pg.ag_add(pg.ag_matmul(P["W2"], h), P["b2"]), y)

        y0 = np.asarray(d["y"], dtype=np.float64).reshape(1, -1)
        step = pg.ag_compile(f, d["x"], y0, optimizer=opt)
        out = []
        for s in range(1, steps + 1):
            rec = {"loss": np.array([step(d["x"] * (1 + 0.1 * s), (y0 + s) % 3)])}
            out.append({**rec, **tensor_values(P)})
        return out

    return with_dtype(dtype, run)


def _compile_r(d, steps, dtype):
    return mlp_script_r("parity_compile", d, steps, dtype, np.asarray(d["y"], dtype=np.float64))


CASES.append(
    ScriptCase(
        "ag_compile: compiled adam steps (accumulate 2)",
        _compile_py,
        _compile_r,
        6,
        _mlp_inputs,
        group="compile",
    )
)


# ---- ag_fit(static = TRUE): the compiled training loop, R vs Python --------------------------
# Both sides train through compiled graphs (one "opt" graph, "forward" graphs for the validation
# widths 4 and 3), batch norm updating its running statistics on every replay, a rate-0 dropout
# layer (the two RNGs differ by design) and layer norm; shuffle off (see the ag_fit cases).

_ARCH = (
    'ag_sequential(ag_linear(4, 8, "relu"), ag_batch_norm(8), ag_dropout(0), '
    "ag_layer_norm(8), ag_linear(8, 3))"
)
_PARAMS = {
    "layer1_W": (8, 4),
    "layer1_b": (8, 1),
    "layer2_gamma": (8, 1),
    "layer2_beta": (8, 1),
    "layer4_gamma": (8, 1),
    "layer4_beta": (8, 1),
    "layer5_W": (3, 8),
    "layer5_b": (3, 1),
}


def _fit_static_inputs(rng):
    init = {
        k: (_u(rng, *s, lo=0.5, hi=1.5) if k.endswith("gamma") else _u(rng, *s))
        for k, s in _PARAMS.items()
    }
    return {"init": init, "x": _u(rng, 4, 28, lo=-2, hi=2), "y": rng.integers(0, 3, size=28)}


def _fit_static_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        m = eval_arch(_ARCH)
        ps = m.parameters()
        for k, v in d["init"].items():
            ps[k].data = v
        opt = pg.optimizer_adam(m.parameters(), lr=0.02, weight_decay=0.01)
        return fit_py(
            m,
            d["x"],
            d["y"],
            loss="cross_entropy",
            optimizer=opt,
            nepoch=steps,
            batch_size=4,
            nbatch_logical=8,
            val_split=0.25,
            static=True,
        )

    return with_dtype(dtype, run)


def _fit_static_r(d, steps, dtype):
    return fit_r_records(
        call_r(
            "parity_fit_static",
            dtype=dtype,
            arch=_ARCH,
            init=d["init"],
            x=d["x"],
            y=d["y"],
            nepoch=steps,
            hist_keys=np.array(HIST_KEYS),
        )
    )


CASES.append(
    ScriptCase(
        "ag_fit: static=TRUE, batch/layer norm, val 4+3",
        _fit_static_py,
        _fit_static_r,
        3,
        _fit_static_inputs,
        group="compile",
    )
)
