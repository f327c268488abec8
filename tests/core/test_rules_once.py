"""Rules both front ends wrote and now call once in the core (issue 29): whole-number ids
(pg_arg_whole_ids: ag_embedding's ids), ag_gather's index (pg_gather_f64: the length, NA, whole
numbers and range, in ggmlR's order), dp_train's verbose (pg_arg_clamp) and ag_linear's gain
(pg_arg_gain). R's
test-rules-once.R has the same cases; tests/r/test_core_rules_parity.py runs them in both."""

import math

import numpy as np
import pytest
from _rclass import refused

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError
from pyggmlr.parallel.replicas import _verbose_every

_IDS = "ag_embedding: ids must be whole numbers (0-based), got non-integer values"


def _emb():
    pg.ggml_set_seed(1)
    return pg.ag_embedding(10, 4)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 2.5, -0.5, 1e-300])
def test_embedding_ids_not_whole_refused(bad):
    e = _emb()
    refused(lambda: e.forward([2.0, bad]), PyggmlrValueError, _IDS)
    f32 = np.array([[bad], [1.0]], dtype=np.float32)  # 1e-300 is 0 in f32: whole
    if bad != 1e-300:
        refused(lambda: e.forward(f32), PyggmlrValueError, _IDS)


def test_embedding_ids_whole_kept_and_kinds():
    e = _emb()
    w = e.weight.numpy()
    np.testing.assert_array_equal(e.forward([2.0, 9.0, -0.0]).numpy(), w[:, [2, 9, 0]])
    np.testing.assert_array_equal(e.forward(np.array([3, 1])).numpy(), w[:, [3, 1]])
    assert e.forward(np.zeros(0)).shape == (4, 0)  # empty: nothing to refuse
    # whole but out of range: the op's text, not the whole-number one
    refused(
        lambda: e.forward([2.0, 1e300]),
        PyggmlrValueError,
        "ag_embedding: id 1e+300 at position 1 is out of range [0, 10) for weight [4x10] f32 "
        "(ids are 0-based)",
    )  # fmt: skip (positions as Python counts them)
    refused(lambda: e.forward([True, False]), ArgumentError,
            "ag_embedding: ids must be 0-based integers, got booleans")  # fmt: skip


_X = np.arange(1.0, 7).reshape((3, 2), order="F")  # R's matrix(1:6, 3, 2)
_NA, _WHOLE = "ag_gather: index contains NA", "ag_gather: index must be whole numbers (0-based)"
_RANGE = "ag_gather: index out of range 0..2 (indices are 0-based)"


@pytest.mark.parametrize("index, exc, text", [
    ([0, 1, 2], ShapeError, "ag_gather: index has length 3, x has 2 columns"),
    ([], ShapeError, "ag_gather: index has length 0, x has 2 columns"),
    ([math.nan, 1e300], PyggmlrValueError, _NA),  # NA first, over the whole index
    ([0.5, math.nan], PyggmlrValueError, _NA),
    ([math.inf, 2.5], PyggmlrValueError, _WHOLE),  # whole numbers before the range
    ([-0.5, 0], PyggmlrValueError, _WHOLE),
    ([math.inf, 0], PyggmlrValueError, _RANGE),  # +/-Inf are whole, out of range
    ([0, -math.inf], PyggmlrValueError, _RANGE),
    ([1e300, 0], PyggmlrValueError, _RANGE),
    ([2.0**31, 0], PyggmlrValueError, _RANGE),
    ([3, 0], PyggmlrValueError, _RANGE),
    (np.array([0, -1]), PyggmlrValueError, _RANGE),
    (np.array([2**63 - 1, 0], dtype=np.int64), PyggmlrValueError, _RANGE),
    ("a", ArgumentError, "ag_gather: index must be numeric (0-based integers)"),
])  # fmt: skip
def test_gather_index_refused(index, exc, text):
    refused(lambda: pg.ag_gather(_X, index), exc, text)


def test_gather_index_kept():
    assert pg.ag_gather(_X, [2.0, -0.0]).numpy().tolist() == [[3.0, 4.0]]
    assert pg.ag_gather(_X, np.array([[0, 2]], dtype=np.uint8)).numpy().tolist() == [[1.0, 6.0]]
    empty = pg.ag_gather(np.zeros((3, 0)), [])
    assert empty.shape == (1, 0)
    refused(lambda: pg.ag_gather(np.zeros((0, 2)), [0, 0]), PyggmlrValueError,
            "ag_gather: index out of range 0..-1 (indices are 0-based)")  # fmt: skip


_V = "dp_train: verbose must be TRUE/FALSE or an integer, got {}"


@pytest.mark.parametrize("v, want", [
    (None, 0), (False, 0), (True, 1), (np.True_, 1), (10, 10), (2.9, 2), (-0.5, 0), (-3, 0),
    (1e300, 2**31 - 1), (2.0**31, 2**31 - 1), (np.float32(7.5), 7),
])  # fmt: skip
def test_verbose_kept(v, want):
    got = _verbose_every(v)
    assert got == want and type(got) is int


@pytest.mark.parametrize("v, exc, shown", [
    (math.nan, PyggmlrValueError, "nan"), (math.inf, PyggmlrValueError, "inf"),
    (-math.inf, PyggmlrValueError, "-inf"), (10**400, PyggmlrValueError, "inf"),
    ("x", ArgumentError, "'x'"),
    ([1, 2], ArgumentError, "[1, 2]"),
])  # fmt: skip
def test_verbose_refused(v, exc, shown):
    refused(lambda: _verbose_every(v), exc, _V.format(shown))
    data = [np.zeros((2, 1))]
    refused(lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), data, loss_fn=lambda o, s: pg.ag_sum(o),
                                n_iter=1, verbose=v), exc, _V.format(shown))  # fmt: skip


_GAIN = "ag_linear: gain must be a single finite number"


@pytest.mark.parametrize("g", [math.nan, math.inf, -math.inf, 10**400, True, np.True_, "a", None,
                               [1, 2]])  # fmt: skip
def test_gain_refused(g):
    refused(lambda: pg.ag_linear(2, 3, gain=g), PyggmlrValueError, _GAIN)  # the wrong kind too


def test_gain_kept():
    pg.ggml_set_seed(1)
    w1 = pg.ag_linear(2, 3).W.numpy()
    for g, want in [(2.5, 2.5), (np.float32(2), 2.0), (np.int64(-3), -3.0), (0, 0.0)]:
        pg.ggml_set_seed(1)
        lin = pg.ag_linear(2, 3, gain=g)
        assert lin.gain == want and type(lin.gain) is float
        np.testing.assert_allclose(lin.W.numpy(), w1 * want, rtol=1e-6)
    pg.ggml_set_seed(1)
    assert pg.ag_linear(2, 3, init="orthogonal", gain=1e300).W.shape == (3, 2)
