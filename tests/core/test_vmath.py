"""Vectorised exp, sigmoid, tanh and log (native/vmath.c): accuracy in ulps, special values,
the same bits on every SIMD level."""

import numpy as np
import pytest

import pyggmlr as pg

# ---- vectorised exp, sigmoid, tanh (native/vmath.c) ----

SIMD_LEVELS = {0: "SSE2", 1: "AVX2", 2: "AVX-512"}
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
    from pyggmlr._native import lib

    dt = np.float32 if dtype == "f32" else np.float64
    x = _vmath_inputs(dt)[::7]
    ops = [(name, op) for name, op, _, _ in (_VMATH_F32 if dtype == "f32" else _VMATH_F64)]
    ops.append(("softmax", pg.ag_softmax))
    out = {}
    try:
        for level in sorted(SIMD_LEVELS):
            if lib.pg_simd_select(level) != level:
                continue
            res = []
            for name, op in ops:
                for n in (1, 3, 5, 15, 17, 33, x.size):
                    src = (
                        x[:n]
                        if name != "softmax"
                        else np.nan_to_num(x[:n], posinf=50, neginf=-50) % 60
                    )
                    res.append(
                        op(
                            pg.ag_tensor(
                                src[None, :] if name != "softmax" else src[:, None], dtype=dtype
                            )
                        )
                        .numpy()
                        .tobytes()
                    )
            out[level] = res
    finally:
        lib.pg_simd_select(-1)
    assert 0 in out
    for level, res in out.items():
        assert res == out[0], SIMD_LEVELS[level]
