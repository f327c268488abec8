"""Leaks: the core's own counters (live tensors, gradient maps, optimizers, bytes) return to
where they started once the objects are gone.

Two levels: every test module is checked by the module fixture in tests/conftest.py (live
objects and current bytes back to the module's start after gc.collect()); here each scenario
is checked on its own, and a 10,000-step training loop must hold the counters flat: equal at
step 1,000 and at step 10,000, and back to the start when the model is dropped."""

import gc
import warnings

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import ffi, lib


def counts():
    for _ in range(2):
        gc.collect()
    pg.ag_tape_clear()
    st = ffi.new("pg_memory_counts *")
    lib.pg_memory_stats(st)
    return {
        "live": lib.pg_live_objects(),
        "bytes": st.total,
        "tensors": st.live_tensors,
        "maps": st.live_gradmaps,
        "optims": st.live_optims,
        "nodes": st.tape_nodes,
    }


def _scenario_ops():
    x = pg.ag_param(np.random.default_rng(0).normal(size=(4, 5)))
    w = pg.ag_param(np.ones((3, 4)))
    with pg.with_grad_tape():
        h = pg.ag_relu(pg.ag_matmul(w, x))
        y = pg.ag_softmax(pg.ag_add(h, 0.5))
        loss = pg.ag_mean(pg.ag_mul(pg.ag_log(pg.ag_add(y, 1e-3)), pg.ag_tanh(y)))
    g = pg.backward(loss)
    g2 = pg.backward(loss)  # twice
    _ = g[w], g2[x], w.grad, dict(g.items())


def _scenario_errors():
    t = pg.ag_param(np.ones((2, 3)))
    for fn in (
        lambda: pg.ag_matmul(t, t),
        lambda: pg.ag_add(t, np.ones((3, 3))),
        lambda: pg.backward(t),
        lambda: pg.ag_reshape(t, 4, 4),
        lambda: pg.ag_softmax_cross_entropy_loss(t, [0, 9, 0]),
        lambda: pg.ag_add(t, "x"),
        lambda: pg.ag_tensor([[1, 2], [3]]),
    ):
        with pytest.raises(pg.PyggmlrError):
            with pg.with_grad_tape():
                pg.ag_sigmoid(t)  # a node on the tape when the error happens
                fn()


def _scenario_optimizers():
    for make in (
        lambda p: pg.optimizer_sgd(p, lr=0.1, momentum=0.9, nesterov=True),
        lambda p: pg.optimizer_adam(p, lr=0.01, weight_decay=0.1, accumulate_steps=2),
    ):
        ps = [pg.ag_param(np.ones((3, 2))), pg.ag_param(np.zeros((1, 2)))]
        opt = make(ps)
        for _ in range(3):
            with pg.with_grad_tape():
                loss = pg.ag_sum(pg.ag_mul(pg.ag_add(ps[0], ps[1]), ps[0]))
            g = pg.backward(loss)
            pg.clip_grad_norm(ps, g, 0.5)
            opt.step(g)
            opt.zero_grad()
        # Adam with accumulate_steps=2 is mid-accumulation after 3 steps: state() says so
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "optimizer state\\(\\): taken mid-accumulation")
            st = opt.state()
        opt.load_state(st)


def _scenario_model_and_io(tmp_path):
    m = pg.ag_sequential(
        pg.ag_linear(4, 8, "relu"), pg.ag_batch_norm(8), pg.ag_dropout(0.2), pg.ag_linear(8, 3)
    )
    x, y, _ = pg.load_iris()
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    pg.ag_fit(m, x, y, optimizer=opt, nepoch=2, batch_size=30, silent=True, seed=1)
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path, optimizer=opt, epoch=2)
    m2 = pg.ag_load_model(path)
    with pytest.warns(
        UserWarning, match="hyperparameters differ.*lr"
    ):  # saved lr 0.01, this one 1e-3
        pg.ag_load_model(path, model=m2, optimizer=pg.optimizer_adam(m2.parameters()))
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(pg.PyggmlrValueError):
        pg.ag_load_model(bad)


def _scenario_memory_reports():
    p = pg.ag_param(np.ones((16, 16)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_tanh(pg.ag_matmul(p, p)))
    pg.ag_tape_memory()
    pg.ag_memory_stats()
    pg.backward(loss)


def _scenario_freed_and_copies():
    import copy
    import pickle

    t = pg.ag_param(np.ones((2, 2)))
    c1, c2, c3 = copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))
    t.free()
    c1.free()
    with pytest.raises(pg.ArgumentError):
        pg.ag_relu(t)
    del c2, c3


@pytest.mark.parametrize(
    "scenario",
    ["ops", "errors", "optimizers", "model_and_io", "memory_reports", "freed_and_copies"],
)
def test_scenario_leaves_counters_where_they_were(scenario, tmp_path):
    fn = globals()[f"_scenario_{scenario}"]
    before = counts()
    (fn(tmp_path) if scenario == "model_and_io" else fn())
    after = counts()
    assert after == before, f"{scenario}: before {before}, after {after}"


def test_counters_see_a_leak():
    """The check can fail: an object kept alive shows up in every counter."""
    before = counts()
    keep = pg.ag_param(np.ones((10, 10)))
    mid = counts()
    assert mid["live"] == before["live"] + 1 and mid["bytes"] == before["bytes"] + 400
    del keep
    assert counts() == before


def test_ten_thousand_training_steps_hold_memory_flat():
    """A small MLP trained for 10,000 steps (forward, backward, Adam step, zero_grad): the core's
    counters are identical after step 1,000 and after step 10,000, and everything is freed
    when the model goes."""
    before = counts()
    rng = np.random.default_rng(0)
    x = pg.ag_tensor(rng.normal(size=(4, 16)))
    y = pg.ag_tensor(rng.normal(size=(2, 16)))
    pg.ggml_set_seed(1)
    model = pg.ag_sequential(pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, 2))
    opt = pg.optimizer_adam(model.parameters(), lr=1e-3)
    snapshots = {}
    losses = []
    for step in range(1, 10_001):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(model(x), y)
        grads = pg.backward(loss)
        opt.step(grads)
        opt.zero_grad()
        if step % 1000 == 0:
            losses.append(loss.item())
        del grads, loss
        if step in (1_000, 5_000, 10_000):
            snapshots[step] = counts()
    assert snapshots[1_000] == snapshots[5_000] == snapshots[10_000], snapshots
    assert losses[-1] < losses[0]  # it did train
    assert snapshots[10_000]["nodes"] == 0
    del model, opt, x, y
    assert counts() == before
