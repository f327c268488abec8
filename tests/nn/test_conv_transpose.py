"""Transposed convolution (issue 30): ag_conv_transpose2d_op against torch's
F.conv_transpose2d in f64 (forward and the gradients of x, weight and bias) over stride,
padding, output_padding, dilation and groups; the layer (torch's init bounds, configs, model
files, ag_sequential, ag_compile, ag_fit(static=True), the memory estimate); the refusals; the
convolution layers' one constructor check (pg_conv_check)."""

import os

import numpy as np
import pytest
from _nnref import F, estimate_and_peak, fit_static_equals_eager, needs_torch, rel, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

# (N, C_in, H, W, C_out, kernel, stride, padding, output_padding, dilation, groups, bias)
CASES = [
    (2, 1, 4, 4, 3, 3, 1, 0, 0, 1, 1, True),
    (3, 2, 4, 3, 4, (3, 2), (2, 1), (1, 0), (1, 0), 1, 2, True),
    (2, 4, 3, 3, 4, 3, 2, 1, 1, 1, 4, False),  # depthwise, output_padding 1
    (2, 3, 5, 4, 6, 3, 2, 2, 1, (2, 1), 3, True),
    (2, 2, 3, 3, 3, 1, 1, 0, 0, 1, 1, True),  # pointwise
    (2, 2, 3, 4, 2, 2, 3, 0, (2, 1), 1, 1, True),  # output_padding 2 < stride 3
    (1, 2, 3, 3, 2, 3, 1, 1, 1, 2, 1, True),  # output_padding 1 < dilation 2, stride 1
]


@needs_torch
@pytest.mark.parametrize("case", CASES)
def test_op_matches_torch(case, f64):
    N, C, H, W, Co, k, s, p, op, d, g, bias = case
    kh, kw = (k, k) if np.isscalar(k) else k
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, C, H, W))
    w = rng.normal(size=(C, Co // g, kh, kw))
    b = rng.normal(size=Co) if bias else None
    X = pg.ag_param(x.reshape(N, -1).T)
    Wt = pg.ag_param(w.reshape(C, -1))
    B = pg.ag_param(b.reshape(-1, 1)) if bias else None
    with pg.with_grad_tape():
        y = pg.ag_conv_transpose2d_op(
            X,
            Wt,
            B,
            stride=s,
            padding=p,
            output_padding=op,
            groups=g,
            dilation=d,
            input_shape=(C, H, W),
            kernel_size=k,
        )
        gy = rng.normal(size=y.shape)
        loss = pg.ag_sum(pg.ag_mul(y, pg.ag_tensor(gy)))
    grads = pg.backward(loss)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    ty = F.conv_transpose2d(
        tx, tw, tb, stride=s, padding=p, output_padding=op, groups=g, dilation=d
    )
    ref = ty.detach().numpy().reshape(N, -1).T
    assert y.shape == ref.shape
    assert pg.ag_image_shape(y) == tuple(ty.shape[1:])
    assert rel(y.numpy(), ref) < 1e-10
    ty.backward(torch.tensor(gy.T.reshape(ty.shape)))
    assert rel(grads[X], tx.grad.numpy().reshape(N, -1).T) < 1e-10
    assert rel(grads[Wt], tw.grad.numpy().reshape(C, -1)) < 1e-10
    if bias:
        assert rel(grads[B].ravel(), tb.grad.numpy()) < 1e-10


@needs_torch
def test_tag_and_square_kernel_from_the_bias(f64):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 2, 3, 3))
    w, b = rng.normal(size=(2, 3, 3, 3)), rng.normal(size=3)
    X = pg.ag_images(x)
    y = pg.ag_conv_transpose2d_op(X, w.reshape(2, -1), b.reshape(-1, 1), stride=2)
    ref = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2)
    assert rel(y.numpy(), ref.numpy().reshape(2, -1).T) < 1e-10
    assert pg.ag_image_shape(y) == (3, 7, 7)


def test_refusals_name_the_function_and_the_shapes():
    x = pg.ag_tensor(np.zeros((9, 2)))
    w = pg.ag_tensor(np.zeros((1, 18)))
    b = pg.ag_tensor(np.zeros((2, 1)))
    op = pg.ag_conv_transpose2d_op
    with pytest.raises(
        PyggmlrValueError, match="^ag_conv_transpose2d_op: x \\[9x2\\] f32 carries no"
    ):
        op(x, w, b)
    shp = (1, 3, 3)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose2d_op: output_padding \\(1, 1\\) must be smaller than the "
        "stride \\(1, 1\\) or the dilation \\(1, 1\\)",
    ):
        op(x, w, b, output_padding=1, input_shape=shp)
    with pytest.raises(PyggmlrValueError, match="stride must be whole numbers >= 1, got 0"):
        op(x, w, b, stride=0, input_shape=shp)
    with pytest.raises(PyggmlrValueError, match="stride must be whole numbers >= 1, got -2"):
        op(x, w, b, stride=-2, input_shape=shp)
    with pytest.raises(PyggmlrValueError, match="padding must be whole numbers >= 0, got 0.5"):
        op(x, w, b, padding=0.5, input_shape=shp)
    with pytest.raises(ShapeError, match="weight \\[1x18\\] f32 must have C_in = 3 rows"):
        op(pg.ag_tensor(np.zeros((27, 2))), w, b, input_shape=(3, 3, 3))
    with pytest.raises(ShapeError, match="bias \\[3x1\\] f32 must be \\[2x1\\]"):
        op(x, w, np.zeros((3, 1), np.float32), input_shape=shp, kernel_size=3)
    with pytest.raises(PyggmlrValueError, match="give kernel_size"):
        op(x, w, input_shape=shp)
    with pytest.raises(ShapeError, match="needs C \\* H \\* W rows per sample, but x is \\[9x2\\]"):
        op(x, w, b, input_shape=(1, 3, 4))
    with pytest.raises(ArgumentError, match="output_padding must be a number or a pair"):
        op(x, w, b, output_padding="1", input_shape=shp)
    # the layer: the core's constructor check, the same texts as R's
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose2d: output_padding \\(2, 2\\) must be smaller than the stride "
        "\\(2, 2\\) or the dilation \\(1, 1\\)",
    ):
        pg.ag_conv_transpose2d(1, 2, 3, stride=2, output_padding=2)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose2d: in_channels \\(3\\) and out_channels \\(4\\) must be "
        "divisible by groups \\(2\\)",
    ):
        pg.ag_conv_transpose2d(3, 4, 3, groups=2)
    with pytest.raises(
        PyggmlrValueError, match="^ag_conv_transpose2d: stride must be an integer >= 1, got 0"
    ):
        pg.ag_conv_transpose2d(1, 2, 3, stride=0)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose2d: kernel_size must be an integer >= 1, got 2.5",
    ):
        pg.ag_conv_transpose2d(1, 2, 2.5)
    with pytest.raises(
        ArgumentError, match="^ag_conv_transpose2d: in_channels must be an integer >= 1, got str"
    ):
        pg.ag_conv_transpose2d("1", 2, 3)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose2d: input_shape \\(2, 4, 4\\) has 2 channels but in_channels = 1",
    ):
        pg.ag_conv_transpose2d(1, 2, 3, input_shape=(2, 4, 4))
    with pytest.raises(PyggmlrValueError, match="^ag_conv_transpose2d: padding must be numbers"):
        pg.ag_conv_transpose2d(1, 2, 3, padding="same")
    with pytest.raises(
        ShapeError,
        match="^ag_conv_transpose2d: input_shape \\(C 1, H 3, W 3\\) needs C \\* H \\* W rows per "
        "sample, but x is \\[8x2\\] f32",
    ):
        pg.ag_conv_transpose2d(1, 2, 3, input_shape=(1, 3, 3))(pg.ag_tensor(np.zeros((8, 2))))


def test_conv_layers_share_the_core_check():
    with pytest.raises(
        PyggmlrValueError, match="^ag_conv1d: in_channels must be an integer >= 1, got 0"
    ):
        pg.ag_conv1d(0, 2, 3)
    with pytest.raises(PyggmlrValueError, match='^ag_conv2d: padding = "same" needs stride 1'):
        pg.ag_conv2d(1, 2, 3, stride=2, padding="same")
    with pytest.raises(
        PyggmlrValueError, match="^ag_conv2d: dilation must be an integer >= 1, got 0"
    ):
        pg.ag_conv2d(1, 2, 3, dilation=(1, 0))


def test_layer_init_matches_the_generator_and_torch_bounds():
    pg.ggml_set_seed(7)
    layer = pg.ag_conv_transpose2d(4, 6, (3, 2), groups=2)
    pg.ggml_set_seed(7)
    bound = 1 / np.sqrt(3 * 3 * 2)  # torch: weight.size(1) * kH * kW = (C_out / groups) * 6
    u = pg.random.runif(4 * 18 + 6, -bound, bound)
    np.testing.assert_array_equal(
        layer.weight.numpy(), u[:72].reshape((4, 18), order="F").astype(np.float32)
    )
    np.testing.assert_array_equal(layer.bias.numpy().ravel(), u[72:].astype(np.float32))
    assert list(pg.ag_conv_transpose2d(2, 3, 3, bias=False).parameters()) == ["weight"]
    if torch is not None:  # torch's own bound for the same layer
        t = torch.nn.ConvTranspose2d(4, 6, (3, 2), groups=2)
        assert t.weight.abs().max().item() <= bound and tuple(t.weight.shape) == (4, 3, 3, 2)


def decoder(seed=11):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(
        pg.ag_conv2d(1, 3, 3, stride=2, padding=1, input_shape=(1, 6, 6)),
        pg.ag_conv_transpose2d(3, 2, 3, stride=2, padding=1, output_padding=1, activation="relu"),
        pg.ag_flatten(),
        pg.ag_linear(72, 3),
    )


@needs_torch
def test_layers_forward_match_torch(f64):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 1, 6, 6))
    m = decoder()
    y = m(pg.ag_tensor(x.reshape(5, -1).T))
    c1, ct, _, lin = m.layers
    t1 = torch.nn.Conv2d(1, 3, 3, stride=2, padding=1).double()
    t2 = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1).double()
    with torch.no_grad():
        t1.weight.copy_(torch.tensor(c1.weight.numpy().reshape(3, 1, 3, 3)))
        t1.bias.copy_(torch.tensor(c1.bias.numpy().ravel()))
        t2.weight.copy_(torch.tensor(ct.weight.numpy().reshape(3, 2, 3, 3)))
        t2.bias.copy_(torch.tensor(ct.bias.numpy().ravel()))
        h = torch.relu(t2(t1(torch.tensor(x)))).reshape(5, -1).numpy().T
    assert rel(y.numpy(), lin.W.numpy() @ h + lin.b.numpy()) < 1e-12


def test_config_model_file_and_sequential(tmp_path, f64):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(36, 4))
    m = decoder()
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][1] == {
        "type": "conv_transpose2d",
        "in_channels": 3,
        "out_channels": 2,
        "kernel_size": [3, 3],
        "stride": [2, 2],
        "padding": [1, 1],
        "output_padding": [1, 1],
        "groups": 1,
        "bias": True,
        "dilation": [1, 1],
        "input_shape": None,
        "activation": "relu",
        "init": "torch",
    }
    m2 = pg.ag_module_from_config(cfg)
    assert [type(v) for v in m2.layers] == [type(v) for v in m.layers]
    assert m2.layers[1].to_config() == m.layers[1].to_config()
    path = os.fspath(tmp_path / "dec.gguf")
    pg.ag_save_model(m, path)
    m3 = pg.ag_load_model(path)
    np.testing.assert_array_equal(pg.ag_predict(m3, x), pg.ag_predict(m, x))


def test_compile_and_fit_static_equal_eager(f64):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(36, 12)), rng.normal(size=(3, 12))
    fit_static_equals_eager(decoder, x, y, first_ops=("conv2d", "conv_transpose2d"))


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(7)
    x = pg.ag_tensor(rng.normal(size=(36, 8)))
    y = pg.ag_tensor(rng.normal(size=(3, 8)))
    model = decoder()
    est, peak = estimate_and_peak(model, x, y)
    assert est.params == 3 * 9 + 3 + 3 * 18 + 2 + 72 * 3 + 3
    assert abs(est.total / peak - 1) < 0.02
