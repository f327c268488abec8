"""ag_fit checks y's rows against the model's outputs for a built-in loss, and for the metrics that
compare element by element, before training (pg_fit_target_rows): a y of the wrong rows failed in
the first batch's loss, after a forward in training mode had moved batch norm's running
statistics and drawn dropout masks, or (a metric) at the end of the first epoch, after it had
trained. Now it is refused first, and nothing changes."""

import numpy as np
import pytest

import pyggmlr as pg

_X = (np.arange(40, dtype=float).reshape(10, 4).T + 1) / 40


def _model():
    pg.ggml_set_seed(1)
    return pg.ag_sequential(pg.ag_linear(4, 8, activation="relu"), pg.ag_batch_norm(8),
                            pg.ag_dropout(0.3), pg.ag_linear(8, 3))  # fmt: skip


_TEXT = (
    'ag_fit: y has {} but the model gives 3 outputs per sample; the "{}" {} needs {}y as [3, n] '
    "(one row per output)"
)


@pytest.mark.parametrize(
    "loss, y, shown, metrics",
    [
        ("mse", np.zeros(10), "1 row", None),
        ("mae", np.zeros((2, 10)), "2 rows", None),
        ("huber", np.zeros((4, 10)), "4 rows", None),
        ("binary_cross_entropy", np.zeros((1, 10)), "1 row", None),
        ("bce_with_logits", np.zeros((2, 10)), "2 rows", None),
        ("cross_entropy", np.eye(2)[:, [0, 1] * 5], "2 rows", None),  # one-hot of 2 classes
        ("cross_entropy", np.array([0, 1, 2, 0, 1] * 2), "1 row", ["f1", "rmse"]),  # ids: a metric
        (lambda o, t: pg.ag_mean(o), np.zeros((2, 10)), "2 rows", "mae"),  # a loss function
    ],
)
def test_rows_refused_before_training(loss, y, shown, metrics):
    m = _model()
    before = {k: v.copy() for k, v in m.state_dict()["parameters"].items()}
    bufs = {k: v.copy() for k, v in m.state_dict()["buffers"].items()}
    state = pg.random.get_state()
    ids = "class ids (one row) or " if loss == "cross_entropy" and metrics is None else ""
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_fit(m, _X, y, loss=loss, metrics=metrics, nepoch=1, batch_size=4, silent=True)
    if metrics is None:
        assert str(e.value) == _TEXT.format(shown, loss, "loss", ids)
    else:  # the first metric that compares element by element
        assert str(e.value) == _TEXT.format(
            shown, "rmse" if metrics != "mae" else "mae", "metric", ""
        )
    after = m.state_dict()
    assert all(np.array_equal(after["parameters"][k], v) for k, v in before.items())
    assert all(np.array_equal(after["buffers"][k], v) for k, v in bufs.items())  # running stats
    assert np.array_equal(pg.random.get_state(), state)  # no dropout mask, no shuffle drawn


def test_matching_rows_and_unchecked_losses_train():
    m = _model()
    assert np.isfinite(
        pg.ag_fit(m, _X, np.zeros((3, 10)), loss="mse", nepoch=1, batch_size=5, silent=True).loss[0]
    )
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0.0])
    assert np.isfinite(
        pg.ag_fit(m, _X, y, nepoch=1, batch_size=5, silent=True).loss[0]
    )  # class ids
    assert np.isfinite(
        pg.ag_fit(m, _X, y, loss="mean", nepoch=1, batch_size=5, silent=True).loss[0]
    )  # y unused
    # a loss function reads y as it likes: not checked
    h = pg.ag_fit(m, _X, y, loss=lambda o, t: pg.ag_mean(o), nepoch=1, batch_size=5, silent=True)
    assert np.isfinite(h.loss[0])


def test_other_refusals_before_training():
    """validation_data's class ids past the outputs (was the first validation batch's loss
    error, after an epoch of training), a binary model's per-class metric with two outputs
    (refused after the first epoch) and nbatch_logical below batch_size (optimizer_adam's
    accumulate_steps text) and another model's optimizer (the first step's StateError): each
    refused before training, nothing changed."""
    ids = np.array([0, 1, 2, 0, 1] * 2, dtype=float)
    cases = [
        (dict(y=ids, validation_data=(_X, ids + 3)), pg.PyggmlrValueError,
         "ag_fit: validation_data y holds class id 3 (sample 1) but the model has 3 outputs; "
         "ids are 0-based, in [0, 3)"),
        (dict(y=np.zeros((3, 10)), loss="binary_cross_entropy", metrics=["binary_accuracy", "auc"]),
         pg.ShapeError, 'ag_fit: metrics: "auc" needs a 1-output binary model and 0/1 targets '
         "[1, n]; the model gives 3 outputs per sample"),
        (dict(y=ids, nbatch_logical=3), pg.PyggmlrValueError,
         "ag_fit: nbatch_logical (3) must be a multiple of batch_size (4)"),
        (dict(y=ids, optimizer=pg.optimizer_sgd(pg.ag_linear(4, 3).parameters())),
         pg.PyggmlrValueError, "ag_fit: the optimizer updates none of the model's parameters (its "
         "2 are not among the model's 6); build it on this model's parameters"),
    ]  # fmt: skip
    for kw, exc, text in cases:
        m = _model()
        before = m.state_dict()
        state = pg.random.get_state()
        with pytest.raises(exc) as e:
            pg.ag_fit(m, _X, nepoch=1, batch_size=4, silent=True, **kw)
        assert type(e.value) is exc and str(e.value) == text
        after = m.state_dict()
        for part in ("parameters", "buffers"):
            assert all(np.array_equal(after[part][k], v) for k, v in before[part].items())
        assert np.array_equal(pg.random.get_state(), state)


_FIRST = (
    "ag_fit: x has {} rows but the model's first layer ({}) takes {} per sample{}; x is "
    "[features, n], one column per sample"
)


@pytest.mark.parametrize(
    "layers, rows, text",
    [
        (lambda: [pg.ag_linear(4, 3)], 5, _FIRST.format(5, "linear", "4 inputs", "")),
        (lambda: [pg.ag_batch_norm(4), pg.ag_linear(4, 3)], 3,
         _FIRST.format(3, "batch_norm", "4 inputs", "")),
        (lambda: [pg.ag_lstm(3, 5), pg.ag_linear(5, 3)], 7,
         _FIRST.format(7, "lstm", "a multiple of 3 inputs", " (input_size 3 per time step)")),
        (lambda: [pg.ag_conv2d(3, 2, 3, input_shape=(3, 4, 4)), pg.ag_flatten(),
                  pg.ag_linear(8, 3)], 50,
         _FIRST.format(50, "conv2d", "48 inputs", " (input_shape C 3, H 4, W 4)")),
        (lambda: [pg.ag_dropout(0.5), pg.ag_batch_norm(4), pg.ag_linear(4, 3)], 5,
         "ag_fit: the model's layer 2 (batch_norm) takes 4 inputs per sample but the layers "
         "before it give 5 (x has 5 rows)"),
        (lambda: [pg.ag_linear(4, 8), pg.ag_sequential(pg.ag_layer_norm(7)), pg.ag_linear(7, 3)], 4,
         "ag_fit: the model's layer 2 (layer_norm) takes 7 inputs per sample but the layers "
         "before it give 8 (x has 4 rows)"),
        (lambda: [pg.ag_linear(4, 6), pg.ag_multihead_attention(4, 2), pg.ag_linear(4, 3)], 4,
         "ag_fit: the model's layer 2 (multihead_attention) takes 4 inputs per sample but the "
         "layers before it give 6 (x has 4 rows)"),
    ],
)  # fmt: skip
def test_x_rows_refused_before_training(layers, rows, text):
    """x's rows against the built-in layers (pg_layer_shape_check): the layer whose forward would
    refuse them is named before training, where the first batch's forward refused them after
    dropout had drawn and batch norm had moved its running statistics; nothing changes."""
    pg.ggml_set_seed(1)
    m = pg.ag_sequential(*layers())
    x = np.linspace(-1, 1, rows * 6).reshape(rows, 6)
    y = np.array([0, 1, 2, 0, 1, 2.0])
    before = m.state_dict()
    state = pg.random.get_state()
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_fit(m, x, y, nepoch=1, batch_size=3, silent=True)
    assert str(e.value) == text
    after = m.state_dict()
    for part in ("parameters", "buffers"):
        assert all(np.array_equal(after[part][k], v) for k, v in before[part].items())
    assert np.array_equal(pg.random.get_state(), state)
    # the refusal is the forward's own: those rows fail in the layers (never a false refusal)
    with pytest.raises(pg.ShapeError):
        pg.ag_eval(m)
        m.forward(pg.ag_tensor(x))


def test_x_rows_that_fit_train_and_custom_layers_stop_the_checks():
    """Rows each layer takes train (two LSTM time steps, an image of input_shape); a custom layer,
    or a sequential with its own forward, ends the checks: what it gives is unknown."""
    y = np.array([0, 1, 2, 0, 1, 2.0])
    for layers, rows in [
        ([pg.ag_lstm(3, 5), pg.ag_linear(5, 3)], 6),
        ([pg.ag_conv2d(3, 2, 3, input_shape=(3, 4, 4)), pg.ag_flatten(), pg.ag_linear(8, 3)], 48),
    ]:
        h = pg.ag_fit(pg.ag_sequential(*layers), np.ones((rows, 6)), y, nepoch=1, batch_size=3,
                      silent=True)  # fmt: skip
        assert np.isfinite(h.loss[0])

    class Widen(pg.Module):  # 5 rows in, 4 out: the linear after it gets what it takes
        def forward(self, x):
            return x[:4, :]

        def to_config(self):  # a claim its forward does not keep to: not trusted
            return {"type": "linear", "in_features": 5, "out_features": 5}

    m = pg.ag_sequential(Widen(), pg.ag_linear(4, 3))
    assert np.isfinite(
        pg.ag_fit(m, np.ones((5, 6)), y, nepoch=1, batch_size=3, silent=True).loss[0]
    )

    class Head(pg.ag_sequential):  # its own forward: its layers are not walked
        def forward(self, x):
            return self.layers[0].forward(x[:4, :])

    m = Head(pg.ag_linear(4, 3))
    assert np.isfinite(
        pg.ag_fit(m, np.ones((5, 6)), y, nepoch=1, batch_size=3, silent=True).loss[0]
    )


def test_predict_evaluate_accuracy_name_the_layer_that_refuses_x():
    """ag_predict / ag_evaluate / ag_accuracy: a forward refused for x's rows is reported in
    ag_fit's words, naming the caller (the walk runs only after a refusal)."""
    m = pg.ag_sequential(pg.ag_linear(4, 8), pg.ag_linear(8, 3))
    x = np.ones((5, 6))
    for fn, call in [
        ("ag_predict", lambda: pg.ag_predict(m, x)),
        ("ag_evaluate", lambda: pg.ag_evaluate(m, x, np.zeros(6), loss="cross_entropy")),
        ("ag_accuracy", lambda: pg.ag_accuracy(m, x, np.zeros(6))),
    ]:
        with pytest.raises(pg.ShapeError) as e:
            call()
        assert str(e.value) == _FIRST.format(5, "linear", "4 inputs", "").replace("ag_fit", fn)
        assert isinstance(e.value.__context__, pg.ShapeError)  # the layer's own error
    bad = pg.ag_sequential(pg.ag_linear(4, 8), pg.ag_linear(7, 3))
    with pytest.raises(pg.ShapeError, match=r"^ag_predict: the model's layer 2 \(linear\) takes 7"):
        pg.ag_predict(bad, np.ones((4, 6)))
    assert pg.ag_predict(m, np.ones((4, 6))).shape == (3, 6)
