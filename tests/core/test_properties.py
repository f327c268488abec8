"""Property-based tests (hypothesis) over the Python API.

Every case either matches numpy (forward values; gradients where cheap, in f64) or raises a
typed pyggmlr error (a PyggmlrError subclass) whose message names the op: never another
exception type, never a crash. Shapes include 0- and 1-sized dims; dtypes f32 and f64;
broadcast pairs valid and invalid; numpy inputs non-contiguous, reversed, integer, bool,
float16; NaN / Inf / huge values. Wrong argument types, freed tensors, backward twice and
optimizers on tensors without gradients: test_properties_misuse.py; the profiles and the shared
strategies and checks: _props.py.

Example counts come from a hypothesis profile: HYPOTHESIS_PROFILE=ci (default, small: the
file runs in seconds) or fuzz (`make fuzz`: many more)."""

import math
from functools import partial

import numpy as np
from _props import (
    DTYPES,
    NP,
    PROFILE,
    arrays,
    close,
    dims,
    elements,
    expect_typed,
    finite,
    shapes,
    special,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyggmlr as pg

# ---------------------------------------------------------------------------------------------
# broadcasting binary ops


def _bshape(draw_dim, full):
    return full if draw_dim == 0 else (1 if draw_dim == 1 else full)


@st.composite
def bcast_pair(draw):
    """Two shapes: broadcast-compatible (each dim equal or 1 on one side) or, sometimes, not."""
    r, c = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    a = (draw(st.sampled_from([r, 1])), draw(st.sampled_from([c, 1])))
    b = (draw(st.sampled_from([r, 1])), draw(st.sampled_from([c, 1])))
    if draw(st.integers(0, 4)) == 0:  # an incompatible pair
        b = (draw(st.integers(0, 6)), draw(st.integers(0, 6)))
    return a, b


def _compatible(a, b):
    return all(x == y or x == 1 or y == 1 for x, y in zip(a, b))


BIN = {
    "ag_add": (pg.ag_add, np.add),
    "ag_sub": (pg.ag_sub, np.subtract),
    "ag_mul": (pg.ag_mul, np.multiply),
    "ag_div": (pg.ag_div, np.divide),
}


@PROFILE
@given(name=st.sampled_from(sorted(BIN)), pair=bcast_pair(), dtype=DTYPES, data=st.data())
def test_binary_broadcast_matches_numpy(name, pair, dtype, data):
    (sa, sb) = pair
    a = data.draw(arrays(sa)).astype(NP[dtype])
    b = data.draw(arrays(sb)).astype(NP[dtype])
    f, ref = BIN[name]
    ta, tb = pg.ag_tensor(a, dtype=dtype), pg.ag_tensor(b, dtype=dtype)
    if not _compatible(sa, sb):
        expect_typed(lambda: f(ta, tb), name, pg.ShapeError)
        return
    with np.errstate(all="ignore"):
        want = ref(a, b)
    out = f(ta, tb)
    assert out.shape == want.shape and out.dtype == dtype
    close(out.numpy(), want, dtype)
    # a numpy operand on either side is a constant of the tensor's dtype
    close(f(ta, b).numpy(), want, dtype)
    close(f(a, tb).numpy(), want, dtype)


@PROFILE
@given(name=st.sampled_from(sorted(BIN)), pair=bcast_pair(), data=st.data())
def test_binary_gradients_reduce_onto_each_shape(name, pair, data, f64):
    sa, sb = pair
    assume(_compatible(sa, sb))
    small = st.floats(0.5, 2.0)
    a = data.draw(arrays(sa, small))
    b = data.draw(arrays(sb, small))
    pa, pb = pg.ag_param(a), pg.ag_param(b)
    with pg.with_grad_tape():
        loss = pg.ag_sum(BIN[name][0](pa, pb))
    g = pg.backward(loss)
    A, B = np.broadcast_arrays(a, b)
    da = {"ag_add": np.ones_like(A), "ag_sub": np.ones_like(A), "ag_mul": B, "ag_div": 1 / B}[name]
    db = {"ag_add": np.ones_like(B), "ag_sub": -np.ones_like(B), "ag_mul": A, "ag_div": -A / B**2}[
        name
    ]

    def reduce_to(x, shape):
        if shape[0] == 1 and x.shape[0] != 1:
            x = x.sum(axis=0, keepdims=True)
        if shape[1] == 1 and x.shape[1] != 1:
            x = x.sum(axis=1, keepdims=True)
        return x.reshape(shape)

    if a.size:
        close(g[pa], reduce_to(da, sa), "f64")
        close(pa.grad, reduce_to(da, sa), "f64")
    if b.size:
        close(g[pb], reduce_to(db, sb), "f64")


# ---------------------------------------------------------------------------------------------
# matmul, unary, scalar ops, reductions, shape ops, losses


@PROFILE
@given(m=dims, k=dims, n=dims, k2=dims, dtype=DTYPES, data=st.data())
def test_matmul(m, k, n, k2, dtype, data):
    a = data.draw(arrays((m, k), finite)).astype(NP[dtype])
    b = data.draw(arrays((k2, n), finite)).astype(NP[dtype])
    ta, tb = pg.ag_tensor(a, dtype=dtype), pg.ag_tensor(b, dtype=dtype)
    if k != k2:
        expect_typed(lambda: pg.ag_matmul(ta, tb), "ag_matmul", pg.ShapeError)
        return
    out = pg.ag_matmul(ta, tb)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = max(1.0, float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * max(k, 1))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6 * tol)


def _softmax(x):
    if x.size == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)


def _gelu(x):
    return (
        np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))), otypes=[float])(x)
        if x.size
        else x
    )


UNARY = {
    "ag_relu": (pg.ag_relu, lambda x: np.where(x > 0, x, 0.0)),
    "ag_sigmoid": (pg.ag_sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "ag_tanh": (pg.ag_tanh, np.tanh),
    "ag_exp": (pg.ag_exp, np.exp),
    "ag_log": (pg.ag_log, np.log),
    "ag_neg": (pg.ag_neg, np.negative),
    "ag_gelu": (pg.ag_gelu, _gelu),
    "ag_softmax": (pg.ag_softmax, _softmax),
}


@PROFILE
@given(name=st.sampled_from(sorted(UNARY)), shape=shapes, dtype=DTYPES, data=st.data())
def test_unary_matches_numpy(name, shape, dtype, data):
    f, ref = UNARY[name]
    special_ok = name not in ("ag_gelu", "ag_softmax", "ag_relu")  # NaN conventions differ there
    x = data.draw(arrays(shape, elements if special_ok else finite)).astype(NP[dtype])
    out = f(pg.ag_tensor(x, dtype=dtype)).numpy()
    assert out.shape == x.shape and out.dtype == NP[dtype]
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(NP[dtype])
    if dtype == "f32" and name in (
        "ag_exp",
        "ag_sigmoid",
        "ag_gelu",
        "ag_softmax",
        "ag_tanh",
        "ag_log",
    ):
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-6, equal_nan=True)
    else:
        close(out, want, dtype)


@PROFILE
@given(
    name=st.sampled_from(sorted(UNARY)),
    shape=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    data=st.data(),
)
def test_unary_gradients_match_finite_differences(name, shape, data, f64):
    f, _ = UNARY[name]
    lo = 0.2 if name == "ag_log" else -2.0
    x = data.draw(arrays(shape, st.floats(lo, 2.0)))
    assume(name != "ag_relu" or np.all(np.abs(x) > 1e-3))
    w = np.linspace(0.5, 1.5, x.size).reshape(shape)
    p = pg.ag_param(x)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(f(p), w))
    g = pg.backward(loss)[p]
    h = 1e-6
    num = np.zeros_like(x)
    for i in np.ndindex(*shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = (
            pg.ag_sum(pg.ag_mul(f(pg.ag_tensor(xp)), w)).item()
            - pg.ag_sum(pg.ag_mul(f(pg.ag_tensor(xm)), w)).item()
        ) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


@PROFILE
@given(shape=shapes, dtype=DTYPES, s=st.one_of(finite, special), data=st.data())
def test_scalar_ops(shape, dtype, s, data):
    x = data.draw(arrays(shape, finite)).astype(NP[dtype])
    t = pg.ag_tensor(x, dtype=dtype)
    with np.errstate(all="ignore"):
        close(pg.ag_scale(t, s).numpy(), x * NP[dtype](s), dtype)
        lo, hi = (s, s + 1.0) if not math.isnan(s) else (-1.0, 1.0)
        close(
            pg.ag_clamp(t, lo, hi).numpy(),
            np.minimum(np.maximum(x, NP[dtype](lo)), NP[dtype](hi)),
            dtype,
        )
    for p in (2.0, 3.0, 0.5):
        xx = np.abs(x) if p == 0.5 else x
        got = pg.ag_pow(pg.ag_tensor(xx, dtype=dtype), p).numpy()
        with np.errstate(all="ignore"):
            want = np.power(xx.astype(np.float64), p).astype(NP[dtype])
        np.testing.assert_allclose(
            got, want, rtol=1e-5 if dtype == "f32" else 1e-12, equal_nan=True
        )


@PROFILE
@given(shape=shapes, dtype=DTYPES, dim=st.sampled_from([None, 1, 2]), data=st.data())
def test_reductions_and_shapes(shape, dtype, dim, data):
    x = data.draw(arrays(shape, finite)).astype(NP[dtype])
    t = pg.ag_tensor(x, dtype=dtype)
    axis = {None: None, 1: 1, 2: 0}[dim]
    want_sum = (
        x.astype(np.float64).sum(axis=axis, keepdims=True)
        if axis is not None
        else np.array([[x.astype(np.float64).sum()]])
    )
    np.testing.assert_allclose(pg.ag_sum(t, dim=dim).numpy(), want_sum, rtol=1e-5, atol=1e-3)
    n = x.shape[axis] if axis is not None else x.size
    got_mean = pg.ag_mean(t, dim=dim).numpy()
    if n:
        np.testing.assert_allclose(got_mean, want_sum / n, rtol=1e-5, atol=1e-4)
    close(pg.ag_transpose(t).numpy(), x.T, dtype)
    r, c = shape
    if r * c:
        close(pg.ag_reshape(t, c, r).numpy(), x.reshape((c, r), order="F"), dtype)
        close(pg.ag_reshape(t, -1, 1).numpy(), x.reshape((-1, 1), order="F"), dtype)
    bad = r * c + 1
    expect_typed(lambda: pg.ag_reshape(t, bad, 1), "ag_reshape", pg.ShapeError)
    for wrong, kind in (
        (3, pg.PyggmlrValueError),
        ("a", pg.ArgumentError),
        ([1], pg.ArgumentError),
    ):
        expect_typed(partial(pg.ag_sum, t, dim=wrong), "ag_sum", kind)  # the one integer rule


@PROFILE
@given(shape=st.tuples(st.integers(1, 5), st.integers(1, 5)), dtype=DTYPES, data=st.data())
def test_losses(shape, dtype, data):
    p = data.draw(arrays(shape, st.floats(0.01, 0.99))).astype(NP[dtype])
    y = data.draw(arrays(shape, st.floats(0, 1))).astype(NP[dtype])
    tp, ty = pg.ag_tensor(p, dtype=dtype), pg.ag_tensor(y, dtype=dtype)
    np.testing.assert_allclose(
        pg.ag_mse_loss(tp, ty).item(), np.mean((p.astype(float) - y) ** 2), rtol=1e-5
    )
    np.testing.assert_allclose(
        pg.ag_cross_entropy_loss(tp, ty).item(),
        -np.sum(y * np.log(np.clip(p.astype(float), 1e-7, 1 - 1e-7))) / shape[1],
        rtol=1e-5,
    )
    ids = data.draw(hnp.arrays(np.int64, shape[1], elements=st.integers(0, shape[0] - 1)))
    logp = np.log(_softmax(p.astype(float)))
    np.testing.assert_allclose(
        pg.ag_softmax_cross_entropy_loss(tp, ids).item(),
        -np.mean(logp[ids, np.arange(shape[1])]),
        rtol=1e-5,
    )
    other = (shape[0] + 1, shape[1])
    expect_typed(lambda: pg.ag_mse_loss(tp, np.zeros(other)), "ag_mse_loss", pg.ShapeError)
    bad_ids = ids.copy()
    bad_ids[0] = data.draw(st.sampled_from([-1, shape[0], 2**40]))
    expect_typed(
        lambda: pg.ag_softmax_cross_entropy_loss(tp, bad_ids),
        "ag_softmax_cross_entropy_loss",
        pg.PyggmlrValueError,
    )


# ---------------------------------------------------------------------------------------------
# numpy inputs: memory orders, dtypes, NaN / Inf

INT_DTYPES = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
    np.float16,
]


@PROFILE
@given(
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    np_dtype=st.sampled_from(INT_DTYPES),
    view=st.sampled_from(["C", "F", "T", "step", "reverse", "broadcast"]),
    dtype=DTYPES,
    data=st.data(),
)
def test_numpy_inputs_any_layout_and_dtype(shape, np_dtype, view, dtype, data):
    base = data.draw(hnp.arrays(np_dtype, (shape[0] * 2, shape[1] * 2)))
    a = {
        "C": np.ascontiguousarray(base),
        "F": np.asfortranarray(base),
        "T": base.T,
        "step": base[::2, 1::2],
        "reverse": base[::-1, ::-1],
        "broadcast": np.broadcast_to(base[:1], base.shape),
    }[view]
    t = pg.ag_tensor(a, dtype=dtype)
    want = a.astype(np.float64).astype(NP[dtype])
    assert t.shape == a.shape
    close(t.numpy(), want, dtype)
    # as an operand and as assigned data
    close(pg.ag_add(t, a).numpy(), want + want, dtype)
    t.data = a
    close(t.numpy(), want, dtype)


@PROFILE
@given(
    x=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**53), 2**53)),
    dtype=DTYPES,
)
def test_scalars_nan_inf_and_extremes(x, dtype):
    t = pg.ag_tensor(x, dtype=dtype)
    with np.errstate(all="ignore"):
        want = NP[dtype](x)
    assert t.shape == (1, 1)
    close(t.numpy(), [[want]], dtype)
    with np.errstate(all="ignore"):
        close((t + t).numpy(), [[want + want]], dtype)
        close(pg.ag_mul(t, t).numpy(), [[want * want]], dtype)
