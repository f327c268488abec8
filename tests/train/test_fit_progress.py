"""ag_fit's progress as keras prints it (issue 31): verbose 0/1/2, the default a live bar only
where one can be redrawn (a terminal on stderr, IPython) and one line per epoch elsewhere
(scripts' logs, CI, pytest's capture); times in us / ms / s / m; whole epochs on the plot's axis."""

import math
import sys
import types

import numpy as np
import pytest
from _fit_models import _iris, _mlp

import pyggmlr as pg
from pyggmlr.fit import progress as fp
from pyggmlr.fit.history import _KEYS, History


def _lines(err, h, nepoch):
    """err is exactly the core's per-epoch lines, one a line, no carriage returns."""
    assert "\r" not in err
    lines = err.splitlines()
    assert len(lines) == nepoch
    for e, line in enumerate(lines):
        assert line.startswith(
            f"epoch {e + 1:4d}/{nepoch}  loss={h.loss[e]:.5f}  acc={h.accuracy[e]:.4f}  "
            f"val_loss={h.val_loss[e]:.5f}  val_acc={h.val_accuracy[e]:.4f}  ("
        )
        assert line.endswith(("us)", "ms)", "s)")) and "0.00s" not in line


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"verbose": None},
        {"verbose": "auto"},
        {"verbose": 1},
        {"progress": "bar"},
        {"verbose": 2},
    ],
)
def test_outside_a_terminal_one_line_per_epoch(capsys, kw):
    """The default (verbose None / "auto", progress "auto") and a bar asked for (verbose=1,
    progress="bar") print the epoch lines where stderr is no terminal: no \\r jumble in a log."""
    x, y = _iris()
    h = pg.ag_fit(_mlp(), x, y, nepoch=3, batch_size=30, val_split=0.2, seed=1, **kw)
    out = capsys.readouterr()
    assert out.out == ""
    _lines(out.err, h, 3)


def test_in_a_terminal_the_live_bar(capsys, monkeypatch):
    """A terminal on stderr (faked): the default and verbose=1 draw the bar (tqdm, \\r updates)
    with the lines above it; verbose=2 the lines alone; 0 and silent nothing."""
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    x, y = _iris()
    for kw in ({}, {"verbose": 1}):
        h = pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=30, val_split=0.2, seed=1, **kw)
        err = capsys.readouterr().err
        assert "\r" in err and "8/8" in err, kw  # one bar over 2 epochs x 4 batches
        assert f"epoch    2/2  loss={h.loss[1]:.5f}" in err
    h = pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=30, val_split=0.2, seed=1, verbose=2)
    _lines(capsys.readouterr().err, h, 2)
    for kw in (
        {"verbose": 0},
        {"silent": True},
        {"verbose": 2, "silent": True},
        {"progress": "none"},
    ):
        pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=30, **kw)
        assert capsys.readouterr() == ("", ""), kw


def test_ipython_is_interactive(monkeypatch):
    """An IPython shell or Jupyter kernel counts as interactive even without a terminal."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert fp.progress_mode("auto", False) == "lines"
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: object()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert fp.progress_mode("auto", False) == "bar" and fp.progress_mode("bar", False) == "bar"
    assert fp.progress_mode("auto", True) == "none" and fp.progress_mode("none", False) == "none"


def test_verbose_refusal_names_auto():
    x, y = _iris()
    with pytest.raises(
        pg.PyggmlrValueError, match=r'2 \(one line per epoch\), "auto" or None, got 3'
    ):
        pg.ag_fit(_mlp(), x, y, verbose=3)
    with pytest.raises(pg.PyggmlrValueError, match="got 'often'"):
        pg.ag_fit(_mlp(), x, y, verbose="often")


def _history(times):
    n = len(times)
    d = {k: [math.nan] * n for k in _KEYS}
    d.update(epoch=list(range(1, n + 1)), loss=[0.5] * n, time_train=times, time_val=[0.0] * n)
    d["stopped_epoch"] = d["best_epoch"] = None
    return History.from_dict(d)


def test_times_in_keras_units():
    """The core's rule for the History's time column and the epoch line: us below a
    millisecond, ms below a second, seconds with 2 decimals below a minute, then m and s."""
    h = _history([0.0004, 0.0126, 1.5, 125.0])
    rows = h.table().splitlines()
    assert rows[0].endswith("   time")
    assert [r.split()[-1] if "m " not in r else " ".join(r.split()[-2:]) for r in rows[1:]] == [
        "400us", "13ms", "1.50s", "2m 05s"]  # fmt: skip
    assert all(len(r) == len(rows[0]) for r in rows)  # the column keeps its width
    logs = dict(epoch=1, loss=0.5, accuracy=math.nan, val_loss=math.nan,
                val_accuracy=math.nan, time_train=0.0126, time_val=0.0)  # fmt: skip
    assert fp.epoch_line(logs, 1) == "epoch    1/1  loss=0.50000  (13ms)"


def test_plot_has_whole_epoch_ticks():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    d = {k: [math.nan] * 3 for k in _KEYS}
    d.update(epoch=[1, 2, 3], loss=[1.0, 0.5, 0.25], accuracy=[0.5, 0.7, 0.9],
             time_train=[0.1] * 3)  # fmt: skip
    d["stopped_epoch"] = d["best_epoch"] = None
    fig = History.from_dict(d).plot()
    assert len(fig.axes) == 2
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if 1 <= t <= 3]
        assert ticks == [1, 2, 3] and all(float(t).is_integer() for t in ticks)
    assert np.array_equal(fig.axes[0].lines[0].get_xdata(), [1, 2, 3])


def test_plot_has_a_panel_per_metric():
    """ag_fit(metrics=)'s columns each get a panel (train and validation lines), after loss and
    accuracy; panels wrap at three per row and unused cells are hidden."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    d = {k: [math.nan] * 3 for k in _KEYS}
    d.update(epoch=[1, 2, 3], loss=[1.0, 0.5, 0.25], accuracy=[0.5, 0.7, 0.9],
             auc=[0.6, 0.7, 0.8], val_auc=[0.55, 0.65, 0.7], mae=[3.0, 2.0, 1.0])  # fmt: skip
    d["stopped_epoch"] = d["best_epoch"] = None
    fig = History.from_dict(d).plot()
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_ylabel() for ax in shown] == ["loss", "accuracy", "auc", "mae"]
    auc = shown[2]
    assert [ln.get_label() for ln in auc.lines] == ["train", "validation"]
    assert np.array_equal(auc.lines[1].get_ydata(), [0.55, 0.65, 0.7])
    assert len(fig.axes) == 6 and len(shown) == 4  # a 2 x 3 grid, two cells hidden


def test_lines_keep_static_epochs_in_one_core_call(monkeypatch, capsys):
    """Only a bar needs each batch: with the lines (the default in a log) or nothing printed, a
    static run still replays an epoch in one core call (the session asks for no batch events)."""
    import pyggmlr.fit.loop as loop

    seen = []
    real = loop.Session
    monkeypatch.setattr(loop, "Session", lambda *a: seen.append(a[-1]) or real(*a))
    x, y = _iris()
    for verbose in (2, 0):
        pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=30, static=True, verbose=verbose)
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=30, static=True, verbose=1)
    assert seen == [False, False, True]  # the bar: each batch
