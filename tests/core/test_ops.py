"""Every op and loss: forward values against numpy, backward against central finite differences
(f64), spec section 10's forward checks. Golden values, f32 and the Python operators:
test_ops_golden.py; the built-in GEMM: test_gemm.py; vectorised exp / sigmoid / tanh:
test_vmath.py."""

import math

import numpy as np
import pytest
from _fd import R, gradcheck, np_softmax, project

import pyggmlr as pg

SHAPES = [(1, 1), (3, 1), (1, 4), (3, 4)]


# ---- matmul ----


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (2, 3, 4), (4, 1, 3), (1, 5, 1), (3, 3, 2)])
def test_matmul_forward_and_grad(rng, m, k, n):
    A, B = R(rng, m, k), R(rng, k, n)
    out = pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64"))
    np.testing.assert_allclose(out.numpy(), A @ B, rtol=1e-13, atol=1e-14)
    gradcheck(lambda a, b: project(pg.ag_matmul(a, b)), A, B)
    gradcheck(lambda a, b: project(pg.ag_matmul(a, b)), A, B, const=(0,))
    gradcheck(lambda a, b: project(pg.ag_matmul(a, b)), A, B, const=(1,))


def test_matmul_larger_matches_numpy(rng):
    A, B = R(rng, 37, 70), R(rng, 70, 45)
    np.testing.assert_allclose(
        pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")).numpy(),
        A @ B,
        rtol=1e-12,
        atol=1e-12,
    )


# ---- broadcasting binary ops ----

BIN = {
    "add": (pg.ag_add, np.add),
    "sub": (pg.ag_sub, np.subtract),
    "mul": (pg.ag_mul, np.multiply),
    "div": (pg.ag_div, np.divide),
}
BCAST = [
    ((3, 4), (3, 4)),
    ((3, 4), (3, 1)),
    ((3, 4), (1, 4)),
    ((3, 4), (1, 1)),
    ((3, 1), (3, 4)),
    ((1, 4), (3, 4)),
    ((1, 1), (3, 4)),
    ((3, 1), (1, 4)),
    ((1, 4), (3, 1)),
]


@pytest.mark.parametrize("name", list(BIN))
@pytest.mark.parametrize("sa,sb", BCAST)
def test_binary_broadcast(rng, name, sa, sb):
    op, ref = BIN[name]
    A = R(rng, *sa)
    B = R(rng, *sb, lo=0.5, hi=2.0) if name == "div" else R(rng, *sb)
    out = op(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64"))
    np.testing.assert_allclose(out.numpy(), ref(A, B), rtol=1e-14)
    (a, b), grads = gradcheck(lambda a, b: project(op(a, b)), A, B)
    assert grads[a].shape == sa and grads[b].shape == sb


@pytest.mark.parametrize("name", list(BIN))
def test_binary_with_constant_operand(rng, name):
    op, ref = BIN[name]
    A, B = R(rng, 2, 3, lo=0.5, hi=2), R(rng, 2, 1, lo=0.5, hi=2)
    gradcheck(lambda a, b: project(op(a, b)), A, B, const=(1,))
    gradcheck(lambda a, b: project(op(a, b)), A, B, const=(0,))
    # a plain numpy array on either side is a constant
    a = pg.ag_param(A, dtype="f64")
    np.testing.assert_allclose(op(a, B).numpy(), ref(A, B), rtol=1e-14)
    np.testing.assert_allclose(op(B, a).numpy(), ref(B, A), rtol=1e-14)
    assert op(a, B).requires_grad and not op(pg.ag_tensor(A), B).requires_grad


def test_spec10_sub_and_mul_broadcast_values():
    x = pg.ag_tensor(np.array([[1.0, 2, 3], [4, 5, 6]]).T, dtype="f64")  # matrix(1:6, 3, 2)
    np.testing.assert_array_equal(
        pg.ag_sub(x, pg.ag_tensor(np.ones((1, 2)), dtype="f64")).numpy(),
        np.array([[0.0, 1, 2], [3, 4, 5]]).T,
    )
    s = pg.ag_sub(x, pg.ag_tensor([[1.0, 2.0]], dtype="f64"))
    np.testing.assert_array_equal(s.numpy().ravel(order="F"), [0, 1, 2, 2, 3, 4])
    m1 = pg.ag_mul(x, pg.ag_tensor([[2.0, 3.0]], dtype="f64"))
    np.testing.assert_array_equal(m1.numpy().ravel(order="F"), [2, 4, 6, 12, 15, 18])
    m2 = pg.ag_mul(x, pg.ag_tensor([10.0, 20.0, 30.0], dtype="f64"))
    np.testing.assert_array_equal(m2.numpy().ravel(order="F"), [10, 40, 90, 40, 100, 180])


# ---- unary and scalar ops ----


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


UNARY = {
    "relu": (pg.ag_relu, lambda x: np.maximum(x, 0)),
    "sigmoid": (pg.ag_sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (pg.ag_tanh, np.tanh),
    "gelu": (pg.ag_gelu, _gelu),
    "softmax": (pg.ag_softmax, np_softmax),
    "log": (pg.ag_log, np.log),
    "exp": (pg.ag_exp, np.exp),
    "neg": (pg.ag_neg, np.negative),
    "scale": (lambda x: pg.ag_scale(x, -2.5), lambda x: -2.5 * x),
    "pow2": (lambda x: pg.ag_pow(x, 2), lambda x: x**2),
    "pow_half": (lambda x: pg.ag_pow(x, 0.5), np.sqrt),
    "pow3": (lambda x: pg.ag_pow(x, 3), lambda x: x**3),
    "pow_neg": (lambda x: pg.ag_pow(x, -1.5), lambda x: x**-1.5),
    "clamp": (lambda x: pg.ag_clamp(x, 0.6, 1.6), lambda x: np.clip(x, 0.6, 1.6)),
    "clamp_lo": (lambda x: pg.ag_clamp(x, lo=0.8), lambda x: np.maximum(x, 0.8)),
    "transpose": (pg.ag_transpose, lambda x: x.T),
}
POSITIVE = {"log", "pow_half", "pow_neg", "clamp", "clamp_lo"}


def _unary_input(rng, name, shape):
    if name in POSITIVE:
        return R(rng, *shape, lo=0.3, hi=2.0)
    x = R(rng, *shape, lo=-2, hi=2)
    if name == "relu":  # keep away from the kink
        x = np.where(np.abs(x) < 0.1, 0.5, x)
    return x


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_forward_and_grad(rng, name, shape):
    op, ref = UNARY[name]
    x = _unary_input(rng, name, shape)
    np.testing.assert_allclose(
        op(pg.ag_tensor(x, dtype="f64")).numpy(), ref(x), rtol=1e-13, atol=1e-15
    )
    gradcheck(lambda t: project(op(t)), x)


def test_clamp_interior_points_and_boundaries():
    x = np.array([[-2.0, 0.0, 3.0, -0.5, 1.0]]).T
    out = pg.ag_clamp(pg.ag_tensor(x, dtype="f64"), -1, 2)
    np.testing.assert_array_equal(out.numpy()[:, 0], [-1, 0, 2, -0.5, 1])
    # interior points get gradient 1, clamped points 0 (strict on the boundary)
    xp = pg.ag_param(np.array([[-2.0, 0.0, 3.0, -1.0, 2.0]]).T, dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_clamp(xp, -1, 2))
    g = pg.backward(loss)
    np.testing.assert_array_equal(g[xp][:, 0], [0, 1, 0, 0, 0])
    gradcheck(
        lambda t: project(pg.ag_clamp(t, -1, 2)), np.array([[-0.5, 0.3, 1.9], [1.2, -0.9, 0.0]])
    )


def test_spec10_forward_values():
    x = pg.ag_tensor([1.0, 2.0, 3.0, 4.0], dtype="f64")
    assert pg.ag_mean(x).item() == 2.5
    np.testing.assert_array_equal(
        pg.ag_clamp(pg.ag_tensor([-2.0, 0.0, 3.0], dtype="f64"), -1, 2).numpy()[:, 0], [-1, 0, 2]
    )
    np.testing.assert_array_equal(
        pg.ag_pow(pg.ag_tensor([2.0, 3.0, 4.0], dtype="f64"), 2).numpy()[:, 0], [4, 9, 16]
    )
    np.testing.assert_allclose(
        pg.ag_log(pg.ag_exp(pg.ag_tensor([0.5, -1.0], dtype="f64"))).numpy()[:, 0],
        [0.5, -1.0],
        rtol=1e-15,
    )
    assert pg.ag_scale(pg.ag_tensor([[4.0]], dtype="f64"), 0.5).item() == 2.0
    p = pg.ag_softmax(
        pg.ag_tensor(np.random.default_rng(3).normal(size=(5, 7)), dtype="f64")
    ).numpy()
    np.testing.assert_allclose(p.sum(axis=0), 1, atol=1e-12)
    assert np.all(p > 0)
    np.testing.assert_array_equal(pg.ag_sigmoid(pg.ag_tensor([[0.0]])).numpy(), [[0.5]])


def test_softmax_is_stable_for_large_logits():
    x = np.array([[1000.0, -1000.0], [1001.0, -999.0], [999.0, -1001.0]])
    np.testing.assert_allclose(
        pg.ag_softmax(pg.ag_tensor(x, dtype="f64")).numpy(), np_softmax(x), rtol=1e-14
    )


def test_relu_grad_zero_at_negative_and_at_zero():
    x = pg.ag_param([[-1.0, 0.0, 2.0]], dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_relu(x))
    np.testing.assert_array_equal(pg.backward(loss)[x], [[0, 0, 1]])


# ---- reductions and shape ops ----


@pytest.mark.parametrize("dim", [None, 1, 2])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("which", ["sum", "mean"])
def test_sum_mean(rng, dim, shape, which):
    op = pg.ag_sum if which == "sum" else pg.ag_mean
    ref = np.sum if which == "sum" else np.mean
    x = R(rng, *shape)
    out = op(pg.ag_tensor(x, dtype="f64"), dim=dim)
    if dim is None:
        expect = np.array([[ref(x)]])
    elif dim == 1:
        expect = ref(x, axis=1, keepdims=True)  # per row -> [nrow, 1]
    else:
        expect = ref(x, axis=0, keepdims=True)  # per column -> [1, ncol]
    assert out.shape == expect.shape
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-14, atol=1e-15)
    # keepdim is accepted; results are always matrices with the reduced axis kept
    assert op(pg.ag_tensor(x, dtype="f64"), dim=dim, keepdim=True).shape == expect.shape
    gradcheck(lambda t: project(op(t, dim=dim)), x)


def test_spec13_means_golden():
    m = pg.ag_param(np.arange(1.0, 7.0).reshape(2, 3, order="F"), dtype="f64")
    with pg.with_grad_tape():
        m1, m2 = pg.ag_mean(m, 1), pg.ag_mean(m, 2)
        loss = pg.ag_add(pg.ag_sum(m1), pg.ag_sum(m2))
    np.testing.assert_array_equal(m1.numpy(), [[3.0], [4.0]])
    np.testing.assert_array_equal(m2.numpy(), [[1.5, 3.5, 5.5]])
    g = pg.backward(loss)
    np.testing.assert_allclose(g[m], np.full((2, 3), 0.8333333333), atol=1e-10)
    np.testing.assert_allclose(g[m], np.full((2, 3), 1 / 3 + 1 / 2), rtol=1e-15)


def test_sum_values_spec10():
    m = pg.ag_tensor(np.arange(1.0, 7.0).reshape(2, 3, order="F"), dtype="f64")
    assert pg.ag_sum(m).item() == 21
    np.testing.assert_array_equal(pg.ag_sum(m, 1).numpy(), [[9], [12]])
    np.testing.assert_array_equal(pg.ag_sum(m, 2).numpy(), [[3, 7, 11]])


def test_transpose_grad_non_square(rng):
    gradcheck(lambda t: project(pg.ag_transpose(t)), R(rng, 5, 2))
    x = R(rng, 40, 33)
    np.testing.assert_array_equal(pg.ag_transpose(pg.ag_tensor(x, dtype="f64")).numpy(), x.T)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("r,c", [(1, 1), (3, 7), (5, 8), (9, 9), (256, 17), (33, 1024), (1024, 3)])
def test_transpose_blocks_forward_and_accumulated_grad(rng, dtype, r, c):
    # whole and partial blocks of 8 columns, strides that are multiples of 4 KB; a tensor used by
    # two transposes accumulates both gradients (the += path)
    x = R(rng, r, c)
    a, b = R(rng, c, r), R(rng, c, r)
    t = pg.ag_param(x, dtype=dtype)
    with pg.with_grad_tape():
        loss = pg.ag_add(
            pg.ag_sum(pg.ag_mul(pg.ag_transpose(t), pg.ag_tensor(a, dtype=dtype))),
            pg.ag_sum(pg.ag_mul(pg.ag_transpose(t), pg.ag_tensor(b, dtype=dtype))),
        )
        tt = pg.ag_transpose(t)
    dt = np.float32 if dtype == "f32" else np.float64
    np.testing.assert_array_equal(tt.numpy(), x.astype(dt).T)
    g = pg.backward(loss)[t]
    ref = a.astype(dt).T + b.astype(dt).T  # each gradient is a transposed copy; one addition each
    np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize(
    "shape,new",
    [((2, 6), (3, 4)), ((2, 6), (-1, 2)), ((2, 6), (4, -1)), ((3, 4), (12, 1)), ((1, 6), (6, -1))],
)
def test_reshape(rng, shape, new):
    x = R(rng, *shape)
    out = pg.ag_reshape(pg.ag_tensor(x, dtype="f64"), *new)
    nr, nc = new
    nr = x.size // nc if nr == -1 else nr
    nc = x.size // nr if nc == -1 else nc
    np.testing.assert_array_equal(out.numpy(), x.reshape(nr, nc, order="F"))  # column-major refill
    gradcheck(lambda t: project(pg.ag_reshape(t, *new)), x)


def test_reshape_tuple_form():
    x = pg.ag_tensor(np.arange(6.0), dtype="f64")
    np.testing.assert_array_equal(
        pg.ag_reshape(x, (2, 3)).numpy(), np.arange(6.0).reshape(2, 3, order="F")
    )


# ---- losses ----


def _onehot(ids, k):
    t = np.zeros((k, len(ids)))
    t[ids, np.arange(len(ids))] = 1
    return t


@pytest.mark.parametrize("shape", SHAPES + [(5, 2)])
def test_mse_loss(rng, shape):
    p, t = R(rng, *shape), R(rng, *shape)
    out = pg.ag_mse_loss(pg.ag_tensor(p, dtype="f64"), pg.ag_tensor(t, dtype="f64"))
    np.testing.assert_allclose(out.item(), np.mean((p - t) ** 2), rtol=1e-14)
    gradcheck(lambda a, b: pg.ag_mse_loss(a, b), p, t, const=(1,))
    gradcheck(lambda a: pg.ag_mse_loss(a, t), p)  # numpy target


def test_mse_exact_fit_and_spec10_grad():
    W = pg.ag_param(np.eye(2), dtype="f64")
    x = pg.ag_tensor([2.0, 3.0], dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_matmul(W, x), np.zeros((2, 1)))
    g = pg.backward(loss)
    np.testing.assert_allclose(g[W], [[4, 6], [6, 9]], atol=1e-12)
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_matmul(W, x), np.array([[2.0], [3.0]]))
    assert loss.item() < 1e-10
    assert np.abs(pg.backward(loss)[W]).max() < 1e-10


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (3, 4), (4, 2)])
def test_cross_entropy_loss(rng, shape):
    k, b = shape
    p = np_softmax(R(rng, k, b)) if k > 1 else R(rng, 1, b, lo=0.2, hi=0.8)
    t = _onehot(rng.integers(0, k, b), k) * 0.7 + 0.1  # soft labels
    out = pg.ag_cross_entropy_loss(pg.ag_tensor(p, dtype="f64"), pg.ag_tensor(t, dtype="f64"))
    np.testing.assert_allclose(out.item(), -np.sum(t * np.log(p)) / b, rtol=1e-14)
    gradcheck(lambda a: pg.ag_cross_entropy_loss(a, t), p)
    gradcheck(lambda x: pg.ag_cross_entropy_loss(pg.ag_softmax(x), t), R(rng, k, b))


def test_cross_entropy_clamps_probabilities():
    out = pg.ag_cross_entropy_loss(
        pg.ag_tensor([[0.0], [1.0]], dtype="f64"), pg.ag_tensor([[1.0], [0.0]], dtype="f64")
    )
    np.testing.assert_allclose(out.item(), -math.log(1e-7), rtol=1e-12)


@pytest.mark.parametrize("k,b", [(2, 1), (3, 4), (5, 3), (8, 2)])
def test_softmax_ce_onehot_and_ids(rng, k, b):
    z = R(rng, k, b, lo=-3, hi=3)
    ids = rng.integers(0, k, b)
    oh = _onehot(ids, k)
    expect = -np.sum(oh * np.log(np_softmax(z))) / b
    out = pg.ag_softmax_cross_entropy_loss(
        pg.ag_tensor(z, dtype="f64"), pg.ag_tensor(oh, dtype="f64")
    )
    np.testing.assert_allclose(out.item(), expect, rtol=1e-13)
    _, g1 = gradcheck(lambda a, t: pg.ag_softmax_cross_entropy_loss(a, t), z, oh, const=(1,))
    # 0-based integer ids: numpy int vector, [1, b] row, list, Tensor row
    for target in (ids, ids.reshape(1, -1), list(ids), ids.astype(np.int32)):
        _, g2 = gradcheck(lambda a, t=target: pg.ag_softmax_cross_entropy_loss(a, t), z)
        zt = pg.ag_tensor(z, dtype="f64")
        np.testing.assert_allclose(
            pg.ag_softmax_cross_entropy_loss(zt, target).item(), expect, rtol=1e-13
        )
    tid = pg.ag_tensor(ids.reshape(1, -1).astype(np.float64), dtype="f64")
    np.testing.assert_allclose(
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), tid).item(),
        expect,
        rtol=1e-13,
    )


def test_softmax_ce_integer_onehot_matrix_is_onehot():
    # ggmlR misreads an integer-typed one-hot matrix as ids (spec 11.5); a [K, B] matrix is one-hot here
    z = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.3]])
    oh = np.array([[1, 0], [0, 0], [0, 1]], dtype=np.int64)
    a = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), oh).item()
    b = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), np.array([0, 2])).item()
    assert a == pytest.approx(b, rel=1e-14)


def test_softmax_ce_spec10_values():
    u = pg.ag_tensor(np.zeros((8, 3)), dtype="f64")
    assert pg.ag_softmax_cross_entropy_loss(u, np.array([0, 3, 7])).item() == pytest.approx(
        math.log(8), rel=1e-12
    )
    conf = np.full((3, 2), -10.0)
    conf[1, 0] = conf[2, 1] = 10.0
    loss = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(conf, dtype="f64"), np.array([1, 2]))
    assert 0 < loss.item() < 0.01 and loss.shape == (1, 1)
    z = np.random.default_rng(0).normal(size=(4, 5))
    ids = np.array([0, 3, 1, 1, 2])
    a = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), ids).item()
    b = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), _onehot(ids, 4)).item()
    assert a == pytest.approx(b, abs=1e-15)
    # single integer target
    gradcheck(lambda t: pg.ag_softmax_cross_entropy_loss(t, [2]), z[:, :1])


def test_softmax_ce_stable_for_huge_logits():
    z = pg.ag_tensor([[1000.0], [-1000.0]], dtype="f64")
    assert pg.ag_softmax_cross_entropy_loss(z, [0]).item() == 0.0
    big = pg.ag_softmax_cross_entropy_loss(z, [1]).item()
    assert big == 2000.0  # the exact log-sum-exp, not ggmlR's cap -log(1e-7) (issue 28)
