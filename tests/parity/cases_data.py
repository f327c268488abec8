"""The shipped data sets, R vs Python (issue 31): load_breast_cancer(), load_digits() and
load_letters() give bit-identical x, the same class ids and labels, the same class and feature
names in both languages (one file each, read by numpy's float() and by R's read.csv)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, call_r, r_values, with_dtype

LOADERS = ("load_breast_cancer", "load_digits", "load_letters")


def _text(strings: Any) -> np.ndarray:
    """Strings as one record value: their bytes, newline-separated."""
    return np.frombuffer("\n".join(str(s) for s in strings).encode(), dtype=np.uint8).astype(
        np.float64
    )


def _record(name: str, x: Any, y: Any, labels: Any, classes: Any, features: Any) -> Record:
    return {
        f"{name} x": np.asarray(x, dtype=np.float64),
        f"{name} y": np.asarray(y, dtype=np.float64).ravel(),
        f"{name} labels": _text(np.atleast_1d(labels)),
        f"{name} classes": _text(np.atleast_1d(classes)),
        f"{name} features": _text(np.atleast_1d(features)),
    }


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    rec: Record = {}
    for name in LOADERS:
        x, y, classes, features = getattr(pg, name)()
        rec.update(_record(name, x, y, [classes[i] for i in y], classes, features))
    return [rec]


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    rec: Record = {}
    for name in LOADERS:
        res = call_r("parity_dataset", loader=name)  # tests/parity/datasets.R
        rec.update(
            _record(name, res["x"], res["y"], res["labels"], res["classes"], res["features"])
        )
    return [rec]


# runs in both dtypes, as every case: the loaders return float64 whatever the default dtype
CASES.append(
    ScriptCase("data: shipped data sets (x, labels, names)", _py, _r, 1, lambda rng: {},
               group="data")
)  # fmt: skip


# The sequences guide (vignettes/08-sequences.md, r/vignettes/sequences.Rmd): Python's
# load_sunspots() is R's sunspot.month bit for bit, and the guide's windows, scaling, GRU and
# ag_fit give the same bits in both languages (a shorter fit: 1 epoch on every 4th window), and
# so does the forecast ahead through return_state.
def _sunspots_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    s, year, month = pg.load_sunspots()
    z = (s - 50) / 40
    targets = np.arange(120, len(s))
    x = np.stack([z[t - 60 : t] for t in targets], axis=1)
    y = z[targets][None, :]
    train = targets < len(s) - 600
    rec0 = {"sunspots": s, "year": year.astype(np.float64), "month": month.astype(np.float64)}

    def run():
        pg.ggml_set_seed(1)
        model = pg.ag_sequential(pg.ag_gru(1, 8), pg.ag_linear(8, 1))
        xt, yt = x[:, train][:, ::4], y[:, train][:, ::4]
        h = pg.ag_fit(model, xt, yt, loss="mse", nepoch=steps, batch_size=32, lr=3e-3, seed=11,
                      verbose=0)  # fmt: skip
        res = pg.ag_evaluate(model, x[:, ~train], y[:, ~train], metrics=["rmse"])
        # the guide's forecast ahead: a return_state twin fed its own forecasts, 3 months
        gru, readout = model.layers
        stepper = pg.ag_gru(1, 8, return_state=True)
        pg.ag_load_state_dict(stepper, pg.ag_state_dict(gru))
        st: Any = stepper(pg.ag_tensor(x[:, ~train]))  # (output, h_n)
        p = readout(st[1])
        for _ in range(2):
            st = stepper(p, h0=st[1])
            p = readout(st[1])
        return {"loss": np.asarray(h.loss), "rmse": np.asarray([res["rmse"]]),
                "predict": pg.ag_predict(model, x[:, ~train]).astype(np.float64),
                "ahead": p.numpy().astype(np.float64)}  # fmt: skip

    return [rec0, with_dtype(dtype, run)]


def _sunspots_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    res = call_r("parity_sunspots", dtype=dtype, nepoch=steps)  # tests/parity/datasets.R
    return [{k: r_values(v) for k, v in rec.items()} for rec in res]


CASES.append(
    ScriptCase("data: sunspots and the sequences guide's GRU", _sunspots_py, _sunspots_r, 1,
               lambda rng: {}, group="data")
)  # fmt: skip
