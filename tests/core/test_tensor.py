"""Tensors: construction from numpy / lists / scalars, dtypes, ids, data access, repr, devices."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr import DeviceError, DTypeError, ShapeError

# ---- construction ----


@pytest.mark.parametrize("order", ["C", "F"])
def test_from_numpy_any_order(order):
    a = np.array(np.arange(6.0).reshape(2, 3), order=order)
    t = pg.ag_tensor(a)
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_non_contiguous_slices():
    base = np.arange(40.0).reshape(5, 8)
    for view in (base[::2, 1::3], base[1:4, ::-1], base[::-1, ::-2], base.T[::3, ::2], base[:, 3]):
        t = pg.ag_tensor(view, dtype="f64")
        expect = view.reshape(-1, 1) if view.ndim == 1 else view
        np.testing.assert_array_equal(t.numpy(), expect)


def test_negative_strides_f32_source():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1, ::-1]
    np.testing.assert_array_equal(pg.ag_tensor(a).numpy(), a)


@pytest.mark.parametrize(
    "dt",
    [
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint32,
        np.float16,
        np.float32,
        np.float64,
    ],
)
def test_numeric_dtypes_convert(dt):
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=dt)
    t = pg.ag_tensor(a, dtype="f64")
    assert t.dtype == "f64"
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float64))


def test_bool_array():
    t = pg.ag_tensor(np.array([[True, False], [False, True]]))
    np.testing.assert_array_equal(t.numpy(), [[1, 0], [0, 1]])


def test_large_int64_values_are_converted_not_truncated():
    t = pg.ag_tensor(np.array([2**40, -(2**40)], dtype=np.int64), dtype="f64")
    np.testing.assert_array_equal(t.numpy()[:, 0], [2.0**40, -(2.0**40)])


def test_lists_scalars_and_vectors():
    assert pg.ag_tensor(3.5).shape == (1, 1)
    assert pg.ag_tensor(3.5).item() == 3.5
    assert pg.ag_tensor(7).numpy()[0, 0] == 7
    v = pg.ag_tensor([1, 2, 3])
    assert v.shape == (3, 1)  # an R vector becomes an [n, 1] column
    np.testing.assert_array_equal(v.numpy()[:, 0], [1, 2, 3])
    np.testing.assert_array_equal(pg.ag_tensor([[1, 2], [3, 4]]).numpy(), [[1, 2], [3, 4]])
    assert pg.ag_tensor(np.arange(5)).shape == (5, 1)


def test_from_tensor_copies():
    a = pg.ag_tensor([[1.0, 2.0]], dtype="f64")
    b = pg.ag_tensor(a, dtype="f64")
    assert b.dtype == "f64" and b.id != a.id
    b.data = [[5.0, 6.0]]
    np.testing.assert_array_equal(a.numpy(), [[1, 2]])
    # no dtype: the default dtype, as R's ag_tensor (ggmlR reads the default at call time)
    assert pg.ag_tensor(a).dtype == pg.ag_default_dtype() == "f32"
    prev = pg.ag_dtype("f64")
    try:
        assert pg.ag_tensor(pg.ag_tensor([[1.0]], dtype="f32")).dtype == "f64"
        assert pg.ag_param(pg.ag_tensor([[1.0]], dtype="f32")).dtype == "f64"
    finally:
        pg.ag_dtype(prev)


def test_tensor_class_constructor():
    t = pg.Tensor([[1.0, 2.0]], requires_grad=True)
    assert t.requires_grad and t.shape == (1, 2)


def test_f32_rounding_on_input():
    t = pg.ag_tensor([0.1])
    assert t.numpy().dtype == np.float32
    assert t.numpy()[0, 0] == np.float32(0.1)
    assert pg.ag_tensor([0.1], dtype="f64").numpy()[0, 0] == 0.1


def test_param_and_tensor_flags():
    t = pg.ag_tensor([[1.0]])
    p = pg.ag_param([[1.0]])
    assert not t.requires_grad and t.grad is None and t.is_leaf
    assert p.requires_grad and p.grad is None
    t.requires_grad = True
    assert t.requires_grad
    assert pg.is_ag_tensor(p) and not pg.is_ag_tensor(np.zeros(1))


# ---- dtypes ----


def test_dtype_default_and_switch():
    assert pg.ag_default_dtype() == "f32"
    assert pg.ag_tensor([1.0]).dtype == "f32"
    prev = pg.ag_dtype("f64")
    assert prev == "f32"
    assert pg.ag_default_dtype() == "f64"
    assert pg.ag_tensor([1.0]).dtype == "f64"
    assert pg.ag_param([1.0]).dtype == "f64"
    assert pg.ag_tensor([1.0], dtype="f32").dtype == "f32"
    assert pg.ag_dtype("f32") == "f64"
    assert pg.ag_tensor([1.0], dtype=np.float64).dtype == "f64"


@pytest.mark.parametrize("bad", ["f16", "bf16"])
def test_half_dtypes_raise(bad):
    with pytest.raises(DTypeError):
        pg.ag_dtype(bad)
    with pytest.raises(DTypeError):
        pg.ag_tensor([1.0], dtype=bad)
    assert pg.ag_default_dtype() == "f32"


def test_unknown_dtype_raises():
    with pytest.raises(DTypeError):
        pg.ag_tensor([1.0], dtype="int8")
    assert issubclass(DTypeError, TypeError)


# ---- ids ----


def test_ids_increase():
    a = pg.ag_tensor([1.0])
    b = pg.ag_param([1.0])
    c = pg.ag_add(a, b)
    assert 0 < a.id < b.id < c.id
    assert isinstance(a.id, int)


# ---- data access ----


def test_numpy_is_a_copy_and_data_assign_writes_in_place():
    t = pg.ag_param([[1.0, 2.0], [3.0, 4.0]], dtype="f64")
    tid = t.id
    a = t.numpy()
    a[0, 0] = 100
    assert t.numpy()[0, 0] == 1.0
    t.data = np.array([[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal(t.data, [[5, 6], [7, 8]])
    assert t.id == tid and t.requires_grad
    t.data = np.array([[1, 2], [3, 4]], dtype=np.int32).T  # non-contiguous int source
    np.testing.assert_array_equal(t.numpy(), [[1, 3], [2, 4]])
    t.data = pg.ag_tensor([[9.0, 9.0], [9.0, 9.0]])
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 9.0))
    with pytest.raises(ShapeError):
        t.data = np.zeros((3, 2))


def test_element_write_via_data():
    t = pg.ag_tensor(np.zeros((2, 3)), dtype="f64")
    a = t.data
    a[1, 2] = 4.5
    t.data = a
    assert t.numpy()[1, 2] == 4.5


def test_grad_property_and_setter():
    w = pg.ag_param([[1.0, 2.0]], dtype="f64")
    assert w.grad is None
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(w, 3.0))
    pg.backward(loss)
    np.testing.assert_array_equal(w.grad, [[3.0, 3.0]])
    assert pg.ag_grad(w) is not None
    w.grad = None
    assert w.grad is None
    w.grad = [[1.0, -1.0]]
    np.testing.assert_array_equal(w.grad, [[1.0, -1.0]])
    with pytest.raises(ShapeError):
        w.grad = [[1.0, 2.0, 3.0]]


def test_item_float_tolist_len():
    t = pg.ag_tensor([[2.5]])
    assert t.item() == 2.5 and float(t) == 2.5
    m = pg.ag_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert m.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert len(m) == 3 and m.size == 6 and m.nrow == 3 and m.ncol == 2
    with pytest.raises(ShapeError):
        m.item()
    np.testing.assert_array_equal(np.asarray(m), m.numpy())


# ---- repr ----


def test_repr_header():
    p = pg.ag_param([[1.0, 2.0]])
    r = repr(p)
    assert r.splitlines()[0] == "ag_tensor [1x2] (requires_grad)"
    assert "grad:" not in r
    t = pg.ag_tensor(np.zeros((3, 4)))
    assert repr(t).splitlines()[0] == "ag_tensor [3x4]"
    d = pg.ag_param([[1.0]], dtype="f64")
    assert repr(d).splitlines()[0] == "ag_tensor [1x1] [f64] (requires_grad)"
    assert str(t) == repr(t)


def test_repr_shows_grad_and_values():
    w = pg.ag_param([[1.5, -2.0]], dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(w, 4.0))
    pg.backward(loss)
    lines = repr(w).splitlines()
    assert "1.5" in lines[1] and "-2." in lines[1]
    assert lines[2] == "  grad:"
    assert "4." in lines[3]


def test_repr_of_freed_tensor():
    t = pg.ag_tensor([1.0])
    t.free()
    assert "freed" in repr(t)


# ---- devices ----


def test_device_cpu_and_gpu():
    assert pg.ag_default_device() == "cpu"
    assert pg.ag_device("cpu") == "cpu"
    with pytest.raises(DeviceError):
        pg.ag_device("gpu")
    assert pg.ag_default_device() == "cpu"
    with pytest.raises(DeviceError):
        pg.ag_tensor([1.0], device="gpu")
    assert pg.ag_tensor([1.0], device="cpu").device == "cpu"
    with pytest.raises(ValueError):
        pg.ag_device("tpu")


def test_to_device_same_object():
    t = pg.ag_param([[1.0, 2.0]])
    assert pg.ag_to_device(t, "cpu") is t
    with pytest.raises(DeviceError):
        pg.ag_to_device(t, "gpu")
    with pytest.raises(TypeError):
        pg.ag_to_device(np.zeros(2), "cpu")


def test_numpy_view_shares_memory_and_keeps_the_tensor_alive():
    import gc

    t = pg.ag_param(np.arange(6.0).reshape(2, 3), dtype="f64")
    v = t.numpy(copy=False)
    assert v.dtype == np.float64 and v.shape == (2, 3) and v.flags["F_CONTIGUOUS"]
    np.testing.assert_array_equal(v, np.arange(6.0).reshape(2, 3))
    # an optimizer step updates the tensor in place: the view sees it, a copy does not
    c = t.numpy()
    opt = pg.optimizer_sgd([t], lr=0.5)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(t, t))
    opt.step(pg.backward(loss))
    np.testing.assert_array_equal(v, c - 0.5 * 2 * c)
    np.testing.assert_array_equal(c, np.arange(6.0).reshape(2, 3))
    v[1, 2] = 42.0  # writes reach the tensor
    assert t.numpy()[1, 2] == 42.0
    # the view keeps the core tensor alive after the Python handle is gone
    del t, opt, loss
    pg.ag_tape_clear()  # the tape's nodes held the tensor too
    gc.collect()
    before = pg.ag_live_objects()
    assert v[1, 2] == 42.0
    del v, c
    gc.collect()
    assert pg.ag_live_objects() == before - 2  # the tensor and its accumulated .grad
    # numpy's protocol: np.asarray(t, copy=False) is the view; a dtype change cannot be a view
    t32 = pg.ag_tensor(np.ones((3, 2)))
    a = np.asarray(t32, copy=False)
    a[0, 0] = 5.0
    assert t32.numpy()[0, 0] == 5.0
    with pytest.raises(ValueError, match="cannot have dtype float64"):
        np.asarray(t32, dtype=np.float64, copy=False)
    assert np.asarray(t32, dtype=np.float64).dtype == np.float64  # a converted copy
    assert pg.ag_tensor(np.zeros((0, 3))).numpy(copy=False).shape == (0, 3)
