"""Images and convolution: ag_images (numpy image batches to tagged [C*H*W, N] tensors; and
ag_sequences, sequence batches for the recurrent layers),
ag_image_shape, and the functional ops ag_conv2d_op / ag_conv1d_op (the core runs forward and
backward; here the arguments become the core's numbers).

Layout: an image batch is a matrix [C*H*W, N], each column one image in numpy's (C, H, W)
C-order (W fastest): numpy's (N, C, H, W) as x.reshape(N, -1).T. A 1-D signal is an image with
H = 1: numpy's (N, C, L). Shapes are written in torch order, (C, H, W) / (C, L); pairs (H, W)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from ._args import as_float, is_real, plain, show
from ._core import NULL, ffi, lib
from .errors import ArgumentError, DTypeError, PyggmlrValueError, ShapeError
from .ops import _out
from .tensor import ArrayLike, Tensor, _as_tensor, _dtype_code

__all__ = [
    "ag_conv1d_op",
    "ag_conv2d_op",
    "ag_conv_transpose1d_op",
    "ag_conv_transpose2d_op",
    "ag_image_shape",
    "ag_images",
    "ag_sequences",
]

Pair = Union[int, Sequence[int]]


def _num(v: Any, fn: str, arg: str, what: str) -> float:
    if not is_real(v):
        raise ArgumentError(f"{fn}: {arg} must be {what}, got {show(v)}")
    return as_float(v)  # 10**400: Inf, refused by the core (it raised OverflowError)


def _pair(v: Any, fn: str, arg: str, dims: int, h1: float) -> Tuple[float, float]:
    """(H, W) of a number, a 1-list or a pair; 1-D: a number (or a 1-tuple) for L, H gets h1."""
    what = "a number or a pair (H, W)" if dims == 2 else "a number"
    if isinstance(v, (list, tuple, np.ndarray)) and not isinstance(v, str):
        vals = list(np.asarray(v, dtype=object).ravel()) if isinstance(v, np.ndarray) else list(v)
        if len(vals) in (1, dims):  # [2] is 2, as R's list(2) and the pooling ops' [2]
            try:
                got = [_num(e, fn, arg, what) for e in vals] * (dims if len(vals) == 1 else 1)
            except ArgumentError:  # the whole value shown, as R's (it showed [2] of [1, [2]])
                raise ArgumentError(f"{fn}: {arg} must be {what}, got {show(v)}") from None
            return (h1, got[0]) if dims == 1 else (got[0], got[1])
        raise ArgumentError(f"{fn}: {arg} must be {what}, got {show(v)}")
    f = _num(v, fn, arg, what)
    return (h1, f) if dims == 1 else (f, f)


def _args(
    fn: str,
    dims: int,
    input_shape: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: Any,
    kernel_size: Any,
    output_padding: Any = None,
    *,
    groups_rule: str = "a whole number >= 1",
) -> Any:
    """The core's argument vector (pg_api_conv.h's enum pg_conv_arg); output_padding: the
    transposed convolution's (None: 0); groups_rule: the core's word for groups (the op's
    pg_conv_whole, a layer's pg_conv_check)."""
    a = ffi.new("double[]", lib.PG_CONV_NARGS)
    if input_shape is not None:
        want = 3 if dims == 2 else 2
        if (
            isinstance(input_shape, (str, bytes))
            or not hasattr(input_shape, "__len__")
            or (isinstance(input_shape, np.ndarray) and input_shape.ndim == 0)  # (len(): TypeError)
        ):
            raise ArgumentError(
                f"{fn}: input_shape must be {_shape_rule(dims)}, got {plain(input_shape)!r}"
            )
        if len(input_shape) != want:
            raise ArgumentError(
                f"{fn}: input_shape must be {_shape_rule(dims)}, got {plain(input_shape)!r}"
            )
        s = [_num(v, fn, "input_shape", _shape_rule(dims)) for v in input_shape]
        c, h, w = s if dims == 2 else (s[0], 1.0, s[1])
        a[lib.PG_CONV_C], a[lib.PG_CONV_H], a[lib.PG_CONV_W] = c, h, w
        a[lib.PG_CONV_HAS_SHAPE] = 1
    if kernel_size is not None:
        a[lib.PG_CONV_KH], a[lib.PG_CONV_KW] = _pair(kernel_size, fn, "kernel_size", dims, 1.0)
    a[lib.PG_CONV_SH], a[lib.PG_CONV_SW] = _pair(stride, fn, "stride", dims, 1.0)
    if isinstance(padding, str):
        modes = {"same": lib.PG_CONV_PAD_SAME, "valid": lib.PG_CONV_PAD_VALID}
        if padding not in modes:
            raise PyggmlrValueError(
                f"{fn}: padding must be a number, {'a pair (H, W), ' if dims == 2 else ''}"
                f"'same' or 'valid', got {plain(padding)!r}"
            )
        a[lib.PG_CONV_PAD_MODE] = modes[padding]
    else:
        a[lib.PG_CONV_PH], a[lib.PG_CONV_PW] = _pair(padding, fn, "padding", dims, 0.0)
    # R's order (padding, dilation, output_padding, groups): the same first refusal (issue 29)
    a[lib.PG_CONV_DH], a[lib.PG_CONV_DW] = _pair(dilation, fn, "dilation", dims, 1.0)
    if output_padding is not None:
        op = _pair(output_padding, fn, "output_padding", dims, 0.0)
        a[lib.PG_CONV_OPH], a[lib.PG_CONV_OPW] = op
    a[lib.PG_CONV_GROUPS] = _num(groups, fn, "groups", groups_rule)
    return a


def _shape_rule(dims: int) -> str:
    return "(C, H, W)" if dims == 2 else "(C, L)"


def _conv(fn, dims, x, weight, bias, input_shape, stride, padding, dilation, groups, kernel_size):
    a = _args(fn, dims, input_shape, stride, padding, dilation, groups, kernel_size)
    like = next((t for t in (x, weight, bias) if isinstance(t, Tensor)), None)
    xt = _as_tensor(x, fn, like)
    wt = _as_tensor(weight, fn, xt)
    bt = None if bias is None else _as_tensor(bias, fn, xt)
    bp = NULL if bt is None else bt._handle(fn)
    return _out(lib.pg_conv(xt._handle(fn), wt._handle(fn), bp, a, dims, fn.encode()))


def ag_conv2d_op(
    x: ArrayLike,
    weight: ArrayLike,
    bias: Optional[ArrayLike] = None,
    input_shape: Optional[Sequence[int]] = None,
    stride: Pair = 1,
    padding: Union[Pair, str] = 0,
    dilation: Pair = 1,
    groups: int = 1,
    kernel_size: Optional[Pair] = None,
) -> Tensor:
    """torch.nn.functional.conv2d on an image batch x [C*H*W, N] -> [C_out*OH*OW, N], tagged
    (C_out, OH, OW). weight [C_out, (C/groups)*kH*kW] (torch's weight reshaped (C_out, -1)),
    bias None or [C_out, 1]. input_shape (C, H, W): None reads x's image shape. stride,
    padding, dilation: a number or a pair (H, W); padding also "same" (stride 1) or "valid".
    kernel_size: None for a square kernel (from weight's columns), else a number or a pair.
    Raises ShapeError (rows not C*H*W, weight or bias not fitting, kernel larger than the padded
    input), PyggmlrValueError (non-whole or out-of-range sizes, no image shape, groups not
    dividing the channels), ArgumentError (wrong kinds)."""
    fn = "ag_conv2d_op"
    return _conv(
        fn, 2, x, weight, bias, input_shape, stride, padding, dilation, groups, kernel_size
    )


def ag_conv1d_op(
    x: ArrayLike,
    weight: ArrayLike,
    bias: Optional[ArrayLike] = None,
    input_shape: Optional[Sequence[int]] = None,
    stride: int = 1,
    padding: Union[int, str] = 0,
    dilation: int = 1,
    groups: int = 1,
    kernel_size: Optional[int] = None,
) -> Tensor:
    """torch.nn.functional.conv1d on signals x [C*L, N] (numpy's (N, C, L) as
    x.reshape(N, -1).T) -> [C_out*OL, N], tagged (C_out, 1, OL). weight [C_out, (C/groups)*k],
    bias None or [C_out, 1]; input_shape (C, L) or None (x's tag, H = 1); stride, padding,
    dilation: numbers (padding also "same" / "valid"). Errors as ag_conv2d_op."""
    fn = "ag_conv1d_op"
    return _conv(
        fn, 1, x, weight, bias, input_shape, stride, padding, dilation, groups, kernel_size
    )


def ag_conv_transpose2d_op(
    x: ArrayLike,
    weight: ArrayLike,
    bias: Optional[ArrayLike] = None,
    stride: Pair = 1,
    padding: Pair = 0,
    output_padding: Pair = 0,
    groups: int = 1,
    dilation: Pair = 1,
    input_shape: Optional[Sequence[int]] = None,
    kernel_size: Optional[Pair] = None,
) -> Tensor:
    """torch.nn.functional.conv_transpose2d on an image batch x [C_in*H*W, N] -> [C_out*OH*OW,
    N], tagged (C_out, OH, OW), OH = (H - 1) * stride - 2 * padding + dilation * (kH - 1) +
    output_padding + 1. weight [C_in, (C_out/groups)*kH*kW]: torch's weight (C_in,
    C_out/groups, kH, kW) reshaped (C_in, -1); bias None or [C_out, 1]. stride, padding,
    output_padding (smaller than the stride or the dilation), dilation: a number or a pair
    (H, W). input_shape (C_in, H, W): None reads x's image shape. kernel_size: None for a square
    kernel with C_out read from bias (needed without bias). Raises ShapeError (rows, weight or
    bias not fitting, an empty output), PyggmlrValueError (non-whole or out-of-range sizes, no
    image shape, groups not dividing C_in), ArgumentError (wrong kinds)."""
    geom = (stride, padding, output_padding, groups, dilation, input_shape, kernel_size)
    return _conv_t("ag_conv_transpose2d_op", 2, x, weight, bias, *geom)


def ag_conv_transpose1d_op(
    x: ArrayLike,
    weight: ArrayLike,
    bias: Optional[ArrayLike] = None,
    stride: int = 1,
    padding: int = 0,
    output_padding: int = 0,
    groups: int = 1,
    dilation: int = 1,
    input_shape: Optional[Sequence[int]] = None,
    kernel_size: Optional[int] = None,
) -> Tensor:
    """torch.nn.functional.conv_transpose1d on signals x [C_in*L, N] (numpy's (N, C_in, L) as
    x.reshape(N, -1).T) -> [C_out*OL, N], tagged (C_out, 1, OL), OL = (L - 1) * stride - 2 *
    padding + dilation * (k - 1) + output_padding + 1. weight [C_in, (C_out/groups)*k]: torch's
    weight (C_in, C_out/groups, k) reshaped (C_in, -1); bias None or [C_out, 1]. stride,
    padding, output_padding, dilation: numbers; input_shape (C_in, L) or None (x's tag, H = 1);
    kernel_size None reads k with C_out from bias. Errors as ag_conv_transpose2d_op's."""
    geom = (stride, padding, output_padding, groups, dilation, input_shape, kernel_size)
    return _conv_t("ag_conv_transpose1d_op", 1, x, weight, bias, *geom)


def _conv_t(fn, dims, x, weight, bias, stride, padding, output_padding, groups, dilation, shape, k):
    a = _args(fn, dims, shape, stride, padding, dilation, groups, k, output_padding)
    like = next((t for t in (x, weight, bias) if isinstance(t, Tensor)), None)
    xt = _as_tensor(x, fn, like)
    wt = _as_tensor(weight, fn, xt)
    bt = None if bias is None else _as_tensor(bias, fn, xt)
    bp = NULL if bt is None else bt._handle(fn)
    return _out(lib.pg_conv_transpose(xt._handle(fn), wt._handle(fn), bp, a, dims, fn.encode()))


def ag_image_shape(x: Tensor) -> Optional[Tuple[int, int, int]]:
    """x's image shape (C, H, W), or None (R's ag_image_shape(x); set it with
    ``x.image_shape = (C, H, W)``)."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"ag_image_shape: x must be a Tensor, got {type(x).__name__}")
    return x.image_shape


def _batch_array(fn, x, layout, layouts, dtype, tensor_hint):
    """ag_images' / ag_sequences' common checks: the layout, the dtype, an array of numbers (not
    a Tensor): (x as float64 numpy, the dtype's code)."""
    if not isinstance(layout, str) or layout not in layouts:  # an array: no elementwise `in`
        raise PyggmlrValueError(
            f"{fn}: layout must be '{layouts[0]}' or '{layouts[1]}', got {plain(layout)!r}"
        )
    code = _dtype_code(dtype, fn)
    if isinstance(x, Tensor):
        raise ArgumentError(
            f"{fn}: x must be an array ({', '.join(layout)}), not a Tensor{tensor_hint}"
        )
    if np.iscomplexobj(x):  # numpy would drop the imaginary part with a warning; R refuses it
        raise DTypeError(f"{fn}: x must be a real numeric array, got complex values")
    try:
        return np.asarray(x, dtype=np.float64), code
    except (TypeError, ValueError) as e:
        raise DTypeError(f"{fn}: x must be numeric ({e})") from None


def ag_images(x: Any, layout: str = "NCHW", dtype: Optional[str] = None) -> Tensor:
    """An image batch from a numpy array: (N, C, H, W) (layout "NCHW", torch's) or (N, H, W, C)
    ("NHWC", keras'); 3-d arrays are signals (N, C, L) / (N, L, C). Returns a new [C*H*W, N]
    tensor (dtype: "f32" / "f64", None the default) tagged (C, H, W); the core does the copy."""
    fn = "ag_images"
    a, code = _batch_array(
        fn, x, layout, ("NCHW", "NHWC"), dtype, "; tag a tensor with x.image_shape = (C, H, W)"
    )
    if a.ndim not in (3, 4):
        raise ShapeError(
            f"{fn}: x must be a 4-d array (N, C, H, W) or a 3-d (N, C, L), got shape {a.shape}"
        )
    s = [v // a.itemsize for v in a.strides]
    if a.ndim == 3:  # signals: H = 1
        n, c, h, w = (a.shape[0], a.shape[1], 1, a.shape[2])
        st = (s[0], s[1], 0, s[2])
        if layout == "NHWC":
            n, c, w, st = a.shape[0], a.shape[2], a.shape[1], (s[0], s[2], 0, s[1])
    elif layout == "NCHW":
        (n, c, h, w), st = a.shape, (s[0], s[1], s[2], s[3])
    else:
        n, h, w, c = a.shape
        st = (s[0], s[3], s[1], s[2])
    strides = ffi.new("int64_t[4]", list(st))
    data = ffi.cast("double *", a.ctypes.data)
    return _out(lib.pg_images(data, n, c, h, w, strides, code, fn.encode()))


def ag_sequences(x: Any, layout: str = "NTF", dtype: Optional[str] = None) -> Tensor:
    """A sequence batch for ag_lstm / ag_gru / ag_rnn from a numpy array: (N, T, F) (layout
    "NTF", keras' and torch's batch_first) or (T, N, F) ("TNF", torch's default); a 2-d array is
    one feature per step, (N, T) / (T, N). Returns a new [F*T, N] tensor (dtype: "f32" / "f64",
    None the default), each column one sequence with its steps' features stacked, step 0 first
    (the layers' input); the core does the copy (R's ag_sequences takes R's arrays alike)."""
    fn = "ag_sequences"
    a, code = _batch_array(
        fn, x, layout, ("NTF", "TNF"), dtype, " (a tensor [F*T, N] is already the layers' input)"
    )
    if a.ndim not in (2, 3):
        raise ShapeError(
            f"{fn}: x must be a 3-d array ({', '.join(layout)}) or a 2-d ({', '.join(layout[:2])}), "
            f"got shape {a.shape}"
        )
    s = [v // a.itemsize for v in a.strides] + ([0] if a.ndim == 2 else [])
    dims = list(a.shape) + ([1] if a.ndim == 2 else [])
    if layout == "TNF":  # the core takes (n, step, feature)
        dims[0], dims[1], s[0], s[1] = dims[1], dims[0], s[1], s[0]
    strides = ffi.new("int64_t[3]", s)
    data = ffi.cast("double *", a.ctypes.data)
    return _out(lib.pg_sequences(data, dims[0], dims[1], dims[2], strides, code, fn.encode()))
