"""Metrics (issue 31): ag_evaluate's values, computed in the core (native/metrics.c), against
scikit-learn 1.9 (roc_auc_score with tied scores, precision / recall / f1 binary, macro and micro
with a class never predicted, confusion_matrix, mean_absolute_error, mean_squared_error,
root_mean_squared_error, r2_score multi-output). The same numbers are asserted in R from base R
formulas (r/tests/testthat/test-metrics.R)."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

try:
    from sklearn import metrics as skm
except ImportError:  # the golden comparisons skip and say so; the refusals run
    skm = None

needs_sklearn = pytest.mark.skipif(skm is None, reason="scikit-learn is not installed")


def _linear(w, b, act=None, dtype="f64"):
    w = np.asarray(w, dtype=float)
    m = pg.ag_sequential(
        pg.ag_linear(w.shape[1], w.shape[0], act) if act else pg.ag_linear(w.shape[1], w.shape[0])
    )
    p = m.parameters()
    p["layer1_W"].data, p["layer1_b"].data = w, np.asarray(b, dtype=float)
    return m


def _x(rows=3, n=40):
    return np.sin(0.7 * np.arange(1, rows * n + 1)).reshape(rows, n, order="F")


def _binary():
    """a sigmoid model, its scores rounded to 1 decimal by the data (ties in the AUC)"""
    x = np.round(_x(1, 60), 1)
    m = _linear([[1.0]], [[0.0]])  # the score is x itself: many tied values
    y = (np.sin(1.3 * np.arange(60)) + x[0] > 0.1).astype(float)[None]
    return m, x, y


@needs_sklearn
def test_binary_metrics_match_sklearn():
    m, x, y = _binary()
    r = pg.ag_evaluate(m, x, y, metrics=["auc", "precision", "recall", "f1", "f1_macro",
                                         "f1_micro", "accuracy", "confusion_matrix"], threshold=0.0)  # fmt: skip
    s, t = x[0], y[0].astype(int)
    assert len(np.unique(s)) < len(s)  # ties present
    p = (s > 0).astype(int)
    assert r["auc"] == pytest.approx(skm.roc_auc_score(t, s), rel=1e-12)
    assert r["precision"] == pytest.approx(skm.precision_score(t, p), rel=1e-12)
    assert r["recall"] == pytest.approx(skm.recall_score(t, p), rel=1e-12)
    assert r["f1"] == pytest.approx(skm.f1_score(t, p), rel=1e-12)
    assert r["f1_macro"] == pytest.approx(skm.f1_score(t, p, average="macro"), rel=1e-12)
    assert r["f1_micro"] == pytest.approx(skm.f1_score(t, p, average="micro"), rel=1e-12)
    assert r["accuracy"] == pytest.approx(skm.accuracy_score(t, p), rel=1e-12)
    cm = r["confusion_matrix"]
    assert cm.dtype == np.int64 and (cm == skm.confusion_matrix(t, p, labels=[0, 1])).all()


@needs_sklearn
def test_bce_loss_reads_probabilities():
    x, y = _binary()[1:]
    m = _linear([[2.0]], [[0.1]], "sigmoid")
    r = pg.ag_evaluate(m, x, y, loss="binary_cross_entropy", metrics=["auc", "recall"])
    prob = pg.ag_predict(m, x)[0].astype(np.float64)
    assert list(r) == ["loss", "auc", "recall"]
    assert r["loss"] == pytest.approx(skm.log_loss(y[0], prob), rel=1e-10)
    assert r["auc"] == pytest.approx(skm.roc_auc_score(y[0], prob), rel=1e-12)
    assert r["recall"] == pytest.approx(skm.recall_score(y[0], prob > 0.5), rel=1e-12)


def _multiclass():
    x = _x(3, 40)
    m = _linear(
        [[1.0, 0.0, 0.2], [0.0, 1.0, 0.0], [0.3, 0.3, 0.3], [-5.0, -5.0, -5.0]],
        [[0], [0], [0], [-9]],
    )
    y = (np.arange(40) * 7 % 4)[None].astype(float)  # class 3 is never predicted (bias -9)
    return m, x, y


@needs_sklearn
def test_multiclass_metrics_match_sklearn():
    m, x, y = _multiclass()
    names = ["accuracy", "precision", "recall", "f1", "precision_micro", "recall_macro",
             "f1_micro", "auc", "confusion_matrix"]  # fmt: skip
    r = pg.ag_evaluate(m, x, y, metrics=names, loss="cross_entropy")
    out = pg.ag_predict(m, x).astype(np.float64)
    p, t = out.argmax(axis=0), y[0].astype(int)
    assert 3 not in p and 3 in t
    prob = np.exp(out - out.max(0)) / np.exp(out - out.max(0)).sum(0)
    assert r["loss"] == pytest.approx(skm.log_loss(t, prob.T, labels=[0, 1, 2, 3]), rel=1e-10)
    assert r["accuracy"] == pytest.approx(skm.accuracy_score(t, p), rel=1e-12)
    for key, f, avg in [("precision", skm.precision_score, "macro"), ("recall", skm.recall_score, "macro"),
                        ("f1", skm.f1_score, "macro"), ("precision_micro", skm.precision_score, "micro"),
                        ("recall_macro", skm.recall_score, "macro"), ("f1_micro", skm.f1_score, "micro")]:  # fmt: skip
        assert r[key] == pytest.approx(f(t, p, average=avg, zero_division=0), rel=1e-12), key
    assert r["auc"] == pytest.approx(skm.roc_auc_score(t, prob.T, multi_class="ovr"), rel=1e-10)
    assert (r["confusion_matrix"] == skm.confusion_matrix(t, p, labels=[0, 1, 2, 3])).all()
    one_hot = np.eye(4)[:, t]  # one-hot targets read the same
    assert pg.ag_evaluate(m, x, one_hot, metrics="f1")["f1"] == r["f1"]


@needs_sklearn
def test_regression_metrics_match_sklearn():
    x = _x(3, 30)
    m = _linear([[1.0, 0.5, 0.0], [0.0, 0.2, -1.0]], [[0.1], [0.0]])
    y = np.vstack([x[0] + 0.3 * x[2], np.cos(np.arange(30))])
    r = pg.ag_evaluate(m, x, y, loss="mse", metrics=["mae", "mse", "rmse", "r2"])
    p = pg.ag_predict(m, x)
    assert r["mae"] == pytest.approx(skm.mean_absolute_error(y.T, p.T), rel=1e-12)
    assert r["mse"] == pytest.approx(skm.mean_squared_error(y.T, p.T), rel=1e-12)
    assert r["loss"] == pytest.approx(r["mse"], rel=1e-12)
    assert r["rmse"] == pytest.approx(skm.root_mean_squared_error(y.T, p.T), rel=1e-12)
    assert r["r2"] == pytest.approx(skm.r2_score(y.T, p.T), rel=1e-12)


def test_refusals_name_the_function_and_argument():
    m, x, y = _binary()
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_evaluate: metrics has an unknown name \"AUC\"; valid: accuracy",
    ):
        pg.ag_evaluate(m, x, y, metrics="AUC")
    with pytest.raises(
        PyggmlrValueError, match='ag_evaluate: metrics: "auc" needs a classification loss'
    ):
        pg.ag_evaluate(m, x, y, metrics="auc", loss="mse")
    with pytest.raises(PyggmlrValueError, match='ag_evaluate: unknown loss "nope"'):
        pg.ag_evaluate(m, x, y, loss="nope")
    with pytest.raises(ArgumentError, match="ag_evaluate: give loss, metrics or both"):
        pg.ag_evaluate(m, x, y)
    with pytest.raises(ArgumentError, match="ag_evaluate: metrics must be None"):
        pg.ag_evaluate(m, x, y, metrics=3)
    with pytest.raises(ShapeError, match="ag_evaluate: x has 60 samples but y has 2"):
        pg.ag_evaluate(m, x, y[:, :2], metrics="auc")
    with pytest.raises(PyggmlrValueError, match="binary targets must be in"):
        pg.ag_evaluate(m, x, y * 2, metrics="f1")
    # a loss's own refusal names ag_evaluate, not the loss op it runs
    m3 = pg.ag_sequential(pg.ag_linear(1, 3))
    ids = np.array([[0.0, 1.0, 5.0, 2.0]])
    for yy in (ids, ids / 2):
        with pytest.raises(PyggmlrValueError, match=r"^ag_evaluate: y must be 0-based class ids"):
            pg.ag_evaluate(m3, x[:, :4], yy, loss="cross_entropy")
    with pytest.raises(ShapeError, match=r"^ag_evaluate: pred is \[3x4\]"):
        pg.ag_evaluate(m3, x[:, :4], np.zeros((2, 4)), loss="mse")


# ---- ag_fit(metrics=) ---------------------------------------------------------------------------


def _fixed_fit(static, **kw):
    """lr 0 and fixed weights: every epoch sees the same outputs, so the History's metrics equal
    ag_evaluate's on the training and validation columns"""
    x, y = _binary()[1:]
    m = _linear([[2.0]], [[0.1]], "sigmoid")
    a = dict(loss="binary_cross_entropy", optimizer="sgd", lr=0.0, nepoch=3, batch_size=10,
             shuffle=False, val_split=0.25, verbose=0, static=static)  # fmt: skip
    a.update(kw)
    return m, x, y, pg.ag_fit(m, x, y, **a)


@pytest.mark.parametrize("static", [False, True])
def test_fit_history_metric_columns(static):
    m, x, y, h = _fixed_fit(static, metrics=["auc", "f1", "mse", "accuracy"])
    assert h.metrics == ["auc", "f1", "mse", "val_auc", "val_f1", "val_mse"]
    # 45 training samples: 4 batches of 10 are trained on (the partial one is dropped, as ggml)
    tr = pg.ag_evaluate(m, x[:, :40], y[:, :40], metrics=["auc", "f1", "mse"])
    va = pg.ag_evaluate(m, x[:, 45:], y[:, 45:], metrics=["auc", "f1", "mse"])
    for k in ("auc", "f1", "mse"):
        assert getattr(h, k) == [tr[k]] * 3
        assert getattr(h, "val_" + k) == [va[k]] * 3
    assert "val_auc" in h.as_dict() and pg.History.from_dict(h.as_dict()).val_auc == h.val_auc


def test_fit_metrics_refusals():
    x, y = _binary()[1:]
    m = _linear([[1.0]], [[0.0]])
    with pytest.raises(
        PyggmlrValueError, match="ag_fit: metrics: confusion_matrix is not a History column"
    ):
        pg.ag_fit(m, x, y, loss="bce_with_logits", metrics=["confusion_matrix"], verbose=0)
    with pytest.raises(PyggmlrValueError, match='ag_fit: metrics has an unknown name "auroc"'):
        pg.ag_fit(m, x, y, loss="bce_with_logits", metrics="auroc", verbose=0)
    with pytest.raises(
        PyggmlrValueError, match='ag_fit: metrics: "auc" needs a classification loss'
    ):
        pg.ag_fit(m, x, y, loss="mse", metrics="auc", verbose=0)


@pytest.mark.parametrize("monitor", ["val_auc", "val_f1"])
def test_early_stopping_on_a_metric_maximizes(monitor):
    """mode auto: larger is better for auc and f1; a constant metric stops after patience"""
    es = pg.ag_early_stopping(patience=2, monitor=monitor, restore_best=False)
    h = _fixed_fit(False, metrics=["auc", "f1"], nepoch=10, callbacks=[es])[3]
    assert len(h.epoch) == 3 and h.stopped_epoch == 3 and es.best_epoch == 1
    assert es.best == getattr(h, monitor)[0]
    with pytest.raises(PyggmlrValueError, match='measured only when ag_fit\'s metrics names "auc"'):
        _fixed_fit(False, metrics=["f1"], callbacks=[pg.ag_early_stopping(monitor="val_auc")])


def test_early_stopping_mode_auto_minimizes_rmse():
    es = pg.ag_early_stopping(patience=1, monitor="val_rmse")
    x = _x(3, 40)
    y = x[:1] * 0.5
    m = _linear([[0.1, 0.0, 0.0]], [[0.0]])
    pg.ag_fit(m, x, y, loss="mse", metrics=["rmse"], optimizer="sgd", lr=0.1, nepoch=4,
              batch_size=8, val_split=0.25, verbose=0, callbacks=[es], shuffle=False)  # fmt: skip
    assert es.best_epoch == 4  # rmse falls every epoch: the last is best under "min"


def test_history_prints_the_metric_columns():
    h = _fixed_fit(False, metrics=["auc"], nepoch=2)[3]
    lines = repr(h).splitlines()
    assert lines[-3] == "epoch       auc   val_auc"
    assert lines[-1] == f"    2  {h.auc[1]:8.4f}  {h.val_auc[1]:8.4f}"


def test_epoch_line_shows_the_metrics(capsys):
    h = _fixed_fit(False, metrics=["auc"], nepoch=1, verbose=2)[3]
    err = capsys.readouterr().err
    assert f"  auc={h.auc[0]:.4f}  val_auc={h.val_auc[0]:.4f}  (" in err


def test_evaluate_reads_the_models_loss_and_labels():
    """A model trained on labels: ag_evaluate takes its loss (model.loss_) and codes label y by
    its classes_, giving the numbers of the ids; an unknown label is refused by name."""
    x, y, classes = pg.load_iris()
    pg.ggml_set_seed(3)
    m = pg.ag_sequential(pg.ag_normalization(x), pg.ag_linear(4, 3))
    labels = np.array(classes)[y]
    pg.ag_fit(m, x, labels, loss="cross_entropy", nepoch=3, verbose=0, seed=1)
    by_label = pg.ag_evaluate(m, x, labels, metrics=["accuracy", "confusion_matrix"])
    by_id = pg.ag_evaluate(m, x, y, loss="cross_entropy", metrics=["accuracy", "confusion_matrix"])
    assert list(by_label) == ["loss", "accuracy", "confusion_matrix"]
    assert by_label["loss"] == by_id["loss"] and by_label["accuracy"] == by_id["accuracy"]
    np.testing.assert_array_equal(by_label["confusion_matrix"], by_id["confusion_matrix"])
    with pytest.raises(PyggmlrValueError, match="y has the label 'wolf', which is not one of the"):
        pg.ag_evaluate(m, x[:, :2], ["setosa", "wolf"], metrics="accuracy")
