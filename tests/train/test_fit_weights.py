"""ag_fit(sample_weight=, class_weight=) (native/fit_weight.c, native/fit_wloss.c): weighted
training runs against PyTorch in f64 (reduction="none" times the weights, summed, divided by the
batch size: keras' sum_over_batch_size), eager against static, the History's losses and the
errors."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the comparisons skip and say so; eager / static, goldens and refusals run
    torch = F = None
needs_torch = pytest.mark.skipif(
    torch is None,
    reason="torch is not installed: the PyTorch comparison is skipped (scripts/test.sh installs "
    "the local torch 2.13 wheel)",
)

N, B, LR = 24, 8, 0.1


def _data(kind, seed=3):
    r = np.random.default_rng(seed)
    x = r.normal(size=(3, N))
    if kind == "cross_entropy":
        y = r.integers(0, 3, size=N).astype(float)
    elif kind == "binary_cross_entropy":
        y = r.integers(0, 2, size=(1, N)).astype(float)
    else:
        y = r.normal(size=(2, N))
    return x, y


def _model(kind):
    pg.ggml_set_seed(7)
    out = {"cross_entropy": 3, "binary_cross_entropy": 1, "mse": 2}[kind]
    last = "sigmoid" if kind == "binary_cross_entropy" else None
    return pg.ag_sequential(pg.ag_linear(3, 5, "tanh"), pg.ag_linear(5, out, last))


def _torch_run(m, kind, x, y, w, nepoch):
    """The same SGD run in torch: batches in order (shuffle=False), the last partial one dropped."""
    p = {
        k: torch.tensor(t.numpy(), dtype=torch.float64, requires_grad=True)
        for k, t in m.parameters().items()
    }
    X = torch.tensor(x.T)
    losses = []
    for _ in range(nepoch):
        losses.append(0.0)
        for b in range(N // B):
            s = slice(b * B, (b + 1) * B)
            h = torch.tanh(X[s] @ p["layer1_W"].T + p["layer1_b"].T)
            o = h @ p["layer2_W"].T + p["layer2_b"].T
            wb = torch.tensor(w[s])
            if kind == "cross_entropy":
                per = F.cross_entropy(o, torch.tensor(y[s]).long(), reduction="none")
            elif kind == "binary_cross_entropy":
                per = F.binary_cross_entropy(
                    torch.sigmoid(o), torch.tensor(y[0, s])[:, None], reduction="none"
                ).mean(dim=1)
            else:
                per = F.mse_loss(o, torch.tensor(y[:, s].T), reduction="none").mean(dim=1)
            loss = (per * wb).sum() / B
            losses[-1] += loss.item() / (N // B)
            gs = torch.autograd.grad(loss, list(p.values()))
            with torch.no_grad():
                for t, g in zip(p.values(), gs):
                    t -= LR * g
    return {k: t.detach().numpy() for k, t in p.items()}, losses


CASES = [
    ("cross_entropy", dict(class_weight={0: 2.0, 2: 0.5}), True),  # class 1 missing: weight 1
    ("cross_entropy", dict(sample_weight=True, class_weight=[1.0, 3.0, 0.25]), True),
    ("binary_cross_entropy", dict(sample_weight=True, class_weight={1: 4.0}), True),
    ("mse", dict(sample_weight=True), False),
]


def _weights(kind, kw, y):
    r = np.random.default_rng(11)
    sw = r.uniform(0, 2, size=N) if kw.get("sample_weight") is True else None
    w = np.ones(N) if sw is None else sw.copy()
    cw = kw.get("class_weight")
    if cw is not None:
        ids = y.reshape(-1).astype(int)
        tab = cw if isinstance(cw, dict) else dict(enumerate(cw))
        w *= np.array([tab.get(c, 1.0) for c in ids])
    args = dict(kw)
    if sw is not None:
        args["sample_weight"] = sw
    return w, args


@needs_torch
@pytest.mark.parametrize("kind,kw,_cls", CASES)
def test_weighted_fit_matches_torch(f64, kind, kw, _cls):
    x, y = _data(kind)
    w, args = _weights(kind, kw, y)
    m = _model(kind)
    want, losses = _torch_run(m, kind, x, y, w, nepoch=2)
    h = pg.ag_fit(
        m,
        x,
        y,
        loss=kind,
        optimizer="sgd",
        lr=LR,
        nepoch=2,
        batch_size=B,
        shuffle=False,
        silent=True,
        static=False,
        **args,
    )
    for k, t in m.parameters().items():
        np.testing.assert_allclose(t.numpy(), want[k], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(h.loss, losses, rtol=1e-10)  # the History: the weighted loss


@pytest.mark.parametrize("kind,kw,_cls", CASES)
def test_weighted_static_equals_eager(kind, kw, _cls):
    x, y = _data(kind)
    _, args = _weights(kind, kw, y)
    runs = []
    for static in (False, True):
        m = _model(kind)
        h = pg.ag_fit(
            m,
            x,
            y,
            loss=kind,
            nepoch=3,
            batch_size=B,
            val_split=0.25,
            seed=5,
            silent=True,
            static=static,
            **args,
        )
        runs.append((h.loss, h.val_loss, [t.numpy() for t in m.parameters().values()]))
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][2], runs[1][2]))


def test_unit_weights_give_the_unweighted_bits():
    x, y = _data("cross_entropy")
    runs = []
    for kw in ({}, dict(sample_weight=np.ones(N)), dict(class_weight={0: 1, 1: 1, 2: 1})):
        m = _model("cross_entropy")
        h = pg.ag_fit(m, x, y, nepoch=2, batch_size=B, seed=1, silent=True, **kw)
        runs.append((h.loss, [t.numpy() for t in m.parameters().values()]))
    for r in runs[1:]:
        assert r[0] == runs[0][0]
        assert all(np.array_equal(a, b) for a, b in zip(r[1], runs[0][1]))


def test_history_loss_is_weighted_and_validation_is_not(f64):
    x, y = _data("mse")
    w = np.linspace(0, 2, N)
    m = _model("mse")
    h = pg.ag_fit(
        m,
        x,
        y,
        loss="mse",
        optimizer="sgd",
        lr=LR,
        nepoch=1,
        batch_size=B,
        val_split=0.25,
        shuffle=False,
        silent=True,
        sample_weight=w,
    )
    # after the epoch: validation (the last 6 columns) is the plain mse of the final weights
    out = pg.ag_predict(m, x[:, 18:])
    assert h.val_loss[0] == pytest.approx(np.mean((out - y[:, 18:]) ** 2), rel=1e-12)
    assert np.isfinite(h.loss[0])


def test_validation_data_takes_weights_of_x_only():
    x, y = _data("cross_entropy")
    m = _model("cross_entropy")
    h = pg.ag_fit(
        m,
        x[:, :16],
        y[:16],
        validation_data=(x[:, 16:], y[16:]),
        nepoch=1,
        batch_size=B,
        silent=True,
        sample_weight=np.ones(16),
    )
    assert np.isfinite(h.val_loss[0])
    with pytest.raises(ShapeError, match="sample_weight has 24 values but x has 16 samples"):
        pg.ag_fit(
            m,
            x[:, :16],
            y[:16],
            validation_data=(x[:, 16:], y[16:]),
            nepoch=1,
            batch_size=B,
            silent=True,
            sample_weight=np.ones(24),
        )


def test_weight_errors():
    x, y = _data("cross_entropy")
    m = _model("cross_entropy")
    fit = dict(nepoch=1, batch_size=B, silent=True)
    with pytest.raises(ShapeError, match="ag_fit: sample_weight has 5 values but x has 24"):
        pg.ag_fit(m, x, y, sample_weight=np.ones(5), **fit)
    bad = np.ones(N)
    bad[3] = -1
    with pytest.raises(
        PyggmlrValueError, match="sample_weight must be finite and >= 0; position 3 has -1"
    ):
        pg.ag_fit(m, x, y, sample_weight=bad, **fit)
    bad[3] = np.nan
    with pytest.raises(PyggmlrValueError, match="sample_weight must be finite and >= 0"):
        pg.ag_fit(m, x, y, sample_weight=bad, **fit)
    with pytest.raises(PyggmlrValueError, match="every sample's weight .* is 0"):
        pg.ag_fit(m, x, y, sample_weight=np.zeros(N), **fit)
    with pytest.raises(
        PyggmlrValueError, match='class_weight needs class-id targets .* not loss "mse"'
    ):
        pg.ag_fit(pg.ag_linear(3, 1), x, y[None, :], loss="mse", class_weight={0: 1}, **fit)
    with pytest.raises(
        PyggmlrValueError, match="class_weight must be finite and >= 0; class 1 has -2"
    ):
        pg.ag_fit(m, x, y, class_weight={1: -2.0}, **fit)
    with pytest.raises(PyggmlrValueError, match="class_weight's keys must be 0-based class ids"):
        pg.ag_fit(m, x, y, class_weight={"a": 1.0}, **fit)  # R's text (pg_fit_class_keys)
    with pytest.raises(PyggmlrValueError, match="sample_weight needs a built-in loss"):
        pg.ag_fit(m, x, y, loss=lambda o, t: pg.ag_mean(o), sample_weight=np.ones(N), **fit)
    yb = np.ones((1, N))
    yb[0, 1] = 0.5  # soft labels have no class
    with pytest.raises(PyggmlrValueError, match="needs 0/1 targets; sample 1 has 0.5"):
        pg.ag_fit(
            pg.ag_linear(3, 1, "sigmoid"),
            x,
            yb,
            loss="binary_cross_entropy",
            class_weight={1: 2.0},
            **fit,
        )


def test_resume_needs_a_run_alike(tmp_path):
    x, y = _data("cross_entropy")
    path = str(tmp_path / "ck.safetensors")
    fit = dict(nepoch=1, batch_size=B, silent=True, seed=2)
    pg.ag_fit(
        _model("cross_entropy"),
        x,
        y,
        callbacks=[pg.ag_model_checkpoint(path)],
        sample_weight=np.ones(N),
        **fit,
    )
    with pytest.raises(
        PyggmlrValueError, match="cannot resume: weighted was true in the checkpoint, now null"
    ):
        pg.ag_fit(_model("cross_entropy"), x, y, resume_from=path, **dict(fit, nepoch=2))
    h = pg.ag_fit(
        _model("cross_entropy"),
        x,
        y,
        resume_from=path,
        sample_weight=np.ones(N),
        **dict(fit, nepoch=2),
    )
    assert len(h.loss) == 2
    plain = str(tmp_path / "plain.safetensors")
    pg.ag_fit(_model("cross_entropy"), x, y, callbacks=[pg.ag_model_checkpoint(plain)], **fit)
    h = pg.ag_fit(_model("cross_entropy"), x, y, resume_from=plain, **dict(fit, nepoch=2))
    assert len(h.loss) == 2


def _torch_per_sample(name, o, t):
    """Each column's (sample's) loss in torch, before weighting: [B]."""
    if name == "cross_entropy":
        return F.cross_entropy(o.T, t.T if t.shape[0] > 1 else t[0].long(), reduction="none")
    fn = {
        "mse": lambda: F.mse_loss(o, t, reduction="none"),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(o, t, reduction="none"),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(o, t, reduction="none"),
        "huber": lambda: F.huber_loss(o, t, reduction="none", delta=1.0),
        "mae": lambda: F.l1_loss(o, t, reduction="none"),
        "mean": lambda: o,
        "sum": lambda: o,
    }[name]
    per = fn().mean(dim=0)
    return per * o.shape[0] if name == "sum" else per


@needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "cross_entropy",
        "cross_entropy_ids",
        "mse",
        "binary_cross_entropy",
        "bce_with_logits",
        "huber",
        "mae",
        "mean",
        "sum",
    ],
)
def test_weighted_loss_op_value_and_gradient(rng, name):
    """pg_fit_loss_weighted: sum_j w_j l_j / B (sum: not divided) and its exact gradient, f64."""
    from pyggmlr._core import NULL, lib
    from pyggmlr.tensor import _wrap

    R, C = 3, 6
    base = "cross_entropy" if name == "cross_entropy_ids" else name
    o = (
        rng.uniform(0.05, 0.95, size=(R, C))
        if base == "binary_cross_entropy"
        else rng.normal(size=(R, C)) * 2
    )
    if name == "cross_entropy":
        t = np.eye(R)[:, rng.integers(0, R, C)]
    elif name == "cross_entropy_ids":
        t = rng.integers(0, R, (1, C)).astype(float)
    else:
        t = rng.uniform(0, 1, size=(R, C))
    w = rng.uniform(0, 2, size=(1, C))
    w[0, 2] = 0.0
    code = [
        "cross_entropy",
        "mse",
        "mean",
        "sum",
        "binary_cross_entropy",
        "bce_with_logits",
        "huber",
        "mae",
    ].index(base)
    x = pg.ag_param(o, dtype="f64")
    tt, wt = pg.ag_tensor(t, dtype="f64"), pg.ag_tensor(w, dtype="f64")
    with pg.with_grad_tape():
        yp = NULL if base in ("mean", "sum") else tt._p
        loss = _wrap(lib.pg_fit_loss_weighted(code, x._handle(), yp, wt._p))
    g = pg.backward(loss)[x]
    ot = torch.tensor(o, requires_grad=True)
    per = _torch_per_sample(base, ot, torch.tensor(t))
    ref = (per * torch.tensor(w[0])).sum() / (1 if base == "sum" else C)
    (gr,) = torch.autograd.grad(ref, ot)
    assert loss.item() == pytest.approx(ref.item(), rel=1e-13)
    np.testing.assert_allclose(g, gr.numpy(), rtol=1e-12, atol=1e-15)


def test_class_weight_keys_and_sequences():
    x, y = _data("cross_entropy")
    fit = dict(nepoch=1, batch_size=B, silent=True)
    for bad in ({float("inf"): 1.0}, {-1: 1.0}, {1.5: 1.0}):
        with pytest.raises(PyggmlrValueError, match="class_weight's keys must be 0-based"):
            pg.ag_fit(_model("cross_entropy"), x, y, class_weight=bad, **fit)
    with pytest.raises(PyggmlrValueError, match="class id 1000000000 is above"):
        pg.ag_fit(_model("cross_entropy"), x, y, class_weight={10**9: 1.0}, **fit)
    with pytest.raises(ArgumentError, match="class_weight's values must be numbers"):
        pg.ag_fit(_model("cross_entropy"), x, y, class_weight={0: "a"}, **fit)
    with pytest.raises(PyggmlrValueError, match="class 1 has nan"):
        pg.ag_fit(_model("cross_entropy"), x, y, class_weight=[1.0, float("nan")], **fit)
    with pytest.raises(ShapeError, match="one weight per sample, got a 4x6 array"):  # as R's
        pg.ag_fit(_model("cross_entropy"), x, y, sample_weight=np.ones((4, 6)), **fit)
    # a dict, a list and a numpy array of the same table: the same run
    runs = []
    for cw in ({0: 2.0, 1: 1.0, 2: 0.5}, [2.0, 1.0, 0.5], np.array([2.0, 1.0, 0.5])):
        m = _model("cross_entropy")
        runs.append(pg.ag_fit(m, x, y, class_weight=cw, seed=1, **fit).loss)
    assert runs[0] == runs[1] == runs[2]


def test_class_weight_ids_beyond_the_classes_are_refused():
    """keras refuses a class_weight key that is not a class: the classes are the model's outputs
    when its layers say them, else y's (one-hot rows, the largest id + 1); the binary losses'
    are 0 and 1. A refused call changes neither the optimizer nor the model (R's test too)."""
    x, y = _data("cross_entropy")
    fit = dict(nepoch=1, batch_size=B, silent=True)
    m = _model("cross_entropy")
    before = {k: t.numpy().copy() for k, t in m.parameters().items()}
    opt = pg.optimizer_adam(m, lr=0.01, accumulate_steps=3)
    opt.accum_count = 1
    want = (
        r"^ag_fit: class_weight's class id 7 is not a class of this run \(3 classes: ids 0 to 2\)$"
    )
    with pytest.raises(PyggmlrValueError, match=want):
        pg.ag_fit(m, x, y, optimizer=opt, class_weight={7: 2.0}, **fit)
    assert (opt.accumulate_steps, opt.accum_count) == (3, 1)
    assert all(np.array_equal(t.numpy(), before[k]) for k, t in m.parameters().items())
    with pytest.raises(PyggmlrValueError, match=r"class id 3 is not a class of this run \(3 c"):
        pg.ag_fit(m, x, y, class_weight=[1.0, 1.0, 1.0, 2.0], **fit)
    # y holds ids 0 and 1 only: the model's 3 outputs are the classes, so 2 is one
    y01 = (y > 0).astype(float)
    pg.ag_fit(_model("cross_entropy"), x, y01, class_weight={2: 0.5}, **fit)
    with pytest.raises(PyggmlrValueError, match=r"class id 2 is not a class of this run \(2 c"):
        pg.ag_fit(
            pg.ag_linear(3, 1, "sigmoid"), x, y01[None, :], loss="binary_cross_entropy",
            class_weight={2: 1.0}, **fit,
        )  # fmt: skip
