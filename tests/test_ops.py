"""Every op and loss: forward values against numpy, backward against central finite differences
(f64), the golden values of spec section 13, spec section 10's forward checks, f32 variants and
the Python operators."""
import math

import numpy as np
import pytest

import pyggmlr as pg
from _fd import numeric_grad



# ---- helpers ----

def gradcheck(fn, *arrays, atol=1e-6, rtol=1e-5, const=()):
    """Build f64 params from arrays (indices in `const` become constants), compare backward's map
    and .grad with finite differences for every param. Returns the params and the map."""
    inputs = [pg.ag_tensor(a, dtype="f64") if i in const else pg.ag_param(a, dtype="f64")
              for i, a in enumerate(arrays)]
    with pg.with_grad_tape():
        loss = fn(*inputs)
    assert loss.shape == (1, 1)
    grads = pg.backward(loss)
    for i, t in enumerate(inputs):
        if i in const:
            assert t not in grads
            continue
        num = numeric_grad(lambda: fn(*inputs), inputs[i])
        assert grads[t].shape == t.shape
        np.testing.assert_allclose(grads[t], num, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i}")
        np.testing.assert_array_equal(t.grad, grads[t])  # .grad written once = the map
    return inputs, grads


def project(out, seed=7):
    """Scalar with a random weight per output element, so every gradient entry is exercised."""
    r = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape)
    return pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(r, dtype=out.dtype)))


def R(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


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
    np.testing.assert_allclose(pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")).numpy(),
                               A @ B, rtol=1e-12, atol=1e-12)


# ---- broadcasting binary ops ----

BIN = {
    "add": (pg.ag_add, np.add),
    "sub": (pg.ag_sub, np.subtract),
    "mul": (pg.ag_mul, np.multiply),
    "div": (pg.ag_div, np.divide),
}
BCAST = [((3, 4), (3, 4)), ((3, 4), (3, 1)), ((3, 4), (1, 4)), ((3, 4), (1, 1)),
         ((3, 1), (3, 4)), ((1, 4), (3, 4)), ((1, 1), (3, 4)), ((3, 1), (1, 4)), ((1, 4), (3, 1))]


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
    np.testing.assert_array_equal(pg.ag_sub(x, pg.ag_tensor(np.ones((1, 2)), dtype="f64")).numpy(),
                                  np.array([[0.0, 1, 2], [3, 4, 5]]).T)
    s = pg.ag_sub(x, pg.ag_tensor([[1.0, 2.0]], dtype="f64"))
    np.testing.assert_array_equal(s.numpy().ravel(order="F"), [0, 1, 2, 2, 3, 4])
    m1 = pg.ag_mul(x, pg.ag_tensor([[2.0, 3.0]], dtype="f64"))
    np.testing.assert_array_equal(m1.numpy().ravel(order="F"), [2, 4, 6, 12, 15, 18])
    m2 = pg.ag_mul(x, pg.ag_tensor([10.0, 20.0, 30.0], dtype="f64"))
    np.testing.assert_array_equal(m2.numpy().ravel(order="F"), [10, 40, 90, 40, 100, 180])


# ---- unary and scalar ops ----

def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _softmax(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


UNARY = {
    "relu": (pg.ag_relu, lambda x: np.maximum(x, 0)),
    "sigmoid": (pg.ag_sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (pg.ag_tanh, np.tanh),
    "gelu": (pg.ag_gelu, _gelu),
    "softmax": (pg.ag_softmax, _softmax),
    "log": (pg.ag_log, np.log),
    "exp": (pg.ag_exp, np.exp),
    "neg": (pg.ag_neg, np.negative),
    "scale": (lambda x: pg.ag_scale(x, -2.5), lambda x: -2.5 * x),
    "pow2": (lambda x: pg.ag_pow(x, 2), lambda x: x ** 2),
    "pow_half": (lambda x: pg.ag_pow(x, 0.5), np.sqrt),
    "pow3": (lambda x: pg.ag_pow(x, 3), lambda x: x ** 3),
    "pow_neg": (lambda x: pg.ag_pow(x, -1.5), lambda x: x ** -1.5),
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
    np.testing.assert_allclose(op(pg.ag_tensor(x, dtype="f64")).numpy(), ref(x), rtol=1e-13, atol=1e-15)
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
    gradcheck(lambda t: project(pg.ag_clamp(t, -1, 2)), np.array([[-0.5, 0.3, 1.9], [1.2, -0.9, 0.0]]))


def test_spec10_forward_values():
    x = pg.ag_tensor([1.0, 2.0, 3.0, 4.0], dtype="f64")
    assert pg.ag_mean(x).item() == 2.5
    np.testing.assert_array_equal(pg.ag_clamp(pg.ag_tensor([-2.0, 0.0, 3.0], dtype="f64"), -1, 2).numpy()[:, 0], [-1, 0, 2])
    np.testing.assert_array_equal(pg.ag_pow(pg.ag_tensor([2.0, 3.0, 4.0], dtype="f64"), 2).numpy()[:, 0], [4, 9, 16])
    np.testing.assert_allclose(pg.ag_log(pg.ag_exp(pg.ag_tensor([0.5, -1.0], dtype="f64"))).numpy()[:, 0], [0.5, -1.0], rtol=1e-15)
    assert pg.ag_scale(pg.ag_tensor([[4.0]], dtype="f64"), 0.5).item() == 2.0
    p = pg.ag_softmax(pg.ag_tensor(np.random.default_rng(3).normal(size=(5, 7)), dtype="f64")).numpy()
    np.testing.assert_allclose(p.sum(axis=0), 1, atol=1e-12)
    assert np.all(p > 0)
    np.testing.assert_array_equal(pg.ag_sigmoid(pg.ag_tensor([[0.0]])).numpy(), [[0.5]])


def test_softmax_is_stable_for_large_logits():
    x = np.array([[1000.0, -1000.0], [1001.0, -999.0], [999.0, -1001.0]])
    np.testing.assert_allclose(pg.ag_softmax(pg.ag_tensor(x, dtype="f64")).numpy(), _softmax(x), rtol=1e-14)


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
        loss = pg.ag_add(pg.ag_sum(pg.ag_mul(pg.ag_transpose(t), pg.ag_tensor(a, dtype=dtype))),
                         pg.ag_sum(pg.ag_mul(pg.ag_transpose(t), pg.ag_tensor(b, dtype=dtype))))
        tt = pg.ag_transpose(t)
    dt = np.float32 if dtype == "f32" else np.float64
    np.testing.assert_array_equal(tt.numpy(), x.astype(dt).T)
    g = pg.backward(loss)[t]
    ref = a.astype(dt).T + b.astype(dt).T  # each gradient is a transposed copy; one addition each
    np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("shape,new", [((2, 6), (3, 4)), ((2, 6), (-1, 2)), ((2, 6), (4, -1)),
                                       ((3, 4), (12, 1)), ((1, 6), (6, -1))])
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
    np.testing.assert_array_equal(pg.ag_reshape(x, (2, 3)).numpy(), np.arange(6.0).reshape(2, 3, order="F"))


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
    p = _softmax(R(rng, k, b)) if k > 1 else R(rng, 1, b, lo=0.2, hi=0.8)
    t = _onehot(rng.integers(0, k, b), k) * 0.7 + 0.1  # soft labels
    out = pg.ag_cross_entropy_loss(pg.ag_tensor(p, dtype="f64"), pg.ag_tensor(t, dtype="f64"))
    np.testing.assert_allclose(out.item(), -np.sum(t * np.log(p)) / b, rtol=1e-14)
    gradcheck(lambda a: pg.ag_cross_entropy_loss(a, t), p)
    gradcheck(lambda x: pg.ag_cross_entropy_loss(pg.ag_softmax(x), t), R(rng, k, b))


def test_cross_entropy_clamps_probabilities():
    out = pg.ag_cross_entropy_loss(pg.ag_tensor([[0.0], [1.0]], dtype="f64"), pg.ag_tensor([[1.0], [0.0]], dtype="f64"))
    np.testing.assert_allclose(out.item(), -math.log(1e-7), rtol=1e-12)


@pytest.mark.parametrize("k,b", [(2, 1), (3, 4), (5, 3), (8, 2)])
def test_softmax_ce_onehot_and_ids(rng, k, b):
    z = R(rng, k, b, lo=-3, hi=3)
    ids = rng.integers(0, k, b)
    oh = _onehot(ids, k)
    expect = -np.sum(oh * np.log(_softmax(z))) / b
    out = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), pg.ag_tensor(oh, dtype="f64"))
    np.testing.assert_allclose(out.item(), expect, rtol=1e-13)
    _, g1 = gradcheck(lambda a, t: pg.ag_softmax_cross_entropy_loss(a, t), z, oh, const=(1,))
    # 0-based integer ids: numpy int vector, [1, b] row, list, Tensor row
    for target in (ids, ids.reshape(1, -1), list(ids), ids.astype(np.int32)):
        _, g2 = gradcheck(lambda a: pg.ag_softmax_cross_entropy_loss(a, target), z)
        zt = pg.ag_tensor(z, dtype="f64")
        np.testing.assert_allclose(pg.ag_softmax_cross_entropy_loss(zt, target).item(), expect, rtol=1e-13)
    tid = pg.ag_tensor(ids.reshape(1, -1).astype(np.float64), dtype="f64")
    np.testing.assert_allclose(pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), tid).item(), expect, rtol=1e-13)


def test_softmax_ce_integer_onehot_matrix_is_onehot():
    # ggmlR misreads an integer-typed one-hot matrix as ids (spec 11.5); a [K, B] matrix is one-hot here
    z = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 0.3]])
    oh = np.array([[1, 0], [0, 0], [0, 1]], dtype=np.int64)
    a = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), oh).item()
    b = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), np.array([0, 2])).item()
    assert a == pytest.approx(b, rel=1e-14)


def test_softmax_ce_spec10_values():
    u = pg.ag_tensor(np.zeros((8, 3)), dtype="f64")
    assert pg.ag_softmax_cross_entropy_loss(u, np.array([0, 3, 7])).item() == pytest.approx(math.log(8), rel=1e-12)
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
    assert math.isfinite(big) and big == pytest.approx(-math.log(1e-7))


# ---- spec 13 golden values ----

W0 = np.array([0.5, -0.3, 0.2, 0.8, -0.1, 0.4]).reshape(2, 3, order="F")
B0 = np.array([[0.1], [-0.2]])
X0 = np.array([1.0, 2, 3, -1, 0, 1]).reshape(3, 2, order="F")
Y0 = np.array([1.0, 0, 0, 1]).reshape(2, 2, order="F")


def test_spec13_softmax_ce_golden(f64):
    W, b = pg.ag_param(W0), pg.ag_param(B0)
    with pg.with_grad_tape():
        z = pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)
        loss = pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor(Y0))
    np.testing.assert_allclose(z.numpy(), [[0.7, -0.5], [2.3, 0.5]], atol=1e-14)
    assert abs(loss.item() - 1.048581214203) < 1e-10
    g = pg.backward(loss)
    dW = [[-0.550479903252, -0.832018385134, -1.11355686702], [0.550479903252, 0.832018385134, 1.11355686702]]
    np.testing.assert_allclose(g[W], dW, atol=1e-10, rtol=0)
    np.testing.assert_allclose(g[b][:, 0], [-0.281538481882, 0.281538481882], atol=1e-10, rtol=0)
    np.testing.assert_array_equal(W.grad, g[W])


def test_spec13_mse_sigmoid_golden(f64):
    W, b = pg.ag_param(W0), pg.ag_param(B0)
    with pg.with_grad_tape():
        z = pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)
        loss = pg.ag_mse_loss(pg.ag_sigmoid(z), pg.ag_tensor(Y0))
    assert abs(loss.item() - 0.305307684932) < 1e-10
    dW = [[-0.0811452505505, -0.0735670424264, -0.0659888343023], [0.0819981307456, 0.0752728028166, 0.0685474748875]]
    np.testing.assert_allclose(pg.backward(loss)[W], dW, atol=1e-10, rtol=0)


# ---- a tensor used twice (spec 13 bug reproductions: we give the TRUE gradient) ----

def test_w_in_two_matmuls_true_gradient(f64):
    W = pg.ag_param(np.array([[1.0, 3.0], [2.0, 4.0]]))  # matrix(1:4, 2, 2)
    x = pg.ag_tensor([1.0, 1.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_matmul(W, pg.ag_matmul(W, x)))
    g = pg.backward(loss)
    np.testing.assert_array_equal(g[W], [[7, 9], [11, 13]])
    np.testing.assert_array_equal(W.grad, [[7, 9], [11, 13]])
    g2 = pg.backward(loss)
    np.testing.assert_array_equal(g2[W], [[7, 9], [11, 13]])
    np.testing.assert_array_equal(W.grad, [[14, 18], [22, 26]])  # .grad accumulates like PyTorch
    np.testing.assert_array_equal(g[W], [[7, 9], [11, 13]])  # an earlier map never changes
    gradcheck(lambda w: pg.ag_sum(pg.ag_matmul(w, pg.ag_matmul(w, x))), np.array([[1.0, 3.0], [2.0, 4.0]]))


def test_mul_same_tensor_twice(f64):
    A = pg.ag_param([1.0, 2.0, 3.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(A, A))
    g = pg.backward(loss)
    np.testing.assert_array_equal(g[A][:, 0], [2, 4, 6])
    np.testing.assert_array_equal(A.grad[:, 0], [2, 4, 6])
    for op in (pg.ag_add, pg.ag_sub, pg.ag_div, pg.ag_matmul):
        x = np.array([[1.5, 0.5], [0.7, 2.0]])
        gradcheck(lambda a: project(op(a, a)), x)


def test_intermediates_get_grad_once_and_are_in_map(f64):
    W = pg.ag_param([[1.0, 2.0]])
    with pg.with_grad_tape():
        h = pg.ag_scale(W, 2.0)
        loss = pg.ag_sum(h)
    g = pg.backward(loss)
    assert h in g and loss in g
    np.testing.assert_array_equal(g[loss], [[1.0]])
    np.testing.assert_array_equal(h.grad, [[1.0, 1.0]])  # ggmlR 0.8.5+: a node's input gets .grad
    assert loss.grad is None  # the loss feeds no node


# ---- chains through several ops ----

def test_mlp_chain_gradcheck(rng):
    x, y = R(rng, 3, 5), rng.integers(0, 2, 5)
    W1, b1, W2, b2 = R(rng, 4, 3), R(rng, 4, 1), R(rng, 2, 4), R(rng, 2, 1)

    def f(W1, b1, W2, b2):
        h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(W1, x), b1))
        return pg.ag_softmax_cross_entropy_loss(pg.ag_add(pg.ag_matmul(W2, h), b2), y)

    gradcheck(f, W1, b1, W2, b2)


def test_everything_chain_gradcheck(rng):
    def f(a, b):
        h = pg.ag_div(pg.ag_exp(pg.ag_scale(a, 0.3)), pg.ag_add(pg.ag_pow(b, 2), 1.0))
        h = pg.ag_gelu(pg.ag_sub(pg.ag_reshape(pg.ag_transpose(h), 2, -1), pg.ag_mean(a)))
        return pg.ag_mean(pg.ag_log(pg.ag_add(pg.ag_sigmoid(h), pg.ag_clamp(h, -5, 5))), dim=None)

    gradcheck(f, R(rng, 3, 4, lo=0.1, hi=1), R(rng, 1, 4))


# ---- f32 ----

def test_f32_ops_compute_in_f32(rng):
    A, B = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32)
    a, b = pg.ag_tensor(A), pg.ag_tensor(B)
    out = pg.ag_matmul(a, b)
    assert out.dtype == "f32" and out.numpy().dtype == np.float32
    np.testing.assert_allclose(out.numpy(), A @ B, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pg.ag_sigmoid(a).numpy(), 1 / (1 + np.exp(-A)), rtol=1e-6)
    np.testing.assert_allclose(pg.ag_softmax(a).numpy(), _softmax(A.astype(np.float64)), rtol=1e-6)
    s = pg.ag_add(a, pg.ag_tensor(np.ones((4, 1), np.float32)))
    assert s.dtype == "f32"
    np.testing.assert_array_equal(s.numpy(), A + np.float32(1))  # exactly f32 arithmetic


def test_f32_golden_and_gradients():
    W, b = pg.ag_param(W0), pg.ag_param(B0)
    with pg.with_grad_tape():
        z = pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)
        loss = pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor(Y0))
    assert loss.dtype == "f32"
    assert abs(loss.item() - 1.048581214203) < 1e-6
    g = pg.backward(loss)
    assert g[W].dtype == np.float32 and W.grad.dtype == np.float32
    np.testing.assert_allclose(g[W], [[-0.550479903252, -0.832018385134, -1.11355686702],
                                      [0.550479903252, 0.832018385134, 1.11355686702]], atol=1e-6)
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(pg.ag_sigmoid(pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)), pg.ag_tensor(Y0))
    assert abs(loss.item() - 0.305307684932) < 1e-6


def test_f32_matches_f64_gradients(rng):
    x = R(rng, 3, 4)
    grads = {}
    for dt in ("f32", "f64"):
        w = pg.ag_param(x, dtype=dt)
        with pg.with_grad_tape():
            loss = pg.ag_mean(pg.ag_tanh(pg.ag_mul(w, w)))
        grads[dt] = pg.backward(loss)[w]
    np.testing.assert_allclose(grads["f32"], grads["f64"], rtol=1e-5, atol=1e-7)


def test_f32_sum_is_accurate():
    x = np.full((1000, 100), 0.1, dtype=np.float32)
    assert pg.ag_sum(pg.ag_tensor(x)).item() == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-6)


def _lane_sum(v):
    # the core's order: 16 interleaved lanes in double, then added pairwise (8, 4, 2, 1)
    a = [0.0] * 16
    for i, x in enumerate(np.asarray(v, dtype=np.float64)):
        a[i % 16] += float(x)
    w = 8
    while w >= 1:
        for lane in range(w):
            a[lane] += a[lane + w]
        w //= 2
    return a[0]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 47, 300])
def test_sum_order_is_fixed_lanes(rng, dtype, n):
    # whole sums and column sums follow one documented order: bit-exact against it, and close
    # to the exactly rounded sum
    dt = np.float32 if dtype == "f32" else np.float64
    x = (rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-4, 5, size=(n, 3))).astype(dt)
    t = pg.ag_tensor(x, dtype=dtype)
    assert pg.ag_sum(t).item() == dt(_lane_sum(x.ravel(order="F")))
    cols = pg.ag_sum(t, 2).numpy()[0]
    for j in range(3):
        assert cols[j] == dt(_lane_sum(x[:, j]))
        assert cols[j] == pytest.approx(math.fsum(map(float, x[:, j])), rel=1e-12 if dtype == "f64" else 1e-6)
    assert pg.ag_mean(t).item() == dt(_lane_sum(x.ravel(order="F")) / (3 * n))


def _c_pow(x, p):
    # C99 pow: pow(-inf, 0.5) = +inf, pow(-0, 0.5) = +0, pow(+-0, -1) = +-inf (Python raises there)
    if x == 0 and p < 0:
        return math.copysign(math.inf, x) if p == int(p) and int(p) % 2 else math.inf
    try:
        return math.pow(x, p)
    except ValueError:
        return math.nan


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pow_fast_powers_match_pow(dtype):
    # p = 2, 1, -1, 0.5 skip libm's pow: same values as pow, signs of zero and infinities too
    dt = np.float32 if dtype == "f32" else np.float64
    x = np.array([[-np.inf, -2.5, -1.0, -0.0, 0.0, 1e-30, 0.3, 1.0, 7.0, 1e30, np.inf, np.nan]], dtype=dt)
    for p in (2, 1, -1, 0.5):
        got = pg.ag_pow(pg.ag_tensor(x, dtype=dtype), p).numpy()
        with np.errstate(over="ignore"):  # 1e30 ** 2 is inf in f32, as in C
            ref = np.array([[_c_pow(float(v), p) for v in x[0]]], dtype=dt)  # C's pow, not numpy's
        np.testing.assert_array_equal(got, ref)
        num = ~np.isnan(ref)  # a NaN's sign means nothing
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(ref[num]))
    w = pg.ag_param(np.array([[-3.0, 0.5, 2.0]]), dtype=dtype)
    for p, ref in ((2, [-6.0, 1.0, 4.0]), (1, [1.0, 1.0, 1.0])):
        with pg.with_grad_tape():
            loss = pg.ag_sum(pg.ag_pow(w, p))
        np.testing.assert_array_equal(pg.backward(loss)[w][0], ref)


# ---- Python operators ----

def test_python_operators(f64, rng):
    A, B = R(rng, 2, 3), R(rng, 2, 3, lo=0.5, hi=2)
    a, b = pg.ag_param(A), pg.ag_tensor(B)
    np.testing.assert_allclose((a + b).numpy(), A + B)
    np.testing.assert_allclose((a - b).numpy(), A - B)
    np.testing.assert_allclose((a * b).numpy(), A * B)
    np.testing.assert_allclose((a / b).numpy(), A / B)
    np.testing.assert_allclose((-a).numpy(), -A)
    np.testing.assert_allclose((a * 3).numpy(), A * 3)
    np.testing.assert_allclose((3 * a).numpy(), A * 3)
    np.testing.assert_allclose((a + 1).numpy(), A + 1)
    np.testing.assert_allclose((1 + a).numpy(), A + 1)
    np.testing.assert_allclose((1 - a).numpy(), 1 - A)
    np.testing.assert_allclose((a - 1).numpy(), A - 1)
    np.testing.assert_allclose((2 / b).numpy(), 2 / B)
    np.testing.assert_allclose((a ** 2).numpy(), A ** 2)
    M = R(rng, 3, 4)
    np.testing.assert_allclose((a @ pg.ag_tensor(M)).numpy(), A @ M)
    np.testing.assert_allclose((a @ M).numpy(), A @ M)
    np.testing.assert_allclose(a.T.numpy(), A.T)


def test_reflected_operators_with_numpy_lhs(f64, rng):
    A = R(rng, 2, 3)
    a = pg.ag_param(A)
    C = R(rng, 2, 3)
    # numpy on the left must defer to the tensor's reflected methods, not broadcast elementwise
    for expr, ref in ((lambda: C + a, C + A), (lambda: C - a, C - A), (lambda: C * a, C * A),
                      (lambda: C / a, C / A)):
        r = expr()
        assert isinstance(r, pg.Tensor), type(r)
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-14)
    M = R(rng, 4, 2)
    r = M @ a
    assert isinstance(r, pg.Tensor)
    np.testing.assert_allclose(r.numpy(), M @ A)


def test_operator_gradients(rng):
    x = R(rng, 2, 2, lo=0.5, hi=1.5)
    gradcheck(lambda a: pg.ag_sum((1 - a) * a / (a + 2) - (-a) @ a + 3 * a ** 2), x)


def test_pow_zero_exponent_grad_is_zero_at_zero(f64):
    x = pg.ag_param([0.0, 2.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(x, 0))
    np.testing.assert_array_equal(loss.item(), 2.0)
    np.testing.assert_array_equal(pg.backward(loss)[x][:, 0], [0.0, 0.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(x, 1))
    np.testing.assert_array_equal(pg.backward(loss)[x][:, 0], [1.0, 1.0])


# ---- the built-in GEMM kernel (used where no BLAS is available) ----

GEMM_KERNELS = {0: "portable", 1: "AVX2+FMA", 2: "AVX-512F"}


def _select_kernel(which):
    from pyggmlr._native import lib
    return lib.pg_gemm_kernel_select(which)


# every test below runs on each micro-kernel of the built-in GEMM: portable, AVX2 (16x6 / 8x6 tiles)
# and AVX-512 (32x6 / 16x6); a kernel this CPU cannot run is skipped (saying so), never replaced
@pytest.fixture(params=sorted(GEMM_KERNELS), ids=["portable", "avx2", "avx512"])
def builtin_gemm(request):
    prev = pg.blas_name()
    pg.use_blas("builtin")
    got = _select_kernel(request.param)
    try:
        if got != request.param:
            pytest.skip(f"this CPU lacks {GEMM_KERNELS[request.param]}: the built-in GEMM's "
                        f"{GEMM_KERNELS[request.param]} kernel cannot run here (it has {GEMM_KERNELS[got]})")
        yield request.param
    finally:
        _select_kernel(-1)
        if prev != "builtin":
            pg.use_blas("openblas")


# A single column (1x1x1, 129x300x1: matrix-vector) runs the plain loops; the rest the kernel's
# direct path (operands up to about 4 MiB) or its packed blocked path (300x900x400 in f64): sizes
# ragged against the tiles (32x6 / 16x6 / 8x6 / 4x6), larger than the blocks (MC 128 / 64, KC 256:
# several k blocks add up in C), more columns than NC (3072). test_builtin_gemm_paths_give_identical_bits
# runs both paths on each shape.
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 2), (7, 4, 9), (64, 33, 17), (17, 33, 9), (100, 3, 257),
                                   (300, 900, 400), (7, 5, 3100), (129, 300, 1)])
def test_builtin_gemm_forward_and_grad(builtin_gemm, rng, m, k, n):
    assert pg.blas_name() == "builtin"
    A, B = R(rng, m, k), R(rng, k, n)
    np.testing.assert_allclose(pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")).numpy(),
                               A @ B, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(pg.ag_matmul(pg.ag_tensor(A), pg.ag_tensor(B)).numpy(), A @ B, rtol=1e-4,
                               atol=2e-6 * math.sqrt(k))
    if m * k * n <= 200:
        gradcheck(lambda a, b: project(pg.ag_matmul(a, b)), A, B)
    else:  # large: compare backward with numpy's dA = G B^T, dB = A^T G (G = projection weights)
        a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
        G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n))
        with pg.with_grad_tape():
            loss = project(pg.ag_matmul(a, b))
        g = pg.backward(loss)
        np.testing.assert_allclose(g[a], G @ B.T, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[b], A.T @ G, rtol=1e-12, atol=1e-12)


def test_builtin_gemm_ignores_nan_in_fresh_output(builtin_gemm):
    # beta = 0 must overwrite (not scale) the output buffer, whatever garbage it holds
    for _ in range(3):
        out = pg.ag_matmul(pg.ag_tensor(np.ones((3, 2)), dtype="f64"), pg.ag_tensor(np.ones((2, 4)), dtype="f64"))
        np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 2.0))


def test_builtin_gemm_overwrites_garbage_in_blocked_output(builtin_gemm, rng):
    # the blocked kernel with beta = 0: NaN left in a recycled buffer of the output's size must not leak
    A, B = R(rng, 40, 50), R(rng, 50, 30)
    for dt in ("f64", "f32"):
        for _ in range(3):
            junk = pg.ag_tensor(np.full((40, 30), np.nan), dtype=dt)
            del junk
            out = pg.ag_matmul(pg.ag_tensor(A, dtype=dt), pg.ag_tensor(B, dtype=dt)).numpy()
            assert np.isfinite(out).all()
            np.testing.assert_allclose(out, A @ B, rtol=1e-4 if dt == "f32" else 1e-12, atol=1e-5 if dt == "f32" else 0)


def _op(X, t):
    return X.T if t else X


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 9), (100, 3, 257), (150, 300, 70)])
def test_builtin_gemm_transposes_forward_and_grad(builtin_gemm, rng, ta, tb, m, k, n):
    # matmul_t reaches pg_gemm with every (ta, tb) and alpha != 1 forward; its backward runs the
    # transposed products dA = al G op(B)^T, dB = al op(A)^T G in their four layouts as well
    from pyggmlr.nn import _matmul_t
    al = -0.75
    A = R(rng, k, m) if ta else R(rng, m, k)
    B = R(rng, n, k) if tb else R(rng, k, n)
    want = al * _op(A, ta) @ _op(B, tb)
    out32 = _matmul_t(pg.ag_tensor(A), pg.ag_tensor(B), ta=ta, tb=tb, alpha=al).numpy()
    np.testing.assert_allclose(out32, want, rtol=1e-4, atol=2e-6 * math.sqrt(k))
    a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
    with pg.with_grad_tape():
        out = _matmul_t(a, b, ta=ta, tb=tb, alpha=al)
        loss = project(out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-13)
    g = pg.backward(loss)
    G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n))
    d_opa, d_opb = al * G @ _op(B, tb).T, al * _op(A, ta).T @ G
    np.testing.assert_allclose(g[a], _op(d_opa, ta), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g[b], _op(d_opb, tb), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_accumulates_gradients_of_reused_tensors(builtin_gemm, rng, dt):
    # W used twice (dW = G1 x1^T + G2 x2^T) and x used twice (dx = W^T G1 + V^T G3): the second
    # product into each gradient slot runs with beta = 1
    W, V, x, x2 = R(rng, 70, 300), R(rng, 20, 300), R(rng, 300, 40), R(rng, 300, 25)
    w, v, xs = pg.ag_param(W, dtype=dt), pg.ag_param(V, dtype=dt), pg.ag_param(x, dtype=dt)
    with pg.with_grad_tape():
        loss = pg.ag_add(pg.ag_add(project(pg.ag_matmul(w, xs), 7),
                                   project(pg.ag_matmul(w, pg.ag_tensor(x2, dtype=dt)), 8)),
                         project(pg.ag_matmul(v, xs), 9))
    g = pg.backward(loss)
    G1, G2, G3 = (np.random.default_rng(s).uniform(0.5, 1.5, sh) for s, sh in ((7, (70, 40)), (8, (70, 25)), (9, (20, 40))))
    tol = dict(rtol=1e-12, atol=1e-12) if dt == "f64" else dict(rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(g[w], G1 @ x.T + G2 @ x2.T, **tol)
    np.testing.assert_allclose(g[xs], W.T @ G1 + V.T @ G3, **tol)
    np.testing.assert_allclose(g[v], G3 @ x.T, **tol)


def _bits(arr):
    return arr.view(np.uint32 if arr.dtype == np.float32 else np.uint64)


def _select_path(which):
    from pyggmlr._native import lib
    return lib.pg_gemm_path_select(which)


# the small and thin products of small MLPs (forward m x k x n and their backward products), and
# every m from 1 to 17 (ragged rows against 2, 4, 8 and 16 lanes; 1 to 2 vectors per tile)
SMALL_GEMMS = [(64, 4, 32), (32, 64, 32), (3, 32, 32), (64, 32, 32), (10, 128, 64), (10, 128, 256), (64, 64, 64),
               (128, 64, 64), (64, 32, 4), (4, 64, 32), (32, 3, 32), (10, 64, 128), (128, 10, 64), (2, 2, 2),
               (5, 300, 7)] + [(m, 33, 19) for m in range(1, 18)]


def _gemm_operands(rng, m, k, n, ta, tb):
    return (R(rng, k, m) if ta else R(rng, m, k)), (R(rng, n, k) if tb else R(rng, k, n))


def _gemm_layouts(rng, shapes, dt, make=pg.ag_tensor):
    """Each m x k x n in the four layouts: (m, k, n, ta, tb, a, b), a and b tensors (`make`)
    of random operands stored transposed where ta / tb."""
    for m, k, n in shapes:
        for ta in (0, 1):
            for tb in (0, 1):
                A, B = _gemm_operands(rng, m, k, n, ta, tb)
                yield m, k, n, ta, tb, make(A, dtype=dt), make(B, dtype=dt)


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_builtin_gemm_small_and_thin_shapes(builtin_gemm, rng, ta, tb):
    # forward against numpy with alpha != 1, then accumulation into a used output (beta = 1: the
    # backward's gradient slots) through a tape, every layout, f64 and f32
    from pyggmlr.nn import _matmul_t
    al = -0.75
    for m, k, n in SMALL_GEMMS:
        A, B = _gemm_operands(rng, m, k, n, ta, tb)
        want = al * _op(A, ta) @ _op(B, tb)
        got = _matmul_t(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64"), ta=ta, tb=tb, alpha=al).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, err_msg=f"f64 {m}x{k}x{n}")
        got = _matmul_t(pg.ag_tensor(A), pg.ag_tensor(B), ta=ta, tb=tb, alpha=al).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * math.sqrt(k), err_msg=f"f32 {m}x{k}x{n}")
    for m, k, n in [(3, 32, 32), (10, 64, 128), (17, 33, 19)]:  # gradients: beta = 1 into a reused slot
        A, B = _gemm_operands(rng, m, k, n, ta, tb)
        a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
        with pg.with_grad_tape():
            loss = pg.ag_add(project(_matmul_t(a, b, ta=ta, tb=tb, alpha=al), 7),
                             project(_matmul_t(a, b, ta=ta, tb=tb, alpha=al), 8))
        g = pg.backward(loss)
        G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n)) + np.random.default_rng(8).uniform(0.5, 1.5, (m, n))
        np.testing.assert_allclose(g[a], _op(al * G @ _op(B, tb).T, ta), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[b], _op(al * _op(A, ta).T @ G, tb), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_paths_give_identical_bits(builtin_gemm, rng, dt):
    # the direct (unpacked) path and the packed blocked path sum every element in the same order
    # with the same operations: identical bits, whichever the size picks, in every layout, with
    # alpha != 1, k > KC (several k blocks) and n > NC (several B panels in the packed path)
    from pyggmlr.nn import _matmul_t
    shapes = SMALL_GEMMS[:14] + [(1, 33, 19), (9, 33, 19), (17, 33, 19), (70, 600, 45), (7, 5, 3100)]
    try:
        for m, k, n, ta, tb, a, b in _gemm_layouts(rng, shapes, dt):
            outs = []
            for path in (1, 0, -1):
                assert _select_path(path) == path
                outs.append(_bits(_matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75).numpy()))
            for o in outs[1:]:
                np.testing.assert_array_equal(o, outs[0], err_msg=f"{m}x{k}x{n} ta={ta} tb={tb}")
    finally:
        _select_path(-1)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_is_bit_reproducible(builtin_gemm, rng, dt):
    # every element sums its products in one fixed order (k blocks of KC, in increasing k), whatever
    # the run, the addresses (and so the alignment) of the inputs, the element's place in a tile or
    # block, or the layout the operands come in: packing absorbs it
    from pyggmlr.nn import _matmul_t
    A, B = R(rng, 150, 300), R(rng, 300, 70)
    ref = _bits(pg.ag_matmul(pg.ag_tensor(A, dtype=dt), pg.ag_tensor(B, dtype=dt)).numpy())
    for extra in (1, 3, 7):
        pad = [pg.ag_tensor(np.ones((extra, 1)), dtype=dt) for _ in range(extra)]  # shift later allocations
        got = pg.ag_matmul(pg.ag_tensor(A.copy(), dtype=dt), pg.ag_tensor(B.copy(), dtype=dt)).numpy()
        np.testing.assert_array_equal(_bits(got), ref)
        del pad
    sub = pg.ag_matmul(pg.ag_tensor(A[5:82], dtype=dt), pg.ag_tensor(B[:, 3:36], dtype=dt)).numpy()
    np.testing.assert_array_equal(_bits(sub), ref[5:82, 3:36])
    for ta in (0, 1):
        for tb in (0, 1):
            At, Bt = (A.T.copy() if ta else A), (B.T.copy() if tb else B)
            got = _matmul_t(pg.ag_tensor(At, dtype=dt), pg.ag_tensor(Bt, dtype=dt), ta=ta, tb=tb).numpy()
            np.testing.assert_array_equal(_bits(got), ref, err_msg=f"ta={ta} tb={tb}")


@pytest.fixture
def gemm_threads():
    # the thread count of the built-in GEMM (ag_set_threads) and its minimum work per thread;
    # both restored afterwards (one thread, the default minimum)
    from pyggmlr._native import lib
    try:
        yield lib
    finally:
        pg.ag_set_threads(1)
        lib.pg_gemm_thread_min_flops(-1)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_threads_give_identical_bits(builtin_gemm, gemm_threads, rng, dt):
    # ag_set_threads(n) splits a product over rows or columns of C, never over k: threads 1, 2, 3
    # and 4 give the same bits on shapes that take the direct path (small, thin m: vectors along
    # n, thin n) and the packed one (forced, and by size), every layout, alpha != 1, beta 0 and
    # 1 (accumulation through backward). The minimum work per thread is set to 0 so that even
    # the small shapes are split (the rows or columns permitting).
    from pyggmlr.nn import _matmul_t
    assert gemm_threads.pg_gemm_thread_min_flops(0) == 0
    shapes = [(64, 32, 4), (3, 32, 32), (10, 64, 128), (70, 600, 45), (7, 5, 310), (300, 40, 7), (150, 300, 70)]
    try:
        for path in (-1, 0):
            _select_path(path)
            for m, k, n, ta, tb, a, b in _gemm_layouts(rng, shapes, dt, make=pg.ag_param):
                outs = []
                for t in (1, 2, 3, 4):
                    pg.ag_set_threads(t)
                    with pg.with_grad_tape():  # b used twice: its gradient slot accumulates
                        out = _matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75)
                        loss = pg.ag_add(project(out, 7), project(_matmul_t(a, b, ta=ta, tb=tb), 8))
                    g = pg.backward(loss)
                    outs.append([_bits(out.numpy()), _bits(g[a]), _bits(g[b])])
                for t, o in zip((2, 3, 4), outs[1:]):
                    for x, x1 in zip(o, outs[0]):
                        np.testing.assert_array_equal(x, x1, err_msg=f"{m}x{k}x{n} ta={ta} tb={tb} "
                                                                     f"path={path} threads={t}")
        want = _op(a.numpy(), ta) @ _op(b.numpy(), tb)  # and the numbers are right
        np.testing.assert_allclose(_matmul_t(a, b, ta=ta, tb=tb).numpy(), want,
                                   rtol=1e-4 if dt == "f32" else 1e-12, atol=1e-3 if dt == "f32" else 1e-11)
    finally:
        _select_path(-1)


def test_builtin_gemm_threads_start_only_where_it_pays(builtin_gemm, gemm_threads, rng):
    # with the default minimum work per thread a small product stays on the calling thread (no
    # worker is started), a large one starts n - 1 workers, which stay for the next products;
    # fewer threads stop the extra workers, and one thread stops them all
    lib = gemm_threads
    pg.ag_set_threads(1)
    assert lib.pg_gemm_threads_live() == 0
    small = [pg.ag_tensor(R(rng, 64, 64), dtype="f64") for _ in range(2)]
    A, B = R(rng, 256, 300), R(rng, 300, 200)  # 30.7 MFLOP: 3 threads of >= 2 (f64), 3 of >= 4 (f32)
    big = [pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")]
    ref = _bits(pg.ag_matmul(*big).numpy())
    pg.ag_set_threads(3)
    pg.ag_matmul(*small)
    assert lib.pg_gemm_threads_live() == 0
    got = pg.ag_matmul(*big).numpy()
    assert lib.pg_gemm_threads_live() == 2
    np.testing.assert_array_equal(_bits(got), ref)
    np.testing.assert_allclose(got, A @ B, rtol=1e-12, atol=1e-12)
    big32 = [pg.ag_tensor(A), pg.ag_tensor(B)]
    np.testing.assert_allclose(pg.ag_matmul(*big32).numpy(), A @ B, rtol=1e-4, atol=1e-3)
    pg.ag_set_threads(2)
    assert lib.pg_gemm_threads_live() == 1
    np.testing.assert_array_equal(_bits(pg.ag_matmul(*big).numpy()), ref)
    assert lib.pg_gemm_threads_live() == 1
    assert lib.pg_gemm_threads_stop() == 1 and lib.pg_gemm_threads_live() == 0
    np.testing.assert_array_equal(_bits(pg.ag_matmul(*big).numpy()), ref)  # restarts
    assert lib.pg_gemm_threads_live() == 1
    pg.ag_set_threads(1)
    assert lib.pg_gemm_threads_live() == 0


def test_builtin_gemm_threads_from_several_python_threads(builtin_gemm, gemm_threads, rng):
    # products from 4 Python threads at once while the pool is active (cffi releases the GIL):
    # one of them gets the pool, the others run single-threaded; every result has the bits of
    # a single-threaded run
    import threading
    gemm_threads.pg_gemm_thread_min_flops(0)
    ops = [(pg.ag_tensor(R(rng, 90, 120), dtype=dt), pg.ag_tensor(R(rng, 120, 70), dtype=dt)) for dt in ("f64", "f32")]
    refs = [_bits(pg.ag_matmul(a, b).numpy()) for a, b in ops]
    pg.ag_set_threads(2)
    bad = []

    def work(i):
        a, b = ops[i % 2]
        for _ in range(30):
            if not np.array_equal(_bits(pg.ag_matmul(a, b).numpy()), refs[i % 2]):
                bad.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert bad == []
    assert gemm_threads.pg_gemm_threads_live() == 1


def test_builtin_gemm_threads_at_exit_and_after_fork():
    # a process that exits with the pool's workers asleep ends (the exit handler joins them); a
    # fork()ed child, which has none of its parent's workers, splits its products on a pool of
    # its own with the same bits
    import os
    import subprocess
    import sys
    code = """
import os, numpy as np, pyggmlr as pg
from pyggmlr._native import lib
pg.use_blas("builtin")
pg.ag_set_threads(2)
a = pg.ag_tensor(np.arange(300 * 200.0).reshape(300, 200) % 7, dtype="f64")
b = pg.ag_tensor(np.arange(200 * 150.0).reshape(200, 150) % 5, dtype="f64")
ref = pg.ag_matmul(a, b).numpy()
assert lib.pg_gemm_threads_live() == 1
pid = os.fork()
if pid == 0:
    ok = np.array_equal(pg.ag_matmul(a, b).numpy(), ref) and lib.pg_gemm_threads_live() == 1
    os._exit(0 if ok else 3)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 0, st
assert np.array_equal(ref, (np.arange(300 * 200.0).reshape(300, 200) % 7) @ (np.arange(200 * 150.0).reshape(200, 150) % 5))
print("ok", lib.pg_gemm_threads_live())
"""
    if not hasattr(os, "fork"):
        pytest.skip("no fork() on this platform: the fork half of this test cannot run")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "1"]


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_avx2_and_avx512_kernels_give_identical_bits(rng, dt):
    # the AVX-512 kernel sums every element in the AVX2 kernel's order (same k blocks, one FMA per k
    # step from 0, then alpha * acc + C / + beta * C), so the two agree to the bit in every layout,
    # with alpha != 1 and with accumulation (beta = 1 in backward); the portable kernel (no FMA)
    # only agrees to rounding
    from pyggmlr.nn import _matmul_t
    prev = pg.blas_name()
    pg.use_blas("builtin")
    try:
        if _select_kernel(2) != 2:
            pytest.skip("this CPU lacks AVX-512F: the AVX-512 kernel cannot run here to compare with AVX2")
        A, B = R(rng, 150, 600), R(rng, 600, 70)
        outs = {}
        for kern in (1, 2, 0):
            assert _select_kernel(kern) == kern
            res = []
            for ta in (0, 1):
                for tb in (0, 1):
                    At, Bt = (A.T.copy() if ta else A), (B.T.copy() if tb else B)
                    a, b = pg.ag_param(At, dtype=dt), pg.ag_param(Bt, dtype=dt)
                    with pg.with_grad_tape():
                        out = _matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75)
                        loss = project(out, 7)
                        if not tb:  # b used twice: its gradient slot accumulates (beta = 1)
                            loss = pg.ag_add(loss, project(pg.ag_matmul(pg.ag_tensor(A[:40], dtype=dt), b), 8))
                    g = pg.backward(loss)
                    res += [out.numpy(), g[a], g[b]]
            outs[kern] = res
        for x1, x2, x0 in zip(outs[1], outs[2], outs[0]):
            np.testing.assert_array_equal(_bits(x2), _bits(x1))
            np.testing.assert_allclose(x0, x1, rtol=1e-4 if dt == "f32" else 1e-12, atol=1e-3 if dt == "f32" else 1e-11)
        if dt == "f32":  # the comparison can fail: FMA and separate rounding differ somewhere here
            assert any((_bits(x0) != _bits(x1)).any() for x0, x1 in zip(outs[0], outs[1]))
        # the small and thin shapes (direct path: masked ragged rows, vectors along n for thin m,
        # transposed stores), every layout, on both paths
        for m, k, n, ta, tb, a, b in _gemm_layouts(rng, SMALL_GEMMS, dt):
            for path in (-1, 0):
                _select_path(path)
                got = {}
                for kern in (1, 2):
                    _select_kernel(kern)
                    got[kern] = _bits(_matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75).numpy())
                np.testing.assert_array_equal(got[2], got[1], err_msg=f"{m}x{k}x{n} ta={ta} tb={tb} path={path}")
    finally:
        _select_path(-1)
        _select_kernel(-1)
        if prev != "builtin":
            pg.use_blas("openblas")


# ---- vectorised exp, sigmoid, tanh (native/vmath.c) ----

SIMD_LEVELS = {0: "SSE2", 1: "AVX2", 2: "AVX-512"}
_VMATH_F32 = (("exp", pg.ag_exp, np.exp, 1), ("sigmoid", pg.ag_sigmoid, lambda v: 1 / (1 + np.exp(-v)), 2),
              ("tanh", pg.ag_tanh, np.tanh, 1), ("log", pg.ag_log, np.log, 1))
_VMATH_F64 = (("exp", pg.ag_exp, np.exp, 1), ("sigmoid", pg.ag_sigmoid, lambda v: 1 / (1 + np.exp(-v)), 4),
              ("log", pg.ag_log, np.log, 1), ("tanh", pg.ag_tanh, np.tanh, 3))


def _ulp_diff(a, b):
    it = np.int32 if a.dtype == np.float32 else np.int64
    return np.abs(a.view(it).astype(np.int64) - b.view(it).astype(np.int64))


def _vmath_inputs(dt):
    lo, hi = (-110, 95) if dt == np.float32 else (-760, 720)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e-300, 0.3, -0.3, 0.62, 0.63, 88.7, 89.0,
                -103.9, -104.5, 709.7, 709.9, -745.1, -745.2, 1e30, -1e30]
    fi = np.finfo(dt)
    with np.errstate(over="ignore"):
        positive = np.geomspace(fi.smallest_subnormal, fi.max, 200001)  # log's whole domain
        return np.concatenate([np.linspace(lo, hi, 300001), np.linspace(-1, 1, 100001), positive,
                               np.linspace(0.5, 2, 50001), specials]).astype(dt)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_vmath_accuracy_and_special_values(dtype):
    # against numpy in double: f32 exp, tanh and log within 1 ulp, sigmoid 2 (normal results); f64
    # exp and log within 1, tanh 3, sigmoid 4; inf, NaN, signed zeros and the edges as libm
    dt = np.float32 if dtype == "f32" else np.float64
    x = _vmath_inputs(dt)
    for name, op, ref_fn, tol in (_VMATH_F32 if dtype == "f32" else _VMATH_F64):
        got = op(pg.ag_tensor(x[None, :], dtype=dtype)).numpy()[0]
        with np.errstate(all="ignore"):
            ref = ref_fn(x.astype(np.float64)).astype(dt)
        normal = np.isfinite(ref) & (np.abs(ref) >= np.finfo(dt).tiny)
        assert _ulp_diff(got[normal], ref[normal]).max() <= tol, name
        # below the smallest normal: as close as the absolute error of a normal result's rounding
        tiny = np.isfinite(ref) & ~normal
        assert np.all(np.abs(got[tiny] - ref[tiny]) <= 4 * np.finfo(dt).tiny), name
        rest = ~np.isfinite(ref)
        np.testing.assert_array_equal(got[rest], ref[rest], err_msg=name)
        zero = ref == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(ref[zero]), err_msg=name)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_vmath_simd_levels_give_identical_bits(dtype):
    # SSE2, AVX2 and AVX-512 vectors (4 / 8 / 16 floats, 2 / 4 / 8 doubles) and the padded tail:
    # the same bits; lengths ragged against every width; also through softmax
    from pyggmlr._native import lib
    dt = np.float32 if dtype == "f32" else np.float64
    x = _vmath_inputs(dt)[::7]
    ops = [(name, op) for name, op, _, _ in (_VMATH_F32 if dtype == "f32" else _VMATH_F64)]
    ops.append(("softmax", pg.ag_softmax))
    out = {}
    try:
        for level in sorted(SIMD_LEVELS):
            if lib.pg_simd_select(level) != level:
                continue
            res = []
            for name, op in ops:
                for n in (1, 3, 5, 15, 17, 33, x.size):
                    src = x[:n] if name != "softmax" else np.nan_to_num(x[:n], posinf=50, neginf=-50) % 60
                    res.append(op(pg.ag_tensor(src[None, :] if name != "softmax" else src[:, None],
                                               dtype=dtype)).numpy().tobytes())
            out[level] = res
    finally:
        lib.pg_simd_select(-1)
    assert 0 in out
    for level, res in out.items():
        assert res == out[0], SIMD_LEVELS[level]
