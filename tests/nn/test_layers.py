"""Layer ops and layers: gradchecks (f64, central differences) of the C layer ops and of the
modules, spec section 13 golden values (batch norm, embedding, multi-head attention). Spec
section 10's test-ag-layers / test-ag-mha checks, module plumbing and the config round trip:
test_nn.py."""

import math

import numpy as np
import pytest
from _fd import numeric_grad

import pyggmlr as pg
from pyggmlr.nn.base import _causal_mask, _matmul_t


def F(vals, r, c):
    """R's matrix(vals, r, c): column-major fill."""
    return np.asarray(vals, dtype=np.float64).reshape((r, c), order="F")


def mk(s):
    """The spec's mk(s) = matrix(((1:16)*s) %% 7 / 7 - 0.5, 4, 4)."""
    return F(((np.arange(1, 17) * s) % 7) / 7 - 0.5, 4, 4)


def gradcheck(loss_fn, tensors, atol=1e-6, rtol=1e-5):
    """backward()'s gradient of every tensor vs central differences; returns the map."""
    with pg.with_grad_tape():
        loss = loss_fn()
    grads = pg.backward(loss)
    for i, t in enumerate(tensors):
        num = numeric_grad(loss_fn, t)
        assert t in grads, f"input {i} got no gradient"
        np.testing.assert_allclose(grads[t], num, atol=atol, rtol=rtol, err_msg=f"input {i}")
    return grads


def weights(rng, shape):
    """A fixed random weighting so sum(out * w) exercises every output element differently."""
    return rng.standard_normal(shape)


def wsum(out, w):
    return pg.ag_sum(pg.ag_mul(out, w))


# ---------------------------------------------------------------------------------------------
# the C layer ops


def test_slice_and_concat_rows_forward_and_grad(f64, rng):
    x = pg.ag_param(rng.standard_normal((5, 3)))
    s = pg.ag_slice_rows(x, 1, 3)
    np.testing.assert_array_equal(s.numpy(), x.numpy()[1:4])
    a = pg.ag_param(rng.standard_normal((2, 3)))
    b = pg.ag_param(rng.standard_normal((4, 3)))
    c = pg.ag_concat_rows(a, b)
    np.testing.assert_array_equal(c.numpy(), np.vstack([a.numpy(), b.numpy()]))
    w1, w2 = weights(rng, (3, 3)), weights(rng, (6, 3))
    # x used twice (two overlapping slices) and a, b used twice: slots must accumulate
    gradcheck(
        lambda: (
            wsum(pg.ag_slice_rows(x, 1, 3), w1)
            + wsum(pg.ag_slice_rows(x, 0, 3), w1)
            + wsum(pg.ag_concat_rows(a, b), w2)
            + wsum(pg.ag_concat_rows(b, a), w2)
        ),
        [x, a, b],
    )


def test_slice_concat_errors():
    x = pg.ag_tensor(np.zeros((4, 2)))
    with pytest.raises(pg.PyggmlrValueError, match=r"ag_slice_rows.*\[4x2\] f32"):
        pg.ag_slice_rows(x, 3, 2)
    with pytest.raises(pg.PyggmlrValueError, match="ag_slice_rows"):
        pg.ag_slice_rows(x, -1, 1)
    with pytest.raises(pg.ShapeError, match=r"ag_concat_rows.*\[4x2\] f32.*\[4x3\] f32"):
        pg.ag_concat_rows(x, np.zeros((4, 3)))
    with pytest.raises(pg.DTypeError, match="ag_concat_rows"):
        pg.ag_concat_rows(x, pg.ag_tensor(np.zeros((1, 2)), dtype="f64"))


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_matmul_t(f64, rng, ta, tb):
    A0, B0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    a = pg.ag_param(A0.T if ta else A0)
    b = pg.ag_param(B0.T if tb else B0)
    out = _matmul_t(a, b, ta, tb, alpha=0.5)
    np.testing.assert_allclose(out.numpy(), 0.5 * A0 @ B0, rtol=1e-13)
    w = weights(rng, (3, 2))
    gradcheck(
        lambda: wsum(_matmul_t(a, b, ta, tb, alpha=0.5), w) + wsum(_matmul_t(a, b, ta, tb), w),
        [a, b],
    )


def test_matmul_t_shape_error():
    with pytest.raises(pg.ShapeError, match="ag_matmul_t"):
        _matmul_t(pg.ag_tensor(np.zeros((3, 4))), pg.ag_tensor(np.zeros((3, 2))))


def test_causal_mask(f64, rng):
    x = pg.ag_param(rng.standard_normal((3, 4)))  # [keys, queries]
    m = _causal_mask(x).numpy()
    for i in range(3):
        for j in range(4):
            assert (m[i, j] == -np.inf) if i > j else (m[i, j] == x.numpy()[i, j])
    w = weights(rng, (3, 4))
    grads = gradcheck(lambda: wsum(pg.ag_softmax(_causal_mask(x)), w), [x])
    assert grads[x][2, 0] == 0 and grads[x][1, 0] == 0 and grads[x][2, 1] == 0


def test_batch_norm_exact_gradient_training(f64, rng):
    bn = pg.ag_batch_norm(
        3, momentum=0.0
    )  # momentum 0: running stats stay put under repeated forwards
    bn.gamma.data = rng.uniform(0.5, 1.5, (3, 1))
    bn.beta.data = rng.standard_normal((3, 1))
    x = pg.ag_param(rng.standard_normal((3, 5)) * 2 + 1)
    w = weights(rng, (3, 5))
    gradcheck(lambda: wsum(bn(x), w), [x, bn.gamma, bn.beta], atol=1e-7)
    np.testing.assert_array_equal(bn.running_mean.numpy(), 0)
    np.testing.assert_array_equal(bn.running_var.numpy(), 1)


def test_batch_norm_gradient_eval_mode(f64, rng):
    bn = pg.ag_batch_norm(2)
    bn.running_mean.data = np.array([[0.5], [-1.0]])
    bn.running_var.data = np.array([[2.0], [0.25]])
    bn.gamma.data = np.array([[1.5], [-0.5]])
    pg.ag_eval(bn)
    x = pg.ag_param(rng.standard_normal((2, 4)))
    w = weights(rng, (2, 4))
    grads = gradcheck(lambda: wsum(bn(x), w), [x, bn.gamma, bn.beta])
    # eval mode is affine in x with constant running stats
    np.testing.assert_allclose(
        grads[x],
        w * np.array([[1.5 / math.sqrt(2 + 1e-5)], [-0.5 / math.sqrt(0.25 + 1e-5)]]),
        rtol=1e-12,
    )


def test_batch_norm_f32_matches_numpy(rng):
    x0 = rng.standard_normal((4, 7)).astype(np.float32) * 3
    bn = pg.ag_batch_norm(4)
    out = bn(pg.ag_tensor(x0))
    assert out.dtype == "f32"
    x64 = x0.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-5)
    np.testing.assert_allclose(
        bn.running_var.numpy(), 0.9 + 0.1 * x64.var(1, keepdims=True), rtol=1e-5
    )


def test_layer_norm_forward_and_gradient(f64, rng):
    ln = pg.ag_layer_norm(4)
    ln.gamma.data = rng.uniform(0.5, 1.5, (4, 1))
    ln.beta.data = rng.standard_normal((4, 1))
    x0 = rng.standard_normal((4, 3))
    x = pg.ag_param(x0)
    ref = (x0 - x0.mean(0)) / np.sqrt(x0.var(0) + 1e-5) * ln.gamma.numpy() + ln.beta.numpy()
    np.testing.assert_allclose(ln(x).numpy(), ref, rtol=1e-12, atol=1e-14)
    w = weights(rng, (4, 3))
    gradcheck(lambda: wsum(ln(x), w), [x, ln.gamma, ln.beta], atol=1e-7)
    assert ln.name == "layer_norm(4)" and list(ln.parameters()) == ["gamma", "beta"]


def test_embedding_gradient_with_repeated_ids(f64, rng):
    emb = pg.ag_embedding(5, 3)
    ids = np.array([[4, 0], [4, 2]])  # column-major flatten: 4, 4, 0, 2
    w = weights(rng, (3, 4))
    grads = gradcheck(lambda: wsum(emb(ids), w), [emb.weight])
    np.testing.assert_allclose(grads[emb.weight][:, 4], w[:, 0] + w[:, 1], rtol=1e-14)
    np.testing.assert_array_equal(grads[emb.weight][:, [1, 3]], 0)


def test_embedding_errors():
    emb = pg.ag_embedding(4, 2)
    with pytest.raises(
        pg.PyggmlrValueError, match=r"ag_embedding: id 4 at position 1 is out of range.*\[0, 4\)"
    ):
        emb([0, 4])
    with pytest.raises(pg.PyggmlrValueError, match="ag_embedding"):
        emb([-1])
    with pytest.raises(pg.PyggmlrValueError, match="whole numbers"):
        emb(np.array([0.5]))


def test_batch_norm_errors():
    bn = pg.ag_batch_norm(3)
    with pytest.raises(
        pg.ShapeError, match=r"ag_batch_norm: gamma is \[3x1\] f32 but x is \[2x4\] f32"
    ):
        bn(pg.ag_tensor(np.zeros((2, 4))))
    with pytest.raises(pg.DTypeError, match="ag_batch_norm: dtype mismatch"):
        bn(pg.ag_tensor(np.zeros((3, 4)), dtype="f64"))
    with pytest.raises(pg.PyggmlrValueError):
        pg.ag_batch_norm(3, momentum=1.5)


# ---------------------------------------------------------------------------------------------
# modules: gradchecks


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh", "softmax", "gelu"])
def test_linear_gradcheck(f64, rng, act):
    lin = pg.ag_linear(3, 4, act)
    x = pg.ag_param(rng.standard_normal((3, 5)))
    w = weights(rng, (4, 5))
    z = lin.W.numpy() @ x.numpy() + lin.b.numpy()
    ref = {
        None: z,
        "relu": np.maximum(z, 0),
        "sigmoid": 1 / (1 + np.exp(-z)),
        "tanh": np.tanh(z),
        "softmax": np.exp(z) / np.exp(z).sum(0),
        "gelu": 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2))),
    }[act]
    np.testing.assert_allclose(lin(x).numpy(), ref, rtol=1e-12, atol=1e-14)
    gradcheck(lambda: wsum(lin(x), w), [lin.W, lin.b, x])


def _mha(d, h, bias=True, dropout=0.0):
    m = pg.ag_multihead_attention(d, h, dropout=dropout, bias=bias)
    return m


@pytest.mark.parametrize("mode", ["self", "cross", "causal", "cross_causal", "single_head"])
def test_attention_gradcheck(f64, rng, mode):
    m = _mha(4, 1 if mode == "single_head" else 2)
    m.b_o.data = rng.standard_normal((4, 1)) * 0.1
    q = pg.ag_param(rng.standard_normal((4, 3)))
    kv = pg.ag_param(rng.standard_normal((4, 5)))
    causal = "causal" in mode
    cross = "cross" in mode
    w = weights(rng, (4, 3))

    def loss():
        out = m(q, kv, causal_mask=causal) if cross else m(q, causal_mask=causal)
        return wsum(out, w)

    gradcheck(loss, list(m.parameters().values()) + [q] + ([kv] if cross else []))


def test_attention_matches_numpy_reference(f64, rng):
    d, h, sq, skv = 6, 3, 4, 5
    m = _mha(d, h)
    m.b_o.data = rng.standard_normal((d, 1))
    q0, k0, v0 = (
        rng.standard_normal((d, sq)),
        rng.standard_normal((d, skv)),
        rng.standard_normal((d, skv)),
    )
    Wq, Wk, Wv, Wo = (m.W_q.numpy(), m.W_k.numpy(), m.W_v.numpy(), m.W_o.numpy())
    for causal in (False, True):
        Q, K, V = Wq @ q0, Wk @ k0, Wv @ v0
        heads = []
        for i in range(h):
            sl = slice(2 * i, 2 * i + 2)
            s = Q[sl].T @ K[sl] / math.sqrt(2)  # [sq, skv] as ggmlR
            if causal:
                s = np.where(np.arange(skv)[None, :] > np.arange(sq)[:, None], -np.inf, s)
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            heads.append(V[sl] @ p.T)
        ref = Wo @ np.vstack(heads) + m.b_o.numpy()
        out = m(pg.ag_tensor(q0), pg.ag_tensor(k0), pg.ag_tensor(v0), causal_mask=causal)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-14)


def test_dropout_gradient_uses_the_mask(f64):
    pg.ggml_set_seed(11)
    x = pg.ag_param(np.arange(1.0, 13.0).reshape(3, 4))
    with pg.with_grad_tape():
        out = pg.ag_dropout(0.25)(x)
        loss = pg.ag_sum(out)
    g = pg.backward(loss)[x]
    mask = out.numpy() / x.numpy()
    np.testing.assert_allclose(g, mask, rtol=1e-14)
    assert set(np.round(np.unique(mask), 12)) == {0.0, round(1 / 0.75, 12)}
    # rate 0: identity, gradient 1
    gradcheck(lambda: wsum(pg.ag_dropout(0.0)(x), np.ones((3, 4))), [x])


# ---------------------------------------------------------------------------------------------
# spec section 13 golden values

BN_X = F([1, 2, 3, 5, 6, 11], 2, 3)
BN_W = F(range(1, 7), 2, 3)


def test_golden_batch_norm(f64):
    bn = pg.ag_batch_norm(2)
    x = pg.ag_param(BN_X)
    with pg.with_grad_tape():
        out = bn(x)
        loss = wsum(out, BN_W)
    grads = pg.backward(loss)
    np.testing.assert_allclose(
        out.numpy(),
        [[-1.135548603, -0.1622212290, 1.297769832], [-1.069044586, -0.2672611465, 1.336305732]],
        rtol=1e-9,
    )
    np.testing.assert_allclose(bn.running_mean.numpy().ravel(), [0.3333333333, 0.6], rtol=1e-9)
    np.testing.assert_allclose(bn.running_var.numpy().ravel(), [1.322222222, 2.3], rtol=1e-9)
    np.testing.assert_allclose(grads[bn.gamma].ravel(), [4.866636871, 4.810700636], rtol=1e-9)
    np.testing.assert_allclose(grads[bn.beta].ravel(), [9, 12], rtol=1e-14)
    # ggmlR's simplified dx (g / sqrt(var + eps)) is NOT what we compute ...
    simplified = np.array(
        [[0.4866636871, 1.459991061, 2.433318435], [0.5345222929, 1.069044586, 1.603566879]]
    )
    assert np.abs(grads[x] - simplified).max() > 0.4
    # ... the exact one sums to zero per row (the mean is subtracted) and matches finite differences
    np.testing.assert_allclose(grads[x].sum(1), 0, atol=1e-12)
    bn0 = pg.ag_batch_norm(2, momentum=0.0)
    np.testing.assert_allclose(grads[x], numeric_grad(lambda: wsum(bn0(x), BN_W), x), atol=1e-7)
    # eval forward of (1, 2) with the updated running stats
    pg.ag_eval(bn)
    np.testing.assert_allclose(
        bn(np.array([[1.0], [2.0]])).numpy().ravel(), [0.5797688433, 0.9231306560], rtol=1e-9
    )


def test_golden_embedding(f64):
    emb = pg.ag_embedding(4, 2)
    emb.weight.data = F([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], 2, 4)
    with pg.with_grad_tape():
        out = emb([2, 0, 2])
        loss = wsum(out, BN_W)
    np.testing.assert_allclose(out.numpy(), F([0.5, 0.6, 0.1, 0.2, 0.5, 0.6], 2, 3), rtol=1e-15)
    grads = pg.backward(loss)
    np.testing.assert_allclose(grads[emb.weight], [[3, 0, 6, 0], [4, 0, 8, 0]], rtol=1e-15)


MHA_X = F([0.5, -1, 0.25, 2, 1, 0, -0.5, 0.3, -0.2, 0.4, 1, -1], 4, 3)
MHA_OUT = [
    [0.09933157052, 0.09274531922, 0.0780444429],
    [0.01006813791, -0.04993718666, -0.1382810557],
    [0.09726010962, -0.02213049155, -0.1066382735],
    [0.19396328683, 0.21408657216, 0.2362071922],
]


def _golden_mha():
    m = pg.ag_multihead_attention(4, 2)
    m.W_q.data, m.W_k.data, m.W_v.data, m.W_o.data = mk(1), mk(2), mk(3), mk(5)
    m.b_o.data = np.array([0.1, 0, -0.1, 0.2])
    return m


def test_golden_attention(f64):
    m = _golden_mha()
    x = pg.ag_tensor(MHA_X)
    out = m(x)
    np.testing.assert_allclose(out.numpy(), MHA_OUT, rtol=1e-9, atol=1e-11)
    c = m(x, causal_mask=True).numpy()
    np.testing.assert_allclose(
        c[:, 0], [-0.04285714286, -0.34693877551, 0.45612244898, 0.15918367347], rtol=1e-9
    )
    np.testing.assert_allclose(
        c[:, 1], [-0.02384720269, -0.25702328518, 0.14538786889, 0.14274083856], rtol=1e-9
    )
    np.testing.assert_array_equal(c[:, 2], out.numpy()[:, 2])


def test_golden_attention_f32():
    m = _golden_mha()
    out = m(pg.ag_tensor(MHA_X))
    assert out.dtype == "f32"
    np.testing.assert_allclose(out.numpy(), MHA_OUT, atol=1e-6)


def test_attention_tape_is_small(f64):
    """The heads as one op instead of selector matrices: ggmlR records 33 nodes for d=4, h=2
    causal + MSE."""
    m = _golden_mha()
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(m(pg.ag_tensor(MHA_X), causal_mask=True), np.zeros((4, 3)))
    assert not loss.is_leaf  # the last node counted below
    n = pg._core.lib.pg_tape_nodes()
    # 3 projections, the heads (one node for every head), W_o, b_o, loss
    assert n == 3 + 1 + 2 + 1
    assert n < 33
