"""Parity cases for ag_normalization (native/ops_norm.c): the layer adapted on the data in each
language, trained by ag_fit (eager and compiled), saved, and each language's file read by the
other (buffers and predictions), bit for bit. The R half is scaling.R."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List

import numpy as np

from .cases_models import HIST_KEYS, call_r_arch, fit_py, fit_r_records, linear_shapes
from .core import CASES, ScriptCase, _u, call_r, r_values, with_dtype


def _path(side: str, dtype: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"pg-parity-norm-{os.getpid()}-{side}-{dtype}.gguf")


def _cross(pred: Any, buffers: Dict[str, Any]) -> Dict[str, Any]:
    rec = {"other side's read: ag_predict": np.asarray(pred, dtype=np.float64)}
    rec.update({f"other side's read: buffer {k}": np.asarray(v) for k, v in buffers.items()})
    return rec


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def run():
        m = pg.ag_sequential(
            [pg.ag_normalization(features=4), pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 3)]
        )
        ps = m.parameters()
        for k, v in d["init"].items():
            ps[k].data = v
        m.layers[0].adapt(d["x"])
        recs = fit_py(
            m,
            d["x"],
            d["y"],
            loss="mse",
            optimizer="adam",
            nepoch=steps,
            batch_size=4,
            lr=0.05,
            static=d["static"],
        )
        path = _path("py", dtype)
        pg.ag_save_model(m, path)
        return recs, path

    recs, path = with_dtype(dtype, run)
    res = call_r("parity_norm_read", path=path, x=d["x"])  # R reads Python's file
    os.remove(path)
    recs[-1].update(
        _cross(r_values(res["pred"]), {k: r_values(v) for k, v in res["buffers"].items()})
    )
    return recs


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    path = _path("r", dtype)
    res = call_r_arch(
        "parity_norm_fit",
        "norm",
        d,
        dtype=dtype,
        nepoch=steps,
        static=d["static"],
        hist_keys=np.array(HIST_KEYS),
        path=path,
    )
    recs = fit_r_records(res)
    m = pg.ag_load_model(path)  # Python reads R's file
    os.remove(path)
    recs[-1].update(
        _cross(pg.ag_predict(m, d["x"]), {k: t.numpy() for k, t in m.buffers().items()})
    )
    return recs


def _case(name: str, static: bool) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        init = {
            k: _u(rng, *s) for k, s in {**linear_shapes(2, 4, 6), **linear_shapes(3, 6, 3)}.items()
        }
        x = _u(rng, 4, 16, lo=-2, hi=2) * np.array([[1.0], [10.0], [0.1], [3.0]]) + np.array(
            [[5.0], [-20.0], [0.5], [0.0]]
        )
        return {"init": init, "binit": {}, "x": x, "y": _u(rng, 3, 16), "static": static}

    CASES.append(ScriptCase(f"normalization: {name}", _py, _r, 3, inputs, group="fit"))


_case("ag_fit eager, files crossed", False)
_case("ag_fit static, files crossed", True)


# ---- ag_fit(static=None) on a custom layer: compiled (ag ops only) or eager (reads values) ----


def _auto_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import warnings

    import pyggmlr as pg

    class Custom(pg.Module):
        def __init__(self) -> None:
            self.lin = pg.ag_linear(4, 3)
            self.lin.W.data, self.lin.b.data = d["W"], d["b"]

        def forward(self, x):
            if d["host"]:
                return self.lin(pg.ag_tensor(x.numpy() * 1.0))
            return pg.ag_tanh(self.lin(x)) * 2

        def parameters(self):
            return self.lin.parameters()

    def run():
        m = Custom()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            h = pg.ag_fit(
                m,
                d["x"],
                d["y"],
                loss="mse",
                nepoch=steps,
                batch_size=6,
                shuffle=False,
                val_split=0.25,
                silent=True,
            )
        n = sum(issubclass(i.category, pg.StaticFallbackWarning) for i in w)
        return _auto_rec(h.loss, h.val_loss, m.lin.W.numpy(), m.lin.b.numpy(), n)

    return with_dtype(dtype, run)


def _auto_rec(loss, val_loss, W, b, n):
    return [
        {
            "history loss": np.asarray(loss, dtype=np.float64),
            "history val_loss": np.asarray(val_loss, dtype=np.float64),
            "weights W": np.asarray(W),
            "weights b": np.asarray(b),
            "fallback notices": np.asarray(n, dtype=np.float64).reshape(-1),
        }
    ]


def _auto_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    res = call_r(
        "parity_static_auto",
        dtype=dtype,
        W=d["W"],
        b=d["b"],
        x=d["x"],
        y=d["y"],
        nepoch=steps,
        host=d["host"],
    )
    return _auto_rec(*(r_values(res[k]) for k in ("loss", "val_loss", "W", "b", "n_msg")))


def _auto_case(name: str, host: bool) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        return {
            "W": _u(rng, 3, 4),
            "b": _u(rng, 3, 1),
            "x": _u(rng, 4, 48, lo=-2, hi=2),
            "y": _u(rng, 3, 48),
            "host": host,
        }

    CASES.append(ScriptCase(f"static=None: {name}", _auto_py, _auto_r, 2, inputs, group="fit"))


_auto_case("custom layer compiled", False)
_auto_case("host read falls back, one notice", True)
