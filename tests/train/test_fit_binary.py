"""Binary classification (issue 31): ag_fit's accuracy columns for the BCE losses (keras'
binary_accuracy: output above 0.5 on probabilities, 0 on logits; per element for multi-label),
ag_accuracy(threshold =), and the data checks around classification. The model's weights are set
by hand and lr is 0, so every batch sees the same outputs: the History's numbers are numpy's.
The same golden values are asserted in R (r/tests/testthat/test-fit-binary.R)."""

import math

import numpy as np
import pytest

import pyggmlr as pg

W1, B1 = [[1.0, -0.5, 0.25]], [[0.1]]
W2, B2 = [[1.0, -0.5, 0.25], [0.3, 0.2, 1.0]], [[0.1], [0.0]]


def _data():
    """x [3, 50] = sin(0.7 k) column-major; y: x1 + x2 / 2 > 0.2 (17 positives); y2 adds x3 > 0."""
    x = np.sin(0.7 * np.arange(1, 151)).reshape(3, 50, order="F")
    y = (x[0] + 0.5 * x[1] - 0.2 > 0).astype(float)[None]
    return x, y, np.vstack([y, (x[2:3] > 0).astype(float)])


def _model(w, b, act=None):
    m = pg.ag_sequential(pg.ag_linear(3, len(w), act) if act else pg.ag_linear(3, len(w)))
    p = m.parameters()
    p["layer1_W"].data, p["layer1_b"].data = np.array(w), np.array(b)
    return m


def _fit(m, x, y, loss, **kw):
    a = dict(optimizer="sgd", lr=0.0, nepoch=2, batch_size=10, shuffle=False, val_split=0.2,
             verbose=0)  # fmt: skip
    a.update(kw)
    return pg.ag_fit(m, x, y, loss=loss, **a)


def _unc(a, n):
    return math.sqrt(a * (1 - a) / (n - 1))  # ggml_opt_result_accuracy's rule


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize(
    "loss, act", [("bce_with_logits", None), ("binary_cross_entropy", "sigmoid")]
)
def test_history_binary_accuracy(f64, loss, act, static):
    x, y, _ = _data()
    h = _fit(_model(W1, B1, act), x, y, loss, static=static)
    z = np.array(W1) @ x + np.array(B1)  # logits: > 0 <=> sigmoid > 0.5
    hits = (z > 0) == (y > 0.5)
    assert hits[:, :40].sum() == 27 and hits[:, 40:].sum() == 6  # by hand
    assert h.accuracy == [27 / 40] * 2 and h.val_accuracy == [0.6] * 2
    assert h.accuracy_unc == [_unc(27 / 40, 40)] * 2 and h.accuracy_unc[0] == 0.075
    assert h.val_accuracy_unc == [_unc(0.6, 10)] * 2


def test_history_multilabel_counts_elements(f64):
    x, _, y2 = _data()
    h = _fit(_model(W2, B2, "sigmoid"), x, y2, "binary_cross_entropy")
    hits = (np.array(W2) @ x + np.array(B2) > 0) == (y2 > 0.5)
    assert hits[:, :40].sum() == 54 and hits[:, 40:].sum() == 13
    assert h.accuracy[0] == 54 / 80 and h.val_accuracy[0] == 13 / 20  # 2 x n elements
    assert h.accuracy_unc[0] == _unc(54 / 80, 80)


def test_ag_accuracy_threshold(f64):
    x, y, y2 = _data()
    m = _model(W1, B1)  # logits
    assert pg.ag_accuracy(m, x, y, threshold=0) == 33 / 50
    assert pg.ag_accuracy(m, x, y) == 46 / 50  # None: 0.5, for probabilities
    assert pg.ag_accuracy(m, x, y, threshold=-0.5) == 33 / 50
    assert pg.ag_accuracy(m, x, y > 0.5, threshold=0) == 33 / 50  # booleans are 0/1 labels
    m2 = _model(W2, B2, "sigmoid")
    assert pg.ag_accuracy(m2, x, y2, threshold=0.5) == 67 / 100  # multi-label: per element
    o = pg.ag_predict(m2, x)  # 2 outputs, no threshold: arg-max against ids
    assert pg.ag_accuracy(m2, x, np.zeros(50)) == np.mean(o.argmax(axis=0) == 0) == 17 / 50
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_accuracy: binary targets must be in "
                       r"\[0, 1\] \(0/1 labels\), got 2 at row 1, column 3$"):  # fmt: skip
        pg.ag_accuracy(m, x, np.where(np.arange(50) == 2, 2.0, y))
    with pytest.raises(pg.ShapeError, match=r"^ag_accuracy: the model's output is \[1x50\] but y "
                       r"has 2 rows"):  # fmt: skip
        pg.ag_accuracy(m, x, y2, threshold=0)
    with pytest.raises(pg.ArgumentError, match=r"^ag_accuracy: threshold must be a number or None"):
        pg.ag_accuracy(m, x, y, threshold="0.5")


@pytest.mark.parametrize("loss", ["binary_cross_entropy", "bce_with_logits"])
@pytest.mark.parametrize("bad, where", [(2.0, "column 4"), (-1.0, "column 4")])
def test_bce_targets_outside_0_1_are_refused(loss, bad, where):
    x, y, _ = _data()
    y = y.copy()
    y[0, 3] = bad
    m = _model(W1, B1, "sigmoid")
    w = m.parameters()["layer1_W"].numpy().copy()
    with pytest.raises(pg.PyggmlrValueError, match=rf"^ag_fit: {loss} targets must be in \[0, 1\] "
                       rf"\(0/1 labels\), got {bad:g} at row 1, {where}$"):  # fmt: skip
        _fit(m, x, y, loss, lr=0.1)
    assert np.array_equal(m.parameters()["layer1_W"].numpy(), w)  # nothing trained


def test_ids_beyond_the_outputs_are_refused_before_training():
    x, _, _ = _data()
    pg.ggml_set_seed(0)
    m = pg.ag_sequential(pg.ag_linear(3, 3))
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: y holds class ids up to 3 \(4 "
                       r"classes\) but the model has 3 outputs; ids are 0-based, in \[0, 3\)$"):  # fmt: skip
        pg.ag_fit(m, x, np.arange(50) % 4, nepoch=1, verbose=0)
    pg.ag_fit(m, x, np.arange(50) % 2, nepoch=1, verbose=0)  # a class absent: fine (as PyTorch)


def test_nan_in_y_is_refused_naming_row_and_column():
    x, y, _ = _data()
    y = y.copy()
    y[0, 7] = np.nan
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: y has 1 non-finite value \(NaN or "
                       r"Inf\), the first at row 1, column 8"):  # fmt: skip
        _fit(_model(W1, B1), x, y, "bce_with_logits")


def test_early_stopping_maximises_binary_val_accuracy(f64):
    x, y, _ = _data()
    inverted = [[-1.0, 0.5, -0.25]], [[-0.1]]  # starts wrong: val_accuracy climbs, then plateaus

    def run(cbs):
        return pg.ag_fit(_model(*inverted), x, y, loss="bce_with_logits", optimizer="sgd",
                         lr=0.1, nepoch=15, batch_size=10, val_split=0.3, seed=3, verbose=0,
                         callbacks=cbs)  # fmt: skip

    acc = run([]).val_accuracy
    assert acc[:4] == [7 / 15, 7 / 15, 13 / 15, 1.0] and acc[-1] == 1.0
    h = run([pg.ag_early_stopping(monitor="val_accuracy", patience=2)])  # mode auto: max
    assert (h.best_epoch, h.stopped_epoch) == (4, 6)  # keras' rule on acc, maximising
    h = run([pg.ag_early_stopping(monitor="val_accuracy", patience=2, mode="min")])
    assert (h.best_epoch, h.stopped_epoch) == (1, 3)


def test_bce_targets_of_validation_data_are_named_as_such():
    x, y, _ = _data()
    yv = y[:, :10].copy()
    yv[0, 2] = 3.0
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: bce_with_logits targets must be in "
                       r"\[0, 1\] \(0/1 labels\), got 3 at row 1, column 3 of validation_data$"):  # fmt: skip
        pg.ag_fit(_model(W1, B1), x, y, loss="bce_with_logits", nepoch=1, verbose=0,
                  validation_data=(x[:, :10], yv))  # fmt: skip
