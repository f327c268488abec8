"""ag_lstm, ag_gru, ag_rnn against torch.nn.LSTM / GRU / RNN (batch_first) in f64: outputs and
gradients of inputs, weights, biases and initial states, stacked and bidirectional layers; the
layer table, model files, ag_compile and ag_fit(static = TRUE), the memory estimate, the texts."""

import os

import numpy as np
import pytest
from _nnref import estimate_and_peak, needs_torch, rnn_twin, torch
from _simd import same_bits_at_every_level

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, DTypeError, PyggmlrValueError, ShapeError

LAYERS = {"lstm": pg.ag_lstm, "gru": pg.ag_gru, "rnn": pg.ag_rnn}


def run_both(kind, layer, x, h0=None, c0=None, **kw):
    """Outputs and gradients of sum(out * w) from the layer and from torch."""
    N, T, F = x.shape
    tm = rnn_twin(kind, layer, **kw)
    tx = torch.tensor(x, requires_grad=True)
    states = None
    if h0 is not None:
        th0 = torch.tensor(h0, requires_grad=True)  # (L*D, N, H)
        states = th0
        if kind == "lstm":
            tc0 = torch.tensor(c0, requires_grad=True)
            states = (th0, tc0)
    out, hn = tm(tx, states)
    if kind == "lstm":
        hn = hn[0]
    D = 2 if layer.bidirectional else 1
    ref = (
        out.reshape(N, -1).T
        if layer.return_sequences
        else torch.cat([hn[-D + k] for k in range(D)], 1).T
    )
    rng = np.random.default_rng(7)
    w = rng.normal(size=tuple(ref.shape))
    (ref * torch.tensor(w)).sum().backward()
    xt = pg.ag_param(x.reshape(N, -1).T.copy())
    args = {}
    if h0 is not None:
        args["h0"] = pg.ag_param(np.vstack([s.T for s in h0]))  # [L*D*H, N], torch's order
        if kind == "lstm":
            args["c0"] = pg.ag_param(np.vstack([s.T for s in c0]))
    with pg.with_grad_tape():
        y = layer(xt, **args)
        loss = pg.ag_sum(y * pg.ag_tensor(w))
    g = pg.backward(loss)
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g[xt], tx.grad.numpy().reshape(N, -1).T, rtol=1e-9, atol=1e-12)
    for name, p in layer.parameters().items():
        tn = name.replace("W_", "weight_").replace("b_", "bias_")
        tg = getattr(tm, tn).grad.numpy()
        np.testing.assert_allclose(g[p].reshape(tg.shape), tg, rtol=1e-9, atol=1e-12)
    if h0 is not None:
        np.testing.assert_allclose(
            g[args["h0"]], np.vstack([s.T for s in th0.grad.numpy()]), rtol=1e-9, atol=1e-12
        )
        if kind == "lstm":
            np.testing.assert_allclose(
                g[args["c0"]], np.vstack([s.T for s in tc0.grad.numpy()]), rtol=1e-9, atol=1e-12
            )


@needs_torch
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize(
    "layers,bidir,seqs",
    [(1, False, True), (1, False, False), (2, True, True), (2, True, False), (1, True, False)],
)
def test_matches_torch(kind, layers, bidir, seqs, f64):
    pg.ggml_set_seed(1)
    layer = LAYERS[kind](3, 5, num_layers=layers, bidirectional=bidir, return_sequences=seqs)
    x = np.random.default_rng(2).normal(size=(4, 6, 3))
    run_both(kind, layer, x)


@needs_torch
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_initial_states_and_no_bias_match_torch(kind, f64):
    pg.ggml_set_seed(3)
    layer = LAYERS[kind](2, 4, num_layers=2, bias=False, bidirectional=True, return_sequences=True)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 5, 2))
    h0, c0 = rng.normal(size=(4, 3, 4)), rng.normal(size=(4, 3, 4))
    run_both(kind, layer, x, h0, c0 if kind == "lstm" else None)


@needs_torch
def test_relu_rnn_matches_torch(f64):
    pg.ggml_set_seed(5)
    layer = pg.ag_rnn(3, 4, nonlinearity="relu", return_sequences=True)
    run_both("rnn", layer, np.random.default_rng(6).normal(size=(2, 7, 3)), nonlinearity="relu")


def test_init_is_torch_default_from_the_stream(f64):
    pg.ggml_set_seed(11)
    a = pg.ag_gru(3, 16, num_layers=2)
    pg.ggml_set_seed(11)
    b = pg.ag_gru(3, 16, num_layers=2)
    names = list(a.parameters())
    assert names == [
        "W_ih_l0",
        "W_hh_l0",
        "b_ih_l0",
        "b_hh_l0",
        "W_ih_l1",
        "W_hh_l1",
        "b_ih_l1",
        "b_hh_l1",
    ]
    assert a.parameters()["W_ih_l1"].shape == (48, 16)
    for k in names:
        v = a.parameters()[k].numpy()
        np.testing.assert_array_equal(v, b.parameters()[k].numpy())
        assert np.abs(v).max() <= 0.25 and np.abs(v).max() > 0.2


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_model_file_config_compile_and_fit_static(kind, tmp_path, f64):
    pg.ggml_set_seed(8)
    m = pg.ag_sequential(
        LAYERS[kind](2, 6, num_layers=2, bidirectional=True, dropout=0.25), pg.ag_linear(12, 1)
    )
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(2 * 5, 16)), rng.normal(size=(1, 16))
    cfg = pg.ag_to_config(m)["layers"][0]
    assert cfg["type"] == kind and cfg["num_layers"] == 2 and cfg["bidirectional"] is True
    path = os.fspath(tmp_path / "rnn.gguf")
    pg.ag_eval(m)
    pg.ag_save_model(m, path)
    m2 = pg.ag_load_model(path)
    np.testing.assert_array_equal(pg.ag_predict(m2, x), pg.ag_predict(m, x))
    runs = []
    for static in (False, True):
        pg.ggml_set_seed(10)
        mm = pg.ag_module_from_config(pg.ag_to_config(m))
        h = pg.ag_fit(
            mm, x, y, nepoch=2, batch_size=8, shuffle=False, static=static, loss="mse", silent=True
        )
        runs.append((np.asarray(h.loss), pg.ag_predict(mm, x)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_compiled_grad_step_replays_bit_exact(f64):
    pg.ggml_set_seed(12)
    layer = pg.ag_lstm(3, 4, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(13)
    x1, x2 = rng.normal(size=(3 * 5, 6)), rng.normal(size=(3 * 5, 6))
    step = pg.ag_compile(lambda x: pg.ag_sum(layer(x)), x1, build="grad")
    for xv in (x1, x2):
        xt = pg.ag_tensor(xv)
        with pg.with_grad_tape():
            eager = pg.ag_sum(layer(xt))
        ge = pg.backward(eager)
        loss, grads = step(xv)
        assert loss == float(eager.numpy()[0, 0])
        for p in layer.parameters().values():
            np.testing.assert_array_equal(grads[p.id], ge[p])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_simd_levels_give_identical_bits(kind, dtype):
    """The column kernels of the forward and of backpropagation through time (SSE2, AVX2,
    AVX-512 copies): the same output and gradients, bit for bit; hidden sizes ragged against
    every vector width, with and without h0, both directions, batch 1."""
    pg.ag_dtype(dtype)
    try:
        rng = np.random.default_rng(21)
        cases = []
        for H, N, h0, bidir in ((5, 3, False, True), (17, 4, True, False), (64, 1, True, False)):
            pg.ggml_set_seed(22)
            layer = LAYERS[kind](3, H, bidirectional=bidir, return_sequences=True)
            x = rng.normal(size=(3 * 6, N))
            w = rng.normal(size=(H * (2 if bidir else 1) * 6, N))
            h = rng.normal(size=(H * (2 if bidir else 1), N)) if h0 else None
            c = h[::-1].copy() if h0 and kind == "lstm" else None
            cases.append((layer, x, w, h, c))

        def run():
            res = []
            for layer, x, w, h, c in cases:
                xt = pg.ag_param(x)
                args = {} if h is None else {"h0": pg.ag_param(h)}
                if c is not None:
                    args["c0"] = pg.ag_param(c)
                with pg.with_grad_tape():
                    y = layer(xt, **args)
                    loss = pg.ag_sum(y * pg.ag_tensor(w))
                g = pg.backward(loss)
                res.append(y.numpy().tobytes())
                for t in [xt, *args.values(), *layer.parameters().values()]:
                    res.append(np.asarray(g[t]).tobytes())
            return res

        same_bits_at_every_level(run)
    finally:
        pg.ag_dtype("f32")


def test_memory_estimate_equals_measured_step(f64):
    rng = np.random.default_rng(14)
    x = pg.ag_tensor(rng.normal(size=(3 * 8, 16)))
    y = pg.ag_tensor(rng.normal(size=(2, 16)))
    pg.ggml_set_seed(15)
    model = pg.ag_sequential(pg.ag_lstm(3, 8), pg.ag_linear(8, 2))
    est, peak = estimate_and_peak(model, x, y)
    assert est.params == 4 * 8 * (3 + 8 + 2) + 8 * 2 + 2
    assert abs(est.total / peak - 1) < 0.02


def test_errors_name_the_layer_argument_and_shapes(f64):
    lstm = pg.ag_lstm(3, 4)
    with pytest.raises(
        ShapeError,
        match=r"ag_lstm: x is \[10x2\], its rows are not a multiple "
        r"of input_size = 3",
    ):
        lstm(np.ones((10, 2)))
    with pytest.raises(ShapeError, match=r"ag_lstm: h0 is \[3x2\] but must be \[4, 2\]"):
        lstm(np.ones((9, 2)), h0=np.ones((3, 2)), c0=np.ones((3, 2)))
    with pytest.raises(ArgumentError, match="ag_lstm: give both h0 and c0, or neither"):
        lstm(np.ones((9, 2)), h0=np.ones((4, 2)))
    with pytest.raises(ArgumentError, match=r"ag_gru: c0 \(an initial cell state\) is for ag_lstm"):
        pg.ag_gru(3, 4)(np.ones((9, 2)), c0=np.ones((4, 2)))
    with pytest.raises(ShapeError, match=r"ag_rnn: h0 has 1 states, expected 2"):
        pg.ag_rnn(3, 4, num_layers=2)(np.ones((9, 2)), h0=[np.ones((4, 2))])
    with pytest.raises(DTypeError, match="ag_lstm"):
        lstm(pg.ag_tensor(np.ones((9, 2)), dtype="f32"))
    with pytest.raises(PyggmlrValueError, match="ag_rnn: nonlinearity must be 'tanh' or 'relu'"):
        pg.ag_rnn(3, 4, nonlinearity="sigmoid")
    with pytest.raises(PyggmlrValueError, match="ag_gru: hidden_size"):
        pg.ag_gru(3, 0)
    with pytest.raises(PyggmlrValueError, match="dropout"):
        pg.ag_lstm(3, 4, dropout=1)
    with pytest.raises(
        PyggmlrValueError, match="ag_module_from_config: bad arguments for a 'lstm'"
    ):
        pg.ag_module_from_config({"type": "lstm", "input_size": 3})


def test_the_layers_print_their_options():
    """R prints the same names (r/tests/testthat/test-recurrent.R)."""
    assert pg.ag_gru(1, 32).name == "gru(1, 32)"
    a = pg.ag_lstm(2, 3, num_layers=2, bidirectional=True, dropout=0.25)
    assert a.name == "lstm(2, 3, num_layers=2, bidirectional, dropout=0.25)"
    assert pg.ag_rnn(4, 5).name == "rnn(4, 5)"
    r = pg.ag_rnn(4, 5, nonlinearity="relu", return_sequences=True, return_state=True)
    assert r.name == "rnn(4, 5, relu, return_sequences, return_state)"
    text = str(pg.ag_sequential(pg.ag_gru(1, 32), pg.ag_linear(32, 1))).splitlines()
    assert text[1:3] == ["  [1] gru(1, 32)", "  [2] linear(32, 1)"]
    # alone: the core's line with the same name (R's print; tests/parity/cases_summary.py)
    assert repr(a) == (
        "ag_lstm: lstm(2, 3, num_layers=2, bidirectional, dropout=0.25) (432 parameters, "
        "train mode)"
    )
    g = pg.ag_eval(pg.ag_gru(1, 32))
    assert repr(g) == str(g) == "ag_gru: gru(1, 32) (3360 parameters, eval mode)"
    assert repr(pg.ag_rnn(4, 5, bias=False)) == "ag_rnn: rnn(4, 5) (45 parameters, train mode)"


@pytest.mark.parametrize("static", [None, False, True])
def test_fit_and_predict_refuse_a_return_state_layer(static):
    """R gives the same text (r/tests/testthat/test-recurrent.R)."""
    m = pg.ag_lstm(1, 4, return_state=True)
    txt = (
        "the model (lstm(1, 4, return_state)) has return_state set: its forward returns "
        "(output, h_n[, c_n]), not a tensor; use return_state = FALSE for this call (the same "
        "weights)"
    )
    x, y = np.zeros((3, 8)), np.zeros((4, 8))
    with pytest.raises(ArgumentError) as e:
        pg.ag_fit(m, x, y, loss="mse", nepoch=1, batch_size=4, verbose=0, static=static)
    assert str(e.value) == "ag_fit: " + txt
    with pytest.raises(ArgumentError) as e:
        pg.ag_predict(m, x)
    assert str(e.value) == "ag_predict: " + txt


def test_ag_sequences_from_numpy_layouts():
    """(N, T, F) and (T, N, F) arrays, any strides, become the layers' [F*T, N] input."""
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4) / 7
    t = pg.ag_sequences(x)
    assert t.shape == (12, 2) and t.dtype == pg.ag_default_dtype() and t.image_shape is None
    ref = x.reshape(2, -1).T  # the documented reshape
    assert np.array_equal(t.numpy(), ref.astype(np.float32))
    tnf = pg.ag_sequences(np.ascontiguousarray(x.transpose(1, 0, 2)), layout="TNF", dtype="f64")
    assert tnf.dtype == "f64" and np.array_equal(tnf.numpy(), ref)
    view = x[::-1, :, ::2]  # negative and doubled strides read in place
    assert np.array_equal(pg.ag_sequences(view, dtype="f64").numpy(), view.reshape(2, -1).T)
    one = pg.ag_sequences(x[:, :, 0], dtype="f64")  # one feature per step
    assert np.array_equal(one.numpy(), x[:, :, 0].T)
    h = pg.ag_lstm(4, 5)(pg.ag_sequences(x))  # what the layer takes
    assert h.shape == (5, 2)


def test_ag_sequences_refusals():
    x = np.zeros((2, 3, 4))
    with pytest.raises(PyggmlrValueError, match="ag_sequences: layout must be 'NTF' or 'TNF'"):
        pg.ag_sequences(x, layout="NCT")
    with pytest.raises(ShapeError, match=r"3-d array \(N, T, F\) or a 2-d \(N, T\), got shape"):
        pg.ag_sequences(np.zeros(3))
    with pytest.raises(PyggmlrValueError, match=r"got \(N 2, T 0, F 3\)"):
        pg.ag_sequences(np.zeros((2, 0, 3)))
    with pytest.raises(DTypeError, match="ag_sequences: x must be numeric"):
        pg.ag_sequences("a")
    with pytest.raises(DTypeError, match="ag_sequences: x must be a real numeric array"):
        pg.ag_sequences(np.zeros((2, 3, 4), dtype=complex))  # R refuses complex arrays too
    with pytest.raises(DTypeError, match="ag_images: x must be a real numeric array"):
        pg.ag_images(np.zeros((2, 1, 3, 4), dtype=complex))
    with pytest.raises(ArgumentError, match="not a Tensor"):
        pg.ag_sequences(pg.ag_tensor(np.zeros((2, 2))))
    with pytest.raises(pg.DTypeError, match="ag_sequences"):
        pg.ag_sequences(x, dtype="f16")
