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
_SETUP = "ggml_set_seed(1); m <- ag_linear(3, 4); wide <- function(x) ag_reshape(x, c(2, 2 * ncol(x))); x <- matrix(1, 4, 5); "
_COLS = (
    "{}: the model returned [2x10] for a batch of 5 samples (batch_size 256); it must return one "
    "column per sample ([outputs x 5]); reshape per-step or per-token outputs to one column per "
    "sample first"
)


def _m():
    pg.ggml_set_seed(1)
    return pg.ag_linear(3, 4)


def _wide(x):
    return pg.ag_reshape(x, 2, 2 * x.shape[1])


_CASES = [  # (id, Python call, R call, Python type, Python text, R text or None: the same)
    ("predict columns",  # both returned the [2x10] outputs of 5 samples
     lambda: pg.ag_predict(_wide, _X), "ag_predict(wide, x)", pg.ShapeError,
     _COLS.format("ag_predict"), None),
    ("evaluate columns", lambda: pg.ag_evaluate(_wide, _X, np.ones((2, 5)), loss="mse"),
     'ag_evaluate(wide, x, matrix(1, 2, 5), loss = "mse")', pg.ShapeError,
     _COLS.format("ag_evaluate"), None),
    ("estimate dtype",  # both failed in ag_linear's words
     lambda: pg.ag_estimate_training_memory(model=_m(), x=np.ones((3, 8)), dtype="f64"),
     'ag_estimate_training_memory(model = m, x = matrix(1, 3, 8), dtype = "f64")', pg.DTypeError,
     'ag_estimate_training_memory(): dtype is "f64" but the model\'s parameters are f32; with a '
     'model, leave dtype out (the model\'s) or give "f32"', None),
    ("estimate x tensor",
     lambda: pg.ag_estimate_training_memory(model=_m(), x=pg.ag_tensor(np.ones((3, 8)), dtype="f64")),
     'ag_estimate_training_memory(model = m, x = ag_tensor(matrix(1, 3, 8), dtype = "f64"))',
     pg.DTypeError, "ag_estimate_training_memory(): x is an f64 tensor but the model's parameters "
     "are f32; give x in f32 (or as numbers: converted to the model's dtype)", None),
    ("fit ids past int64",  # Python: "y must be numeric, got dtype object"
     lambda: pg.ag_fit(_m(), np.ones((3, 2)), [2**70, 1], nepoch=1, verbose=0),
     "ag_fit(m, matrix(1, 3, 2), c(2^70, 1), nepoch = 1, verbose = 0)", pg.PyggmlrValueError,
     "ag_fit: y holds class ids up to 1180591620717411303424 but the model has 4 outputs; ids "
     "are 0-based, in [0, 4)", None),
    ("evaluate ids past int64",  # Python: "y must be numeric, got dtype object"
     lambda: pg.ag_evaluate(_m(), np.ones((3, 2)), [2**70, 1], loss="cross_entropy"),
     'ag_evaluate(m, matrix(1, 3, 2), c(2^70, 1), loss = "cross_entropy")',
     pg.PyggmlrValueError,
     "ag_evaluate: y must be 0-based class ids in [0, 4), sample 1 has 1180591620717411303424",
     None),
    ("embedding ids past int64",  # Python: "ids must be numeric, got dtype object"
     lambda: pg.ag_embedding(5, 3)([2**70, 1]), "ag_embedding(5, 3)$forward(c(2^70, 1))",
     pg.PyggmlrValueError, "ag_embedding: id 1180591620717411303424 at position 0 is out of "
     "range [0, 5) for weight [3x5] f32 (ids are 0-based)", "ag_embedding: id "
     "1180591620717411303424 at position 1 is out of range [0, 5) for weight [3x5] f32 (ids are "
     "0-based)"),
    ("huber delta Inf",  # R said "got inf" (the core's %g)
     lambda: pg.ag_huber_loss(pg.ag_tensor(np.ones((2, 2))), np.ones((2, 2)), delta=np.inf),
     "ag_huber_loss(ag_tensor(matrix(1, 2, 2)), matrix(1, 2, 2), delta = Inf)",
     pg.PyggmlrValueError, "ag_huber_loss: delta must be a finite number > 0, got inf",
     "ag_huber_loss: delta must be a finite number > 0, got Inf"),
    ("clamp Inf", lambda: pg.ag_clamp(pg.ag_tensor(np.ones((2, 2))), np.inf, 0),
     "ag_clamp(ag_tensor(matrix(1, 2, 2)), Inf, 0)", pg.PyggmlrValueError,
     "ag_clamp: lo (inf) must be <= hi (0)", "ag_clamp: lo (Inf) must be <= hi (0)"),
    ("accuracy columns", lambda: pg.ag_accuracy(_wide, _X, np.zeros(5)),
     "ag_accuracy(wide, x, rep(0, 5))", pg.ShapeError, _COLS.format("ag_accuracy"), None),
]  # fmt: skip


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_refused_alike(case):
    _, call, rcall, exc, text, rtext = case
    same_refusal(call, rcall, exc, text, rtext, setup=_SETUP)
