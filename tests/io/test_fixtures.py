"""Model files written before the schema moved into the core (issue 29) still load: the files in
fixtures/ were written by main's code then (fixtures/make_v1.py), with what its loader read back
(v1_expected.json); today's loader must read the same."""

from __future__ import annotations

import json
import os
import runpy

import numpy as np
import pytest

import pyggmlr as pg

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(HERE, "v1_expected.json")) as f:
    EXPECTED = json.load(f)


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_v1_files_load(dt):
    p = os.path.join(HERE, f"v1_py_{dt}.safetensors")
    info = pg.ag_model_info(p)
    info["parameters"] = {k: [list(s), d] for k, (s, d) in info["parameters"].items()}
    info["buffers"] = {k: [list(s), d] for k, (s, d) in info["buffers"].items()}
    assert info.pop("target") is None  # written before metadata 'target' (issue 31): no labels
    assert info == EXPECTED[dt]["info"]
    m = pg.ag_load_model(p)
    x = np.linspace(-1, 1, 3 * 5).reshape(3, 5)
    np.testing.assert_array_equal(pg.ag_predict(m, x), np.array(EXPECTED[dt]["predict"]))
    if dt == "f32":
        opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    else:
        opt = pg.optimizer_sgd(m.parameters(), lr=0.1, momentum=0.9)
    pg.ag_load_model(p, model=m, optimizer=opt)
    assert opt.t == (1 if dt == "f32" else 0)


def test_v1_file_written_by_r_loads():
    p = os.path.join(HERE, "v1_r.safetensors")
    with open(os.path.join(HERE, "v1_r_expected.json")) as f:
        want = json.load(f)
    info = pg.ag_model_info(p)
    assert list(info["parameters"]) == want["parameters"]
    assert (info["epoch"], info["optimizer"], info["extra"]) == (
        want["epoch"],
        want["optimizer"],
        want["extra"],
    )
    m = pg.ag_load_model(p)
    x = np.linspace(-1, 1, 3 * 5).reshape(3, 5)
    np.testing.assert_allclose(pg.ag_predict(m, x), np.array(want["predict"]), rtol=1e-13)
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    pg.ag_load_model(p, model=m, optimizer=opt)
    assert opt.t == 1


@pytest.mark.parametrize("who, dt", [("", "f32"), ("_r", "f64")], ids=["python f32", "r f64"])
def test_v1_checkpoint_resumes_to_the_same_bits(who, dt):
    """Checkpoints written before the training session moved into the core, by Python (f32,
    make_ckpt_v1.py) and by R (f64, make_ckpt_v1.R): today's ag_fit(resume_from =) runs on to
    epoch 4 with the bits that code gave, its early-stopping state and best weights read back."""
    p = os.path.join(HERE, f"ckpt_v1{who}.safetensors")
    with open(os.path.join(HERE, f"ckpt_v1{who}_expected.json")) as f:
        want = json.load(f)
    x = np.sin(np.arange(4 * 40) * 0.37).reshape(4, 40, order="F")
    y = (np.arange(40) % 3).astype(float)
    pg.ggml_set_seed(5)
    prev = pg.ag_dtype(dt)
    try:
        m = pg.ag_sequential(pg.ag_linear(4, 6, activation="tanh"), pg.ag_linear(6, 3))
    finally:
        pg.ag_dtype(prev)
    es = pg.ag_early_stopping(patience=5, monitor="val_loss")
    h = pg.ag_fit(m, x, y, nepoch=4, batch_size=5, val_split=0.25, seed=2, silent=True,
                  static=False, resume_from=p, callbacks=[es])  # fmt: skip
    assert [h.loss, h.val_loss, h.accuracy] == [want["loss"], want["val_loss"], want["accuracy"]]
    got = [float(v) for t in m.parameters().values() for v in t.numpy().ravel(order="F")]
    assert got == want["weights"]
    assert es.best == want["val_loss"][3] and es.best_epoch == 4


@pytest.mark.parametrize("script", ["make_v1.py", "make_ckpt_v1.py"])
def test_fixture_scripts_write_nothing_when_imported(script):
    """A test run handed a fixture script as a path imports it: it refuses before writing."""
    before = {f: os.stat(os.path.join(HERE, f)).st_mtime_ns for f in os.listdir(HERE)}
    with pytest.raises(ImportError, match="rewrites tracked fixtures; run it as a script"):
        runpy.run_path(os.path.join(HERE, script), run_name="fixtures.make")
    assert {f: os.stat(os.path.join(HERE, f)).st_mtime_ns for f in os.listdir(HERE)} == before
