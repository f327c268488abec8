"""ag_checkpoint: gradient checkpointing (ggmlR 0.8.5, spec 0.8.6 §4) on the core's host nodes.

Gradients equal the plain tape's bit for bit (f64 MLPs: plain, checkpointed, nested, several in
sequence), the segment's parameters are in backward()'s map and .grad once, a dropout mask is
replayed, failures leave the tape and the random stream as they were, the tape keeps less."""

import numpy as np
import pytest

import pyggmlr as pg


def _rs(seed, *shape):
    return np.random.RandomState(seed).randn(*shape)


def _mlp(seed=0):
    """Three f64 layers W x + b (tanh, relu) and an input that requires grad."""
    p = {}
    for i, (o, n) in enumerate([(8, 4), (8, 8), (3, 8)]):
        p[f"W{i}"] = pg.ag_param(_rs(seed + 2 * i, o, n), dtype="f64")
        p[f"b{i}"] = pg.ag_param(_rs(seed + 2 * i + 1, o, 1), dtype="f64")
    x = pg.ag_param(_rs(99, 4, 5), dtype="f64")
    return p, x


def _layer(p, i, act):
    return lambda h: act(pg.ag_add(pg.ag_matmul(p[f"W{i}"], h), p[f"b{i}"]))


def _grads(p, x, forward):
    for t in list(p.values()) + [x]:
        t.grad = None
    with pg.with_grad_tape():
        loss = pg.ag_sum(forward(x))
    g = pg.backward(loss)
    keys = sorted(p) + ["x"]
    ts = [p[k] for k in sorted(p)] + [x]
    return {k: g[t] for k, t in zip(keys, ts)}, {k: t.grad.copy() for k, t in zip(keys, ts)}


def _forwards(p):
    l0, l1, l2 = _layer(p, 0, pg.ag_tanh), _layer(p, 1, pg.ag_relu), _layer(p, 2, pg.ag_tanh)
    ck = pg.ag_checkpoint
    return {
        "plain": lambda x: l2(l1(l0(x))),
        "checkpointed": lambda x: l2(ck(lambda h: l1(l0(h)), x)),
        "nested": lambda x: l2(ck(lambda h: l1(ck(l0, h)), x)),
        "sequence": lambda x: ck(l2, ck(l1, ck(l0, x))),
    }


def test_gradients_equal_plain_bit_for_bit():
    p, x = _mlp()
    fw = _forwards(p)
    ref_map, ref_grad = _grads(p, x, fw["plain"])
    for name in ("checkpointed", "nested", "sequence"):
        m, g = _grads(p, x, fw[name])
        for k in ref_map:
            assert np.array_equal(m[k], ref_map[k]), (name, k)  # in backward()'s map ...
            assert np.array_equal(g[k], ref_grad[k]), (name, k)  # ... and in .grad, once
    # and they are the true gradients: central differences of one weight
    w = p["W0"]
    h, base = 1e-6, w.numpy().copy()

    def f(v):
        w.data = v
        return float(pg.ag_sum(fw["plain"](x)).numpy()[0, 0])

    e = np.zeros_like(base)
    e[2, 1] = h
    fd = (f(base + e) - f(base - e)) / (2 * h)
    w.data = base
    assert abs(fd - ref_map["W0"][2, 1]) < 1e-7


def test_parameter_used_twice_in_a_segment_is_not_doubled():
    W = pg.ag_param([[1.0, 2.0], [3.0, 4.0]], dtype="f64")
    x = pg.ag_tensor([[1.0], [1.0]], dtype="f64")

    def seg(v):
        return pg.ag_matmul(W, pg.ag_matmul(W, v))

    with pg.with_grad_tape():
        plain = pg.backward(pg.ag_sum(seg(x)))[W]
    W.grad = None
    with pg.with_grad_tape():
        g = pg.backward(pg.ag_sum(pg.ag_checkpoint(seg, x)))
    assert np.array_equal(g[W], plain) and np.array_equal(W.grad, plain)
    assert np.array_equal(plain, [[7.0, 11.0], [9.0, 13.0]])  # 1 (W x)^T + W^T 1 x^T, once


def test_segment_parameters_train_through_the_returned_map():
    """opt.step(backward(loss)) and clip_grad_norm(map) see the segment's parameters."""
    finals = []
    for ck in (False, True):
        p, x = _mlp(3)
        l0 = _layer(p, 0, pg.ag_tanh)
        opt = pg.optimizer_sgd(list(p.values()), lr=0.1)
        for _ in range(3):
            with pg.with_grad_tape():
                h = pg.ag_checkpoint(l0, x) if ck else l0(x)
                loss = pg.ag_sum(_layer(p, 1, pg.ag_relu)(h))
            g = pg.backward(loss)
            norm = pg.clip_grad_norm(list(p.values()), g, max_norm=1.0)
            opt.step(g)
            opt.zero_grad()
        finals.append((p["W0"].numpy().copy(), norm))
    assert np.array_equal(finals[0][0], finals[1][0]) and finals[0][1] == finals[1][1]
    assert not np.array_equal(finals[1][0], _mlp(3)[0]["W0"].numpy())  # it did train


def test_gradcheck_sees_segment_parameters():
    p, x = _mlp(5)
    l0, l1 = _layer(p, 0, pg.ag_tanh), _layer(p, 1, pg.ag_tanh)
    r = pg.ag_gradcheck(
        lambda inp: pg.ag_sum(l1(pg.ag_checkpoint(l0, inp["x"]))),
        {"x": x, "W0": p["W0"], "b0": p["b0"]},
        quiet=True,
    )
    assert bool(r)


def test_dropout_mask_is_replayed_and_stream_advances_as_plain():
    x = pg.ag_param(np.arange(1.0, 21.0).reshape(4, 5), dtype="f64")

    def seg(v):
        return pg.ag_dropout(0.5)(pg.ag_scale(v, 2.0))

    out = {}
    for ck in (False, True):
        x.grad = None
        pg.ggml_set_seed(7)
        with pg.with_grad_tape():
            y = pg.ag_checkpoint(seg, x) if ck else seg(x)
            after_fw = pg.random.get_state()
            loss = pg.ag_sum(y)
        g = pg.backward(loss)
        assert np.array_equal(pg.random.get_state(), after_fw)  # backward draws nothing net
        out[ck] = (y.numpy().copy(), g[x].copy(), after_fw, pg.random.runif(2))
    (y0, g0, s0, u0), (y1, g1, s1, u1) = out[False], out[True]
    assert np.array_equal(y0, y1) and np.array_equal(g0, g1)
    assert np.array_equal(s0, s1) and np.array_equal(u0, u1)  # the stream moved as a plain call
    mask = y1 / (2.0 * x.numpy())
    assert set(np.unique(mask)) == {0.0, 2.0}
    assert np.array_equal(g1, 2.0 * mask)  # the replay used the forward's mask


def test_two_random_segments_in_a_row_draw_different_masks():
    """ggmlR rewinds the stream after a segment (its quirk): here they differ as plain calls do."""
    x = pg.ag_param(np.ones((50, 4)), dtype="f64")

    def drop(v):
        return pg.ag_dropout(0.5)(v)

    pg.ggml_set_seed(3)
    with pg.with_grad_tape():
        a, b = pg.ag_checkpoint(drop, x), pg.ag_checkpoint(drop, x)
    assert not np.array_equal(a.numpy(), b.numpy())


def test_error_in_fn_leaves_tape_and_stream_intact():
    x = pg.ag_param(np.ones((3, 2)), dtype="f64")

    def bad(v):
        pg.ag_dropout(0.5)(v)  # draws, records nothing
        raise ValueError("boom in segment")

    pg.ggml_set_seed(11)
    with pg.with_grad_tape():
        y = pg.ag_scale(x, 2.0)
        n, st = pg._core.lib.pg_tape_nodes(), pg.random.get_state()
        with pytest.raises(ValueError, match="boom in segment"):
            pg.ag_checkpoint(bad, y)
        assert pg._core.lib.pg_tape_enabled() == 1
        assert pg._core.lib.pg_tape_nodes() == n
        assert np.array_equal(pg.random.get_state(), st)
        loss = pg.ag_sum(y)
    assert np.array_equal(pg.backward(loss)[x], np.full((3, 2), 2.0))


def _w_x():
    """A 3x3 f64 parameter and a 3x2 f64 input."""
    return pg.ag_param(_rs(1, 3, 3), dtype="f64"), pg.ag_tensor(_rs(2, 3, 2), dtype="f64")


def _raising_on_call(n, exc, fn):
    """fn, except that its n-th call raises exc."""
    calls = []

    def seg(v):
        calls.append(1)
        if len(calls) == n:
            raise exc
        return fn(v)

    return seg


def test_error_in_replay_leaves_tape_stream_and_grads_intact():
    W, x = _w_x()

    def segment(v):
        return pg.ag_tanh(pg.ag_matmul(W, pg.ag_checkpoint(lambda u: pg.ag_matmul(W, u), v)))

    seg = _raising_on_call(2, KeyError("replay failed"), segment)
    pg.ggml_set_seed(5)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_checkpoint(seg, x))
    n, st = pg._core.lib.pg_tape_nodes(), pg.random.get_state()
    with pytest.raises(KeyError, match="replay failed"):  # the segment's own exception
        pg.backward(loss)
    assert pg._core.lib.pg_tape_nodes() == n and W.grad is None
    assert np.array_equal(pg.random.get_state(), st)
    assert pg._core.lib.pg_host_depth() == 0
    g = pg.backward(loss)  # the third call succeeds: nothing was left half done
    with pg.with_grad_tape():
        ref = pg.backward(pg.ag_sum(pg.ag_tanh(pg.ag_matmul(W, pg.ag_matmul(W, x)))))[W]
    assert np.array_equal(g[W], ref)


def test_error_in_nested_replay_propagates_unchanged():
    W, x = _w_x()
    # calls: the forward, the outer replay's forward, then its own replay (which fails)
    inner = _raising_on_call(3, ZeroDivisionError("inner replay"), lambda v: pg.ag_matmul(W, v))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_checkpoint(lambda v: pg.ag_tanh(pg.ag_checkpoint(inner, v)), x))
    with pytest.raises(ZeroDivisionError, match="inner replay"):
        pg.backward(loss)
    assert W.grad is None and pg._core.lib.pg_tape_enabled() == 0


def test_tape_memory_is_smaller():
    W = [pg.ag_param(_rs(i, 256, 256)) for i in range(4)]
    x = pg.ag_tensor(_rs(9, 256, 64))

    def body(h):
        return pg.ag_relu(
            pg.ag_matmul(W[3], pg.ag_relu(pg.ag_matmul(W[2], pg.ag_relu(pg.ag_matmul(W[1], h)))))
        )

    reps = {}
    for ck in (False, True):
        with pg.with_grad_tape():
            h = pg.ag_relu(pg.ag_matmul(W[0], x))
            y = pg.ag_checkpoint(body, h) if ck else body(h)
            loss = pg.ag_sum(y)
        reps[ck] = pg.ag_tape_memory(quiet=True)
        pg.backward(loss)
        pg.ag_tape_clear()
    act = 256 * 64 * 4
    assert reps[False]["nodes"] == 9 and reps[True]["nodes"] == 4
    # the segment's five intermediate activations are no longer kept
    assert reps[False]["bytes_snapshots"] - reps[True]["bytes_snapshots"] == 5 * act
    field = reps[False]["bytes_fields"] // 9  # plus five node structs and the segment's weights
    assert (
        reps[False]["bytes_total"] - reps[True]["bytes_total"]
        == 5 * act + 5 * field + 3 * 256 * 256 * 4
    )
    rows = {r["op"]: r for r in reps[True]["by_op"]}
    assert rows["checkpoint"]["nodes"] == 1


def test_tape_off_returns_fn_value_unchanged():
    sentinel = object()
    assert pg.ag_checkpoint(lambda a, b=0: (sentinel, a, b), 1, b=2) == (sentinel, 1, 2)
    x = pg.ag_param([[1.0]])
    y = pg.ag_checkpoint(lambda v: v, x)
    assert y is x  # fn(...) as is, no copy, no node
    with pg.with_grad_tape(), pg.ag_no_grad():
        assert pg.ag_checkpoint(lambda v: v, x) is x


def test_argument_passing():
    a = pg.ag_param([[1.0, 2.0]], dtype="f64")
    b = pg.ag_param([[3.0, 4.0]], dtype="f64")
    c = pg.ag_param([[5.0, 6.0]], dtype="f64")

    def fn(u, k, v, w=None):
        return pg.ag_add(pg.ag_scale(pg.ag_sub(u, v), k), pg.ag_scale(w, 10.0))

    with pg.with_grad_tape():
        y = pg.ag_checkpoint(fn, a, 2.0, b, w=c)
        g = pg.backward(pg.ag_sum(y))
    assert np.array_equal(y.numpy(), [[46.0, 56.0]])
    assert np.array_equal(g[a], [[2.0, 2.0]]) and np.array_equal(g[b], [[-2.0, -2.0]])
    assert np.array_equal(g[c], [[10.0, 10.0]])
    assert y.requires_grad and not y.is_leaf


def test_many_tensor_inputs_and_no_input_requiring_grad():
    xs = [pg.ag_tensor([[float(i)]], dtype="f64") for i in range(8)]
    W = pg.ag_param([[2.0]], dtype="f64")

    def fn(*vs):
        s = vs[0]
        for v in vs[1:]:
            s = pg.ag_add(s, v)
        return pg.ag_matmul(W, s)

    with pg.with_grad_tape():
        y = pg.ag_checkpoint(fn, *xs)  # no input requires grad: still one node
        assert y.requires_grad and pg._core.lib.pg_tape_nodes() == 1
        rep = pg.ag_tape_memory(quiet=True)
        g = pg.backward(pg.ag_sum(y))
    assert rep["nodes"] == 1 and np.array_equal(g[W], [[28.0]])


def test_error_texts(tmp_path):
    msg = "ag_checkpoint() expects a function as its first argument."
    # a path first (the old ag_model_checkpoint overload, removed) is no function either
    for bad in ((), (3,), (None, 1), ([1],), (str(tmp_path / "c.safetensors"),)):
        with pytest.raises(pg.ArgumentError) as e:
            pg.ag_checkpoint(*bad)
        assert str(e.value) == msg
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_checkpoint(path=tmp_path / "d.safetensors")
    assert str(e.value) == msg
    with pg.with_grad_tape(), pytest.raises(pg.ArgumentError, match="must return an ag_tensor"):
        pg.ag_checkpoint(lambda: 3.0)
    # a replay that returns no tensor: the core's text, R's too (test-checkpoint.R)
    calls = []

    def seg(u):
        calls.append(1)
        return pg.ag_sum(u) if len(calls) == 1 else 3

    x = pg.ag_param(np.ones((2, 2)))
    with pg.with_grad_tape():
        y = pg.ag_checkpoint(seg, x)
        with pytest.raises(pg.ArgumentError) as e:
            pg.backward(pg.ag_sum(y))
    assert str(e.value) == (
        "ag_checkpoint(): fn must return an ag_tensor (it returned int when replayed in backward())"
    )


def test_compile_refuses_a_checkpoint_naming_it():
    W = pg.ag_param(_rs(1, 3, 3))
    x = pg.ag_tensor(_rs(2, 3, 2))
    with pytest.raises(pg.PyggmlrValueError, match="ag_checkpoint"):
        pg.ag_compile(
            lambda v: pg.ag_sum(pg.ag_checkpoint(lambda u: pg.ag_matmul(W, u), v)), x, build="grad"
        )
    assert pg._core.lib.pg_tape_nodes() == 0 and pg._core.lib.pg_tape_depth() == 0


def test_segment_calling_with_grad_tape_keeps_the_outer_tape():
    W = pg.ag_param([[3.0]], dtype="f64")
    x = pg.ag_tensor([[2.0]], dtype="f64")

    def seg(v):
        return pg.with_grad_tape(lambda: pg.ag_matmul(W, v))

    with pg.with_grad_tape():
        h = pg.ag_scale(x, 1.0)
        n = pg._core.lib.pg_tape_nodes()
        y = pg.ag_checkpoint(seg, h)
        assert pg._core.lib.pg_tape_nodes() == n + 1 and pg._core.lib.pg_tape_enabled() == 1
        g = pg.backward(pg.ag_sum(y))
    assert np.array_equal(g[W], [[2.0]])


def test_tape_clear_releases_the_segment():
    import gc
    import weakref

    from pyggmlr import checkpoint as ck

    class F:
        def __call__(self, v):
            return pg.ag_scale(v, 2.0)

    f = F()
    ref = weakref.ref(f)
    x = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        pg.ag_checkpoint(f, x)
    n = len(ck._live)
    del f
    gc.collect()
    assert ref() is not None  # the node keeps fn for its replay
    pg.ag_tape_clear()
    gc.collect()
    assert ref() is None and len(ck._live) == n - 1


def test_parity_case_checkpointed_run_equals_plain_run():
    """The parity case's Python side: the checkpointed loop (dropout, nesting, momentum) is the
    plain loop bit for bit, and its masks really drop."""
    from parity import _Draws, cases_ckpt  # tests/parity

    d = cases_ckpt._ckpt_inputs(_Draws(1))
    for dtype in ("f64", "f32"):
        recs = cases_ckpt._ckpt_py(d, 3, dtype)
        assert all(not np.any(r["plain - checkpointed"]) for r in recs)
        assert recs[0]["loss"] != recs[2]["loss"]


def test_backward_inside_a_replay_is_refused_and_threads_work():
    W = pg.ag_param(_rs(1, 3, 3), dtype="f64")
    x = pg.ag_tensor(_rs(2, 3, 2), dtype="f64")
    calls = []

    def seg(v):
        y = pg.ag_tanh(pg.ag_matmul(W, v))
        calls.append(1)
        if len(calls) == 2:
            with pg.with_grad_tape():
                pg.backward(pg.ag_sum(pg.ag_matmul(W, v)))
        return y

    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_checkpoint(seg, x))
    with pytest.raises(pg.StateError, match="cannot run inside an ag_checkpoint segment"):
        pg.backward(loss)
    assert W.grad is None
    # a checkpoint on another thread's tape gives the same gradients as here
    import threading

    with pg.with_grad_tape():
        ref = pg.backward(pg.ag_sum(pg.ag_checkpoint(lambda v: pg.ag_tanh(pg.ag_matmul(W, v)), x)))[
            W
        ]
    out = {}

    def work():
        with pg.with_grad_tape():
            out["g"] = pg.backward(
                pg.ag_sum(pg.ag_checkpoint(lambda v: pg.ag_tanh(pg.ag_matmul(W, v)), x))
            )[W]
        pg.ag_tape_clear()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert np.array_equal(out["g"], ref)
