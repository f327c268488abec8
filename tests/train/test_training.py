"""ag_fit: iris, exact gradient accumulation, validation split, callbacks, early stopping,
History, errors, static epochs; ag_predict / ag_accuracy. Checkpoints and resume:
test_fit_resume.py."""

import functools
import math
import sys

import numpy as np
import pytest
from _fit_models import _iris, _mlp, _weights

import pyggmlr as pg
from pyggmlr.fit.history import _KEYS


def _copy_weights(dst, src):
    for (_, a), (_, b) in zip(dst.parameters().items(), src.parameters().items()):
        a.data = b.numpy()


def test_iris_reaches_095_validation_accuracy():
    x, y = _iris()
    accs = []
    for seed in range(5):  # 30 held-out flowers: one seed's split can hold 2 hard ones (0.933)
        model = _mlp(seed=seed)
        hist = pg.ag_fit(
            model,
            x,
            y,
            loss="cross_entropy",
            optimizer="adamw",
            lr=0.01,
            nepoch=40,
            batch_size=16,
            val_split=0.2,
            seed=42 + seed,
            silent=True,
        )
        assert len(hist) == 40
        assert hist.loss[-1] < hist.loss[0] / 3
        accs.append(hist.val_accuracy[-1])
    assert np.median(accs) >= 0.95 and min(accs) >= 0.9, accs
    assert not model.training  # eval mode at the end
    # the held-out 30 samples, recomputed independently of ag_fit's bookkeeping
    order = (
        pg.random.Generator(42 + 4).sample_int(150) - 1
    )  # the last fit's split: R's sample.int(150)
    val = order[120:]
    assert pg.ag_accuracy(model, x[:, val], y[val]) == pytest.approx(hist.val_accuracy[-1])
    logits = pg.ag_predict(model, x[:, val])
    ref = float(pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(logits), y[val]).item())
    assert hist.val_loss[-1] == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_accumulation_equals_large_batch(f64, opt, shuffle):
    """batch_size=b with nbatch_logical=4b must apply exactly the gradients of batch_size=4b
    (the micro-batch losses are means over b columns; the optimizer averages k of them)."""
    x, y = _iris()
    x, y = x[:, :128], y[:128]
    ref = _mlp(seed=3)
    a, b, c = _mlp(seed=9), _mlp(seed=9), _mlp(seed=9)
    for m in (a, b, c):
        _copy_weights(m, ref)
    w0 = _weights(a)
    kw = dict(optimizer=opt, lr=0.05, nepoch=3, shuffle=shuffle, seed=11, silent=True)
    pg.ag_fit(a, x, y, batch_size=8, nbatch_logical=32, **kw)  # 4 steps per epoch, 12 in all
    pg.ag_fit(b, x, y, batch_size=32, **kw)
    pg.ag_fit(c, x, y, batch_size=8, **kw)  # same data, 4x more steps
    wa, wb, wc = _weights(a), _weights(b), _weights(c)
    for k in wa:
        np.testing.assert_allclose(wa[k], wb[k], rtol=0, atol=1e-12)
    moved = max(np.max(np.abs(wa[k] - w0[k])) for k in wa)
    assert moved > 1e-2
    assert max(np.max(np.abs(wc[k] - wb[k])) for k in wa) > 1e-3  # the check can fail


def test_accumulation_history_counts_micro_batches(f64):
    x, y = _iris()
    seen = []

    class Count(pg.Callback):
        def on_batch_end(self, step, logs):
            seen.append(step)

    pg.ag_fit(
        _mlp(), x, y, batch_size=10, nbatch_logical=40, nepoch=2, silent=True, callbacks=[Count()]
    )
    assert len(seen) == 2 * (150 // 40) * 4  # 120 of 150 samples fill 3 logical batches


def test_val_split_sizes_and_modes():
    x = np.arange(4 * 100, dtype=np.float64).reshape(4, 100, order="F")
    y = np.arange(100) % 3
    calls = []
    model = _mlp()

    def loss(out, yb):
        calls.append((model.training, out.shape[1]))
        return pg.ag_softmax_cross_entropy_loss(out, yb)

    seen_val = []
    lin = model.layers[0]
    orig_forward = lin.forward

    def spy(xb):
        if not model.training:
            seen_val.append(xb.numpy())
        return orig_forward(xb)

    lin.forward = spy
    hist = pg.ag_fit(
        model,
        x,
        y,
        loss=loss,
        optimizer="sgd",
        lr=1e-6,
        nepoch=1,
        batch_size=10,
        val_split=0.25,
        shuffle=False,
        silent=True,
        static=False,  # counts the host's loss calls: the eager loop's, one per batch
    )
    train = [s for t, s in calls if t]
    val = [s for t, s in calls if not t]
    assert train == [10] * 7  # 75 training samples: 7 whole batches
    assert val == [10, 10, 5]  # all 25 held-out samples
    np.testing.assert_array_equal(np.concatenate(seen_val, axis=1), x[:, 75:])  # the last fraction
    assert not math.isnan(hist.val_loss[0])
    assert math.isnan(hist.val_accuracy[0])  # accuracy only for loss="cross_entropy" (as ggml)


def test_history_fields_and_ggml_uncertainties():
    x, y = _iris()
    h = pg.ag_fit(_mlp(), x, y, nepoch=3, batch_size=10, val_split=0.2, silent=True, seed=1)
    d = h.as_dict()
    for k in _KEYS:  # every History column, epoch and timings included
        assert len(d[k]) == 3 and all(not math.isnan(v) for v in d[k]), k
    assert h.epoch == [1, 2, 3] and h.lr == [1e-3] * 3
    a = h.val_accuracy[-1]
    assert h.val_accuracy_unc[-1] == pytest.approx(math.sqrt(a * (1 - a) / 29))
    assert "val_loss" in repr(h)


def test_regression_losses(f64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 64))
    y = np.array([[1.0, -2.0, 0.5]]) @ x + 0.3
    pg.ggml_set_seed(0)
    model = pg.ag_sequential(pg.ag_linear(3, 1))
    sgd = dict(optimizer="sgd", batch_size=16, silent=True)  # both fits below
    h = pg.ag_fit(model, x, y, loss="mse", lr=0.1, nepoch=60, **sgd)
    assert h.loss[-1] < 1e-6
    assert all(math.isnan(v) for v in h.accuracy)
    np.testing.assert_allclose(
        model.parameters()["layer1_W"].numpy(), [[1.0, -2.0, 0.5]], atol=1e-3
    )
    # "mean" / "sum" reduce the model's output itself (y unused)
    h = pg.ag_fit(
        pg.ag_sequential(pg.ag_linear(3, 1)), x, None, loss="sum", lr=1e-3, nepoch=2, **sgd
    )
    assert h.loss[1] < h.loss[0]


def test_sum_loss_statistics_are_totals(f64):
    # a "sum" loss's epoch loss is the batches' total (ggml's), "mean"'s their mean, as R's test
    x = np.random.default_rng(2).normal(size=(3, 12))
    model = pg.ag_sequential(pg.ag_linear(3, 1))
    kw = dict(optimizer="sgd", lr=0, nepoch=1, batch_size=4, shuffle=False, silent=True)
    w, b = (t.numpy() for t in model.parameters().values())
    per = [float((w @ x[:, k * 4 : k * 4 + 4] + b).sum()) for k in range(3)]
    assert pg.ag_fit(model, x, None, loss="sum", **kw).loss[0] == pytest.approx(sum(per), 1e-12)
    mean = pg.ag_fit(model, x, None, loss="mean", **kw).loss[0]
    assert mean == pytest.approx(sum(per) / 12, 1e-12)


def test_opt_params_schedule():
    x, y = _iris()
    opt_lrs = []
    model = _mlp()
    opt = pg.optimizer_sgd(model.parameters(), lr=0.5)

    def record(epoch, logs):
        opt_lrs.append(opt.lr)

    h = pg.ag_fit(
        model,
        x,
        y,
        optimizer=opt,
        nepoch=4,
        silent=True,
        callbacks=[record],
        opt_params=lambda e: {"alpha": 0.1 * 0.5 ** (e - 1), "momentum": 0.9},
    )
    assert h.lr == pytest.approx([0.1, 0.05, 0.025, 0.0125])
    assert opt_lrs == pytest.approx(h.lr) and opt.momentum == pytest.approx(0.9)
    with pytest.raises(pg.PyggmlrValueError, match="unknown hyper-parameter"):
        pg.ag_fit(model, x, y, nepoch=1, silent=True, opt_params=lambda e: {"nope": 1})


def test_plain_callback_gets_logs_and_can_stop():
    x, y = _iris()
    got = []

    def cb(epoch, logs):
        got.append((epoch, sorted(logs)))
        return False if epoch == 2 else None

    h = pg.ag_fit(_mlp(), x, y, nepoch=10, val_split=0.2, silent=True, callbacks=[cb])
    assert [e for e, _ in got] == [1, 2] and len(h) == 2 and h.stopped_epoch == 2
    assert {"loss", "accuracy", "val_loss", "val_accuracy", "epoch", "lr"} <= set(got[0][1])


def test_modes_during_and_after_fit():
    x, y = _iris()
    model = _mlp(dropout=0.5)
    modes = []

    def loss(out, yb):
        modes.append(model.layers[1].training)
        return pg.ag_softmax_cross_entropy_loss(out, yb)

    pg.ag_fit(  # static=False: counts the host's loss calls, one per eager batch
        model, x, y, loss=loss, nepoch=1, batch_size=50, val_split=1 / 3, silent=True, static=False
    )
    assert modes == [
        True,
        True,
        False,
    ]  # 2 training batches, then one batch of 50 validation samples
    assert not model.training and not model.layers[1].training


def test_one_hot_targets_equal_ids(f64):
    x, y = _iris()
    a, b = _mlp(seed=2), _mlp(seed=2)
    ha = pg.ag_fit(a, x, y, nepoch=2, seed=3, silent=True)
    hb = pg.ag_fit(b, x, np.eye(3)[:, y], nepoch=2, seed=3, silent=True)
    assert ha.loss == pytest.approx(hb.loss, rel=1e-12) and ha.accuracy == hb.accuracy


def test_predict_and_accuracy():
    x, y = _iris()
    model = _mlp()
    out = pg.ag_predict(model, x, batch_size=7)
    assert out.shape == (3, 150)
    np.testing.assert_allclose(out, model(pg.ag_tensor(x)).numpy(), rtol=1e-6)
    acc = pg.ag_accuracy(model, x, y)
    assert acc == pytest.approx(np.mean(np.argmax(out, axis=0) == y))
    assert model.training  # predict puts the mode back
    # a plain function is a model too, of the default dtype (R's ag_predict(function(x) ...))
    np.testing.assert_allclose(pg.ag_predict(pg.ag_relu, x - 5), np.maximum(x - 5, 0), rtol=1e-6)


def test_progress_output(capsys, monkeypatch):
    """progress="bar" in a terminal: one bar for the run and a line per epoch (on stderr) with the
    history's values; outside one (pytest captures stderr) the lines alone (test_fit_progress.py);
    silent / "none" never print."""
    x, y = _iris()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    h = pg.ag_fit(_mlp(), x, y, nepoch=2, val_split=0.2, progress="bar")
    err = capsys.readouterr()
    assert err.out == ""
    for e in (0, 1):
        line = (  # the core's line, as R prints it (pg_fit_epoch_line)
            f"epoch {e + 1:4d}/2  loss={h.loss[e]:.5f}  acc={h.accuracy[e]:.4f}  "
            f"val_loss={h.val_loss[e]:.5f}  val_acc={h.val_accuracy[e]:.4f}  ("
        )
        assert line in err.err
    try:
        import tqdm  # noqa: F401
    except ImportError:
        pass
    else:  # one bar over 2 epochs x 3 batches, its postfix the running values and the last val
        assert "epoch 2/2" in err.err and "6/6" in err.err and "| val_loss " in err.err
    for kw in ({"silent": True}, {"silent": True, "progress": "bar"}, {"progress": "none"}):
        pg.ag_fit(_mlp(), x, y, nepoch=2, **kw)
        err = capsys.readouterr()
        assert err.err == "" and err.out == "", kw
    with pytest.raises(
        pg.PyggmlrValueError, match='ag_fit: progress must be "auto", "bar" or "none", got yes'
    ):
        pg.ag_fit(_mlp(), x, y, progress="yes")


def test_history_plot(tmp_path):
    pytest.importorskip("matplotlib")
    x, y = _iris()
    h = pg.ag_fit(_mlp(), x, y, nepoch=3, val_split=0.2, silent=True)
    p = tmp_path / "loss.png"
    h.plot(str(p))
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    q = tmp_path / "b.png"
    h.plot(bytes(q))  # a bytes path, as ag_save_model's
    assert q.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for bad, text in (
        (dict(path=3), "path must be a file name (a single string), got int"),
        (dict(path=[str(p)]), "path must be a file name (a single string), got list"),
        (dict(show="yes"), "show must be True or False, got str 'yes'"),
    ):  # were matplotlib's own errors (or "yes" read as True)
        with pytest.raises(pg.ArgumentError) as e:
            h.plot(**bad)
        assert str(e.value) == "History.plot: " + text


def test_errors():
    x, y = _iris()
    m = _mlp()
    with pytest.raises(
        pg.PyggmlrValueError, match=r"nbatch_logical \(50\) must be a multiple of batch_size \(32\)"
    ):
        pg.ag_fit(m, x, y, batch_size=32, nbatch_logical=50, silent=True)
    with pytest.raises(
        pg.PyggmlrValueError,
        match='unknown loss "hinge"; use "cross_entropy", "mse", .* or a function\\(output, y\\)',
    ):
        pg.ag_fit(m, x, y, loss="hinge", silent=True)
    with pytest.raises(pg.PyggmlrValueError, match="unknown optimizer"):
        pg.ag_fit(m, x, y, optimizer="lbfgs", silent=True)
    with pytest.raises(pg.ShapeError, match="150 samples"):
        pg.ag_fit(m, x, y[:100], silent=True)
    with pytest.raises(pg.ShapeError):
        pg.ag_fit(m, x[:3], y, nepoch=1, silent=True)  # model wants 4 features
    with pytest.raises(pg.ShapeError):
        pg.ag_fit(m, x, np.eye(4)[:, y % 4], nepoch=1, silent=True)  # 4-row one-hot vs 3 logits
    with pytest.raises(pg.PyggmlrValueError, match="val_split"):
        pg.ag_fit(m, x, y, val_split=1.0, silent=True)
    with pytest.raises(pg.PyggmlrValueError, match="logical batch"):
        pg.ag_fit(m, x, y, batch_size=100, val_split=0.5, silent=True)
    with pytest.raises(pg.PyggmlrValueError, match="needs targets"):
        pg.ag_fit(m, x, None, silent=True)
    with pytest.raises(pg.PyggmlrValueError, match="class ids"):
        pg.ag_fit(m, x, y + 0.5, silent=True)
    with pytest.raises(pg.PyggmlrValueError, match="patience"):
        pg.ag_early_stopping(patience=0)


def test_demo_command(tmp_path, capsys):
    from pyggmlr.__main__ import main

    png = tmp_path / "curve.png"
    assert main(["demo", "--epochs", "50", "--quiet", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "final validation accuracy: " in out
    acc = float(out.split("final validation accuracy: ")[1].split()[0])
    assert acc >= 0.9  # 28 of the 30 held-out flowers with the default seed
    assert out.count("\n   ") >= 50  # one table row per epoch
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "loss curve: skipped" in out
    else:
        assert f"loss curve: {png}" in out and png.read_bytes()[:4] == b"\x89PNG"
    assert main([]) == 1 and "demo" in capsys.readouterr().out


def _static_fits(model, x, y, cb, **kw):
    """A static 3-epoch ag_fit of a fresh model() without, then with, the batch callback cb:
    (history, weights) of each."""

    def run(cbs):
        m = model()
        h = pg.ag_fit(m, x, y, nepoch=3, silent=True, static=True, callbacks=cbs, **kw)
        return h, [t.numpy() for t in m.parameters().values()]

    return run([]), run([cb])


def test_static_epochs_replayed_in_c_equal_the_per_batch_loop():
    """With no per-batch callback a compiled ag_fit runs whole chunks of batches in C
    (pg_fit_run_static); an on_batch_end callback makes it return to Python per batch: the
    histories and weights must be the same bits."""
    pg.ggml_set_seed(1)
    x = pg.random.rnorm(4 * 300).reshape((4, 300), order="F")
    y = (x[0] > 0).astype(int) + (x[1] > 0)

    class PerBatch(pg.Callback):
        def on_batch_end(self, step, logs):
            self.n = getattr(self, "n", 0) + 1

    def model():
        pg.ggml_set_seed(2)
        return pg.ag_sequential(
            pg.ag_linear(4, 16, "relu"), pg.ag_dropout(0.2), pg.ag_linear(16, 3)
        )

    cb = PerBatch()
    (h1, w1), (h2, w2) = _static_fits(model, x, y, cb, batch_size=16, val_split=0.15, seed=3)
    assert cb.n == 3 * (255 // 16)
    assert h1.loss == h2.loss and h1.val_loss == h2.val_loss and h1.val_accuracy == h2.val_accuracy
    assert all(np.array_equal(a, b) for a, b in zip(w1, w2))


def test_static_epoch_replayed_in_one_core_call_equals_batch_by_batch():
    """With nothing to run between batches ag_fit replays an epoch in one pg_fit_run_static call;
    a batch callback forces the batch-by-batch loop: the same history and weights, bit for bit."""
    x, y = _iris()

    class Count:
        n = 0

        def on_epoch_end(self, epoch, logs):
            return None

        def on_batch_end(self, step, logs):
            Count.n += 1

    def model(seed):
        if seed is None:
            pg.ggml_set_seed(5)
        return _mlp(dropout=0.2)

    for seed in (4, None):
        kw = dict(batch_size=10, nbatch_logical=20, val_split=0.2, seed=seed)
        (ha, wa), (hb, wb) = _static_fits(functools.partial(model, seed), x, y, Count(), **kw)
        assert [ha.loss, ha.accuracy, ha.val_loss] == [hb.loss, hb.accuracy, hb.val_loss]
        assert all(np.array_equal(a, b) for a, b in zip(wa, wb))
    assert Count.n == 2 * 3 * 12  # 120 training samples in micro-batches of 10, 3 epochs


def test_builtin_callbacks_ask_for_no_batch_events(monkeypatch, tmp_path):
    """The built-in callbacks' on_batch_end is the base class's no-op: ag_fit asks the core for
    no per-batch events for it (as R's), so a compiled fit keeps running its batches in C; a
    user's own on_batch_end still gets every one."""
    from pyggmlr.fit import loop

    asked = []
    real = loop.Session
    monkeypatch.setattr(loop, "Session", lambda *a: asked.append(a[4]) or real(*a))
    x = np.linspace(-1, 1, 4 * 60).reshape(4, 60, order="F")
    y = np.arange(60) % 3
    cbs = [pg.ag_early_stopping(), pg.ag_model_checkpoint(str(tmp_path / "c.st"))]
    pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=20, silent=True, callbacks=cbs)

    class Count(pg.Callback):
        def on_batch_end(self, step, logs):
            self.n = getattr(self, "n", 0) + 1

    c = Count()
    pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=20, silent=True, callbacks=cbs + [c])
    assert asked == [False, True] and c.n == 6
