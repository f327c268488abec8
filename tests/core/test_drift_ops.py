"""The functional ops and losses refuse hostile input as R does (issue 29): the same class, the same
words (R's display of a value for Python's), the same first error, and valid calls R accepts are
not refused. R's test-drift-ops.R has the same cases; tests/r/test_ops_drift_parity.py runs them
in both languages."""

import numpy as np
import pytest
from _rclass import refused

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

_M = np.arange(1.0, 7).reshape((2, 3), order="F")  # R's matrix(1:6, 2, 3)


def _x():
    return pg.ag_param(_M)


def test_losses_take_plain_pred_data():
    """the temporary tensor of plain pred data was freed before the core call ("argument 'pred'
    is not a live tensor"); R computed the loss"""
    x = _x()
    got = pg.ag_mse_loss(np.ones((2, 3)), x).numpy()
    np.testing.assert_allclose(got, [[np.mean((1 - _M) ** 2)]], rtol=1e-6)
    got = pg.ag_cross_entropy_loss(np.full((2, 3), 0.5), np.ones((2, 3))).numpy()
    np.testing.assert_allclose(got, [[-2 * np.log(0.5)]], rtol=1e-6)


def test_reflected_operators_name_their_op():
    """`"a" - x` named "pyggmlr", R's `-` names ag_sub"""
    x = _x()
    for call, op in ((lambda: "a" - x, "ag_sub"), (lambda: "a" / x, "ag_div")):
        with pytest.raises(pg.DTypeError, match=f"^{op}: "):
            call()
    np.testing.assert_array_equal((1 - x).numpy(), 1 - _M)  # the same values as before
    np.testing.assert_array_equal((2 / x).numpy(), (2 / _M).astype(np.float32))


_POW = (
    "ag_tensor: '**' needs a tensor base and a single-number exponent (x ** p); for b ** x use "
    "ag_exp(x * math.log(b))"
)


def test_power_operator_has_r_rule():
    """`x ** "a"` named ag_pow and `2 ** x` was a bare TypeError; R's `^` has its own rule and text
    (the same words, each language's operator)"""
    x = _x()
    for call in (lambda: x ** "a", lambda: x ** np.array([2.0]), lambda: x**x, lambda: 2**x):
        with pytest.raises(ArgumentError) as e:
            call()
        assert str(e.value) == _POW
    for p in (2, 2.0, True, np.float32(2), np.array(2.0), np.bool_(True)):  # single numbers
        np.testing.assert_array_equal((x**p).numpy(), (_M ** float(p)).astype(np.float32))
    np.testing.assert_array_equal((x**np.nan).numpy(), _M**np.nan)  # NaN reaches ag_pow, as R


@pytest.mark.parametrize("call, text", [
    (lambda x: pg.ag_scale(x, "a"), "ag_scale: 'scalar' must be a single number, got 'a'"),
    (lambda x: pg.ag_scale(x, None), "ag_scale: 'scalar' must be a single number, got None"),
    (lambda x: pg.ag_pow(x, [1, 2]), "ag_pow: 'p' must be a single number, got [1, 2]"),
    (lambda x: pg.ag_clamp(x, 1, None), "ag_clamp: 'hi' must be a single number, got None"),
])  # fmt: skip
def test_scalar_arguments_have_rs_words(call, text):
    """Python said "'scalar' must be a number, got str", R "'scalar' must be a single number" """
    refused(lambda: call(_x()), ArgumentError, text)


def test_sum_dim_is_the_one_integer_rule():
    """R's text lacked the value; Python refused 1.0, which R's 1 is; the wrong kind is an
    ArgumentError in both (the core's pg_arg_int)"""
    rule = "ag_sum: dim must be None (all), 1 (per row) or 2 (per column), got "
    refused(lambda: pg.ag_sum(_x(), 3), PyggmlrValueError, rule + "3")
    refused(lambda: pg.ag_sum(_x(), 1.5), PyggmlrValueError, rule + "1.5")
    refused(lambda: pg.ag_sum(_x(), "a"), ArgumentError, rule + "str 'a'")
    refused(
        lambda: pg.ag_mean(_x(), True), ArgumentError, rule.replace("sum", "mean") + "bool True"
    )
    np.testing.assert_array_equal(pg.ag_sum(_x(), 1.0).numpy(), [[9], [12]])
    np.testing.assert_array_equal(pg.ag_mean(_x(), np.float64(2)).numpy(), [[1.5, 3.5, 5.5]])


def test_reshape_pair_rules():
    """a pair with ncol given too ignored ncol (R refuses the pair as nrow)"""
    x = _x()
    refused(lambda: pg.ag_reshape(x, (3, 2), 5), ArgumentError,
             "ag_reshape: nrow must be an integer within +/-2147483647 (-1: inferred from x's "
             "size), got tuple (3, 2)")  # fmt: skip
    refused(lambda: pg.ag_reshape(x, (3, 2, 1)), PyggmlrValueError,
             "ag_reshape: a shape must be (nrow, ncol), got (3, 2, 1)")  # fmt: skip
    assert pg.ag_reshape(x, (3, 2)).shape == pg.ag_reshape(x, 3).shape == (3, 2)
    assert pg.ag_reshape(x, -1, 2).shape == (3, 2)


@pytest.mark.parametrize("index, exc, text", [
    ([0, 1], ShapeError, "ag_gather: index has length 2, x has 3 columns"),
    ("a", ArgumentError, "ag_gather: index must be numeric (0-based integers)"),
    ([True, False, True], ArgumentError, "ag_gather: index must be numeric (0-based integers)"),
    ([0, 1, np.inf], PyggmlrValueError, "ag_gather: index out of range 0..1 (indices are 0-based)"),
    ([-np.inf, 1, 0.5], PyggmlrValueError, "ag_gather: index must be whole numbers (0-based)"),
])  # fmt: skip
def test_gather_index_classes_and_order(index, exc, text):
    """the length was a PyggmlrValueError (R and the core: a shape error), a non-numeric index too
    (R: an argument error), an infinite index "not whole" (ggmlR: out of range)"""
    refused(lambda: pg.ag_gather(_x(), index), exc, text)


def test_softmax_ce_target_texts():
    x = _x()
    op = "ag_softmax_cross_entropy_loss"
    refused(lambda: pg.ag_softmax_cross_entropy_loss(x, "a"), ArgumentError,
             f"{op}: target must be numeric, got dtype <U1")  # fmt: skip
    refused(lambda: pg.ag_softmax_cross_entropy_loss(x, np.ones((2, 3, 2))), ShapeError,
             f"{op}: logits are [2x3] but target is a 2x3x2 array; give a one-hot matrix of the "
             "logits' shape or one class id per column")  # fmt: skip


def test_loss_weights_texts():
    x = _x()
    refused(lambda: pg.ag_softmax_cross_entropy_loss(x, [0, 1, 1], weight="a"), ArgumentError,
             "ag_softmax_cross_entropy_loss: weight must be numeric, got dtype <U1")  # fmt: skip
    refused(lambda: pg.ag_bce_with_logits_loss(x, np.ones((2, 3)), pos_weight=np.nan),
             PyggmlrValueError, "ag_bce_with_logits_loss: pos_weight must be finite and >= 0, got "
             "nan at position 0 of [1x1] f32")  # fmt: skip


def test_an_int_past_a_double_is_inf():
    """10**400 raised a bare OverflowError (huber delta, label_smoothing, ignore_index) or was
    refused as not a number (ag_scale / ag_pow / ag_clamp); R reads 1e400 as Inf"""
    x = _x()
    assert np.isposinf(pg.ag_scale(x, 10**400).numpy()).all()
    np.testing.assert_array_equal(pg.ag_clamp(x, -(10**400), 3).numpy(), np.minimum(_M, 3))
    refused(lambda: pg.ag_huber_loss(x, np.ones((2, 3)), delta=10**400), PyggmlrValueError,
             "ag_huber_loss: delta must be a finite number > 0, got inf")  # fmt: skip
    refused(lambda: pg.ag_softmax_cross_entropy_loss(x, [0, 1, 1], ignore_index=-(10**400)),
             PyggmlrValueError,
             "ag_softmax_cross_entropy_loss: ignore_index must be a whole number, got -inf")  # fmt: skip
    refused(lambda: pg.ag_reshape(x, -(10**400)), PyggmlrValueError,  # 400 digits spelled out
             "ag_reshape: nrow must be an integer within +/-2147483647 (-1: inferred from x's "
             "size), got -inf")  # fmt: skip
    refused(lambda: pg.ag_batch_norm(3, eps=10**400), PyggmlrValueError,  # an OverflowError
             "ag_batch_norm: eps must be a finite number >= 0, got inf")  # fmt: skip
    with pytest.raises(PyggmlrValueError) as e:  # shown as R's .arg_show: at most 80 characters
        pg.ag_reshape(x, 10**100)
    assert str(e.value).endswith(", got " + "1" + "0" * 76 + "...")
