"""The losses beyond ggmlR's (ops_loss.py / native/ops_loss2.c): values against closed forms
computed here in numpy double, exact gradients (closed form and central differences in f64),
f32 against f64, the error texts, identities, ag_compile replays and ag_fit's loss names."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import DTypeError, PyggmlrValueError, ShapeError

# ---- closed forms (numpy, double) ----


def np_bce(p, t):
    return np.mean(-(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log(1 - p), -100)))


def np_bce_grad(p, t):
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(np.log(p) > -100, -t / p, 0) + np.where(
            np.log(1 - p) > -100, (1 - t) / (1 - p), 0
        )
    return g / p.size


def np_bcel(x, t):
    return np.mean(np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x))))


def np_bcel_grad(x, t):
    return (1 / (1 + np.exp(-x)) - t) / x.size


def np_huber(p, t, delta):
    d = p - t
    return np.mean(np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta)))


def np_huber_grad(p, t, delta):
    return np.clip(p - t, -delta, delta) / p.size


def np_wmse(p, t, w):
    return np.mean(np.broadcast_to(w, p.shape) * (p - t) ** 2)


def _run(f, *arrays, dtype="f64"):
    """(loss value, gradient into the first argument) of f(param, *constants)."""
    x = pg.ag_param(arrays[0], dtype=dtype)
    with pg.with_grad_tape():
        loss = f(x, *arrays[1:])
    return loss.item(), pg.backward(loss)[x]


@pytest.fixture
def data(rng):
    p = rng.uniform(0.02, 0.98, size=(3, 5))
    t = rng.uniform(0, 1, size=(3, 5))
    # logits / predictions with differences to t spread over [-3, 3] (both Huber branches)
    return (
        p,
        t,
        t
        + rng.permutation(np.linspace(-3, 3, 15)).reshape(3, 5)
        + rng.uniform(-0.1, 0.1, size=(3, 5)),
    )


def test_bce_values_and_gradient(data):
    p, t, _ = data
    v, g = _run(pg.ag_binary_cross_entropy_loss, p, t)
    assert v == pytest.approx(np_bce(p, t), rel=1e-13)
    np.testing.assert_allclose(g, np_bce_grad(p, t), rtol=1e-12)


def test_bce_clamps_logs_at_minus_100():
    # p = 0 and 1 with hard labels: the clamped log gives 100 per wrong element, no inf / NaN
    p = np.array([[0.0, 1.0, 0.0, 1.0]])
    t = np.array([[1.0, 0.0, 0.0, 1.0]])
    v, g = _run(pg.ag_binary_cross_entropy_loss, p, t)
    assert v == 200 / 4
    # the clamped terms are flat (gradient 0); the others: (1 - t) / (1 - p) at p = 0 -> 1, -t / p at p = 1 -> -1
    np.testing.assert_array_equal(g, np.array([[0.0, 0.0, 1.0, -1.0]]) / 4)
    v32, _ = _run(pg.ag_binary_cross_entropy_loss, p, t, dtype="f32")
    assert v32 == 50.0


def test_bce_with_logits_values_and_stability(data):
    _, t, x = data
    v, g = _run(pg.ag_bce_with_logits_loss, x, t)
    assert v == pytest.approx(np_bcel(x, t), rel=1e-13)
    np.testing.assert_allclose(g, np_bcel_grad(x, t), rtol=1e-12, atol=1e-17)
    # huge logits: finite loss |x| for the wrong label, gradient +-1/n
    big = np.array([[1000.0, -1000.0, 1000.0]])
    v, g = _run(pg.ag_bce_with_logits_loss, big, np.array([[0.0, 1.0, 1.0]]))
    assert v == pytest.approx(2000 / 3) and np.array_equal(g, np.array([[1.0, -1.0, 0.0]]) / 3)
    for dtype in ("f32", "f64"):  # equals BCE of sigmoid(x) where that is accurate
        v1, _ = _run(pg.ag_bce_with_logits_loss, x / 3, t, dtype=dtype)
        v2, _ = _run(
            lambda a, b: pg.ag_binary_cross_entropy_loss(pg.ag_sigmoid(a), b), x / 3, t, dtype=dtype
        )
        assert v1 == pytest.approx(v2, rel=1e-5 if dtype == "f32" else 1e-12)


@pytest.mark.parametrize("delta", [0.5, 1.0, 2.5])
def test_huber_values_and_gradient(data, delta):
    p, t, x = data
    v, g = _run(lambda a, b: pg.ag_huber_loss(a, b, delta=delta), x, t)
    d = x - t
    assert (np.abs(d) < delta).any() and (np.abs(d) >= delta).any()  # both branches are used
    assert v == pytest.approx(np_huber(x, t, delta), rel=1e-13)
    np.testing.assert_allclose(g, np_huber_grad(x, t, delta), rtol=1e-13)


def test_huber_identities(data):
    _, t, x = data
    # a delta above every |d|: half the MSE, bit for bit in the gradient's direction
    v, g = _run(lambda a, b: pg.ag_huber_loss(a, b, 1e6), x, t)
    vm, gm = _run(pg.ag_mse_loss, x, t)
    assert v == pytest.approx(vm / 2, rel=1e-14)
    np.testing.assert_allclose(g, gm / 2, rtol=1e-14)
    # at |d| == delta the two branches meet: 0.5 delta^2, gradient delta
    v, g = _run(lambda a, b: pg.ag_huber_loss(a, b, 2.0), np.array([[2.0, -2.0]]), np.zeros((1, 2)))
    assert v == 2.0 and np.array_equal(g, np.array([[1.0, -1.0]]))


def test_mae_values_and_subgradient(data):
    _, t, x = data
    v, g = _run(pg.ag_mae_loss, x, t)
    assert v == pytest.approx(np.mean(np.abs(x - t)), rel=1e-13)
    np.testing.assert_array_equal(g, np.sign(x - t) / x.size)
    v, g = _run(pg.ag_mae_loss, np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 0.0, 5.0]]))
    assert v == pytest.approx(4 / 3) and np.array_equal(g, np.array([[0.0, 1.0, -1.0]]) / 3)


@pytest.mark.parametrize("wshape", [(3, 5), (3, 1), (1, 5), (1, 1)])
def test_weighted_mse_values_and_broadcast(data, rng, wshape):
    _, t, x = data
    w = rng.uniform(0, 2, size=wshape)
    v, g = _run(lambda a, b: pg.ag_weighted_mse_loss(a, b, w), x, t)
    assert v == pytest.approx(np_wmse(x, t, w), rel=1e-13)
    np.testing.assert_allclose(g, 2 * np.broadcast_to(w, x.shape) * (x - t) / x.size, rtol=1e-13)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_weighted_mse_with_unit_weight_is_mse_bitwise(data, dtype):
    _, t, x = data
    ref = _run(pg.ag_mse_loss, x, t, dtype=dtype)
    for w in (np.ones((3, 5)), np.ones((1, 1)), 1.0):
        v, g = _run(lambda a, b, w=w: pg.ag_weighted_mse_loss(a, b, w), x, t, dtype=dtype)
        assert v == ref[0] and np.array_equal(g, ref[1])


LOSSES = {
    "bce": (pg.ag_binary_cross_entropy_loss, "p"),
    "bce_with_logits": (pg.ag_bce_with_logits_loss, "x"),
    "huber": (lambda a, b: pg.ag_huber_loss(a, b, 1.3), "x"),
    "mae": (pg.ag_mae_loss, "x"),
    "weighted_mse": (
        lambda a, b: pg.ag_weighted_mse_loss(a, b, np.arange(1.0, 4.0).reshape(3, 1)),
        "x",
    ),
}


def _case(data, name):
    """The loss, its first argument (probabilities or logits, as the loss takes) and the target."""
    f, arg = LOSSES[name]
    p, t, x = data
    return f, {"p": p, "x": x}[arg], t


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_finite_difference_gradients_f64(data, name):
    f, a, t = _case(data, name)
    _, g = _run(f, a, t)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[i] += eps
        am[i] -= eps
        fd[i] = (_run(f, ap, t)[0] - _run(f, am, t)[0]) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    f64 = pg.ag_param(a, dtype="f64")
    assert pg.ag_gradcheck(lambda d: f(d["a"], t), {"a": f64}, quiet=True)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_f32_agrees_with_f64(data, name):
    f, a, t = _case(data, name)
    v64, g64 = _run(f, a, t)
    v32, g32 = _run(f, a, t, dtype="f32")
    assert g32.dtype == np.float32
    assert v32 == pytest.approx(v64, rel=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-6)


def test_tape_labels_and_requires_grad(data):
    p, t, x = data
    labels = {
        "bce": "bce_loss",
        "bce_with_logits": "bce_logits_loss",
        "huber": "huber_loss",
        "mae": "mae_loss",
        "weighted_mse": "weighted_mse_loss",
    }
    for name, (f, arg) in LOSSES.items():
        a = pg.ag_param({"p": p, "x": x}[arg])
        with pg.with_grad_tape():
            loss = f(a, t)
        assert loss.shape == (1, 1) and loss.requires_grad and loss.op == labels[name]
        assert not f(pg.ag_tensor({"p": p, "x": x}[arg]), t).requires_grad  # target never gets one
        rep = pg.ag_tape_memory(quiet=True)
        assert labels[name] in [r["op"] for r in rep["by_op"]]


def test_errors_name_function_argument_shapes_dtype():
    a, b = pg.ag_tensor(np.full((2, 3), 0.5)), np.full((3, 2), 0.5)
    for name in (
        "ag_binary_cross_entropy_loss",
        "ag_bce_with_logits_loss",
        "ag_huber_loss",
        "ag_mae_loss",
    ):
        f = getattr(pg, name)
        with pytest.raises(
            ShapeError,
            match=rf"^{name}: pred is \[2x3\] f32 but target is \[3x2\] f32; they must have the same shape",
        ):
            f(a, b)
        with pytest.raises(
            DTypeError,
            match=rf"^{name}: dtype mismatch: pred is \[2x3\] f32, target is \[2x3\] f64",
        ):
            f(a, pg.ag_tensor(np.full((2, 3), 0.5), dtype="f64"))
        with pytest.raises(ShapeError, match=rf"^{name}: input \[0x3\] f32 is empty"):
            f(pg.ag_tensor(np.zeros((0, 3))), np.zeros((0, 3)))
    with pytest.raises(
        PyggmlrValueError,
        match=r"^ag_binary_cross_entropy_loss: pred must lie in \[0, 1\], got 1.5 at \[1, 2\] \(0-based\) of \[2x3\] f32; pred are probabilities \(for logits use ag_bce_with_logits_loss\)$",
    ):
        pg.ag_binary_cross_entropy_loss(
            np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 1.5]]), np.zeros((2, 3))
        )
    with pytest.raises(
        PyggmlrValueError,
        match=r"^ag_binary_cross_entropy_loss: pred must lie in \[0, 1\], got nan at \[0, 0\]",
    ):
        pg.ag_binary_cross_entropy_loss(np.array([[np.nan]]), np.zeros((1, 1)))
    with pytest.raises(
        PyggmlrValueError,
        match=r"^ag_binary_cross_entropy_loss: target must lie in \[0, 1\], got -1 at \[0, 1\] \(0-based\) of \[1x2\] f32$",
    ):
        pg.ag_binary_cross_entropy_loss(np.array([[0.5, 0.5]]), np.array([[0.0, -1.0]]))
    with pytest.raises(
        PyggmlrValueError,
        match=r"^ag_bce_with_logits_loss: target must lie in \[0, 1\], got 2 at \[0, 0\]",
    ):
        pg.ag_bce_with_logits_loss(np.array([[5.0]]), np.array([[2.0]]))
    for bad, shown in ((0, "0"), (-1, "-1"), (float("inf"), "inf"), (float("nan"), "nan")):
        with pytest.raises(
            PyggmlrValueError,
            match=rf"^ag_huber_loss: delta must be a finite number > 0, got {shown}$",
        ):
            pg.ag_huber_loss(a, a, delta=bad)
    with pytest.raises(
        PyggmlrValueError, match=r"^ag_huber_loss: delta must be a finite number > 0, got 'a'$"
    ):
        pg.ag_huber_loss(a, a, delta="a")
    name = "ag_weighted_mse_loss"
    with pytest.raises(
        ShapeError,
        match=rf"^{name}: pred is \[2x3\] f32 but weight is \[2x2\] f32; weight must have pred's shape, or be a \[2, 1\] column, a \[1, 3\] row or \[1, 1\]",
    ):
        pg.ag_weighted_mse_loss(a, a, np.ones((2, 2)))
    with pytest.raises(
        DTypeError, match=rf"^{name}: dtype mismatch: pred is \[2x3\] f32, weight is \[2x3\] f64"
    ):
        pg.ag_weighted_mse_loss(a, a, pg.ag_tensor(np.ones((2, 3)), dtype="f64"))
    with pytest.raises(
        PyggmlrValueError,
        match=rf"^{name}: weight must be finite and >= 0, got -1 at \[1, 0\] \(0-based\) of \[2x1\] f32$",
    ):
        pg.ag_weighted_mse_loss(a, a, np.array([[1.0], [-1.0]]))
    with pytest.raises(PyggmlrValueError, match=rf"^{name}: weight must not require grad"):
        pg.ag_weighted_mse_loss(a, a, pg.ag_param(np.ones((2, 3))))
    # a failed call changes nothing: no tape node, no live temporaries
    with pg.with_grad_tape():
        with pytest.raises(PyggmlrValueError):
            pg.ag_binary_cross_entropy_loss(pg.ag_param(np.full((2, 3), 2.0)), np.zeros((2, 3)))
        assert pg.ag_tape_memory(quiet=True)["nodes"] == 0


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_replay_equals_eager(rng, name, dtype):
    f, arg = LOSSES[name]
    W = pg.ag_param(rng.normal(size=(3, 4)), dtype=dtype)
    act = pg.ag_sigmoid if arg == "p" else (lambda z: z)

    def step(xin, tin):
        return f(act(pg.ag_matmul(W, xin)), tin)

    x0, t0 = rng.normal(size=(4, 5)), rng.uniform(0, 1, size=(3, 5))
    g = pg.ag_compile(
        step, pg.ag_tensor(x0, dtype=dtype), pg.ag_tensor(t0, dtype=dtype), build="grad"
    )
    for _ in range(3):
        x, t = rng.normal(size=(4, 5)), rng.uniform(0, 1, size=(3, 5))  # new targets are read too
        loss, grads = g(x, t)
        with pg.with_grad_tape():
            le = step(pg.ag_tensor(x, dtype=dtype), pg.ag_tensor(t, dtype=dtype))
        ge = pg.backward(le)
        pg.ag_tape_clear()
        W.grad = None
        assert loss == le.item() and np.array_equal(grads[W.id], ge[W])
    if name in (
        "bce",
        "bce_with_logits",
    ):  # a replay with targets outside [0, 1] raises, as eager does
        with pytest.raises(PyggmlrValueError, match="target must lie in"):
            g(x, t + 2)


FIT_LOSSES = ["binary_cross_entropy", "bce_with_logits", "huber", "mae"]


def _fit_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 96))
    y = np.vstack([(x[0] + x[1] > 0), (x[2] - 0.5 * x[3] > 0)]).astype(float)
    return x, y


@pytest.mark.parametrize("loss", FIT_LOSSES)
@pytest.mark.parametrize("static", [False, True])
def test_ag_fit_loss_names_train(loss, static):
    x, y = _fit_data()
    pg.ggml_set_seed(4)
    last = "sigmoid" if loss == "binary_cross_entropy" else None
    m = pg.ag_sequential(pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, 2, last))
    h = pg.ag_fit(
        m, x, y, loss=loss, nepoch=6, batch_size=16, lr=0.05, silent=True, seed=2, static=static
    )
    assert h.loss[-1] < 0.8 * h.loss[0]
    if loss in ("binary_cross_entropy", "bce_with_logits"):  # binary accuracy (issue 31)
        assert np.all(np.isfinite(h.accuracy)) and h.accuracy[-1] > h.accuracy[0]
    else:
        assert all(np.isnan(h.accuracy))  # no accuracy for regression losses


@pytest.mark.parametrize("loss", FIT_LOSSES)
def test_ag_fit_static_equals_eager(loss):
    x, y = _fit_data()
    runs = []
    same = dict(nepoch=2, batch_size=16, val_split=0.25, silent=True, seed=2)  # only static varies
    for static in (False, True):
        pg.ggml_set_seed(4)
        last = "sigmoid" if loss == "binary_cross_entropy" else None
        m = pg.ag_sequential(pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, 2, last))
        h = pg.ag_fit(m, x, y, loss=loss, static=static, **same)
        runs.append((h.loss, h.val_loss, [t.numpy() for t in m.parameters().values()],
                     h.accuracy + h.val_accuracy))  # fmt: skip
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]
    assert np.array_equal(runs[0][3], runs[1][3], equal_nan=True)  # binary accuracy too
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][2], runs[1][2]))


def test_ag_fit_loss_name_errors():
    x, y = _fit_data()
    m = pg.ag_linear(4, 2)
    with pytest.raises(
        PyggmlrValueError, match='"binary_cross_entropy", "bce_with_logits", "huber", "mae" or a'
    ):
        pg.ag_fit(m, x, y, loss="bce", nepoch=1, silent=True)
    with pytest.raises(PyggmlrValueError, match='loss "huber" needs targets y'):
        pg.ag_fit(m, x, None, loss="huber", nepoch=1, silent=True)
    # a linear output is not a probability: BCE says so and points to the logits form
    with pytest.raises(PyggmlrValueError, match="pred must lie in .* ag_bce_with_logits_loss"):
        pg.ag_fit(
            pg.ag_linear(4, 2),
            x * 10,
            y,
            loss="binary_cross_entropy",
            nepoch=1,
            silent=True,
            static=False,
        )


def test_against_torch(data):
    torch = pytest.importorskip(
        "torch",
        reason="torch is not installed: the PyTorch comparison is skipped "
        "(the closed-form tests above cover the same definitions)",
    )
    p, t, x = data
    F = torch.nn.functional
    cases = [
        (pg.ag_binary_cross_entropy_loss, p, lambda a: F.binary_cross_entropy(a, torch.tensor(t))),
        (
            pg.ag_bce_with_logits_loss,
            x,
            lambda a: F.binary_cross_entropy_with_logits(a, torch.tensor(t)),
        ),
        (
            lambda a, b: pg.ag_huber_loss(a, b, 0.7),
            x,
            lambda a: F.huber_loss(a, torch.tensor(t), delta=0.7),
        ),
        (pg.ag_mae_loss, x, lambda a: F.l1_loss(a, torch.tensor(t))),
    ]
    for f, a, tf in cases:
        v, g = _run(f, a, t)
        ta = torch.tensor(a, requires_grad=True)
        lt = tf(ta)
        lt.backward()
        assert v == pytest.approx(lt.item(), rel=1e-12)
        np.testing.assert_allclose(g, ta.grad.numpy(), rtol=1e-10, atol=1e-15)


def test_every_new_loss_and_fit_name_has_a_parity_case():
    import parity  # tests/parity (every case registered)

    names = " ".join(c.name for c in parity.CASES)
    for op in pg.ops_loss.__all__:
        assert "loss:" + op[3:-5] in names, f"{op} has no parity case"
    for loss in ("bce,", "bce_with_logits", "huber", "mae"):
        assert "ag_fit: " + loss in names, loss


@pytest.mark.parametrize("bad", [None, "a", [1, [2]], object(), 1j, {"a": 1}])
def test_bad_input_raises_typed_errors_and_frees_everything(bad):
    from pyggmlr.errors import PyggmlrError

    gc_live = pg.ag_live_objects()
    t = pg.ag_tensor(np.full((2, 2), 0.5))
    fns = [
        pg.ag_binary_cross_entropy_loss,
        pg.ag_bce_with_logits_loss,
        pg.ag_huber_loss,
        pg.ag_mae_loss,
        lambda a, b: pg.ag_weighted_mse_loss(a, b, 1.0),
        lambda a, b: pg.ag_weighted_mse_loss(a, np.full((2, 2), 0.5), b),
    ]
    for f in fns:
        for args in ((t, bad), (bad, t)):
            with pytest.raises(PyggmlrError):
                f(*args)
    with pytest.raises(PyggmlrValueError, match="ag_huber_loss: delta"):
        pg.ag_huber_loss(t, t, bad)
    del t, args
    import gc

    gc.collect()
    assert pg.ag_live_objects() == gc_live
