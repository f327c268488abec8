"""The loss options of PyTorch (native/ops_loss_ce.c, ops_loss2.c's pos_weight): pos_weight for
the two BCE losses, weight / ignore_index / label_smoothing for softmax cross-entropy. Values and
gradients against torch in f64, f32 against f64, finite differences, the refusals, ag_compile
replays and user losses in ag_fit (eager and static)."""

import numpy as np
import pytest
from _fd import gradcheck

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the comparisons below skip and say so; the closed forms and refusals run
    torch = F = None

import pyggmlr as pg
from pyggmlr.errors import DTypeError, PyggmlrValueError, ShapeError

RTOL = 1e-10
needs_torch = pytest.mark.skipif(
    torch is None,
    reason="torch is not installed: the PyTorch comparison is skipped (scripts/test.sh installs "
    "the local torch 2.13 wheel; the finite-difference and closed-form tests still run)",
)


def ours(fn, x, *args, dtype="f64", **kw):
    """(loss, gradient into x) of fn(param x, *args, **kw)"""
    X = pg.ag_param(x, dtype=dtype)
    with pg.with_grad_tape():
        L = fn(X, *args, **kw)
    g = np.asarray(pg.backward(L)[X])
    pg.ag_tape_clear()
    return L.item(), g


def theirs(fn, x, *args, **kw):
    """(loss, gradient) of torch's fn on x.T ([batch, classes]), gradient back in our layout"""
    X = torch.tensor(x.T, dtype=torch.float64, requires_grad=True)
    L = fn(X, *args, **kw)
    L.backward()
    return L.item(), X.grad.numpy().T


def close(a, b, rtol=RTOL):
    (la, ga), (lb, gb) = a, b
    assert la == pytest.approx(lb, rel=rtol, abs=1e-300)
    np.testing.assert_allclose(ga, gb, rtol=rtol, atol=1e-15)


def T(a):
    return torch.tensor(np.asarray(a).T if np.ndim(a) == 2 else a, dtype=torch.float64)


@pytest.fixture
def data():
    rng = np.random.default_rng(31)
    x = rng.normal(scale=2.0, size=(3, 7))
    t = (rng.uniform(size=(3, 7)) > 0.4).astype(float)
    t[0, :2] = [0.3, 0.8]  # soft labels too
    return x, t


# ---- pos_weight ----


@needs_torch
@pytest.mark.parametrize("pw", [[0.5, 2.0, 7.0], [3.0], 2.5, [0.0, 1.0, 1.0]])
def test_bce_logits_pos_weight_vs_torch(data, pw):
    x, t = data
    a = ours(pg.ag_bce_with_logits_loss, x, t, pos_weight=pw)
    b = theirs(F.binary_cross_entropy_with_logits, x, T(t), pos_weight=T(np.ravel(pw)))
    close(a, b)


def test_bce_logits_pos_weight_tensor_and_row(data):
    x, t = data
    pw = np.array([0.5, 2.0, 7.0])
    ref = ours(pg.ag_bce_with_logits_loss, x, t, pos_weight=pw)
    for w in (
        pg.ag_tensor(pw.reshape(3, 1), dtype="f64"),
        pg.ag_tensor(pw.reshape(1, 3), dtype="f64"),
    ):
        got = ours(pg.ag_bce_with_logits_loss, x, t, pos_weight=w)
        assert got[0] == ref[0] and np.array_equal(got[1], ref[1])


@needs_torch
def test_bce_logits_pos_weight_large_logits():
    x = np.array([[-40.0, -5.0, 0.0, 5.0, 40.0]])
    t = np.array([[1.0, 0.0, 1.0, 1.0, 0.0]])
    a = ours(pg.ag_bce_with_logits_loss, x, t, pos_weight=3.0)
    b = theirs(F.binary_cross_entropy_with_logits, x, T(t), pos_weight=T([3.0]))
    close(a, b)


def np_bce_pw(p, t, pw):
    pw = np.asarray(pw, float).reshape(-1, 1)
    l1, l0 = np.maximum(np.log(p), -100), np.maximum(np.log(1 - p), -100)
    return np.mean(-(pw * t * l1 + (1 - t) * l0))


@needs_torch
@pytest.mark.parametrize("pw", [[0.5, 2.0, 7.0], 2.5])
def test_bce_prob_pos_weight(data, pw):
    x, t = data
    p = 1 / (1 + np.exp(-x))
    a = ours(pg.ag_binary_cross_entropy_loss, p, t, pos_weight=pw)
    # torch's BCELoss has no pos_weight: the same rule written with torch's ops
    P = torch.tensor(p.T, dtype=torch.float64, requires_grad=True)
    w = T(np.ravel(pw))
    L = -(w * T(t) * torch.log(P) + (1 - T(t)) * torch.log(1 - P)).mean()
    L.backward()
    close(a, (L.item(), P.grad.numpy().T))
    assert a[0] == pytest.approx(np_bce_pw(p, t, pw), rel=RTOL)
    # pos_weight 1 is the plain loss
    one = ours(pg.ag_binary_cross_entropy_loss, p, t, pos_weight=1.0)
    close(one, ours(pg.ag_binary_cross_entropy_loss, p, t), rtol=1e-14)


def test_bce_prob_pos_weight_clamped():
    p = np.array([[0.0, 1.0, 0.5]])
    t = np.array([[1.0, 0.0, 1.0]])
    loss, g = ours(pg.ag_binary_cross_entropy_loss, p, t, pos_weight=2.0)
    assert loss == pytest.approx((200 + 100 + 2 * np.log(2)) / 3, rel=1e-14)
    np.testing.assert_allclose(g, [[0.0, 0.0, -4 / 3]], rtol=1e-14)


def test_pos_weight_gradcheck(data):
    x, t = data
    gradcheck(lambda a: pg.ag_bce_with_logits_loss(a, t, pos_weight=[0.5, 2.0, 7.0]), x)
    p = 1 / (1 + np.exp(-x))
    gradcheck(lambda a: pg.ag_binary_cross_entropy_loss(a, t, pos_weight=[0.5, 2.0, 7.0]), p)


def test_pos_weight_f32(data):
    x, t = data
    for fn, v in (
        (pg.ag_bce_with_logits_loss, x),
        (pg.ag_binary_cross_entropy_loss, 1 / (1 + np.exp(-x))),
    ):
        a = ours(fn, v, t, pos_weight=[0.5, 2.0, 7.0], dtype="f32")
        b = ours(fn, v, t, pos_weight=[0.5, 2.0, 7.0])
        close(a, b, rtol=2e-5)


@pytest.mark.parametrize(
    "fn", [pg.ag_bce_with_logits_loss, pg.ag_binary_cross_entropy_loss], ids=["logits", "prob"]
)
def test_pos_weight_errors(fn):
    name = fn.__name__
    x, t = np.full((3, 4), 0.5), np.ones((3, 4))
    with pytest.raises(
        ShapeError,
        match=rf"^{name}: (pred is|logits are) \[3x4\] f32 but pos_weight is \[2x1\] f32; give one value per row \(3\) or a single value$",
    ):
        fn(x, t, pos_weight=[1.0, 2.0])
    with pytest.raises(
        PyggmlrValueError,
        match=rf"^{name}: pos_weight must be finite and >= 0, got -1 at position 1",
    ):
        fn(x, t, pos_weight=[1.0, -1.0, 1.0])
    with pytest.raises(
        PyggmlrValueError, match=rf"^{name}: pos_weight must be finite and >= 0, got inf"
    ):
        fn(x, t, pos_weight=np.inf)
    with pytest.raises(PyggmlrValueError, match="nan"):
        fn(x, t, pos_weight=[1.0, np.nan, 1.0])
    with pytest.raises(DTypeError, match=rf"^{name}: dtype mismatch"):
        fn(pg.ag_tensor(x, dtype="f64"), t, pos_weight=pg.ag_tensor([[1.0]], dtype="f32"))
    with pytest.raises(PyggmlrValueError, match="pos_weight must not require grad"):
        fn(x, t, pos_weight=pg.ag_param([[1.0]]))
    with pytest.raises(Exception, match=rf"^{name}: pos_weight must be"):
        fn(x, t, pos_weight="a")


# ---- cross-entropy options ----

K, B = 4, 9


@pytest.fixture
def ce():
    rng = np.random.default_rng(7)
    x = rng.normal(scale=1.5, size=(K, B))
    y = np.array([0, 3, 1, 1, 2, 3, 0, 2, 1])
    w = np.array([0.5, 2.0, 1.0, 3.0])
    return x, y, w


def ty(y):
    return torch.tensor(np.asarray(y), dtype=torch.long)


OPTS = [
    dict(weight=True),
    dict(ignore_index=1),
    dict(ignore_index=-100),
    dict(label_smoothing=0.2),
    dict(weight=True, ignore_index=3),
    dict(weight=True, label_smoothing=0.15),
    dict(ignore_index=2, label_smoothing=0.3),
    dict(weight=True, ignore_index=0, label_smoothing=0.25),
]


def _kw(o, w):
    kw = dict(o)
    if kw.pop("weight", False):
        kw["weight"] = w
    return kw


@needs_torch
@pytest.mark.parametrize("opt", OPTS, ids=lambda o: "+".join(o))
def test_ce_ids_vs_torch(ce, opt):
    x, y, w = ce
    kw = _kw(opt, w)
    tkw = {k: (T(v) if k == "weight" else v) for k, v in kw.items()}
    b = theirs(F.cross_entropy, x, ty(y), **tkw)
    close(ours(pg.ag_softmax_cross_entropy_loss, x, y, **kw), b)
    # every form of ids: a [1, B] row, a [B, 1] column, f64 and f32 tensors
    for ids in (y.reshape(1, -1), y.reshape(-1, 1), pg.ag_tensor(y.reshape(1, -1), dtype="f32")):
        close(ours(pg.ag_softmax_cross_entropy_loss, x, ids, **kw), b)


@needs_torch
def test_ce_ignore_negative_ids(ce):
    x, y, w = ce
    y = y.copy()
    y[[1, 4]] = -100
    for kw in (dict(ignore_index=-100), dict(ignore_index=-100, weight=w, label_smoothing=0.1)):
        tkw = {k: (T(v) if k == "weight" else v) for k, v in kw.items()}
        close(
            ours(pg.ag_softmax_cross_entropy_loss, x, y, **kw),
            theirs(F.cross_entropy, x, ty(y), **tkw),
        )


@needs_torch
@pytest.mark.parametrize(
    "opt", [o for o in OPTS if "ignore_index" not in o], ids=lambda o: "+".join(o)
)
def test_ce_matrix_targets_vs_torch(ce, opt):
    x, y, w = ce
    kw = _kw(opt, w)
    tkw = {k: (T(v) if k == "weight" else v) for k, v in kw.items()}
    rng = np.random.default_rng(2)
    soft = rng.dirichlet(np.ones(K), size=B).T
    onehot = np.eye(K)[:, y]
    for tm in (soft, onehot):  # a matrix is torch's probability target, one-hot included
        close(
            ours(pg.ag_softmax_cross_entropy_loss, x, tm, **kw),
            theirs(F.cross_entropy, x, T(tm), **tkw),
        )


def test_ce_no_options_same_bits(ce):
    x, y, _ = ce
    a = ours(pg.ag_softmax_cross_entropy_loss, x, y)
    b = ours(
        pg.ag_softmax_cross_entropy_loss, x, y, weight=None, ignore_index=None, label_smoothing=0
    )
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
    # weight 1 everywhere: torch's mean over the batch, to rounding
    close(ours(pg.ag_softmax_cross_entropy_loss, x, y, weight=np.ones(K)), a, rtol=1e-14)


def test_ce_options_gradcheck(ce):
    x, y, w = ce
    gradcheck(
        lambda a: pg.ag_softmax_cross_entropy_loss(
            a, y, weight=w, ignore_index=0, label_smoothing=0.25
        ),
        x,
    )
    soft = np.random.default_rng(4).dirichlet(np.ones(K), size=B).T
    gradcheck(lambda a: pg.ag_softmax_cross_entropy_loss(a, soft, weight=w, label_smoothing=0.1), x)


def test_ce_options_f32(ce):
    x, y, w = ce
    kw = dict(weight=w, ignore_index=0, label_smoothing=0.25)
    close(
        ours(pg.ag_softmax_cross_entropy_loss, x, y, dtype="f32", **kw),
        ours(pg.ag_softmax_cross_entropy_loss, x, y, **kw),
        rtol=2e-5,
    )


def test_ce_option_errors(ce):
    x, y, w = ce
    op = "ag_softmax_cross_entropy_loss"
    f = pg.ag_softmax_cross_entropy_loss
    with pytest.raises(
        ShapeError,
        match=rf"^{op}: logits are \[4x9\] f32 but weight is \[3x1\] f32; give one value per class \(4\)$",
    ):
        f(x, y, weight=[1.0, 2.0, 3.0])
    with pytest.raises(
        PyggmlrValueError,
        match=rf"^{op}: weight must be finite and >= 0, got -2 at position 1 of \[4x1\]",
    ):
        f(x, y, weight=[1.0, -2.0, 1.0, 1.0])
    with pytest.raises(PyggmlrValueError, match=rf"^{op}: weight must be finite and >= 0, got nan"):
        f(x, y, weight=[1.0, np.nan, 1.0, 1.0])
    for ls in (1.0, -0.1, np.nan, 1.5):
        with pytest.raises(
            PyggmlrValueError, match=rf"^{op}: label_smoothing must be a number in \[0, 1\), got"
        ):
            f(x, y, label_smoothing=ls)
    with pytest.raises(
        PyggmlrValueError, match=rf"^{op}: label_smoothing must be a number in \[0, 1\), got 'a'"
    ):
        f(x, y, label_smoothing="a")
    for ig in (1.5, np.inf):
        with pytest.raises(
            PyggmlrValueError, match=rf"^{op}: ignore_index must be a whole number, got"
        ):
            f(x, y, ignore_index=ig)
    with pytest.raises(
        PyggmlrValueError, match=rf"^{op}: ignore_index must be a whole number, got True"
    ):
        f(x, y, ignore_index=True)
    with pytest.raises(
        PyggmlrValueError, match=rf"^{op}: ignore_index applies to class ids, but target is \[4x9\]"
    ):
        f(x, np.eye(K)[:, y], ignore_index=0)
    y2 = y.copy()
    y2[3] = -1
    with pytest.raises(
        PyggmlrValueError,
        match=rf"^{op}: class id -1 at position 3 is out of range \[0, 4\) for logits \[4x9\] f32 \(and not ignore_index -100\)",
    ):
        f(x, y2, ignore_index=-100)
    with pytest.raises(PyggmlrValueError, match="weight must not require grad"):
        f(x, y, weight=pg.ag_param(w))


def test_ce_all_ignored_is_nan(ce):
    x, y, _ = ce
    loss, g = ours(pg.ag_softmax_cross_entropy_loss, x, np.zeros(B), ignore_index=0)
    assert np.isnan(loss) and np.array_equal(g, np.zeros((K, B)))  # torch: 0 / 0, gradient 0


# ---- compiled replays, memory, ag_fit ----


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_replay_reads_new_ids(ce, dtype):
    x0, y0, w = ce
    rng = np.random.default_rng(9)
    W = pg.ag_param(rng.normal(size=(K, 5)), dtype=dtype)
    wt = pg.ag_tensor(w, dtype=dtype)

    def step(xin, yin):
        return pg.ag_softmax_cross_entropy_loss(
            pg.ag_matmul(W, xin), yin, weight=wt, ignore_index=2, label_smoothing=0.1
        )

    ids0 = pg.ag_tensor(y0.reshape(1, -1), dtype=dtype)
    g = pg.ag_compile(step, pg.ag_tensor(rng.normal(size=(5, B)), dtype=dtype), ids0, build="grad")
    for _ in range(3):
        xi, yi = rng.normal(size=(5, B)), rng.integers(0, K, size=(1, B)).astype(float)
        loss, grads = g(xi, yi)
        with pg.with_grad_tape():
            le = step(pg.ag_tensor(xi, dtype=dtype), pg.ag_tensor(yi, dtype=dtype))
        ge = pg.backward(le)
        pg.ag_tape_clear()
        W.grad = None
        assert loss == le.item() and np.array_equal(grads[W.id], ge[W])


def test_compiled_replay_pos_weight(data):
    x, t = data
    W = pg.ag_param(np.random.default_rng(1).normal(size=(3, 3)), dtype="f64")
    pw = pg.ag_tensor([0.5, 2.0, 7.0], dtype="f64")

    def step(xin, tin):
        return pg.ag_bce_with_logits_loss(pg.ag_matmul(W, xin), tin, pos_weight=pw)

    g = pg.ag_compile(
        step, pg.ag_tensor(x, dtype="f64"), pg.ag_tensor(t, dtype="f64"), build="grad"
    )
    loss, grads = g(x[::-1].copy(), t)
    with pg.with_grad_tape():
        le = step(pg.ag_tensor(x[::-1].copy(), dtype="f64"), pg.ag_tensor(t, dtype="f64"))
    ge = pg.backward(le)
    pg.ag_tape_clear()
    assert loss == le.item() and np.array_equal(grads[W.id], ge[W])


def test_tape_memory_counts_weight(ce):
    x, y, w = ce
    reps = []
    for kw in (dict(label_smoothing=0.1), dict(weight=w, label_smoothing=0.1)):
        X = pg.ag_param(x, dtype="f64")
        with pg.with_grad_tape():
            pg.ag_softmax_cross_entropy_loss(X, y, **kw)
            reps.append(pg.ag_tape_memory())
        pg.ag_tape_clear()
    a, b = reps
    assert a["nodes"] == b["nodes"] == 1 and a["bytes_snapshots"] >= x.nbytes  # the softmax
    assert b["bytes_snapshots"] - a["bytes_snapshots"] == w.nbytes  # the weight it keeps


@pytest.mark.parametrize("static", [False, True])
def test_user_losses_in_ag_fit(static):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 96))
    yb = np.vstack([(x[0] + x[1] > 0), (x[2] - 0.5 * x[3] > 0)]).astype(float)
    yc = (x[0] > 0).astype(float) + (x[1] > 0)
    cases = [
        (yb, 2, lambda out, y: pg.ag_bce_with_logits_loss(out, y, pos_weight=[2.0, 0.5])),
        (
            yb,
            2,
            lambda out, y: pg.ag_binary_cross_entropy_loss(pg.ag_sigmoid(out), y, pos_weight=3.0),
        ),
        (
            yc.reshape(1, -1),
            3,
            lambda out, y: pg.ag_softmax_cross_entropy_loss(
                out, y, weight=[1.0, 0.5, 2.0], ignore_index=1, label_smoothing=0.1
            ),
        ),
    ]
    for y, nout, loss in cases:
        pg.ggml_set_seed(4)
        m = pg.ag_sequential(pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, nout))
        h = pg.ag_fit(
            m, x, y, loss=loss, nepoch=6, batch_size=16, lr=0.05, silent=True, seed=2, static=static
        )
        assert np.all(np.isfinite(h.loss)) and h.loss[-1] < h.loss[0]
