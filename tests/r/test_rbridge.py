"""The rpy2 bridge (pyggmlr.r): conversions keep layout, dtype and values; call/run work;
R errors become Python exceptions with R's message; tensors crossing languages are copies,
so either side can be garbage-collected first.

Skipped only when R or rpy2 is absent; the R package must be installed
(``bash scripts/install-r-package.sh``), otherwise these tests fail."""

import gc
import subprocess
import sys

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

import pyggmlr as pg  # noqa: E402

pytestmark = pytest.mark.parity


@pytest.fixture(scope="module", autouse=True)
def _started():
    r.start()


def counts():
    """(Python core live objects, R core live objects) after both garbage collectors ran."""
    gc.collect()
    pg.ag_tape_clear()
    r.call("ag_tape_clear")
    return pg.ag_live_objects(), r.r_live_objects()


def test_import_pyggmlr_does_not_import_rpy2():
    code = (
        "import sys, pyggmlr; assert 'rpy2' not in sys.modules and 'pyggmlr.r' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_same_blas_on_both_sides():
    assert r.sync_blas() == pg.ag_blas_name()
    assert r.call("ag_blas_name") == pg.ag_blas_name()


@pytest.mark.parametrize("order", ["C", "F"])
def test_matrix_round_trip_keeps_layout(order):
    a = np.array(np.arange(1.0, 13.0).reshape(3, 4) / 7.0, order=order)
    assert r.run("dim(x)", x=a).tolist() == [3, 4]
    assert r.run("x[2, 3]", x=a) == a[1, 2]  # element (i, j) is the same element
    back = r.from_r(r.to_r(a))
    assert back.flags.f_contiguous and back.dtype == np.float64
    assert np.array_equal(back, a)
    assert np.array_equal(r.run("t(x)", x=a), a.T)


def test_vectors_ints_bools_scalars_lists():
    assert r.run("is.null(dim(v)) && length(v) == 3", v=np.array([1.5, 2.0, 3.0]))
    ints = r.run("m * 2L", m=np.array([[1, 2], [3, 4]]))
    assert ints.dtype == np.int32 and ints.tolist() == [[2, 4], [6, 8]]
    assert r.run("storage.mode(m)", m=np.array([[1, 2]])) == "integer"
    assert r.run("b", b=np.array([[True, False]])).dtype == bool
    assert r.run("x + 1", x=2.5) == 3.5 and r.run("s", s="abc") == "abc" and r.run("NULL") is None
    out = r.run("list(a = 1, b = list(2, 'x'), c = c(TRUE, FALSE))")
    assert out["a"] == 1.0 and out["b"] == [2.0, "x"] and out["c"].tolist() == [True, False]
    assert r.run("names(l)", l={"p": 1, "q": [1, 2]}) == ["p", "q"]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_tensor_round_trip_keeps_dtype_and_bits(dtype, rng):
    vals = rng.standard_normal((3, 5)) / 3.0
    t = pg.ag_param(vals, dtype=dtype)
    rt = r.to_r_tensor(t)
    assert rt.is_tensor() and rt.dtype == dtype and rt.requires_grad is True
    assert r.run("dim(t)", t=rt).tolist() == [3, 5]
    back = r.from_r(rt)
    assert isinstance(back, pg.Tensor) and back.dtype == dtype and back.requires_grad
    assert back.numpy().dtype == t.numpy().dtype and np.array_equal(back.numpy(), t.numpy())
    # a Python tensor given to run()/call() arrives as an R ag_tensor of its dtype
    assert r.run("c(is_ag_tensor(t), t$dtype)", t=t) == ["TRUE", dtype]
    assert r.from_r(r.to_r_tensor(vals.astype(np.float32))).dtype == "f32"
    assert r.from_r(r.to_r_tensor(vals)).dtype == "f64"
    m = r.to_r(t)  # to_r gives the values as a plain R matrix
    assert not m.is_tensor()
    assert r.run("is.matrix(m) && !is_ag_tensor(m)", m=m)


def test_r_created_tensor_becomes_python_tensor():
    t = r.run("ag_param(matrix(c(1/3, 2, 3, 4), 2), dtype = 'f32')")
    assert isinstance(t, pg.Tensor) and t.dtype == "f32" and t.requires_grad
    assert t.numpy()[0, 0] == np.float32(1 / 3) and t.numpy()[1, 1] == 4
    t64 = r.run("ag_tensor(matrix(c(1/3, 2), 1), dtype = 'f64')")
    assert t64.dtype == "f64" and not t64.requires_grad and t64.numpy()[0, 0] == 1 / 3


def test_call_and_kwargs_match_python(rng):
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    y = r.call("ag_matmul", pg.ag_tensor(A, dtype="f64"), B)
    assert isinstance(y, r.RObject) and y.is_tensor()
    assert np.array_equal(
        r.from_r(y).numpy(), pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), B).numpy()
    )
    s = r.from_r(r.call("ag_sum", pg.ag_tensor(A, dtype="f64"), dim=1))
    assert s.shape == (3, 1) and np.allclose(s.numpy()[:, 0], A.sum(axis=1), rtol=0, atol=1e-14)
    assert (
        r.call("paste", "a", "b", sep="-") == "a-b"
    )  # non-package names come from R's search path


def test_objects_stay_in_r_and_can_be_driven(rng):
    """An R optimizer driven from Python through RObject handles (R tape, R backward)."""
    W = r.to_r_tensor(rng.standard_normal((2, 3)), requires_grad=True)
    w0 = W.data
    opt = r.call("optimizer_sgd", {"W": W}, lr=0.5)
    assert isinstance(opt, r.RObject) and opt.lr == 0.5
    opt.lr = 0.25  # active binding in the R environment
    assert opt.lr == 0.25
    loss = r.tape(lambda: r.call("ag_sum", r.call("ag_mul", W, W)))
    grads = r.call("backward", loss)
    g = r.call("get0", str(int(W.id)), grads)
    assert np.array_equal(g, 2 * w0)
    opt.step(grads)
    assert np.array_equal(W.data, w0 - 0.25 * (2 * w0))
    # an R tensor's fields are written through its `[[<-` method, into the core
    W.data = np.ones((2, 3))
    assert np.array_equal(W.data, np.ones((2, 3)))
    W.requires_grad = False
    assert W.requires_grad is False
    with pytest.raises(r.RError, match="read-only"):
        W.id = 3
    assert "data" in W.names() and "grad" in W.names()


def test_run_is_local_and_sees_inputs():
    before = r.run("ls(globalenv(), all.names = TRUE)")
    out = r.run("z <- x * 2\nzz <- z + 1\nzz", x=np.array([[1.0, 2.0]]))
    assert out.tolist() == [[3.0, 5.0]]
    assert r.run("ls(globalenv(), all.names = TRUE)") == before
    assert r.run("exists('z') || exists('x')") is False


def test_conversion_is_not_activated_globally():
    import rpy2.robjects as ro

    r.run("1")
    with pytest.raises(NotImplementedError):
        ro.conversion.get_conversion().py2rpy(np.zeros((2, 2)))


def test_r_errors_become_python_exceptions_with_rs_message():
    with pytest.raises(
        r.RError, match=r"ag_matmul: A is \[2x3\] f64 and B is \[2x1\].*ncol\(A\) = 3"
    ) as shape:
        r.call("ag_matmul", pg.ag_tensor(np.ones((2, 3)), dtype="f64"), np.ones((2, 1)))
    # the condition's class vector comes along (the parity tier compares it with Python's type)
    assert shape.value.r_class[:2] == ("pyggmlr_shape_error", "pyggmlr_error")
    with pytest.raises(r.RError, match="^my own message$") as ei:
        r.run("f <- function() stop('my own message'); f()")
    assert "f()" in ei.value.r_call
    assert ei.value.r_class == ("simpleError", "error", "condition")
    with pytest.raises(r.RError, match="no_such_function"):
        r.call("no_such_function")
    with pytest.raises(r.RError, match="object 'undefined_var' not found"):
        r.run("undefined_var + 1")
    assert isinstance(ei.value, pg.PyggmlrError)


def test_tape_propagates_python_errors_and_closes_rs_scope():
    W = r.to_r_tensor(np.ones((2, 2)), requires_grad=True)

    def bad():
        r.call("ag_relu", W)
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        r.tape(bad)
    # the R scope was closed: a new tape records afresh and backward works
    loss = r.tape(lambda: r.call("ag_sum", W))
    g = r.call("backward", loss)
    assert np.array_equal(r.call("get0", str(int(W.id)), g), np.ones((2, 2)))


# ---- lifetime: copies across languages, either side collected first -------------------------


def test_python_first_then_r(rng):
    py0, r0 = counts()
    vals = rng.standard_normal((4, 3))
    t = pg.ag_param(vals, dtype="f64")
    rt = r.to_r_tensor(t)
    del t
    gc.collect()  # the Python tensor is gone ...
    assert pg.ag_live_objects() == py0
    s = r.call("ag_sum", rt)  # ... the R copy still works
    assert r.from_r(s).item() == pytest.approx(vals.sum(), abs=1e-12)
    assert counts()[1] > r0
    del rt, s
    assert counts() == (py0, r0)


def test_r_first_then_python():
    py0, r0 = counts()
    rt = r.run("ag_param(matrix(1:6 / 4, 2), dtype = 'f32')")  # converted: a Python copy
    held = r.run(
        "ag_tensor(matrix(1:4, 2))",
    )
    assert counts()[1] == r0  # R's temporaries are collectable once converted
    assert isinstance(rt, pg.Tensor) and isinstance(held, pg.Tensor)
    y = pg.ag_sum(pg.ag_mul(rt, rt))  # Python uses its copy after R collected the original
    assert y.item() == pytest.approx(sum((i / 4) ** 2 for i in range(1, 7)))
    del rt, held, y
    assert counts() == (py0, r0)


def test_handles_in_both_languages_any_order(rng):
    py0, r0 = counts()
    t = pg.ag_param(rng.standard_normal((3, 3)), dtype="f64")
    rt = r.to_r_tensor(t)
    opt = r.call("optimizer_adam", [rt], lr=0.1)
    loss = r.tape(lambda: r.call("ag_mean", r.call("ag_mul", rt, t)))  # t arrives as a copy
    grads = r.call("backward", loss)
    back = r.from_r(rt)
    opt.step(grads)
    assert not np.array_equal(r.from_r(rt).numpy(), back.numpy())  # R updated its tensor only
    assert np.array_equal(back.numpy(), t.numpy())  # the copies did not move
    rt = loss = None  # R handles first (opt and grads still hold R objects) ...
    r.r_gc()
    t = None
    gc.collect()
    assert np.isfinite(back.numpy()).all()
    del opt, grads  # ... then the rest
    assert counts() != (py0, r0)  # `back` is still alive in Python
    del back
    assert counts() == (py0, r0)


def test_class_ids_as_a_one_d_r_array(rng):
    """rpy2's numpy converter (and R's as.array) make 1-D R arrays (a dim of length 1): R's
    ag_softmax_cross_entropy_loss reads them as class ids, like Python (bit-identical)."""
    from rpy2.robjects import default_converter, numpy2ri
    from rpy2.robjects.conversion import localconverter

    ids = np.array([2, 0, 1, 1], dtype=np.int32)
    with localconverter(default_converter + numpy2ri.converter) as cv:
        rids = r.RObject(cv.py2rpy(ids))
    assert r.run("length(dim(a))", a=rids) == 1
    z = rng.standard_normal((3, 4))
    want = pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(z, dtype="f64"), ids).numpy()
    got = r.from_r(r.call("ag_softmax_cross_entropy_loss", pg.ag_tensor(z, dtype="f64"), rids))
    assert got.numpy().tobytes() == want.tobytes()
    got = r.run(
        "ag_softmax_cross_entropy_loss(z, as.array(as.double(i)))",
        z=pg.ag_tensor(z, dtype="f64"),
        i=ids,
    )
    assert got.numpy().tobytes() == want.tobytes()
