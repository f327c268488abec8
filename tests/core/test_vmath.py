"""Vectorised exp, sigmoid, tanh and log (native/vmath.c): accuracy in ulps, special values,
the same bits on every SIMD level."""

import numpy as np
import pytest
from _simd import same_bits_at_every_level

import pyggmlr as pg

# ---- vectorised exp, sigmoid, tanh (native/vmath.c) ----

_VMATH_F32 = (
    ("exp", pg.ag_exp, np.exp, 1),
    ("sigmoid", pg.ag_sigmoid, lambda v: 1 / (1 + np.exp(-v)), 2),
    ("tanh", pg.ag_tanh, np.tanh, 1),
    ("log", pg.ag_log, np.log, 1),
)
_VMATH_F64 = (
    ("exp", pg.ag_exp, np.exp, 1),
    ("sigmoid", pg.ag_sigmoid, lambda v: 1 / (1 + np.exp(-v)), 4),
    ("log", pg.ag_log, np.log, 1),
    ("tanh", pg.ag_tanh, np.tanh, 3),
)


def _ulp_diff(a, b):
    it = np.int32 if a.dtype == np.float32 else np.int64
    return np.abs(a.view(it).astype(np.int64) - b.view(it).astype(np.int64))


def _vmath_inputs(dt):
    lo, hi = (-110, 95) if dt == np.float32 else (-760, 720)
    specials = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-40,
        -1e-40,
        1e-300,
        0.3,
        -0.3,
        0.62,
        0.63,
        88.7,
        89.0,
        -103.9,
        -104.5,
        709.7,
        709.9,
        -745.1,
        -745.2,
        1e30,
        -1e30,
    ]
    fi = np.finfo(dt)
    with np.errstate(over="ignore"):
        positive = np.geomspace(fi.smallest_subnormal, fi.max, 200001)  # log's whole domain
        return np.concatenate(
            [
                np.linspace(lo, hi, 300001),
                np.linspace(-1, 1, 100001),
                positive,
                np.linspace(0.5, 2, 50001),
                specials,
            ]
        ).astype(dt)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_vmath_accuracy_and_special_values(dtype):
    # against numpy in double: f32 exp, tanh and log within 1 ulp, sigmoid 2 (normal results); f64
    # exp and log within 1, tanh 3, sigmoid 4; inf, NaN, signed zeros and the edges as libm
    dt = np.float32 if dtype == "f32" else np.float64
    x = _vmath_inputs(dt)
    for name, op, ref_fn, tol in _VMATH_F32 if dtype == "f32" else _VMATH_F64:
        got = op(pg.ag_tensor(x[None, :], dtype=dtype)).numpy()[0]
        with np.errstate(all="ignore"):
            ref = ref_fn(x.astype(np.float64)).astype(dt)
        normal = np.isfinite(ref) & (np.abs(ref) >= np.finfo(dt).tiny)
        assert _ulp_diff(got[normal], ref[normal]).max() <= tol, name
        # below the smallest normal: as close as the absolute error of a normal result's rounding
        tiny = np.isfinite(ref) & ~normal
        assert np.all(np.abs(got[tiny] - ref[tiny]) <= 4 * np.finfo(dt).tiny), name
        rest = ~np.isfinite(ref)
        np.testing.assert_array_equal(got[rest], ref[rest], err_msg=name)
        zero = ref == 0
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(ref[zero]), err_msg=name)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_vmath_simd_levels_give_identical_bits(dtype):
    # SSE2, AVX2 and AVX-512 vectors (4 / 8 / 16 floats, 2 / 4 / 8 doubles) and the padded tail:
    # the same bits; lengths ragged against every width; also through softmax
    dt = np.float32 if dtype == "f32" else np.float64
    x = _vmath_inputs(dt)[::7]
    ops = [(name, op) for name, op, _, _ in (_VMATH_F32 if dtype == "f32" else _VMATH_F64)]
    ops.append(("softmax", pg.ag_softmax))

    def run():
        res = []
        for name, op in ops:
            for n in (1, 3, 5, 15, 17, 33, x.size):
                if name == "softmax":
                    src = (np.nan_to_num(x[:n], posinf=50, neginf=-50) % 60)[:, None]
                else:
                    src = x[None, :n]
                res.append(op(pg.ag_tensor(src, dtype=dtype)).numpy().tobytes())
        return res

    same_bits_at_every_level(run)


# ---- GELU (erfc cores of native/vmath_erf.h) ----


def _gelu_inputs(dt):
    fi = np.finfo(dt)
    tiny = np.geomspace(fi.smallest_subnormal, 1, 2001)
    return np.concatenate(
        [
            np.linspace(-40, 40, 16001),
            np.linspace(-3, 3, 6001),
            tiny,
            -tiny,
            [0.0, -0.0, 1e30, -1e30, fi.max, -fi.max],
        ]
    ).astype(dt)


def _gelu_ref(x):
    # in 50 digits from the argument the kernel sees, u = x * (1/sqrt2) rounded in x's dtype
    import mpmath

    mpmath.mp.dps = 50
    s = x.dtype.type(np.sqrt(0.5))
    fw, bw = np.empty(x.size), np.empty(x.size)
    for i, v in enumerate(x):
        if v == 0:  # x/2 (1 + erf(0)) keeps the zero's sign
            fw[i], bw[i] = float(v), 0.5
            continue
        if abs(v) > 50:  # the limits (gelu(x) rounds to x or -0, its derivative to 1 or 0)
            fw[i], bw[i] = (float(v), 1.0) if v > 0 else (-0.0, 0.0)
            continue
        xv, u = mpmath.mpf(float(v)), mpmath.mpf(float(v * s))
        fw[i] = float(xv / 2 * mpmath.erfc(-u))
        bw[i] = float(
            mpmath.erfc(-u) / 2 + xv * mpmath.exp(-xv * xv / 2) / mpmath.sqrt(2 * mpmath.pi)
        )
    return fw, bw


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_gelu_accuracy_and_special_values(dtype):
    # forward and derivative against 50-digit values: within 3 ulp in f64 and f32 (results from a
    # normal erfc; measured: 2 and 2); the derivative's x exp(-x^2/2) term rounds x^2 first, as libm's formula did, so its
    # bound is absolute); NaN stays NaN, +inf gives +inf, -inf NaN (-inf * 0), as before
    dt = np.float32 if dtype == "f32" else np.float64
    x = _gelu_inputs(dt)
    fw_ref, bw_ref = _gelu_ref(x)
    xp = pg.ag_param(x[None, :], dtype=dtype)
    with pg.with_grad_tape():
        y = pg.ag_gelu(xp)
        loss = pg.ag_sum(y)
    got, grad = y.numpy()[0], pg.backward(loss)[xp][0]
    fw_ref, bw_ref = fw_ref.astype(dt), bw_ref.astype(dt)
    # x/2 (up to 20 here) times an erfc below the smallest normal: the erfc's absolute error
    normal = np.abs(fw_ref) >= 32 * np.finfo(dt).tiny
    assert _ulp_diff(got[normal], fw_ref[normal]).max() <= 3
    assert np.all(np.abs(got[~normal] - fw_ref[~normal]) <= 32 * np.finfo(dt).tiny)
    np.testing.assert_array_equal(np.signbit(got[fw_ref == 0]), np.signbit(fw_ref[fw_ref == 0]))
    np.testing.assert_allclose(grad, bw_ref, rtol=8 * np.finfo(dt).eps, atol=np.finfo(dt).eps)
    sp = np.array([np.nan, np.inf, -np.inf], dtype=dt)
    out = pg.ag_gelu(pg.ag_tensor(sp[None, :], dtype=dtype)).numpy()[0]
    assert np.isnan(out[0]) and out[1] == np.inf and np.isnan(out[2])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_gelu_simd_levels_give_identical_bits(dtype):
    # forward, backward into a fresh gradient and accumulated into one (x used twice), ragged
    dt = np.float32 if dtype == "f32" else np.float64
    x = _gelu_inputs(dt)[::5]

    def run():
        res = []
        for n in (1, 3, 5, 15, 17, 33, x.size):
            xp = pg.ag_param(x[None, :n], dtype=dtype)
            with pg.with_grad_tape():
                y = pg.ag_gelu(xp)
                loss = pg.ag_add(pg.ag_sum(pg.ag_mul(y, y)), pg.ag_sum(pg.ag_gelu(xp)))
            res += [y.numpy().tobytes(), pg.backward(loss)[xp].tobytes()]
        return res

    same_bits_at_every_level(run)
