"""Fused kernels (ag_linear's one-node linear, softmax-CE on an ids tensor) and static graphs
(ag_compile): the same numbers as the eager ops, bit for bit."""
import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib
from pyggmlr.errors import PyggmlrValueError, ShapeError
from pyggmlr.ops import _linear


def _grads(loss, *ts):
    g = pg.backward(loss)
    return [g[t] for t in ts]


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_fused_linear_equals_unfused_bitwise(act, dtype, rng):
    W0, b0, x0 = rng.normal(size=(7, 5)), rng.normal(size=(7, 1)), rng.normal(size=(5, 9))
    res = []
    for fused in (False, True):
        W, b, x = pg.ag_param(W0, dtype=dtype), pg.ag_param(b0, dtype=dtype), pg.ag_param(x0, dtype=dtype)
        with pg.with_grad_tape():
            if fused:
                h = _linear(W, x, b, {None: -1, "relu": lib.PG_RELU, "sigmoid": lib.PG_SIGMOID, "tanh": lib.PG_TANH}[act])
            else:
                h = pg.ag_add(pg.ag_matmul(W, x), b)
                h = {None: lambda z: z, "relu": pg.ag_relu, "sigmoid": pg.ag_sigmoid, "tanh": pg.ag_tanh}[act](h)
            loss = pg.ag_sum(pg.ag_mul(h, h))
        res.append([h.numpy()] + _grads(loss, W, b, x))
    for a, b in zip(*res):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_fused_linear_gradcheck(f64, rng):
    W = pg.ag_param(rng.normal(size=(4, 3)))
    b = pg.ag_param(rng.normal(size=(4, 1)))
    x = pg.ag_param(rng.normal(size=(3, 5)))
    assert pg.ag_gradcheck(lambda d: pg.ag_sum(pg.ag_mul(_linear(d["W"], d["x"], d["b"], lib.PG_TANH), 1.5)), {"W": W, "x": x, "b": b}, quiet=True)


def test_fused_linear_shape_errors():
    W, x = pg.ag_param(np.ones((4, 3))), pg.ag_tensor(np.ones((2, 5)))
    with pytest.raises(ShapeError, match=r"ag_linear: W is \[4x3\] f32 and x is \[2x5\] f32"):
        _linear(W, x, None)
    with pytest.raises(ShapeError, match=r"b must be \[4x1\]"):
        _linear(W, pg.ag_tensor(np.ones((3, 5))), pg.ag_param(np.ones((3, 1))))


def test_ag_linear_layer_records_one_node(rng):
    lin = pg.ag_linear(3, 4, "relu")
    with pg.with_grad_tape():
        h = lin.forward(pg.ag_tensor(rng.normal(size=(3, 2))))
    assert h.op == "linear" and lib.pg_tape_nodes() == 1


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_softmax_ce_ids_tensor_equals_ids_array(dtype, rng):
    z0 = rng.normal(size=(4, 6))
    ids = np.array([0, 3, 1, 1, 2, 3])
    res = []
    for target in (ids, pg.ag_tensor(ids.reshape(1, -1), dtype=dtype), pg.ag_tensor(ids, dtype=dtype),
                   pg.ag_tensor(np.eye(4)[:, ids], dtype=dtype)):
        z = pg.ag_param(z0, dtype=dtype)
        with pg.with_grad_tape():
            loss = pg.ag_softmax_cross_entropy_loss(z, target)
        res.append((loss.numpy(), pg.backward(loss)[z]))
    for l, g in res[1:]:
        assert np.array_equal(l, res[0][0]) and np.array_equal(g, res[0][1])


def test_softmax_ce_ids_tensor_errors():
    z = pg.ag_param(np.zeros((3, 2)))
    with pytest.raises(PyggmlrValueError, match=r"class id 3 at position 1 .* \[0, 3\)"):
        pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor([[0, 3]]))
    with pytest.raises(PyggmlrValueError, match="whole number"):
        pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor([[0, 1.5]]))
