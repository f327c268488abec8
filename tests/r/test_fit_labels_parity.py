"""ag_fit's class labels given as strings, in Python (an array of str) and in R (a character
vector, through rpy2): the same classes (code-point order), the same bits, and validation_data's
missing and unknown labels refused with the same class and text (pg_fit_labels_missing)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.random.default_rng(1).normal(size=(4, 30))
_Y = np.array(["b", "B", "a", "\u00e9", "Z", "lion"] * 5)

_R_FIT = """ag_dtype("f64")
on.exit(ag_dtype("f32"), add = TRUE)
ggml_set_seed(3L)
m <- ag_sequential(ag_linear(4, 8, "relu"), ag_linear(8, 6))
h <- ag_fit(m, x, y, nepoch = 3L, batch_size = 10L, silent = TRUE, seed = 1L,
            validation_data = list(x[, 1:6], y[1:6]))
d <- as.data.frame(h)
list(d$loss, d$val_loss, m$classes, ag_predict(m, x), as.character(ag_predict(m, x, type = "class")))"""


def test_strings_fit_the_same_bits_and_classes():
    prev = pg.ag_dtype("f64")
    try:
        pg.ggml_set_seed(3)
        m = pg.ag_sequential(pg.ag_linear(4, 8, activation="relu"), pg.ag_linear(8, 6))
        h = pg.ag_fit(m, _X, _Y, nepoch=3, batch_size=10, silent=True, seed=1,
                      validation_data=(_X[:, :6], _Y[:6]))  # fmt: skip
        out = pg.ag_predict(m, _X)
        cls = pg.ag_predict(m, _X, type="class")
    finally:
        pg.ag_dtype(prev)
    loss, val_loss, classes, rout, rcls = r.run(_R_FIT, x=_X, y=_Y)
    assert list(m.classes_) == ["B", "Z", "a", "b", "lion", "\u00e9"]  # code points
    assert list(np.atleast_1d(classes)) == list(m.classes_)
    np.testing.assert_array_equal(np.asarray(loss), np.asarray(h.loss))
    np.testing.assert_array_equal(np.asarray(val_loss), np.asarray(h.val_loss))
    np.testing.assert_array_equal(np.asarray(rout), np.asarray(out))
    assert list(np.atleast_1d(rcls)) == list(cls)


_R_VAL = """tryCatch({{
  ag_fit(ag_linear(4, 6), x, y, nepoch = 1L, silent = TRUE,
         validation_data = list(x[, 1:3], {yv})); list("none", "")
}}, error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""
_VAL = [  # Python validation y, R validation y
    (np.array(["a", None, None], dtype=object), 'c("a", NA, NA)'),
    (["a", "b", float("nan")], 'factor(c("a", "b", NA))'),
    (["a", "zz", "b"], 'c("a", "zz", "b")'),
    (["a", "it's", "b"], 'c("a", "it\'s", "b")'),  # quoted the same way
    (["a", "\u00e9" * 50, "b"], 'c("a", strrep("\u00e9", 50), "b")'),  # 40 code points shown
]


@pytest.mark.parametrize("yv, ryv", _VAL, ids=[v[1] for v in _VAL])
def test_validation_label_refusals_same_text(yv, ryv):
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_fit(pg.ag_linear(4, 6), _X, _Y, nepoch=1, silent=True,
                  validation_data=(_X[:, :3], yv))  # fmt: skip
    rclass, rmsg = r.run(_R_VAL.format(yv=ryv), x=_X, y=_Y)
    assert [rclass, rmsg] == [_R_CLASS[pg.PyggmlrValueError], str(e.value)]
    assert rmsg.startswith("ag_fit: validation_data")


_R_EVAL = """ag_dtype("f64")
on.exit(ag_dtype("f32"), add = TRUE)
m <- ag_sequential(ag_linear(4, 6))
ag_fit(m, x, y, nepoch = 1L, batch_size = 10L, silent = TRUE, seed = 1L)
tryCatch({{ ag_evaluate(m, x[, 1:3], {yv}, metrics = "accuracy"); list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""


@pytest.mark.parametrize("yv, ryv", [(["a", "wolf", "b"], 'c("a", "wolf", "b")'),
                                     (["a", None, "b"], 'c("a", NA, "b")')])  # fmt: skip
def test_evaluate_unknown_label_same_text(yv, ryv):
    prev = pg.ag_dtype("f64")
    try:
        m = pg.ag_sequential(pg.ag_linear(4, 6))
        pg.ag_fit(m, _X, _Y, nepoch=1, batch_size=10, silent=True, seed=1)
        with pytest.raises(pg.PyggmlrValueError) as e:
            pg.ag_evaluate(m, _X[:, :3], yv, metrics="accuracy")
    finally:
        pg.ag_dtype(prev)
    rclass, rmsg = r.run(_R_EVAL.format(yv=ryv), x=_X, y=_Y)
    assert [rclass, rmsg] == [_R_CLASS[pg.PyggmlrValueError], str(e.value)]
    assert "is not one of the model's classes ('B', 'Z', 'a'" in rmsg
