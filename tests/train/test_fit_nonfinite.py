"""ag_fit never diverges silently (issue 28): an epoch whose training or validation loss is NaN or
infinite ends the run with a NonFiniteLossWarning naming the epoch; the History keeps it."""

import warnings

import numpy as np
import pytest

import pyggmlr as pg


def _data(nan_at=None):
    x = np.random.default_rng(0).normal(size=(3, 40))
    y = x[:1] * 2.0
    if nan_at is not None:
        x[nan_at] = np.nan
    return x, y


def _model():
    pg.ggml_set_seed(0)
    return pg.ag_sequential(pg.ag_linear(3, 4, "relu"), pg.ag_linear(4, 1))


def test_a_diverging_run_warns_and_stops():
    x, y = _data()
    fit = dict(loss="mse", optimizer="sgd", nepoch=10, batch_size=8, verbose=0, shuffle=False)
    with pytest.warns(pg.NonFiniteLossWarning, match=r"^ag_fit: the training loss of epoch 1 is"):
        h = pg.ag_fit(_model(), x, y, lr=1e20, **fit)
    assert h.stopped_epoch == 1 and len(h.loss) == 1 and not np.isfinite(h.loss[0])
    # a finite run: no warning, every epoch
    with warnings.catch_warnings():
        warnings.simplefilter("error", pg.NonFiniteLossWarning)
        h = pg.ag_fit(_model(), x, y, lr=0.01, **fit)
    assert len(h.loss) == 10 and np.all(np.isfinite(h.loss))


def test_nan_in_the_data_is_refused_before_training():
    x, y = _data(nan_at=(1, 5))
    m = _model()
    w = m.parameters()["layer1_W"].numpy().copy()
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: x has 1 non-finite value \(NaN or "
                       r"Inf\), the first at row 2, column 6; give finite data"):  # fmt: skip
        pg.ag_fit(m, x, y, loss="mse", nepoch=5, batch_size=8, verbose=0)
    assert np.array_equal(m.parameters()["layer1_W"].numpy(), w)


def test_a_non_finite_validation_loss_warns_too():
    # finite data whose validation loss overflows f32: 1e30 squared is Inf
    x, y = _data()
    xv, yv = x[:, :8] * 1e30, y[:, :8].copy()
    with pytest.warns(pg.NonFiniteLossWarning, match="validation loss of epoch 1 is Inf"):
        h = pg.ag_fit(
            _model(),
            x,
            y,
            loss="mse",
            nepoch=5,
            batch_size=8,
            verbose=0,
            validation_data=(xv, yv),
        )
    assert len(h.loss) == 1 and np.isfinite(h.loss[0]) and h.val_loss[0] == np.inf
