"""The golden values of spec section 13, a tensor used twice (the true gradient), chains
through several ops, f32 against f64, the fixed summation order and the Python operators."""

import math

import numpy as np
import pytest
from _fd import R, gradcheck, np_softmax, project

import pyggmlr as pg

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
    dW = [
        [-0.550479903252, -0.832018385134, -1.11355686702],
        [0.550479903252, 0.832018385134, 1.11355686702],
    ]
    np.testing.assert_allclose(g[W], dW, atol=1e-10, rtol=0)
    np.testing.assert_allclose(g[b][:, 0], [-0.281538481882, 0.281538481882], atol=1e-10, rtol=0)
    np.testing.assert_array_equal(W.grad, g[W])


def test_spec13_mse_sigmoid_golden(f64):
    W, b = pg.ag_param(W0), pg.ag_param(B0)
    with pg.with_grad_tape():
        z = pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)
        loss = pg.ag_mse_loss(pg.ag_sigmoid(z), pg.ag_tensor(Y0))
    assert abs(loss.item() - 0.305307684932) < 1e-10
    dW = [
        [-0.0811452505505, -0.0735670424264, -0.0659888343023],
        [0.0819981307456, 0.0752728028166, 0.0685474748875],
    ]
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
    gradcheck(
        lambda w: pg.ag_sum(pg.ag_matmul(w, pg.ag_matmul(w, x))), np.array([[1.0, 3.0], [2.0, 4.0]])
    )


def test_mul_same_tensor_twice(f64):
    A = pg.ag_param([1.0, 2.0, 3.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(A, A))
    g = pg.backward(loss)
    np.testing.assert_array_equal(g[A][:, 0], [2, 4, 6])
    np.testing.assert_array_equal(A.grad[:, 0], [2, 4, 6])
    for op in (pg.ag_add, pg.ag_sub, pg.ag_div, pg.ag_matmul):
        x = np.array([[1.5, 0.5], [0.7, 2.0]])
        gradcheck(lambda a, op=op: project(op(a, a)), x)


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
    np.testing.assert_allclose(
        pg.ag_softmax(a).numpy(), np_softmax(A.astype(np.float64)), rtol=1e-6
    )
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
    np.testing.assert_allclose(
        g[W],
        [
            [-0.550479903252, -0.832018385134, -1.11355686702],
            [0.550479903252, 0.832018385134, 1.11355686702],
        ],
        atol=1e-6,
    )
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(
            pg.ag_sigmoid(pg.ag_add(pg.ag_matmul(W, pg.ag_tensor(X0)), b)), pg.ag_tensor(Y0)
        )
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
    assert pg.ag_sum(pg.ag_tensor(x)).item() == pytest.approx(
        float(x.astype(np.float64).sum()), rel=1e-6
    )


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
        assert cols[j] == pytest.approx(
            math.fsum(map(float, x[:, j])), rel=1e-12 if dtype == "f64" else 1e-6
        )
    assert pg.ag_mean(t).item() == dt(_lane_sum(x.ravel(order="F")) / (3 * n))


def _c_pow(x, p):
    # C99 pow: pow(-0, 0.5) = +0, pow(+-0, -1) = +-inf (Python raises there); a fractional p of
    # -inf is NaN as for any negative x (R's `^`, ggmlR's ag_pow; C gives +inf: issue 28)
    if x == -math.inf and p != int(p):
        return math.nan
    if x == 0 and p < 0:
        return math.copysign(math.inf, x) if p == int(p) and int(p) % 2 else math.inf
    try:
        return math.pow(x, p)
    except ValueError:
        return math.nan


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pow_fast_powers_match_pow(dtype):
    # p = 2, 1, -1, 0.5 skip libm's pow: same values as the pow rule, signs of zero too
    dt = np.float32 if dtype == "f32" else np.float64
    x = np.array(
        [[-np.inf, -2.5, -1.0, -0.0, 0.0, 1e-30, 0.3, 1.0, 7.0, 1e30, np.inf, np.nan]], dtype=dt
    )
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
    np.testing.assert_allclose((a**2).numpy(), A**2)
    M = R(rng, 3, 4)
    np.testing.assert_allclose((a @ pg.ag_tensor(M)).numpy(), A @ M)
    np.testing.assert_allclose((a @ M).numpy(), A @ M)
    np.testing.assert_allclose(a.T.numpy(), A.T)


def test_reflected_operators_with_numpy_lhs(f64, rng):
    A = R(rng, 2, 3)
    a = pg.ag_param(A)
    C = R(rng, 2, 3)
    # numpy on the left must defer to the tensor's reflected methods, not broadcast elementwise
    for expr, ref in (
        (lambda: C + a, C + A),
        (lambda: C - a, C - A),
        (lambda: C * a, C * A),
        (lambda: C / a, C / A),
    ):
        r = expr()
        assert isinstance(r, pg.Tensor), type(r)
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-14)
    M = R(rng, 4, 2)
    r = M @ a
    assert isinstance(r, pg.Tensor)
    np.testing.assert_allclose(r.numpy(), M @ A)


def test_operator_gradients(rng):
    x = R(rng, 2, 2, lo=0.5, hi=1.5)
    gradcheck(lambda a: pg.ag_sum((1 - a) * a / (a + 2) - (-a) @ a + 3 * a**2), x)


def test_pow_zero_exponent_grad_is_zero_at_zero(f64):
    x = pg.ag_param([0.0, 2.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(x, 0))
    np.testing.assert_array_equal(loss.item(), 2.0)
    np.testing.assert_array_equal(pg.backward(loss)[x][:, 0], [0.0, 0.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(x, 1))
    np.testing.assert_array_equal(pg.backward(loss)[x][:, 0], [1.0, 1.0])
