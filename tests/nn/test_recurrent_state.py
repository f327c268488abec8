"""return_state of ag_lstm, ag_gru, ag_rnn against torch's (output, h_n[, c_n]) in f64: the final
states' values and the gradients through them (and the output) into x, the weights and the
initial states; ag_compile replays, configs and model files, ag_sequential's refusal."""

import os

import numpy as np
import pytest
from _nnref import needs_torch, rnn_twin, torch

import pyggmlr as pg
from pyggmlr.errors import ArgumentError

LAYERS = {"lstm": pg.ag_lstm, "gru": pg.ag_gru, "rnn": pg.ag_rnn}


def stacked(s):
    """torch's (L*D, N, H) states as [L*D*H, N] (block l*D + k)."""
    return np.vstack([b.T for b in s])


def check(kind, layers, bidir, seqs, with_h0):
    pg.ggml_set_seed(21)
    layer = LAYERS[kind](
        3, 4, num_layers=layers, bidirectional=bidir, return_sequences=seqs, return_state=True
    )
    rng = np.random.default_rng(22)
    N, T, D = 5, 6, 2 if bidir else 1
    x = rng.normal(size=(N, T, 3))
    tm = rnn_twin(kind, layer)
    tx = torch.tensor(x, requires_grad=True)
    th0 = torch.tensor(rng.normal(size=(layers * D, N, 4)), requires_grad=True)
    tc0 = torch.tensor(rng.normal(size=(layers * D, N, 4)), requires_grad=True)
    st = None if not with_h0 else ((th0, tc0) if kind == "lstm" else th0)
    out, hn = tm(tx, st)
    refs = [hn[0], hn[1]] if kind == "lstm" else [hn]
    D = 2 if bidir else 1
    ref_out = out.reshape(N, -1).T if seqs else torch.cat([refs[0][-D + k] for k in range(D)], 1).T
    refs = [ref_out] + [r.permute(0, 2, 1).reshape(-1, N) for r in refs]
    ws = [rng.normal(size=tuple(r.shape)) for r in refs]
    sum(((r * torch.tensor(w)).sum() for r, w in zip(refs, ws))).backward()
    xt = pg.ag_param(x.reshape(N, -1).T.copy())
    args = {}
    if with_h0:
        args["h0"] = pg.ag_param(stacked(th0.detach().numpy()))
        if kind == "lstm":
            args["c0"] = pg.ag_param(stacked(tc0.detach().numpy()))
    with pg.with_grad_tape():
        res = layer(xt, **args)
        assert isinstance(res, tuple) and len(res) == (3 if kind == "lstm" else 2)
        loss = pg.ag_sum(res[0] * pg.ag_tensor(ws[0]))
        for r, w in zip(res[1:], ws[1:]):
            loss = loss + pg.ag_sum(r * pg.ag_tensor(w))
    g = pg.backward(loss)
    for r, ref in zip(res, refs):
        assert r.shape == tuple(ref.shape)
        np.testing.assert_allclose(r.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g[xt], tx.grad.numpy().reshape(N, -1).T, rtol=1e-10, atol=1e-12)
    for name, p in layer.parameters().items():
        tg = getattr(tm, name.replace("W_", "weight_").replace("b_", "bias_")).grad.numpy()
        np.testing.assert_allclose(g[p].reshape(tg.shape), tg, rtol=1e-10, atol=1e-12)
    if with_h0:
        np.testing.assert_allclose(g[args["h0"]], stacked(th0.grad.numpy()), rtol=1e-10, atol=1e-12)
        if kind == "lstm":
            np.testing.assert_allclose(
                g[args["c0"]], stacked(tc0.grad.numpy()), rtol=1e-10, atol=1e-12
            )


@needs_torch
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize(
    "layers,bidir,seqs,with_h0",
    [
        (1, False, False, False),
        (1, False, True, True),
        (2, True, False, True),
        (2, True, True, False),
    ],
)
def test_states_and_their_gradients_match_torch(kind, layers, bidir, seqs, with_h0, f64):
    check(kind, layers, bidir, seqs, with_h0)


def test_states_feed_back_as_initial_states_and_compile(f64):
    pg.ggml_set_seed(23)
    layer = pg.ag_lstm(2, 3, num_layers=2, return_state=True)
    rng = np.random.default_rng(24)
    x1, x2 = rng.normal(size=(2 * 4, 5)), rng.normal(size=(2 * 4, 5))
    out, hn, cn = layer(x1)
    assert hn.shape == (6, 5) and cn.shape == (6, 5) and out.shape == (3, 5)
    np.testing.assert_array_equal(hn.numpy()[3:], out.numpy())  # the top layer's h_T
    out2, _, _ = layer(x2, h0=hn, c0=cn)  # a second chunk continues the first

    def f(a, b):
        o, h, c = layer(a, h0=hn, c0=cn)
        return pg.ag_sum(o) + pg.ag_sum(h * h) + pg.ag_sum(c)

    step = pg.ag_compile(f, x2, x2, build="grad")
    for xv in (x1, x2):
        xt = pg.ag_tensor(xv)
        with pg.with_grad_tape():
            eager = f(xt, xt)
        ge = pg.backward(eager)
        loss, grads = step(xv, xv)
        assert loss == float(eager.numpy()[0, 0])
        for p in layer.parameters().values():
            np.testing.assert_array_equal(grads[p.id], ge[p])
    assert out2.shape == (3, 5)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_config_model_file_and_sequential_refusal(kind, tmp_path, f64):
    pg.ggml_set_seed(25)
    layer = LAYERS[kind](2, 3, bidirectional=True, return_state=True)
    cfg = pg.ag_to_config(layer)
    assert cfg["return_state"] is True
    assert pg.ag_to_config(LAYERS[kind](2, 3))["return_state"] is False
    assert "return_state" in layer.name
    path = os.fspath(tmp_path / "state.gguf")
    pg.ag_save_model(layer, path)
    back = pg.ag_load_model(path)
    x = np.random.default_rng(26).normal(size=(2 * 4, 3))
    for a, b in zip(layer(x), back(x)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ArgumentError, match=r"ag_sequential: layer 1 \(.*\) has return_state set"):
        pg.ag_sequential(layer, pg.ag_linear(6, 1))
    with pytest.raises(ArgumentError, match="has return_state set"):
        pg.ag_module_from_config({"type": "sequential", "layers": [cfg]})
