"""ag_fit(sample_weight=, class_weight=)'s refusals in Python and in R (through rpy2): the same
condition class and, for the core's rules (native/fit_weight.c), the same text."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 16).reshape(2, 8, order="F")
_Y = np.array([0.0, 1] * 4)

_CASES = [  # (Python keyword arguments, R arguments, Python type)
    (dict(sample_weight=[1.0, 2, 3]), "sample_weight = c(1, 2, 3)", pg.ShapeError),
    (dict(sample_weight=[0.0] * 8), "sample_weight = rep(0, 8)", pg.PyggmlrValueError),
    (dict(class_weight={1: -2.0}), 'class_weight = c("1" = -2)', pg.PyggmlrValueError),
    (dict(class_weight=[0.0, 0.0]), "class_weight = c(0, 0)", pg.PyggmlrValueError),
    (dict(loss="mse", class_weight=[1.0, 2.0]), 'loss = "mse", class_weight = c(1, 2)',
     pg.PyggmlrValueError),
    (dict(loss="huber", class_weight={0: 1.0}, sample_weight=[1.0] * 8),
     'loss = "huber", class_weight = c("0" = 1), sample_weight = rep(1, 8)', pg.PyggmlrValueError),
]  # fmt: skip

_R = """a <- list(nepoch = 1L, batch_size = 2L, silent = TRUE)
b <- list({a})
a[names(b)] <- b
tryCatch({{ do.call(ag_fit, c(list(ag_linear(2, 2), x, y), a)); list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""


def _both(kw, code, exc, y):
    """(Python's message, R's class, R's message) of the same refused ag_fit call."""
    with pytest.raises(exc) as e:
        pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=1, batch_size=2, silent=True, **kw)
    return (str(e.value), *r.run(_R.format(a=code), x=_X, y=y))


@pytest.mark.parametrize("kw, code, exc", _CASES, ids=[c[1] for c in _CASES])
def test_same_class_and_text(kw, code, exc):
    # a regression's y has the 2 outputs' rows (ag_fit checks them before the weights)
    y = np.vstack([_Y, _Y]) if kw.get("loss") in ("mse", "huber") else _Y
    msg, rclass, rmsg = _both(kw, code, exc, y)
    assert (rclass, rmsg) == (_R_CLASS[exc], msg)
    assert rmsg.startswith("ag_fit: ")


_Y_BAD = np.array([0.0, 1, 0, 1, 0, 1, 0, 5])  # a class id the 2-output model cannot have


@pytest.mark.parametrize(
    "kw, code, exc",
    [
        (dict(sample_weight=np.ones((2, 4))), "sample_weight = matrix(1, 2, 4)", pg.ShapeError),
        (dict(sample_weight="abc"), 'sample_weight = "abc"', pg.ArgumentError),
        (dict(class_weight="abc"), 'class_weight = "abc"', pg.ArgumentError),
    ],
)
def test_weights_are_checked_before_the_targets(kw, code, exc):
    # a call wrong in its weights' kind or shape and in y: both languages name the weights
    # (R always did; Python named y's class ids first)
    msg, rclass, rmsg = _both(kw, code, exc, _Y_BAD)
    assert rclass == _R_CLASS[exc]
    what = "sample_weight" if "sample_weight" in kw else "class_weight"
    assert msg.startswith(f"ag_fit: {what} ") and rmsg.startswith(f"ag_fit: {what} ")
    if exc is pg.ShapeError:  # the core's text
        assert rmsg == msg


_LAB = np.array(["b", "a"] * 4)  # labels y: classes a, b (ids 1, 0)
_NOT_A_LABEL = "is not one of y's labels ('a', 'b'); with labels y, class_weight is keyed by label"
_KEYS = [  # (Python class_weight, R class_weight, y, the text after "ag_fit: class_weight")
    ({0: 2.0}, 'c("0" = 2)', _LAB, f"'s key '0' {_NOT_A_LABEL}"),
    ({-1: 2.0}, 'c("-1" = 2)', _LAB, f"'s key '-1' {_NOT_A_LABEL}"),
    ({"a": 1.0, "z": 2.0}, "c(a = 1, z = 2)", _LAB, f"'s key 'z' {_NOT_A_LABEL}"),
    ({None: 1.0}, "stats::setNames(1, NA)", _LAB, " has a missing key (NA or None)"),
    ({"a": 2.0}, "c(a = 2)", _Y, "'s keys must be 0-based class ids (y holds class ids, not"),
    ({-1: 2.0}, 'c("-1" = 2)', _Y, "'s keys must be 0-based class ids (whole numbers >= 0)"),
    ({"a": -2.0}, "c(a = -2)", _LAB, " must be finite and >= 0; class 'a' has -2"),  # issue 29
]  # fmt: skip


@pytest.mark.parametrize("cw, code, y, text", _KEYS, ids=[f"{c[1]} {c[2][0]}" for c in _KEYS])
def test_class_weight_keys_same_class_and_text(cw, code, y, text):
    # labels y: keyed by label in both languages (Python refused string keys), never by id
    msg, rclass, rmsg = _both(
        dict(class_weight=cw), f"class_weight = {code}", pg.PyggmlrValueError, y
    )
    assert (rclass, rmsg) == (_R_CLASS[pg.PyggmlrValueError], msg)
    assert msg.startswith(f"ag_fit: class_weight{text}")


_R_LABELS = """ggml_set_seed(5L)
h <- ag_fit(ag_linear(2, 2), x, y, nepoch = 2L, batch_size = 2L, silent = TRUE, seed = 1L,
            class_weight = c(b = 0.5, a = 2))
h$loss"""


def test_label_keys_train_the_same_bits():
    pg.ggml_set_seed(5)
    h = pg.ag_fit(pg.ag_linear(2, 2), _X, _LAB, nepoch=2, batch_size=2, silent=True, seed=1,
                  class_weight={"b": 0.5, "a": 2.0})  # fmt: skip
    pg.ggml_set_seed(5)
    g = pg.ag_fit(pg.ag_linear(2, 2), _X, _LAB, nepoch=2, batch_size=2, silent=True, seed=1)
    assert h.loss != g.loss  # the weights count
    np.testing.assert_array_equal(np.atleast_1d(r.run(_R_LABELS, x=_X, y=_LAB)), h.loss)
