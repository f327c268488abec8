"""ag_predict(type=) and class labels (issue 31; native/predict.c, native/modelfile_target.c):
probabilities against PyTorch's softmax / sigmoid in f64, classes (arg-max, threshold), labels
from strings and Categoricals, the model file's 'target' metadata (save -> load -> labels; old
files without it), and the refusals."""

import json
import os

import numpy as np
import pytest
from _files import read_safetensors, write_safetensors

import pyggmlr as pg
from pyggmlr.errors import PyggmlrValueError

try:
    import torch
except ImportError:  # the PyTorch comparisons skip and say so; the rest runs
    torch = None
needs_torch = pytest.mark.skipif(
    torch is None,
    reason="torch is not installed: the PyTorch comparison is skipped (scripts/test.sh installs "
    "the local torch 2.13 wheel)",
)

N = 30


def _data(seed=1):
    r = np.random.default_rng(seed)
    return r.normal(size=(4, N))


def _fit(out, y, loss, act=None, dtype="f64"):
    prev = pg.ag_dtype(dtype)
    try:
        pg.ggml_set_seed(3)
        m = pg.ag_sequential(
            pg.ag_linear(4, 8, activation="relu"), pg.ag_linear(8, out, activation=act)
        )
        pg.ag_fit(m, _data(), y, loss=loss, nepoch=3, batch_size=10, silent=True, seed=1)
    finally:
        pg.ag_dtype(prev)
    return m


def _labels(k, seed=2):
    return np.array(["lion", "bear", "\u00e9lan"][:k])[
        np.random.default_rng(seed).integers(0, k, N)
    ]


@needs_torch
def test_prob_cross_entropy_is_torch_softmax():
    m = _fit(3, _labels(3), "cross_entropy")
    out = pg.ag_predict(m, _data(5))
    p = pg.ag_predict(m, _data(5), type="prob")
    ref = torch.softmax(torch.tensor(out, dtype=torch.float64), dim=0).numpy()
    np.testing.assert_allclose(p, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(p.sum(axis=0), 1.0, rtol=1e-14)


@needs_torch
def test_prob_bce_with_logits_is_torch_sigmoid():
    y = np.random.default_rng(4).integers(0, 2, (1, N)).astype(float)
    m = _fit(1, y, "bce_with_logits")
    out = pg.ag_predict(m, _data(5))
    p = pg.ag_predict(m, _data(5), type="prob")
    ref = torch.sigmoid(torch.tensor(out, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(p, ref, rtol=1e-12, atol=1e-300)


def test_sigmoid_extremes_are_finite():
    # very negative logits: exp(x) / (1 + exp(x)), no 1 / (1 + inf) loss of the tiny value
    class Fixed:
        loss_ = "bce_with_logits"

        def forward(self, x):
            return x

    x = np.array([[-800.0, -40.0, 0.0, 40.0, 800.0]])
    prev = pg.ag_dtype("f64")  # "prob" is in the model's dtype (a model without parameters: this)
    try:
        p = pg.ag_predict(Fixed(), x, type="prob")
    finally:
        pg.ag_dtype(prev)
    assert p.dtype == np.float64 and p[0, 0] == 0.0 and p[0, 4] == 1.0 and p[0, 2] == 0.5
    np.testing.assert_allclose(p[0, 1], np.exp(-40.0) / (1 + np.exp(-40.0)), rtol=1e-15)
    p32 = pg.ag_predict(Fixed(), x, type="prob")
    assert p32.dtype == np.float32 and p32[0, 1] == np.float32(p[0, 1])
    assert list(pg.ag_predict(Fixed(), x, type="class")) == [0, 0, 0, 1, 1]  # > 0, not >= 0


def test_bce_probabilities_as_they_are_and_threshold():
    y = np.random.default_rng(4).integers(0, 2, (1, N)).astype(float)
    m = _fit(1, y, "binary_cross_entropy", act="sigmoid")
    out = pg.ag_predict(m, _data(5))
    np.testing.assert_array_equal(pg.ag_predict(m, _data(5), type="prob"), out)
    np.testing.assert_array_equal(
        pg.ag_predict(m, _data(5), type="class"), (out[0] > 0.5).astype(int)
    )


def test_class_cross_entropy_is_first_argmax_and_labels():
    y = _labels(3)
    m = _fit(3, y, "cross_entropy")
    assert list(m.classes_) == sorted(set(y.tolist())) and m.loss_ == "cross_entropy"
    out = pg.ag_predict(m, _data(5))
    cl = pg.ag_predict(m, _data(5), type="class")
    np.testing.assert_array_equal(cl, m.classes_[np.argmax(out, axis=0)])
    np.testing.assert_array_equal(pg.ag_predict(m, _data(5), type="response"), out)


def test_repr_shows_loss_and_classes():
    m = _fit(3, _labels(3), "cross_entropy")
    assert repr(m).endswith("\n  loss: cross_entropy\n  classes (3): bear, lion, \u00e9lan")


def test_class_ids_without_labels():
    ids = np.random.default_rng(2).integers(0, 3, N).astype(float)
    m = _fit(3, ids, "cross_entropy")
    assert m.classes_ is None
    cl = pg.ag_predict(m, _data(5), type="class")
    assert cl.dtype == np.int64 and cl.shape == (N,)
    np.testing.assert_array_equal(cl, np.argmax(pg.ag_predict(m, _data(5)), axis=0))


def test_two_labels_bce_second_is_one():
    y = np.where(np.random.default_rng(6).random(N) > 0.5, "yes", "no")
    m = _fit(1, y, "bce_with_logits")
    assert list(m.classes_) == ["no", "yes"]
    out = pg.ag_predict(m, _data(5))
    np.testing.assert_array_equal(
        pg.ag_predict(m, _data(5), type="class"), np.where(out[0] > 0, "yes", "no")
    )


def test_categorical_duck_typed_keeps_category_order():
    class Cat:  # what pandas.Categorical exposes; pandas itself is not needed
        categories = ["z", "a"]
        codes = np.array([0, 1] * (N // 2))

    m = _fit(2, Cat(), "cross_entropy")
    assert list(m.classes_) == ["z", "a"]


# R's test-fit-binary.R asserts the same texts for a factor with unused levels / character y
_MORE = (
    "ag_fit: y's labels have 4 classes (a factor's levels, a Categorical's categories) but the "
    "model has 3 outputs; give the model one output per class (unused ones count: droplevels(y), "
    "y.cat.remove_unused_categories())"
)
_FEWER = (
    "ag_fit: y's labels have 2 classes (a factor's levels, a Categorical's categories) but the "
    "model has 3 outputs; give the model one output per class (or keep every class: "
    "factor(y, levels = ...), pd.Categorical(y, categories=...))"
)


def test_label_classes_must_be_the_outputs():
    """A Categorical's categories count unused ones, as R's factor levels; strings' classes are
    the distinct ones, as R's character y (the core's check and text, pg_fit_check_classes)."""

    class Cat:  # 4 categories, "d" unused
        categories = ["a", "b", "c", "d"]
        codes = np.array([0, 1, 2] * (N // 3))

    for y, want in ((Cat(), _MORE), (_labels(2), _FEWER)):
        with pytest.raises(PyggmlrValueError) as e:
            _fit(3, y, "cross_entropy")
        assert str(e.value) == want
    Cat.categories = ["a", "b", "c"]
    assert list(_fit(3, Cat(), "cross_entropy").classes_) == ["a", "b", "c"]


def test_label_refusals():
    with pytest.raises(PyggmlrValueError, match='need loss = "cross_entropy"'):
        _fit(2, _labels(3), "mse")
    with pytest.raises(PyggmlrValueError) as e:  # a callable too, as R (issue 29: y not numeric)
        _fit(2, _labels(3), lambda out, y: pg.ag_mse_loss(out, y))
    assert str(e.value) == (
        'ag_fit: labels y (strings or a Categorical) need loss = "cross_entropy" (or, with 2 '
        'labels, "binary_cross_entropy" / "bce_with_logits")'
    )
    y = _labels(3).astype(object)
    y[4] = None
    with pytest.raises(PyggmlrValueError, match="1 missing value .*column 5"):
        _fit(3, y, "cross_entropy")
    with pytest.raises(PyggmlrValueError, match="validation_data's y has the label 'wolf'"):
        pg.ag_fit(
            pg.ag_linear(4, 3),
            _data(),
            _labels(3),
            nepoch=1,
            silent=True,
            validation_data=(_data(3)[:, :2], np.array(["lion", "wolf"])),
        )


@pytest.mark.parametrize(
    "yv", [np.array(["lion", None, "bear"], dtype=object), ["lion", float("nan"), "bear"]]
)
def test_validation_missing_label_is_the_cores_text(yv):
    # the training y's wording (pg_fit_labels_missing), as R's NA in validation_data's y
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_fit(pg.ag_linear(4, 3), _data(), _labels(3), nepoch=1, silent=True,
                  validation_data=(_data(3)[:, :3], yv))  # fmt: skip
    assert str(e.value) == (
        "ag_fit: validation_data y has 1 missing value (NA), the first at row 1, column 2; give "
        "finite data (remove or impute those samples)"
    )


def test_validation_missing_categorical_label():
    class Cat:  # a pandas Categorical's code -1 is a missing label
        categories = ["bear", "lion"]
        codes = np.array([0, 1, -1, -1])

    with pytest.raises(PyggmlrValueError, match=r"^ag_fit: validation_data y has 2 missing values "
                       r"\(NA\), the first at row 1, column 3;"):  # fmt: skip
        pg.ag_fit(pg.ag_linear(4, 2), _data(), _labels(2), nepoch=1, silent=True,
                  validation_data=(_data(3)[:, :4], Cat()))  # fmt: skip


def test_save_load_keeps_labels(tmp_path):
    m = _fit(3, _labels(3), "cross_entropy")
    p = str(tmp_path / "m.safetensors")
    pg.ag_save_model(m, p)
    info = pg.ag_model_info(p)
    assert info["target"] == {
        "loss": "cross_entropy",
        "classify": "argmax",
        "classes": list(m.classes_),
    }
    m2 = pg.ag_load_model(p)
    np.testing.assert_array_equal(m2.classes_, m.classes_)
    np.testing.assert_array_equal(
        pg.ag_predict(m2, _data(5), type="class"), pg.ag_predict(m, _data(5), type="class")
    )


def test_model_info_target_without_labels(tmp_path):
    """the target as the loader reads it, its three keys always (issue 29: R's list, the same)"""
    m = _fit(2, np.random.default_rng(1).normal(size=(2, N)), "mse")
    p = str(tmp_path / "mse.safetensors")
    pg.ag_save_model(m, p)
    assert pg.ag_model_info(p)["target"] == {"loss": "mse", "classify": "none", "classes": None}


def test_old_file_without_target_loads(tmp_path):
    m = pg.ag_sequential(pg.ag_linear(4, 3))
    p = str(tmp_path / "old.safetensors")
    pg.ag_save_model(m, p)  # never fitted: no target written
    assert pg.ag_model_info(p)["target"] is None
    m2 = pg.ag_load_model(p)
    assert getattr(m2, "classes_", None) is None
    with pytest.raises(PyggmlrValueError, match='ag_predict: type = "class" needs to know'):
        pg.ag_predict(m2, _data(), type="class")
    cl = pg.ag_predict(m2, _data(), type="class", loss="cross_entropy")
    np.testing.assert_array_equal(cl, np.argmax(pg.ag_predict(m2, _data()), axis=0))


def _with_meta(src, dst, key, value):
    tensors, meta = read_safetensors(src)
    meta[key] = value
    write_safetensors(dst, list(tensors.items()), meta)


@pytest.mark.parametrize(
    "target, why",
    [
        ('["a"]', "wrong type"),
        ('{"loss": "hinge"}', "'loss' \"hinge\" is not one of ag_fit's losses"),
        ('{"loss": "mse", "classify": "argmax"}', 'is not how loss "mse" reads outputs'),
        ('{"classify": "maybe"}', "'classify' must be"),
        ('{"classes": ["a", "a"]}', "'classes' lists \"a\" twice"),
        ('{"classes": ["a", 3]}', "'classes' entry 2 is not a string"),
        ('{"classes": []}', "'classes' must be an array of 1"),
    ],
)
def test_bad_target_refused(tmp_path, target, why):
    m = pg.ag_sequential(pg.ag_linear(4, 3))
    src, dst = str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")
    pg.ag_save_model(m, src)
    _with_meta(src, dst, "target", target)
    with pytest.raises(PyggmlrValueError, match="metadata 'target'.*" + why.replace("(", r"\(")):
        pg.ag_load_model(dst)
    with pytest.raises(PyggmlrValueError, match="metadata 'target'"):
        pg.ag_model_info(dst)


def test_predict_refusals():
    m = _fit(2, np.random.default_rng(1).normal(size=(2, N)), "mse")
    with pytest.raises(
        PyggmlrValueError, match='type must be "response", "prob" or "class", got "probs"'
    ):
        pg.ag_predict(m, _data(), type="probs")
    with pytest.raises(PyggmlrValueError, match="got 3"):
        pg.ag_predict(m, _data(), type=3)
    with pytest.raises(PyggmlrValueError, match='type = "prob" needs a classifier.*loss "mse"'):
        pg.ag_predict(m, _data(), type="prob")
    with pytest.raises(PyggmlrValueError, match='ag_predict: unknown loss "hinge"'):
        pg.ag_predict(m, _data(), type="prob", loss="hinge")
    m.classes_ = np.array(["a", "b", "c"])  # labels that do not fit the outputs
    with pytest.raises(PyggmlrValueError, match="2 outputs but 3 class labels"):
        pg.ag_predict(m, _data(), type="class", loss="cross_entropy")
    # the response never needs a loss
    assert pg.ag_predict(m, _data(), type="response").shape == (2, N)


def test_multilabel_threshold_per_element():
    class Fixed:
        loss_ = "binary_cross_entropy"

        def forward(self, x):
            return x

    x = np.array([[0.2, 0.7], [0.9, 0.5]])
    np.testing.assert_array_equal(pg.ag_predict(Fixed(), x, type="class"), [[0, 1], [1, 0]])


def test_target_json_is_documented_shape(tmp_path):
    m = _fit(1, np.where(np.arange(N) % 2 == 0, "a", "b"), "bce_with_logits")
    p = str(tmp_path / "m.safetensors")
    pg.ag_save_model(m, p)
    meta = read_safetensors(p)[1]
    assert json.loads(meta["target"]) == {
        "loss": "bce_with_logits",
        "classify": "logits",
        "classes": ["a", "b"],
    }
    assert os.path.getsize(p) > 0


def test_features_n_rule_is_the_cores():
    """x / y as [features, n]: a vector is one row of samples, more than two dimensions are
    refused with the core's text (pg_fit_cols), word for word as R's."""
    m = pg.ag_linear(1, 2)
    assert pg.ag_predict(m, np.array([1.0, 2.0, 3.0])).shape == (2, 3)
    msg = "ag_predict: x must be a [features, n] matrix (samples are columns), got a 2x3x4 array"
    with pytest.raises(pg.errors.ShapeError) as e:
        pg.ag_predict(m, np.zeros((2, 3, 4)))
    assert str(e.value) == msg
    with pytest.raises(pg.errors.ShapeError) as e:
        pg.ag_evaluate(m, np.zeros((1, 3)), 1.0, loss="mse")
    assert str(e.value) == (
        "ag_evaluate: y must be a [features, n] matrix (samples are columns), got a scalar"
    )


def test_labels_shape_rule_is_the_cores():
    """String labels: one a sample (a vector, or one row / one column), else the core's text
    (pg_labels_shape), word for word as R's."""
    y = np.array([["a", "b", "a"], ["b", "a", "b"]])
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_fit(pg.ag_linear(4, 2), _data()[:, :3], y, nepoch=1, silent=True)
    assert str(e.value) == (
        "ag_fit: labels y must be one label per sample (a vector), got a 2x3 array"
    )
