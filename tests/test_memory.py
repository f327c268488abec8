"""Memory reports: ag_tape_memory, ag_estimate_training_memory, peaks and live counts.

ggmlR's own tests (spec 9.2 / 9.3) translated, plus checks against the core's allocator: the tape
report's bytes are real storage bytes, clearing the tape frees exactly bytes_snapshots, and the
estimate with a model equals the measured peak of a training step."""
import gc
import math
import os
from collections import OrderedDict

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib

MB = 1024.0 ** 2


def itemsize():
    return 4 if pg.ag_default_dtype() == "f32" else 8


def current_bytes():
    return pg.ag_memory_stats()["total"]["current"]


def node_bytes():
    return lib.pg_tape_node_bytes()


def mse_matmul_tape(n, rng):
    """ggmlR's setup: loss = MSE(matmul(w, x), y) on n x n."""
    w = pg.ag_param(rng.normal(size=(n, n)))
    x = pg.ag_tensor(rng.normal(size=(n, n)))
    y = pg.ag_tensor(rng.normal(size=(n, n)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_matmul(w, x), y)
    grads = pg.backward(loss)
    return w, x, y, loss, grads


def assert_clear_frees_snapshots():
    """ag_tape_clear() frees exactly bytes_snapshots (measured by the allocator)."""
    rep = pg.ag_tape_memory(quiet=True)
    before = current_bytes()
    pg.ag_tape_clear()
    freed = before - current_bytes()
    assert freed == rep.bytes_snapshots
    return rep


# ---------------------------------------------------------------------------------------------
# ggmlR's test-ag-tape-memory.R (CPU blocks 1-8), at f64 as ggmlR's doubles

def test_empty_tape(f64):
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.nodes == 0
    assert rep.bytes_total == 0
    assert rep.by_op == []


def test_relu_matmul_mse_totals_add_up(f64, rng):
    w = pg.ag_param(rng.normal(size=(8, 8)))
    x = pg.ag_tensor(rng.normal(size=(8, 8)))
    y = pg.ag_tensor(rng.normal(size=(8, 8)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_relu(pg.ag_matmul(w, x)), y)
    pg.backward(loss)
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.nodes > 0
    assert rep.bytes_total > 0
    assert rep.bytes_total == rep.bytes_snapshots + rep.bytes_fields + rep.bytes_inputs


def test_deeper_tape_holds_more(f64, rng):
    w = pg.ag_param(rng.normal(size=(32, 32)) / 32)
    x = pg.ag_tensor(rng.normal(size=(32, 32)))

    def measure(depth):
        with pg.with_grad_tape():
            h = x
            for _ in range(depth):
                h = pg.ag_relu(pg.ag_matmul(w, h))
            loss = pg.ag_sum(h)
        pg.backward(loss)
        return pg.ag_tape_memory(quiet=True)

    one, four = measure(1), measure(4)
    assert four.nodes > one.nodes
    assert four.bytes_total > one.bytes_total


def test_bigger_operands_same_nodes_more_bytes(f64, rng):
    small = mse_matmul_tape(16, rng)
    r16 = pg.ag_tape_memory(quiet=True)
    del small
    big = mse_matmul_tape(64, rng)
    r64 = pg.ag_tape_memory(quiet=True)
    assert r16.nodes == r64.nodes
    assert r64.bytes_total > r16.bytes_total
    del big


def test_shared_snapshots_counted_once_as_operands(f64, rng):
    keep = mse_matmul_tape(64, rng)
    one = 64 * 64 * 8
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.bytes_total < 8 * one
    assert rep.bytes_inputs >= 1.8 * one
    # ggmlR test 6
    assert rep.bytes_inputs > 0
    assert rep.bytes_snapshots < rep.bytes_total
    assert rep.bytes_snapshots < 3 * one
    del keep


def test_by_op_table(f64, rng):
    keep = mse_matmul_tape(16, rng)
    rep = pg.ag_tape_memory(quiet=True)
    assert isinstance(rep.by_op, list)
    assert all(set(r) >= {"op", "nodes", "mb"} for r in rep.by_op)
    ops = [r["op"] for r in rep.by_op]
    assert "matmul" in ops
    assert sum(r["nodes"] for r in rep.by_op) == rep.nodes
    mbs = [r["mb"] for r in rep.by_op]
    assert mbs == sorted(mbs, reverse=True)
    del keep


def test_quiet_is_silent_default_prints(f64, rng, capsys):
    keep = mse_matmul_tape(8, rng)
    rep = pg.ag_tape_memory(quiet=True)
    assert capsys.readouterr().out == ""
    assert rep.bytes_total > 0
    pg.ag_tape_memory()
    assert "Gradient tape" in capsys.readouterr().out
    del keep


# ---------------------------------------------------------------------------------------------
# exact byte counts

def test_snapshot_bytes_equal_saved_tensor_sizes(rng):
    """Only w, x, y and the loss are held by us: the tape alone keeps the matmul output, the relu
    output and the MSE difference (3 x 8x8); the target y is not kept by the node."""
    s = itemsize()
    w = pg.ag_param(rng.normal(size=(8, 8)))
    x = pg.ag_tensor(rng.normal(size=(8, 8)))
    y = pg.ag_tensor(rng.normal(size=(8, 8)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_relu(pg.ag_matmul(w, x)), y)
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.nodes == 3
    assert rep.bytes_snapshots == 3 * 64 * s
    assert rep.bytes_inputs == 2 * 64 * s + 1 * s  # w, x, and the 1x1 loss we hold
    assert rep.bytes_fields == 3 * node_bytes()
    by = {r["op"]: r for r in rep.by_op}
    # each storage is charged to the first node that meets it (inputs, saved, output)
    assert by["matmul"]["bytes"] == 3 * 64 * s + node_bytes()      # w, x, its output
    assert by["relu"]["bytes"] == 64 * s + node_bytes()            # its output
    assert by["mse_loss"]["bytes"] == 64 * s + s + node_bytes()    # diff, loss
    assert_clear_frees_snapshots()
    del loss


def test_softmax_ce_saved_probabilities(f64, rng):
    w = pg.ag_param(rng.normal(size=(5, 4)))
    x = pg.ag_tensor(rng.normal(size=(4, 6)))
    t = pg.ag_tensor(np.eye(5)[:, [0, 1, 2, 3, 4, 0]])
    with pg.with_grad_tape():
        loss = pg.ag_softmax_cross_entropy_loss(pg.ag_matmul(w, x), t)
    rep = pg.ag_tape_memory(quiet=True)
    # snapshots: logits (matmul output) and the probabilities p; t is saved but we hold it
    assert rep.bytes_snapshots == (30 + 30) * 8
    assert rep.bytes_inputs == (20 + 24 + 30 + 1) * 8
    assert [r["op"] for r in rep.by_op] == ["matmul", "softmax_ce_loss"]
    assert_clear_frees_snapshots()
    del loss


def test_kept_intermediate_is_an_operand(rng):
    s = itemsize()
    w = pg.ag_param(rng.normal(size=(8, 8)))
    x = pg.ag_tensor(rng.normal(size=(8, 8)))
    with pg.with_grad_tape():
        h = pg.ag_matmul(w, x)          # we keep a handle: it outlives the tape
        loss = pg.ag_sum(pg.ag_relu(h))
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.bytes_snapshots == 64 * s                 # relu output only
    assert rep.bytes_inputs == 3 * 64 * s + s            # w, x, h, loss
    assert_clear_frees_snapshots()
    assert h.numpy().shape == (8, 8)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_clearing_frees_exactly_snapshots(dtype, rng):
    pg.ag_dtype(dtype)
    w1 = pg.ag_param(rng.normal(size=(16, 8)))
    w2 = pg.ag_param(rng.normal(size=(4, 16)))
    x = pg.ag_tensor(rng.normal(size=(8, 10)))
    y = pg.ag_tensor(rng.normal(size=(4, 10)))

    def record():
        with pg.with_grad_tape():
            h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(w1, x), 0.5))   # inline constant: tape-only
            hh = pg.ag_mul(h, h)                                   # one tensor used twice
            b = pg.ag_param(np.ones((4, 1)))                       # a parameter only the tape holds
            out = pg.ag_add(pg.ag_matmul(w2, hh), b)
            return pg.ag_mse_loss(out, y)

    # before backward
    loss = record()
    rep = assert_clear_frees_snapshots()
    assert rep.bytes_snapshots > 0
    # after backward, map kept: the map holds gradients only, not its keys, so every activation
    # is still freeable; b's .grad is shared with the map and survives the clear
    loss = record()
    grads = pg.backward(loss)
    kept = assert_clear_frees_snapshots()
    assert kept.bytes_snapshots == rep.bytes_snapshots
    # after backward, map dropped: the tape-only parameter b dies with its .grad (and so do the intermediates)
    loss = record()
    grads = pg.backward(loss)
    del grads
    gc.collect()
    dropped = assert_clear_frees_snapshots()
    # + b's .grad and, since ggmlR 0.8.5's write-back, the .grad of every requires-grad
    # intermediate (matmul, add, tanh, mul: 16x10; matmul, add: 4x10), which dies with it
    assert dropped.bytes_snapshots == rep.bytes_snapshots + (4 + 4 * 160 + 2 * 40) * itemsize()
    del loss


def test_by_op_sums_to_totals_and_ties_are_alphabetical(f64, rng):
    a = pg.ag_param(rng.normal(size=(6, 6)))
    b = pg.ag_param(rng.normal(size=(6, 6)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_add(pg.ag_tanh(b), pg.ag_sigmoid(a)))
    rep = pg.ag_tape_memory(quiet=True)
    assert sum(r["bytes"] for r in rep.by_op) == rep.bytes_total
    assert sum(r["nodes"] for r in rep.by_op) == rep.nodes == 4
    assert all(r["mb"] == r["bytes"] / MB for r in rep.by_op)
    ops = [r["op"] for r in rep.by_op]
    # tanh(b) and sigmoid(a) cost the same (input + output + node): alphabetical order
    assert ops.index("sigmoid") + 1 == ops.index("tanh")
    keys = [(-r["bytes"], r["op"]) for r in rep.by_op]
    assert keys == sorted(keys)


def test_every_builtin_op_records_a_label(f64, rng):
    x = pg.ag_param(rng.uniform(0.5, 1.5, size=(4, 3)))
    y = pg.ag_param(rng.uniform(0.5, 1.5, size=(4, 3)))
    t = pg.ag_tensor(np.eye(4)[:, [0, 1, 2]])
    with pg.with_grad_tape():
        outs = [
            pg.ag_matmul(pg.ag_transpose(x), y), pg.ag_add(x, y), pg.ag_sub(x, y), pg.ag_mul(x, y),
            pg.ag_div(x, y), pg.ag_scale(x, 2.0), pg.ag_neg(x), pg.ag_relu(x), pg.ag_sigmoid(x),
            pg.ag_tanh(x), pg.ag_gelu(x), pg.ag_softmax(x), pg.ag_log(x), pg.ag_exp(x),
            pg.ag_pow(x, 2.0), pg.ag_clamp(x, 0.6, 1.2), pg.ag_sum(x), pg.ag_mean(x),
            pg.ag_reshape(x, 3, 4), pg.ag_mse_loss(x, y), pg.ag_cross_entropy_loss(pg.ag_softmax(x), t),
            pg.ag_softmax_cross_entropy_loss(x, t), pg.ag_slice_rows(x, 1, 2), pg.ag_concat_rows(x, y),
        ]
    rep = pg.ag_tape_memory(quiet=True)
    ops = {r["op"] for r in rep.by_op}
    assert "<closure only>" not in ops
    assert {"matmul", "transpose", "add", "sub", "mul", "div", "scale", "relu", "softmax", "sum",
            "mean", "reshape", "mse_loss", "softmax_ce_loss"} <= ops
    assert rep.nodes == lib.pg_tape_nodes() >= len(outs)
    del outs


def test_layers_record_labels(f64, rng):
    pg.ggml_set_seed(3)
    lin = pg.ag_linear(6, 8, "relu")
    att = pg.ag_multihead_attention(8, 2)
    ln = pg.ag_layer_norm(8)
    bn = pg.ag_batch_norm(8)
    emb = pg.ag_embedding(10, 8)
    drop = pg.ag_dropout(0.5)
    x = pg.ag_tensor(rng.normal(size=(6, 5)))
    with pg.with_grad_tape():
        h = drop.forward(bn.forward(ln.forward(att.forward(lin.forward(x)))))
        e = emb.forward(np.array([1, 2, 3, 4, 5]))
        loss = pg.ag_sum(pg.ag_add(h, e))
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.nodes > 10
    assert "<closure only>" not in {r["op"] for r in rep.by_op}
    assert_clear_frees_snapshots()
    del loss


def test_printed_report_exact(f64, rng, capsys):
    s = 8
    w = pg.ag_param(rng.normal(size=(8, 8)))
    x = pg.ag_tensor(rng.normal(size=(8, 8)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_matmul(w, x))
    rep = pg.ag_tape_memory(top=1)
    out = capsys.readouterr().out
    nb = node_bytes()
    total = 2 * 64 * s + 64 * s + s + 2 * nb
    assert rep.bytes_total == total
    first = max(rep.by_op, key=lambda r: r["bytes"])
    expected = "\n".join([
        f"Gradient tape: 2 nodes, {total / MB:.2f} MB held alive",
        f"  operands (outlive the tape)     : {(2 * 64 * s + s) / MB:8.2f} MB",
        f"  activations (freed by clearing) : {64 * s / MB:8.2f} MB",
        f"  graph-path fields (beyond those): {2 * nb / MB:8.2f} MB",
        "",
        "  by operation (top 1):",
        "    op                     nodes        MB",
        f"    {first['op']:<20s} {1:7d}  {first['mb']:8.2f}",
    ]) + "\n"
    assert out == expected
    assert first["op"] == "matmul"
    assert str(rep) == expected.rstrip("\n")
    assert rep.by_op_table().splitlines()[0] == "    op                     nodes        MB"
    # empty tape: singular/plural and the hint line; top = 0 prints totals only
    pg.ag_tape_clear()
    pg.ag_tape_memory(top=0)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Gradient tape: 0 nodes, 0.00 MB held alive"
    assert out[1].startswith("  (empty -- the tape is cleared by zero_grad()")
    assert len(out) == 5
    with pg.with_grad_tape():
        loss = pg.ag_sum(w)
    pg.ag_tape_memory(top=0)
    assert capsys.readouterr().out.startswith("Gradient tape: 1 node, ")


def test_tape_memory_validates_top():
    with pytest.raises(ValueError):
        pg.ag_tape_memory(top=-1)
    with pytest.raises(ValueError):
        pg.ag_tape_memory(top=1.5)


# ---------------------------------------------------------------------------------------------
# ggmlR's test-ag-memory-budget.R translated (f64 = ggmlR's 8 bytes; f32 halves them)

def test_budget_sgd_plain_no_activations():
    e = pg.ag_estimate_training_memory([(100, 100)], optimizer="sgd_plain", activation_frac=0,
                                       quiet=True, dtype="f64")
    assert e.params == 10000
    assert e.weights == 80000
    assert e.gradients == e.weights
    assert e.optimizer == 0
    assert e.total == e.weights + e.gradients
    e32 = pg.ag_estimate_training_memory([(100, 100)], optimizer="sgd_plain", activation_frac=0, quiet=True)
    assert e32.weights == 40000 and e32.bytes_per_scalar == 4


def test_budget_optimizer_multipliers(f64):
    est = {o: pg.ag_estimate_training_memory((64, 64), optimizer=o, activation_frac=0, quiet=True)
           for o in ("adam", "sgd", "sgd_plain")}
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
    e = pg.ag_estimate_training_memory((1000, 1000), optimizer="sgd_plain", activation_frac=0,
                                       quiet=True, dtype="f64")
    assert e.bytes_per_scalar == 8
    assert e.weights == 8e6
    assert "double" in e.note
    e = pg.ag_estimate_training_memory((1000, 1000), optimizer="sgd_plain", activation_frac=0, quiet=True)
    assert e.bytes_per_scalar == 4          # the global dtype: f32
    assert e.weights == 4e6
    assert "single" in e.note and "f32" in e.note
    pg.ag_dtype("f64")
    assert pg.ag_estimate_training_memory((10,), quiet=True).bytes_per_scalar == 8


def test_budget_shape_lists():
    assert pg.ag_estimate_training_memory([(10, 10), (10, 10), (10,)], quiet=True).params == 210
    assert pg.ag_estimate_training_memory((10, 10), quiet=True).params == 100
    assert pg.ag_estimate_training_memory([10, 10], quiet=True).params == 100   # one bare vector
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
    assert (d.params, d.weights, d.gradients, d.optimizer, d.activations, d.total) == \
        (10000, 80000, 80000, 160000, 25600, 345600)
    assert d.bytes_per_scalar == 8


@pytest.mark.parametrize("n, text", [(786432, "786 432"), (10000, "10 000"), (1e5, "1e+05"),
                                     (1e6, "1e+06"), (210, "210"), (123456789, "123 456 789"),
                                     (1200000, "1 200 000"), (12000000, "1.2e+07")])
def test_r_format_of_parameter_count(n, text, capsys):
    pg.ag_estimate_training_memory((n,))
    assert capsys.readouterr().out.splitlines()[1] == f"  parameters      : {text}"


# ---------------------------------------------------------------------------------------------
# the estimate from a model: measured, not guessed

class TinyMLP:
    """Test-local model: forward + parameters() (the protocol the estimate needs)."""

    def __init__(self, sizes, rng):
        self.layers = [(pg.ag_param(rng.normal(size=(o, i)) / math.sqrt(i)), pg.ag_param(np.zeros((o, 1))))
                       for i, o in zip(sizes[:-1], sizes[1:])]

    def forward(self, x):
        for k, (w, b) in enumerate(self.layers):
            x = pg.ag_add(pg.ag_matmul(w, x), b)
            if k < len(self.layers) - 1:
                x = pg.ag_relu(x)
        return x

    def parameters(self):
        return OrderedDict((f"p{k}_{j}", t) for k, wb in enumerate(self.layers) for j, t in enumerate(wb))


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
    grads = pg.backward(loss)
    opt.step(grads)
    peak = pg.ag_memory_peak() - base
    del grads, loss
    opt.zero_grad()
    return peak


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
    make = {"adam": pg.optimizer_adam,
            "sgd": lambda p: pg.optimizer_sgd(p, momentum=0.9),
            "sgd_plain": pg.optimizer_sgd}[opt]
    peak = measured_step_peak(model, x, y, make)
    assert abs(est.total / peak - 1) < 0.02
    # the activations are at least the tape's outputs plus their gradients (2 x 3 x [32,16] ...)
    assert est.activations >= 2 * (2 * 32 * 16) * s


def test_model_estimate_with_nn_layers_and_input_shape(rng):
    model = pg.ag_sequential(pg.ag_linear(20, 64, "relu"), pg.ag_linear(64, 64, "relu"), pg.ag_linear(64, 5))
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
    assert lib.pg_tape_nodes() == n0                 # the caller's tape is back
    assert pg.ag_live_objects() == live0
    np.testing.assert_array_equal(w.grad, np.full((8, 4), 7.0))
    grads = pg.backward(loss)                        # and still usable, .grad accumulating
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
    assert pg.ag_estimate_training_memory(model=model, input_shape=(4, 2), optimizer=opt, quiet=True).optimizer == 2 * p
    opt.accumulate_steps = 4
    assert pg.ag_estimate_training_memory(model=model, input_shape=(4, 2), optimizer=opt, quiet=True).optimizer == 3 * p
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
    with pytest.raises(Exception):
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
    assert pg.ag_memory_stats()["saved"]["current"] - s0["saved"]["current"] == 70 * 8   # the MSE diff
    assert pg.ag_memory_stats()["tape_nodes"] == 2
    grads = pg.backward(loss)
    s2 = pg.ag_memory_stats()
    assert s2["live_gradmaps"] - s0["live_gradmaps"] == 1
    assert s2["grad"]["current"] - s0["grad"]["current"] == (1 + 70 + 200) * 8  # loss seed, out, w
    opt.step(grads)
    s3 = pg.ag_memory_stats()
    assert s3["optim"]["current"] - s0["optim"]["current"] == 2 * 200 * 8
    assert s3["live_optimizers"] - s0["live_optimizers"] == 1
    assert s3["total"]["current"] == sum(s3[c]["current"] for c in ("param", "grad", "optim", "saved", "other"))
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
        loss = pg.ag_sum(h)                      # recording goes on onto the caller's tape
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
        pytest.skip("the buffer cache is off in AddressSanitizer builds (reuse would hide use-after-free)")
    # the buffer, plus the tensor's and its storage's structs (a few hundred bytes)
    freed = after_free["cached"] - before["cached"]
    assert 128 * 128 * 4 < freed < 128 * 128 * 4 + 1024
    assert after_free["total"]["current"] == before["total"]["current"] - 128 * 128 * 4
    b = pg.ag_tensor(np.zeros((128, 128)), dtype="f32")
    assert int(pg._core.ffi.cast("intptr_t", lib.pg_tensor_data(b._p))) == addr
    assert pg.ag_memory_stats()["cached"] == before["cached"]   # the structs are reused too
    assert np.array_equal(b.numpy(), np.zeros((128, 128)))   # reused memory is rewritten
    b.free()
    assert pg.ag_memory_trim() >= 128 * 128 * 4
    assert pg.ag_memory_stats()["cached"] == 0
