"""Convolution (issue 30): ag_conv2d_op / ag_conv1d_op against torch.nn.functional in f64
(forward and the gradients of x, weight and bias) over strides, padding ("same", "valid"),
dilation and groups; ag_images' layouts and the image tag; the layers (torch's init bounds,
configs, model files, ag_sequential, ag_compile, ag_fit(static=True), the memory estimate); and
the refusals' texts."""

import os

import numpy as np
import pytest
from _nnref import F, estimate_and_peak, fit_static_equals_eager, needs_torch, rel, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

# (N, C, H, W, C_out, kernel, stride, padding, dilation, groups, bias)
CASES_2D = [
    (2, 1, 8, 8, 4, 3, 1, 0, 1, 1, True),
    (3, 2, 7, 6, 4, (3, 2), (2, 1), (1, 2), (1, 2), 2, True),
    (2, 4, 6, 6, 4, 3, 1, 1, 1, 4, False),  # depthwise
    (2, 3, 9, 7, 6, 3, 2, 0, 2, 3, True),
    (2, 2, 5, 5, 3, 1, 1, 0, 1, 1, True),  # pointwise
    (2, 2, 6, 5, 3, 4, 1, "same", 1, 1, True),  # even kernel: torch pads 1 before, 2 after
    (2, 2, 7, 7, 2, 3, 1, "same", 2, 2, True),
    (2, 2, 6, 5, 3, (2, 3), (3, 2), "valid", 1, 1, True),
]


def run_pair(dims, case, rng):
    N, C, H, W, Co, k, s, p, d, g, bias = case
    kh, kw = (k, k) if np.isscalar(k) else k
    if dims == 1:
        kh = 1
    shape_x = (N, C, H, W) if dims == 2 else (N, C, W)
    x = rng.normal(size=shape_x)
    w = rng.normal(size=(Co, C // g, kh, kw) if dims == 2 else (Co, C // g, kw))
    b = rng.normal(size=Co) if bias else None
    X = pg.ag_param(x.reshape(N, -1).T)
    Wt = pg.ag_param(w.reshape(Co, -1))
    B = pg.ag_param(b.reshape(-1, 1)) if bias else None
    op = pg.ag_conv2d_op if dims == 2 else pg.ag_conv1d_op
    shape = (C, H, W) if dims == 2 else (C, W)
    with pg.with_grad_tape():
        y = op(
            X,
            Wt,
            B,
            input_shape=shape,
            stride=s,
            padding=p,
            dilation=d,
            groups=g,
            kernel_size=k if dims == 2 else kw,
        )
        gw = rng.normal(size=y.shape)
        loss = pg.ag_sum(pg.ag_mul(y, gw))
    grads = pg.backward(loss)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    f = F.conv2d if dims == 2 else F.conv1d
    ty = f(tx, tw, tb, stride=s, padding=p, dilation=d, groups=g)
    (ty.reshape(N, -1).T * torch.tensor(gw)).sum().backward()
    assert y.shape == (ty[0].numel(), N)
    out_shape = tuple(ty.shape[1:]) if dims == 2 else (ty.shape[1], 1, ty.shape[2])
    assert y.image_shape == out_shape
    assert rel(y.numpy(), ty.detach().numpy().reshape(N, -1).T) < 1e-12
    assert rel(grads[X], tx.grad.numpy().reshape(N, -1).T) < 1e-10
    assert rel(grads[Wt], tw.grad.numpy().reshape(Co, -1)) < 1e-10
    if bias:
        assert rel(grads[B].ravel(), tb.grad.numpy()) < 1e-10


@needs_torch
@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its own copy
@pytest.mark.parametrize("case", CASES_2D)
def test_conv2d_op_matches_torch(case, f64):
    run_pair(2, case, np.random.default_rng(1))


@needs_torch
@pytest.mark.parametrize(
    "case",
    [
        (2, 2, 1, 10, 4, 3, 1, 0, 1, 1, True),
        (3, 4, 1, 11, 6, 3, 2, 2, 2, 2, True),
        (2, 3, 1, 9, 3, 4, 1, "same", 1, 3, False),
        (2, 2, 1, 9, 2, 5, 1, "same", 2, 1, True),
    ],
)
def test_conv1d_op_matches_torch(case, f64):
    run_pair(1, case, np.random.default_rng(2))


def test_images_layouts_and_tag():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3, 5, 6))
    t = pg.ag_images(x, dtype="f64")
    assert t.shape == (90, 4) and t.image_shape == (3, 5, 6)
    np.testing.assert_array_equal(t.numpy(), x.reshape(4, -1).T)
    t2 = pg.ag_images(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), layout="NHWC", dtype="f64")
    np.testing.assert_array_equal(t2.numpy(), t.numpy())
    assert t2.image_shape == (3, 5, 6)
    t3 = pg.ag_images(x[:, :, ::2, ::-1], dtype="f64")  # any strides
    np.testing.assert_array_equal(t3.numpy(), x[:, :, ::2, ::-1].reshape(4, -1).T)
    s = pg.ag_images(rng.normal(size=(4, 2, 7)))  # signals (N, C, L)
    assert s.image_shape == (2, 1, 7) and pg.ag_image_shape(s) == (2, 1, 7)
    # the tag: settable, cleared by None, kept by elementwise ops, checked against the rows
    a = pg.ag_tensor(np.zeros((12, 2)))
    assert a.image_shape is None
    a.image_shape = (3, 2, 2)
    assert pg.ag_relu(a).image_shape == (3, 2, 2)
    a.image_shape = None
    assert pg.ag_image_shape(a) is None
    with pytest.raises(PyggmlrValueError, match="needs W \\* H \\* C rows, but x is \\[12x2\\]"):
        a.image_shape = (5, 2, 2)
    with pytest.raises(PyggmlrValueError, match="layout must be 'NCHW' or 'NHWC'"):
        pg.ag_images(x, layout="CHW")
    with pytest.raises(ShapeError, match="ag_images: x must be a 4-d array"):
        pg.ag_images(np.zeros((3, 4)))


def test_errors_name_function_argument_and_shapes():
    x = pg.ag_tensor(np.zeros((36, 2)))
    w = pg.ag_tensor(np.zeros((2, 9)))
    with pytest.raises(
        PyggmlrValueError,
        match="ag_conv2d_op: x \\[36x2\\] f32 carries no image "
        "shape; give input_shape = \\(C, H, W\\)",
    ):
        pg.ag_conv2d_op(x, w)
    with pytest.raises(
        ShapeError, match="input_shape \\(C 1, H 5, W 6\\) needs C \\* H \\* W rows"
    ):
        pg.ag_conv2d_op(x, w, input_shape=(1, 5, 6))
    with pytest.raises(
        PyggmlrValueError, match="ag_conv2d_op: stride must be whole numbers >= 1, got 0"
    ):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), stride=0)
    with pytest.raises(PyggmlrValueError, match="dilation must be whole numbers >= 1, got 1.5"):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), dilation=1.5)
    with pytest.raises(
        ShapeError,
        match="the kernel \\(dilated size \\(7, 7\\)\\) is larger than "
        "the padded input \\(C 1, H 6, W 6\\)",
    ):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), dilation=3)
    with pytest.raises(
        PyggmlrValueError, match="groups = 2 must divide the input channels \\(1\\)"
    ):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), groups=2)
    with pytest.raises(PyggmlrValueError, match='padding = "same" needs stride 1'):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), padding="same", stride=2)
    with pytest.raises(ShapeError, match="weight \\[2x8\\] f32 must be \\[C_out, \\(C / groups\\)"):
        pg.ag_conv2d_op(x, pg.ag_tensor(np.zeros((2, 8))), input_shape=(1, 6, 6))
    with pytest.raises(ArgumentError, match="ag_conv2d_op: stride must be a number or a pair"):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), stride="2")
    with pytest.raises(
        PyggmlrValueError,
        match="padding must be a number, a pair \\(H, W\\), 'same' or 'valid', got 'full'",
    ):
        pg.ag_conv2d_op(x, w, input_shape=(1, 6, 6), padding="full")
    with pytest.raises(ShapeError, match="ag_conv1d_op: x \\[36x2\\] f32 carries the image shape"):
        y = pg.ag_tensor(np.zeros((36, 2)))
        y.image_shape = (1, 6, 6)
        pg.ag_conv1d_op(y, pg.ag_tensor(np.zeros((2, 3))))
    # the layers name themselves
    with pytest.raises(
        PyggmlrValueError,
        match="ag_conv2d: in_channels \\(3\\) and out_channels "
        "\\(4\\) must be divisible by groups \\(2\\)",
    ):
        pg.ag_conv2d(3, 4, 3, groups=2)
    with pytest.raises(PyggmlrValueError, match="ag_conv2d: kernel_size must be an integer >= 1"):
        pg.ag_conv2d(1, 4, 0)
    with pytest.raises(PyggmlrValueError, match="ag_conv1d: stride must be an integer >= 1"):
        pg.ag_conv1d(1, 4, 3, stride=-1)
    with pytest.raises(
        PyggmlrValueError, match="ag_conv2d: x \\[36x2\\] f32 carries no image shape"
    ):
        pg.ag_conv2d(1, 2, 3)(x)


def test_layer_init_matches_the_generator_and_torch_bounds():
    pg.ggml_set_seed(7)
    layer = pg.ag_conv2d(2, 4, (3, 2), groups=2)
    pg.ggml_set_seed(7)
    bound = 1 / np.sqrt(1 * 3 * 2)
    u = pg.random.runif(4 * 6 + 4, -bound, bound)
    np.testing.assert_array_equal(
        layer.weight.numpy(), u[:24].reshape((4, 6), order="F").astype(np.float32)
    )
    np.testing.assert_array_equal(layer.bias.numpy().ravel(), u[24:].astype(np.float32))
    assert list(layer.parameters()) == ["weight", "bias"]
    assert list(pg.ag_conv1d(2, 3, 3, bias=False).parameters()) == ["weight"]


def small_cnn(seed=11):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(
        pg.ag_conv2d(1, 3, 3, stride=2, padding=1, input_shape=(1, 6, 6)),
        pg.ag_conv2d(3, 4, 2, groups=1),
        pg.ag_linear(16, 3),
    )


@needs_torch
def test_layers_forward_match_torch_and_keep_the_tag(f64):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 1, 6, 6))
    m = small_cnn()
    y = m(pg.ag_tensor(x.reshape(5, -1).T))
    c1, c2, lin = m.layers
    t1 = torch.nn.Conv2d(1, 3, 3, stride=2, padding=1).double()
    t2 = torch.nn.Conv2d(3, 4, 2).double()
    with torch.no_grad():
        t1.weight.copy_(torch.tensor(c1.weight.numpy().reshape(3, 1, 3, 3)))
        t1.bias.copy_(torch.tensor(c1.bias.numpy().ravel()))
        t2.weight.copy_(torch.tensor(c2.weight.numpy().reshape(4, 3, 2, 2)))
        t2.bias.copy_(torch.tensor(c2.bias.numpy().ravel()))
        h = t2(t1(torch.tensor(x))).reshape(5, -1).numpy().T
    ref = lin.W.numpy() @ h + lin.b.numpy()
    assert rel(y.numpy(), ref) < 1e-12


def test_activation_is_applied_kept_in_files_and_checked(tmp_path, f64):
    rng = np.random.default_rng(8)
    x = pg.ag_tensor(rng.normal(size=(2 * 5 * 5, 3)))
    pg.ggml_set_seed(3)
    plain = pg.ag_conv2d(2, 4, 3, padding=1, input_shape=(2, 5, 5))
    for act, f in (("relu", pg.ag_relu), ("tanh", pg.ag_tanh), ("sigmoid", pg.ag_sigmoid)):
        pg.ggml_set_seed(3)
        c = pg.ag_conv2d(2, 4, 3, padding=1, input_shape=(2, 5, 5), activation=act)
        y = c(x)
        np.testing.assert_array_equal(y.numpy(), f(plain(x)).numpy())
        assert pg.ag_image_shape(y) == (4, 5, 5)  # the activation keeps the image shape
        assert c.to_config()["activation"] == act
    m = pg.ag_sequential(c, pg.ag_max_pool2d(2), pg.ag_flatten(), pg.ag_linear(16, 2))
    path = os.fspath(tmp_path / "act.safetensors")
    pg.ag_save_model(m, path)
    m2 = pg.ag_load_model(path)
    assert m2.layers[0].activation == "sigmoid"
    np.testing.assert_array_equal(pg.ag_predict(m2, x), pg.ag_predict(m, x))
    with pytest.raises(PyggmlrValueError, match=r"^ag_conv1d: activation must be one of"):
        pg.ag_conv1d(1, 2, 3, activation="swish")


def test_config_model_file_and_sequential(tmp_path, f64):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(36, 4))
    m = small_cnn()
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][0] == {
        "type": "conv2d",
        "in_channels": 1,
        "out_channels": 3,
        "kernel_size": [3, 3],
        "stride": [2, 2],
        "padding": [1, 1],
        "dilation": [1, 1],
        "groups": 1,
        "bias": True,
        "input_shape": [1, 6, 6],
        "activation": None,
        "init": "torch",
    }
    m2 = pg.ag_module_from_config(cfg)
    assert [type(v) for v in m2.layers] == [type(v) for v in m.layers]
    path = os.fspath(tmp_path / "cnn.gguf")
    pg.ag_save_model(m, path)
    m3 = pg.ag_load_model(path)
    np.testing.assert_array_equal(pg.ag_predict(m3, x), pg.ag_predict(m, x))
    c1 = pg.ag_conv1d(2, 3, 3, padding="same", input_shape=(2, 5), bias=False)
    m4 = pg.ag_module_from_config(pg.ag_to_config(pg.ag_sequential(c1)))
    assert m4.layers[0].to_config() == c1.to_config()
    assert c1.to_config()["padding"] == "same" and c1.to_config()["kernel_size"] == 3


def test_compile_and_fit_static_equal_eager(f64):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(36, 12)), rng.normal(size=(3, 12))
    fit_static_equals_eager(small_cnn, x, y, first_ops=("conv2d", "conv2d"))


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(7)
    x = pg.ag_tensor(rng.normal(size=(36, 8)))
    y = pg.ag_tensor(rng.normal(size=(3, 8)))
    model = small_cnn()
    est, peak = estimate_and_peak(model, x, y)
    assert est.params == 3 * 9 + 3 + 4 * 12 + 4 + 16 * 3 + 3
    assert abs(est.total / peak - 1) < 0.02
