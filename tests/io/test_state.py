"""ggmlR 0.8.6's model-state API in Python (0.8.6 spec s9, s10.2): state dicts, save/load with
ggmlR's arguments, dp_train(n_gpu=), ggml_version(). The R side: r/tests/testthat/test-state.R."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.random import Generator


def build(seed=None, h=8):
    if seed is not None:
        pg.ggml_set_seed(seed)
    return pg.ag_sequential(pg.ag_linear(4, h, "relu"), pg.ag_batch_norm(h), pg.ag_linear(h, 2))


_g = Generator(501)
X = _g.runif(64, -2, 2).reshape(4, 16, order="F")
Y = _g.runif(32, -1, 1).reshape(2, 16, order="F")


def train(m, opt, k):
    pg.ag_train(m)
    for _ in range(k):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(m.forward(pg.ag_tensor(X)), Y)
        opt.step(pg.backward(loss))
        opt.zero_grad()
    return m


def weights(m):
    sd = pg.ag_state_dict(m)
    return {**sd["parameters"], **{"buf " + k: v for k, v in sd["buffers"].items()}}


def same(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )


def test_state_dict_layout_names_dtypes_copies():
    m = train(build(1), pg.optimizer_sgd(build(1).parameters(), lr=0.05), 0)
    train(m, pg.optimizer_sgd(m.parameters(), lr=0.05), 2)
    sd = pg.ag_state_dict(m)
    assert list(sd) == ["format", "version", "parameters", "param_dtypes", "buffers"]
    assert sd["format"] == "ggmlR.ag_state_dict" and sd["version"] == 1
    assert list(sd["parameters"]) == list(m.parameters())
    assert sd["param_dtypes"] == {k: "f32" for k in m.parameters()}
    assert list(sd["buffers"]) == ["layer2_running_mean", "layer2_running_var"]
    w = sd["parameters"]["layer1_W"]
    assert w.shape == (8, 4) and w.dtype == np.float32
    assert np.any(sd["buffers"]["layer2_running_mean"] != 0)
    m.parameters()["layer1_W"].data = np.zeros((8, 4))
    assert np.any(w != 0)  # a copy
    nest = pg.ag_sequential(
        pg.ag_linear(4, 4), pg.ag_sequential(pg.ag_batch_norm(4), pg.ag_linear(4, 2))
    )
    assert list(pg.ag_state_dict(nest)["buffers"]) == [
        "layer2_layer1_running_mean",
        "layer2_layer1_running_var",
    ]
    assert list(pg.ag_state_dict(pg.ag_batch_norm(3))["buffers"]) == ["running_mean", "running_var"]

    class Box:  # a custom container with .layers: descended as ggmlR does
        layers = [pg.ag_linear(2, 2), pg.ag_batch_norm(2)]

        def parameters(self):
            return {}

    assert list(pg.ag_state_dict(Box())["buffers"]) == ["layer2_running_mean", "layer2_running_var"]

    class P:
        def params(self):
            return {"W": pg.ag_param(np.ones((2, 2)))}

    assert list(pg.ag_state_dict(P())["parameters"]) == ["W"]
    with pytest.raises(
        pg.ArgumentError,
        match=r"ag_state_dict\(\): `model` has no parameters\(\) / params\(\) method",
    ):
        pg.ag_state_dict(42)

    # the model's refusals are the core's texts, R's too (test-state.R): was "not a tensor",
    # and a parameters() that returned no list raised a bare TypeError
    class Bad:
        def __init__(self, got):
            self.got = got

        def parameters(self):
            return self.got

    lin = pg.ag_linear(2, 2)
    msg = r"^ag_state_dict\(\): parameters\(\) returned a int, not a list of ag_tensors$"
    with pytest.raises(pg.ArgumentError, match=msg):
        pg.ag_state_dict(Bad(3))
    msg = r"^ag_load_state_dict\(\): parameter 2 \(b\) is a int, not an ag_tensor$"
    with pytest.raises(pg.ArgumentError, match=msg):
        pg.ag_load_state_dict(Bad({"W": lin.W, "b": 2}), pg.ag_state_dict(lin))
    prev = pg.ag_dtype("f64")
    try:
        assert set(pg.ag_state_dict(pg.ag_linear(2, 2))["param_dtypes"].values()) == {"f64"}
    finally:
        pg.ag_dtype(prev)


def test_load_state_dict_round_trip_in_place():
    src = build(1)
    train(src, pg.optimizer_adam(src.parameters(), lr=0.01), 3)
    dst = build(2)
    before = dict(dst.parameters())
    opt = pg.optimizer_adam(dst.parameters(), lr=0.01)
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(dst.forward(pg.ag_tensor(X)), Y)
    pg.backward(loss)
    g = dst.parameters()["layer1_W"].grad
    assert pg.ag_load_state_dict(dst, pg.ag_state_dict(src)) is dst
    assert same(weights(dst), weights(src))
    assert np.array_equal(dst.parameters()["layer1_W"].grad, g)  # .grad untouched
    assert all(before[k] is t for k, t in dst.parameters().items())
    pg.ag_eval(src)
    pg.ag_eval(dst)
    assert np.array_equal(pg.ag_predict(dst, X), pg.ag_predict(src, X))
    opt.zero_grad()
    train(dst, opt, 1)  # the optimizer built before the load trains the loaded weights
    assert not np.array_equal(weights(dst)["layer1_W"], weights(src)["layer1_W"])


def _copy(sd):
    return {"parameters": dict(sd["parameters"]), "buffers": dict(sd["buffers"])}


def _load_error(m, sd):
    """The text of the PyggmlrValueError ag_load_state_dict(m, sd) raises."""
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_load_state_dict(m, sd)
    return str(e.value)


def test_load_state_dict_checks_everything_before_writing():
    m = build(1)
    sd = pg.ag_state_dict(build(2))
    before = weights(m)
    bad = _copy(sd)
    bad["parameters"]["layer1_b"] = np.zeros((3, 3))
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_load_state_dict(m, bad)
    assert (
        str(e.value) == "ag_load_state_dict(): shape mismatch for 'layer1_b': model 8x1, state 3x3"
    )
    assert same(weights(m), before)
    bad = _copy(sd)
    bad["parameters"]["layer3_b"] = np.array([1.0, 2.0])
    with pytest.raises(pg.ShapeError, match="shape mismatch for 'layer3_b': model 2x1, state 2$"):
        pg.ag_load_state_dict(m, bad)
    bad = _copy(sd)
    bad["parameters"]["layer1_W"] = sd["parameters"]["layer1_W"].copy()
    bad["parameters"]["layer1_W"][0, 0] = np.nan
    assert _load_error(m, bad) == "ag_load_state_dict(): 'layer1_W' contains NA, NaN or Inf"
    bad = _copy(sd)
    bad["buffers"]["layer2_running_var"] = np.full((8, 1), np.inf)
    with pytest.raises(pg.PyggmlrValueError, match="'layer2_running_var' contains NA, NaN or Inf"):
        pg.ag_load_state_dict(m, bad)
    bad = _copy(sd)
    bad["buffers"]["layer2_running_mean"] = np.array([["a"]] * 8)
    with pytest.raises(pg.ShapeError, match="model 8x1, state 8x1"):
        pg.ag_load_state_dict(m, bad)
    bad = _copy(sd)
    bad["parameters"]["extra_W"] = np.zeros((1, 1))
    assert _load_error(m, bad) == (
        "ag_load_state_dict(): parameter names differ (strict = TRUE)\n"
        "  missing in state: \n  not in model: extra_W"
    )
    bad = _copy(sd)
    del bad["parameters"]["layer1_W"]
    with pytest.raises(pg.PyggmlrValueError, match="missing in state: layer1_W\n"):
        pg.ag_load_state_dict(m, bad)
    bad = _copy(sd)
    del bad["buffers"]["layer2_running_var"]
    bad["buffers"]["bn_x"] = np.zeros((8, 1))
    assert _load_error(m, bad) == (
        "ag_load_state_dict(): buffer names differ (strict = TRUE)\n"
        "  missing in state: layer2_running_var\n  not in model: bn_x"
    )
    assert same(weights(m), before)
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_load_state_dict(m, [1])
    assert str(e.value) == "ag_load_state_dict(): `state` is not a state dict (no $parameters)"
    with pytest.raises(pg.ArgumentError, match="`strict` must be TRUE or FALSE"):
        pg.ag_load_state_dict(m, sd, strict="yes")
    # the state's own checks (the core's, as R's) come before the model is walked
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_load_state_dict(object(), {"parameters": {}, "buffers": 3})
    assert (
        str(e.value) == "ag_load_state_dict(): `state` is not a state dict ($buffers is not a list)"
    )
    with pytest.raises(pg.ShapeError, match="shape mismatch for 'layer1_W': model 6x4, state 8x4"):
        pg.ag_load_state_dict(build(1, h=6), sd)
    assert same(weights(m), before)


def test_strict_false_uses_shared_names_and_still_checks_them():
    m = build(1)
    sd = pg.ag_state_dict(build(2))
    before = weights(m)
    part = {
        "parameters": {
            "layer1_W": sd["parameters"]["layer1_W"],
            "extra_W": np.zeros((1, 1)),
            "layer1_b": sd["parameters"]["layer1_b"].astype(np.float64),
        }
    }
    pg.ag_load_state_dict(m, part, strict=False)
    w = weights(m)
    assert np.array_equal(w["layer1_W"], sd["parameters"]["layer1_W"])
    assert np.array_equal(w["layer1_b"], sd["parameters"]["layer1_b"])
    assert same(
        {k: v for k, v in w.items() if k not in ("layer1_W", "layer1_b")},
        {k: v for k, v in before.items() if k not in ("layer1_W", "layer1_b")},
    )
    part["parameters"]["layer1_W"] = np.zeros((2, 2))
    with pytest.raises(pg.ShapeError, match="shape mismatch for 'layer1_W'"):
        pg.ag_load_state_dict(m, part, strict=False)
    with pytest.raises(pg.PyggmlrValueError, match="buffer names differ"):
        pg.ag_load_state_dict(m, {"parameters": sd["parameters"]})  # no buffers: empty
    # integer and f64 values convert to the tensor's dtype; a tensor value is taken as its values
    pg.ag_load_state_dict(m, {"parameters": {"layer3_b": np.array([[1], [2]])}}, strict=False)
    assert m.parameters()["layer3_b"].numpy().tolist() == [[1.0], [2.0]]
    pg.ag_load_state_dict(
        m, {"parameters": {"layer3_b": pg.ag_tensor(np.array([[3.0], [4.0]]))}}, strict=False
    )
    assert m.parameters()["layer3_b"].numpy().tolist() == [[3.0], [4.0]]


def test_save_load_model_fn_device_dtype(tmp_path):
    m = build(3)
    train(m, pg.optimizer_sgd(m.parameters(), lr=0.05), 2)
    f = tmp_path / "m.safetensors"
    assert pg.ag_save_model(m, f, model_fn=build) == str(f)
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_save_model(m, f, model_fn=3)
    assert str(e.value) == "ag_save_model(): `model_fn` must be a function or NULL."
    a = pg.ag_load_model(f, build)  # positional builder, ggmlR's order
    b = pg.ag_load_model(f, model_fn=build, device="cpu")
    assert not a.training and same(weights(a), weights(m)) and same(weights(b), weights(m))
    assert pg.ag_default_device() == "cpu"
    d64 = pg.ag_load_model(f, dtype="f64")
    assert {t.dtype for t in d64.parameters().values()} == {"f64"}
    assert all(np.array_equal(weights(d64)[k], weights(m)[k]) for k in weights(m))  # exact widening
    d64b = pg.ag_load_model(f, build, dtype="f64")
    assert {t.dtype for t in d64b.parameters().values()} == {"f64"}
    pg.ag_save_model(d64, f)
    d32 = pg.ag_load_model(f, build, dtype="f32")
    assert d32.parameters()["layer1_W"].dtype == "f32"
    assert pg.ag_load_model(f, build).parameters()["layer1_W"].dtype == "f64"  # the file's dtype
    with pytest.raises(
        pg.PyggmlrValueError, match='dtype "f16" is not supported by the CPU engine'
    ):
        pg.ag_load_model(f, dtype="f16")
    with pytest.raises(pg.PyggmlrValueError, match="'dtype' should be one of"):
        pg.ag_load_model(f, dtype="f8")
    with pytest.raises(pg.ArgumentError, match="got 3$"):  # not a string: a TypeError, as R
        pg.ag_load_model(f, dtype=3)
    assert pg.ag_load_model(f, build, dtype="f6").parameters()["layer1_W"].dtype == "f64"

    def fixed32():
        prev = pg.ag_dtype("f32")
        try:
            return build()
        finally:
            pg.ag_dtype(prev)

    with pytest.raises(
        pg.PyggmlrValueError,
        match="dtype = \"f64\" was asked for, but the model's parameter 'layer1_W' is f32",
    ):
        pg.ag_load_model(f, fixed32, dtype="f64")
    with pytest.raises(
        pg.ArgumentError,
        match=r"`model_fn` must return an ag_sequential or ag_\* layer \(got class: int\)\.",
    ):
        pg.ag_load_model(f, lambda: 42)
    with pytest.raises(pg.PyggmlrValueError, match="mismatch"):
        pg.ag_load_model(f, lambda: pg.ag_sequential(pg.ag_linear(4, 8, "relu")))
    with pytest.raises(pg.DeviceError):
        pg.ag_load_model(f, device="gpu")
    assert pg.ag_default_device() == "cpu"
    m2 = build()
    before = weights(m2)
    with pytest.raises(pg.PyggmlrValueError, match="was asked for"):
        pg.ag_load_model(f, model=m2, dtype="f64")
    assert same(weights(m2), before)  # a failing load changes nothing
    pg.ag_load_model(f, m2)  # a model object in second place is filled
    assert same(weights(m2), weights(d32))


def _dp(**kw):
    g = Generator(7)
    data = [
        {
            "x": g.runif(12, -1, 1).reshape(4, 3, order="F"),
            "y": g.runif(6, -1, 1).reshape(2, 3, order="F"),
        }
        for _ in range(5)
    ]

    def make():
        pg.ggml_set_seed(11)
        return pg.ag_sequential(pg.ag_linear(4, 5, "tanh"), pg.ag_linear(5, 2))

    return pg.dp_train(
        make,
        data,
        loss_fn=pg.ag_mse_loss,
        forward_fn=lambda m, s: m.forward(pg.ag_tensor(s["x"])),
        target_fn=lambda s: s["y"],
        n_iter=4,
        lr=0.01,
        verbose=False,
        **kw,
    )


def test_dp_train_n_gpu_is_n_replicas():
    a, b, one = _dp(n_gpu=2), _dp(n_replicas=2), _dp()
    assert np.array_equal(a["loss_history"], b["loss_history"])
    assert all(np.array_equal(t.numpy(), b["params"][k].numpy()) for k, t in a["params"].items())
    assert not np.array_equal(a["loss_history"], one["loss_history"])
    assert np.array_equal(_dp(n_gpu=2, n_replicas=2)["loss_history"], a["loss_history"])
    with pytest.raises(pg.PyggmlrValueError, match=r"n_gpu \(2\) and n_replicas \(3\)"):
        _dp(n_gpu=2, n_replicas=3)
    with pytest.raises(pg.PyggmlrValueError, match=r"n_gpu must be an integer in \[1, 1024\]"):
        _dp(n_gpu=0)


def test_ggml_version_is_the_core_version():
    assert pg.ggml_version() == "0.1.0" == pg.__version__


def test_load_twice_is_idempotent_and_nested_batch_norms_survive_save_load(tmp_path):
    m = build(1)
    train(m, pg.optimizer_adam(m.parameters(), lr=0.01), 2)
    sd = pg.ag_state_dict(m)
    m3 = build(7)
    pg.ag_load_state_dict(m3, sd)
    once = weights(m3)
    pg.ag_load_state_dict(m3, sd)
    assert same(weights(m3), once)
    nest = pg.ag_sequential(
        pg.ag_linear(4, 4, "tanh"), pg.ag_sequential(pg.ag_batch_norm(4), pg.ag_linear(4, 2))
    )
    with pg.with_grad_tape():
        nest.forward(pg.ag_tensor(X))
    pg.ag_tape_clear()
    assert np.any(pg.ag_state_dict(nest)["buffers"]["layer2_layer1_running_mean"] != 0)
    pg.ag_save_model(nest, tmp_path / "n.safetensors")
    back = pg.ag_load_model(tmp_path / "n.safetensors")
    assert same(weights(back), weights(nest))
