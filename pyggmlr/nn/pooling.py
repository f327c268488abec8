"""Pooling and flatten on image batches (issue 30): the functional ops (ag_max_pool2d_op, ...,
ag_global_avg_pool_op) and the layers (ag_max_pool2d, ..., ag_flatten).

An image batch is a tensor [C*H*W, N]: each column one image in numpy's (C, H, W) order
(x.reshape(N, -1).T of an (N, C, H, W) array); a 1-D signal has H = 1 ((N, C, L) arrays). The
ops read the image shape from ``input_shape`` (torch order (C, H, W), or (C, L) for 1-D) or
else from the tensor's image tag, which convolution and pooling results carry; the layers read
the tag. Sizes are a number or a pair (H, W). The core (native/ops_pool.c) checks them and runs
forward and backward; max pooling's ties give the gradient to the first maximum of a window
(scanned row by row), and a window holding NaN outputs NaN with its gradient at its last NaN,
as torch's CPU kernel."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from .._args import as_float, is_real, show
from .._core import check, ffi, lib
from ..errors import ArgumentError
from ..tensor import ArrayLike, Tensor, _wrap
from .base import Module, _as_tensor

__all__ = [
    "ag_max_pool2d_op",
    "ag_avg_pool2d_op",
    "ag_max_pool1d_op",
    "ag_avg_pool1d_op",
    "ag_global_avg_pool_op",
    "ag_global_max_pool_op",
    "ag_max_pool2d",
    "ag_avg_pool2d",
    "ag_max_pool1d",
    "ag_avg_pool1d",
    "ag_global_avg_pool",
    "ag_global_max_pool",
    "ag_flatten",
]

Size = Union[int, float, Sequence[Union[int, float]]]
_KIND = {"max": lib.PG_POOL_KIND_MAX, "avg": lib.PG_POOL_KIND_AVG}


def _sizes(v: Any, fn: str, arg: str, n: int) -> Any:
    """A number (every position) or n numbers as a double[n] for the core, which checks that
    they are whole and in range; None stays NULL."""
    if v is None:
        return ffi.NULL
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if is_real(v):
        vals = [as_float(v)] * n
    elif isinstance(v, (tuple, list)) and len(v) in (1, n) and all(is_real(e) for e in v):
        vals = [as_float(e) for e in v] * (n if len(v) == 1 else 1)
    else:
        what = "a number" if n == 1 else "a number or a pair (H, W) of numbers"
        raise ArgumentError(f"{fn}: {arg} must be {what}, got {show(v)}")
    return ffi.new("double[]", vals)


def _shape(v: Any, fn: str, n: int) -> Any:
    """input_shape: None (the tensor's tag) or n numbers, torch order ((C, H, W) or (C, L))."""
    if v is None:
        return ffi.NULL
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if not isinstance(v, (tuple, list)) or len(v) != n or not all(is_real(e) for e in v):
        what = "(C, H, W)" if n == 3 else "(C, L)"
        raise ArgumentError(f"{fn}: input_shape must be {n} numbers {what} or None, got {show(v)}")
    return ffi.new("double[]", [as_float(e) for e in v])


def _pool(x, kind, dims, kernel_size, stride, padding, input_shape, fn):
    x = _as_tensor(x, fn)
    args = (
        _shape(input_shape, fn, dims + 1),
        _sizes(kernel_size, fn, "kernel_size", dims),
        _sizes(stride, fn, "stride", dims),
        _sizes(padding, fn, "padding", dims),
    )
    return _wrap(lib.pg_pool(x._p, _KIND[kind], dims, *args, fn.encode()))


def _global(x, kind, input_shape, fn):
    x = _as_tensor(x, fn)
    if isinstance(input_shape, np.ndarray):  # a numpy vector as a list, as _shape reads one
        input_shape = input_shape.tolist()
    if isinstance(input_shape, (tuple, list)) and len(input_shape) == 2:
        input_shape = (input_shape[0], 1, input_shape[1])  # a 1-D signal (C, L)
    return _wrap(lib.pg_global_pool(x._p, _KIND[kind], _shape(input_shape, fn, 3), fn.encode()))


def ag_max_pool2d_op(
    x: ArrayLike,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Max pooling of images x [C*H*W, N] (torch's F.max_pool2d, ceil_mode False).

    Args: kernel_size, stride (None: the kernel), padding (<= kernel_size / 2; -Inf, never
    chosen): a whole number or a pair (H, W); input_shape: (C, H, W), None for x's image tag.
    Returns: [C*Ho*Wo, N] tagged (C, Ho, Wo), Ho = (H + 2 * pad - k) // stride + 1.
    Raises: ArgumentError for a non-number, PyggmlrValueError for sizes that are not whole or
    out of range, ShapeError for rows that are not C*H*W, no shape and no tag, or a kernel
    larger than the padded input (the core's texts)."""
    return _pool(x, "max", 2, kernel_size, stride, padding, input_shape, "ag_max_pool2d_op")


def ag_avg_pool2d_op(
    x: ArrayLike,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Average pooling of images x [C*H*W, N] (torch's F.avg_pool2d: padding counts as zeros in
    the divisor, count_include_pad True). Arguments, result and errors as ag_max_pool2d_op."""
    return _pool(x, "avg", 2, kernel_size, stride, padding, input_shape, "ag_avg_pool2d_op")


def ag_max_pool1d_op(
    x: ArrayLike,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Max pooling of signals x [C*L, N] (torch's F.max_pool1d): sizes are one number each,
    input_shape (C, L) or None for x's tag (H must be 1); result [C*Lo, N] tagged (C, 1, Lo)."""
    return _pool(x, "max", 1, kernel_size, stride, padding, input_shape, "ag_max_pool1d_op")


def ag_avg_pool1d_op(
    x: ArrayLike,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Average pooling of signals x [C*L, N] (torch's F.avg_pool1d); as ag_max_pool1d_op."""
    return _pool(x, "avg", 1, kernel_size, stride, padding, input_shape, "ag_avg_pool1d_op")


def ag_global_avg_pool_op(x: ArrayLike, input_shape: Optional[Sequence[int]] = None) -> Tensor:
    """The mean of each channel of images x [C*H*W, N] -> [C, N], untagged (torch's
    adaptive_avg_pool2d(x, 1) flattened). input_shape: (C, H, W) or (C, L); None: x's tag."""
    return _global(x, "avg", input_shape, "ag_global_avg_pool_op")


def ag_global_max_pool_op(x: ArrayLike, input_shape: Optional[Sequence[int]] = None) -> Tensor:
    """The maximum of each channel of images x [C*H*W, N] -> [C, N], untagged (ties and NaN as
    ag_max_pool2d_op). input_shape as ag_global_avg_pool_op."""
    return _global(x, "max", input_shape, "ag_global_max_pool_op")


# ---------------------------------------------------------------------------------------------
# layers


def _ints(p: Any, n: int) -> Any:
    """The core-checked double[n] back as an int (n 1) or a tuple of ints; None for NULL."""
    if p == ffi.NULL:
        return None
    return int(p[0]) if n == 1 else tuple(int(p[i]) for i in range(n))


def _json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


class _Pool(Module):
    """Max or average pooling layer over its input's image tag (set by a convolution or a
    pooling before it, or by the user)."""

    _op = "max"
    _dims = 2

    def __init__(self, kernel_size: Size, stride: Optional[Size] = None, padding: Size = 0):
        fn, n = f"ag_{self.kind}", self._dims
        k = _sizes(kernel_size, fn, "kernel_size", n)
        s = _sizes(stride, fn, "stride", n)
        p = _sizes(padding, fn, "padding", n)
        check(lib.pg_pool_check(_KIND[self._op], n, k, s, p, fn.encode()))
        self.kernel_size, self.stride, self.padding = _ints(k, n), _ints(s, n), _ints(p, n)
        self.training = True

    @property
    def name(self) -> str:
        k = self.kernel_size
        return f"{self.kind}({k if self._dims == 1 else f'{k[0]}x{k[1]}'})"

    def forward(self, x: ArrayLike) -> Tensor:
        """Pool x [C*H*W, N] by its image tag; errors as the functional op's, naming the layer."""
        fn = f"ag_{self.kind}"
        return _pool(x, self._op, self._dims, self.kernel_size, self.stride, self.padding, None, fn)

    def to_config(self) -> Dict[str, Any]:
        return {
            "type": self.kind,
            "kernel_size": _json(self.kernel_size),
            "stride": _json(self.stride),
            "padding": _json(self.padding),
        }


class ag_max_pool2d(_Pool):
    """Max pooling layer (torch's nn.MaxPool2d): kernel_size, stride (None: the kernel) and
    padding are a whole number or a pair (H, W); the input's image tag gives (C, H, W) (give
    raw data an input_shape through ag_max_pool2d_op or tag it). Ties and NaN as
    ag_max_pool2d_op. Raises at construction the core's texts for bad sizes."""

    kind = "max_pool2d"


class ag_avg_pool2d(_Pool):
    """Average pooling layer (torch's nn.AvgPool2d, count_include_pad True); as ag_max_pool2d."""

    kind, _op = "avg_pool2d", "avg"


class ag_max_pool1d(_Pool):
    """Max pooling layer over signals [C*L, N] tagged (C, 1, L) (torch's nn.MaxPool1d); sizes
    are one whole number each."""

    kind, _dims = "max_pool1d", 1


class ag_avg_pool1d(_Pool):
    """Average pooling layer over signals (torch's nn.AvgPool1d); as ag_max_pool1d."""

    kind, _op, _dims = "avg_pool1d", "avg", 1


class _Global(Module):
    _op = "avg"

    def __init__(self) -> None:
        self.training = True

    def forward(self, x: ArrayLike) -> Tensor:
        """[C*H*W, N] tagged -> [C, N], untagged."""
        return _global(x, self._op, None, f"ag_{self.kind}")

    def to_config(self) -> Dict[str, Any]:
        return {"type": self.kind}


class ag_global_avg_pool(_Global):
    """Global average pooling layer: each channel's mean, [C*H*W, N] -> [C, N] (keras's
    GlobalAveragePooling2D; torch's AdaptiveAvgPool2d(1) + flatten). Reads the input's tag."""

    kind = "global_avg_pool"


class ag_global_max_pool(_Global):
    """Global max pooling layer: each channel's maximum, [C*H*W, N] -> [C, N] (keras's
    GlobalMaxPooling2D); ties and NaN as ag_max_pool2d_op."""

    kind, _op = "global_max_pool", "max"


class ag_flatten(Module):
    """Flatten layer (torch's nn.Flatten, keras's layer_flatten): in this package's layout an
    image batch is already [C*H*W, N], so the values pass unchanged (a copy, as a reshape) and
    only the image tag is cleared; a dense layer after it sees plain features in (C, H, W)
    order, torch's flatten order."""

    kind = "flatten"

    def __init__(self) -> None:
        self.training = True

    def forward(self, x: ArrayLike) -> Tensor:
        x = _as_tensor(x, "ag_flatten")
        r, c = x.shape
        return _wrap(lib.pg_reshape(x._p, r, c))

    def to_config(self) -> Dict[str, Any]:
        return {"type": "flatten"}
