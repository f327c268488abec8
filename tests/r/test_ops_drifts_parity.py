"""Ops that behaved differently in Python and R (found by calling each op in both languages with
ordinary and hostile values), now alike: a loss's plain pred takes the target tensor's dtype
(R refused it), a weighted loss's plain operands the weight tensor's (Python refused them),
ag_tensor / ag_param of a tensor default to the default dtype (Python kept the source's), the
selection ops name themselves in a conversion error (Python did not), a 1x1 tensor or matrix
is not a number (Python took the tensor, R the matrix), a 1-list is a conv size and a list an
input_shape of the pooling ops, ag_reshape's pair as an array and its check order, unary plus,
and one text for assigning data of the wrong shape."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_M = np.array([[0.25, 0.5], [1.0, 2.0]])
_R_M = "M <- matrix(c(0.25, 1, 0.5, 2), 2)\n"


def _r_outcome(expr):
    """(dtype or error class, value or message) of an R expression, as _py_outcome's."""
    return list(r.run(
        _R_M + f"tryCatch({{ v <- {expr}; list(v$dtype, as.vector(v$data)) }},\n"
        "  error = function(e) list(class(e)[1], conditionMessage(e)))"
    ))  # fmt: skip


def _py_outcome(fn):
    try:
        v = fn()
        return [v.dtype, list(np.asarray(v.numpy(), dtype=float).ravel(order="F"))]
    except pg.PyggmlrError as e:
        return [R_CLASS[type(e)], str(e)]


@pytest.mark.parametrize(
    "py, rexpr",
    [
        (lambda: pg.ag_mse_loss(_M * 2, pg.ag_tensor(_M, dtype="f64")),
         "ag_mse_loss(M * 2, ag_tensor(M, dtype = 'f64'))"),
        (lambda: pg.ag_cross_entropy_loss(np.eye(2) * 0.75 + 0.125, pg.ag_tensor(np.eye(2), dtype="f64")),
         "ag_cross_entropy_loss(diag(2) * 0.75 + 0.125, ag_tensor(diag(2), dtype = 'f64'))"),
        (lambda: pg.ag_weighted_mse_loss(_M * 2, _M, pg.ag_tensor(np.ones((2, 2)), dtype="f64")),
         "ag_weighted_mse_loss(M * 2, M, ag_tensor(matrix(1, 2, 2), dtype = 'f64'))"),
        (lambda: pg.ag_tensor(pg.ag_tensor(_M, dtype="f64")), "ag_tensor(ag_tensor(M, dtype = 'f64'))"),
        (lambda: pg.ag_param(pg.ag_tensor(_M, dtype="f64")), "ag_param(ag_tensor(M, dtype = 'f64'))"),
        (lambda: pg.ag_scale(_M, pg.ag_tensor(np.array([[2.0]]))),
         "ag_scale(M, ag_tensor(matrix(2)))"),
        (lambda: pg.ag_scale(_M, np.array([[2.0]])), "ag_scale(M, matrix(2))"),
        (lambda: pg.ag_pow(_M, pg.ag_tensor(np.array([[2.0]]))), "ag_pow(M, ag_tensor(matrix(2)))"),
        (lambda: pg.ag_clamp(_M, np.array([[0.5]])), "ag_clamp(M, matrix(0.5))"),
        (lambda: pg.ag_huber_loss(_M, _M * 2, np.array([[1.0]])), "ag_huber_loss(M, M * 2, matrix(1))"),
        (lambda: pg.ag_softmax_cross_entropy_loss(_M, [0, 1], label_smoothing=np.array([[0.1]])),
         "ag_softmax_cross_entropy_loss(M, c(0, 1), label_smoothing = matrix(0.1))"),
        (lambda: pg.ag_reshape(np.arange(6.0).reshape(2, 3, order="F"), np.array([3, 2])),
         "ag_reshape(matrix(0:5 + 0, 2), array(c(3, 2)))"),
        (lambda: pg.ag_reshape(np.arange(6.0).reshape(2, 3, order="F"), [3]),
         "ag_reshape(matrix(0:5 + 0, 2), 3)"),
        (lambda: pg.ag_reshape(np.arange(6.0).reshape(2, 3, order="F"), ["a", "b", "c"]),
         "ag_reshape(matrix(0:5 + 0, 2), c('a', 'b', 'c'))"),
        (lambda: pg.ag_reshape(np.arange(6.0).reshape(2, 3, order="F"), [1, 2, 3]),
         "ag_reshape(matrix(0:5 + 0, 2), c(1, 2, 3))"),
    ],
)  # fmt: skip
def test_the_same_call_gives_the_same_outcome(py, rexpr):
    got, want = _py_outcome(py), _r_outcome(rexpr)
    if want[0].startswith("pyggmlr_"):  # a refusal: the class in both, the text up to the value
        assert got[0] == want[0], (got, want)
        same = [t.split(", got ")[0].replace("c(nrow", "(nrow") for t in (got[1], want[1])]
        assert same[0] == same[1], (got, want)  # R writes a vector c(...)
    else:
        assert got[0] == want[0] and got[1] == list(np.atleast_1d(want[1])), (got, want)


def test_selection_ops_name_themselves_in_a_conversion_error():
    for fn in ("ag_argmax", "ag_sample_categorical"):
        with pytest.raises(pg.PyggmlrError) as e:
            getattr(pg, fn)("a")
        got = r.run(f"tryCatch({fn}('a'), error = function(e) conditionMessage(e))")
        assert str(e.value).split(", got ")[0] == got.split(", got ")[0]
        assert str(e.value).startswith(fn + ": expected a numeric matrix")


def test_conv_sizes_and_pooling_shapes_as_lists():
    x = np.arange(18.0).reshape(9, 2) / 10
    w = np.linspace(-1, 1, 8).reshape(2, 4)  # 2 filters of 1 x 2 x 2
    py = pg.ag_conv2d_op(x, w, input_shape=(1, 3, 3), stride=[2]).numpy()
    py_pool = pg.ag_avg_pool2d_op(np.arange(32.0).reshape(16, 2), 2, input_shape=[1, 4, 4]).numpy()
    got = r.run(
        "x <- matrix(0:17 / 10, 9, byrow = TRUE); w <- matrix(seq(-1, 1, length.out = 8), 2, byrow = TRUE)\n"
        "list(ag_conv2d_op(x, w, input_shape = c(1, 3, 3), stride = list(2))$data,\n"
        "     ag_avg_pool2d_op(matrix(0:31 + 0, 16, byrow = TRUE), 2, input_shape = list(1, 4, 4))$data)"
    )  # fmt: skip
    assert np.array_equal(py, np.asarray(got[0]))
    assert np.array_equal(py_pool, np.asarray(got[1]))
    assert np.array_equal(py, pg.ag_conv2d_op(x, w, input_shape=(1, 3, 3), stride=2).numpy())


def test_unary_plus_and_the_wrong_shape_of_data():
    a = pg.ag_tensor(_M)
    assert +a is a
    with pytest.raises(pg.ShapeError) as e:
        a.data = np.ones((2, 3))
    got = r.run(
        _R_M + "a <- ag_tensor(M); stopifnot(identical(+a, a))\n"
        "tryCatch(a$data <- matrix(1, 2, 3), error = function(e) conditionMessage(e))"
    )
    assert str(e.value) == got == "assigning data: tensor is [2x2] f32 but the new value is [2x3]"
