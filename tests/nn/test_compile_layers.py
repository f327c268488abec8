"""Static graphs (ag_compile) of every layer, ag_fit(static=True) and the memory reports of
compiled graphs: the same numbers as the eager path, bit for bit. The fused kernels and
ag_compile itself: test_compile.py."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib
from pyggmlr.errors import PyggmlrValueError

# ---- every layer in a compiled graph ----


def _seq_model(kind):
    L = pg.ag_linear
    if kind == "mlp-dropout":
        return pg.ag_sequential(L(4, 16, "relu"), pg.ag_dropout(0.3), L(16, 3))
    if kind == "batch-norm":
        return pg.ag_sequential(
            L(4, 16),
            pg.ag_batch_norm(16),
            L(16, 8, "relu"),
            pg.ag_batch_norm(8, momentum=0.3),
            L(8, 3),
        )
    if kind == "layer-norm":
        return pg.ag_sequential(L(4, 16, "tanh"), pg.ag_layer_norm(16), L(16, 3))
    if kind == "embedding":
        return pg.ag_sequential(pg.ag_embedding(10, 6), L(6, 8, "relu"), L(8, 3))
    if kind == "attention":
        return pg.ag_multihead_attention(8, 2, dropout=0.2)
    raise KeyError(kind)


def _layer_data(kind, rng, n):
    if kind == "embedding":
        return [(rng.integers(0, 10, (1, 12)), rng.integers(0, 3, (1, 12))) for _ in range(n)]
    if kind == "attention":
        return [(rng.normal(size=(8, 6)), rng.normal(size=(8, 6))) for _ in range(n)]
    return [(rng.normal(size=(4, 12)), rng.integers(0, 3, (1, 12))) for _ in range(n)]


def _layer_loss(kind, m, x, y):
    if kind == "attention":
        # attention: causal mask, row slices, concat, matmul_t, softmax, dropout on the weights
        return pg.ag_mse_loss(m.forward(x, causal_mask=True), y)
    return pg.ag_softmax_cross_entropy_loss(m.forward(x), y)


NP = {"f32": np.float32, "f64": np.float64}


def _state(m):
    return [t.numpy() for t in list(m.parameters().values()) + list(m.buffers().values())]


@pytest.mark.parametrize(
    "kind", ["mlp-dropout", "batch-norm", "layer-norm", "embedding", "attention"]
)
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_layers_bit_identical(kind, dtype):
    pg.ag_dtype(dtype)
    rng = np.random.default_rng(21)
    data = _layer_data(kind, rng, 15)
    pg.ggml_set_seed(3)
    me = _seq_model(kind)
    pg.ggml_set_seed(3)
    mc = _seq_model(kind)
    assert all(np.array_equal(a, b) for a, b in zip(_state(me), _state(mc)))
    oe = pg.optimizer_adam(me.parameters(), lr=0.01, weight_decay=0.01)
    oc = pg.optimizer_adam(mc.parameters(), lr=0.01, weight_decay=0.01)
    T = lambda a: pg.ag_tensor(a, dtype=dtype)  # noqa: E731

    pg.ggml_set_seed(9)
    # recording is one eager training forward (batch norm: one running-stat update), no draws
    st = pg.random.get_state()
    with pg.ag_no_grad():
        _layer_loss(kind, me, T(data[0][0]), T(data[0][1]))
    pg.random.set_state(st)
    eager = []
    for x, y in data:
        with pg.with_grad_tape():
            le = _layer_loss(kind, me, T(x), T(y))
        oe.step(pg.backward(le))
        oe.zero_grad()
        eager.append(le.item())
        pg.ag_tape_clear()

    pg.ggml_set_seed(9)
    before = _state(mc)
    step = pg.ag_compile(
        lambda x, y: _layer_loss(kind, mc, x, y), T(data[0][0]), T(data[0][1]), optimizer=oc
    )
    after = _state(mc)
    nparam = len(mc.parameters())
    assert all(
        np.array_equal(a, b) for a, b in zip(before[:nparam], after[:nparam])
    )  # no step while recording
    if kind == "batch-norm":
        assert not np.array_equal(before[nparam], after[nparam])  # running_mean moved once
    comp = [step(x, y) for x, y in data]
    assert eager == comp
    assert len(set(comp)) > 1
    for a, b in zip(_state(me), _state(mc)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    if kind == "mlp-dropout":  # one dropout node per mask, each redrawn by every replay
        assert step.ops.count("dropout") == 1
    if kind == "attention":  # the heads' op draws one mask per head at every replay
        assert step.ops.count("mha_heads") == 1
        assert lib.pg_graph_dropout_masks(step._g) == 2


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_batch_norm_running_stats_and_eval_graph(dtype, rng):
    pg.ag_dtype(dtype)
    bn = pg.ag_batch_norm(5, momentum=0.2)
    W = pg.ag_param(rng.normal(size=(5, 3)))
    opt = pg.optimizer_sgd([W, bn.gamma, bn.beta], lr=0.1)
    xs = [rng.normal(size=(3, 7)) * (i + 1) + i for i in range(4)]
    step = pg.ag_compile(
        lambda x: pg.ag_sum(pg.ag_mul(bn.forward(pg.ag_matmul(W, x)), 0.5)), xs[0], optimizer=opt
    )
    rm, rv = bn.running_mean.numpy().astype(np.float64), bn.running_var.numpy().astype(np.float64)
    # recording updated the statistics once, with xs[0]: check against numpy
    h0 = W.numpy().astype(np.float64) @ xs[0].astype(NP[dtype]).astype(np.float64)
    np.testing.assert_allclose(rm[:, 0], 0.2 * h0.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv[:, 0], 0.8 + 0.2 * h0.var(axis=1), rtol=1e-5)
    for x in xs[1:]:
        Wb = W.numpy()
        step(x)
        h = Wb.astype(np.float64) @ x.astype(NP[dtype]).astype(np.float64)
        rm, rv = (
            0.8 * rm + 0.2 * h.mean(axis=1, keepdims=True),
            0.8 * rv + 0.2 * h.var(axis=1, keepdims=True),
        )
        np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-4)
    # an eval-mode forward graph uses the running statistics and leaves them alone
    pg.ag_eval(bn)
    fwd = pg.ag_compile(lambda x: bn.forward(pg.ag_matmul(W, x)), xs[0], build="forward")
    stats = (bn.running_mean.numpy(), bn.running_var.numpy())
    for x in xs:
        out = fwd(x).numpy()
        with pg.ag_no_grad():
            ref = bn.forward(pg.ag_matmul(W, pg.ag_tensor(x))).numpy()
        assert np.array_equal(out, ref)
    assert np.array_equal(stats[0], bn.running_mean.numpy()) and np.array_equal(
        stats[1], bn.running_var.numpy()
    )


def test_compiled_embedding_ids_are_refilled(rng):
    emb = pg.ag_embedding(6, 4)
    fwd = pg.ag_compile(lambda i: emb.forward(i), np.array([[0, 1, 2]]), build="forward")
    W = emb.weight.numpy()
    for ids in ([5, 5, 0], [3, 1, 4]):
        assert np.array_equal(fwd(np.array([ids])).numpy(), W[:, ids])
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_embedding: id 6 at position 2 is out of range \[0, 6\)",
    ):
        fwd(np.array([[0, 1, 6]]))


def test_compiled_embedding_array_ids_are_constants(rng):
    """ids given as an array inside fn are a constant of the graph (their values at record time),
    as class ids given to a loss as an array: each replay reads them again, the input changes."""
    pg.ag_dtype("f64")
    emb, lin = pg.ag_embedding(6, 4), pg.ag_linear(4, 2)
    ids = np.array([5, 1, 1, 3])
    params = list(emb.parameters().values()) + list(lin.parameters().values())

    def loss(x):
        return pg.ag_mean(lin(emb(ids)) * x)

    x0 = rng.normal(size=(2, 4))
    fwd = pg.ag_compile(lambda x: lin(emb(ids)), x0, build="forward")
    assert "embedding" in fwd.ops
    np.testing.assert_array_equal(fwd(x0).numpy(), lin(emb(ids)).numpy())
    start = [p.numpy() for p in params]
    xs = [rng.normal(size=(2, 4)) for _ in range(3)]
    eager = []
    opt = pg.optimizer_adam(params, lr=0.1)
    for x in xs:
        with pg.with_grad_tape():
            lt = loss(pg.ag_tensor(x))
        opt.step(pg.backward(lt))
        opt.zero_grad()
        eager.append(lt.item())
    after = [p.numpy() for p in params]
    for p, v in zip(params, start):
        p.data = v
    opt = pg.optimizer_adam(params, lr=0.1)
    step = pg.ag_compile(loss, xs[0], optimizer=opt)
    assert [step(x) for x in xs] == eager
    for p, v in zip(params, after):
        np.testing.assert_array_equal(p.numpy(), v)
    with pytest.raises(
        PyggmlrValueError, match=r"ag_embedding: id 6 at position 1 is out of range"
    ):
        pg.ag_compile(lambda x: emb(np.array([0, 6])), x0, build="forward")


def test_compiled_softmax_ce_array_ids_are_constants(rng):
    W = pg.ag_param(rng.normal(size=(3, 4)))
    ids = np.array([0, 2, 1, 2, 0])
    step = pg.ag_compile(
        lambda x: pg.ag_softmax_cross_entropy_loss(pg.ag_matmul(W, x), ids),
        np.zeros((4, 5)),
        build="grad",
    )
    for _ in range(2):
        x = rng.normal(size=(4, 5))
        loss, grads = step(x)
        with pg.with_grad_tape():
            le = pg.ag_softmax_cross_entropy_loss(pg.ag_matmul(W, pg.ag_tensor(x)), ids)
        g = pg.backward(le)
        pg.ag_tape_clear()
        W.grad = None
        assert loss == le.item() and np.array_equal(grads[W.id], g[W])


# ---- ag_fit(static=True) ----


def _fit_model(kind):
    L = pg.ag_linear
    if kind == "bn-dropout":
        return pg.ag_sequential(
            L(4, 16), pg.ag_batch_norm(16), L(16, 16, "relu"), pg.ag_dropout(0.25), L(16, 3)
        )
    return pg.ag_sequential(L(4, 12, "tanh"), pg.ag_layer_norm(12), L(12, 3))


@pytest.mark.parametrize(
    "kind,dtype,accum,onehot",
    [
        ("bn-dropout", "f32", 1, False),
        ("bn-dropout", "f64", 2, False),
        ("ln", "f32", 1, True),
        ("ln", "f64", 3, False),
    ],
)
def test_fit_static_equals_eager(kind, dtype, accum, onehot):
    pg.ag_dtype(dtype)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(4, 150))
    ids = (x[0] + x[1] > 0).astype(int) + (x[2] > 0.5)
    y = np.eye(3)[:, ids] if onehot else ids
    runs = []
    for static in (False, True):
        pg.ggml_set_seed(2)
        m = _fit_model(kind)
        h = pg.ag_fit(
            m,
            x,
            y,
            nepoch=4,
            batch_size=16,
            nbatch_logical=16 * accum,
            val_split=0.2,
            silent=True,
            seed=5,
            static=static,
        )
        runs.append((h, _state(m)))
    (he, se), (hc, sc) = runs
    for k in ("loss", "loss_unc", "accuracy", "val_loss", "val_loss_unc", "val_accuracy"):
        assert he.as_dict()[k] == hc.as_dict()[k], (
            k
        )  # 30 validation samples: a partial last batch of 14
    for a, b in zip(se, sc):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_fit_static_default_and_mse(rng, monkeypatch):
    import pyggmlr.fit.util as fu  # ag_fit's static steps compile through it

    builds = []
    real = fu.ag_compile
    monkeypatch.setattr(
        fu, "ag_compile", lambda *a, **k: builds.append((a[1].shape, k["build"])) or real(*a, **k)
    )
    x = rng.normal(size=(3, 40))
    y = np.vstack([x[0] - x[1], x[2] * 0.5])
    res = []
    same = dict(loss="mse", nepoch=3, batch_size=8, val_split=0.25, silent=True, seed=3)
    for static in (None, False):  # only static varies
        pg.ggml_set_seed(1)
        m = pg.ag_sequential(pg.ag_linear(3, 8, "relu"), pg.ag_linear(8, 2))
        h = pg.ag_fit(m, x, y, static=static, **same)
        res.append((h.as_dict()["loss"], h.as_dict()["val_loss"], _state(m)))
    # default: compiled (one training graph, validation graphs for 8 and the last 2 columns)
    assert builds == [((3, 8), "opt"), ((3, 8), "forward"), ((3, 2), "forward")]
    assert res[0][0] == res[1][0] and res[0][1] == res[1][1]
    assert all(np.array_equal(a, b) for a, b in zip(res[0][2], res[1][2]))
    with pytest.raises(PyggmlrValueError, match="static cannot be true with distributed training"):
        pg.ag_fit(
            pg.ag_linear(3, 2),
            x,
            y,
            loss="mse",
            nepoch=1,
            silent=True,
            static=True,
            distributed=True,
        )


# ---- memory reports of compiled graphs ----


def test_compiled_memory_report_and_estimate(rng, capsys):
    m = pg.ag_sequential(pg.ag_linear(4, 16, "relu"), pg.ag_batch_norm(16), pg.ag_linear(16, 3))
    x, y = rng.normal(size=(4, 32)), rng.integers(0, 3, (1, 32))
    loss = lambda out, t: pg.ag_softmax_cross_entropy_loss(out, t)  # noqa: E731
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    est = pg.ag_estimate_training_memory(
        model=m, x=x, y=y, loss_fn=loss, optimizer=opt, static=True, quiet=True
    )
    # the measured peak of a real compiled step (record + first replay with the Adam update)
    import gc

    gc.collect()
    base = pg.ag_memory_stats()["total"]["current"]
    pg.ag_memory_reset_peak()
    step = pg.ag_compile(lambda a, b: loss(m.forward(a), b), x, y, optimizer=opt)
    step(x, y)
    assert pg.ag_memory_peak() - base == est.total - est.weights
    assert (
        pg.ag_memory_stats()["total"]["current"] - base == est.total - est.weights
    )  # nothing transient
    rep = pg.ag_tape_memory(compiled=step, top=3)
    out = capsys.readouterr().out
    assert (
        out.startswith(f"Compiled graph (opt): {rep.nodes} nodes")
        and "gradients (planned buffers)" in out
    )
    assert (
        rep.nodes == step.n_nodes == len(step.ops) == 4
    )  # linear, batch_norm, linear, softmax_ce_loss
    f32 = 4
    # activations: outputs [16x32] x3 ([3x32] + 1x1 for the others), saved: bn xhat + invstd, softmax probs
    assert rep.outputs == f32 * (16 * 32 * 2 + 3 * 32 + 1)
    assert (
        rep.bytes_snapshots
        == rep.outputs + rep.saved
        == f32 * (16 * 32 * 2 + 3 * 32 + 1 + 16 * 32 + 16 + 3 * 32)
    )
    weights = sum(t.numpy().size for t in m.parameters().values()) * f32
    bufs = 2 * 16 * f32
    assert rep.bytes_inputs == weights + bufs + f32 * (
        4 * 32 + 32
    )  # weights, running stats, x, ids
    assert rep.bytes_gradients == weights + f32 * (16 * 32 * 2 + 3 * 32 + 1)
    assert (
        rep.bytes_total
        == rep.bytes_snapshots + rep.bytes_inputs + rep.bytes_gradients + rep.bytes_fields
    )
    assert sum(r["bytes"] for r in rep.by_op) == rep.bytes_total - rep.bytes_gradients
    # eager vs static estimates share weights/gradients/optimizer; the compiled step keeps more
    eager = pg.ag_estimate_training_memory(
        model=m, x=x, y=y, loss_fn=loss, optimizer=opt, quiet=True
    )
    assert (
        eager.weights == est.weights
        and eager.gradients == est.gradients
        and eager.optimizer == est.optimizer
    )
    assert est.activations >= eager.activations


def test_compiled_memory_text_names_redrawn_dropout_masks(rng, capsys):
    """The report's text is the core's (R's print(step) shows the same first lines): a graph
    with dropout says each replay redraws its masks."""
    d = pg.ag_sequential(pg.ag_linear(4, 4), pg.ag_dropout(0.5))
    x = rng.normal(size=(4, 8))
    step = pg.ag_compile(lambda a: pg.ag_mean(d.forward(a)), x, build="grad")
    rep = step.memory(top=0, quiet=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"Compiled graph (grad): {rep.nodes} nodes, {rep.bytes_total / 1024**2:.2f} MB planned, "
        "1 dropout mask redrawn per call"
    )
    assert out[1:] == [
        f"  operands (outlive the graph)    : {rep.bytes_inputs / 1024**2:8.2f} MB",
        f"  activations (planned buffers)   : {rep.bytes_snapshots / 1024**2:8.2f} MB",
        f"  gradients (planned buffers)     : {rep.bytes_gradients / 1024**2:8.2f} MB",
        f"  graph-path fields (beyond those): {rep.bytes_fields / 1024**2:8.2f} MB",
    ]
