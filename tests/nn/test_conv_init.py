"""The convolution layers' init = (issue 30): torch's default kept bit for bit, keras'
glorot_uniform and he_uniform (torch's xavier_uniform_ / kaiming_uniform_(nonlinearity="relu")
bounds on the torch-shaped weight, bias zeros) drawn from the core's stream as one runif; configs
and model files keep the choice; bad values are refused naming the layer and the argument."""

import math
import os

import numpy as np
import pytest
from _nnref import needs_torch, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError

# (constructor, args, torch-shaped weight, torch's fan_in, fan_out)
LAYERS = [
    (pg.ag_conv2d, (4, 6, (3, 2)), {"groups": 2}, (6, 2, 3, 2), 12, 36),
    (pg.ag_conv1d, (3, 5, 4), {}, (5, 3, 4), 12, 20),
    (pg.ag_conv_transpose2d, (4, 6, 3), {"groups": 2}, (4, 3, 3, 3), 27, 36),
    (pg.ag_conv_transpose1d, (4, 6, 3), {"groups": 2}, (4, 3, 3), 9, 12),
]


def bound_of(init, fan_in, fan_out):
    if init == "glorot_uniform":
        return math.sqrt(6.0 / (fan_in + fan_out))
    return math.sqrt(6.0 / fan_in) if init == "he_uniform" else 1.0 / math.sqrt(fan_in)


@pytest.mark.parametrize("init", ["glorot_uniform", "he_uniform"])
@pytest.mark.parametrize(
    "spec", LAYERS, ids=["conv2d", "conv1d", "conv_transpose2d", "conv_transpose1d"]
)
def test_keras_inits_are_one_runif_then_zero_bias(spec, init, f64):
    make, args, kw, tshape, fi, fo = spec
    pg.ggml_set_seed(13)
    layer = make(*args, **kw, init=init)
    w = layer.weight.numpy()
    pg.ggml_set_seed(13)  # the reference: the same stream, the same bound, filled column-major
    u = pg.random.runif(w.size, -bound_of(init, fi, fo), bound_of(init, fi, fo))
    np.testing.assert_array_equal(w, u.reshape(w.shape, order="F"))
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros((args[1], 1)))
    assert w.shape == (tshape[0], math.prod(tshape[1:]))
    assert layer.init == init and layer.to_config()["init"] == init
    # no draw for the bias: the next number is the stream's next after the weight
    pg.ggml_set_seed(13)
    pg.random.runif(w.size)
    nxt = pg.random.runif(1)
    pg.ggml_set_seed(13)
    make(*args, **kw, init=init)
    assert pg.random.runif(1) == nxt


@needs_torch
@pytest.mark.parametrize("init", ["torch", "glorot_uniform", "he_uniform"])
@pytest.mark.parametrize(
    "spec", LAYERS, ids=["conv2d", "conv1d", "conv_transpose2d", "conv_transpose1d"]
)
def test_bounds_are_torch_definitions_on_the_torch_weight(spec, init):
    make, args, kw, tshape, fi, fo = spec
    t = torch.empty(tshape, dtype=torch.float64)
    assert torch.nn.init._calculate_fan_in_and_fan_out(t) == (fi, fo)
    # torch's bounds from its own gains: xavier_uniform_, kaiming_uniform_(relu) and the layers'
    # reset_parameters (kaiming_uniform_(a = sqrt(5)))
    gain = torch.nn.init.calculate_gain
    ref = {
        "glorot_uniform": math.sqrt(3.0) * math.sqrt(2.0 / (fi + fo)),
        "he_uniform": math.sqrt(3.0) * gain("relu") / math.sqrt(fi),
        "torch": math.sqrt(3.0) * gain("leaky_relu", math.sqrt(5)) / math.sqrt(fi),
    }[init]
    assert bound_of(init, fi, fo) == pytest.approx(ref, rel=1e-14)
    torch.manual_seed(0)
    if init == "glorot_uniform":
        torch.nn.init.xavier_uniform_(t)
    else:
        a = {"a": math.sqrt(5)} if init == "torch" else {"nonlinearity": "relu"}
        torch.nn.init.kaiming_uniform_(t, **a)
    assert t.abs().max().item() <= ref * (1 + 1e-15)
    pg.ggml_set_seed(1)
    w = make(*args, **kw, init=init).weight.numpy()
    assert np.abs(w).max() <= ref * (1 + 1e-6)


@pytest.mark.parametrize("init", ["torch", "glorot_uniform", "he_uniform"])
def test_a_big_layer_fills_its_bound(init, f64):
    pg.ggml_set_seed(2)
    layer = pg.ag_conv2d(16, 64, 3, init=init)
    w = layer.weight.numpy()
    b = bound_of(init, 16 * 9, 64 * 9)
    assert np.abs(w).max() <= b
    assert np.abs(w).max() > 0.99 * b
    assert abs(w.mean()) < 0.02 * b  # symmetric


def test_torch_default_keeps_its_bits():
    pg.ggml_set_seed(7)
    a = pg.ag_conv2d(2, 4, (3, 2), groups=2)
    pg.ggml_set_seed(7)
    b = pg.ag_conv2d(2, 4, (3, 2), groups=2, init="torch")
    pg.ggml_set_seed(7)
    u = pg.random.runif(28, -1 / np.sqrt(6), 1 / np.sqrt(6)).astype(np.float32)
    for layer in (a, b):
        np.testing.assert_array_equal(layer.weight.numpy(), u[:24].reshape((4, 6), order="F"))
        np.testing.assert_array_equal(layer.bias.numpy().ravel(), u[24:])
    assert a.init == "torch" and a.to_config()["init"] == "torch"


def test_prefixes_name_an_init_and_bias_false_has_none():
    assert pg.ag_conv1d(1, 2, 3, init="he").init == "he_uniform"
    assert pg.ag_conv2d(1, 2, 3, init="g").init == "glorot_uniform"
    c = pg.ag_conv_transpose2d(2, 3, 2, bias=False, init="he_uniform")
    assert c.bias is None and list(c.parameters()) == ["weight"]


def test_configs_and_model_files_keep_init(tmp_path, f64):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2 * 6 * 6, 3))
    pg.ggml_set_seed(4)
    m = pg.ag_sequential(
        pg.ag_conv2d(2, 4, 3, stride=2, padding=1, input_shape=(2, 6, 6), init="he_uniform"),
        pg.ag_conv_transpose2d(4, 2, 2, stride=2, init="glorot_uniform"),
        pg.ag_flatten(),
        pg.ag_linear(2 * 36, 2),
    )
    cfg = pg.ag_to_config(m)
    assert [v.get("init") for v in cfg["layers"][:2]] == ["he_uniform", "glorot_uniform"]
    m2 = pg.ag_module_from_config(cfg)
    assert [v.init for v in m2.layers[:2]] == ["he_uniform", "glorot_uniform"]
    np.testing.assert_array_equal(m2.layers[0].bias.numpy(), np.zeros((4, 1)))
    path = os.fspath(tmp_path / "init.gguf")
    pg.ag_save_model(m, path)
    m3 = pg.ag_load_model(path)
    assert m3.layers[0].init == "he_uniform" and m3.layers[1].init == "glorot_uniform"
    np.testing.assert_array_equal(pg.ag_predict(m3, x), pg.ag_predict(m, x))
    # a config from before init = (none given): torch's default
    old = {k: v for k, v in cfg["layers"][0].items() if k != "init"}
    assert pg.ag_module_from_config(old).init == "torch"


def test_bad_init_is_refused_naming_the_layer_and_argument():
    pat = "^ag_conv2d: init must be one of 'torch', 'glorot_uniform', 'he_uniform', got 'xavier'"
    with pytest.raises(PyggmlrValueError, match=pat):
        pg.ag_conv2d(1, 2, 3, init="xavier")
    with pytest.raises(ArgumentError, match="^ag_conv1d: init must be one of .* got None"):
        pg.ag_conv1d(1, 2, 3, init=None)
    with pytest.raises(PyggmlrValueError, match="^ag_conv_transpose2d: init must be one of"):
        pg.ag_conv_transpose2d(1, 2, 3, init="")
    cfg = pg.ag_conv2d(1, 2, 3).to_config()
    cfg["init"] = "orthogonal"
    with pytest.raises(PyggmlrValueError, match="ag_module_from_config: .*conv2d.*init must be"):
        pg.ag_module_from_config(cfg)
