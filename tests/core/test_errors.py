"""Bad inputs raise the right typed errors with messages naming the op, shapes and dtypes;
NaN/Inf propagate as IEEE values; empty tensors work where they make sense."""

import math

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr import (
    ArgumentError,
    DTypeError,
    PyggmlrError,
    PyggmlrValueError,
    ShapeError,
    StateError,
)


def test_error_hierarchy():
    assert issubclass(ShapeError, PyggmlrError) and issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, PyggmlrError) and issubclass(DTypeError, TypeError)
    assert issubclass(PyggmlrValueError, ValueError) and issubclass(ArgumentError, TypeError)
    assert issubclass(StateError, PyggmlrError)
    assert issubclass(pg.DeviceError, PyggmlrError)


# ---- shapes ----


def test_matmul_mismatch_names_both_shapes():
    a, b = pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones((4, 5)))
    with pytest.raises(ShapeError) as e:
        pg.ag_matmul(a, b)
    msg = str(e.value)
    assert "ag_matmul" in msg and "[2x3] f32" in msg and "[4x5] f32" in msg


def test_matmul_hint_for_row_major_data():
    W, x = pg.ag_tensor(np.ones((4, 3))), pg.ag_tensor(np.ones((10, 3)))
    with pytest.raises(ShapeError, match="transpose"):
        pg.ag_matmul(W, x)


@pytest.mark.parametrize("op", [pg.ag_add, pg.ag_sub, pg.ag_mul, pg.ag_div])
@pytest.mark.parametrize("sb", [(3, 3), (2, 2), (4, 1), (1, 2)])
def test_binary_no_broadcast(op, sb):
    with pytest.raises(ShapeError) as e:
        op(pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones(sb)))
    assert (
        op.__name__ in str(e.value)
        and "[2x3]" in str(e.value)
        and f"[{sb[0]}x{sb[1]}]" in str(e.value)
    )


@pytest.mark.parametrize(
    "loss", [pg.ag_mse_loss, pg.ag_cross_entropy_loss, pg.ag_softmax_cross_entropy_loss]
)
def test_loss_target_shape_mismatch(loss):
    with pytest.raises(ShapeError) as e:
        loss(pg.ag_tensor(np.ones((3, 2))), pg.ag_tensor(np.ones((2, 3))))
    assert "[3x2]" in str(e.value)


def test_bad_reshape():
    x = pg.ag_tensor(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"ag_reshape.*\[2x3\] f32.*6 elements"):
        pg.ag_reshape(x, 4, 2)  # no recycling as in R
    with pytest.raises(ShapeError):
        pg.ag_reshape(x, 4, -1)  # 6 is not divisible by 4
    with pytest.raises(ShapeError):
        pg.ag_reshape(x, -2, -3)
    with pytest.raises(PyggmlrValueError):
        pg.ag_reshape(x, -1, -1)
    with pytest.raises(PyggmlrValueError):
        pg.ag_reshape(x, 2.5, 2)


@pytest.mark.parametrize("dim, exc", [(0, PyggmlrValueError), (3, PyggmlrValueError),
                                      (-1, PyggmlrValueError), (1.5, PyggmlrValueError),
                                      (True, ArgumentError), ("rows", ArgumentError)])  # fmt: skip
@pytest.mark.parametrize("op", [pg.ag_sum, pg.ag_mean])
def test_bad_dim(op, dim, exc):
    """the one integer rule (issue 29): a bad value, or the wrong kind"""
    with pytest.raises(exc, match="dim"):
        op(pg.ag_tensor(np.ones((2, 3))), dim=dim)


def test_three_d_and_string_arrays():
    with pytest.raises(ShapeError, match="got a 2x2x2 array"):
        pg.ag_tensor(np.zeros((2, 2, 2)))
    with pytest.raises(DTypeError):
        pg.ag_tensor(np.array([["a", "b"]]))
    with pytest.raises(DTypeError):
        pg.ag_param(np.array([1 + 2j]))
    with pytest.raises(DTypeError):
        pg.ag_tensor([[1.0, None]])


def test_clamp_bounds_order():
    with pytest.raises(PyggmlrValueError, match="ag_clamp"):
        pg.ag_clamp(pg.ag_tensor([1.0]), 2, 1)


def test_non_number_scalars():
    x = pg.ag_tensor([1.0])
    for f in (
        lambda: pg.ag_scale(x, "2"),
        lambda: pg.ag_pow(x, None),
        lambda: pg.ag_clamp(x, lo="a"),
    ):
        with pytest.raises(ArgumentError):
            f()


# ---- dtypes ----


@pytest.mark.parametrize("op", [pg.ag_matmul, pg.ag_add, pg.ag_sub, pg.ag_mul, pg.ag_div])
def test_dtype_mismatch(op):
    a = pg.ag_tensor(np.ones((2, 2)), dtype="f32")
    b = pg.ag_tensor(np.ones((2, 2)), dtype="f64")
    with pytest.raises(DTypeError) as e:
        op(a, b)
    assert "f32" in str(e.value) and "f64" in str(e.value) and op.__name__ in str(e.value)


@pytest.mark.parametrize(
    "loss", [pg.ag_mse_loss, pg.ag_cross_entropy_loss, pg.ag_softmax_cross_entropy_loss]
)
def test_loss_dtype_mismatch(loss):
    with pytest.raises(DTypeError, match="f64"):
        loss(pg.ag_tensor(np.full((2, 2), 0.5)), pg.ag_tensor(np.eye(2), dtype="f64"))


def test_numpy_operand_takes_tensor_dtype():
    a = pg.ag_tensor(np.ones((2, 2)), dtype="f64")
    assert pg.ag_add(a, np.ones((2, 2), dtype=np.float32)).dtype == "f64"
    assert pg.ag_add(np.ones((2, 2)), pg.ag_tensor(np.ones((2, 2)))).dtype == "f32"


# ---- backward misuse ----


def test_non_scalar_backward():
    w = pg.ag_param(np.ones((2, 2)))
    with pg.with_grad_tape():
        out = pg.ag_relu(w)
    with pytest.raises(ShapeError, match=r"backward.*1x1.*\[2x2\]"):
        pg.backward(out)
    assert w.grad is None


@pytest.mark.parametrize("bad", [1.0, None, np.ones((1, 1)), "loss"])
def test_backward_of_non_tensor(bad):
    with pytest.raises(ArgumentError, match="backward"):
        pg.backward(bad)


def test_tape_end_without_begin():
    from pyggmlr._core import lib

    assert lib.pg_tape_end() != 0
    with pytest.raises(StateError):
        pg._core.raise_last()


# ---- class ids ----


@pytest.mark.parametrize("ids", [[0, 1, 3], [0, -1, 1], [5, 0, 0]])
def test_class_id_out_of_range(ids):
    z = pg.ag_tensor(np.zeros((3, 3)))
    with pytest.raises(PyggmlrValueError, match=r"class id .* out of range \[0, 3\)"):
        pg.ag_softmax_cross_entropy_loss(z, np.array(ids))


@pytest.mark.parametrize("ids", [[0, 1], [0, 1, 2, 0]])
def test_class_id_count_must_match_columns(ids):
    with pytest.raises(ShapeError, match="one 0-based id per column"):
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.zeros((3, 3))), np.array(ids))


@pytest.mark.parametrize("ids", [[0, 1.5, 2], [0.0, np.nan, 1.0], [np.inf, 0, 0]])
def test_non_integer_class_ids(ids):
    with pytest.raises(
        PyggmlrValueError, match=r"class id (1.5|nan|inf) at position \d is not a whole"
    ):
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.zeros((3, 3))), np.array(ids))


def test_string_class_ids():
    with pytest.raises(ArgumentError):
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.zeros((3, 3))), np.array(["a", "b", "c"]))


def test_bad_target_matrix_shape():
    with pytest.raises(ShapeError):
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.zeros((3, 2))), np.ones((4, 2)))


def test_float_whole_ids_are_accepted():
    z = pg.ag_tensor(np.zeros((3, 2)), dtype="f64")
    a = pg.ag_softmax_cross_entropy_loss(z, np.array([2.0, 0.0])).item()
    assert a == pytest.approx(math.log(3), rel=1e-14)


# ---- NaN / Inf ----


def test_nan_inf_propagate():
    x = pg.ag_tensor([[1.0, np.nan, np.inf, -np.inf]], dtype="f64")
    r = pg.ag_relu(x).numpy()[0]
    assert r[0] == 1 and np.isnan(r[1]) and r[2] == np.inf and r[3] == 0
    s = pg.ag_sigmoid(x).numpy()[0]
    assert np.isnan(s[1]) and s[2] == 1 and s[3] == 0
    assert np.isnan(pg.ag_sum(x).item())
    assert np.isnan(pg.ag_matmul(x, pg.ag_tensor(np.ones((4, 1)), dtype="f64")).item())
    lg = pg.ag_log(pg.ag_tensor([0.0, -1.0], dtype="f64")).numpy()[:, 0]
    assert lg[0] == -np.inf and np.isnan(lg[1])
    assert np.all(np.isnan(pg.ag_softmax(pg.ag_transpose(x)).numpy()))
    assert pg.ag_exp(pg.ag_tensor([1000.0], dtype="f64")).item() == np.inf


def test_nan_through_backward_and_optimizer():
    w = pg.ag_param([[1.0, 2.0]], dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(w, pg.ag_tensor([[np.nan, 1.0]], dtype="f64")))
    g = pg.backward(loss)
    assert np.isnan(loss.item())
    assert np.isnan(g[w][0, 0]) and g[w][0, 1] == 1.0
    opt = pg.optimizer_adam([w], lr=0.1)
    opt.step(g)
    assert np.isnan(w.numpy()[0, 0]) and np.isfinite(w.numpy()[0, 1])
    assert math.isnan(pg.clip_grad_norm([w], g, max_norm=1.0))


def test_nan_in_losses():
    p = pg.ag_tensor([[np.nan], [0.5]], dtype="f64")
    assert np.isnan(pg.ag_mse_loss(p, np.zeros((2, 1))).item())
    assert np.isnan(pg.ag_softmax_cross_entropy_loss(p, [1]).item())


# ---- freed tensors ----


def test_ops_on_freed_tensor():
    t = pg.ag_param(np.ones((2, 2)))
    other = pg.ag_tensor(np.ones((2, 2)))
    t.free()
    t.free()  # idempotent
    for f in (
        lambda: pg.ag_relu(t),
        lambda: pg.ag_add(t, other),
        lambda: pg.ag_add(other, t),
        lambda: pg.ag_matmul(other, t),
        lambda: pg.ag_sum(t),
        lambda: pg.ag_reshape(t, 4, 1),
        lambda: pg.ag_mse_loss(t, other),
        lambda: pg.ag_softmax_cross_entropy_loss(t, [0, 1]),
        lambda: t.shape,
        lambda: t.numpy(),
        lambda: t.grad,
        lambda: pg.backward(t),
        lambda: pg.optimizer_sgd([t]),
        lambda: t + 1,
        lambda: -t,
    ):
        with pytest.raises(ArgumentError, match="freed"):
            f()


def test_free_does_not_break_tape():
    w = pg.ag_param([[1.0, 2.0]], dtype="f64")
    with pg.with_grad_tape():
        h = pg.ag_scale(w, 3.0)
        loss = pg.ag_sum(h)
    h.free()  # the tape keeps its own reference
    np.testing.assert_array_equal(pg.backward(loss)[w], [[3.0, 3.0]])


# ---- empty tensors ----


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty_tensors_elementwise_and_sum(shape):
    e = pg.ag_tensor(np.zeros(shape), dtype="f64")
    assert e.shape == shape and e.numpy().shape == shape
    assert pg.ag_relu(e).shape == shape
    assert pg.ag_add(e, e).shape == shape
    assert pg.ag_mul(e, pg.ag_tensor([[2.0]], dtype="f64")).shape == shape
    assert pg.ag_sum(e).item() == 0.0
    assert pg.ag_transpose(e).shape == shape[::-1]
    assert pg.ag_sum(e, 1).shape == (shape[0], 1)
    assert pg.ag_sum(e, 2).shape == (1, shape[1])
    w = pg.ag_param(np.zeros(shape), dtype="f64")
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_exp(w))
    assert pg.backward(loss)[w].shape == shape


def test_empty_matmul_is_zeros():
    out = pg.ag_matmul(pg.ag_tensor(np.zeros((2, 0))), pg.ag_tensor(np.zeros((0, 3))))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_losses_on_empty_input_raise(shape):
    e = pg.ag_tensor(np.zeros(shape), dtype="f64")
    for loss in (pg.ag_mse_loss, pg.ag_cross_entropy_loss, pg.ag_softmax_cross_entropy_loss):
        with pytest.raises(ShapeError, match="empty"):
            loss(e, pg.ag_tensor(np.zeros(shape), dtype="f64"))
    with pytest.raises(ShapeError, match="empty"):
        pg.ag_softmax_cross_entropy_loss(e, np.zeros(shape[1], dtype=np.int64))


def test_empty_from_list():
    assert pg.ag_tensor([]).shape == (0, 1)


# ---- optimizer misuse ----


def test_optimizer_grad_shape_mismatch():
    w = pg.ag_param(np.ones((2, 2)))
    other = pg.ag_param(np.ones((3, 1)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(other)
    g = pg.backward(loss)
    opt = pg.optimizer_sgd([w])
    with pytest.raises(
        pg.StateError, match="no gradient for any"
    ):  # w has no entry in the map: nothing to do
        opt.step(g)
    np.testing.assert_array_equal(w.numpy(), np.ones((2, 2)))


def test_clip_negative_max_norm():
    w = pg.ag_param([[1.0]])
    with pytest.raises(PyggmlrValueError):
        pg.clip_grad_norm([w], None, max_norm=-1)


def test_messages_do_not_leak_between_calls():
    with pytest.raises(ShapeError):
        pg.ag_matmul(pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones((2, 3))))
    # a later successful call must not raise the stale error
    assert pg.ag_matmul(pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones((3, 1)))).shape == (
        2,
        1,
    )
    assert pg._core.lib.pg_last_status() == 0
