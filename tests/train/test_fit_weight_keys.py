"""ag_fit(class_weight=)'s keys (pg_fit_class_keys, R's names too): with labels y (strings, a
Categorical, unused categories included) the labels, never class ids; with class-id y, ids. R's
test-fit-weights.R has the same cases; tests/r/test_fit_weights_parity.py runs both."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError

X = np.random.default_rng(4).normal(size=(4, 30))
LAB = np.array(["b", "a", "c"] * 10)  # classes a, b, c: ids 1, 0, 2
IDS = np.array([1.0, 0, 2] * 10)


class _Cat:  # a pandas Categorical, duck-typed (fit/labels.py): categories and codes
    def __init__(self, codes, categories):
        self.codes, self.categories = np.asarray(codes), list(categories)


def _fit(y, k=3, loss="cross_entropy", act=None, **kw):
    pg.ggml_set_seed(5)
    m = pg.ag_linear(4, k, act)
    return pg.ag_fit(m, X, y, loss=loss, nepoch=2, batch_size=10, silent=True, seed=1, **kw)


def test_labels_key_class_weight_as_their_ids():
    want = _fit(IDS, class_weight={0: 2.0, 2: 0.5}).loss
    assert want != _fit(IDS).loss
    assert _fit(LAB, class_weight={"a": 2.0, "c": 0.5}).loss == want
    cat = _Cat([1, 0, 2] * 10, ["a", "b", "c"])
    assert _fit(cat, class_weight={"c": 0.5, "a": 2.0}).loss == want
    # an unused category is a class of the run (as an unused factor level in R)
    unused = _Cat([1, 0, 2] * 10, ["a", "b", "c", "d"])
    assert (
        _fit(unused, k=4, class_weight={"d": 3.0}).loss
        == _fit(IDS, k=4, class_weight={3: 3.0}).loss
    )
    # validation_data's labels are coded with y's; validation stays unweighted
    v = dict(validation_data=(X[:, :6], LAB[:6]))
    h, g = (
        _fit(LAB, class_weight={"a": 2.0}, **v),
        _fit(IDS, class_weight={0: 2.0}, validation_data=(X[:, :6], IDS[:6])),
    )
    assert (h.loss, h.val_loss) == (g.loss, g.val_loss)
    # two labels with a binary loss: the second is 1
    yb = np.where(IDS > 0, "yes", "no")
    bce = dict(k=1, loss="binary_cross_entropy", act="sigmoid")
    assert (_fit(yb, class_weight={"yes": 3.0}, **bce).loss
            == _fit((IDS[None, :] > 0) * 1.0, class_weight={1: 3.0}, **bce).loss)  # fmt: skip
    # an empty class_weight is none (keras), in both languages
    assert _fit(LAB, class_weight={}).loss == _fit(LAB, class_weight=[]).loss == _fit(LAB).loss


_NOT_A_LABEL = (
    "is not one of y's labels ('a', 'b', 'c'); with labels y, class_weight is keyed by label, "
    "not by class id"
)
_MISSING = "class_weight has a missing key (NA or None); key each weight by its class"
_NOT_ID = "class_weight's keys must be 0-based class ids"
_TWICE = "class_weight names a class twice; class 1 has 2"  # ids: the table's check
_BAD_W = "class_weight must be finite and >= 0;"
_KIND = "class_weight's keys must be class labels (strings) or 0-based class ids (numbers), got"


@pytest.mark.parametrize(
    "y, cw, exc, text",
    [
        (LAB, {0: 2.0}, PyggmlrValueError, f"class_weight's key '0' {_NOT_A_LABEL}"),
        (LAB, {-1: 2.0}, PyggmlrValueError, f"class_weight's key '-1' {_NOT_A_LABEL}"),
        (LAB, {"a": 1.0, "z": 2.0}, PyggmlrValueError, f"class_weight's key 'z' {_NOT_A_LABEL}"),
        (LAB, {1: 1.0, "1": 2.0}, PyggmlrValueError, f"class_weight's key '1' {_NOT_A_LABEL}"),
        (LAB, {None: 1.0}, PyggmlrValueError, _MISSING),
        (IDS, {None: 1.0}, PyggmlrValueError, _MISSING),
        (IDS, {"a": 2.0}, PyggmlrValueError, f"{_NOT_ID} (y holds class ids, not labels); got 'a'"),
        (IDS, {-1: 2.0}, PyggmlrValueError, f"{_NOT_ID} (whole numbers >= 0); got -1"),
        (IDS, {1: 1.0, "1": 2.0}, PyggmlrValueError, _TWICE),
        # a bad weight names its class by label with labels y (issue 29: it named the id)
        (LAB, {"a": 1.0, "c": -2.0}, PyggmlrValueError, f"{_BAD_W} class 'c' has -2"),
        (LAB, [1.0, float("nan")], PyggmlrValueError, f"{_BAD_W} class 'b' has nan"),
        (IDS, {2: -2.0}, PyggmlrValueError, f"{_BAD_W} class 2 has -2"),
        (LAB, {(1, 2): 1.0}, ArgumentError, f"{_KIND} (1, 2)"),
        (IDS, {True: 1.0}, ArgumentError, f"{_KIND} True"),
        (LAB, "abc", ArgumentError, "class_weight must be a dict {class: weight} or a sequence of "
         "weights in class-id order, got 'abc'"),
    ],
)  # fmt: skip
def test_bad_keys_are_refused(y, cw, exc, text):
    with pytest.raises(exc) as e:
        _fit(y, class_weight=cw)
    assert str(e.value) == "ag_fit: " + text


def test_a_bad_weights_label_is_cut_to_40_code_points_as_the_keys():
    long = "é" * 50  # 2 bytes each: the cut counts code points
    y = np.where(LAB == "c", long, LAB)
    with pytest.raises(PyggmlrValueError) as e:
        _fit(y, class_weight={long: -2.0})
    assert str(e.value) == f"ag_fit: {_BAD_W} class '{'é' * 40}' has -2"


def test_numeric_categories_read_as_r_factor_levels():
    """issue 29: a Categorical of floats named its classes "1.0", "2.0" where R's factor(c(1, 2))
    has levels "1", "2"; now the categories read as R writes them (15 digits, fixed unless the
    scientific form is narrower), and a float key with labels y is read the same way"""
    cat = _Cat([1, 0, 2] * 10, [1.0, 2.0, 1e5])
    with pytest.raises(PyggmlrValueError) as e:
        _fit(cat, class_weight={2.0: -1.0})
    assert str(e.value) == "ag_fit: class_weight must be finite and >= 0; class '2' has -1"
    with pytest.raises(PyggmlrValueError) as e:
        _fit(cat, class_weight={"2.0": 1.0})
    assert str(e.value) == (
        "ag_fit: class_weight's key '2.0' is not one of y's labels ('1', '2', '1e+05'); with "
        "labels y, class_weight is keyed by label, not by class id"
    )
    pg.ggml_set_seed(5)
    m = pg.ag_linear(4, 3)
    pg.ag_fit(m, X, _Cat([1, 0, 2] * 10, [0.5, 1.0 / 3, 1e-4]), nepoch=1, batch_size=10,
              silent=True, class_weight={1.0 / 3: 2.0})  # fmt: skip
    assert list(m.classes_) == ["0.5", "0.333333333333333", "1e-04"]


@pytest.mark.parametrize("y, kw, text", [
    (np.array(["a", None, "b"] * 10, dtype=object), {"nepoch": 0},
     "ag_fit: nepoch must be an integer >= 1, got 0"),
    (LAB, {"loss": "mse", "metrics": ["auc"]},
     'ag_fit: metrics: "auc" needs a classification loss (cross_entropy, binary_cross_entropy, '
     "bce_with_logits); a regression takes mae, mse, rmse, r2"),
    (LAB, {"loss": "xx"},
     'ag_fit: unknown loss "xx"; use "cross_entropy", "mse", "mean", "sum", '
     '"binary_cross_entropy", "bce_with_logits", "huber", "mae" or a function(output, y) '
     "returning a 1x1 tensor"),
])  # fmt: skip
def test_labels_are_checked_where_r_checks_them(y, kw, text):
    """issue 29: Python checked labels y (missing ones, the loss) first, R with the targets after
    the loss, the counts, the metrics and the weights: a second bad argument won in R only"""
    args = dict(nepoch=1, batch_size=10, silent=True) | kw
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_fit(pg.ag_linear(4, 3), X, y, **args)
    assert str(e.value) == text
