"""Tensors: Python handles on C-core tensors (column-major, shape = R's dim())."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._args import asarray, check_flag, check_int, plain
from ._core import DTYPE_CODE, DTYPE_NAME, F32, F64, NULL, ffi, lib
from .errors import ArgumentError, DTypeError, PyggmlrError, PyggmlrValueError, ShapeError

__all__ = [
    "Tensor",
    "ag_tensor",
    "ag_param",
    "ag_dtype",
    "ag_default_dtype",
    "ag_device",
    "ag_default_device",
    "ag_to_device",
    "DeviceError",
    "is_ag_tensor",
    "ag_grad",
]


class DeviceError(PyggmlrError, RuntimeError):
    """The requested device is not available."""


_device = "cpu"

# numpy dtype -> (C source dtype code, itemsize); anything else is converted to float64
_SRC_CODE = {
    np.dtype(np.float32): lib.PG_DTYPE_F32,
    np.dtype(np.float64): lib.PG_DTYPE_F64,
    np.dtype(np.int32): lib.PG_DTYPE_I32,
    np.dtype(np.int64): lib.PG_DTYPE_I64,
    np.dtype(np.uint8): lib.PG_DTYPE_U8,
}


def _dtype_code(dtype, fn=None):
    """The core's dtype code of "f32" / "f64" (any case, or numpy's float32 / float64; None: the
    default); DTypeError otherwise, its message prefixed with fn when given."""
    pre = "" if fn is None else f"{fn}: "
    if dtype is None:
        return lib.pg_default_dtype()
    if isinstance(dtype, str):
        code = DTYPE_CODE.get(dtype.lower())
        if code is not None:
            return code
        if dtype.lower() in ("f16", "bf16"):
            raise DTypeError(
                f"{pre}dtype {dtype!r} is not supported by the CPU engine; use 'f32' or 'f64'"
            )
    else:
        # numpy's own dtypes only: np.dtype(x) of any object reads its .dtype (a Tensor's "f32")
        nd = np.dtype(dtype) if isinstance(dtype, (type, np.dtype)) else None
        if nd == np.float32:
            return F32
        if nd == np.float64:
            return F64
    shown = repr(plain(dtype)).splitlines()[0][:60]  # a Tensor: "ag_tensor [2x2]", not its values
    raise DTypeError(f"{pre}dtype must be 'f32' or 'f64', got {shown}")


def _as_matrix(data, who=""):
    """numpy view of `data` as a 2-D array with a dtype the core can read (no copy if possible).
    who: the caller's name for the refusals ("compiled step: input 2: "), or "" for none."""
    a = asarray(
        data,
        lambda e: (
            PyggmlrValueError(f"{who}cannot make a tensor from this {type(data).__name__}: {e}")
            if isinstance(e, OverflowError)
            # a ragged list is not numeric data, as R's list() (a DTypeError naming the type)
            else DTypeError(
                f"{who}expected a numeric matrix, vector or ag_tensor, got {type(data).__name__}"
            )
        ),
    )
    if a.dtype.kind not in "biuf":
        raise DTypeError(  # R's text (r_util.c), the dtype for R's type
            f"{who}expected a numeric matrix, vector or ag_tensor, got dtype {a.dtype}"
        )
    if a.ndim == 0:
        a = a.reshape(1, 1)
    elif a.ndim == 1:
        a = a.reshape(-1, 1)  # an R vector becomes an [n, 1] column
    elif a.ndim != 2:
        raise ShapeError(
            f"{who}tensors are 2-D matrices [features, batch]; got a "
            f"{'x'.join(map(str, a.shape))} array"  # as R's
        )
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    elif a.dtype not in _SRC_CODE:
        a = a.astype(np.float64)
    isz = a.itemsize
    if a.strides[0] % isz or a.strides[1] % isz:
        a = np.array(a, order="F")
    return a


def _src(a):
    """The core's view of a 2-D array from _as_matrix: (data, source dtype code, rows, cols,
    row stride, column stride), strides in elements. The caller keeps `a` alive."""
    isz = a.itemsize
    ptr = ffi.cast("void *", a.ctypes.data)
    return ptr, _SRC_CODE[a.dtype], a.shape[0], a.shape[1], a.strides[0] // isz, a.strides[1] // isz


def _new_from(data, code):
    a = _as_matrix(data)
    ptr, src, nrow, ncol, rs, cs = _src(a)
    return _wrap(lib.pg_tensor_new(code, nrow, ncol, ptr, src, rs, cs))


def _as_tensor(
    x: Any,
    op: str = "pyggmlr",
    like: Optional["Tensor"] = None,
    code: Optional[int] = None,
    prefix: bool = True,
) -> "Tensor":
    """The one value-to-tensor conversion: x itself when a Tensor, else a constant made from
    numeric data with dtype code, else like's dtype, else the default. op names the public
    function in errors (prefix=False: conversion errors keep the bare text)."""
    if isinstance(x, Tensor):
        return x
    if code is None:
        code = lib.pg_tensor_dtype(like._handle(op)) if like is not None else lib.pg_default_dtype()
    if not prefix:
        return _new_from(x, code)
    try:
        return _new_from(x, code)
    except PyggmlrError as e:  # name the op the bad operand was given to (slow path only)
        raise type(e)(f"{op}: {e}") from None


def _wrap(p):
    """Own a new C reference as a Tensor; raise the core's error if p is NULL."""
    if p == NULL:
        _core.raise_last()
    t = Tensor.__new__(Tensor)
    t._p = p
    return t


def _read(p):
    """Copy a tensor's values out as a Fortran-ordered numpy array of its dtype."""
    nr, nc = lib.pg_tensor_nrow(p), lib.pg_tensor_ncol(p)
    code = lib.pg_tensor_dtype(p)
    out = np.empty((nr, nc), dtype=np.float32 if code == F32 else np.float64, order="F")
    if out.size:
        _core.check(lib.pg_tensor_read(p, ffi.cast("void *", out.ctypes.data), code))
    return out


_NP_DTYPE: Dict[str, np.dtype] = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}


class _View:
    """Exposes a tensor's memory to numpy (__array_interface__). It holds its own core
    reference (not the Python handle), so the array's memory stays valid after ``t.free()``,
    ``del t`` or ``ag_memory_trim()``: the storage is released, and leaves the memory counters,
    when the last array made from it is collected (the array's base is this object)."""

    __slots__ = ("_p", "__array_interface__")

    def __init__(self, t):
        p = t._handle()
        nr, nc = lib.pg_tensor_nrow(p), lib.pg_tensor_ncol(p)
        dt = _NP_DTYPE[t.dtype]
        addr = int(ffi.cast("uintptr_t", lib.pg_tensor_data(p))) if nr * nc else 0
        # writes through the view bypass the core: from now on backward() checks this buffer by
        # a hash of its bytes (pg_api_version.h), so a changed saved input is refused, not used
        _core.check(lib.pg_tensor_expose(p))
        lib.pg_tensor_retain(p)  # the view's own reference: its memory outlives t.free()
        self._p = p
        self.__array_interface__ = {
            "shape": (nr, nc),
            "typestr": dt.str,
            "version": 3,
            "data": (addr, False),
            "strides": (dt.itemsize, dt.itemsize * nr),
        }

    def __del__(self, _release=lib.pg_tensor_release, _unexpose=lib.pg_tensor_unexpose):
        # the last view gone: its writes are counted, then the buffer is no longer hashed
        p = getattr(self, "_p", None)
        if p is not None:
            self._p = None
            _unexpose(p)
            _release(p)


class Tensor:
    """A tensor of the C core: a 2-D column-major matrix of f32 or f64 values.

    Create with :func:`ag_tensor` / :func:`ag_param`. ``shape`` is R's ``dim()``:
    ``(rows, cols)`` = ``(features, batch)``.
    """

    __slots__ = ("_p", "__weakref__")

    # numpy on the left of an operator (array + tensor) defers to our reflected methods instead
    # of converting the tensor to an array and returning an ndarray
    __array_ufunc__ = None

    def __init__(self, data: Any, dtype: Optional[str] = None, requires_grad: bool = False) -> None:
        self._p = None
        t = ag_param(data, dtype=dtype) if requires_grad else ag_tensor(data, dtype=dtype)
        self._p, t._p = t._p, None

    def __del__(self, _release=lib.pg_tensor_release, _null=NULL):
        p = getattr(self, "_p", None)
        if p is not None and p != _null:
            _release(p)

    # ---- handle ----
    def _handle(self, op: str = "pyggmlr"):
        """The C handle; op names the public function in the error for a freed tensor."""
        p = self._p
        if p is None:
            raise ArgumentError(f"{op}: tensor handle is empty (freed)")
        return p

    # copies: the C pointer is never duplicated without its own reference (a shared pointer
    # would be released twice). copy.copy: a second handle on the same tensor; deepcopy: a new
    # tensor with the same values (and requires_grad); pickle: the values.
    def __copy__(self):
        p = self._handle()
        lib.pg_tensor_retain(p)
        return _wrap(p)

    def __deepcopy__(self, memo):
        t = _wrap(lib.pg_tensor_clone(self._handle()))
        if self.requires_grad:
            t.requires_grad = True
        memo[id(self)] = t
        return t

    def __reduce__(self):
        return (_unpickle, (self.numpy(), self.dtype, self.requires_grad))

    def free(self):
        """Drop this handle's reference now instead of at garbage collection."""
        p, self._p = self._p, None
        if p is not None:
            lib.pg_tensor_release(p)

    # ---- properties ----
    @property
    def shape(self) -> Tuple[int, int]:
        """(rows, cols) as R's dim(): (features, batch) for data; a vector is (n, 1)."""
        p = self._handle()
        return (lib.pg_tensor_nrow(p), lib.pg_tensor_ncol(p))

    @property
    def image_shape(self) -> Optional[Tuple[int, int, int]]:
        """The image shape (C, H, W) each column holds (numpy's C-order, W fastest), or None.
        Set by ag_images and the image ops; assign (C, H, W) to tag data, None to clear."""
        out = ffi.new("int64_t[3]")
        rc = lib.pg_tensor_image_shape(self._handle(), out)
        if rc <= 0:
            return None if rc == 0 else _core.check(rc)
        return (int(out[2]), int(out[1]), int(out[0]))

    @image_shape.setter
    def image_shape(self, shape: Any) -> None:
        fn = "Tensor.image_shape"
        if shape is None:
            _core.check(lib.pg_tensor_set_image_shape(self._handle(), NULL, fn.encode()))
            return
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 3:
            raise ArgumentError(
                f"{fn}: shape must be (C, H, W) or None, got {plain(shape)!r}"[:300]
            )
        c, h, w = (check_int(v, fn, "shape", 1) for v in shape)
        arr = ffi.new("int64_t[3]", [w, h, c])
        _core.check(lib.pg_tensor_set_image_shape(self._handle(), arr, fn.encode()))

    @property
    def nrow(self) -> int:
        """Number of rows (R's nrow(); features for data)."""
        return lib.pg_tensor_nrow(self._handle())

    @property
    def ncol(self) -> int:
        """Number of columns (R's ncol(); samples for data)."""
        return lib.pg_tensor_ncol(self._handle())

    @property
    def size(self) -> int:
        """Number of elements, nrow * ncol."""
        return lib.pg_tensor_numel(self._handle())

    @property
    def dtype(self):
        """The storage and compute dtype: "f32" or "f64"."""
        return DTYPE_NAME[lib.pg_tensor_dtype(self._handle())]

    @property
    def id(self):
        """The core's integer id of this tensor (the gradient map also accepts it, or str(id))."""
        return lib.pg_tensor_id(self._handle())

    @property
    def device(self):
        """Always "cpu" (the engine has no GPU path)."""
        return "cpu"

    @property
    def requires_grad(self):
        """Whether backward() computes a gradient for this tensor (True for ag_param);
        assignable on leaves."""
        return bool(lib.pg_tensor_requires_grad(self._handle()))

    @requires_grad.setter
    def requires_grad(self, flag):
        # True or False only (numpy's too): a list or 1 was taken as True, an array raised numpy's
        # "truth value is ambiguous"
        flag = check_flag(flag, "Tensor.requires_grad", "requires_grad")
        _core.check(lib.pg_tensor_set_requires_grad(self._handle(), flag))

    @property
    def is_leaf(self):
        """True unless the tensor was produced by a recorded op (parameters and data are leaves)."""
        return bool(lib.pg_tensor_is_leaf(self._handle()))

    @property
    def op(self):
        """Label of the tape node that produced this tensor ('' for leaves)."""
        return ffi.string(lib.pg_tensor_op(self._handle())).decode()

    @property
    def grad(self):
        """Accumulated gradient as a numpy array, or None."""
        g = lib.pg_tensor_grad(self._handle())
        return None if g == NULL else _read(g)

    @grad.setter
    def grad(self, value):
        if value is None:
            _core.check(lib.pg_tensor_set_grad(self._handle(), NULL))
            return
        g = ag_tensor(value, dtype=self.dtype)
        _core.check(lib.pg_tensor_set_grad(self._handle(), g._p))

    def zero_grad(self):
        """Drop this tensor's accumulated .grad (it becomes None)."""
        self.grad = None

    @property
    def data(self):
        """Values as a numpy array (a copy); assigning writes new values in place."""
        return _read(self._handle())

    @data.setter
    def data(self, value):
        a = _as_matrix(value.numpy() if isinstance(value, Tensor) else value, "Tensor.data: ")
        _core.check(lib.pg_tensor_write(self._handle(), *_src(a)))

    def numpy(self, copy: bool = True):
        """Values as a (Fortran-ordered) numpy array of shape (rows, cols).

        ``copy=True`` (default): an independent copy. ``copy=False``: a view of the tensor's own
        memory, no copy: it keeps the tensor alive, sees later in-place updates (an optimizer
        step, ``t.data = ...``) and writes to it change the tensor (as PyTorch's ``.numpy()``). Such a
        write between a recorded forward pass and backward() makes backward() raise
        ModifiedTensorError (the buffer is hash-checked from the first view on)."""
        if copy:
            return _read(self._handle())
        return np.asarray(_View(self))

    def __array__(self, dtype=None, copy=None):
        if copy is False:  # numpy >= 2: np.asarray(t, copy=False) asks for a view
            if dtype is not None and np.dtype(dtype) != _NP_DTYPE[self.dtype]:
                raise ValueError(
                    f"a view of a {self.dtype} tensor cannot have dtype {np.dtype(dtype)}"
                )
            return self.numpy(copy=False)
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The value of a 1x1 tensor as a Python float; raises ShapeError for any other shape."""
        if self.size != 1:
            raise ShapeError(f"item(): tensor is {self._desc()}, not 1x1")
        return float(self.numpy()[0, 0])

    def __float__(self):
        return self.item()

    def tolist(self):
        """Values as nested Python lists, one inner list per row."""
        return self.numpy().tolist()

    def _desc(self):
        r, c = self.shape
        return f"[{r}x{c}] {self.dtype}"

    def __repr__(self):
        if self._p is None:
            return "ag_tensor <freed>"
        r, c = self.shape
        head = f"ag_tensor [{r}x{c}]"
        if self.dtype != "f32":
            head += f" [{self.dtype}]"
        if self.requires_grad:
            head += " (requires_grad)"
        body = np.array2string(self.numpy(), precision=6, suppress_small=False, threshold=200)
        out = head + "\n" + body
        g = self.grad
        if g is not None:
            out += "\n  grad:\n" + np.array2string(g, precision=6, threshold=200)
        return out

    __str__ = __repr__

    def __len__(self):
        return self.nrow

    def __bool__(self):
        if self.size != 1:
            raise ShapeError(f"the truth value of a {self._desc()} tensor is ambiguous")
        return bool(self.item())

    def __hash__(self):
        return object.__hash__(self)

    def backward(self):
        """Same as ``backward(self)``: returns the gradient map."""
        return _tape.backward(self)

    # ---- operators: the ops of ops.py (imported at the end of this module, which it needs) ----
    def __add__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_add(self, other)

    def __radd__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_add(other, self)

    @property
    def T(self) -> Tensor:
        """The transpose [c, r] (ag_transpose)."""
        return _ops.ag_transpose(self)

    def __sub__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_sub(self, other)

    def __rsub__(self, other: ArrayLike) -> Tensor:
        return _ops._rsub(self, other)

    def sum(self, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
        """ag_sum(self, dim, keepdim)."""
        return _ops.ag_sum(self, dim, keepdim)

    def __mul__(self, other: ArrayLike) -> Tensor:
        return _ops._mul(self, other)

    __rmul__ = __mul__

    def __pow__(self, p: float) -> Tensor:
        return _ops._pow(self, p)

    def __rpow__(self, b: Any) -> Tensor:  # b ** x: refused with R's `^` text too
        return _ops._pow(self, None)

    def __truediv__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_div(self, other)

    def __rtruediv__(self, other: ArrayLike) -> Tensor:
        return _ops._rdiv(self, other)

    def reshape(self, nrow: Union[int, Sequence[int]], ncol: int = -1) -> Tensor:
        """ag_reshape(self, nrow, ncol)."""
        return _ops.ag_reshape(self, nrow, ncol)

    def __matmul__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_matmul(self, other)

    def __rmatmul__(self, other: ArrayLike) -> Tensor:
        return _ops.ag_matmul(other, self)

    def relu(self) -> Tensor:
        """ag_relu(self)."""
        return _ops.ag_relu(self)

    def mean(self, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
        """ag_mean(self, dim, keepdim)."""
        return _ops.ag_mean(self, dim, keepdim)

    def __neg__(self) -> Tensor:
        return _ops.ag_neg(self)

    def __pos__(self) -> Tensor:
        """+t is t itself, as R's unary plus of an ag_tensor."""
        return self

    def __getitem__(self, key: Any) -> Tensor:
        """t[i, j], slices, masks (tensor_index.py)."""
        return _index._getitem(self, key)


#: What the ops accept as an operand: a Tensor, or numbers that become a constant of the other
#: operand's dtype (a numpy array, a nested list / tuple of numbers, a scalar). 1-D data is a
#: column [n, 1]; 2-D data keeps its shape [rows, cols] = [features, batch].
ArrayLike = Union[Tensor, np.ndarray, Sequence[Any], float]


def _unpickle(values, dtype, requires_grad):
    return ag_param(values, dtype=dtype) if requires_grad else ag_tensor(values, dtype=dtype)


def is_ag_tensor(x: object) -> bool:
    """True if x is a pyggmlr Tensor (ggmlR's internal is_ag_tensor); never raises."""
    return isinstance(x, Tensor)


def ag_tensor(data: Any, device: Optional[str] = None, dtype: Optional[str] = None) -> Tensor:
    """Create a tensor that does not require gradients.

    data: numpy array (any memory order; ints, bools or floats), list, scalar or Tensor (copied).
    A 1-D array becomes an [n, 1] column, as in R. dtype: "f32" or "f64"; None =
    ag_default_dtype(), for a Tensor too (as R's default).
    device: "cpu" (None = ag_default_device()).
    """
    _check_device(device, "ag_tensor")
    code = _dtype_code(dtype, "ag_tensor")
    if isinstance(data, Tensor):  # a copy in dtype, the default too (R's, ggmlR's rule)
        return _wrap(lib.pg_tensor_cast(data._handle("ag_tensor"), code))
    return _as_tensor(data, "ag_tensor", code=code)


def ag_param(data: Any, device: Optional[str] = None, dtype: Optional[str] = None) -> Tensor:
    """Create a trainable tensor (requires_grad = True); arguments as ag_tensor()."""
    _check_device(device, "ag_param")
    code = _dtype_code(dtype, "ag_param")
    if isinstance(data, Tensor):
        t = ag_tensor(data, dtype=dtype)
    else:
        t = _as_tensor(data, "ag_param", code=code)  # a conversion error names ag_param
    _core.check(lib.pg_tensor_set_requires_grad(t._p, 1))
    return t


def ag_grad(x: Tensor) -> Optional[np.ndarray]:
    """The accumulated gradient of x (its .grad, not a backward() map) as numpy, or None."""
    if not isinstance(x, Tensor):
        raise ArgumentError("ag_grad(): `x` must be an ag_tensor")
    return x.grad


def ag_dtype(dtype: Optional[str] = None) -> str:
    """Set the default dtype ("f32" or "f64") for new tensors; returns the previous one.
    Without an argument, returns the current default."""
    prev = DTYPE_NAME[lib.pg_default_dtype()]
    if dtype is not None:
        code = _dtype_code(dtype, "ag_dtype")
        _core.check(0 if lib.pg_set_default_dtype(code) >= 0 else 1)
    return prev


def ag_default_dtype() -> str:
    """The default dtype of new tensors: "f32" (the initial default) or "f64" (see ag_dtype)."""
    return DTYPE_NAME[lib.pg_default_dtype()]


def _check_device(device, where):
    """where: the public function the message names, as R's .check_device."""
    if device is not None and not isinstance(device, str):  # an array would compare elementwise
        raise PyggmlrValueError(
            f"{where}(): device must be 'cpu' or 'gpu', got {type(plain(device)).__name__} {plain(device)!r:.60}"
        )
    if device is None or device == "cpu":
        return
    if device == "gpu":
        # ggmlR's text without a GPU backend (0.8.6 spec §11): scripts catch it to stay on the CPU
        raise DeviceError("No ggml backend available. Install Vulkan drivers or use device='cpu'.")
    raise PyggmlrValueError(f"{where}(): device must be 'cpu' or 'gpu', got {plain(device)!r}")


def ag_device(device: str) -> str:
    """Set the default device; returns the previous one. Only "cpu" is available."""
    global _device
    if not isinstance(device, str) or device not in ("cpu", "gpu"):
        raise PyggmlrValueError(
            f"ag_device(): device must be 'cpu' or 'gpu', got {plain(device)!r}"
        )
    _check_device(device, "ag_device")
    prev, _device = _device, device
    return prev


def ag_default_device() -> str:
    """The default device: always "cpu" on this build (ag_device("gpu") raises DeviceError)."""
    return _device


def ag_to_device(tensor: Tensor, device: str) -> Tensor:
    """Same device: the same object; another device: not available on this build."""
    if not isinstance(tensor, Tensor):
        raise ArgumentError(  # R's text
            f"ag_to_device(): tensor must be an ag_tensor, got {type(tensor).__name__}"
        )
    _check_device(device, "ag_to_device")
    return tensor


# the operators above call these modules, which import Tensor from this one: imported last, once
# every name they take from here exists
from . import ops as _ops  # noqa: E402
from . import tape as _tape  # noqa: E402
from . import tensor_index as _index  # noqa: E402
