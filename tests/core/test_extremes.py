"""Losses, gradients and the f32 Adam step at saturated, special and extreme values (issue 28):
closed forms first (they run everywhere), then PyTorch in f64 where it is installed."""

import math

import numpy as np
import pytest
from _fd import gradcheck

import pyggmlr as pg


def _grad(f, x, dtype="f64"):
    """(loss, d loss / d x) of f at numpy x."""
    t = pg.ag_param(np.asarray(x, dtype=float), dtype=dtype)
    with pg.with_grad_tape():
        loss = f(t)
    g = pg.backward(loss)
    return loss.item(), np.asarray(g[t])


def _torch():
    return pytest.importorskip(
        "torch",
        reason="torch is not installed: the PyTorch comparisons are skipped (the closed-form "
        "tests above cover the same values)",
    )


# ---- f32 Adam: 1 - beta formed in double (item 1) ----


def test_f32_adam_first_step_is_lr():
    # m_hat = v_hat = g on the first step: the step is lr * g / (|g| + eps), -1 to f32 rounding.
    # Rounding beta2 to float first gave 1 - 0.999f = 9.99987e-4 and a step of -1.0000067.
    w = pg.ag_param(np.zeros((1, 1)), dtype="f32")
    opt = pg.optimizer_adam([w], lr=1.0)
    w.grad = np.ones((1, 1))
    opt.step()
    assert abs(w.item() + 1.0) <= 1.2e-7


def test_f32_adam_tracks_f64_over_a_run():
    # 50 Adam steps of a small MLP in f32 and in f64 from the same weights: the f32 losses stay
    # within f32 rounding of the f64 ones (they drifted by 1.5e-4 before; PyTorch's f32: 1e-7)
    rng = np.random.default_rng(3)
    w1, w2 = rng.normal(size=(16, 4)) * 0.5, rng.normal(size=(3, 16)) * 0.5
    x, y = rng.normal(size=(4, 64)), rng.integers(0, 3, size=64)

    def run(dtype):
        W1, W2 = pg.ag_param(w1, dtype=dtype), pg.ag_param(w2, dtype=dtype)
        opt = pg.optimizer_adam([W1, W2], lr=0.01)
        xs, losses = pg.ag_tensor(x, dtype=dtype), []
        for _ in range(50):
            with pg.with_grad_tape():
                h = pg.ag_relu(pg.ag_matmul(W1, xs))
                loss = pg.ag_softmax_cross_entropy_loss(pg.ag_matmul(W2, h), y)
            opt.step(pg.backward(loss))
            opt.zero_grad()
            losses.append(loss.item())
        return np.array(losses)

    drift = np.abs(run("f32") - run("f64")).max()
    assert drift < 1e-6, drift


# ---- softmax cross-entropy: exact log-sum-exp, gradient of the loss reported (items 2, 6) ----


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_softmax_ce_is_not_capped(dtype):
    # logits (50, 0), target 1: -log_softmax = 50 + log1p(e^-50); ggmlR's clamp gave 16.118
    loss, g = _grad(lambda t: pg.ag_softmax_cross_entropy_loss(t, [1]), [[50.0], [0.0]], dtype)
    assert loss == pytest.approx(50.0, rel=1e-15 if dtype == "f64" else 1e-7)
    p1 = math.exp(-50) / (1 + math.exp(-50))
    assert g[:, 0] == pytest.approx([1 - p1, p1 - 1], rel=1e-6)
    # the one-hot matrix path and the ids-in-a-tensor path give the same bits
    oh = np.array([[0.0], [1.0]])
    loss2, g2 = _grad(lambda t: pg.ag_softmax_cross_entropy_loss(t, oh), [[50.0], [0.0]], dtype)
    ids = pg.ag_tensor(np.array([[1.0]]), dtype=dtype)
    loss3, g3 = _grad(lambda t: pg.ag_softmax_cross_entropy_loss(t, ids), [[50.0], [0.0]], dtype)
    assert loss == loss2 == loss3 and g.tobytes() == g2.tobytes() == g3.tobytes()


def test_softmax_ce_exact_far_past_the_old_cap():
    z = np.array([[300.0, -7.0, 0.0], [-400.0, 5.0, 0.0], [0.0, 1e3, 0.0]])
    loss, _ = _grad(lambda t: pg.ag_softmax_cross_entropy_loss(t, [1, 0, 2]), z)
    # column terms: 700 (+ e^-300 terms), 1007, log(3)
    assert loss == pytest.approx((700.0 + 1007.0 + math.log(3)) / 3, rel=1e-15)


def test_softmax_ce_zero_target_class_at_minus_inf_costs_nothing():
    z = np.array([[-np.inf], [0.0], [1.0]])
    t = np.array([[0.0], [0.25], [0.75]])
    loss, g = _grad(lambda x: pg.ag_softmax_cross_entropy_loss(x, t), z)
    p = np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum()
    assert loss == pytest.approx(-(0.25 * math.log(p[0]) + 0.75 * math.log(p[1])), rel=1e-14)
    assert g[0, 0] == 0.0 and np.all(np.isfinite(g))


def test_softmax_ce_unnormalised_soft_targets_gradient_is_the_loss_derivative():
    # an all-zero (masked) column, a column summing to 2 and one summing to 0.5: the gradient
    # is (sum(t) p - t) / B, what finite differences of the reported loss give
    rng = np.random.default_rng(11)
    z = rng.normal(size=(4, 3))
    t = np.abs(rng.normal(size=(4, 3)))
    t[:, 0] = 0.0
    t[:, 1] *= 2.0 / t[:, 1].sum()
    t[:, 2] *= 0.5 / t[:, 2].sum()
    _, g = _grad(lambda x: pg.ag_softmax_cross_entropy_loss(x, t), z)
    p = np.exp(z - z.max(axis=0)) / np.exp(z - z.max(axis=0)).sum(axis=0)
    assert np.abs(g - (t.sum(axis=0) * p - t) / 3).max() < 1e-16
    assert np.all(g[:, 0] == 0.0)  # a masked column neither costs nor pulls
    gradcheck(lambda x: pg.ag_softmax_cross_entropy_loss(x, t), z)


# ---- cross-entropy on probabilities: gradient 0 where the clamp holds p (item 3) ----


def test_cross_entropy_gradient_is_zero_where_clamped():
    p = np.array([[1e-9, 0.3], [1.0, 0.7]])
    t = np.array([[1.0, 0.0], [0.0, 1.0]])
    loss, g = _grad(lambda x: pg.ag_cross_entropy_loss(x, t), p)
    assert loss == pytest.approx((-math.log(1e-7) - math.log(0.7)) / 2, rel=1e-15)
    assert g[0, 0] == 0.0  # clamped up to 1e-7: constant in p (was -t / 1e-7 / B = -5e6)
    assert g[1, 0] == 0.0  # clamped down to 1 - 1e-7, and t = 0 there
    assert g[1, 1] == pytest.approx(-1 / 0.7 / 2, rel=1e-15)  # inside: -t / p / B


# ---- ops at extreme magnitudes and special values (items 4, 5) ----


def test_div_gradient_survives_where_b_squared_overflows_or_underflows():
    a, b = np.array([[1e300, 1e-300]]), np.array([[1e160, 1e-160]])
    A, B = pg.ag_param(a, dtype="f64"), pg.ag_param(b, dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_div(A, B))
    gb = np.asarray(pg.backward(loss)[B])
    # -A / B^2: B^2 overflowed (1e320 -> inf, -0) and underflowed (1e-320 -> subnormal) before
    assert gb[0, 0] == pytest.approx(-1e-20, rel=1e-15)
    assert gb[0, 1] == pytest.approx(-1e20, rel=1e-15)


def test_relu_passes_the_gradient_of_nan():
    _, g = _grad(lambda x: pg.ag_sum(pg.ag_relu(x)), [[np.nan, -1.0, 0.0, 2.0]])
    assert g.tolist() == [[1.0, 0.0, 0.0, 1.0]]


def test_fused_linear_relu_passes_the_gradient_of_nan():
    lin = pg.ag_linear(1, 2, activation="relu")
    w = np.asarray(lin.W.numpy())
    x = pg.ag_tensor(np.array([[np.nan]]))
    with pg.with_grad_tape():
        loss = pg.ag_sum(lin(x))
    g = pg.backward(loss)
    assert np.all(np.isnan(np.asarray(g[lin.W]))) and w.shape == (2, 1)
    assert np.asarray(g[lin.b]).ravel().tolist() == [1.0, 1.0]  # NaN rows pass 1, not 0


@pytest.mark.parametrize("p", [0.5, 1.5, -0.5, 2.5])
def test_pow_fractional_of_negatives_is_nan_as_r(p):
    # R's `^` (ggmlR's ag_pow): NaN for any negative x with a fractional p, -Inf included (C's
    # pow gave +Inf or 0 there); -0 counts as 0
    x = np.array([[-0.0, -np.inf, -4.0, 4.0, np.inf]])
    y = pg.ag_pow(pg.ag_tensor(x, dtype="f64"), p).numpy()[0]
    assert np.isnan(y[1]) and np.isnan(y[2])
    assert y[0] == (0.0 if p > 0 else np.inf) and math.copysign(1, y[0]) == 1.0
    assert y[3] == pytest.approx(4.0**p, rel=1e-15) and y[4] == (np.inf if p > 0 else 0.0)
    _, g = _grad(lambda t: pg.ag_sum(pg.ag_pow(t, p)), x)
    assert np.isnan(g[0, 1]) and np.isnan(g[0, 2])
    assert g[0, 3] == pytest.approx(p * 4.0 ** (p - 1), rel=1e-15)


def test_pow_whole_p_keeps_c_signs():
    x = np.array([[-np.inf, -0.0, -2.0]])
    y = pg.ag_pow(pg.ag_tensor(x, dtype="f64"), 3).numpy()[0]
    assert y[0] == -np.inf and math.copysign(1, y[1]) == -1.0 and y[2] == -8.0
    assert pg.ag_pow(pg.ag_tensor(x, dtype="f64"), 2).numpy()[0].tolist() == [np.inf, 0.0, 4.0]


# ---- PyTorch in f64 ----


def test_against_torch():
    torch = _torch()
    F = torch.nn.functional
    T = lambda a: torch.tensor(np.asarray(a, dtype=float), requires_grad=True)  # noqa: E731

    def ref(fn, x):
        t = T(x)
        out = fn(t)
        out.backward()
        return out.item(), t.grad.numpy()

    rng = np.random.default_rng(5)
    z = rng.normal(size=(5, 4)) * 30  # saturated columns: gaps up to about 200
    ids = rng.integers(0, 5, size=4)
    soft = np.abs(rng.normal(size=(5, 4)))
    soft[:, 1] = 0.0
    soft[:, 2] *= 3.0
    pr = np.array([[1e-9, 0.2, 0.5], [0.4, 1.0, 0.5], [0.6 - 1e-9, 0.0, 0.0]])
    tp = np.array([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.0]])
    a, b = np.array([[1e300, -3.0, 1e-300]]), np.array([[1e160, 1e-170, -1e-160]])
    cases = [
        (
            lambda t: pg.ag_softmax_cross_entropy_loss(t, ids),
            lambda t: F.cross_entropy(t.T, torch.tensor(ids)),
            z,
        ),
        (
            lambda t: pg.ag_softmax_cross_entropy_loss(t, soft),
            lambda t: -(torch.tensor(soft) * F.log_softmax(t, dim=0)).sum() / 4,
            z,
        ),
        (
            lambda t: pg.ag_cross_entropy_loss(t, tp),
            lambda t: -(torch.tensor(tp) * torch.log(t.clamp(1e-7, 1 - 1e-7))).sum() / 3,
            pr,
        ),
        (
            lambda t: pg.ag_sum(pg.ag_div(pg.ag_tensor(a, dtype="f64"), t)),
            lambda t: (torch.tensor(a) / t).sum(),
            b,
        ),
        (
            lambda t: pg.ag_sum(pg.ag_relu(t)),
            lambda t: torch.relu(t).sum(),
            [[np.nan, -1.0, 0.0, 3.0]],
        ),
        (
            lambda t: pg.ag_sum(pg.ag_pow(t, 0.5)),
            lambda t: t.pow(0.5).sum(),
            [[0.0, 4.0, 0.25]],  # at -0 PyTorch's rsqrt path gives -inf; C's pow gives +inf
        ),
    ]
    for ours, theirs, x in cases:
        lo, go = _grad(ours, x)
        lt, gt = ref(theirs, x)
        np.testing.assert_allclose(lo, lt, rtol=1e-12)
        np.testing.assert_allclose(go, gt, rtol=1e-10, atol=0)
    # f32 Adam's first steps: PyTorch's f32 run, not 6.7e-6 off
    w = pg.ag_param(np.zeros((1, 3)), dtype="f32")
    wt = torch.zeros(1, 3, dtype=torch.float32, requires_grad=True)
    opt, optt = pg.optimizer_adam([w], lr=1.0), torch.optim.Adam([wt], lr=1.0)
    for g in ([1.0, -2.0, 1e-3], [0.5, 0.5, -1e-3], [3.0, -1.0, 2e-3]):
        w.grad = np.array([g])
        opt.step()
        wt.grad = torch.tensor([g], dtype=torch.float32)
        optt.step()
        np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=3e-7, atol=0)
