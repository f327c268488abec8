"""Modules (pyggmlr/nn/): spec section 10's test-ag-layers.R and test-ag-mha.R checks,
ag_linear init options, custom layers, reprs, the config round trip and the memory of big
layers. Gradchecks and golden values of the layer ops: test_layers.py."""

import math

import numpy as np
import pytest

import pyggmlr as pg


def adam_losses(params, loss_fn, steps, lr):
    """The loss at each of `steps` Adam steps (lr) on params, loss_fn() recorded on the tape."""
    opt = pg.optimizer_adam(params, lr=lr)
    losses = []
    for _ in range(steps):
        with pg.with_grad_tape():
            loss = loss_fn()
        opt.step(pg.backward(loss))
        opt.zero_grad()
        losses.append(loss.item())
    return losses


# ---------------------------------------------------------------------------------------------
# spec section 10: test-ag-layers.R


def _seq():
    return pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_dropout(0.5), pg.ag_linear(8, 3))


def test_sequential_shape_params_and_modes():
    pg.ggml_set_seed(1)
    model = _seq()
    out = model(pg.ag_tensor(np.random.default_rng(0).standard_normal((4, 16))))
    assert out.shape == (3, 16)
    params = model.parameters()
    assert list(params) == ["layer1_W", "layer1_b", "layer3_W", "layer3_b"]
    assert all(p.requires_grad for p in params.values())
    assert params["layer1_W"].shape == (8, 4) and params["layer3_b"].shape == (3, 1)
    assert pg.ag_eval(model) is model
    assert not model.training and not model.layers[1].training and not model.layers[0].training
    pg.ag_train(model)
    assert model.training and model.layers[1].training
    model.eval()
    assert not model.layers[1].training
    model.train()
    assert model.layers[1].training


def test_sequential_single_layer_and_list():
    lin = pg.ag_linear(2, 3)
    for model in (pg.ag_sequential(lin), pg.ag_sequential([lin, pg.ag_linear(3, 1)])):
        assert model(pg.ag_tensor(np.ones((2, 5)))).shape[1] == 5
    assert len(pg.ag_sequential(lin)) == 1
    with pytest.raises(pg.ArgumentError, match="layer 2"):
        pg.ag_sequential(lin, 3)


def test_ag_train_is_recursive_through_nested_sequentials():
    inner = pg.ag_sequential(pg.ag_dropout(0.3), pg.ag_batch_norm(2))
    outer = pg.ag_sequential(pg.ag_linear(2, 2), inner)
    pg.ag_eval(outer)
    assert not inner.training and not inner.layers[0].training and not inner.layers[1].training
    assert list(outer.parameters()) == [
        "layer1_W",
        "layer1_b",
        "layer2_layer2_gamma",
        "layer2_layer2_beta",
    ]
    assert list(outer.buffers()) == ["layer2_layer2_running_mean", "layer2_layer2_running_var"]


def test_sequential_adam_lowers_loss(rng):
    pg.ggml_set_seed(3)
    model = pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_linear(8, 3))
    x = pg.ag_tensor(rng.standard_normal((4, 16)))
    y = np.eye(3)[:, rng.integers(0, 3, 16)]
    losses = adam_losses(
        model.parameters(), lambda: pg.ag_softmax_cross_entropy_loss(model(x), y), 10, 0.01
    )
    assert losses[-1] < losses[0]


def test_dropout():
    pg.ggml_set_seed(7)
    d = pg.ag_dropout(0.5)
    x = pg.ag_tensor(np.ones((20, 10)))
    out = d(x).numpy()
    assert set(np.unique(out)) == {0.0, 2.0}
    assert 50 < (out == 0).sum() < 150
    pg.ag_eval(d)
    assert d(x) is x
    d0 = pg.ag_dropout(0)
    assert d0(x) is x
    for bad in (1, 1.5, -0.1):
        with pytest.raises(pg.PyggmlrValueError, match=r"rate must be a finite number in \[0, 1\)"):
            pg.ag_dropout(bad)
    assert pg.ag_dropout(0.5).name == "dropout(0.5)" and d0.name == "dropout(0)"


def test_batch_norm_training_and_eval(rng):
    bn = pg.ag_batch_norm(4)
    x0 = rng.standard_normal((4, 32)) * 3 + 5
    out = bn(pg.ag_tensor(x0)).numpy()
    assert np.abs(out.mean(1)).max() < 1e-5
    np.testing.assert_allclose(out.var(1), 1, atol=0.05)
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    assert np.all(rm != 0) and np.all(rv != 1)
    pg.ag_eval(bn)
    xe = pg.ag_tensor(rng.standard_normal((4, 8)))
    e1, e2 = bn(xe).numpy(), bn(xe).numpy()
    np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(bn.running_mean.numpy(), rm)
    np.testing.assert_array_equal(bn.running_var.numpy(), rv)
    assert list(bn.parameters()) == ["gamma", "beta"]
    assert list(bn.buffers()) == ["running_mean", "running_var"]


def test_embedding_shapes_and_training(rng):
    pg.ggml_set_seed(5)
    emb = pg.ag_embedding(10, 4)
    w = emb.weight.numpy()
    assert w.shape == (4, 10) and np.abs(w).max() <= math.sqrt(1 / 10)
    out = emb(np.array([[1, 3], [1, 7]]))
    assert out.shape == (4, 4)
    o = out.numpy()
    np.testing.assert_array_equal(o[:, 0], o[:, 1])  # column-major flatten: 1, 1, 3, 7
    np.testing.assert_array_equal(o[:, 2], w[:, 3])
    out_t = emb(pg.ag_tensor(np.array([[3.0, 7.0]])))
    np.testing.assert_array_equal(out_t.numpy(), w[:, [3, 7]])
    opt = pg.optimizer_adam(emb.parameters(), lr=0.1)
    with pg.with_grad_tape():
        loss = pg.ag_sum(emb([2, 2]))
    opt.step(pg.backward(loss))
    w2 = emb.weight.numpy()
    assert np.all(w2[:, 2] != w[:, 2])
    np.testing.assert_array_equal(np.delete(w2, 2, axis=1), np.delete(w, 2, axis=1))


def test_bn_dropout_sequential_trains(rng):
    pg.ggml_set_seed(2)
    model = pg.ag_sequential(
        pg.ag_linear(4, 16, "relu"), pg.ag_batch_norm(16), pg.ag_dropout(0.1), pg.ag_linear(16, 3)
    )
    x = pg.ag_tensor(rng.standard_normal((4, 32)))
    cls = (x.numpy()[0] > 0).astype(int) + (x.numpy()[1] > 0).astype(int)
    losses = adam_losses(
        model.parameters(), lambda: pg.ag_softmax_cross_entropy_loss(model(x), cls), 30, 0.02
    )
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    assert list(model.buffers()) == ["layer2_running_mean", "layer2_running_var"]


# ---------------------------------------------------------------------------------------------
# spec section 10: test-ag-mha.R


def test_mha_fields_params_and_rejects():
    m = pg.ag_multihead_attention(64, 8)
    assert (m.d_model, m.n_heads, m.d_k, m.d_v) == (64, 8, 8, 8)
    assert m.scale == pytest.approx(1 / math.sqrt(8)) and m.dropout == 0 and m.training
    assert m.name == "multihead_attention(d=64, h=8)"
    with pytest.raises(pg.PyggmlrValueError, match="divisible"):
        pg.ag_multihead_attention(65, 8)
    assert list(m.parameters()) == ["W_q", "W_k", "W_v", "W_o", "b_o"]
    assert list(pg.ag_multihead_attention(8, 2, bias=False).parameters()) == [
        "W_q",
        "W_k",
        "W_v",
        "W_o",
    ]
    a = math.sqrt(6 / 128)
    for p in list(m.parameters().values())[:4]:
        assert p.shape == (64, 64) and np.abs(p.numpy()).max() <= a
    np.testing.assert_array_equal(m.b_o.numpy(), 0)


def test_mha_init_draw_order():
    pg.ggml_set_seed(42)
    m = pg.ag_multihead_attention(4, 2)
    pg.ggml_set_seed(42)
    u = pg.random.runif(64, -math.sqrt(6 / 8), math.sqrt(6 / 8))
    for i, name in enumerate(["W_q", "W_k", "W_v", "W_o"]):
        np.testing.assert_allclose(
            m.parameters()[name].numpy(),
            u[16 * i : 16 * (i + 1)].reshape((4, 4), order="F"),
            rtol=1e-6,
        )


def test_mha_shapes_causal_and_grads(rng):
    m = pg.ag_multihead_attention(32, 4)
    q = pg.ag_tensor(rng.standard_normal((32, 5)))
    kv = pg.ag_tensor(rng.standard_normal((32, 9)))
    assert m(q).shape == (32, 5)
    assert m(q, kv).shape == (32, 5)
    assert pg.ag_multihead_attention(32, 1)(q).shape == (32, 5)
    assert not np.allclose(m(q, causal_mask=True).numpy(), m(q).numpy())
    with pg.with_grad_tape():
        loss = pg.ag_sum(m(q, kv))
    grads = pg.backward(loss)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        g = grads[m.parameters()[name]]
        assert np.abs(g).sum() > 0
    with pytest.raises(pg.ShapeError, match="d_model = 32"):
        m(pg.ag_tensor(np.zeros((16, 3))))


def test_mha_input_checks_are_the_cores(f64):
    """pg_mha_check_inputs (R's layer calls it too): each input has d_model rows, k and v one
    column count, checked before any projection."""
    m = pg.ag_multihead_attention(4, 2)
    q, k3, v6 = np.zeros((4, 5)), np.zeros((3, 5)), np.zeros((4, 6))
    pre = "ag_multihead_attention: "
    cases = [
        ((k3,), "q is [3x5] f64 but d_model = 4"),
        ((q, k3), "k is [3x5] f64 but d_model = 4"),
        ((q, q, k3), "v is [3x5] f64 but d_model = 4"),
    ]
    for args, what in cases:
        with pytest.raises(pg.ShapeError) as e:
            m(*args)
        assert str(e.value) == pre + what + "; inputs are [d_model, seq] (one column per token)"
    with pytest.raises(pg.ShapeError) as e:
        m(q, q, v6)
    assert str(e.value) == (
        pre + "k is [4x5] f64 and v is [4x6] f64; they need the same number of columns (tokens)"
    )
    assert m(q, v6).shape == (4, 5)  # v defaults to k: 6 keys


def test_mha_adam_lowers_loss(rng):
    pg.ggml_set_seed(9)
    m = pg.ag_multihead_attention(8, 2)
    x = pg.ag_tensor(rng.standard_normal((8, 6)))
    y = rng.standard_normal((8, 6))
    losses = adam_losses(m.parameters(), lambda: pg.ag_mse_loss(m(x), y), 10, 0.01)
    assert losses[-1] < losses[0]


def test_mha_dropout_and_flags(rng):
    pg.ggml_set_seed(4)
    m = pg.ag_multihead_attention(8, 2, dropout=0.5)
    x = pg.ag_tensor(rng.standard_normal((8, 6)))
    train = m(x).numpy()
    pg.ag_eval(m)
    assert not m.training
    ev1, ev2 = m(x).numpy(), m(x).numpy()
    np.testing.assert_array_equal(ev1, ev2)
    assert not np.allclose(train, ev1)
    pg.ag_train(m)
    assert m.training


def test_mha_in_sequential(rng):
    model = pg.ag_sequential(
        pg.ag_linear(8, 8), pg.ag_multihead_attention(8, 2), pg.ag_layer_norm(8)
    )
    out = model(pg.ag_tensor(rng.standard_normal((8, 5))))
    assert out.shape == (8, 5)
    names = list(model.parameters())
    assert len(names) >= 5
    assert names[2:7] == ["layer2_W_q", "layer2_W_k", "layer2_W_v", "layer2_W_o", "layer2_b_o"]
    assert names[7:] == ["layer3_gamma", "layer3_beta"]


# ---------------------------------------------------------------------------------------------
# ag_linear init options, custom layers, repr


def test_linear_init_options():
    pg.ggml_set_seed(0)
    lin = pg.ag_linear(3, 5, gain=2)
    assert np.abs(lin.W.numpy()).max() <= 2 * math.sqrt(6 / 8)
    np.testing.assert_array_equal(lin.b.numpy(), 0)
    pg.ggml_set_seed(0)
    u = pg.random.runif(15, -2 * math.sqrt(6 / 8), 2 * math.sqrt(6 / 8)).reshape((5, 3), order="F")
    np.testing.assert_allclose(lin.W.numpy(), u, rtol=1e-6)
    for shape in ((6, 3), (3, 6)):
        o = (
            pg.ag_linear(shape[1], shape[0], init="orthogonal", gain=1.5)
            .W.numpy()
            .astype(np.float64)
        )
        small = min(shape)
        gram = o.T @ o if shape[0] > shape[1] else o @ o.T
        np.testing.assert_allclose(gram, 2.25 * np.eye(small), atol=1e-5)
    lin = pg.ag_linear(2, 3, init=lambda o, i: np.full((o, i), 0.25))
    np.testing.assert_array_equal(lin.W.numpy(), 0.25)
    assert lin.to_config()["init"] == "glorot_uniform"
    arr = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(pg.ag_linear(2, 3, init=arr).W.numpy(), arr)
    with pytest.raises(pg.ShapeError, match=r"init matrix is 2x3, expected 3x2"):
        pg.ag_linear(2, 3, init=np.zeros((2, 3)))
    with pytest.raises(pg.PyggmlrValueError, match="init"):
        pg.ag_linear(2, 3, init="he")
    with pytest.raises(pg.PyggmlrValueError, match="activation"):
        pg.ag_linear(2, 3, activation="swish")
    lin = pg.ag_linear(4, 8, "relu")
    assert lin.params() == lin.parameters() and list(lin.params()) == ["W", "b"]


class Scale2:
    """A custom layer: forward and parameters only (no base class)."""

    def __init__(self):
        self.s = pg.ag_param(np.array([[2.0]]))
        self.training = True

    def forward(self, x):
        return pg.ag_mul(x, self.s)

    def parameters(self):
        return {"s": self.s}


def test_custom_layer_in_sequential(rng):
    custom = Scale2()
    model = pg.ag_sequential(pg.ag_linear(3, 2), custom, pg.ag_dropout(0.2))
    assert list(model.parameters()) == ["layer1_W", "layer1_b", "layer2_s"]
    x = pg.ag_tensor(rng.standard_normal((3, 4)))
    pg.ag_eval(model)
    assert not custom.training
    np.testing.assert_allclose(model(x).numpy(), 2 * model.layers[0](x).numpy(), rtol=1e-6)
    with pg.with_grad_tape():
        loss = pg.ag_sum(model(x))
    assert custom.s in pg.backward(loss)
    assert "[2] Scale2" in repr(model)
    with pytest.raises(pg.PyggmlrValueError, match=r"layer 2 .*Scale2.* has no to_config"):
        model.to_config()


def test_reprs():
    model = pg.ag_sequential(
        pg.ag_linear(4, 8, "relu"),
        pg.ag_dropout(0.5),
        pg.ag_batch_norm(8),
        pg.ag_embedding(4, 2),
        pg.ag_multihead_attention(4, 2),
        pg.ag_linear(4, 3),
    )
    assert repr(model) == (
        "ag_sequential (6 layers, train mode)\n  [1] linear(4, 8, relu)\n  [2] dropout(0.5)\n"
        "  [3] batch_norm(8)\n  [4] embedding(4, 2)\n  [5] multihead_attention(d=4, h=2)\n"
        "  [6] linear(4, 3)"
    )
    pg.ag_eval(model)
    assert repr(model).startswith("ag_sequential (6 layers, eval mode)")
    assert (
        repr(pg.ag_linear(4, 8, "relu"))
        == "ag_linear: linear(4, 8, relu) (40 parameters)"  # no mode, as R's list layer
    )


# ---------------------------------------------------------------------------------------------
# to_config / ag_module_from_config


def _arch(model):
    return [(n, t.shape) for n, t in model.parameters().items()], [
        (n, t.shape) for n, t in model.buffers().items()
    ]


def test_config_round_trip():
    import json

    model = pg.ag_sequential(
        pg.ag_linear(4, 8, "gelu", init="orthogonal", gain=0.5),
        pg.ag_batch_norm(8, eps=1e-3, momentum=0.2),
        pg.ag_dropout(0.25),
        pg.ag_layer_norm(8, eps=1e-4),
        pg.ag_multihead_attention(8, 2, dropout=0.1, bias=False),
        pg.ag_sequential(pg.ag_linear(8, 3, init=np.ones((3, 8)))),
        pg.ag_embedding(6, 3),
    )
    cfg = model.to_config()
    cfg2 = json.loads(json.dumps(cfg))
    assert cfg2 == cfg
    assert cfg["layers"][0] == {
        "type": "linear",
        "in_features": 4,
        "out_features": 8,
        "activation": "gelu",
        "init": "orthogonal",
        "gain": 0.5,
    }
    rebuilt = pg.ag_module_from_config(cfg2)
    assert rebuilt.to_config() == cfg
    assert repr(rebuilt) == repr(model)
    assert _arch(rebuilt) == _arch(model)
    assert rebuilt.layers[1].eps == 1e-3 and rebuilt.layers[1].momentum == 0.2
    assert rebuilt.layers[4].dropout == 0.1 and rebuilt.layers[4].b_o is None
    # fresh weights, same architecture
    assert not np.array_equal(rebuilt.layers[0].W.numpy(), model.layers[0].W.numpy())


def test_config_errors_and_custom_registration():
    with pytest.raises(pg.PyggmlrValueError, match="unknown layer type 'conv'"):
        pg.ag_module_from_config({"type": "conv"})
    with pytest.raises(pg.PyggmlrValueError, match="'type'"):
        pg.ag_module_from_config({"layers": []})
    with pytest.raises(pg.PyggmlrValueError, match="bad arguments for a 'linear'"):
        pg.ag_module_from_config({"type": "linear", "in_features": 2})

    class Scale3(Scale2):
        def to_config(self):
            return {"type": "test_scale3"}

    pg.ag_register_layer("test_scale3", lambda cfg: Scale3())
    m = pg.ag_module_from_config(pg.ag_sequential(pg.ag_linear(2, 2), Scale3()).to_config())
    assert isinstance(m.layers[1], Scale3) and list(m.parameters()) == [
        "layer1_W",
        "layer1_b",
        "layer2_s",
    ]
    with pytest.raises(pg.PyggmlrValueError, match="built-in"):
        pg.ag_register_layer("linear", lambda cfg: None)


def test_config_api_refusals_are_the_cores():
    """ag_register_layer, a builder's result, ag_to_config: the core's texts, as R's
    (r/tests/testthat/test-layer-config.R)."""
    cases = [
        (lambda: pg.ag_register_layer("my_layer", 5), "builder must be a function (cfg -> layer)"),
        (lambda: pg.ag_register_layer("", print), "type must be a non-empty string"),
        (lambda: pg.ag_to_config(1), "ag_to_config: the model has no to_config() (got int)"),
    ]
    for call, text in cases:
        with pytest.raises(pg.ArgumentError) as e:
            call()
        assert text in str(e.value)
    pg.ag_register_layer("test_returns_42", lambda cfg: 42)
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_module_from_config({"type": "test_returns_42"})
    assert str(e.value) == (
        "ag_module_from_config: the builder registered for 'test_returns_42' returned a int, "
        "not a layer with forward()"
    )


def test_config_checks_are_the_cores():
    """native/layer_config.c's table: the texts R raises too (tests/parity's config case)."""
    from pyggmlr.nn.modules import _BUILDERS, _builtin_types

    assert _builtin_types() == ["sequential", *sorted(_BUILDERS)]
    lin = {"type": "linear", "in_features": 2, "out_features": 3}
    pre = "ag_module_from_config: bad arguments for a 'linear' layer: "
    for edit, text in [
        (
            {"out_features": None},
            "out_features must be a whole number in [1, 2147483647], got null",
        ),
        ({"in_features": 2.5}, "in_features must be a whole number in [1, 2147483647], got 2.5"),
        ({"in_features": "4"}, 'in_features must be a whole number in [1, 2147483647], got "4"'),
        ({"in_features": True}, "in_features must be a whole number in [1, 2147483647], got true"),
        ({"gain": float("nan")}, "gain must be a finite number, got null"),
        ({"gain": object()}, 'gain must be a finite number, got "<object objec'),
        ({"activation": "swish"}, 'activation must be one of "gelu", "relu", "sigmoid", "softmax"'),
        ({"bogus": 1, "x": [1]}, "unknown arguments 'bogus', 'x'"),
    ]:
        with pytest.raises(pg.PyggmlrValueError) as e:
            pg.ag_module_from_config({**lin, **edit})
        assert str(e.value).startswith(pre + text), str(e.value)
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_module_from_config: bad arguments for a "
                       r"'dropout' layer: rate is missing$"):  # fmt: skip
        pg.ag_module_from_config({"type": "dropout"})
    with pytest.raises(pg.PyggmlrValueError, match=r"d_model \(6\) must be divisible by n_heads"):
        pg.ag_module_from_config({"type": "multihead_attention", "d_model": 6, "n_heads": 4})
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_module_from_config: a sequential config"):
        pg.ag_module_from_config({"type": "sequential", "layers": [], "name": "x"})
    # numpy values and whole floats are values like any other; defaults are filled
    m = pg.ag_module_from_config(
        {"type": "linear", "in_features": np.int64(2), "out_features": 3.0, "gain": np.float32(2)}
    )
    assert (m.in_features, m.out_features, m.gain, m.activation) == (2, 3, 2.0, None)
    bn = pg.ag_module_from_config({"type": "batch_norm", "num_features": 4})
    assert (bn.eps, bn.momentum) == (1e-5, 0.1)
    mha = pg.ag_module_from_config(
        {"type": "multihead_attention", "d_model": 4, "n_heads": 2, "bias": np.bool_(False)}
    )
    assert mha.b_o is None and mha.dropout == 0


def test_no_leaks_after_training_step(rng):
    from conftest import live_counts

    m = pg.ag_sequential(
        pg.ag_linear(4, 4),
        pg.ag_batch_norm(4),
        pg.ag_layer_norm(4),
        pg.ag_multihead_attention(4, 2),
        pg.ag_embedding(3, 4),
    )
    m.layers.pop()  # embedding takes ids, not activations
    x = pg.ag_tensor(rng.standard_normal((4, 6)))
    emb = pg.ag_embedding(3, 4)
    before = live_counts()
    for _ in range(2):
        with pg.with_grad_tape():
            loss = pg.ag_sum(m(x)) + pg.ag_sum(emb([0, 2, 2]))
        grads = pg.backward(loss)
        del grads, loss
    for p in list(m.parameters().values()) + [emb.weight]:
        p.grad = None
    assert live_counts() == before


def test_huge_layers_raise_a_typed_memory_error():
    # a 10^12-element weight cannot be drawn: a pyggmlr error, not numpy's bare MemoryError
    with pytest.raises(
        pg.PyggmlrMemoryError, match=r"ag_linear: out of memory .*\[1000000x1000000\]"
    ):
        pg.ag_linear(10**6, 10**6)
    with pytest.raises(pg.PyggmlrMemoryError, match="ag_embedding"):
        pg.ag_embedding(10**6, 10**6)
