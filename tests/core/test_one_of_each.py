"""Issue 21's "one of each" in the Python package: one parameter walk (pyggmlr._walk), one
argument-check module (pyggmlr._args), one value-to-tensor conversion (tensor._as_tensor),
operators defined on Tensor itself, and op names passed to errors explicitly."""

import copy
import pathlib

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr import _args, _walk
from pyggmlr.tensor import Tensor, _as_tensor

PKG = pathlib.Path(pg.__file__).parent


class _Model:
    def __init__(self, *ts, bufs=None):
        self.ts, self.bufs = ts, bufs

    def parameters(self):
        return {f"p{i}": t for i, t in enumerate(self.ts)}

    def buffers(self):
        return self.bufs


def test_walk_keeps_order_and_drops_a_second_handle_on_one_tensor():
    a, b = pg.ag_param([[1.0]]), pg.ag_param([[2.0]])
    a2 = copy.copy(a)  # another Python handle, the same core tensor (same id)
    assert a2 is not a and a2.id == a.id
    assert _walk.tensors([b, a, a2, b], "f") == [b, a]
    assert _walk.tensors(_Model(a, b), "f") == [a, b]
    assert _walk.tensors({"x": b, "y": a}, "f") == [b, a]
    assert _walk.tensors(a, "f") == [a]
    names, ts, named = _walk.named(_Model(a, b, a2), "f")
    assert names == ["p0", "p1", "p2"] and ts == [a, b, a2] and named  # repeats kept here
    assert _walk.named([b, a], "f")[0::2] == (["1", "2"], False)


def test_walk_buffers_and_ggmlr_params():
    t = pg.ag_tensor([[0.0]])
    assert _walk.items(_Model(bufs={"rm": t}), "buffers", own=False) == [("rm", t)]
    assert _walk.items(_Model(bufs=None), "buffers", own=False) == []
    assert _walk.items(object(), "buffers", own=False) == []

    class Bare:  # ggmlR's bare layer: params() only
        def params(self):
            return [t]

    assert _walk.items(Bare(), "parameters", alt="params", own=False) == [("1", t)]


def test_walk_errors_name_the_caller():
    with pytest.raises(pg.ArgumentError, match=r"^f: parameter 2 is not an ag_tensor$"):
        _walk.tensors([pg.ag_param([[1.0]]), 3], "f")
    with pytest.raises(
        pg.ArgumentError,
        match=r"^f: expected a model, a list of ag_tensors or an ag_tensor, got int$",
    ):
        _walk.tensors(3, "f")
    for v, kind in (("ab", "str"), (np.ones(2), "ndarray")):  # refused whole, as R's is.list
        with pytest.raises(pg.ArgumentError, match=f"^f: expected a model, .* got {kind}$"):
            _walk.tensors(v, "f")
    # R's texts (issue 29: Python's words differed, and a string was walked as a list)
    with pytest.raises(
        pg.ArgumentError, match=r"^g: params must be a list of ag_tensors, got None$"
    ):
        _walk.named(None, "g")
    with pytest.raises(
        pg.ArgumentError, match=r"^g: params must be a list of ag_tensors, got 'a'$"
    ):
        _walk.named("a", "g")
    with pytest.raises(pg.ArgumentError, match=r"^g: parameter 'b' is not an ag_tensor$"):
        _walk.named({"a": pg.ag_param([[1.0]]), "b": 3}, "g")


def test_argument_checks_live_in_one_module_with_their_texts():
    # one integer rule: any real kind with a whole value (2.0, numpy's), not a bool, finite, in range
    assert _args.check_int(np.int64(3), "ag_fit", "nepoch", 1) == 3
    assert (
        _args.check_int(4.0, "fn", "top", 0) == 4 and _args.check_int(np.float32(7), "f", "n") == 7
    )
    with pytest.raises(
        pg.PyggmlrValueError, match=r"^ag_fit: nepoch must be an integer >= 1, got 0$"
    ):
        _args.check_int(0, "ag_fit", "nepoch", 1)
    with pytest.raises(pg.PyggmlrValueError, match=r"^fn: top must be an integer >= 0, got 1.5$"):
        _args.check_int(1.5, "fn", "top", 0)
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_linear: in_features must be an integer >= 1, got str 'a'$"
    ):
        _args.check_int("a", "ag_linear", "in_features", 1)
    with pytest.raises(pg.ArgumentError, match=r"^f: n must be an integer >= 1, got bool True$"):
        _args.check_int(True, "f", "n", 1)
    with pytest.raises(pg.PyggmlrValueError, match=r"^f: n must be an integer in \[0, 4\], got 5$"):
        _args.check_int(5, "f", "n", 0, 4)
    with pytest.raises(pg.PyggmlrValueError, match=r"^f: n must be an integer in \[-inf, 4\]"):
        _args.check_int(5, "f", "n", None, 4)
    with pytest.raises(pg.PyggmlrValueError, match=r"^f: n must be one of the words, got nan$"):
        _args.check_int(float("nan"), "f", "n", 0, rule="one of the words")
    for gone in ("check_min_int", "check_count", "check_r_int"):  # merged into check_int
        assert not hasattr(_args, gone)
    with pytest.raises(pg.PyggmlrValueError, match=r"^s: gamma must be a single number, got None$"):
        _args.check_number(None, "s", "gamma")
    for gone in ("INT_MAX", "check_int", "check_num", "check_flag", "as_flag", "as_numeric"):
        assert not hasattr(pg.errors, gone)  # the old home's re-exports are gone
    # the public functions route through them
    with pytest.raises(
        pg.PyggmlrValueError, match=r"^ag_fit: batch_size must be an integer >= 1, got 0$"
    ):
        pg.ag_fit(
            _Model(pg.ag_param([[1.0]])), np.ones((1, 4)), np.ones((1, 4)), loss="mse", batch_size=0
        )


def test_one_conversion_to_tensor():
    like = pg.ag_tensor([[1.0]], dtype="f64")
    t = _as_tensor([[1, 2]], "ag_x", like)
    assert t.dtype == "f64" and t.shape == (1, 2)
    assert _as_tensor(like) is like
    assert _as_tensor([1.0], code=pg._core.F64).dtype == "f64"
    with pytest.raises(
        pg.DTypeError, match=r"^ag_x: expected a numeric matrix, vector or ag_tensor"
    ):
        _as_tensor(["a"], "ag_x")
    with pytest.raises(pg.DTypeError, match=r"^expected a numeric matrix, vector or ag_tensor"):
        _as_tensor(["a"], "ag_x", prefix=False)


def test_operators_are_defined_on_the_class():
    for name in (
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
        "__matmul__",
        "__rmatmul__",
        "__neg__",
        "__pow__",
        "T",
        "sum",
        "mean",
        "relu",
        "reshape",
        "__getitem__",
    ):
        assert name in Tensor.__dict__, name
    a = pg.ag_tensor([[1.0, 2.0]], dtype="f64")
    np.testing.assert_array_equal((1 - a).numpy(), [[0.0, -1.0]])
    np.testing.assert_array_equal((2 / a).numpy(), [[2.0, 1.0]])
    np.testing.assert_array_equal((a @ a.T).numpy(), [[5.0]])
    assert (a * 3).numpy().tolist() == [[3.0, 6.0]] and (-a)[0, 1].item() == -2.0


def test_op_names_are_passed_not_read_from_the_stack():
    src = "".join(p.read_text() for p in PKG.glob("*.py") if not p.name.startswith("parity"))
    for needle in ("_getframe", "co_name", "caller_op", "inspect."):
        assert needle not in src, needle
    t = pg.ag_tensor([[1.0]])
    t.free()
    for fn, name in (
        (pg.ag_relu, "ag_relu"),
        (pg.ag_neg, "ag_neg"),
        (pg.ag_sum, "ag_sum"),
        (lambda x: x + 1, "ag_add"),
        (pg.backward, "backward"),
    ):
        with pytest.raises(pg.ArgumentError, match=rf"^{name}: tensor handle is empty \(freed\)$"):
            fn(t)
    assert pg.ag_relu.__name__ == "ag_relu" and "ReLU" in pg.ag_relu.__doc__
