"""Padding and upsampling (issue 30): the functional ops and layers against PyTorch 2.13 in f64
(forward and gradients, every mode, the padding forms, 1-D), the image tag, configs and model
files, ag_compile and ag_fit(static=True) against the eager run, the memory estimate, and the
core's error texts."""

import os

import numpy as np
import pytest
from _nnref import F, estimate_and_peak, image_shape, needs_torch, tag, to_cols, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError
from pyggmlr.nn import Module


def run_pair(op, ref, a, **kw):
    """(ours, torch's) forward and gradient of sum(out * w) in f64, w drawn for the output."""
    x = pg.ag_param(to_cols(a))
    with pg.with_grad_tape():
        y = op(x, **kw)
        w = np.random.default_rng(1).normal(size=y.shape)
        loss = pg.ag_sum(y * pg.ag_tensor(w))
    g = pg.backward(loss)[x]
    tx = torch.tensor(a, requires_grad=True)
    ty = ref(tx)
    (ty.reshape(a.shape[0], -1).T * torch.tensor(w)).sum().backward()
    return y.numpy(), g, to_cols(ty.detach().numpy()), to_cols(tx.grad.numpy())


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


PADS_2D = [  # ours, torch's (left, right, top, bottom)
    (1, (1, 1, 1, 1)),
    ((2, 1), (1, 1, 2, 2)),
    ((1, 3, 0, 2), (1, 3, 0, 2)),
    ((0, 0, 3, 1), (0, 0, 3, 1)),
    (0, (0, 0, 0, 0)),
]


@needs_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
@pytest.mark.parametrize("p,tp", PADS_2D)
def test_pad2d_matches_torch(f64, mode, p, tp):
    a = np.random.default_rng(2).normal(size=(3, 2, 4, 5))
    value = 1.5 if mode == "constant" else 0
    y, g, ty, tg = run_pair(
        pg.ag_pad2d_op,
        lambda t: (
            F.pad(t, tp, mode=mode, value=value) if mode == "constant" else F.pad(t, tp, mode=mode)
        ),
        a,
        padding=p,
        value=value,
        mode=mode,
        input_shape=(2, 4, 5),
    )
    close(y, ty)
    close(g, tg)


@needs_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
@pytest.mark.parametrize("p,tp", [(2, (2, 2)), ((3, 1), (3, 1)), ((0, 4), (0, 4))])
def test_pad1d_matches_torch(f64, mode, p, tp):
    a = np.random.default_rng(3).normal(size=(2, 3, 6))
    ref = (lambda t: F.pad(t, tp)) if mode == "constant" else (lambda t: F.pad(t, tp, mode=mode))
    y, g, ty, tg = run_pair(pg.ag_pad1d_op, ref, a, padding=p, mode=mode, input_shape=(3, 6))
    close(y, ty)
    close(g, tg)


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("s", [1, 2, 3, (2, 3), (1, 4), (3, 1)])
def test_upsample2d_matches_torch(f64, mode, s):
    a = np.random.default_rng(4).normal(size=(2, 3, 4, 5))
    sf = (s, s) if isinstance(s, int) else s
    kw = {} if mode == "nearest" else {"align_corners": False}
    y, g, ty, tg = run_pair(
        pg.ag_upsample2d_op,
        lambda t: F.interpolate(t, scale_factor=sf, mode=mode, **kw),
        a,
        scale_factor=s,
        mode=mode,
        input_shape=(3, 4, 5),
    )
    close(y, ty)
    close(g, tg)
    if mode == "nearest":  # copies: exact
        np.testing.assert_array_equal(y, ty)


@needs_torch
def test_edge_sizes_follow_torch(f64):
    """reflect at its largest padding (size - 1); bilinear over a 1-pixel dimension."""
    a = np.random.default_rng(5).normal(size=(1, 1, 3, 2))
    y, g, ty, tg = run_pair(
        pg.ag_pad2d_op, lambda t: F.pad(t, (1, 1, 2, 2), mode="reflect"), a, padding=(2, 1),
        mode="reflect", input_shape=(1, 3, 2),
    )  # fmt: skip
    close(y, ty)
    close(g, tg)
    a = np.random.default_rng(6).normal(size=(2, 2, 1, 3))
    y, g, ty, tg = run_pair(
        pg.ag_upsample2d_op,
        lambda t: F.interpolate(t, scale_factor=(2, 2), mode="bilinear", align_corners=False),
        a, scale_factor=2, mode="bilinear", input_shape=(2, 1, 3),
    )  # fmt: skip
    close(y, ty)
    close(g, tg)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_layers_read_the_tag_and_tag_their_output(dtype):
    prev = pg.ag_dtype(dtype)
    try:
        rng = np.random.default_rng(7)
        x = tag(pg.ag_tensor(rng.normal(size=(2 * 4 * 5, 3))), (2, 4, 5))
        y = pg.ag_pad2d((1, 2))(x)
        assert y.shape == (2 * 6 * 9, 3) and image_shape(y) == (2, 6, 9)
        np.testing.assert_array_equal(
            y.numpy(), pg.ag_pad2d_op(x.numpy(), (1, 2), input_shape=(2, 4, 5)).numpy()
        )
        z = pg.ag_upsample2d((2, 1), "bilinear")(y)
        assert image_shape(z) == (2, 12, 9)
        s = tag(pg.ag_tensor(rng.normal(size=(3 * 10, 2))), (3, 1, 10))
        assert image_shape(pg.ag_pad1d((1, 2), mode="replicate")(s)) == (3, 1, 13)
        assert pg.ag_pad1d(2, value=-1)(s).numpy()[0, 0] == -1
        assert pg.ag_pad2d((1, 2)).padding == (2, 2, 1, 1)
        assert pg.ag_pad1d(3).padding == (3, 3)
    finally:
        pg.ag_dtype(prev)


class Tagger(Module):
    """A first layer giving raw data its image shape (zero padding is the identity)."""

    kind = "tagger"

    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        return pg.ag_pad2d_op(x, 0, input_shape=self.shape)


def cnn():
    return [
        pg.ag_conv2d(2, 3, 3, activation="relu"),
        pg.ag_pad2d(1, mode="reflect"),
        pg.ag_upsample2d(2, "bilinear"),
        pg.ag_max_pool2d(2),
        pg.ag_pad2d((0, 1, 1, 0), value=0.5),
        pg.ag_upsample2d((1, 2)),
        pg.ag_flatten(),
        pg.ag_linear(3 * 6 * 12, 2),
    ]


def test_configs_and_model_files(tmp_path):
    pg.ggml_set_seed(3)
    m = pg.ag_sequential(cnn() + [pg.ag_pad1d((1, 2), mode="replicate")])
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][1] == {"type": "pad2d", "padding": [1, 1, 1, 1], "value": 0,
                                "mode": "reflect"}  # fmt: skip
    assert cfg["layers"][2] == {"type": "upsample2d", "scale_factor": [2, 2], "mode": "bilinear"}
    assert cfg["layers"][4]["value"] == 0.5
    assert cfg["layers"][8] == {"type": "pad1d", "padding": [1, 2], "value": 0,
                                "mode": "replicate"}  # fmt: skip
    assert pg.ag_to_config(pg.ag_module_from_config(cfg)) == cfg
    seq = pg.ag_sequential(cnn())
    path = os.fspath(tmp_path / "resize.gguf")
    pg.ag_save_model(seq, path)
    back = pg.ag_load_model(path)
    x = tag(pg.ag_tensor(np.random.default_rng(8).normal(size=(2 * 5 * 5, 4))), (2, 5, 5))
    np.testing.assert_array_equal(back(x).numpy(), seq(x).numpy())
    assert "pad2d(1, 1, 1, 1, reflect)" in repr(seq) and "upsample2d(2x2, bilinear)" in repr(seq)


def test_compiled_step_equals_eager(f64):
    rng = np.random.default_rng(9)
    xs = [rng.normal(size=(2 * 5 * 5, 4)) for _ in range(3)]
    y = rng.normal(size=(2, 4))
    runs = []
    for compiled in (False, True):
        pg.ggml_set_seed(11)
        m = pg.ag_sequential([Tagger((2, 5, 5))] + cnn())
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
        runs.append((out, [p.numpy().copy() for p in m.parameters().values()]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)


def test_ag_fit_static_equals_eager(f64):
    rng = np.random.default_rng(10)
    x, y = rng.normal(size=(2 * 5 * 5, 24)), rng.normal(size=(2, 24))
    runs = []
    for static in (False, True):
        pg.ggml_set_seed(12)
        m = pg.ag_sequential([Tagger((2, 5, 5))] + cnn())
        h = pg.ag_fit(m, x, y, nepoch=2, batch_size=8, shuffle=False, static=static, silent=True)
        runs.append((np.asarray(h.loss), pg.ag_predict(m, x)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(13)
    x = pg.ag_tensor(rng.normal(size=(2 * 5 * 5, 16)))
    y = pg.ag_tensor(rng.normal(size=(2, 16)))
    model = pg.ag_sequential([Tagger((2, 5, 5))] + cnn())
    est, peak = estimate_and_peak(model, x, y, steps=2)
    assert est.params == 3 * 18 + 3 + 216 * 2 + 2  # padding and upsampling hold none
    assert abs(est.total / peak - 1) < 0.02


def test_errors_name_function_argument_and_shapes():
    x = pg.ag_tensor(np.ones((48, 2)))
    with pytest.raises(
        ShapeError,
        match=r"ag_pad2d_op: x \[48x2\] f32 carries no image shape; give input_shape = "
        r"\(C, H, W\) or tag x",
    ):
        pg.ag_pad2d_op(x, 1)
    with pytest.raises(
        ShapeError,
        match=r"ag_pad2d_op: reflect padding \(left 4, right 4, top 1, bottom 1\) must be less "
        r"than the input's W 4 \(left, right\) and H 4 \(top, bottom\); x is \[48x2\] f32",
    ):
        pg.ag_pad2d_op(x, (1, 4), mode="reflect", input_shape=(3, 4, 4))
    with pytest.raises(
        ShapeError,
        match=r"ag_upsample2d_op: input_shape \(C 3, H 4, W 5\) needs 60 rows \(C \* H \* W\), "
        r"but x is \[48x2\] f32",
    ):
        pg.ag_upsample2d_op(x, 2, input_shape=(3, 4, 5))
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_pad2d: padding must be a whole number \(negative: crop\), a pair \(H, W\) or "
        r"four \(left, right, top, bottom\) of them, got 3 values",
    ):
        pg.ag_pad2d((1, 1, 1))
    with pytest.raises(PyggmlrValueError, match=r"ag_pad1d: padding .* got \(1, -0.5\)"):
        pg.ag_pad1d((1, -0.5))
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_pad2d: mode must be \"constant\", \"reflect\" or \"replicate\", got \"circular\"",
    ):
        pg.ag_pad2d(1, mode="circular")
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_pad2d_op: value \(2\) applies to mode \"constant\" only, got mode \"replicate\"",
    ):
        pg.ag_pad2d_op(x, 1, value=2, mode="replicate", input_shape=(3, 4, 4))
    with pytest.raises(
        PyggmlrValueError, match=r"ag_pad2d: value must be a finite number, got inf"
    ):
        pg.ag_pad2d(1, value=float("inf"))
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_upsample2d: scale_factor must be one or two \(H, W\) whole numbers >= 1, got "
        r"\(1.5, 1.5\)",
    ):
        pg.ag_upsample2d(1.5)
    with pytest.raises(
        PyggmlrValueError, match=r"ag_upsample2d: mode must be \"nearest\" or \"bilinear\", got"
    ):
        pg.ag_upsample2d(2, mode="bicubic")
    with pytest.raises(ArgumentError, match=r"ag_pad2d: padding must be a number, a pair"):
        pg.ag_pad2d("1")
    with pytest.raises(ArgumentError, match=r"ag_upsample2d_op: mode must be a string, got 2"):
        pg.ag_upsample2d_op(x, 2, 2)
    with pytest.raises(
        PyggmlrValueError,
        match=r"bad arguments for a 'pad2d' layer: padding must be a whole number or a "
        r"list of 1, 2 or 4, got \[1,1,1\]",
    ):
        pg.ag_module_from_config({"type": "pad2d", "padding": [1, 1, 1]})


# ---------------------------------------------------------------------------------------------
# 1-D upsampling: a signal is an image with H = 1; "linear" is bilinear with scale 1 along H


@needs_torch
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("s", [1, 2, 3, 5])
def test_upsample1d_matches_torch(f64, mode, s):
    a = np.random.default_rng(14).normal(size=(2, 3, 7))
    kw = {} if mode == "nearest" else {"align_corners": False}
    up = torch.nn.Upsample(scale_factor=s, mode=mode, **kw)
    y, g, ty, tg = run_pair(
        pg.ag_upsample1d_op, up, a, scale_factor=s, mode=mode, input_shape=(3, 7)
    )
    close(y, ty)
    close(g, tg)
    if mode == "nearest":
        np.testing.assert_array_equal(y, ty)
    # the 2-D op on H = 1 with scale (1, s) is the same computation, bit for bit
    m2 = "nearest" if mode == "nearest" else "bilinear"
    y2 = pg.ag_upsample2d_op(to_cols(a), (1, s), m2, input_shape=(3, 1, 7)).numpy()
    np.testing.assert_array_equal(y, y2)


@needs_torch
def test_upsample1d_length_one_signal(f64):
    a = np.random.default_rng(15).normal(size=(3, 2, 1))
    up = torch.nn.Upsample(scale_factor=4, mode="linear", align_corners=False)
    y, g, ty, tg = run_pair(pg.ag_upsample1d_op, up, a, scale_factor=4, mode="linear",
                            input_shape=(2, 1))  # fmt: skip
    close(y, ty)
    close(g, tg)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_upsample1d_layer_reads_the_tag(dtype, tmp_path):
    prev = pg.ag_dtype(dtype)
    try:
        s = tag(pg.ag_tensor(np.random.default_rng(16).normal(size=(3 * 10, 2))), (3, 1, 10))
        layer = pg.ag_upsample1d(3, "linear")
        y = layer(s)
        assert y.shape == (3 * 30, 2) and image_shape(y) == (3, 1, 30)
        np.testing.assert_array_equal(
            y.numpy(), pg.ag_upsample1d_op(s.numpy(), 3, "linear", input_shape=(3, 10)).numpy()
        )
        assert layer.scale_factor == 3 and layer.name == "upsample1d(3, linear)"
        assert image_shape(pg.ag_upsample1d(2)(s)) == (3, 1, 20)
    finally:
        pg.ag_dtype(prev)


def test_upsample1d_config_and_model_file(tmp_path):
    pg.ggml_set_seed(4)
    seq = pg.ag_sequential(
        [
            pg.ag_conv1d(2, 3, 3, input_shape=(2, 8)),
            pg.ag_upsample1d(2, "linear"),
            pg.ag_pad1d(1),
            pg.ag_upsample1d(3),
            pg.ag_flatten(),
            pg.ag_linear(3 * 42, 2),
        ]
    )
    cfg = pg.ag_to_config(seq)
    assert cfg["layers"][1] == {"type": "upsample1d", "scale_factor": 2, "mode": "linear"}
    assert cfg["layers"][3] == {"type": "upsample1d", "scale_factor": 3, "mode": "nearest"}
    assert pg.ag_to_config(pg.ag_module_from_config(cfg)) == cfg
    path = os.fspath(tmp_path / "up1d.gguf")
    pg.ag_save_model(seq, path)
    back = pg.ag_load_model(path)
    x = np.random.default_rng(17).normal(size=(2 * 8, 5))
    np.testing.assert_array_equal(back(x).numpy(), seq(x).numpy())
    assert "upsample1d(2, linear)" in repr(seq)


def test_upsample1d_errors():
    x = pg.ag_tensor(np.ones((12, 2)))
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_upsample1d: mode must be \"nearest\" or \"linear\", got "
        r"\"bilinear\"",
    ):
        pg.ag_upsample1d(2, "bilinear")
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_upsample1d_op: scale_factor must be a whole number >= 1, got 0",
    ):
        pg.ag_upsample1d_op(x, 0, input_shape=(3, 4))
    with pytest.raises(
        PyggmlrValueError, match=r"ag_upsample1d: scale_factor must be a whole number >= 1, got 2.5"
    ):
        pg.ag_upsample1d(2.5)
    with pytest.raises(ArgumentError, match=r"ag_upsample1d: scale_factor must be a number, got"):
        pg.ag_upsample1d((2, 2))
    with pytest.raises(ShapeError, match=r"ag_upsample1d_op: input_shape .*5.* but x is \[12x2\]"):
        pg.ag_upsample1d_op(x, 2, input_shape=(3, 5))
    with pytest.raises(ShapeError, match=r"ag_upsample1d_op: x \[12x2\] f32 carries no image"):
        pg.ag_upsample1d_op(x, 2)


def test_upsample1d_ag_fit_static_equals_eager(f64):
    rng = np.random.default_rng(18)
    x, y = rng.normal(size=(2 * 8, 24)), rng.normal(size=(2, 24))
    runs = []
    for static in (False, True):
        pg.ggml_set_seed(19)
        m = pg.ag_sequential(
            [
                pg.ag_conv1d(2, 3, 3, input_shape=(2, 8)),
                pg.ag_upsample1d(2, "linear"),
                pg.ag_upsample1d(2),
                pg.ag_flatten(),
                pg.ag_linear(3 * 24, 2),
            ]
        )
        h = pg.ag_fit(m, x, y, nepoch=2, batch_size=8, shuffle=False, static=static, silent=True)
        runs.append((np.asarray(h.loss), pg.ag_predict(m, x)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
