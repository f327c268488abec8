"""The training-memory estimate (ggmlR's test-ag-memory-budget.R translated; with a model, equal
to the measured peak of a training step) and the core's counters: stats, peaks, live objects."""

import gc
import math
import os
from collections import OrderedDict

import numpy as np
import pytest
from conftest import current_bytes, itemsize

import pyggmlr as pg
from pyggmlr._core import lib

MB = 1024.0**2


# ---------------------------------------------------------------------------------------------
# ggmlR's test-ag-memory-budget.R translated (f64 = ggmlR's 8 bytes; f32 halves them)


def test_budget_sgd_plain_no_activations():
    e = pg.ag_estimate_training_memory(
        [(100, 100)], optimizer="sgd_plain", activation_frac=0, quiet=True, dtype="f64"
    )
    assert e.params == 10000
    assert e.weights == 80000
    assert e.gradients == e.weights
    assert e.optimizer == 0
    assert e.total == e.weights + e.gradients
    e32 = pg.ag_estimate_training_memory(
        [(100, 100)], optimizer="sgd_plain", activation_frac=0, quiet=True
    )
    assert e32.weights == 40000 and e32.bytes_per_scalar == 4


def test_budget_optimizer_multipliers(f64):
    est = {
        o: pg.ag_estimate_training_memory((64, 64), optimizer=o, activation_frac=0, quiet=True)
        for o in ("adam", "sgd", "sgd_plain")
    }
    w = est["adam"].weights
    assert est["adam"].optimizer == 2 * w
    assert est["sgd"].optimizer == 1 * w
    assert est["sgd_plain"].optimizer == 0
    assert est["adam"].total > est["sgd"].total > est["sgd_plain"].total


def test_budget_activations_scale_with_batch(f64):
    e1 = pg.ag_estimate_training_memory((128, 128), batch_size=1, quiet=True)
    e64 = pg.ag_estimate_training_memory((128, 128), batch_size=64, quiet=True)
    assert e1.weights == e64.weights
    assert e1.optimizer == e64.optimizer
    assert e64.activations == 64 * e1.activations
    assert e64.total > e1.total


def test_budget_bytes_per_scalar_follow_dtype():
    e = pg.ag_estimate_training_memory(
        (1000, 1000), optimizer="sgd_plain", activation_frac=0, quiet=True, dtype="f64"
    )
    assert e.bytes_per_scalar == 8
    assert e.weights == 8e6
    assert "double" in e.note
    e = pg.ag_estimate_training_memory(
        (1000, 1000), optimizer="sgd_plain", activation_frac=0, quiet=True
    )
    assert e.bytes_per_scalar == 4  # the global dtype: f32
    assert e.weights == 4e6
    assert "single" in e.note and "f32" in e.note
    pg.ag_dtype("f64")
    assert pg.ag_estimate_training_memory((10,), quiet=True).bytes_per_scalar == 8


def test_budget_shape_lists():
    assert pg.ag_estimate_training_memory([(10, 10), (10, 10), (10,)], quiet=True).params == 210
    assert pg.ag_estimate_training_memory((10, 10), quiet=True).params == 100
    assert pg.ag_estimate_training_memory([10, 10], quiet=True).params == 100  # one bare vector
    assert pg.ag_estimate_training_memory(np.array([10, 10]), quiet=True).params == 100
    assert pg.ag_estimate_training_memory({"W": (10, 10), "b": (10, 1)}, quiet=True).params == 110


def test_budget_errors():
    with pytest.raises(ValueError, match="non-empty"):
        pg.ag_estimate_training_memory([])
    with pytest.raises(ValueError, match="positive"):
        pg.ag_estimate_training_memory([(-1, 4)])
    with pytest.raises(ValueError, match="positive"):
        pg.ag_estimate_training_memory([(4, float("nan"))])
    with pytest.raises(ValueError, match="positive"):
        pg.ag_estimate_training_memory([(4, None)])
    with pytest.raises(ValueError, match="positive"):
        pg.ag_estimate_training_memory([(4, 0)])
    with pytest.raises(ValueError, match="positive"):
        pg.ag_estimate_training_memory([()])
    with pytest.raises(ValueError, match="should be one of"):
        pg.ag_estimate_training_memory([(4, 4)], optimizer="rmsprop")
    with pytest.raises(TypeError):
        pg.ag_estimate_training_memory([(4, 4)], dtype="f16")


def test_budget_shapes_rule_is_the_cores():
    """pg_estimate_params (R calls it too): one text per refusal, naming the shape and the
    dimension by position (0-based here, 1-based in R); a bare number is one shape, as R's."""
    fn = "ag_estimate_training_memory(): "
    rule = fn + "each shape must be a vector of positive dimensions; "
    for shapes in ([], None, "a", {}):
        with pytest.raises(pg.PyggmlrValueError) as e:
            pg.ag_estimate_training_memory(shapes, quiet=True)
        assert str(e.value) == (
            fn + "`shapes` must be a non-empty list of dimension vectors (or give model and x)"
        )
    for shapes, tail in (
        ([(2, 2), (4, -1)], "shape 1 has -1 at position 1"),
        ([(float("inf"),)], "shape 0 has inf at position 0"),
        ([(4, float("nan"))], "shape 0 has nan at position 1"),
        ([(4, 4), "ab"], "shape 1 is not numeric"),
        ([(4, None)], "shape 0 is not numeric"),
        ([(True, 2)], "shape 0 is not numeric"),
        ([(3,), ()], "shape 1 is empty"),
        ([(10**400,)], "shape 0 has inf at position 0"),
    ):
        with pytest.raises(pg.PyggmlrValueError) as e:
            pg.ag_estimate_training_memory(shapes, quiet=True)
        assert str(e.value) == rule + tail, shapes
    assert pg.ag_estimate_training_memory(7, quiet=True).params == 7  # R's shapes = 7
    assert pg.ag_estimate_training_memory([(1.5, 2)], quiet=True).params == 3  # ggmlR's prod()
    with pytest.raises(pg.DTypeError, match=r"^ag_estimate_training_memory\(\): dtype"):
        pg.ag_estimate_training_memory([(4, 4)], dtype="x", quiet=True)


def test_budget_printing(f64, capsys):
    pg.ag_estimate_training_memory([(100, 100)])
    out = capsys.readouterr().out
    assert "Training memory estimate" in out and "note:" in out
    e = pg.ag_estimate_training_memory([(100, 100)], quiet=True)
    assert capsys.readouterr().out == ""
    assert e.total > 0
    assert "double" in e.note


def test_budget_man_page_example_exact(f64, capsys):
    e = pg.ag_estimate_training_memory([(512, 512)] * 3, batch_size=64)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:7] == [
        "Training memory estimate (adam, batch 64)",
        "  parameters      : 786 432",
        "  weights         :     6.00 MB",
        "  gradients       :     6.00 MB",
        "  optimizer (x2)  :    12.00 MB",
        "  activations     :     3.84 MB",
        "  total           :    27.84 MB",
    ]
    assert lines[7] == "  note: " + e.note
    d = pg.ag_estimate_training_memory([(100, 100)], quiet=True)
    assert (d.params, d.weights, d.gradients, d.optimizer, d.activations, d.total) == (
        10000,
        80000,
        80000,
        160000,
        25600,
        345600,
    )
    assert d.bytes_per_scalar == 8


@pytest.mark.parametrize(
    "n, text",
    [
        (786432, "786 432"),
        (10000, "10 000"),
        (1e5, "1e+05"),
        (1e6, "1e+06"),
        (210, "210"),
        (123456789, "123 456 789"),
        (1200000, "1 200 000"),
        (12000000, "1.2e+07"),
    ],
)
def test_r_format_of_parameter_count(n, text, capsys):
    pg.ag_estimate_training_memory((n,))
    assert capsys.readouterr().out.splitlines()[1] == f"  parameters      : {text}"


# ---------------------------------------------------------------------------------------------
# the estimate from a model: measured, not guessed


class TinyMLP:
    """Test-local model: forward + parameters() (the protocol the estimate needs)."""

    def __init__(self, sizes, rng):
        self.layers = [
            (pg.ag_param(rng.normal(size=(o, i)) / math.sqrt(i)), pg.ag_param(np.zeros((o, 1))))
            for i, o in zip(sizes[:-1], sizes[1:])
        ]

    def forward(self, x):
        for k, (w, b) in enumerate(self.layers):
            x = pg.ag_add(pg.ag_matmul(w, x), b)
            if k < len(self.layers) - 1:
                x = pg.ag_relu(x)
        return x

    def parameters(self):
        return OrderedDict(
            (f"p{k}_{j}", t) for k, wb in enumerate(self.layers) for j, t in enumerate(wb)
        )


def measured_step_peak(model, x, y, make_opt):
    """Peak bytes the core holds during one full training step (forward, backward, optimizer
    step), counting the weights, the batch and everything the step allocates."""
    gc.collect()
    weights = sum(t.size for t in model.parameters().values()) * itemsize()
    base = current_bytes() - weights - x.size * itemsize() - y.size * itemsize()
    opt = make_opt(model.parameters())
    pg.ag_memory_reset_peak()
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(x), y)
    opt.step(pg.backward(loss))  # the map lives through the step: the peak counts it
    del loss
    opt.zero_grad()
    return pg.ag_memory_peak() - base


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("opt", ["adam", "sgd", "sgd_plain"])
def test_model_estimate_matches_measured_step(dtype, opt, rng):
    pg.ag_dtype(dtype)
    model = TinyMLP([12, 32, 32, 3], rng)
    x = pg.ag_tensor(rng.normal(size=(12, 16)))
    y = pg.ag_tensor(rng.normal(size=(3, 16)))
    est = pg.ag_estimate_training_memory(model=model, x=x, y=y, optimizer=opt, quiet=True)
    s = itemsize()
    n_params = 12 * 32 + 32 + 32 * 32 + 32 + 32 * 3 + 3
    assert est.params == n_params
    assert est.weights == est.gradients == n_params * s
    assert est.optimizer == {"adam": 2, "sgd": 1, "sgd_plain": 0}[opt] * n_params * s
    assert est.bytes_per_scalar == s
    make = {
        "adam": pg.optimizer_adam,
        "sgd": lambda p: pg.optimizer_sgd(p, momentum=0.9),
        "sgd_plain": pg.optimizer_sgd,
    }[opt]
    peak = measured_step_peak(model, x, y, make)
    assert abs(est.total / peak - 1) < 0.02
    # the activations are at least the tape's outputs plus their gradients (2 x 3 x [32,16] ...)
    assert est.activations >= 2 * (2 * 32 * 16) * s


def test_model_estimate_with_nn_layers_and_input_shape(rng):
    model = pg.ag_sequential(
        pg.ag_linear(20, 64, "relu"), pg.ag_linear(64, 64, "relu"), pg.ag_linear(64, 5)
    )
    est = pg.ag_estimate_training_memory(model=model, input_shape=(20, 32), quiet=True)
    assert est.params == 20 * 64 + 64 + 64 * 64 + 64 + 64 * 5 + 5
    x = pg.ag_tensor(np.zeros((20, 32)))
    y = pg.ag_tensor(np.zeros((5, 32)))
    peak = measured_step_peak(model, x, y, pg.optimizer_adam)
    assert abs(est.total / peak - 1) < 0.02
    # input_shape=(features,) takes batch_size
    e2 = pg.ag_estimate_training_memory(model=model, input_shape=(20,), batch_size=32, quiet=True)
    assert e2.total == est.total
    assert "batch of 32" in e2.note


def test_model_estimate_leaves_tape_grads_and_peak_window_sane(f64, rng, capsys):
    model = TinyMLP([4, 8, 2], rng)
    w = model.layers[0][0]
    w.grad = np.full((8, 4), 7.0)
    x = pg.ag_tensor(rng.normal(size=(4, 5)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(model.forward(x))
    n0 = lib.pg_tape_nodes()
    live0 = pg.ag_live_objects()
    est = pg.ag_estimate_training_memory(model=model, x=x, optimizer="sgd")
    out = capsys.readouterr().out
    assert out.startswith("Training memory estimate (sgd, batch 5)")
    assert lib.pg_tape_nodes() == n0  # the caller's tape is back
    assert pg.ag_live_objects() == live0
    np.testing.assert_array_equal(w.grad, np.full((8, 4), 7.0))
    grads = pg.backward(loss)  # and still usable, .grad accumulating
    np.testing.assert_allclose(w.grad, 7.0 + grads[w])
    assert np.abs(grads[w]).sum() > 0
    assert est.activations > 0
    assert pg.ag_memory_peak() >= current_bytes()


def test_model_estimate_restores_batch_norm_buffers(rng):
    model = pg.ag_sequential(pg.ag_linear(3, 4), pg.ag_batch_norm(4))
    before = [t.numpy() for t in model.buffers().values()]
    pg.ag_estimate_training_memory(model=model, x=rng.normal(size=(3, 6)), quiet=True)
    after = [t.numpy() for t in model.buffers().values()]
    assert len(before) >= 2
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_model_estimate_optimizer_object(rng):
    model = TinyMLP([4, 6, 1], rng)
    p = sum(t.size for t in model.parameters().values()) * itemsize()
    opt = pg.optimizer_adam(model.parameters())
    assert (
        pg.ag_estimate_training_memory(
            model=model, input_shape=(4, 2), optimizer=opt, quiet=True
        ).optimizer
        == 2 * p
    )
    opt.accumulate_steps = 4
    assert (
        pg.ag_estimate_training_memory(
            model=model, input_shape=(4, 2), optimizer=opt, quiet=True
        ).optimizer
        == 3 * p
    )
    sgd = pg.optimizer_sgd(model.parameters())
    e = pg.ag_estimate_training_memory(model=model, input_shape=(4, 2), optimizer=sgd)
    assert e.optimizer == 0


def test_model_estimate_errors(rng):
    model = TinyMLP([4, 2], rng)
    with pytest.raises(TypeError, match="x="):
        pg.ag_estimate_training_memory(model=model)
    with pytest.raises(ValueError, match="input_shape"):
        pg.ag_estimate_training_memory(model=model, input_shape=(4, 0))
    with pytest.raises(TypeError, match="parameters"):
        pg.ag_estimate_training_memory(model=object(), input_shape=(4, 2))
    n0 = lib.pg_tape_nodes()
    with pytest.raises(pg.ShapeError, match="ag_matmul"):
        pg.ag_estimate_training_memory(model=model, input_shape=(5, 2))  # shape error in forward
    assert lib.pg_tape_nodes() == n0
    assert lib.pg_tape_depth() == 0


# ---------------------------------------------------------------------------------------------
# counters: stats, peak, live objects, leaks


def test_memory_stats_categories(f64, rng):
    gc.collect()
    s0 = pg.ag_memory_stats()
    w = pg.ag_param(rng.normal(size=(10, 20)))
    x = pg.ag_tensor(rng.normal(size=(20, 7)))
    s1 = pg.ag_memory_stats()
    assert s1["param"]["current"] - s0["param"]["current"] == 200 * 8
    assert s1["other"]["current"] - s0["other"]["current"] == 140 * 8
    assert s1["live_tensors"] - s0["live_tensors"] == 2
    opt = pg.optimizer_adam({"w": w})
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_matmul(w, x), np.zeros((10, 7)))
    assert (
        pg.ag_memory_stats()["saved"]["current"] - s0["saved"]["current"] == 70 * 8
    )  # the MSE diff
    assert pg.ag_memory_stats()["tape_nodes"] == 2
    grads = pg.backward(loss)
    s2 = pg.ag_memory_stats()
    assert s2["live_gradmaps"] - s0["live_gradmaps"] == 1
    assert s2["grad"]["current"] - s0["grad"]["current"] == (1 + 70 + 200) * 8  # loss seed, out, w
    opt.step(grads)
    s3 = pg.ag_memory_stats()
    assert s3["optim"]["current"] - s0["optim"]["current"] == 2 * 200 * 8
    assert s3["live_optimizers"] - s0["live_optimizers"] == 1
    assert s3["total"]["current"] == sum(
        s3[c]["current"] for c in ("param", "grad", "optim", "saved", "other")
    )
    for c in ("param", "grad", "optim", "saved", "other", "total"):
        assert s3[c]["peak"] >= s3[c]["current"]
    del grads, opt, loss


def test_peak_and_reset(rng):
    gc.collect()
    start = pg.ag_memory_reset_peak()
    assert start == current_bytes() == pg.ag_memory_peak()
    big = pg.ag_tensor(np.zeros((300, 200)))
    del big
    gc.collect()
    assert pg.ag_memory_peak() == start + 300 * 200 * 4
    assert pg.ag_memory_stats()["other"]["peak"] >= 300 * 200 * 4
    assert pg.ag_memory_reset_peak() == current_bytes() == start
    assert pg.ag_memory_stats()["other"]["peak"] == pg.ag_memory_stats()["other"]["current"]


def test_live_objects_return_to_start(rng):
    gc.collect()
    pg.ag_tape_clear()
    start = pg.ag_live_objects()
    bytes0 = current_bytes()
    model = pg.ag_sequential(pg.ag_linear(5, 7, "relu"), pg.ag_linear(7, 2))
    opt = pg.optimizer_adam(model.parameters())
    x = pg.ag_tensor(rng.normal(size=(5, 4)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(x), np.zeros((2, 4)))
    grads = pg.backward(loss)
    opt.step(grads)
    rep = pg.ag_tape_memory(quiet=True)
    est = pg.ag_estimate_training_memory(model=model, x=x, quiet=True)
    assert pg.ag_live_objects() > start
    del model, opt, x, loss, grads, rep, est
    gc.collect()
    pg.ag_tape_clear()
    assert pg.ag_live_objects() == start
    assert current_bytes() == bytes0


def test_training_loop_keeps_counters_flat(rng):
    model = TinyMLP([3, 8, 1], rng)
    opt = pg.optimizer_adam(model.parameters(), lr=0.01)
    xs = rng.normal(size=(3, 16))
    x = pg.ag_tensor(xs)
    y = pg.ag_tensor(xs.sum(axis=0, keepdims=True))
    seen = {}
    for step in range(1, 1001):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(model.forward(x), y)
        grads = pg.backward(loss)
        opt.step(grads)
        opt.zero_grad()
        if step == 10:
            pg.ag_memory_reset_peak()
        if step in (10, 1000):
            seen[step] = (current_bytes(), pg.ag_live_objects(), lib.pg_tape_nodes())
    assert seen[10] == seen[1000]
    # over 990 steps the peak rises above the steady state by exactly one step's allocations:
    # the tape and the new gradient map (the estimate's activations less the caller's x and y,
    # plus the parameters' gradients), less the previous step's 1x1 loss, which is released
    # when `loss` is rebound, before the new step's peak (the map does not keep its keys alive)
    rise = pg.ag_memory_peak() - seen[10][0]
    est = pg.ag_estimate_training_memory(model=model, x=x, y=y, quiet=True)
    assert rise == est.activations + est.gradients - (x.size + y.size) * itemsize() - itemsize()
    assert float(loss) < 1.0


def test_model_estimate_inside_an_open_tape_scope(f64, rng):
    model = TinyMLP([3, 4, 1], rng)
    x = pg.ag_tensor(rng.normal(size=(3, 2)))
    with pg.with_grad_tape():
        h = model.forward(x)
        n0 = lib.pg_tape_nodes()
        pg.ag_estimate_training_memory(model=model, x=x, quiet=True)
        assert lib.pg_tape_depth() == 1 and lib.pg_tape_enabled() == 1
        assert lib.pg_tape_nodes() == n0
        loss = pg.ag_sum(h)  # recording goes on onto the caller's tape
    assert lib.pg_tape_nodes() == n0 + 1
    grads = pg.backward(loss)
    w = model.layers[0][0]
    assert grads[w].shape == (4, 3) and np.abs(grads[w]).sum() > 0


def test_freed_buffers_are_reused_and_trim_releases_them():
    # a freed 64 KB buffer is handed to the next tensor of that size, outside the counters
    pg.ag_memory_trim()
    a = pg.ag_tensor(np.ones((128, 128)), dtype="f32")
    before = pg.ag_memory_stats()
    addr = int(pg._core.ffi.cast("intptr_t", lib.pg_tensor_data(a._p)))
    a.free()
    after_free = pg.ag_memory_stats()
    if after_free["cached"] == before["cached"] and os.environ.get("PYGGMLR_SANITIZED"):
        pytest.skip(
            "the buffer cache is off in AddressSanitizer builds (reuse would hide use-after-free)"
        )
    # the buffer, plus the tensor's and its storage's structs (a few hundred bytes)
    freed = after_free["cached"] - before["cached"]
    assert 128 * 128 * 4 < freed < 128 * 128 * 4 + 1024
    assert after_free["total"]["current"] == before["total"]["current"] - 128 * 128 * 4
    b = pg.ag_tensor(np.zeros((128, 128)), dtype="f32")
    assert int(pg._core.ffi.cast("intptr_t", lib.pg_tensor_data(b._p))) == addr
    assert pg.ag_memory_stats()["cached"] == before["cached"]  # the structs are reused too
    assert np.array_equal(b.numpy(), np.zeros((128, 128)))  # reused memory is rewritten
    b.free()
    assert pg.ag_memory_trim() >= 128 * 128 * 4
    assert pg.ag_memory_stats()["cached"] == 0


def test_input_shape_rule_is_the_cores():
    """input_shape's rule and text in the core (pg_mem_input_shape, as R's: issue 29)."""
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    e = pg.ag_estimate_training_memory(model=m, input_shape=[2.0], batch_size=5, quiet=True)
    assert e["activations"] == 288
    rule = (
        "ag_estimate_training_memory(): input_shape must be (features,) or (features, batch) "
        "with positive whole numbers, got "
    )
    for v in ((2, 0.5), (2, float("inf")), (2, 2**31), (2, 3, 4), ("a", 2), True, ()):
        with pytest.raises(pg.PyggmlrValueError) as err:
            pg.ag_estimate_training_memory(model=m, input_shape=v, quiet=True)
        assert str(err.value) == rule + pg._args.show(v)
