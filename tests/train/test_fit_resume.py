"""ag_fit's checkpoints and resume (pyggmlr/fit/resume.py): bit-exact resumes, refused
settings, the checkpoint pattern, a run checkpointed in R resumed in Python, and a refused
resume that changes nothing. The rest of ag_fit: test_training.py."""

import errno

import numpy as np
import pytest
from _files import HISTORY_EDITS, edit_meta
from _fit_models import _iris, _mlp, _weights

import pyggmlr as pg


def test_checkpoint_resume_is_bit_exact(tmp_path):
    """A run checkpointed after epoch 3 and resumed to epoch 6 ends bit for bit where the
    uninterrupted 6-epoch run ends (shuffles, dropout masks, batch-norm buffers, Adam moments,
    the lr schedule)."""
    x, y = _iris()
    kw = dict(
        optimizer="adamw",
        lr=0.01,
        batch_size=16,
        nbatch_logical=32,
        val_split=0.2,
        seed=5,
        silent=True,
        opt_params=lambda e: {"lr": 0.01 / e},
    )
    full = _mlp(seed=1, dropout=0.2, bn=True)
    h_full = pg.ag_fit(full, x, y, nepoch=6, **kw)

    first = _mlp(seed=1, dropout=0.2, bn=True)
    path = tmp_path / "ckpt.safetensors"
    ck = pg.ag_model_checkpoint(str(path), every=3)
    pg.ag_fit(first, x, y, nepoch=3, callbacks=[ck], **kw)
    assert ck.saved == [str(path)] and pg.ag_model_info(path)["epoch"] == 3
    pg.ggml_set_seed(999)  # disturb the global stream: resuming must restore it
    resumed = _mlp(seed=77, dropout=0.2, bn=True)  # other initial weights, all overwritten
    h_res = pg.ag_fit(resumed, x, y, nepoch=6, resume_from=str(path), **kw)

    wf, wr = _weights(full), _weights(resumed)
    assert set(wf) == set(wr) and "layer2_running_mean" in wf
    for k in wf:
        assert wf[k].tobytes() == wr[k].tobytes(), k
    assert h_res.epoch == [1, 2, 3, 4, 5, 6]
    assert h_res.loss == h_full.loss and h_res.val_loss == h_full.val_loss
    # and it is not trivially equal: a run without the checkpoint's optimizer state differs
    other = _mlp(seed=1, dropout=0.2, bn=True)
    pg.ag_fit(other, x, y, nepoch=3, **kw)
    pg.ag_fit(other, x, y, nepoch=3, **kw)
    assert any(_weights(other)[k].tobytes() != wf[k].tobytes() for k in wf)


def test_a_checkpoint_keeps_early_stoppings_best_weights(tmp_path):
    """ag_early_stopping(restore_best=True)'s best weights go into the checkpoint as callback
    tensors, the same bits as its snapshot, and a resume restores them (the writer's arrays
    must stay alive through the core's write)."""
    x, y = _iris()
    kw = dict(lr=0.01, batch_size=16, seed=3, val_split=0.2, silent=True)
    path = str(tmp_path / "ck.safetensors")
    es = pg.ag_early_stopping(patience=50, restore_best=True)
    pg.ag_fit(_mlp(seed=1), x, y, nepoch=3, callbacks=[es, pg.ag_model_checkpoint(path)], **kw)
    from pyggmlr.io.modelfile import _ModelFile

    with _ModelFile(path, "test") as f:
        saved = f.tensors("callback")
    best = es._best_weights[0]
    assert len(saved) == len(best) > 0
    by_name = {k.rsplit(".", 1)[-1]: v for k, v in saved.items()}
    for k, v in best.items():
        assert (
            np.asarray(by_name[k], dtype=np.float64).tobytes()
            == np.asarray(v, dtype=np.float64).tobytes()
        ), k
    es2 = pg.ag_early_stopping(patience=50, restore_best=True)
    h = pg.ag_fit(_mlp(seed=9), x, y, nepoch=5, resume_from=path, callbacks=[es2], **kw)
    assert h.epoch == [1, 2, 3, 4, 5] and es2.best_epoch is not None


def test_resume_rejects_other_settings(tmp_path):
    x, y = _iris()
    path = str(tmp_path / "c.safetensors")
    pg.ag_fit(
        _mlp(), x, y, nepoch=1, batch_size=10, callbacks=[pg.ag_model_checkpoint(path)], silent=True
    )
    with pytest.raises(pg.PyggmlrValueError, match="batch_size"):
        pg.ag_fit(_mlp(), x, y, nepoch=2, batch_size=20, resume_from=path, silent=True)
    plain = str(tmp_path / "plain.safetensors")
    pg.ag_save_model(_mlp(), plain)
    with pytest.raises(pg.PyggmlrValueError, match="checkpoint"):
        pg.ag_fit(_mlp(), x, y, nepoch=2, resume_from=plain, silent=True)


def test_checkpoint_every_and_epoch_pattern(tmp_path):
    x, y = _iris()
    ck = pg.ag_model_checkpoint(str(tmp_path / "e{epoch}.safetensors"), every=2)
    pg.ag_fit(_mlp(), x, y, nepoch=5, callbacks=[ck], silent=True)
    assert [p.rsplit("/", 1)[1] for p in ck.saved] == [
        "e2.safetensors",
        "e4.safetensors",
        "e5.safetensors",
    ]
    m = pg.ag_load_model(ck.saved[-1])
    assert not m.training


def test_a_run_checkpointed_in_r_resumes_in_python_exactly(tmp_path):
    """ag_model_checkpoint in R, ag_fit(resume_from=) in Python: the same file layout, so the
    resumed run equals Python's uninterrupted one bit for bit (skips only without R)."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed: the cross-language resume needs Rscript")
    if subprocess.run(
        ["Rscript", "-e", "library(pyggmlr)"], capture_output=True, timeout=120
    ).returncode:
        pytest.skip("the R package pyggmlr is not installed")
    f = tmp_path / "r_run.safetensors"
    script = f"""library(pyggmlr); ag_dtype("f64")
set.seed(3); x <- matrix(rnorm(160), 4, 40); y <- as.integer(colSums(x[1:2, ]) > 0)
set.seed(11); m <- ag_sequential(ag_linear(4, 6, "relu"), ag_dropout(0.1), ag_linear(6, 2))
invisible(ag_fit(m, x, y, nepoch = 2L, batch_size = 8L, val_split = 0.25, seed = 1L, lr = 0.02, silent = TRUE,
                 callbacks = list(ag_model_checkpoint("{f}"))))"""
    p = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    pg.ag_dtype("f64")
    try:
        pg.ggml_set_seed(3)
        x = pg.random.rnorm(160).reshape((4, 40), order="F")
        y = (x[0] + x[1] > 0).astype(int)

        def model():
            pg.ggml_set_seed(11)
            return pg.ag_sequential(
                pg.ag_linear(4, 6, "relu"), pg.ag_dropout(0.1), pg.ag_linear(6, 2)
            )

        kw = dict(batch_size=8, val_split=0.25, seed=1, lr=0.02, silent=True)
        full = pg.ag_fit(model(), x, y, nepoch=4, **kw)
        rest = pg.ag_fit(
            pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_dropout(0.1), pg.ag_linear(6, 2)),
            x,
            y,
            nepoch=4,
            resume_from=str(f),
            **kw,
        )
        assert (
            rest.loss == full.loss and rest.val_loss == full.val_loss and rest.epoch == [1, 2, 3, 4]
        )
    finally:
        pg.ag_dtype("f32")


def _two_epochs(tmp_path):
    """(x, y, the checkpoint of a 2-epoch run) for the refusal tests."""
    pg.ggml_set_seed(1)
    x = pg.random.rnorm(4 * 40).reshape((4, 40), order="F")
    y = (x[0] > 0).astype(int)
    f = str(tmp_path / "run.safetensors")
    m = pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 2))
    pg.ag_fit(
        m, x, y, nepoch=2, batch_size=8, seed=1, silent=True, callbacks=[pg.ag_model_checkpoint(f)]
    )
    return x, y, f


def test_a_refused_resume_changes_nothing(tmp_path):
    x, y, f = _two_epochs(tmp_path)
    m2 = pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 2))
    before = {k: t.numpy() for k, t in m2.parameters().items()}
    with pytest.raises(
        pg.PyggmlrValueError, match="cannot resume: batch_size was 8 in the checkpoint, now 4"
    ):
        pg.ag_fit(m2, x, y, nepoch=3, batch_size=4, seed=1, silent=True, resume_from=f)
    assert all(
        np.array_equal(t.numpy(), before[k]) for k, t in m2.parameters().items()
    )  # nothing written


def test_save_best_only_saves_the_improving_epochs(tmp_path):
    """save_best_only: of the epochs looked at (every 1 here), those where val_accuracy (auto:
    maximised) beats the best before; the file holds the best epoch's weights."""
    from test_early_stopping import _climbing_fit

    x, y = _iris()
    snaps = {}
    model = _mlp(seed=0, hidden=8)
    ck = pg.ag_model_checkpoint(str(tmp_path / "best.safetensors"), save_best_only=True,
                                monitor="val_accuracy")  # fmt: skip
    assert (ck.every, ck.save_best_only, ck.monitor, ck.mode) == (1, True, "val_accuracy", "auto")
    h = _climbing_fit(model, x, y, [ck, lambda e, logs: snaps.__setitem__(e, _weights(model))])
    acc, best, improved = h.val_accuracy, -np.inf, []
    for e, v in enumerate(acc, start=1):
        if v > best:
            best, improved = v, improved + [e]
    assert len(ck.saved) == len(improved) >= 3 and ck.best == max(acc)
    loaded = pg.ag_load_model(ck.saved[-1])
    assert pg.ag_model_info(ck.saved[-1])["epoch"] == improved[-1]
    for k, w in _weights(loaded).items():
        np.testing.assert_array_equal(w, snaps[improved[-1]][k])
    # mode="min" on the same column saves the first epoch only; every=5 looks at 5, 10, ...
    ck2 = pg.ag_model_checkpoint(str(tmp_path / "e{epoch}.safetensors"), every=5,
                                 save_best_only=True, monitor="val_accuracy", mode="min")  # fmt: skip
    _climbing_fit(_mlp(seed=0, hidden=8), x, y, [ck2])
    assert [p.rsplit("/", 1)[1] for p in ck2.saved] == ["e5.safetensors"]
    assert repr(ck2).endswith("| save_best_only=True | monitor=val_accuracy | mode=min")


def test_save_best_only_refusals_and_resume_state(tmp_path):
    p = str(tmp_path / "c.safetensors")
    with pytest.raises(pg.PyggmlrValueError, match='ag_model_checkpoint: monitor must be "loss"'):
        pg.ag_model_checkpoint(p, monitor="acc")
    with pytest.raises(pg.ArgumentError, match="save_best_only"):
        pg.ag_model_checkpoint(p, save_best_only="yes")
    x, y = _iris()
    with pytest.raises(pg.PyggmlrValueError, match="only with validation data"):
        pg.ag_fit(_mlp(), x, y, nepoch=1, silent=True,
                  callbacks=[pg.ag_model_checkpoint(p, save_best_only=True,
                                                    monitor="val_loss")])  # fmt: skip
    # without save_best_only the monitor is never read: no validation data needed
    pg.ag_fit(_mlp(), x, y, nepoch=1, silent=True,
              callbacks=[pg.ag_model_checkpoint(p, monitor="val_loss")])  # fmt: skip
    # a resumed save_best_only run compares with the first part's best
    ck = pg.ag_model_checkpoint(p, save_best_only=True)
    kw = dict(nepoch=3, batch_size=16, val_split=0.2, seed=3, silent=True)
    pg.ag_fit(_mlp(), x, y, callbacks=[ck], **kw)
    st, _ = ck.state()
    ck2 = pg.ag_model_checkpoint(p, save_best_only=True)
    pg.ag_fit(_mlp(), x, y, resume_from=p, callbacks=[ck2], **{**kw, "nepoch": 3})
    assert ck2.best == st["best"] and ck2.saved == []  # nothing to do after epoch 3
    with pytest.raises(pg.PyggmlrValueError, match="ag_model_checkpoint: the checkpoint's"):
        ck2.load_state({"best": "x"})


def test_a_checkpoint_with_metrics_resumes_across_languages(tmp_path):
    """The metrics= columns go into the core's layout and come back, in Python and in R (which
    dropped them before the layout was the core's); the history is the uninterrupted run's."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 10)), rng.standard_normal((2, 10))
    kw = dict(loss="mse", batch_size=2, val_split=0.2, silent=True, seed=3, metrics=["mae"])

    def mk():
        pg.ggml_set_seed(5)
        return pg.ag_linear(4, 2)

    full = pg.ag_fit(mk(), x, y, nepoch=4, **kw)
    m, f = mk(), str(tmp_path / "ck.safetensors")
    pg.ag_fit(m, x, y, nepoch=2, callbacks=[pg.ag_model_checkpoint(f)], **kw)
    hist = pg.ag_model_info(f)["extra"]["fit"]["history"]
    assert list(hist)[-4:] == ["mae", "val_mae", "stopped_epoch", "best_epoch"]
    rest = pg.ag_fit(m, x, y, nepoch=4, resume_from=f, **kw)
    assert rest.mae == full.mae and rest.val_mae == full.val_mae and rest.epoch == [1, 2, 3, 4]
    assert rest.metrics == ["mae", "val_mae"]


def test_resume_from_file_errors_name_ag_fit(tmp_path):
    """The file's errors name ag_fit's argument (they named ag_model_info), the OSError of the
    errno for a missing file or a directory."""
    x = np.arange(12.0).reshape(3, 4)
    m = pg.ag_sequential(pg.ag_linear(3, 2))
    junk = tmp_path / "junk.st"
    junk.write_bytes(b"\x10" + b"\x00" * 7 + b'{"a":1}')
    fit = lambda p: pg.ag_fit(m, x, x[:2], loss="mse", nepoch=1, silent=True, resume_from=p)  # noqa: E731
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: resume_from: .*truncated file"):
        fit(junk)
    with pytest.raises(FileNotFoundError) as e:
        fit(tmp_path / "none.st")
    assert e.value.errno == errno.ENOENT and "ag_fit: resume_from: " in str(e.value)
    with pytest.raises(IsADirectoryError, match="ag_fit: resume_from: "):
        fit(tmp_path)


@pytest.mark.parametrize("case", sorted(HISTORY_EDITS))
def test_resume_refuses_a_history_that_is_not_the_epochs_done(tmp_path, case):
    x, y, f = _two_epochs(tmp_path)
    edit, text = HISTORY_EDITS[case]
    g = str(tmp_path / "edited.safetensors")
    edit_meta(f, edit, g)
    m2 = pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 2))
    before = {k: t.numpy() for k, t in m2.parameters().items()}
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_fit(m2, x, y, nepoch=3, batch_size=8, seed=1, silent=True, resume_from=g)
    assert str(e.value) == f"ag_fit: {g} holds an unusable training state {text}"
    assert all(np.array_equal(t.numpy(), before[k]) for k, t in m2.parameters().items())
    h = pg.ag_fit(m2, x, y, nepoch=3, batch_size=8, seed=1, silent=True, resume_from=f)
    assert list(h.epoch) == [1, 2, 3]  # the file as written resumes


class _PairState(pg.Callback):
    """A user callback whose state() is a 2-tuple: a JSON-able state, not the built-ins'
    (json, arrays) pair."""

    def __init__(self):
        self.loaded = None

    def state(self):
        return (3, 4)

    def load_state(self, st):
        self.loaded = st


def test_a_user_state_that_is_a_pair_is_saved_as_it_is(tmp_path):
    p = str(tmp_path / "ck.st")
    x, y = np.arange(8.0).reshape(2, 4), np.array([[0.0, 1, 0, 1]])
    kw = dict(loss="mse", batch_size=2, silent=True, seed=1)
    pg.ag_fit(pg.ag_linear(2, 1), x, y, nepoch=1, callbacks=[_PairState(), pg.ag_model_checkpoint(p)], **kw)  # fmt: skip
    c = _PairState()
    pg.ag_fit(pg.ag_linear(2, 1), x, y, nepoch=2, callbacks=[c], resume_from=p, **kw)
    assert c.loaded == [3, 4]  # JSON's array
