"""Optimizers (SGD, Adam), gradient accumulation and state round trips, against spec section 13
golden trajectories and numpy reference implementations (clipping and schedulers: test_sched.py)."""

import math
import warnings

import numpy as np
import pytest

import pyggmlr as pg

W0 = np.array([0.5, -0.3, 0.2, 0.8, -0.1, 0.4]).reshape(2, 3, order="F")
B0 = np.array([[0.1], [-0.2]])
X0 = np.array([1.0, 2, 3, -1, 0, 1]).reshape(3, 2, order="F")
Y0 = np.array([1.0, 0, 0, 1]).reshape(2, 2, order="F")


# ---- spec 13 trajectories ----


def test_spec13_sgd_momentum(f64):
    W = pg.ag_param(W0)
    opt = pg.optimizer_sgd({"W": W}, lr=0.1, momentum=0.9)
    x, y = pg.ag_tensor(X0), pg.ag_tensor(Y0)
    for _ in range(2):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(pg.ag_matmul(W, x), y)
        g = pg.backward(loss)
        opt.step(g)
        opt.zero_grad()
    np.testing.assert_allclose(
        W.numpy(), [[0.459, 0.282, 0.105], [-0.631, 0.247, -0.375]], atol=1e-10, rtol=0
    )
    np.testing.assert_allclose(
        opt.velocity["W"], [[0.31, -0.42, -1.15], [1.91, 3.03, 4.15]], atol=1e-10, rtol=0
    )


def test_spec13_adam(f64):
    W, b = pg.ag_param(W0), pg.ag_param(B0)
    opt = pg.optimizer_adam({"W": W, "b": b}, lr=0.01)
    x, y = pg.ag_tensor(X0), pg.ag_tensor(Y0)
    for _ in range(2):
        with pg.with_grad_tape():
            loss = pg.ag_softmax_cross_entropy_loss(pg.ag_add(pg.ag_matmul(W, x), b), y)
        opt.step(pg.backward(loss))
        opt.zero_grad()
    assert opt.t == 2
    np.testing.assert_allclose(
        W.numpy(),
        [
            [0.519995769066, 0.219992725706, -0.0800088789751],
            [-0.319995769066, 0.780007274294, 0.3800088789751],
        ],
        atol=1e-10,
        rtol=0,
    )
    np.testing.assert_allclose(b.numpy()[:, 0], [0.11998598038, -0.21998598038], atol=1e-10, rtol=0)


# ---- numpy references ----


def np_sgd(w, grads, lr, momentum=0.0, nesterov=False, weight_decay=0.0):
    """optimizer_sgd's update in numpy (arguments named as its own)."""
    w, v = w.copy(), np.zeros_like(w)
    for g in grads:
        g = g(w) + weight_decay * w
        if momentum > 0:
            v = momentum * v + g
            w -= lr * (g + momentum * v if nesterov else v)
        else:
            w -= lr * g
    return w


def np_adamw(w, grads, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """optimizer_adam's (decoupled AdamW) update in numpy (arguments named as its own)."""
    b1, b2 = beta1, beta2
    w, m, v = w.copy(), np.zeros_like(w), np.zeros_like(w)
    for t, gf in enumerate(grads, 1):
        g = gf(w)
        w -= lr * weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return w


def mse_grad(w):  # d/dW mean((W x - y)^2)
    return 2.0 / Y0.size * (w @ X0 - Y0) @ X0.T


def run(opt_factory, steps=5):
    W = pg.ag_param(W0, dtype="f64")
    opt = opt_factory([W])
    x, y = pg.ag_tensor(X0, dtype="f64"), pg.ag_tensor(Y0, dtype="f64")
    for _ in range(steps):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(pg.ag_matmul(W, x), y)
        opt.step(pg.backward(loss))
        opt.zero_grad()
    return W.numpy()


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(momentum=0.5),
        dict(momentum=0.9, nesterov=True),
        dict(weight_decay=0.1),
        dict(momentum=0.8, weight_decay=0.05),
        dict(momentum=0.7, nesterov=True, weight_decay=0.2),
    ],
)
def test_sgd_against_numpy(kw):
    got = run(lambda p: pg.optimizer_sgd(p, lr=0.05, **kw))
    ref = np_sgd(W0, [mse_grad] * 5, 0.05, **kw)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize(
    "kw", [dict(), dict(weight_decay=0.1), dict(beta1=0.5, beta2=0.9, eps=1e-4, weight_decay=0.01)]
)
def test_adamw_against_numpy(kw):
    got = run(lambda p: pg.optimizer_adam(p, lr=0.02, **kw))
    ref = np_adamw(W0, [mse_grad] * 5, 0.02, **kw)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14)


ADAM_KERNELS = {0: "SSE2", 1: "AVX2", 2: "AVX-512"}


def np_adam_as_core(w, m, v, g, t, lr, b1, b2, eps, wd, dt):
    # the core's update, operation for operation, in dtype dt (numpy rounds each op as C does):
    # w -= m * (lr / bc1) / (sqrt(v) * bc2^-1/2 + eps), decay first
    c = lambda x: dt.type(x)  # noqa: E731
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    sc, rc2 = c(lr / bc1), c(1 / math.sqrt(bc2))
    g = g * c(1.0)
    m[:] = c(b1) * m + c(1 - b1) * g  # 1 - beta formed in double, rounded once (issue 28)
    v[:] = c(b2) * v + c(1 - b2) * g * g
    den = np.sqrt(v) * rc2 + c(eps)
    if wd:
        w -= c(lr * wd) * w
    w -= m * sc / den


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_adam_vector_widths_give_identical_bits(dtype):
    # Adam's SSE2, AVX2 and AVX-512 bodies and the scalar tail: the same bits, equal to numpy doing
    # the same operations; sizes ragged against 2, 4, 8 and 16 lanes
    from pyggmlr._native import lib

    dt = np.dtype(np.float32 if dtype == "f32" else np.float64)
    rng = np.random.default_rng(7)
    shapes = [(1, 1), (3, 5), (17, 3), (31, 1), (64, 33)]
    inits = [rng.normal(size=s) for s in shapes]
    grads = [[rng.normal(size=s) * 10.0 ** rng.integers(-3, 3) for s in shapes] for _ in range(4)]
    results = {}
    try:
        for which in sorted(ADAM_KERNELS):
            if lib.pg_simd_select(which) != which:
                continue  # this CPU lacks the width; the ones it has are still compared
            ps = [pg.ag_param(w0, dtype=dtype) for w0 in inits]
            opt = pg.optimizer_adam(ps, lr=0.01, weight_decay=0.1)
            for gs in grads:
                for p, g in zip(ps, gs):
                    p.grad = g
                opt.step()
                opt.zero_grad()
            results[which] = [p.numpy() for p in ps]
    finally:
        lib.pg_simd_select(-1)
    assert 0 in results  # SSE2 runs on every x86-64 (and is the plain loop elsewhere)
    for which, got in results.items():
        for a, b in zip(got, results[0]):
            assert a.tobytes() == b.tobytes(), ADAM_KERNELS[which]
    ref = [w0.astype(dt) for w0 in inits]
    ms = [np.zeros_like(w) for w in ref]
    vs = [np.zeros_like(w) for w in ref]
    for t, gs in enumerate(grads, 1):
        for w, m, v, g in zip(ref, ms, vs, gs):
            np_adam_as_core(w, m, v, g.astype(dt), t, 0.01, 0.9, 0.999, 1e-8, 0.1, dt)
    for a, b in zip(results[0], ref):
        assert a.tobytes() == b.tobytes()


def test_adam_weight_decay_is_decoupled():
    # with a zero gradient, AdamW only shrinks the weights: w *= (1 - lr * wd) per step
    w = pg.ag_param([[2.0, -4.0]], dtype="f64")
    opt = pg.optimizer_adam([w], lr=0.1, weight_decay=0.5)
    w.grad = [[0.0, 0.0]]
    for _ in range(3):
        opt.step()
    np.testing.assert_allclose(w.numpy(), np.array([[2.0, -4.0]]) * 0.95**3, rtol=1e-14)


def test_f32_optimizer_step():
    W = pg.ag_param(W0)
    assert W.dtype == "f32"
    opt = pg.optimizer_adam([W], lr=0.01)
    x, y = pg.ag_tensor(X0), pg.ag_tensor(Y0)
    for _ in range(3):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(pg.ag_matmul(W, x), y)
        opt.step(pg.backward(loss))
        opt.zero_grad()
    assert W.numpy().dtype == np.float32
    np.testing.assert_allclose(W.numpy(), np_adamw(W0, [mse_grad] * 3, 0.01), atol=1e-5)


# ---- params: dict, list, duplicates, identity ----


def test_params_dict_and_list():
    a, b = pg.ag_param([[1.0]]), pg.ag_param([[2.0]])
    o1 = pg.optimizer_sgd({"a": a, "b": b})
    o2 = pg.optimizer_sgd([a, b])
    assert list(o1.params) == ["a", "b"] and o1.params["a"] is a
    assert list(o2.params) == ["1", "2"]
    o3 = pg.optimizer_adam(a)
    assert len(o3.params) == 1
    with pytest.raises(TypeError):
        pg.optimizer_sgd([a, 3.0])
    with pytest.raises(TypeError):
        pg.optimizer_sgd(5)


def test_duplicates_dropped_with_warning(f64):
    w = pg.ag_param([[1.0]])
    with pytest.warns(UserWarning, match="listed more than once"):
        opt = pg.optimizer_sgd([w, w], lr=0.1)
    assert len(opt.params) == 1
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(w, 2.0))
    opt.step(pg.backward(loss))
    assert w.numpy()[0, 0] == pytest.approx(1.0 - 0.1 * 2.0, abs=1e-15)  # updated once, not twice


def test_no_warning_without_duplicates():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.optimizer_sgd([pg.ag_param([[1.0]]), pg.ag_param([[1.0]])])


def test_same_names_two_layers_both_updated(f64):
    # ggmlR 0.8.2 keyed by name: c(l1$params(), l2$params()) updated layer 1 twice (spec 11.2)
    l1 = {"W": pg.ag_param([[1.0, 1.0]]), "b": pg.ag_param([[0.0]])}
    l2 = {"W": pg.ag_param([[2.0, 2.0]]), "b": pg.ag_param([[0.0]])}
    params = list(l1.values()) + list(l2.values())
    opt = pg.optimizer_sgd(params, lr=0.5)
    x = pg.ag_tensor([1.0, 1.0])
    with pg.with_grad_tape():
        loss = pg.ag_sum(
            pg.ag_add(
                pg.ag_add(pg.ag_matmul(l1["W"], x), l1["b"]),
                pg.ag_add(pg.ag_matmul(l2["W"], x), l2["b"]),
            )
        )
    opt.step(pg.backward(loss))
    np.testing.assert_array_equal(l1["W"].numpy(), [[0.5, 0.5]])
    np.testing.assert_array_equal(l2["W"].numpy(), [[1.5, 1.5]])
    np.testing.assert_array_equal(l1["b"].numpy(), [[-0.5]])
    np.testing.assert_array_equal(l2["b"].numpy(), [[-0.5]])


def test_param_without_gradient_is_skipped(f64):
    a, b = pg.ag_param([[1.0]]), pg.ag_param([[5.0]])
    opt = pg.optimizer_adam([a, b], lr=0.1)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(a, 1.0))
    opt.step(pg.backward(loss))
    assert b.numpy()[0, 0] == 5.0 and a.numpy()[0, 0] != 1.0 and opt.t == 1


def test_step_without_map_uses_grad(f64):
    w1, w2 = pg.ag_param(W0), pg.ag_param(W0)
    o1, o2 = (
        pg.optimizer_sgd([w1], lr=0.1, momentum=0.9),
        pg.optimizer_sgd([w2], lr=0.1, momentum=0.9),
    )
    x, y = pg.ag_tensor(X0), pg.ag_tensor(Y0)
    for _ in range(3):
        with pg.with_grad_tape():
            l1 = pg.ag_mse_loss(pg.ag_matmul(w1, x), y)
            l2 = pg.ag_mse_loss(pg.ag_matmul(w2, x), y)
        g = pg.backward(l1)
        pg.backward(l2)
        o1.step(g)
        assert o2.step() is True
        o1.zero_grad()
        o2.zero_grad()
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())


def test_step_rejects_foreign_grads():
    w = pg.ag_param([[1.0]])
    opt = pg.optimizer_sgd([w])
    with pytest.raises(TypeError):
        opt.step([np.ones((1, 1))])  # a mapping keyed like backward()'s map, or None


# ---- gradient accumulation (ggml's test-opt-dynamic-accum) ----


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("use_map", [True, False])
def test_accumulation_moves_exactly(f64, k, average, use_map):
    lr = 0.1
    xv = np.array([[0.5], [-1.0], [2.0]])
    w = pg.ag_param(np.zeros((3, 1)))
    x = pg.ag_tensor(xv)
    opt = pg.optimizer_sgd([w], lr=lr, accumulate_steps=k, average=average)
    expected_move = lr * xv * (1 if average else k)
    prev = w.numpy()
    for call in range(1, 4 * k + 1):
        with pg.with_grad_tape():
            loss = pg.ag_sum(pg.ag_mul(w, x))  # gradient is x every time
        g = pg.backward(loss)
        if use_map:  # this project's: one map per call, summed by the optimizer
            applied = opt.step(g, sum_grads=True)
            opt.zero_grad()
        else:  # ggmlR's idiom: backward() sums into .grad
            applied = opt.step()
            if applied:
                opt.zero_grad()
        now = w.numpy()
        if call % k == 0:
            assert applied is True and opt.accum_count == 0
            np.testing.assert_allclose(prev - now, expected_move, rtol=1e-14, atol=1e-16)
            prev = now
        else:
            assert applied is False and opt.accum_count == call % k
            np.testing.assert_array_equal(now, prev)
    np.testing.assert_allclose(w.numpy(), -4 * expected_move, rtol=1e-13)


@pytest.mark.parametrize("k", [1, 2])
def test_accumulation_equals_big_batch_with_momentum(f64, k):
    # mean of k micro-batch gradients == gradient of the whole batch (mse averages per element)
    xv = np.random.default_rng(0).normal(size=(3, 4))
    yv = np.random.default_rng(1).normal(size=(2, 4))
    W_big, W_acc = pg.ag_param(np.ones((2, 3))), pg.ag_param(np.ones((2, 3)))
    o_big = pg.optimizer_sgd([W_big], lr=0.1, momentum=0.9)
    o_acc = pg.optimizer_sgd([W_acc], lr=0.1, momentum=0.9, accumulate_steps=k)
    for _ in range(3):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(pg.ag_matmul(W_big, xv), yv)
        o_big.step(pg.backward(loss))
        o_big.zero_grad()
        cols = np.array_split(np.arange(4), k)
        for c in cols:
            with pg.with_grad_tape():
                loss = pg.ag_mse_loss(pg.ag_matmul(W_acc, xv[:, c]), yv[:, c])
            pg.backward(loss)
            if o_acc.step():
                o_acc.zero_grad()
    np.testing.assert_allclose(W_acc.numpy(), W_big.numpy(), rtol=1e-13)


def test_adam_t_advances_only_on_applied_updates(f64):
    w = pg.ag_param([[1.0, 2.0]])
    opt = pg.optimizer_adam([w], lr=0.01, accumulate_steps=2)
    ts = []
    for _ in range(5):
        w.grad = [[0.5, -0.5]]
        opt.step()
        ts.append(opt.t)
    assert ts == [0, 1, 1, 2, 2]
    assert "step = 2" in repr(opt)


def test_accumulation_hyper_validation():
    w = pg.ag_param([[1.0]])
    with pytest.raises(ValueError):
        pg.optimizer_sgd([w], accumulate_steps=0)
    with pytest.raises(ValueError, match="accumulate_steps must be a positive integer"):
        pg.optimizer_sgd([w], accumulate_steps=0.5)
    assert pg.optimizer_sgd([w], accumulate_steps=1.9).accumulate_steps == 1  # as.integer
    with pytest.raises(ValueError):
        pg.optimizer_sgd([w], lr=-1)
    with pytest.raises(ValueError):
        pg.optimizer_adam([w], beta1=1.0)


# ---- state round trip ----


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_state_round_trip_bit_for_bit(f64, kind):
    def make(W):
        if kind == "sgd":
            return pg.optimizer_sgd([W], lr=0.05, momentum=0.9, accumulate_steps=2)
        return pg.optimizer_adam([W], lr=0.05, accumulate_steps=2)

    x, y = pg.ag_tensor(X0), pg.ag_tensor(Y0)

    def train(W, opt, n):
        for _ in range(n):
            with pg.with_grad_tape():
                loss = pg.ag_mse_loss(pg.ag_matmul(W, x), y)
            pg.backward(loss)
            if opt.step():
                opt.zero_grad()

    W = pg.ag_param(W0)
    opt = make(W)
    train(W, opt, 5)  # odd: one micro-batch is pending in W.grad
    with pytest.warns(UserWarning, match=r"taken mid-accumulation \(1 of 2 backward passes\)"):
        st = opt.state()
    assert st["format"] == "ggmlR.ag_opt_state" and st["type"] == kind and st["accum_count"] == 1
    saved_w, saved_g = W.numpy(), W.grad
    train(W, opt, 6)

    W2 = pg.ag_param(saved_w)
    W2.grad = saved_g  # the pending gradient is the parameter's, not the state's
    opt2 = make(W2)
    assert opt2.load_state(st) is True
    assert opt2.t == st["t"] and opt2.accum_count == 1
    train(W2, opt2, 6)
    np.testing.assert_array_equal(W2.numpy(), W.numpy())
    assert opt2.t == opt.t


def test_load_state_validation():
    w = pg.ag_param([[1.0]])
    sgd, adam = pg.optimizer_sgd([w]), pg.optimizer_adam([w])
    with pytest.raises(ValueError):
        sgd.load_state({"format": "other"})
    with pytest.raises(ValueError):
        sgd.load_state(adam.state())
    with pytest.raises(ValueError):
        pg.optimizer_adam([w, pg.ag_param([[1.0]])]).load_state(adam.state())
    st = adam.state()
    with pytest.warns(pg.OptimizerHyperWarning, match=r"lr = 0.5 \(state 0.001\)"):
        pg.optimizer_adam([w], lr=0.5).load_state(st)


def test_hyperparameters_are_attributes():
    w = pg.ag_param([[1.0]])
    opt = pg.optimizer_sgd([w], lr=0.1, momentum=0.5, nesterov=True)
    assert opt.lr == pytest.approx(0.1) and opt.momentum == 0.5 and opt.nesterov is True
    opt.lr = 0.02
    assert opt.lr == 0.02
    with pytest.raises(TypeError):
        opt.lr = "fast"


# ---- print formats ----


def test_optimizer_print_formats():
    a, b = pg.ag_param([[1.0]]), pg.ag_param([[1.0]])
    assert (
        repr(pg.optimizer_sgd([a, b], lr=0.05))
        == "SGD optimizer | lr = 0.05 | momentum = 0 | params: 2 "
    )
    assert (
        repr(pg.optimizer_sgd([a], lr=0.1, momentum=0.9))
        == "SGD optimizer | lr = 0.1 | momentum = 0.9 | params: 1 "
    )
    assert (
        repr(pg.optimizer_adam([a, b]))
        == "Adam optimizer | lr = 0.001 | beta1 = 0.9 | beta2 = 0.999 | step = 0 | params: 2 "
    )
