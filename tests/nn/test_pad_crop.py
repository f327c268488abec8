"""Negative padding in ag_pad2d / ag_pad1d (torch's F.pad: a negative pad crops that side, mixed
signs allowed, in every mode): forward and the gradient against torch in f64, the layers and
their configs, and the refusals (an empty result; "constant" crops beyond the input)."""

import numpy as np
import pytest
from _nnref import F, needs_torch, rel, torch

import pyggmlr as pg
from pyggmlr.errors import PyggmlrValueError, ShapeError

MODES = ["constant", "reflect", "replicate"]


def against_torch(a, op, ref, **kw):
    n = a.shape[0]
    x = pg.ag_param(a.reshape(n, -1).T)
    with pg.with_grad_tape():
        y = op(x, **kw)
        w = np.random.default_rng(1).normal(size=y.shape)
        loss = pg.ag_sum(pg.ag_mul(y, pg.ag_tensor(w)))
    g = pg.backward(loss)[x]
    tx = torch.tensor(a, requires_grad=True)
    ty = ref(tx)
    (ty.reshape(n, -1).T * torch.tensor(w)).sum().backward()
    assert pg.ag_image_shape(y)[-1] == ty.shape[-1]
    assert rel(y.numpy(), ty.detach().numpy().reshape(n, -1).T) < 1e-10
    assert rel(g, tx.grad.numpy().reshape(n, -1).T) < 1e-10


PADS_2D = [  # torch's (left, right, top, bottom)
    (-1, 2, 1, -2),
    (-2, -1, 0, 0),
    (1, -3, -2, 3),
    (-4, 3, -3, 3),
    (0, 0, -1, -2),
    (-1, -1, -1, -1),
]


@needs_torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("p", PADS_2D)
def test_pad2d_crops_as_torch(f64, mode, p):
    a = np.random.default_rng(2).normal(size=(3, 2, 4, 5))
    value = 1.5 if mode == "constant" else 0
    kw = {"value": value} if mode == "constant" else {}
    against_torch(
        a,
        pg.ag_pad2d_op,
        lambda t: F.pad(t, p, mode=mode, **kw),
        padding=p,
        value=value,
        mode=mode,
        input_shape=(2, 4, 5),
    )


@needs_torch
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("p", [(-2, 3), (3, -5), (-1, -1), (-5, 1), (-2, 4)])
def test_pad1d_crops_as_torch(f64, mode, p):
    a = np.random.default_rng(3).normal(size=(2, 3, 6))
    against_torch(
        a,
        pg.ag_pad1d_op,
        lambda t: F.pad(t, p, mode=mode),
        padding=p,
        mode=mode,
        input_shape=(3, 6),
    )


@needs_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_crops_past_the_input_follow_torch(f64, mode):
    # reflect / replicate index the input from the original edges: (-7, 4) of 5 is 2 long
    a = np.random.default_rng(4).normal(size=(2, 1, 5))
    against_torch(
        a,
        pg.ag_pad1d_op,
        lambda t: F.pad(t, (-7, 4), mode=mode),
        padding=(-7, 4),
        mode=mode,
        input_shape=(1, 5),
    )


def test_layers_and_configs_keep_negative_pads(f64, tmp_path):
    x = pg.ag_images(np.random.default_rng(5).normal(size=(2, 1, 4, 4)))
    layer = pg.ag_pad2d((-1, 2, 0, -1), mode="replicate")
    assert layer.padding == (-1, 2, 0, -1)
    assert pg.ag_image_shape(layer(x)) == (1, 3, 5)
    cfg = layer.to_config()
    assert cfg["padding"] == [-1, 2, 0, -1]
    m = pg.ag_module_from_config(pg.ag_to_config(pg.ag_sequential(layer, pg.ag_pad1d(-1))))
    assert m.layers[0].padding == (-1, 2, 0, -1) and m.layers[1].padding == (-1, -1)
    np.testing.assert_array_equal(m.layers[0](x).numpy(), layer(x).numpy())


def test_refusals_name_the_function_the_argument_and_the_shapes():
    x = pg.ag_tensor(np.zeros((5, 2)))
    with pytest.raises(
        ShapeError,
        match=r"^ag_pad1d_op: padding \(left -6, right 3\) crops more than the input \(C 1, L 5\) "
        r"holds; x is \[5x2\] f32",
    ):
        pg.ag_pad1d_op(x, (-6, 3), input_shape=(1, 5))
    with pytest.raises(
        ShapeError,
        match=r"^ag_pad1d_op: padding \(left -3, right -2\) leaves an empty output \(L 0\) of the "
        r"input \(C 1, L 5\)",
    ):
        pg.ag_pad1d_op(x, (-3, -2), mode="reflect", input_shape=(1, 5))
    with pytest.raises(
        ShapeError,
        match=r"^ag_pad2d: padding \(left 0, right 0, top -1, bottom 0\) leaves an empty output "
        r"\(H 0, W 5\) of the input \(C 1, H 1, W 5\)",
    ):
        pg.ag_pad2d((0, 0, -1, 0), mode="replicate")(pg.ag_images(np.zeros((2, 1, 5))))
    with pytest.raises(ShapeError, match=r"reflect padding \(left 5, right -1\) must be less"):
        pg.ag_pad1d_op(x, (5, -1), mode="reflect", input_shape=(1, 5))
    with pytest.raises(PyggmlrValueError, match=r"^ag_pad2d: padding must be a whole number "):
        pg.ag_pad2d(-1.5)
