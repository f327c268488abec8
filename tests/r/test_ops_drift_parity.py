"""Drifts between the Python and R front ends in the functional ops and losses (issue 29): each
case is the same hostile call in both languages, with the same condition class and text (R's
class name for Python's type, R's display of a value for Python's), or the same value."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_M = np.arange(1.0, 7).reshape((2, 3), order="F")
_CE = "ag_softmax_cross_entropy_loss"
_RESHAPE = "ag_reshape: nrow must be an integer within +/-2147483647 (-1: inferred from x's size)"
_DIM = "dim must be {} (all), 1 (per row) or 2 (per column), got "


def _x():
    return pg.ag_param(_M)


_CASES = [  # (id, Python call on x, R call on x, Python type, Python text, R text or None: the same)
    ("rsub", lambda x: "a" - x, '"a" - x', pg.DTypeError,  # Python named "pyggmlr"
     "ag_sub: expected a numeric matrix, vector or ag_tensor, got dtype <U1",
     "ag_sub: expected a numeric matrix, vector or ag_tensor, got character"),
    ("pow str", lambda x: x ** "a", 'x ^ "a"', pg.ArgumentError,  # Python named ag_pow
     "ag_tensor: '**' needs a tensor base and a single-number exponent (x ** p); for b ** x use "
     "ag_exp(x * math.log(b))",
     "ag_tensor: '^' needs a tensor base and a single-number exponent (x ^ p); for b ^ x use "
     "ag_exp(x * log(b))"),
    ("rpow", lambda x: 2 ** x, "2 ^ x", pg.ArgumentError,  # Python: a bare TypeError
     "ag_tensor: '**' needs a tensor base and a single-number exponent (x ** p); for b ** x use "
     "ag_exp(x * math.log(b))",
     "ag_tensor: '^' needs a tensor base and a single-number exponent (x ^ p); for b ^ x use "
     "ag_exp(x * log(b))"),
    ("scale str", lambda x: pg.ag_scale(x, "a"), 'ag_scale(x, "a")', pg.ArgumentError,
     "ag_scale: 'scalar' must be a single number, got 'a'",
     "ag_scale: 'scalar' must be a single number, got \"a\""),
    ("pow pair", lambda x: pg.ag_pow(x, [1, 2]), "ag_pow(x, c(1, 2))", pg.ArgumentError,
     "ag_pow: 'p' must be a single number, got [1, 2]",
     "ag_pow: 'p' must be a single number, got c(1, 2)"),
    ("clamp none", lambda x: pg.ag_clamp(x, 1, None), "ag_clamp(x, 1, NULL)", pg.ArgumentError,
     "ag_clamp: 'hi' must be a single number, got None",
     "ag_clamp: 'hi' must be a single number, got NULL"),
    ("sum dim 3", lambda x: pg.ag_sum(x, 3), "ag_sum(x, 3)", pg.PyggmlrValueError,
     "ag_sum: " + _DIM.format("None") + "3", "ag_sum: " + _DIM.format("NULL") + "3"),
    ("mean dim str", lambda x: pg.ag_mean(x, "a"), 'ag_mean(x, "a")', pg.ArgumentError,
     "ag_mean: " + _DIM.format("None") + "str 'a'", "ag_mean: " + _DIM.format("NULL") + '"a"'),
    ("reshape 3", lambda x: pg.ag_reshape(x, (3, 2, 1)), "ag_reshape(x, c(3, 2, 1))",
     pg.PyggmlrValueError, "ag_reshape: a shape must be (nrow, ncol), got (3, 2, 1)",
     "ag_reshape: a shape must be c(nrow, ncol), got c(3, 2, 1)"),
    ("reshape pair and ncol", lambda x: pg.ag_reshape(x, (3, 2), 5), "ag_reshape(x, c(3, 2), 5)",
     pg.ArgumentError, _RESHAPE + ", got tuple (3, 2)", _RESHAPE + ", got c(3, 2)"),
    ("gather length", lambda x: pg.ag_gather(x, [0, 1]), "ag_gather(x, c(0, 1))", pg.ShapeError,
     "ag_gather: index has length 2, x has 3 columns", None),
    ("gather kind", lambda x: pg.ag_gather(x, "a"), 'ag_gather(x, "a")', pg.ArgumentError,
     "ag_gather: index must be numeric (0-based integers)", None),
    ("gather tensor",  # Python read a Tensor's values as the index, R refused it (ggmlR too)
     lambda x: pg.ag_gather(x, pg.ag_tensor(np.zeros((1, 3)))), "ag_gather(x, ag_tensor(matrix(0, 1, 3)))",
     pg.ArgumentError, "ag_gather: index must be numeric (0-based integers)", None),
    ("gather inf", lambda x: pg.ag_gather(x, [0, 1, np.inf]), "ag_gather(x, c(0, 1, Inf))",
     pg.PyggmlrValueError, "ag_gather: index out of range 0..1 (indices are 0-based)", None),
    ("ce target kind", lambda x: pg.ag_softmax_cross_entropy_loss(x, "a"),
     f'{_CE}(x, "a")', pg.ArgumentError, f"{_CE}: target must be numeric, got dtype <U1",
     f"{_CE}: target must be numeric, got character"),
    ("ce target 3-d", lambda x: pg.ag_softmax_cross_entropy_loss(x, np.ones((2, 3, 2))),
     f"{_CE}(x, array(1, c(2, 3, 2)))", pg.ShapeError,
     f"{_CE}: logits are [2x3] but target is a 2x3x2 array; give a one-hot matrix of the "
     "logits' shape or one class id per column", None),
    ("ce weight kind", lambda x: pg.ag_softmax_cross_entropy_loss(x, [0, 1, 1], weight="a"),
     f'{_CE}(x, c(0, 1, 1), weight = "a")', pg.ArgumentError,
     f"{_CE}: weight must be numeric, got dtype <U1", f"{_CE}: weight must be numeric, got character"),
    ("pos_weight NA",  # R's NA (a logical) was "got booleans"; positions: each language's base
     lambda x: pg.ag_bce_with_logits_loss(x, np.ones((2, 3)), pos_weight=np.nan),
     "ag_bce_with_logits_loss(x, matrix(1, 2, 3), pos_weight = NA)", pg.PyggmlrValueError,
     "ag_bce_with_logits_loss: pos_weight must be finite and >= 0, got nan at position 0 of [1x1] f32",
     "ag_bce_with_logits_loss: pos_weight must be finite and >= 0, got NaN at position 1 of [1x1] f32"),
    ("huber 1e400",  # Python raised a bare OverflowError
     lambda x: pg.ag_huber_loss(x, np.ones((2, 3)), delta=10**400),
     "ag_huber_loss(x, matrix(1, 2, 3), delta = 1e400)", pg.PyggmlrValueError,
     "ag_huber_loss: delta must be a finite number > 0, got inf",
     "ag_huber_loss: delta must be a finite number > 0, got Inf"),
    ("reshape -1e400", lambda x: pg.ag_reshape(x, -(10**400)), "ag_reshape(x, -1e400)",
     pg.PyggmlrValueError, _RESHAPE + ", got -inf", _RESHAPE + ", got -Inf"),  # 400 digits
    ("eps 1e400", lambda x: pg.ag_batch_norm(3, eps=10**400), "ag_batch_norm(3, eps = 1e400)",
     pg.PyggmlrValueError, "ag_batch_norm: eps must be a finite number >= 0, got inf",
     "ag_batch_norm: eps must be a finite number >= 0, got Inf"),
    ("label_smoothing 1e400",
     lambda x: pg.ag_softmax_cross_entropy_loss(x, [0, 1, 1], label_smoothing=10**400),
     f"{_CE}(x, c(0, 1, 1), label_smoothing = 1e400)", pg.PyggmlrValueError,
     f"{_CE}: label_smoothing must be a number in [0, 1), got inf",
     f"{_CE}: label_smoothing must be a number in [0, 1), got Inf"),
]  # fmt: skip


@pytest.mark.parametrize("call, rcall, exc, text, rtext", [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])  # fmt: skip
def test_same_refusal(call, rcall, exc, text, rtext):
    same_refusal(lambda: call(_x()), rcall, exc, text, rtext, setup="x <- ag_param(m); ", m=_M)


@pytest.mark.parametrize("call, rcall", [
    # Python freed the temporary tensor of plain pred data before the core call
    (lambda x: pg.ag_mse_loss(np.ones((2, 3)), x), "ag_mse_loss(matrix(1, 2, 3), x)"),
    (lambda x: pg.ag_cross_entropy_loss(np.full((2, 3), 0.5), x),
     "ag_cross_entropy_loss(matrix(0.5, 2, 3), x)"),
    (lambda x: pg.ag_sum(x, 1.0), "ag_sum(x, 1)"),  # Python refused a whole float dim
    (lambda x: pg.ag_mean(x, np.float64(2)), "ag_mean(x, 2)"),
    (lambda x: 1 - x, "1 - x"),
    (lambda x: pg.ag_scale(x, 10**400), "ag_scale(x, 1e400)"),  # Python refused 10**400
    (lambda x: pg.ag_pow(x, -(10**400)), "ag_pow(x, -1e400)"),
    (lambda x: x ** np.float32(2), "x ^ 2"),  # numpy scalars and NaN: single numbers, as R's
    (lambda x: x ** np.nan, "x ^ NaN"),
])  # fmt: skip
def test_same_value(call, rcall):
    got = call(_x()).numpy()
    want = r.run(f"x <- ag_param(m); ({rcall})$data", m=_M)
    np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float32).reshape(got.shape))
