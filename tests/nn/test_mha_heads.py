"""ag_multihead_attention's heads as one core op (pg_mha_heads): the layer's output and every
gradient equal, bit for bit, those of the per-head loop it replaced (row slices, transposed
matmul, causal mask, softmax, dropout drawn transposed, matmul, row concat), eagerly and under
ag_compile with Adam steps; one tape node; the tape keeps no more than the loop did."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib
from pyggmlr.nn.base import _causal_mask, _dropout, _matmul_t


def _old_forward(m, q, k=None, v=None, causal_mask=False):
    """The layer's forward before the fused op (pyggmlr/nn/layers.py at main)."""
    k = q if k is None else k
    v = k if v is None else v
    Q, K, V = pg.ag_matmul(m.W_q, q), pg.ag_matmul(m.W_k, k), pg.ag_matmul(m.W_v, v)
    dk, H = m.d_k, m.n_heads
    concat = None
    for h in range(H):
        if H == 1:
            qh, kh, vh = Q, K, V
        else:
            qh = pg.ag_slice_rows(Q, h * dk, dk)
            kh = pg.ag_slice_rows(K, h * dk, dk)
            vh = pg.ag_slice_rows(V, h * dk, dk)
        s = _matmul_t(kh, qh, ta=True, alpha=m.scale)
        if causal_mask:
            s = _causal_mask(s)
        p = pg.ag_softmax(s)
        if m.training and m.dropout > 0:
            p = _dropout(p, m.dropout, transpose=True)
        head = pg.ag_matmul(vh, p)
        concat = head if concat is None else pg.ag_concat_rows(concat, head)
    out = pg.ag_matmul(m.W_o, concat)
    if m.b_o is not None:
        out = pg.ag_add(out, m.b_o)
    return out


def _same(a, b):
    """equal bits, -0.0 apart from 0.0 included"""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _run(fwd, m, xs, causal, seed):
    """output and gradients of sum(out * G) for the parameters and the inputs"""
    pg.ggml_set_seed(seed)
    with pg.with_grad_tape():
        out = fwd(m, *xs, causal_mask=causal)
        G = pg.ag_tensor(np.cos(np.arange(out.numpy().size)).reshape(out.shape), dtype=xs[0].dtype)
        loss = pg.ag_sum(pg.ag_mul(out, G))
    grads = pg.backward(loss)
    res = [out.numpy()] + [grads[p] for p in m.parameters().values()]
    res += [grads[x] for x in xs]
    pg.ag_tape_clear()
    return res


CASES = [  # (d_model, H, seq_q, seq_kv or None for self-attention, causal)
    (8, 1, 5, None, False),
    (8, 1, 5, None, True),
    (8, 4, 6, None, False),
    (8, 4, 6, None, True),
    (12, 4, 5, 7, False),
    (12, 4, 7, 5, True),
    (6, 1, 3, 4, True),
]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mode", ["train-dropout", "train", "eval-dropout"])
def test_bit_identical_to_the_composed_heads(dtype, case, mode):
    pg.ag_dtype(dtype)
    D, H, Sq, Skv, causal = case
    rate = 0.0 if mode == "train" else 0.3
    pg.ggml_set_seed(5)
    m = pg.ag_multihead_attention(D, H, dropout=rate)
    if mode.startswith("eval"):
        m.eval()
    rng = np.random.default_rng(D * 100 + H * 10 + Sq)
    q = pg.ag_param(rng.normal(size=(D, Sq)), dtype=dtype)
    xs = [q] if Skv is None else [q, pg.ag_param(rng.normal(size=(D, Skv)), dtype=dtype)]
    new = _run(type(m).forward, m, xs, causal, 11)
    after_new = pg.random.get_state()
    old = _run(_old_forward, m, xs, causal, 11)
    assert np.array_equal(pg.random.get_state(), after_new)  # the same number of draws
    assert len(new) == len(old)
    for a, b in zip(new, old):
        assert _same(a, b)
    if mode == "train-dropout":  # the masks were drawn: another seed gives another output
        assert not _same(_run(type(m).forward, m, xs, causal, 12)[0], new[0])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("H", [1, 4])
def test_one_tape_node_and_no_more_saved_memory(dtype, H):
    pg.ag_dtype(dtype)
    pg.ggml_set_seed(2)
    m = pg.ag_multihead_attention(16, H, dropout=0.2)
    x = pg.ag_param(np.random.default_rng(0).normal(size=(16, 24)), dtype=dtype)
    reps = []
    for fwd in (type(m).forward, _old_forward):
        with pg.with_grad_tape():
            loss = pg.ag_mean(fwd(m, x, causal_mask=True))
        reps.append(pg.ag_tape_memory(quiet=True))
        pg.backward(loss)
        pg.ag_tape_clear()
    new, old = reps
    assert new.nodes == 3 + 1 + 2 + 1  # 3 projections, the heads, W_o, bias, mean
    assert new.bytes_total <= old.bytes_total


def _train(m, data, dtype, compiled):
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    T = lambda a: pg.ag_tensor(a, dtype=dtype)  # noqa: E731

    def loss_of(x, y):
        return pg.ag_mse_loss(m.forward(x, causal_mask=True), y)

    pg.ggml_set_seed(9)
    losses = []
    if compiled:
        step = pg.ag_compile(loss_of, T(data[0][0]), T(data[0][1]), optimizer=opt)
        losses = [step(T(x), T(y)) for x, y in data]
        return losses, step
    for x, y in data:
        with pg.with_grad_tape():
            le = loss_of(T(x), T(y))
        opt.step(pg.backward(le))
        opt.zero_grad()
        losses.append(le.item())
        pg.ag_tape_clear()
    return losses, None


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_adam_steps_equal_eager_and_composed(dtype, monkeypatch):
    pg.ag_dtype(dtype)
    rng = np.random.default_rng(4)
    data = [(rng.normal(size=(8, 6)), rng.normal(size=(8, 6))) for _ in range(3)]
    runs = {}
    for name in ("eager", "compiled", "composed"):
        pg.ggml_set_seed(3)
        m = pg.ag_multihead_attention(8, 4, dropout=0.3)
        with monkeypatch.context() as mp:
            if name == "composed":
                mp.setattr(type(m), "forward", _old_forward)
            losses, step = _train(m, data, dtype, name == "compiled")
        runs[name] = (losses, [p.numpy() for p in m.parameters().values()], step)
    for name in ("compiled", "composed"):
        assert runs[name][0] == runs["eager"][0]
        assert all(_same(a, b) for a, b in zip(runs[name][1], runs["eager"][1]))
    step = runs["compiled"][2]
    assert step.ops.count("mha_heads") == 1
    assert lib.pg_graph_dropout_masks(step._g) == 4  # one per head, redrawn by every replay


def test_fit_static_equals_eager_with_dropout():
    """ag_fit(static=True) replays the heads' op (masks redrawn per step): eager's parameters"""
    pg.ag_dtype("f32")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 40)), rng.normal(size=(8, 40))
    res = []
    for static in (False, True):
        pg.ggml_set_seed(3)
        m = pg.ag_sequential(pg.ag_multihead_attention(8, 2, dropout=0.3), pg.ag_linear(8, 8))
        pg.ag_fit(m, x, y, loss="mse", nepoch=3, batch_size=10, static=static, silent=True, seed=4)
        res.append([p.numpy() for p in m.parameters().values()])
    assert all(_same(a, b) for a, b in zip(*res))


def test_core_refusals_name_the_layer():
    from pyggmlr.errors import DTypeError, PyggmlrValueError, ShapeError
    from pyggmlr.tensor import _wrap

    q = pg.ag_tensor(np.ones((8, 3)), dtype="f64")
    k = pg.ag_tensor(np.ones((8, 4)), dtype="f64")

    def heads(a, b, c, h=2, rate=0.0):
        return _wrap(lib.pg_mha_heads(a._p, b._p, c._p, h, 0.5, 0, rate))

    assert heads(q, k, k).shape == (8, 3)
    with pytest.raises(PyggmlrValueError, match="ag_multihead_attention: n_heads = 3 must"):
        heads(q, k, k, h=3)
    with pytest.raises(PyggmlrValueError, match="ag_multihead_attention: dropout must be in"):
        heads(q, k, k, rate=1.0)
    with pytest.raises(ShapeError, match=r"ag_multihead_attention: k is \[8x4\] f64 and v is"):
        heads(q, k, q)
    with pytest.raises(DTypeError, match="ag_multihead_attention"):
        heads(q, k, pg.ag_tensor(np.ones((8, 4)), dtype="f32"))
