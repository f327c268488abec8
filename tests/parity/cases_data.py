"""The shipped data sets, R vs Python (issue 31): load_breast_cancer(), load_digits() and
load_letters() give bit-identical x, the same class ids and labels, the same class and feature
names in both languages (one file each, read by numpy's float() and by R's read.csv)."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, call_r

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
