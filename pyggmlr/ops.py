"""Differentiable ops: thin calls into the C core (forward and backward live there).

Operands may be tensors or plain numpy arrays / lists / scalars (``ArrayLike``), which become
constants of the other operand's dtype and never receive gradients. Every tensor is a matrix
[rows, cols] = [features, batch] (column-major, R's ``dim()``); 1-D data is a column [n, 1].

Errors common to all ops: ShapeError when shapes do not fit (the message names the op and
both shapes), DTypeError when two tensors have different dtypes (f32 vs f64) or data is not
numeric, ArgumentError when an argument is of the wrong kind (a freed tensor, a string for a
number)."""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._args import INT_MAX, as_float, as_numeric, asarray, check_int, is_real, plain, show
from ._core import ffi, lib
from .errors import ArgumentError, PyggmlrValueError, ShapeError
from .tensor import ArrayLike, Tensor, _as_tensor, _wrap

__all__ = [
    "ag_matmul",
    "ag_add",
    "ag_sub",
    "ag_mul",
    "ag_div",
    "ag_scale",
    "ag_neg",
    "ag_relu",
    "ag_sigmoid",
    "ag_tanh",
    "ag_gelu",
    "ag_softmax",
    "ag_log",
    "ag_exp",
    "ag_pow",
    "ag_clamp",
    "ag_sum",
    "ag_mean",
    "ag_transpose",
    "ag_reshape",
    "ag_mse_loss",
    "ag_cross_entropy_loss",
    "ag_softmax_cross_entropy_loss",
]


_NULL = _core.NULL
_raise_last = _core.raise_last
_new_tensor = Tensor.__new__


def _out(p: Any) -> Tensor:
    """_wrap without the extra call: own p as a Tensor, or raise the core's error."""
    if not p:
        _raise_last()
    t = _new_tensor(Tensor)
    t._p = p
    return t


def _pair(a: ArrayLike, b: ArrayLike, op: str) -> Tuple[Tensor, Tensor]:
    if isinstance(a, Tensor):
        return a, (b if isinstance(b, Tensor) else _as_tensor(b, op, a))
    if isinstance(b, Tensor):
        return _as_tensor(a, op, b), b
    return _as_tensor(a, op, None), _as_tensor(b, op, None)


def _unary_arg(x: ArrayLike, op: str) -> Tensor:
    return x if isinstance(x, Tensor) else _as_tensor(x, op, None)


def _binary(fn: Callable[[Any, Any], Any], A: ArrayLike, B: ArrayLike, op: str) -> Tensor:
    """fn(A, B) for two tensors, or after turning data into constants of the other's dtype."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(fn(A._handle(op), B._handle(op)))
    a, b = _pair(A, B, op)
    return _out(fn(a._handle(op), b._handle(op)))


_pg_matmul, _pg_add, _pg_sub, _pg_mul, _pg_div = (
    lib.pg_matmul,
    lib.pg_add,
    lib.pg_sub,
    lib.pg_mul,
    lib.pg_div,
)
_pg_unary = lib.pg_unary


def ag_matmul(A: ArrayLike, B: ArrayLike) -> Tensor:
    """Matrix product A @ B: [m, k] x [k, n] -> [m, n] (also the ``@`` operator).

    Args: A, B: tensors or numeric data (data becomes a constant of the other's dtype).
    Returns: a new tensor [m, n]; gradients g @ B^T into A and A^T @ g into B.
    Raises: ShapeError when ncol(A) != nrow(B) (the message names both shapes and suggests the
    transpose that fits), DTypeError when A and B have different dtypes."""
    return _binary(_pg_matmul, A, B, "ag_matmul")


def ag_add(A: ArrayLike, B: ArrayLike) -> Tensor:
    """Elementwise A + B (also the ``+`` operator).

    Args: A, B: tensors or numeric data; shapes equal, or a size-1 dim (a [r, 1] column, a
    [1, c] row, a [1, 1] scalar) broadcast against the other's.
    Returns: a new tensor of the broadcast shape; gradients are summed back to each shape.
    Raises: ShapeError when the shapes neither match nor broadcast, DTypeError on mixed
    dtypes."""
    return _binary(_pg_add, A, B, "ag_add")


def ag_sub(A: ArrayLike, B: ArrayLike) -> Tensor:
    """Elementwise A - B (also the ``-`` operator), broadcasting size-1 dims as ag_add.

    Args: A, B: tensors or numeric data of equal or broadcastable shapes [rows, cols].
    Returns: a new tensor of the broadcast shape; gradients g into A and -g into B.
    Raises: ShapeError when the shapes do not broadcast, DTypeError on mixed dtypes."""
    return _binary(_pg_sub, A, B, "ag_sub")


def ag_mul(A: ArrayLike, B: ArrayLike) -> Tensor:
    """Elementwise (Hadamard) A * B (also the ``*`` operator), broadcasting as ag_add.

    Args: A, B: tensors or numeric data of equal or broadcastable shapes [rows, cols].
    Returns: a new tensor of the broadcast shape; gradients g * B into A and g * A into B.
    Raises: ShapeError when the shapes do not broadcast, DTypeError on mixed dtypes."""
    return _binary(_pg_mul, A, B, "ag_mul")


def ag_div(A: ArrayLike, B: ArrayLike) -> Tensor:
    """Elementwise A / B (also the ``/`` operator), broadcasting as ag_add; division by 0
    gives inf / nan as IEEE does.

    Args: A, B: tensors or numeric data of equal or broadcastable shapes [rows, cols].
    Returns: a new tensor of the broadcast shape; gradients g / B into A, -g A / B^2 into B.
    Raises: ShapeError when the shapes do not broadcast, DTypeError on mixed dtypes."""
    return _binary(_pg_div, A, B, "ag_div")


def _scalar(v, name, arg):
    if not isinstance(v, (str, bytes, Tensor)):  # a tensor is refused, as R's (float() took it)
        try:
            return as_float(v)  # 10**400 is Inf, as R's 1e400 (it was refused)
        except (TypeError, ValueError):
            pass
    raise ArgumentError(f"{name}: '{arg}' must be a single number, got {show(v)}")  # R's text


def ag_scale(x: ArrayLike, scalar: float) -> Tensor:
    """x * scalar, the scalar a constant (``x * 2.0`` uses it too).

    Args: x: a tensor or numeric data [rows, cols]; scalar: a number.
    Returns: a new tensor of x's shape and dtype; gradient scalar * g.
    Raises: ArgumentError when scalar is not a number."""
    op = "ag_scale"
    x = _unary_arg(x, op)  # keep the (possibly temporary) tensor alive across the C call
    return _wrap(lib.pg_scale(x._handle(op), _scalar(scalar, "ag_scale", "scalar")))


_UNARY_DOC = (
    "\n\nArgs: x: a tensor or numeric data [rows, cols] (data becomes a constant of the"
    " default dtype).\nReturns: a new tensor of x's shape and dtype.\nRaises: DTypeError"
    " when x is not numeric, ArgumentError when x is a freed tensor."
)


def _unary(code: int, name: str, doc: str) -> Callable[[ArrayLike], Tensor]:
    """The elementwise op `name` (pg_unary with code); its errors name it."""

    def op(x: ArrayLike) -> Tensor:
        if x.__class__ is not Tensor:
            x = _as_tensor(x, name, None)
        return _out(_pg_unary(code, x._handle(name)))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc + _UNARY_DOC
    return op


# one row an op: (C code, name, the first lines of its docstring)
ag_relu = _unary(
    lib.PG_UNARY_OP_RELU,
    "ag_relu",
    "Elementwise max(x, 0) (ReLU); gradient g where x > 0, 0 at x <= 0.",
)
ag_sigmoid = _unary(
    lib.PG_UNARY_OP_SIGMOID,
    "ag_sigmoid",
    "Elementwise logistic s = 1 / (1 + exp(-x)); gradient g s (1 - s).",
)
ag_tanh = _unary(
    lib.PG_UNARY_OP_TANH, "ag_tanh", "Elementwise tanh(x); gradient g (1 - tanh(x)^2)."
)
ag_gelu = _unary(
    lib.PG_UNARY_OP_GELU,
    "ag_gelu",
    "Elementwise exact GELU 0.5 x (1 + erf(x / sqrt(2))) (not the tanh approximation).",
)
ag_softmax = _unary(
    lib.PG_UNARY_OP_SOFTMAX,
    "ag_softmax",
    "Softmax down each column of x [classes, batch] (max-subtracted, so large"
    " logits do not overflow);\neach column of the result sums to 1.",
)
ag_log = _unary(
    lib.PG_UNARY_OP_LOG,
    "ag_log",
    "Elementwise natural log, no clamping: log(0) = -inf, log(x < 0) = nan; gradient g / x.",
)
ag_exp = _unary(
    lib.PG_UNARY_OP_EXP,
    "ag_exp",
    "Elementwise exp(x); gradient g exp(x) (overflow gives inf, as IEEE).",
)
ag_neg = _unary(
    lib.PG_UNARY_OP_NEG,
    "ag_neg",
    "Elementwise negation -x (also the unary minus operator); gradient -g.",
)


def ag_pow(x: ArrayLike, p: float) -> Tensor:
    """Elementwise x ** p for a constant scalar p (also the ``**`` operator).

    Args: x: a tensor or numeric data [rows, cols]; p: a number. As R's ``^`` (ggmlR): a
    fractional p of a negative x, -inf included, gives nan, and -0 counts as 0
    (``(-0) ** 0.5`` is 0); a whole p follows C's pow (``(-inf) ** 3`` is -inf).
    Returns: a new tensor of x's shape; gradient g p x^(p - 1).
    Raises: ArgumentError when p is not a number."""
    op = "ag_pow"
    x = _unary_arg(x, op)
    return _wrap(lib.pg_pow(x._handle(op), _scalar(p, "ag_pow", "p")))


def ag_clamp(x: ArrayLike, lo: float = -np.inf, hi: float = np.inf) -> Tensor:
    """Elementwise min(max(x, lo), hi).

    Args: x: a tensor or numeric data [rows, cols]; lo, hi: numbers (default: unbounded).
    Returns: a new tensor of x's shape; gradient g strictly inside (lo, hi), 0 elsewhere.
    Raises: ArgumentError when lo or hi is not a number."""
    op = "ag_clamp"
    x = _unary_arg(x, op)
    return _wrap(lib.pg_clamp(x._handle(op), _scalar(lo, op, "lo"), _scalar(hi, op, "hi")))


def _dim(dim, name):
    # the one integer rule (the core's, as R's): 1.0 is 1, "a" the wrong kind
    if dim is None:
        return 0
    return check_int(dim, name, "dim", 1, 2, rule="None (all), 1 (per row) or 2 (per column)")


def ag_sum(x: ArrayLike, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Sum of x [rows, cols]: dim=None -> [1, 1]; dim=1 -> per row [rows, 1]; dim=2 -> per
    column [1, cols] (ggmlR's meaning of dim). Results are matrices, so the reduced axis is
    kept with size 1 whatever keepdim says.

    Args: x: a tensor or numeric data; dim: None, 1 or 2; keepdim: accepted for ggmlR
    compatibility, no effect.
    Returns: a new tensor; the gradient broadcasts g back over the summed axis.
    Raises: PyggmlrValueError when dim is not None, 1 or 2."""
    op = "ag_sum"
    x = _unary_arg(x, op)
    return _wrap(lib.pg_sum(x._handle(op), _dim(dim, op)))


def ag_mean(x: ArrayLike, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """Mean of x [rows, cols] with the same dims as ag_sum: dim=None -> [1, 1], dim=1 -> per
    row [rows, 1], dim=2 -> per column [1, cols].

    Args: x: a tensor or numeric data; dim: None, 1 or 2; keepdim: no effect (ggmlR's
    argument).
    Returns: a new tensor; gradient g / n spread over the averaged entries.
    Raises: PyggmlrValueError when dim is not None, 1 or 2."""
    op = "ag_mean"
    x = _unary_arg(x, op)
    return _wrap(lib.pg_mean(x._handle(op), _dim(dim, op)))


def ag_transpose(x: ArrayLike) -> Tensor:
    """Transpose x [r, c] -> [c, r] (also the ``.T`` property); the gradient is transposed back.

    Args: x: a tensor or numeric data.
    Returns: a new tensor [c, r] (a copy, not a view).
    Raises: DTypeError when x is not numeric, ArgumentError when x is a freed tensor."""
    op = "ag_transpose"
    x = _unary_arg(x, op)
    return _wrap(lib.pg_transpose(x._handle(op)))


class _Inferred(int):  # ncol's default -1, told apart from a -1 the caller gives
    def __repr__(self) -> str:
        return "-1"


_NCOL = _Inferred(-1)


def ag_reshape(x: ArrayLike, nrow: Union[int, Sequence[int]], ncol: int = _NCOL) -> Tensor:
    """Column-major refill of x [r, c] to [nrow, ncol], as R's ``dim<-``.

    Args: x: a tensor or numeric data; nrow, ncol: whole numbers, one of them may be -1
    (inferred from x's size); or nrow = (nrow, ncol) as one pair.
    Returns: a new tensor [nrow, ncol] holding x's values in column-major order; the gradient
    is reshaped back to [r, c].
    Raises: ArgumentError when a size is not a number, PyggmlrValueError when it is not a whole
    number or a pair has not 2 entries,
    ShapeError when nrow * ncol != r * c."""
    op = "ag_reshape"
    # ag_reshape(x, (r, c)) as the ggmlR vignette writes it; with ncol given too, a pair is a bad
    # nrow (R's rule: it was ignored for ncol)
    # (R's order: numbers of the wrong count are a bad shape, [3] is 3, anything else a bad nrow)
    if isinstance(nrow, (tuple, list, np.ndarray)) and ncol is _NCOL:
        vals = list(np.ravel(nrow)) if isinstance(nrow, np.ndarray) else list(nrow)
        numeric = all(is_real(v) for v in vals)
        if numeric and len(vals) not in (1, 2):
            raise PyggmlrValueError(
                f"ag_reshape: a shape must be (nrow, ncol), got {plain(nrow)!r}"
            )
        if len(vals) == 2:
            nrow, ncol = vals
        elif numeric:
            nrow = vals[0]
    x = _unary_arg(x, op)
    ncol = -1 if ncol is _NCOL else ncol
    return _wrap(lib.pg_reshape(x._handle(op), _size(nrow, "nrow"), _size(ncol, "ncol")))


def _size(v, arg):
    # R's dims are integers: the same bound in both languages (the one integer rule)
    rule = f"an integer within +/-{INT_MAX} (-1: inferred from x's size)"
    return check_int(v, "ag_reshape", arg, -INT_MAX, INT_MAX, rule=rule)


def ag_mse_loss(pred: ArrayLike, target: ArrayLike) -> Tensor:
    """Mean squared error sum((pred - target)^2) / numel.

    Args: pred: predictions [outputs, batch]; target: the same shape (numeric data becomes a
    constant).
    Returns: a [1, 1] tensor; gradient 2 (pred - target) / numel into pred.
    Raises: ShapeError when the shapes differ, DTypeError on mixed dtypes."""
    op = "ag_mse_loss"
    p, t = _pair(pred, target, op)  # both held: plain pred data is a temporary tensor
    return _wrap(lib.pg_mse_loss(p._handle(op), t._handle(op)))


def ag_cross_entropy_loss(pred: ArrayLike, target: ArrayLike) -> Tensor:
    """Cross-entropy of probabilities: -sum(target * log(clamp(pred, 1e-7, 1 - 1e-7))) / ncol(pred).

    Args: pred: probabilities [classes, batch] (e.g. ag_softmax output); target: one-hot or
    soft labels of the same shape.
    Returns: a [1, 1] tensor (mean over the batch columns); gradient -t / pred / ncol where pred
    lies in [1e-7, 1 - 1e-7], 0 where the clamp holds it (the clamped loss's derivative).
    Raises: ShapeError when the shapes differ, DTypeError on mixed dtypes. For logits use
    ag_softmax_cross_entropy_loss (fused and stable)."""
    op = "ag_cross_entropy_loss"
    p, t = _pair(pred, target, op)  # both held: plain pred data is a temporary tensor
    return _wrap(lib.pg_cross_entropy_loss(p._handle(op), t._handle(op)))


def _class_ids(a, name, what="class ids", dtype=np.int64):
    """0-based integer ids (class ids, embedding rows), flattened column-major, as a contiguous
    int64 array (or float64: whole values, for the core to range-check); a Tensor gives its
    values."""
    a = a.numpy() if isinstance(a, Tensor) else as_numeric(a, name, what)
    if a.dtype.kind == "f":  # NaN, +/-Inf, 2.5: the core's rule and text (as R's .ids)
        f = np.ascontiguousarray(a.reshape(-1, order="F"), dtype=np.float64)
        _core.check(lib.pg_arg_whole_ids(name.encode(), what.encode(),
                                         ffi.cast("double *", f.ctypes.data), f.size))  # fmt: skip
        return f if dtype == np.float64 else f.astype(dtype)  # the checked copy, not a second one
    elif a.dtype.kind == "b":  # True / False are not row or class numbers (issue 19)
        raise ArgumentError(f"{name}: {what} must be 0-based integers, got booleans")
    elif a.dtype.kind not in "iu":
        raise ArgumentError(f"{name}: {what} must be integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1, order="F"), dtype=dtype)


def ag_softmax_cross_entropy_loss(
    logits: ArrayLike,
    target: ArrayLike,
    weight: Optional[ArrayLike] = None,
    ignore_index: Optional[int] = None,
    label_smoothing: float = 0.0,
) -> Tensor:
    """Fused, stable softmax + cross-entropy on logits [classes, batch], with the options of
    torch.nn.functional.cross_entropy (reduction "mean").

    Args: logits: [classes, batch] (unnormalised scores); target: a one-hot / soft-label
    matrix of the logits' shape, or 0-based class ids, one per column (an integer array or
    tensor, a 1-D vector, or a [1, batch] row); weight: None or one weight per class (finite,
    >= 0, a constant); ignore_index: None or a class id whose columns add nothing (any whole
    number, e.g. -100; class ids only, as torch); label_smoothing: in [0, 1), torch's smoothing
    toward the uniform distribution.
    Returns: a [1, 1] tensor. Without options: the mean over the batch of
    -sum(t * log_softmax(logits)) (exact, no clamp); gradient (sum(t) softmax(logits) - t) / batch
    per column. With class ids: sum over the kept columns of (1 - ls) w[y] (-log p[y]) +
    ls / K sum_c w[c] (-log p[c]), divided by the sum of w[y] over the kept columns (their count
    without weight), as torch. A matrix target is torch's probability target: each column's
    -sum_c w[c] ((1 - ls) t[c] + ls / K) log p[c], mean over the columns (not divided by the
    weights). The gradient is the exact derivative in every case.
    Raises: ShapeError when target is neither the logits' shape nor batch ids, or weight has not
    one value per class; PyggmlrValueError for non-integer or out-of-range ids, a negative or
    non-finite weight, label_smoothing outside [0, 1), a non-integer ignore_index or
    ignore_index with a matrix target; ArgumentError for ids of a non-numeric dtype."""
    name = "ag_softmax_cross_entropy_loss"
    logits = _unary_arg(logits, name)  # a plain array is a constant
    lp = logits._handle(name)
    ids = False
    if isinstance(target, Tensor):
        t = target
    else:
        t, ids = _ce_target(target, (lib.pg_tensor_nrow(lp), lib.pg_tensor_ncol(lp)), logits, name)
    if weight is None and ignore_index is None and _is_zero(label_smoothing):
        if ids:  # a vector is class ids, whatever its length (also for [1x1] logits)
            return _out(lib.pg_softmax_ce_loss_ids(lp, t._handle(name)))
        # the core's one rule for a tensor (pg_softmax_ce_loss_any)
        return _out(lib.pg_softmax_ce_loss_any(lp, t._handle(name)))
    w = _loss_weights(weight, logits, name, "weight")
    ls = _loss_number(label_smoothing, name, "label_smoothing", "a number in [0, 1)")
    ig = (
        0.0
        if ignore_index is None
        else _loss_number(ignore_index, name, "ignore_index", "a whole number")
    )
    wh = ffi.NULL if w is None else w._handle(name)
    return _out(
        lib.pg_softmax_ce_loss_opt(lp, t._handle(name), ids, wh, ignore_index is not None, ig, ls)
    )


def _is_zero(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and v == 0


def _loss_number(v, op: str, arg: str, rule: str) -> float:
    """A loss's number option goes to the core, which checks its range with R's text; a
    non-number is refused here with the same words."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise PyggmlrValueError(f"{op}: {arg} must be {rule}, got {show(v)}")
    return as_float(v)  # 10**400: Inf, refused by the core (it raised OverflowError)


def _loss_weights(v, like: Tensor, op: str, arg: str) -> Optional[Tensor]:
    """A loss's per-row / per-class weights as a constant [n, 1] of like's dtype (a Tensor as it
    is); the core checks the length against like and the values."""
    if v is None or isinstance(v, Tensor):
        return v
    a = as_numeric(v, op, arg)
    if a.dtype.kind == "b":
        raise ArgumentError(f"{op}: {arg} must be numbers, got booleans")
    return _as_tensor(np.asarray(a, dtype=np.float64).reshape(-1, 1, order="F"), op, like)


def _ce_target(target, shape, logits, name):
    """(tensor, is a vector) for host data: a matrix of the logits' shape in their dtype (one-hot
    or soft labels), anything else as class ids in f64 (exact), a vector as a [1, n] row; the
    core applies its rule. Booleans and non-numbers are refused here (language types)."""
    a = asarray(
        target,
        lambda e: PyggmlrValueError(
            f"{name}: target is not a matrix or a vector of class ids ({e})"
        ),
    )
    if a.shape == shape:
        return _as_tensor(a, name, logits), False
    if a.ndim > 2 and sum(d != 1 for d in a.shape) > 1:
        raise ShapeError(
            f"{name}: logits are [{shape[0]}x{shape[1]}] but target is a "
            f"{'x'.join(map(str, a.shape))} array; give a one-hot matrix of the logits' shape or "
            "one class id per column"
        )
    if a.dtype.kind == "b":  # True / False are not class numbers (issue 19)
        raise ArgumentError(f"{name}: class ids must be 0-based integers, got booleans")
    if a.dtype.kind not in "iuf":  # R's text: target need not be ids
        raise ArgumentError(f"{name}: target must be numeric, got dtype {a.dtype}")
    vec = a.ndim != 2
    a = a.reshape(1, -1) if vec else a
    return _as_tensor(np.asarray(a, dtype=np.float64), name, code=lib.PG_DTYPE_F64), vec


# ---- Python operators (Tensor's methods, tensor.py); their errors name no op ----


def _rsub(self: Tensor, other: ArrayLike) -> Tensor:
    return ag_sub(other, self)  # its errors name ag_sub, as R's `-` does


def _rdiv(self: Tensor, other: ArrayLike) -> Tensor:
    return ag_div(other, self)


def _pow(self: Tensor, p: Any) -> Tensor:
    """x ** p with R's `^` rule: a single number (NaN reaches ag_pow's check), else its text"""
    if isinstance(p, (numbers.Real, np.bool_)) or (
        isinstance(p, np.ndarray) and p.ndim == 0 and p.dtype.kind in "biuf"
    ):
        return ag_pow(self, p)  # type: ignore[arg-type]  # ag_pow reads numpy scalars too
    raise ArgumentError(
        "ag_tensor: '**' needs a tensor base and a single-number exponent (x ** p); for b ** x "
        "use ag_exp(x * math.log(b))"
    )


def _mul(self: Tensor, other: ArrayLike) -> Tensor:
    if isinstance(other, (int, float)) and not isinstance(other, bool):
        return _out(lib.pg_scale(self._handle(), float(other)))
    return ag_mul(self, other)


def _linear(W, x, b, act=-1):
    """Fused act(W @ x + b) as one node (act: -1 none, or lib.PG_UNARY_OP_RELU / PG_UNARY_OP_SIGMOID / PG_UNARY_OP_TANH);
    the same numbers as ag_matmul -> ag_add -> activation. b may be None."""
    op = "ag_linear"
    if x.__class__ is not Tensor:
        x = _as_tensor(x, op, W)
    bp = _NULL if b is None else b._handle(op)
    return _out(lib.pg_linear(W._handle(op), x._handle(op), bp, act))
