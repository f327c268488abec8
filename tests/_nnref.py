"""Shared helpers of the layer tests (tests/nn): PyTorch as the optional f64 reference, the image
layout conversions and tag, the recurrent layers' torch twins, and the memory estimate against a
measured training step. One copy here instead of one per test file."""

import gc

import numpy as np
import pytest
from conftest import current_bytes, itemsize

import pyggmlr as pg
from pyggmlr._core import ffi, lib

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the reference is optional: the tests that need it skip, the rest run
    torch = F = None

needs_torch = pytest.mark.skipif(
    torch is None, reason="PyTorch (the f64 reference) is not installed"
)


def rel(a, b):
    """The largest absolute difference relative to the reference's largest magnitude."""
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def to_cols(a):
    """numpy (N, C, H, W) or (N, C, L) -> the package's [C*H*W, N]."""
    return np.ascontiguousarray(a.reshape(a.shape[0], -1).T)


def tag(t, shape):
    """Set t's image tag from a torch-order (C, H, W) shape (the core's setter)."""
    c, h, w = shape
    assert lib.pg_tensor_set_image_shape(t._p, ffi.new("int64_t[3]", [w, h, c]), ffi.NULL) == 0
    return t


def image_shape(t):
    """t's image tag in torch order (C, H, W), None without one (the core's getter)."""
    out = ffi.new("int64_t[3]")
    if lib.pg_tensor_image_shape(t._p, out) != 1:
        return None
    return (out[2], out[1], out[0])


def rnn_twin(kind, layer, **kw):
    """The torch LSTM / GRU / RNN (batch_first, f64) with the layer's weights copied in."""
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
    t = cls(
        layer.input_size,
        layer.hidden_size,
        num_layers=layer.num_layers,
        bias=layer.bias,
        batch_first=True,
        bidirectional=layer.bidirectional,
        **kw,
    ).double()
    with torch.no_grad():
        for name, p in layer.parameters().items():
            tn = name.replace("W_", "weight_").replace("b_", "bias_")
            v = p.numpy()
            getattr(t, tn).copy_(torch.tensor(v.ravel() if v.shape[1] == 1 else v))
    return t


def estimate_and_peak(model, x, y, steps=1):
    """(ag_estimate_training_memory's estimate, the measured peak of an Adam training step over
    what the step holds before it starts). With steps = 2 the peak is the second step's, when
    Adam's state exists from the first, as in training."""
    est = pg.ag_estimate_training_memory(model=model, x=x, y=y, optimizer="adam", quiet=True)
    gc.collect()
    weights = est.params * itemsize()
    base = current_bytes() - weights - x.size * itemsize() - y.size * itemsize()
    opt = pg.optimizer_adam(model.parameters())
    for i in range(steps):
        if i == steps - 1:
            pg.ag_memory_reset_peak()
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(model.forward(x), y)
        opt.step(pg.backward(loss))
        del loss
        opt.zero_grad()
    return est, pg.ag_memory_peak() - base


def fit_static_equals_eager(make_model, x, y, batch_size=4, first_ops=None):
    """ag_fit(static=True) trains as the eager run does, bit for bit (the loss history and the
    predictions after two epochs); with first_ops, a compiled forward starts with those ops and
    replays the eager forward on other columns."""
    runs = []
    for static in (False, True):
        m = make_model()
        h = pg.ag_fit(
            m, x, y, nepoch=2, batch_size=batch_size, shuffle=False, static=static, silent=True
        )
        runs.append((np.asarray(h.loss), pg.ag_predict(m, x)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    if first_ops:
        m = make_model()
        step = pg.ag_compile(lambda t: m(t), pg.ag_tensor(x[:, :4]), build="forward")
        assert step.ops[: len(first_ops)] == list(first_ops)
        eager = m(pg.ag_tensor(x[:, 4:8])).numpy()
        np.testing.assert_array_equal(step(x[:, 4:8]).numpy(), eager)
