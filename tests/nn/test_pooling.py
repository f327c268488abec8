"""Pooling and flatten (issue 30): the functional ops and layers against PyTorch 2.13 in f64
(forward and gradients, kernel / stride / padding variants, 1-D and global), the tie and NaN
rule, the image tag, configs and model files, ag_compile and ag_fit(static=True) against the
eager run, the memory estimate, and the core's error texts."""

import os

import numpy as np
import pytest
from _nnref import (
    F,
    estimate_and_peak,
    fit_static_equals_eager,
    image_shape,
    needs_torch,
    tag,
    to_cols,
    torch,
)

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError
from pyggmlr.nn import Module


def run_pair(op, ref, a, w, **kw):
    """(ours, torch's) forward and gradient of sum(out * w) in f64."""
    x = pg.ag_param(to_cols(a))
    with pg.with_grad_tape():
        y = op(x, **kw)
        loss = pg.ag_sum(y * pg.ag_tensor(w))
    g = pg.backward(loss)[x]
    tx = torch.tensor(a, requires_grad=True)
    ty = ref(tx)
    (ty.reshape(a.shape[0], -1).T * torch.tensor(w)).sum().backward()
    return y.numpy(), g, to_cols(ty.detach().numpy()), to_cols(tx.grad.numpy())


CASES_2D = [  # kernel, stride, padding
    (2, None, 0),
    (3, 2, 1),
    ((3, 2), (1, 2), (1, 0)),
    ((2, 3), 1, (1, 1)),
    (4, 3, 2),
]


@needs_torch
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,s,p", CASES_2D)
def test_pool2d_matches_torch(f64, kind, k, s, p):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 2, 7, 6))
    op = pg.ag_max_pool2d_op if kind == "max" else pg.ag_avg_pool2d_op
    tf = F.max_pool2d if kind == "max" else F.avg_pool2d
    ref = tf(torch.tensor(a), k, s, p)
    w = rng.normal(size=(ref[0].numel(), 3))
    y, g, ty, tg = run_pair(
        op,
        lambda t: tf(t, k, s, p),
        a,
        w,
        kernel_size=k,
        stride=s,
        padding=p,
        input_shape=(2, 7, 6),
    )
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1), (4, 1, 2), (5, 3, 0)])
def test_pool1d_matches_torch(f64, kind, k, s, p):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 3, 11))
    op = pg.ag_max_pool1d_op if kind == "max" else pg.ag_avg_pool1d_op
    tf = F.max_pool1d if kind == "max" else F.avg_pool1d
    ref = tf(torch.tensor(a), k, s, p)
    w = rng.normal(size=(ref[0].numel(), 4))
    y, g, ty, tg = run_pair(
        op,
        lambda t: tf(t, k, s, p),
        a,
        w,
        kernel_size=k,
        stride=s,
        padding=p,
        input_shape=(3, 11),
    )
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)


@needs_torch
def test_global_pools_match_torch(f64):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 3, 4, 6))
    w = rng.normal(size=(3, 5))
    y, g, ty, tg = run_pair(
        pg.ag_global_avg_pool_op,
        lambda t: F.adaptive_avg_pool2d(t, 1),
        a,
        w,
        input_shape=(3, 4, 6),
    )
    np.testing.assert_allclose(y, ty, rtol=1e-10)
    np.testing.assert_allclose(g, tg, rtol=1e-10)
    y, g, ty, tg = run_pair(
        pg.ag_global_max_pool_op,
        lambda t: F.adaptive_max_pool2d(t, 1),
        a,
        w,
        input_shape=(3, 4, 6),
    )
    np.testing.assert_array_equal(y, ty)
    np.testing.assert_array_equal(g, tg)


@needs_torch
def test_ties_and_nan_follow_torch(f64):
    """Ties: the first maximum of a window (row by row) gets the gradient; NaN: the window
    outputs NaN and its gradient goes to the window's last NaN, as torch's CPU kernel."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, size=(2, 2, 6, 6)).astype(np.float64)  # many ties
    w = rng.normal(size=(2 * 3 * 3, 2))
    for k, s, p in [(2, 2, 0), (3, 1, 1), (2, 1, 1)]:
        ref = F.max_pool2d(torch.tensor(a), k, s, p)
        w = rng.normal(size=(ref[0].numel(), 2))
        y, g, ty, tg = run_pair(
            pg.ag_max_pool2d_op,
            lambda t, k=k, s=s, p=p: F.max_pool2d(t, k, s, p),
            a,
            w,
            kernel_size=k,
            stride=s,
            padding=p,
            input_shape=(2, 6, 6),
        )
        np.testing.assert_array_equal(y, ty)
        np.testing.assert_array_equal(g, tg)
    b = a.copy()
    b[0, 0, 0, 0] = b[0, 0, 1, 1] = b[1, 1, 4, 5] = np.nan
    w = rng.normal(size=(2 * 3 * 3, 2))
    y, g, ty, tg = run_pair(
        pg.ag_max_pool2d_op,
        lambda t: F.max_pool2d(t, 2),
        b,
        w,
        kernel_size=2,
        input_shape=(2, 6, 6),
    )
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_array_equal(y[~np.isnan(y)], ty[~np.isnan(ty)])
    np.testing.assert_array_equal(g, tg)
    assert g[1 * 6 + 1, 0] == w[0, 0] and g[0, 0] == 0  # the last NaN of the first window


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_layers_read_the_tag_and_flatten_clears_it(dtype):
    prev = pg.ag_dtype(dtype)
    try:
        rng = np.random.default_rng(5)
        x = tag(pg.ag_tensor(rng.normal(size=(2 * 8 * 8, 3))), (2, 8, 8))
        y = pg.ag_max_pool2d(2)(x)
        assert y.shape == (2 * 4 * 4, 3) and image_shape(y) == (2, 4, 4)
        z = pg.ag_avg_pool2d((2, 1), padding=(1, 0))(y)
        assert image_shape(z) == (2, 3, 4)
        np.testing.assert_array_equal(
            z.numpy(),
            pg.ag_avg_pool2d_op(y.numpy(), (2, 1), padding=(1, 0), input_shape=(2, 4, 4)).numpy(),
        )
        f = pg.ag_flatten()(z)
        np.testing.assert_array_equal(f.numpy(), z.numpy())
        assert image_shape(f) is None and image_shape(z) == (2, 3, 4)
        gp = pg.ag_global_max_pool()(z)
        assert gp.shape == (2, 3) and image_shape(gp) is None
        np.testing.assert_array_equal(gp.numpy(), z.numpy().reshape(2, 12, 3).max(1))
        s = tag(pg.ag_tensor(rng.normal(size=(3 * 10, 2))), (3, 1, 10))
        assert image_shape(pg.ag_max_pool1d(3, 2)(s)) == (3, 1, 4)
        assert pg.ag_avg_pool1d(2)(s).shape == (15, 2)
        assert pg.ag_global_avg_pool()(s).shape == (3, 2)
    finally:
        pg.ag_dtype(prev)


class Tagger(Module):
    """A first layer giving raw data its image shape (a 1x1 max pool is the identity)."""

    kind = "tagger"

    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        return pg.ag_max_pool2d_op(x, 1, input_shape=self.shape)


def cnn_tail():
    return [
        pg.ag_max_pool2d(2),
        pg.ag_avg_pool2d(3, 1, 1),
        pg.ag_flatten(),
        pg.ag_linear(2 * 3 * 3, 4, "relu"),
        pg.ag_linear(4, 2),
    ]


def test_configs_and_model_files(tmp_path):
    pg.ggml_set_seed(3)
    layers = cnn_tail() + [pg.ag_global_avg_pool(), pg.ag_global_max_pool()]
    layers += [pg.ag_max_pool1d(3, padding=1), pg.ag_avg_pool1d(2, 1)]
    m = pg.ag_sequential(layers)
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][0] == {
        "type": "max_pool2d",
        "kernel_size": [2, 2],
        "stride": None,
        "padding": [0, 0],
    }
    assert cfg["layers"][1] == {
        "type": "avg_pool2d",
        "kernel_size": [3, 3],
        "stride": [1, 1],
        "padding": [1, 1],
    }
    assert cfg["layers"][2] == {"type": "flatten"}
    assert cfg["layers"][7] == {
        "type": "max_pool1d",
        "kernel_size": 3,
        "stride": None,
        "padding": 1,
    }
    m2 = pg.ag_module_from_config(cfg)
    assert pg.ag_to_config(m2) == cfg
    seq = pg.ag_sequential(cnn_tail())
    path = os.fspath(tmp_path / "pool.gguf")
    pg.ag_save_model(seq, path)
    back = pg.ag_load_model(path)
    x = tag(pg.ag_tensor(np.random.default_rng(6).normal(size=(2 * 6 * 6, 5))), (2, 6, 6))
    np.testing.assert_array_equal(back(x).numpy(), seq(x).numpy())
    assert "max_pool2d(2x2)" in repr(seq)


def test_compiled_step_equals_eager(f64):
    rng = np.random.default_rng(7)
    xs = [rng.normal(size=(2 * 6 * 6, 4)) for _ in range(3)]
    y = rng.normal(size=(2, 4))
    runs = []
    for compiled in (False, True):
        pg.ggml_set_seed(11)
        m = pg.ag_sequential([Tagger((2, 6, 6))] + cnn_tail())
        opt = pg.optimizer_adam(m.parameters(), lr=0.01)

        def step(a, b, m=m):
            return pg.ag_mse_loss(m(a), b)

        out = []
        if compiled:
            st = pg.ag_compile(step, pg.ag_tensor(xs[0]), pg.ag_tensor(y), optimizer=opt)
            for x in xs:
                out.append(float(st(x, y)))
        else:
            for x in xs:
                with pg.with_grad_tape():
                    loss = step(pg.ag_tensor(x), pg.ag_tensor(y))
                opt.step(pg.backward(loss))
                opt.zero_grad()
                out.append(loss.item())
        runs.append((out, m.parameters()["layer5_W"].numpy().copy()))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_ag_fit_static_equals_eager(f64):
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(2 * 6 * 6, 24)), rng.normal(size=(2, 24))

    def model():
        pg.ggml_set_seed(12)
        return pg.ag_sequential([Tagger((2, 6, 6))] + cnn_tail())

    fit_static_equals_eager(model, x, y, batch_size=8)


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(9)
    x = pg.ag_tensor(rng.normal(size=(2 * 6 * 6, 16)))
    y = pg.ag_tensor(rng.normal(size=(2, 16)))
    model = pg.ag_sequential([Tagger((2, 6, 6))] + cnn_tail())
    est, peak = estimate_and_peak(model, x, y, steps=2)
    assert est.params == 18 * 4 + 4 + 4 * 2 + 2  # pooling holds no parameters
    assert abs(est.total / peak - 1) < 0.02


def test_errors_name_function_argument_and_shapes():
    x = pg.ag_tensor(np.ones((48, 2)))
    with pytest.raises(
        ShapeError,
        match=r"ag_max_pool2d_op: x \[48x2\] f32 carries no image shape; give input_shape = "
        r"\(C, H, W\) or tag x",
    ):
        pg.ag_max_pool2d_op(x, 2)
    with pytest.raises(
        ShapeError,
        match=r"ag_avg_pool2d_op: kernel_size \(5, 5\) is larger than the padded input \(H 4, W 4 "
        r"with padding \(0, 0\)\); x is \[48x2\] f32",
    ):
        pg.ag_avg_pool2d_op(x, 5, input_shape=(3, 4, 4))
    with pytest.raises(
        ShapeError,
        match=r"ag_max_pool2d_op: input_shape \(C 3, H 4, W 5\) needs 60 rows \(C \* H \* W\), "
        r"but x is \[48x2\] f32",
    ):
        pg.ag_max_pool2d_op(x, 2, input_shape=(3, 4, 5))
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_max_pool2d: kernel_size must be one or two \(H, W\) whole numbers >= 1, got "
        r"\(2.5, 2.5\)",
    ):
        pg.ag_max_pool2d(2.5)
    with pytest.raises(
        PyggmlrValueError, match=r"ag_avg_pool1d: stride must be a whole number >= 1, got 0"
    ):
        pg.ag_avg_pool1d(2, stride=0)
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_max_pool2d: padding \(2, 1\) must be at most half of kernel_size \(3, 3\)",
    ):
        pg.ag_max_pool2d(3, padding=(2, 1))
    with pytest.raises(
        ArgumentError, match=r"ag_max_pool2d: kernel_size must be a number or a pair"
    ):
        pg.ag_max_pool2d("2")
    with pytest.raises(
        ArgumentError, match=r"ag_max_pool1d_op: input_shape must be 2 numbers \(C, L\)"
    ):
        pg.ag_max_pool1d_op(x, 2, input_shape=(3, 4, 4))
    t = tag(pg.ag_tensor(np.ones((48, 2))), (3, 4, 4))
    with pytest.raises(
        ShapeError,
        match=r"ag_max_pool1d: x \[48x2\] f32 carries the image shape \(C 3, H 4, W 4\); a 1-D op needs H = 1",
    ):
        pg.ag_max_pool1d(2)(t)
    with pytest.raises(
        ShapeError, match=r"ag_global_avg_pool: x \[48x2\] f32 carries no image shape"
    ):
        pg.ag_global_avg_pool()(np.ones((48, 2)))
    with pytest.raises(
        PyggmlrValueError, match=r"bad arguments for a 'max_pool2d' layer: padding \[2, 2\] must be"
    ):
        pg.ag_module_from_config({"type": "max_pool2d", "kernel_size": 2, "padding": 2})


@needs_torch
def test_signed_zeros_and_infinities_follow_torch(f64):
    """-0 before +0 (a tie: the first wins, its sign kept), -Inf windows and +Inf, as torch."""
    a = np.array([[[[-0.0, 0.0, -np.inf, -np.inf], [0.0, -0.0, -np.inf, -np.inf],
                    [np.inf, 1.0, 2.0, np.inf], [3.0, np.inf, 2.0, 2.0]]]])  # fmt: skip
    w = np.arange(1.0, 5.0).reshape(4, 1)
    y, g, ty, tg = run_pair(
        pg.ag_max_pool2d_op,
        lambda t: F.max_pool2d(t, 2),
        a,
        w,
        kernel_size=2,
        input_shape=(1, 4, 4),
    )
    np.testing.assert_array_equal(y, ty)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(ty))
    np.testing.assert_array_equal(g, tg)
