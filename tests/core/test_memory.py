"""Memory reports: ag_tape_memory (ggmlR's test-ag-tape-memory.R translated, plus checks against
the core's allocator: the report's bytes are real storage bytes, clearing the tape frees exactly
bytes_snapshots). The training-memory estimate and the counters: test_memory_estimate.py."""

import gc

import numpy as np
import pytest
from conftest import current_bytes, itemsize

import pyggmlr as pg
from pyggmlr._core import lib

MB = 1024.0**2


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
    assert by["matmul"]["bytes"] == 3 * 64 * s + node_bytes()  # w, x, its output
    assert by["relu"]["bytes"] == 64 * s + node_bytes()  # its output
    assert by["mse_loss"]["bytes"] == 64 * s + s + node_bytes()  # diff, loss
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
        h = pg.ag_matmul(w, x)  # we keep a handle: it outlives the tape
        loss = pg.ag_sum(pg.ag_relu(h))
    assert not loss.is_leaf  # recorded; held here, so the report counts it as an operand
    rep = pg.ag_tape_memory(quiet=True)
    assert rep.bytes_snapshots == 64 * s  # relu output only
    assert rep.bytes_inputs == 3 * 64 * s + s  # w, x, h, loss
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
            h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(w1, x), 0.5))  # inline constant: tape-only
            hh = pg.ag_mul(h, h)  # one tensor used twice
            b = pg.ag_param(np.ones((4, 1)))  # a parameter only the tape holds
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
    assert not loss.is_leaf  # recorded, and held through the report
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
            pg.ag_matmul(pg.ag_transpose(x), y),
            pg.ag_add(x, y),
            pg.ag_sub(x, y),
            pg.ag_mul(x, y),
            pg.ag_div(x, y),
            pg.ag_scale(x, 2.0),
            pg.ag_neg(x),
            pg.ag_relu(x),
            pg.ag_sigmoid(x),
            pg.ag_tanh(x),
            pg.ag_gelu(x),
            pg.ag_softmax(x),
            pg.ag_log(x),
            pg.ag_exp(x),
            pg.ag_pow(x, 2.0),
            pg.ag_clamp(x, 0.6, 1.2),
            pg.ag_sum(x),
            pg.ag_mean(x),
            pg.ag_reshape(x, 3, 4),
            pg.ag_mse_loss(x, y),
            pg.ag_cross_entropy_loss(pg.ag_softmax(x), t),
            pg.ag_softmax_cross_entropy_loss(x, t),
            pg.ag_slice_rows(x, 1, 2),
            pg.ag_concat_rows(x, y),
        ]
    rep = pg.ag_tape_memory(quiet=True)
    ops = {r["op"] for r in rep.by_op}
    assert "<closure only>" not in ops
    assert {
        "matmul",
        "transpose",
        "add",
        "sub",
        "mul",
        "div",
        "scale",
        "relu",
        "softmax",
        "sum",
        "mean",
        "reshape",
        "mse_loss",
        "softmax_ce_loss",
    } <= ops
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
    expected = (
        "\n".join(
            [
                f"Gradient tape: 2 nodes, {total / MB:.2f} MB held alive",
                f"  operands (outlive the tape)     : {(2 * 64 * s + s) / MB:8.2f} MB",
                f"  activations (freed by clearing) : {64 * s / MB:8.2f} MB",
                f"  graph-path fields (beyond those): {2 * nb / MB:8.2f} MB",
                "",
                "  by operation (top 1):",
                "    op                     nodes        MB",
                f"    {first['op']:<20s} {1:7d}  {first['mb']:8.2f}",
            ]
        )
        + "\n"
    )
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
    assert not loss.is_leaf  # the one node the report names
    pg.ag_tape_memory(top=0)
    assert capsys.readouterr().out.startswith("Gradient tape: 1 node, ")


def test_tape_memory_validates_top():
    with pytest.raises(ValueError):
        pg.ag_tape_memory(top=-1)
    with pytest.raises(ValueError):
        pg.ag_tape_memory(top=1.5)
