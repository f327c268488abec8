"""Property-based tests (hypothesis) of misuse: wrong argument types and freed tensors give typed
pyggmlr errors that name the op; backward twice, optimizers on tensors without gradients,
tape misuse and layer shapes. The profiles and checks are in _props.py (test_properties.py:
the ops against numpy)."""

import math
import warnings
from functools import partial
from typing import Any

import numpy as np
import pytest
from _props import DTYPES, NP, PROFILE, arrays, assert_typed, close, expect_typed, finite, shapes
from hypothesis import given
from hypothesis import strategies as st

import pyggmlr as pg

# ---------------------------------------------------------------------------------------------
# wrong argument types and freed tensors: typed errors that name the op


class Weird:
    pass


BAD_VALUES = [
    None,
    "abc",
    b"xy",
    {},
    {"a": 1},
    Weird(),
    [["a", "b"]],
    [[1, 2], [3]],
    1 + 2j,
    np.array(["x"]),
    np.ones((2, 2, 2)),
    np.array([1, None], dtype=object),
    10**400,
    [1e400],
]

ONE_ARG = {
    "ag_relu": pg.ag_relu,
    "ag_sigmoid": pg.ag_sigmoid,
    "ag_tanh": pg.ag_tanh,
    "ag_gelu": pg.ag_gelu,
    "ag_softmax": pg.ag_softmax,
    "ag_log": pg.ag_log,
    "ag_exp": pg.ag_exp,
    "ag_neg": pg.ag_neg,
    "ag_sum": pg.ag_sum,
    "ag_mean": pg.ag_mean,
    "ag_transpose": pg.ag_transpose,
    "ag_scale": lambda x: pg.ag_scale(x, 2.0),
    "ag_pow": lambda x: pg.ag_pow(x, 2.0),
    "ag_clamp": lambda x: pg.ag_clamp(x, 0, 1),
    "ag_reshape": lambda x: pg.ag_reshape(x, 1, -1),
}
TWO_ARG = {
    "ag_add": pg.ag_add,
    "ag_sub": pg.ag_sub,
    "ag_mul": pg.ag_mul,
    "ag_div": pg.ag_div,
    "ag_matmul": pg.ag_matmul,
    "ag_mse_loss": pg.ag_mse_loss,
    "ag_cross_entropy_loss": pg.ag_cross_entropy_loss,
}


def _fine_anyway(bad):
    """Values numpy turns into a valid numeric matrix (a huge float list becomes inf), and an int
    past the doubles (read as R reads 1e400: inf, issue 29)."""
    if isinstance(bad, int) and not isinstance(bad, bool) and abs(bad) > 2**1024:
        return True
    return isinstance(bad, list) and bad == [1e400]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda v: type(v).__name__)
def test_wrong_types_to_every_op(bad):
    if _fine_anyway(bad):
        return
    good = pg.ag_tensor(np.ones((2, 2)))
    for name, f in ONE_ARG.items():
        expect_typed(partial(f, bad), name)
    for name, f in TWO_ARG.items():
        expect_typed(partial(f, good, bad), name)
        expect_typed(partial(f, bad, good), name)
    expect_typed(lambda: pg.ag_tensor(bad), "tensor")
    expect_typed(lambda: pg.ag_param(bad), "tensor")
    expect_typed(lambda: pg.backward(bad), "backward")
    if not isinstance(bad, (int, float)):  # a scalar argument
        expect_typed(lambda: pg.ag_scale(good, bad), "ag_scale", pg.ArgumentError)
        expect_typed(lambda: pg.ag_pow(good, bad), "ag_pow", pg.ArgumentError)
        expect_typed(lambda: pg.ag_clamp(good, bad), "ag_clamp", pg.ArgumentError)
    # the one integer rule: a number out of range is a bad value, anything else the wrong kind (a
    # list or array is a (nrow, ncol) pair: numbers of another count are a bad value, as R's)
    size_error: Any = pg.PyggmlrValueError if isinstance(bad, int) else pg.ArgumentError
    if isinstance(bad, (list, np.ndarray)):
        size_error = (pg.PyggmlrValueError, pg.ArgumentError)
    expect_typed(lambda: pg.ag_reshape(good, bad), "ag_reshape", size_error)
    expect_typed(
        lambda: pg.ag_softmax_cross_entropy_loss(good, bad), "ag_softmax_cross_entropy_loss"
    )
    for attr in ("data", "grad"):
        if attr == "grad" and bad is None:
            continue  # clears the gradient
        with pytest.raises(pg.PyggmlrError):
            setattr(good, attr, bad)
    expect_typed(lambda: pg.optimizer_sgd([bad]), "optimizer_sgd", pg.ArgumentError)
    if not (isinstance(bad, dict) and not bad):  # an empty dict is an empty parameter list
        expect_typed(
            lambda: pg.optimizer_adam(bad if bad is not None else 3),
            "optimizer_adam",
            pg.ArgumentError,
        )
    opt = pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))])
    if not isinstance(bad, (int, float, complex)):
        expect_typed(lambda: setattr(opt, "lr", bad), "optimizer_sgd", pg.ArgumentError)
        expect_typed(
            lambda: pg.clip_grad_norm([good], None, bad), "clip_grad_norm", pg.ArgumentError
        )
    if not isinstance(
        bad, dict
    ):  # any mapping keyed like backward()'s map is a gradient map (ggmlR 0.8.6)
        expect_typed(lambda: opt.step(bad if bad is not None else "x"), "step", pg.ArgumentError)
    expect_typed(lambda: pg.ag_dtype(bad if bad is not None else "f8"), "dtype", pg.DTypeError)


@PROFILE
@given(shape=shapes, dtype=DTYPES)
def test_freed_tensors_are_typed_errors(shape, dtype):
    t = pg.ag_param(np.zeros(shape), dtype=dtype)
    ok = pg.ag_tensor(np.zeros(shape), dtype=dtype)
    t.free()
    t.free()  # twice is fine
    assert repr(t) == "ag_tensor <freed>"
    for name, f in ONE_ARG.items():
        e = expect_typed(partial(f, t), "freed", pg.ArgumentError)
        assert str(e).startswith(f"{name}: "), str(e)  # each op names itself (no stack walk)
    for name, f in TWO_ARG.items():
        expect_typed(partial(f, ok, t), name, pg.ArgumentError)
        expect_typed(partial(f, t, ok), name, pg.ArgumentError)
    for attr in ("shape", "dtype", "grad", "data", "requires_grad", "id", "op", "is_leaf"):
        expect_typed(partial(getattr, t, attr), "freed", pg.ArgumentError)
    expect_typed(lambda: pg.backward(t), "backward", pg.ArgumentError)
    expect_typed(lambda: pg.optimizer_adam([t]), "freed", pg.ArgumentError)
    expect_typed(lambda: pg.clip_grad_norm([t]), "clip_grad_norm", pg.ArgumentError)
    expect_typed(lambda: t.numpy(), "freed", pg.ArgumentError)
    with pytest.raises(pg.ArgumentError):
        t.data = np.zeros(shape)


def test_freed_tensor_messages_name_the_op():
    t = pg.ag_tensor(np.ones((2, 2)))
    t.free()
    for name, f in ONE_ARG.items():
        if name in ("ag_scale", "ag_pow", "ag_clamp", "ag_reshape"):
            continue  # wrapped in a lambda here: the lambda's caller is the test
        expect_typed(partial(f, t), name, pg.ArgumentError)
    for name, f in TWO_ARG.items():
        expect_typed(partial(f, t, t), name, pg.ArgumentError)


# ---------------------------------------------------------------------------------------------
# backward twice, optimizers on tensors without gradients, gradient maps


@PROFILE
@given(shape=st.tuples(st.integers(1, 4), st.integers(1, 4)), data=st.data())
def test_backward_twice_gives_the_same_map_and_accumulates_grad(shape, data, f64):
    x = data.draw(arrays(shape, st.floats(-2, 2)))
    p = pg.ag_param(x)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_tanh(pg.ag_mul(p, p)))
    g1 = pg.backward(loss)[p]
    g2 = pg.backward(loss)[p]
    want = (1 - np.tanh(x * x) ** 2) * 2 * x
    np.testing.assert_allclose(g1, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_allclose(p.grad, 2 * want, rtol=1e-12, atol=1e-12)
    m = pg.backward(loss)
    with pytest.raises(pg.GradientKeyError):
        m[pg.ag_tensor(1.0)]
    with pytest.raises(KeyError):  # still a KeyError: Mapping.get and `in` work
        m["nope"]
    assert m.get(None) is None and None not in m and 10**12 not in m


@PROFILE
@given(
    kind=st.sampled_from(["sgd", "adam"]),
    shape=shapes,
    dtype=DTYPES,
    hyper=st.fixed_dictionaries(
        {
            "momentum": st.sampled_from([0.0, 0.9]),
            "wd": st.sampled_from([0.0, 0.1]),
            "acc": st.integers(1, 3),
        }
    ),
)
def test_optimizer_on_tensors_without_gradients(kind, shape, dtype, hyper):
    x = np.arange(shape[0] * shape[1], dtype=float).reshape(shape) - 2
    p = pg.ag_param(x, dtype=dtype)
    q = pg.ag_tensor(x, dtype=dtype)  # does not even require grad
    if kind == "sgd":
        opt = pg.optimizer_sgd(
            [p, q],
            lr=0.1,
            momentum=hyper["momentum"],
            weight_decay=hyper["wd"],
            accumulate_steps=hyper["acc"],
        )
    else:
        opt = pg.optimizer_adam(
            [p, q], lr=0.1, weight_decay=hyper["wd"], accumulate_steps=hyper["acc"]
        )
    for _ in range(3):
        for call in (opt.step, lambda: opt.step(None)):
            t0 = opt.t if kind == "adam" else None
            try:
                assert call() is False  # a counting call (accumulate_steps > 1) reads nothing
            except pg.StateError as e:  # an applying call with nothing to apply (issue 19)
                assert "no gradient for any" in str(e)
                assert t0 is None or opt.t == t0
        opt.zero_grad()
    close(p.numpy(), x, dtype)
    close(q.numpy(), x, dtype)
    assert pg.clip_grad_norm([p, q], None, 1.0) == 0.0
    # a wrong-shaped .grad is refused with the op named
    if p.size:
        with pytest.raises(pg.ShapeError, match="set_grad"):
            p.grad = np.ones((shape[0] + 1, shape[1]))


@PROFILE
@given(
    lr=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10)),
    name=st.sampled_from(
        ["lr", "momentum", "weight_decay", "accumulate_steps", "beta1", "beta2", "eps"]
    ),
)
def test_optimizer_hyper_parameters(lr, name):
    p = pg.ag_param(np.ones((2, 1)))
    kind = pg.optimizer_adam if name.startswith("beta") or name == "eps" else pg.optimizer_sgd
    opt = kind([p])
    try:
        setattr(opt, name, lr)
    except pg.PyggmlrError as e:
        assert_typed(e, name)
        assert isinstance(e, pg.PyggmlrValueError)
        assert (
            math.isnan(lr)
            or lr < 0
            or (name.startswith("beta") and lr >= 1)
            or (
                name == "accumulate_steps"
                and (not math.isfinite(lr) or lr < 1 or lr != int(lr) or lr > 1e15)
            )
            or (name in ("lr", "weight_decay", "eps") and not math.isfinite(lr))
            or (name == "momentum" and lr >= 1)
            or (name == "eps" and lr <= 0)
        )
    else:
        assert getattr(opt, name) == (int(lr) if name == "accumulate_steps" else lr)


# ---------------------------------------------------------------------------------------------
# tape misuse and layers


def test_tape_misuse_is_typed():
    with pytest.raises(pg.ArgumentError, match="with_grad_tape"):
        pg.with_grad_tape(42)
    # an exception inside the scope closes it: recording stops afterwards
    with pytest.raises(ZeroDivisionError):
        with pg.with_grad_tape():
            raise ZeroDivisionError("inside the scope")
    p = pg.ag_param(np.ones((2, 2)))
    y = pg.ag_relu(p)
    assert y.is_leaf  # not recorded: the scope closed
    with pytest.raises(pg.ShapeError, match="backward"):
        pg.backward(p)


@PROFILE
@given(
    fin=st.integers(1, 4),
    fout=st.integers(1, 4),
    batch=st.integers(0, 3),
    dtype=DTYPES,
    data=st.data(),
)
def test_linear_layer_shapes(fin, fout, batch, dtype, data):
    prev = pg.ag_dtype(dtype)
    try:
        layer = pg.ag_linear(fin, fout)
    finally:
        pg.ag_dtype(prev)
    x = data.draw(arrays((fin, batch), finite)).astype(NP[dtype])
    out = layer(pg.ag_tensor(x, dtype=dtype))
    W, b = (t.numpy() for t in layer.parameters().values())
    with np.errstate(all="ignore"):
        want = W.astype(np.float64) @ x + b
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-3)
    wrong = data.draw(st.integers(0, 6).filter(lambda v: v != fin))
    with pytest.raises(pg.ShapeError, match="ag_matmul|ag_linear"):
        layer(pg.ag_tensor(np.zeros((wrong, max(batch, 1))), dtype=dtype))


def test_no_warnings_leak_from_the_engine():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = pg.ag_tensor(np.array([[np.nan, np.inf, -np.inf, 0.0]]))
        pg.ag_log(pg.ag_exp(t)).numpy()
        pg.ag_div(t, 0.0).numpy()
