"""Differentiable ops: thin calls into the C core (forward and backward live there).

Operands may be tensors or plain numpy arrays / lists / scalars, which become constants of
the other operand's dtype and never receive gradients."""
import numpy as np

from . import _core
from ._core import lib
from .errors import ArgumentError, PyggmlrError, PyggmlrValueError, ShapeError, caller_op
from .tensor import Tensor, _new_from, _wrap

__all__ = [
    "ag_matmul", "ag_add", "ag_sub", "ag_mul", "ag_div", "ag_scale", "ag_neg", "ag_relu",
    "ag_sigmoid", "ag_tanh", "ag_gelu", "ag_softmax", "ag_log", "ag_exp", "ag_pow", "ag_clamp",
    "ag_sum", "ag_mean", "ag_transpose", "ag_reshape", "ag_mse_loss", "ag_cross_entropy_loss",
    "ag_softmax_cross_entropy_loss",
]


_NULL = _core.NULL
_raise_last = _core.raise_last
_new_tensor = Tensor.__new__


def _out(p):
    """_wrap without the extra call: own p as a Tensor, or raise the core's error."""
    if not p:
        _raise_last()
    t = _new_tensor(Tensor)
    t._p = p
    return t


def _const(x, like):
    if isinstance(x, Tensor):
        return x
    code = lib.pg_tensor_dtype(like._handle()) if like is not None else lib.pg_default_dtype()
    try:
        return _new_from(x, code)
    except PyggmlrError as e:  # name the op the bad operand was given to (slow path only)
        raise type(e)(f"{caller_op()}: {e}") from None


def _pair(a, b):
    if isinstance(a, Tensor):
        return a, (b if isinstance(b, Tensor) else _const(b, a))
    if isinstance(b, Tensor):
        return _const(a, b), b
    return _const(a, None), _const(b, None)


def _unary_arg(x):
    return x if isinstance(x, Tensor) else _const(x, None)


_pg_matmul, _pg_add, _pg_sub, _pg_mul, _pg_div = lib.pg_matmul, lib.pg_add, lib.pg_sub, lib.pg_mul, lib.pg_div
_pg_unary, _pg_sce_ids = lib.pg_unary, lib.pg_softmax_ce_loss_ids


def ag_matmul(A, B):
    """Matrix product A @ B: [m,k] x [k,n] -> [m,n]."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(_pg_matmul(A._handle(), B._handle()))
    a, b = _pair(A, B)
    return _out(_pg_matmul(a._handle(), b._handle()))


def ag_add(A, B):
    """A + B; size-1 dims broadcast on either side, gradients reduced back to each shape."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(_pg_add(A._handle(), B._handle()))
    a, b = _pair(A, B)
    return _out(_pg_add(a._handle(), b._handle()))


def ag_sub(A, B):
    """A - B, broadcasting as ag_add."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(_pg_sub(A._handle(), B._handle()))
    a, b = _pair(A, B)
    return _out(_pg_sub(a._handle(), b._handle()))


def ag_mul(A, B):
    """Elementwise A * B, broadcasting size-1 dims on either side."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(_pg_mul(A._handle(), B._handle()))
    a, b = _pair(A, B)
    return _out(_pg_mul(a._handle(), b._handle()))


def ag_div(A, B):
    """Elementwise A / B, broadcasting size-1 dims on either side."""
    if A.__class__ is Tensor and B.__class__ is Tensor:  # fast path: no conversions
        return _out(_pg_div(A._handle(), B._handle()))
    a, b = _pair(A, B)
    return _out(_pg_div(a._handle(), b._handle()))


def _scalar(v, name, arg):
    if not isinstance(v, (str, bytes)):
        try:
            return float(v)
        except (TypeError, ValueError, OverflowError):
            pass
    raise ArgumentError(f"{name}: '{arg}' must be a number, got {type(v).__name__}")


def ag_scale(x, scalar):
    """x * scalar (the scalar is a constant)."""
    x = _unary_arg(x)  # keep the (possibly temporary) tensor alive across the C call
    return _wrap(lib.pg_scale(x._handle(), _scalar(scalar, "ag_scale", "scalar")))


def _unary(code):
    def op(x):
        if x.__class__ is not Tensor:
            x = _const(x, None)
        return _out(_pg_unary(code, x._handle()))
    return op


ag_relu = _unary(lib.PG_RELU)
ag_relu.__name__ = "ag_relu"
ag_relu.__doc__ = "max(x, 0); gradient 0 at x <= 0."
ag_sigmoid = _unary(lib.PG_SIGMOID)
ag_sigmoid.__name__ = "ag_sigmoid"
ag_sigmoid.__doc__ = "Elementwise logistic 1 / (1 + exp(-x)); same shape as x; gradient s (1 - s)."
ag_tanh = _unary(lib.PG_TANH)
ag_tanh.__name__ = "ag_tanh"
ag_tanh.__doc__ = "Elementwise tanh(x); same shape as x; gradient 1 - tanh(x)^2."
ag_gelu = _unary(lib.PG_GELU)
ag_gelu.__name__ = "ag_gelu"
ag_gelu.__doc__ = "Exact GELU: 0.5 x (1 + erf(x / sqrt(2)))."
ag_softmax = _unary(lib.PG_SOFTMAX)
ag_softmax.__name__ = "ag_softmax"
ag_softmax.__doc__ = "Softmax down each column (classes are rows), max-subtracted."
ag_log = _unary(lib.PG_LOG)
ag_log.__name__ = "ag_log"
ag_log.__doc__ = "Natural log, no clamping (log(0) = -inf)."
ag_exp = _unary(lib.PG_EXP)
ag_exp.__name__ = "ag_exp"
ag_exp.__doc__ = "Elementwise exp(x); same shape as x; gradient exp(x) (overflow gives inf, as IEEE)."
ag_neg = _unary(lib.PG_NEG)
ag_neg.__name__ = "ag_neg"
ag_neg.__doc__ = "Elementwise negation -x (also the unary minus operator); gradient -g."
for _f in (ag_relu, ag_sigmoid, ag_tanh, ag_gelu, ag_softmax, ag_log, ag_exp, ag_neg):
    _f.__code__ = _f.__code__.replace(co_name=_f.__name__)  # error messages name the op (errors.caller_op)


def ag_pow(x, p):
    """x ** p for a constant scalar p."""
    x = _unary_arg(x)
    return _wrap(lib.pg_pow(x._handle(), _scalar(p, "ag_pow", "p")))


def ag_clamp(x, lo=-np.inf, hi=np.inf):
    """min(max(x, lo), hi); gradient 1 strictly inside (lo, hi), 0 elsewhere."""
    x = _unary_arg(x)
    return _wrap(lib.pg_clamp(x._handle(), _scalar(lo, "ag_clamp", "lo"), _scalar(hi, "ag_clamp", "hi")))


def _dim(dim, name):
    if dim is None:
        return 0
    if dim in (1, 2) and not isinstance(dim, bool):
        return int(dim)
    raise PyggmlrValueError(f"{name}: dim must be None (all), 1 (per row) or 2 (per column), got {dim!r}")


def ag_sum(x, dim=None, keepdim=False):
    """Sum: dim=None -> [1,1]; dim=1 -> per row [nrow,1]; dim=2 -> per column [1,ncol]
    (ggmlR's meaning of dim). Results are matrices, so the reduced axis is kept with size 1
    whatever keepdim says."""
    x = _unary_arg(x)
    return _wrap(lib.pg_sum(x._handle(), _dim(dim, "ag_sum")))


def ag_mean(x, dim=None, keepdim=False):
    """Mean with the same dims as ag_sum."""
    x = _unary_arg(x)
    return _wrap(lib.pg_mean(x._handle(), _dim(dim, "ag_mean")))


def ag_transpose(x):
    """Transpose x [r, c] -> [c, r]; the gradient is transposed back. Returns a new tensor."""
    x = _unary_arg(x)
    return _wrap(lib.pg_transpose(x._handle()))


def ag_reshape(x, nrow, ncol=-1):
    """Column-major refill to [nrow, ncol]; one of them may be -1 (inferred)."""
    if isinstance(nrow, (tuple, list)):  # ag_reshape(x, (r, c)) as the ggmlR vignette writes it
        if len(nrow) != 2:
            raise PyggmlrValueError(f"ag_reshape: a shape must be (nrow, ncol), got {nrow!r}")
        nrow, ncol = nrow
    x = _unary_arg(x)
    return _wrap(lib.pg_reshape(x._handle(), _size(nrow, "nrow"), _size(ncol, "ncol")))


def _size(v, arg):
    try:
        ok = not isinstance(v, (bool, str, bytes)) and float(v).is_integer() and abs(int(v)) < 2 ** 62
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise PyggmlrValueError(f"ag_reshape: {arg} must be a whole number (or -1), got {v!r}")
    return int(v)


def _loss_pair(pred, target, name):
    pred, target = _pair(pred, target)
    return pred._handle(), target


def ag_mse_loss(pred, target):
    """sum((pred - target)^2) / numel -> 1x1."""
    p, t = _loss_pair(pred, target, "ag_mse_loss")
    return _wrap(lib.pg_mse_loss(p, t._handle()))


def ag_cross_entropy_loss(pred, target):
    """-sum(target * log(clamp(pred, 1e-7, 1 - 1e-7))) / ncol(pred); pred are probabilities."""
    p, t = _loss_pair(pred, target, "ag_cross_entropy_loss")
    return _wrap(lib.pg_cross_entropy_loss(p, t._handle()))


def _class_ids(a, name):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise PyggmlrValueError(f"{name}: class ids must be whole numbers (0-based), got non-integer values")
    elif a.dtype.kind not in "iub":
        raise ArgumentError(f"{name}: class ids must be integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1, order="F"), dtype=np.int64)


def ag_softmax_cross_entropy_loss(logits, target):
    """Fused, stable softmax + cross-entropy on logits [classes, batch].

    target: a one-hot / soft-label matrix of the logits' shape, or 0-based class ids, one per
    column (an integer array, a 1-D vector, or a [1, batch] row). Gradient (p - t) / batch."""
    name = "ag_softmax_cross_entropy_loss"
    logits = _unary_arg(logits)  # a plain array is a constant
    lp = logits._handle()
    K, B = lib.pg_tensor_nrow(lp), lib.pg_tensor_ncol(lp)
    if isinstance(target, Tensor):
        tp = target._handle()
        tr, tc = lib.pg_tensor_nrow(tp), lib.pg_tensor_ncol(tp)
        if tr == K and tc == B and not (K == 1 and B > 1):
            return _out(lib.pg_softmax_ce_loss(lp, tp))
        if (tr == 1 or tc == 1) and tr * tc == B and not lib.pg_tensor_requires_grad(tp):
            # class ids held in a tensor: checked and used in C, no copy through numpy
            return _out(_pg_sce_ids(lp, tp))
        if tr == 1 or tc == 1:
            ids = _class_ids(target.numpy(), name)
        else:
            raise ShapeError(f"{name}: logits are [{K}x{B}] but target is [{tr}x{tc}]; give a one-hot matrix of the logits' shape or one class id per column")
    else:
        try:
            a = np.asarray(target)
        except (ValueError, TypeError, OverflowError) as e:  # ragged lists and the like
            raise PyggmlrValueError(f"{name}: target is not a matrix or a vector of class ids ({e})") from None
        if a.ndim == 2 and a.shape == (K, B) and K > 1:
            t = _const(a, logits)
            return _wrap(lib.pg_softmax_ce_loss(lp, t._handle()))
        if a.ndim <= 1 or (a.ndim == 2 and (a.shape[0] == 1 or a.shape[1] == 1)):
            ids = _class_ids(a, name)
        else:
            raise ShapeError(f"{name}: logits are [{K}x{B}] but target has shape {a.shape}; give a one-hot matrix of the logits' shape or one class id per column")
    return _wrap(lib.pg_softmax_ce_loss_idx(lp, _core.ffi.cast("int64_t *", ids.ctypes.data), ids.size))


# ---- Python operators ----

def _rsub(self, other):
    a, b = _pair(other, self)
    return _wrap(lib.pg_sub(a._handle(), b._handle()))


def _rdiv(self, other):
    a, b = _pair(other, self)
    return _wrap(lib.pg_div(a._handle(), b._handle()))


def _mul(self, other):
    if isinstance(other, (int, float)) and not isinstance(other, bool):
        return _out(lib.pg_scale(self._handle(), float(other)))
    return ag_mul(self, other)


def _linear(W, x, b, act=-1):
    """Fused act(W @ x + b) as one node (act: -1 none, or lib.PG_RELU / PG_SIGMOID / PG_TANH);
    the same numbers as ag_matmul -> ag_add -> activation. b may be None."""
    if x.__class__ is not Tensor:
        x = _const(x, W)
    return _out(lib.pg_linear(W._handle(), x._handle(), _NULL if b is None else b._handle(), act))


def _pow(self, p):
    return ag_pow(self, p)


Tensor.__add__ = ag_add
Tensor.__radd__ = lambda self, other: ag_add(other, self)
Tensor.__sub__ = ag_sub
Tensor.__rsub__ = _rsub
Tensor.__mul__ = _mul
Tensor.__rmul__ = _mul
Tensor.__truediv__ = ag_div
Tensor.__rtruediv__ = _rdiv
Tensor.__matmul__ = ag_matmul
Tensor.__rmatmul__ = lambda self, other: ag_matmul(other, self)
Tensor.__neg__ = ag_neg
Tensor.__pow__ = _pow
Tensor.T = property(ag_transpose)
Tensor.sum = ag_sum
Tensor.mean = ag_mean
Tensor.relu = ag_relu
Tensor.reshape = ag_reshape
