"""Model files written before the schema moved into the core (issue 29) still load: the files in
fixtures/ were written by main's code then (fixtures/make_v1.py), with what its loader read back
(v1_expected.json); today's loader must read the same."""

from __future__ import annotations

import json
import os

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
