"""Shared by test_properties.py and test_properties_misuse.py: the hypothesis profiles
(HYPOTHESIS_PROFILE=ci, the default, or fuzz), the strategies and the typed-error checks."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pyggmlr as pg

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "fuzz",
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DTYPES = st.sampled_from(["f32", "f64"])
NP = {"f32": np.float32, "f64": np.float64}
dims = st.integers(0, 5)
shapes = st.tuples(dims, dims)
finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32)
special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-38, 3e38, -3e38, 1e-45])
elements = st.one_of(finite, finite, finite, special)


def arrays(shape, elems=elements):
    return hnp.arrays(np.float64, shape, elements=elems)


def assert_typed(exc, op):
    """exc is a pyggmlr error whose message names op."""
    assert isinstance(exc, pg.PyggmlrError), f"{type(exc).__name__}: {exc}"
    assert op in str(exc), f"message does not name {op}: {exc}"


def expect_typed(fn, op, kinds=(pg.PyggmlrError,)):
    with pytest.raises(pg.PyggmlrError) as ei:
        fn()
    assert isinstance(ei.value, kinds), f"{type(ei.value).__name__}: {ei.value}"
    assert_typed(ei.value, op)
    return ei.value


def close(got, want, dtype):
    want = np.asarray(want, dtype=NP[dtype])
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == "f32" else dict(rtol=1e-12, atol=1e-12)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, want, equal_nan=True, **tol)
