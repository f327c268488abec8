"""ag_early_stopping: the core's rule (native/fit_stop.c) as keras' EarlyStopping has it: which value
is watched, which way it improves (mode; auto maximises accuracy), when training stops, which
weights come back; a reused object starts afresh; a monitor the fit never measures is refused
before anything changes."""

import math

import numpy as np
import pytest
from _fit_models import _iris, _mlp, _weights

import pyggmlr as pg


def _decay_after_3(epoch):
    return {"lr": 0.1, "weight_decay": 0.0 if epoch <= 3 else 3.0}


def _fit_then_decay(model, x, y, callbacks, **kw):
    """20 SGD epochs: the weights improve for 3 epochs, then a huge weight decay ruins them."""
    kw = dict(nepoch=20, batch_size=15, seed=1, silent=True, opt_params=_decay_after_3, **kw)
    return pg.ag_fit(model, x, y, optimizer="sgd", callbacks=callbacks, **kw)


def test_early_stopping_stops_and_restores_best(f64):
    x, y = _iris()
    model = _mlp(seed=0, hidden=8)
    snaps = {}

    def snap(epoch, logs):
        snaps[epoch] = _weights(model)

    es = pg.ag_early_stopping(patience=2)
    # weights improve for 3 epochs, then a huge weight decay ruins them: val loss rises
    h = _fit_then_decay(model, x, y, [snap, es], val_split=0.2)
    assert h.stopped_epoch == 5 and len(h) == 5 and es.stopped_epoch == 5
    assert h.best_epoch == 3 and h.val_loss[2] == min(h.val_loss)
    assert es.state()[1] is not None  # the best epoch's snapshot, put back at the end
    w = _weights(model)
    for k in w:
        np.testing.assert_array_equal(w[k], snaps[3][k])
    order = pg.random.Generator(1).sample_int(150) - 1  # the fit's first draw from its own stream
    val = order[120:]
    logits = pg.ag_predict(model, x[:, val])
    assert float(
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(logits), y[val]).item()
    ) == pytest.approx(h.val_loss[2], rel=1e-12)


def test_early_stopping_without_restore_and_on_train_loss(f64):
    x, y = _iris()
    model = _mlp(seed=0, hidden=8)
    snaps = {}
    es = pg.ag_early_stopping(patience=2, restore_best=False)
    h = _fit_then_decay(
        model, x, y, [lambda e, logs: snaps.__setitem__(e, _weights(model)), es]
    )  # fmt: skip
    assert len(h) < 20 and h.best_epoch == int(np.argmin(h.loss)) + 1  # monitors the training loss
    assert es.state()[1] is None  # no epoch asked for a snapshot (the core's SNAPSHOT action)
    w = _weights(model)
    for k in w:
        np.testing.assert_array_equal(w[k], snaps[len(h)][k])


def _keras_rule(values, patience, maximize, min_delta=0.0):
    """(best epoch, stopped epoch or None) of keras' EarlyStopping on a column of values."""
    best, best_epoch, wait = (-math.inf if maximize else math.inf), None, 0
    for e, v in enumerate(values, start=1):
        if (v - min_delta > best) if maximize else (v + min_delta < best):
            best, best_epoch, wait = v, e, 0
        else:
            wait += 1
            if wait >= patience:
                return best_epoch, e
    return best_epoch, None


def _climbing_fit(model, x, y, callbacks, nepoch=25):
    """Adam on iris with a validation split: val_accuracy climbs, with plateaus."""
    return pg.ag_fit(
        model, x, y, lr=0.01, nepoch=nepoch, batch_size=16, val_split=0.3, seed=4,
        silent=True, callbacks=callbacks,
    )  # fmt: skip


@pytest.mark.parametrize("mode", ["auto", "max", "min"])
def test_val_accuracy_direction(f64, mode):
    x, y = _iris()
    free = _climbing_fit(_mlp(seed=0, hidden=8), x, y, [])  # the run without stopping
    acc = free.val_accuracy
    maximize = mode != "min"
    best, stopped = _keras_rule(acc, 3, maximize)
    assert acc[-1] > acc[0]  # the column climbs: minimising it stops early on the worst weights
    model, snaps = _mlp(seed=0, hidden=8), {}
    es = pg.ag_early_stopping(patience=3, monitor="val_accuracy", mode=mode)
    h = _climbing_fit(model, x, y, [lambda e, logs: snaps.__setitem__(e, _weights(model)), es])
    assert (h.best_epoch, h.stopped_epoch) == (best, stopped)
    assert es.best == acc[best - 1] and es.monitor == "val_accuracy" and es.mode == mode
    if maximize:
        assert acc[best - 1] == max(acc[: len(h)])
    for k, w in _weights(model).items():  # restore_best: the best epoch's weights
        np.testing.assert_array_equal(w, snaps[best][k])


def test_reused_object_starts_afresh(f64):
    x, y = _iris()
    es = pg.ag_early_stopping(patience=2)
    first = _fit_then_decay(_mlp(seed=0, hidden=8), x, y, [es], val_split=0.2)
    again = _fit_then_decay(_mlp(seed=0, hidden=8), x, y, [es], val_split=0.2)
    fresh = _fit_then_decay(
        _mlp(seed=0, hidden=8), x, y, [pg.ag_early_stopping(patience=2)], val_split=0.2
    )
    assert first.stopped_epoch == again.stopped_epoch == fresh.stopped_epoch == 5
    assert again.val_loss == fresh.val_loss and again.best_epoch == fresh.best_epoch == 3


def test_names_are_checked_when_built():
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_early_stopping(monitor="val_los")
    assert str(e.value).startswith('ag_early_stopping: monitor must be "loss", "loss_unc",')
    assert str(e.value).endswith(
        '"time_val" (or an ag_fit(metrics =) column such as "auc" or "val_f1"), got "val_los"'
    )
    with pytest.raises(pg.PyggmlrValueError, match='mode must be "auto", "min" or "max", got "up"'):
        pg.ag_early_stopping(mode="up")
    # the core's texts (pg_monitor_arg_fail), R's words in R
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_early_stopping(monitor=3)
    assert str(e.value) == (
        "ag_early_stopping: monitor must be None or a single string such as 'val_loss', got int"
    )
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_model_checkpoint("ck.pgm", mode=None)
    assert str(e.value) == (
        "ag_model_checkpoint: mode must be a single string such as 'max', got NoneType"
    )
    # the path's kind first (R's order), R's words with Python's type name; "" is the core's
    for bad, shown in ((3, "int"), (None, "NoneType"), (b"ck.pgm", "bytes")):
        with pytest.raises(pg.ArgumentError) as e:
            pg.ag_model_checkpoint(bad, every=0)
        assert str(e.value) == (
            f"ag_model_checkpoint: path must be a file name (a single string), got {shown}"
        )
    with pytest.raises(pg.PyggmlrValueError, match="path must be a file name, got ''"):
        pg.ag_model_checkpoint("")


@pytest.mark.parametrize(
    "monitor, kw, why",
    [
        ("val_loss", {}, "only with validation data"),
        ("val_accuracy", {}, "only with validation data"),
        ("accuracy", {"loss": "mse", "val_split": 0.2}, "only when ag_fit counts accuracy"),
    ],
)
def test_unmeasured_monitor_refused_before_training(monitor, kw, why):
    x, y = _iris()
    if kw.get("loss") == "mse":
        y = np.eye(3)[:, y.astype(int)]
    model = _mlp(seed=0, hidden=8)
    w0 = _weights(model)
    with pytest.raises(pg.PyggmlrValueError, match=f'monitor "{monitor}" is measured {why}'):
        pg.ag_fit(model, x, y, nepoch=2, silent=True, callbacks=[
            pg.ag_early_stopping(monitor=monitor)], **kw)  # fmt: skip
    for k, w in _weights(model).items():
        np.testing.assert_array_equal(w, w0[k])


def test_settings_read_back_and_checkpoint_state():
    es = pg.ag_early_stopping(patience=4, min_delta=0.5, restore_best=False, mode="max")
    assert (es.patience, es.min_delta, es.restore_best, es.monitor, es.mode) == (
        4, 0.5, False, None, "max")  # fmt: skip
    # mode "max": best is its start before any fit
    assert (es.best, es.best_epoch, es.wait, es.stopped_epoch) == (-math.inf, None, 0, None)
    assert repr(es).endswith("| monitor=auto | mode=max")
    with pytest.raises(AttributeError):
        es.patience = 1  # one copy of the settings: the core's
    with pytest.raises(pg.PyggmlrValueError, match="callback state is not usable"):
        es.load_state({"best": 1.0, "best_epoch": -1, "wait": 0})
    with pytest.raises(pg.PyggmlrValueError, match="callback state is not usable"):
        es.load_state({"best": 1.0, "best_epoch": 2, "wait": 2**70})
    es.load_state({"best": 0.25, "best_epoch": 3, "wait": 1})
    assert es.state() == ({"best": 0.25, "best_epoch": 3, "wait": 1}, None)


def test_history_columns_are_the_cores_log_names():
    """The History's columns after epoch are the names the core's monitors read, in its order
    (then ag_fit(metrics=)'s columns, two per metric code)."""
    from pyggmlr.fit.callbacks import _LOG_NAMES
    from pyggmlr.fit.history import _KEYS

    assert _KEYS == ("epoch", *_LOG_NAMES[: pg._core.lib.PG_FIT_LOG_COUNT])
    assert _LOG_NAMES[pg._core.lib.PG_FIT_LOG_COUNT + 4 : pg._core.lib.PG_FIT_LOG_COUNT + 6] == (
        "auc",
        "val_auc",
    )


def test_plotting_an_empty_history_is_refused():
    with pytest.raises(pg.PyggmlrValueError, match="History.plot: no epochs to plot"):
        pg.History().plot()


def test_a_hand_edited_history_prints():
    """NaN epochs print as "-"; a stopped / best epoch that is not a number is none"""
    from pyggmlr.fit.history import History

    nan = float("nan")
    d = {k: [nan, nan] for k in History().as_dict() if k not in ("stopped_epoch", "best_epoch")}
    d.update(epoch=[1, nan], loss=[0.5, 0.25], time_train=[0, 0], time_val=[0, 0])
    h = History.from_dict({**d, "stopped_epoch": nan, "best_epoch": "x"})
    lines = repr(h).splitlines()
    assert lines[0] == "<History: 2 epochs>" and lines[3].startswith("    -    0.25000")
    assert len(lines) == 4
    h.loss = [1.0]
    with pytest.raises(pg.ArgumentError, match="History: the history's columns are not 12"):
        repr(h)
