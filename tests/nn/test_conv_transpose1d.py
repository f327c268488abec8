"""ag_conv_transpose1d_op / ag_conv_transpose1d (torch's F.conv_transpose1d / ConvTranspose1d) in
f64 against torch (forward and the gradients of x, weight and bias) over stride, padding,
output_padding, dilation and groups; the layer (torch's init, configs, model files, ag_compile,
ag_fit(static=True), the memory estimate); the refusals in (C, L) terms."""

import os

import numpy as np
import pytest
from _nnref import F, estimate_and_peak, fit_static_equals_eager, needs_torch, rel, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

# (N, C_in, L, C_out, kernel, stride, padding, output_padding, dilation, groups, bias)
CASES = [
    (2, 1, 5, 3, 3, 1, 0, 0, 1, 1, True),
    (3, 2, 6, 4, 3, 2, 1, 1, 1, 2, True),  # stride 2, output_padding 1, groups
    (2, 4, 4, 4, 3, 2, 1, 1, 1, 4, False),  # depthwise
    (2, 3, 5, 6, 3, 2, 2, 1, 2, 3, True),  # dilated
    (2, 2, 3, 3, 1, 1, 0, 0, 1, 1, True),  # pointwise
    (2, 2, 4, 2, 2, 3, 0, 2, 1, 1, True),  # output_padding 2 < stride 3
    (1, 2, 3, 2, 3, 1, 1, 1, 2, 1, True),  # output_padding 1 < dilation 2, stride 1
    (2, 3, 7, 2, 5, 3, 2, 0, 1, 1, True),  # a long kernel
]


@needs_torch
@pytest.mark.parametrize("case", CASES)
def test_op_matches_torch(case, f64):
    N, C, L, Co, k, s, p, op, d, g, bias = case
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, C, L))
    w = rng.normal(size=(C, Co // g, k))
    b = rng.normal(size=Co) if bias else None
    X = pg.ag_param(x.reshape(N, -1).T)
    Wt = pg.ag_param(w.reshape(C, -1))
    B = pg.ag_param(b.reshape(-1, 1)) if bias else None
    geom = dict(stride=s, padding=p, output_padding=op, groups=g, dilation=d)
    with pg.with_grad_tape():
        y = pg.ag_conv_transpose1d_op(X, Wt, B, input_shape=(C, L), kernel_size=k, **geom)
        gy = rng.normal(size=y.shape)
        loss = pg.ag_sum(pg.ag_mul(y, pg.ag_tensor(gy)))
    grads = pg.backward(loss)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    ty = F.conv_transpose1d(tx, tw, tb, **geom)
    ref = ty.detach().numpy().reshape(N, -1).T
    assert y.shape == ref.shape
    assert pg.ag_image_shape(y) == (Co, 1, ty.shape[2])
    assert rel(y.numpy(), ref) < 1e-10
    ty.backward(torch.tensor(gy.T.reshape(ty.shape)))
    assert rel(grads[X], tx.grad.numpy().reshape(N, -1).T) < 1e-10
    assert rel(grads[Wt], tw.grad.numpy().reshape(C, -1)) < 1e-10
    if bias:
        assert rel(grads[B].ravel(), tb.grad.numpy()) < 1e-10


@needs_torch
def test_tag_and_kernel_from_the_bias(f64):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 2, 5))
    w, b = rng.normal(size=(2, 3, 4)), rng.normal(size=3)
    X = pg.ag_images(x)  # a 3-d array: signals, tagged (C, 1, L)
    y = pg.ag_conv_transpose1d_op(X, w.reshape(2, -1), b.reshape(-1, 1), stride=2)
    ref = F.conv_transpose1d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2)
    assert rel(y.numpy(), ref.numpy().reshape(2, -1).T) < 1e-10
    assert pg.ag_image_shape(y) == (3, 1, 12)


def test_refusals_name_the_function_and_the_shapes():
    x = pg.ag_tensor(np.zeros((5, 2)))
    w = pg.ag_tensor(np.zeros((1, 6)))
    b = pg.ag_tensor(np.zeros((2, 1)))
    op = pg.ag_conv_transpose1d_op
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose1d_op: x \\[5x2\\] f32 carries no image shape; give "
        "input_shape = \\(C, L\\)",
    ):
        op(x, w, b)
    shp = (1, 5)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose1d_op: output_padding \\(1\\) must be smaller than the "
        "stride \\(1\\) or the dilation \\(1\\)",
    ):
        op(x, w, b, output_padding=1, input_shape=shp)
    with pytest.raises(PyggmlrValueError, match="stride must be whole numbers >= 1, got 0"):
        op(x, w, b, stride=0, input_shape=shp)
    with pytest.raises(ShapeError, match="weight \\[1x6\\] f32 must have C_in = 3 rows"):
        op(pg.ag_tensor(np.zeros((15, 2))), w, b, input_shape=(3, 5))
    with pytest.raises(
        ShapeError,
        match="weight \\[1x6\\] f32 must be \\[C_in, \\(C_out / groups\\) \\* k\\] = "
        "\\[1, \\(C_out / 1\\) \\* 4\\]",
    ):
        op(x, w, b, input_shape=shp, kernel_size=4)
    with pytest.raises(PyggmlrValueError, match="give kernel_size"):
        op(x, w, input_shape=shp)
    with pytest.raises(ShapeError, match="the output \\(L -1\\) would be empty"):
        op(x, w, b, padding=4, input_shape=shp)
    with pytest.raises(ShapeError, match="needs C \\* L rows per sample, but x is \\[5x2\\]"):
        op(x, w, b, input_shape=(1, 4))
    with pytest.raises(ArgumentError, match="output_padding must be a number, got \\(1, 1\\)"):
        op(x, w, b, output_padding=(1, 1), input_shape=shp)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose1d: output_padding \\(2\\) must be smaller than the stride "
        "\\(2\\) or the dilation \\(1\\)",
    ):
        pg.ag_conv_transpose1d(1, 2, 3, stride=2, output_padding=2)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose1d: in_channels \\(3\\) and out_channels \\(4\\) must be "
        "divisible by groups \\(2\\)",
    ):
        pg.ag_conv_transpose1d(3, 4, 3, groups=2)
    with pytest.raises(
        PyggmlrValueError,
        match="^ag_conv_transpose1d: input_shape \\(2, 4\\) has 2 channels but in_channels = 1",
    ):
        pg.ag_conv_transpose1d(1, 2, 3, input_shape=(2, 4))
    with pytest.raises(
        PyggmlrValueError, match="^ag_conv_transpose1d: padding must be numbers .*ConvTranspose1d"
    ):
        pg.ag_conv_transpose1d(1, 2, 3, padding="same")
    with pytest.raises(ArgumentError, match="^ag_conv_transpose1d: input_shape must be \\(C, L\\)"):
        pg.ag_conv_transpose1d(1, 2, 3, input_shape=(1, 3, 3))


def test_layer_init_matches_the_generator_and_torch_bounds():
    pg.ggml_set_seed(7)
    layer = pg.ag_conv_transpose1d(4, 6, 3, groups=2)
    pg.ggml_set_seed(7)
    bound = 1 / np.sqrt(3 * 3)  # torch: weight.size(1) * k = (C_out / groups) * 3
    u = pg.random.runif(4 * 9 + 6, -bound, bound)
    np.testing.assert_array_equal(
        layer.weight.numpy(), u[:36].reshape((4, 9), order="F").astype(np.float32)
    )
    np.testing.assert_array_equal(layer.bias.numpy().ravel(), u[36:].astype(np.float32))
    assert list(pg.ag_conv_transpose1d(2, 3, 3, bias=False).parameters()) == ["weight"]
    pg.ggml_set_seed(7)
    he = pg.ag_conv_transpose1d(4, 6, 3, init="he")  # fan_in = 6 * 3, bias zeros
    assert np.abs(he.weight.numpy()).max() <= np.sqrt(6 / 18) and not he.bias.numpy().any()
    assert layer.name == "conv_transpose1d(4, 6, 3)"
    assert (
        repr(layer) == "ag_conv_transpose1d: conv_transpose1d(4, 6, 3) (42 parameters, train mode)"
    )
    if torch is not None:
        t = torch.nn.ConvTranspose1d(4, 6, 3, groups=2)
        assert t.weight.abs().max().item() <= bound and tuple(t.weight.shape) == (4, 3, 3)


def decoder(seed=11):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(
        pg.ag_conv1d(2, 3, 3, stride=2, padding=1, input_shape=(2, 8)),
        pg.ag_conv_transpose1d(3, 2, 3, stride=2, padding=1, output_padding=1, activation="tanh"),
        pg.ag_flatten(),
        pg.ag_linear(16, 3),
    )


@needs_torch
def test_layers_forward_match_torch(f64):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 2, 8))
    m = decoder()
    y = m(pg.ag_tensor(x.reshape(5, -1).T))
    c1, ct, _, lin = m.layers
    t1 = torch.nn.Conv1d(2, 3, 3, stride=2, padding=1).double()
    t2 = torch.nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1).double()
    with torch.no_grad():
        t1.weight.copy_(torch.tensor(c1.weight.numpy().reshape(3, 2, 3)))
        t1.bias.copy_(torch.tensor(c1.bias.numpy().ravel()))
        t2.weight.copy_(torch.tensor(ct.weight.numpy().reshape(3, 2, 3)))
        t2.bias.copy_(torch.tensor(ct.bias.numpy().ravel()))
        h = torch.tanh(t2(t1(torch.tensor(x)))).reshape(5, -1).numpy().T
    assert rel(y.numpy(), lin.W.numpy() @ h + lin.b.numpy()) < 1e-12


def test_config_model_file_and_sequential(tmp_path, f64):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(16, 4))
    m = decoder()
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][1] == {
        "type": "conv_transpose1d",
        "in_channels": 3,
        "out_channels": 2,
        "kernel_size": 3,
        "stride": 2,
        "padding": 1,
        "output_padding": 1,
        "groups": 1,
        "bias": True,
        "dilation": 1,
        "input_shape": None,
        "activation": "tanh",
        "init": "torch",
    }
    m2 = pg.ag_module_from_config(cfg)
    assert [type(v) for v in m2.layers] == [type(v) for v in m.layers]
    assert m2.layers[1].to_config() == m.layers[1].to_config()
    path = os.fspath(tmp_path / "dec1.gguf")
    pg.ag_save_model(m, path)
    m3 = pg.ag_load_model(path)
    np.testing.assert_array_equal(pg.ag_predict(m3, x), pg.ag_predict(m, x))
    with pytest.raises(PyggmlrValueError, match="conv_transpose1d"):
        pg.ag_module_from_config({"type": "conv_transpose1d", "in_channels": 1})


def test_compile_and_fit_static_equal_eager(f64):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(16, 12)), rng.normal(size=(3, 12))
    fit_static_equals_eager(decoder, x, y, first_ops=("conv1d", "conv_transpose1d"))


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(7)
    x = pg.ag_tensor(rng.normal(size=(16, 8)))
    y = pg.ag_tensor(rng.normal(size=(3, 8)))
    model = decoder()
    est, peak = estimate_and_peak(model, x, y)
    assert est.params == 3 * 6 + 3 + 3 * 6 + 2 + 16 * 3 + 3
    assert abs(est.total / peak - 1) < 0.02
