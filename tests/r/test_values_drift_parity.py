"""Hostile values that R and Python refused in different words, or not at all (issue 29): each case
is the same hostile call in both languages, with the same condition class and text (R's display
of a value for Python's)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.ones((4, 5))
_SETUP = "wide <- function(x) ag_reshape(x, c(2, 2 * ncol(x))); x <- matrix(1, 4, 5); "
_COLS = (
    "{}: the model returned [2x10] for a batch of 5 samples (batch_size 256); it must return one "
    "column per sample ([outputs x 5]); reshape per-step or per-token outputs to one column per "
    "sample first"
)


def _wide(x):
    return pg.ag_reshape(x, 2, 2 * x.shape[1])


_CASES = [  # (id, Python call, R call, Python type, Python text, R text or None: the same)
    ("predict columns",  # both returned the [2x10] outputs of 5 samples
     lambda: pg.ag_predict(_wide, _X), "ag_predict(wide, x)", pg.ShapeError,
     _COLS.format("ag_predict"), None),
    ("evaluate columns", lambda: pg.ag_evaluate(_wide, _X, np.ones((2, 5)), loss="mse"),
     'ag_evaluate(wide, x, matrix(1, 2, 5), loss = "mse")', pg.ShapeError,
     _COLS.format("ag_evaluate"), None),
    ("accuracy columns", lambda: pg.ag_accuracy(_wide, _X, np.zeros(5)),
     "ag_accuracy(wide, x, rep(0, 5))", pg.ShapeError, _COLS.format("ag_accuracy"), None),
]  # fmt: skip


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_refused_alike(case):
    _, call, rcall, exc, text, rtext = case
    same_refusal(call, rcall, exc, text, rtext, setup=_SETUP)
