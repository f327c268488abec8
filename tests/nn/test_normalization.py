"""ag_normalization (keras3's layer_normalization + adapt): the core's statistics and op against
PyTorch in f64, the buffers in state dicts and model files, ag_fit eager vs compiled, the memory
estimate, and the typed errors."""

import os

import numpy as np
import pytest
import torch
from _nnref import estimate_and_peak

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError


def data(rng, n=40):
    x = rng.normal(size=(4, n)) * np.array([[1.0], [10.0], [0.1], [3.0]]) + np.array(
        [[5.0], [-20.0], [0.5], [0.0]]
    )
    return x


def torch_ref(x, w, eps=1e-7):
    """keras's formula in torch f64: population statistics, (x - mean) / max(sqrt(var), eps),
    and the gradient of sum(out * w) with respect to x (the statistics are constants)."""
    tx = torch.tensor(x, requires_grad=True)
    m = tx.detach().mean(1, keepdim=True)
    v = tx.detach().var(1, unbiased=False, keepdim=True)
    out = (tx - m) / torch.clamp(torch.sqrt(v), min=eps)
    (out * torch.tensor(w)).sum().backward()
    return m.numpy(), v.numpy(), out.detach().numpy(), tx.grad.numpy()


def test_adapt_forward_backward_match_torch(f64):
    rng = np.random.default_rng(1)
    x, w = data(rng), rng.normal(size=(4, 40))
    layer = pg.ag_normalization(x)
    m, v, out, gx = torch_ref(x, w)
    np.testing.assert_allclose(layer.mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(layer.variance.numpy(), v, rtol=1e-12)
    xt = pg.ag_param(x)
    with pg.with_grad_tape():
        y = layer(xt)
        loss = pg.ag_sum(y * pg.ag_tensor(w))
    grads = pg.backward(loss)
    np.testing.assert_allclose(y.numpy(), out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[xt], gx, rtol=1e-12)
    assert layer.parameters() == {} and set(layer.buffers()) == {"mean", "variance"}
    assert not layer.mean.requires_grad and not layer.variance.requires_grad


def test_given_statistics_and_constant_feature(f64):
    layer = pg.ag_normalization(mean=[1.0, 2.0], variance=[4.0, 0.0])
    x = np.array([[3.0, -1.0], [2.0, 2.5]])
    # variance 0: divided by eps (1e-7), as keras; the value equal to the mean maps to 0
    np.testing.assert_array_equal(layer(x).numpy(), np.array([[1.0, -1.0], [0.0, 0.5 / 1e-7]]))
    c = pg.ag_normalization(np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]))
    np.testing.assert_array_equal(c.variance.numpy().ravel(), [0.0, 2.0 / 3.0])
    assert np.all(np.isfinite(c(np.array([[1.0], [1.0]])).numpy()))
    ident = pg.ag_normalization(features=3)
    np.testing.assert_array_equal(ident(np.eye(3)).numpy(), np.eye(3))
    assert ident.adapt(np.arange(6.0).reshape(3, 2)) is ident
    np.testing.assert_array_equal(ident.variance.numpy().ravel(), [0.25] * 3)


def test_errors_name_function_argument_and_shapes():
    x = np.ones((3, 5))
    x[1, 2] = np.nan
    with pytest.raises(
        PyggmlrValueError,
        match=r"ag_normalization: x \[3x5\] f32 has 1 non-finite value.*row 2, column 3",
    ):
        pg.ag_normalization(x)
    with pytest.raises(ShapeError, match="ag_normalization: mean has 2 values but variance has 3"):
        pg.ag_normalization(mean=[0, 0], variance=[1, 1, 1])
    with pytest.raises(
        PyggmlrValueError, match=r"ag_normalization: variance must be >= 0, got -1 at feature 2"
    ):
        pg.ag_normalization(mean=[0, 0], variance=[1, -1])
    with pytest.raises(PyggmlrValueError, match="ag_normalization: mean must be finite"):
        pg.ag_normalization(mean=[np.nan, 0], variance=[1, 1])
    with pytest.raises(
        ShapeError, match=r"ag_normalization: mean and variance have 2 values but x has 3"
    ):
        pg.ag_normalization(mean=[0, 0], variance=[1, 1], features=3)
    with pytest.raises(ArgumentError, match="give both mean and variance"):
        pg.ag_normalization(mean=[0.0])
    with pytest.raises(ArgumentError, match="not both"):
        pg.ag_normalization(np.ones((2, 2)), mean=[0, 0], variance=[1, 1])
    with pytest.raises(ArgumentError, match="give x, mean and variance, or features"):
        pg.ag_normalization()
    with pytest.raises(
        ShapeError, match=r"ag_normalization: expected 2 features \(rows\), x is \[3x4\]"
    ):
        pg.ag_normalization(features=2)(np.ones((3, 4)))
    with pytest.raises(ShapeError, match=r"ag_normalization: x must have at least one column"):
        pg.ag_normalization(features=2).adapt(np.ones((2, 0)))


def model_of(x):
    return pg.ag_sequential(
        [pg.ag_normalization(x), pg.ag_linear(4, 5, "relu"), pg.ag_linear(5, 2)]
    )


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_state_dict_and_model_file_keep_the_buffers(dtype, tmp_path):
    prev = pg.ag_dtype(dtype)
    try:
        rng = np.random.default_rng(2)
        x = data(rng)
        m = model_of(x)
        sd = pg.ag_state_dict(m)
        assert {"layer1_mean", "layer1_variance"} <= set(sd["buffers"])
        assert not any(k.startswith("layer1_") for k in sd["parameters"])
        assert pg.ag_to_config(m)["layers"][0] == {
            "type": "normalization",
            "features": 4,
            "eps": 1e-7,
        }
        path = os.fspath(tmp_path / "norm.gguf")
        pg.ag_save_model(m, path)
        m2 = pg.ag_load_model(path)
        np.testing.assert_array_equal(m2.layers[0].mean.numpy(), m.layers[0].mean.numpy())
        np.testing.assert_array_equal(m2.layers[0].variance.numpy(), m.layers[0].variance.numpy())
        np.testing.assert_array_equal(pg.ag_predict(m2, x), pg.ag_predict(m, x))
        # the config round trip alone builds the layer with its defaults
        m3 = pg.ag_module_from_config(pg.ag_to_config(m))
        np.testing.assert_array_equal(m3.layers[0].variance.numpy(), np.ones((4, 1)))
    finally:
        pg.ag_dtype(prev)


def test_ag_fit_static_equals_eager_and_buffers_stay(f64):
    rng = np.random.default_rng(3)
    x, y = data(rng, 24), rng.normal(size=(2, 24))
    runs = []
    for static in (False, True):
        m = model_of(x)
        init = {k: np.random.default_rng(4).normal(size=t.shape) for k, t in m.parameters().items()}
        for k, v in init.items():
            m.parameters()[k].data = v
        before = m.layers[0].mean.numpy().copy()
        h = pg.ag_fit(m, x, y, nepoch=3, batch_size=6, shuffle=False, static=static, silent=True)
        np.testing.assert_array_equal(m.layers[0].mean.numpy(), before)  # never trained
        runs.append((np.asarray(h.loss), pg.ag_predict(m, x)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_memory_estimate_equals_measured_step(f64):
    """estimate = measured peak of one training step (test_memory_estimate.py's invariant)."""
    rng = np.random.default_rng(5)
    x = pg.ag_tensor(data(rng, 16))
    y = pg.ag_tensor(rng.normal(size=(2, 16)))
    model = model_of(x.numpy())
    est, peak = estimate_and_peak(model, x, y)
    assert est.params == 4 * 5 + 5 + 5 * 2 + 2  # the statistics are no parameters
    assert abs(est.total / peak - 1) < 0.02
