"""Padding and upsampling of image batches (issue 30): the functional ops (ag_pad2d_op,
ag_pad1d_op, ag_upsample2d_op, ag_upsample1d_op) and the layers (ag_pad2d, ag_pad1d, ag_upsample2d,
ag_upsample1d).

Images are [C*H*W, N] as for pooling (nn/pooling.py); the ops read the image shape from
``input_shape`` (torch order (C, H, W), or (C, L) for 1-D) or else from the tensor's image tag,
the layers from the tag. The core (native/ops_resize.c) checks the arguments, pads or
upsamples, differentiates exactly and tags the result with its image shape."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from .._args import as_float, is_real, plain, show
from .._core import check, ffi, lib
from ..errors import ArgumentError
from ..tensor import ArrayLike, Tensor, _wrap
from .base import Module, _as_tensor
from .pooling import _shape, _sizes

__all__ = [
    "ag_pad2d_op",
    "ag_pad1d_op",
    "ag_upsample2d_op",
    "ag_upsample1d_op",
    "ag_pad2d",
    "ag_pad1d",
    "ag_upsample2d",
    "ag_upsample1d",
]

Pad = Union[int, float, Sequence[Union[int, float]]]


def _padding(v: Any, fn: str, dims: int) -> Any:
    """A number or a sequence of numbers as (double[n], n) for the core, which checks the count
    (1, 2 or 4; 1-D: 1 or 2) and that each is a whole number (negative: crop)."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    vals = [v] if is_real(v) else v
    if not isinstance(vals, (tuple, list)) or not vals or not all(is_real(e) for e in vals):
        what = (
            "a number, a pair (H, W) or four (left, right, top, bottom) numbers"
            if dims == 2
            else "a number or a pair (left, right) of numbers"
        )
        raise ArgumentError(f"{fn}: padding must be {what}, got {show(v)}")
    return ffi.new("double[]", [as_float(e) for e in vals]), len(vals)


def _value(v: Any, fn: str) -> float:
    if not is_real(v):
        raise ArgumentError(f"{fn}: value must be a number, got {show(v)}")
    return as_float(v)


def _mode(v: Any, fn: str) -> bytes:
    if not isinstance(v, str):
        raise ArgumentError(f"{fn}: mode must be a string, got {plain(v)!r}"[:300])
    return v.encode()


def _pad(x, dims, padding, value, mode, input_shape, fn):
    x = _as_tensor(x, fn)
    p, n = _padding(padding, fn, dims)
    v, m = _value(value, fn), _mode(mode, fn)
    shape = _shape(input_shape, fn, dims + 1)
    return _wrap(lib.pg_pad2d(x._p, dims, shape, p, n, v, m, fn.encode()))


def _upsample(x, dims, scale_factor, mode, input_shape, fn):
    x = _as_tensor(x, fn)
    s = _sizes(scale_factor, fn, "scale_factor", dims)
    m, shape = _mode(mode, fn), _shape(input_shape, fn, dims + 1)
    return _wrap(lib.pg_upsample2d(x._p, dims, shape, s, m, fn.encode()))


def ag_pad2d_op(
    x: ArrayLike,
    padding: Pad,
    value: float = 0,
    mode: str = "constant",
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Pads images x [C*H*W, N] (torch's F.pad on (N, C, H, W)).

    Args: padding: a whole number (every side), a pair (H, W) (top and bottom H, left and
    right W, keras' ZeroPadding2D) or four (left, right, top, bottom) as torch's F.pad, a
    negative pad cropping that side in every mode (torch's rule: the result keeps >= 1 in each
    dimension; "constant"'s crops together fit in the input); value:
    the fill of mode "constant" (finite); mode: "constant", "reflect" (mirror without the edge;
    each side's padding less than that dimension) or "replicate" (repeat the edge);
    input_shape: (C, H, W), None for x's image tag.
    Returns: [C*Ho*Wo, N] tagged (C, Ho, Wo), Ho = H + top + bottom, Wo = W + left + right.
    Raises: ArgumentError for a non-number, PyggmlrValueError for bad sizes, counts, modes or
    a nonzero value with another mode, ShapeError for rows that are not C*H*W, no shape and
    no tag, reflect padding not less than the input, or crops that empty the result or
    ("constant") exceed the input (the core's texts)."""
    return _pad(x, 2, padding, value, mode, input_shape, "ag_pad2d_op")


def ag_pad1d_op(
    x: ArrayLike,
    padding: Pad,
    value: float = 0,
    mode: str = "constant",
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Pads signals x [C*L, N] (torch's F.pad on (N, C, L)): padding a whole number (both ends)
    or a pair (left, right); value, mode as ag_pad2d_op; input_shape (C, L) or None for x's tag
    (H must be 1). Returns [C*Lo, N] tagged (C, 1, Lo)."""
    return _pad(x, 1, padding, value, mode, input_shape, "ag_pad1d_op")


def ag_upsample2d_op(
    x: ArrayLike,
    scale_factor: Union[int, float, Sequence[Union[int, float]]],
    mode: str = "nearest",
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Upsamples images x [C*H*W, N] by whole factors (torch's nn.Upsample / F.interpolate with
    scale_factor; keras' UpSampling2D).

    Args: scale_factor: a whole number >= 1 or a pair (H, W); mode: "nearest" (input
    (oh // sh, ow // sw)) or "bilinear" (align_corners False: source coordinate
    max(0, (o + 0.5) / s - 0.5), torch's with scale_factor given); input_shape: (C, H, W), None
    for x's image tag.
    Returns: [C*(H*sh)*(W*sw), N] tagged (C, H*sh, W*sw).
    Raises: as ag_pad2d_op for bad factors, modes and shapes."""
    return _upsample(x, 2, scale_factor, mode, input_shape, "ag_upsample2d_op")


def ag_upsample1d_op(
    x: ArrayLike,
    scale_factor: Union[int, float],
    mode: str = "nearest",
    input_shape: Optional[Sequence[int]] = None,
) -> Tensor:
    """Upsamples signals x [C*L, N] by a whole factor (torch's nn.Upsample on (N, C, L); keras'
    UpSampling1D(size) is "nearest"): mode "nearest" or "linear" (align_corners False, the
    bilinear rule with H = 1); input_shape (C, L) or None for x's tag (H must be 1).
    Returns [C*L*s, N] tagged (C, 1, L*s). Raises as ag_upsample2d_op."""
    return _upsample(x, 1, scale_factor, mode, input_shape, "ag_upsample1d_op")


# ---------------------------------------------------------------------------------------------
# layers


class _Pad(Module):
    """Padding layer over its input's image tag; keeps the padding as the core normalizes it
    ((left, right, top, bottom); 1-D: (left, right))."""

    _dims = 2

    def __init__(self, padding: Pad, value: float = 0, mode: str = "constant"):
        fn = f"ag_{self.kind}"
        p, n = _padding(padding, fn, self._dims)
        v, m = _value(value, fn), _mode(mode, fn)
        out = ffi.new("double[4]")
        check(lib.pg_pad2d_check(self._dims, p, n, v, m, fn.encode(), out))
        self.padding = tuple(int(out[i]) for i in range(2 * self._dims))
        self.value, self.mode = v, mode
        self.training = True

    @property
    def name(self) -> str:
        p = ", ".join(str(e) for e in self.padding)
        return f"{self.kind}({p}{'' if self.mode == 'constant' else ', ' + self.mode})"

    def forward(self, x: ArrayLike) -> Tensor:
        """Pad x by its image tag; errors as the functional op's, naming the layer."""
        fn = f"ag_{self.kind}"
        return _pad(x, self._dims, self.padding, self.value, self.mode, None, fn)

    def to_config(self) -> Dict[str, Any]:
        value = int(self.value) if self.value == int(self.value) else self.value
        return {"type": self.kind, "padding": list(self.padding), "value": value, "mode": self.mode}


class ag_pad2d(_Pad):
    """Padding layer (torch's nn.ZeroPad2d / ReflectionPad2d / ReplicationPad2d, keras'
    ZeroPadding2D for mode "constant" and value 0): padding, value and mode as ag_pad2d_op;
    the input's image tag gives (C, H, W). Raises at construction the core's texts."""

    kind = "pad2d"


class ag_pad1d(_Pad):
    """Padding layer over signals [C*L, N] tagged (C, 1, L) (torch's nn.ConstantPad1d, ...):
    padding a whole number or a pair (left, right); value and mode as ag_pad2d."""

    kind, _dims = "pad1d", 1


class ag_upsample2d(Module):
    """Upsampling layer (torch's nn.Upsample(scale_factor=, mode=), keras' UpSampling2D): whole
    scale factors, a number or a pair (H, W); mode "nearest" or "bilinear" (align_corners
    False). Reads the input's image tag."""

    kind = "upsample2d"

    def __init__(
        self, scale_factor: Union[int, float, Sequence[Union[int, float]]], mode: str = "nearest"
    ):
        fn = "ag_upsample2d"
        s, m = _sizes(scale_factor, fn, "scale_factor", 2), _mode(mode, fn)
        check(lib.pg_upsample2d_check(2, s, m, fn.encode()))
        self.scale_factor, self.mode = (int(s[0]), int(s[1])), mode
        self.training = True

    @property
    def name(self) -> str:
        return f"upsample2d({self.scale_factor[0]}x{self.scale_factor[1]}, {self.mode})"

    def forward(self, x: ArrayLike) -> Tensor:
        return _upsample(x, 2, self.scale_factor, self.mode, None, "ag_upsample2d")

    def to_config(self) -> Dict[str, Any]:
        return {"type": "upsample2d", "scale_factor": list(self.scale_factor), "mode": self.mode}


class ag_upsample1d(Module):
    """Upsampling layer over signals [C*L, N] tagged (C, 1, L) (torch's nn.Upsample on (N, C, L),
    keras' UpSampling1D): a whole scale factor; mode "nearest" or "linear" (align_corners
    False)."""

    kind = "upsample1d"

    def __init__(self, scale_factor: Union[int, float], mode: str = "nearest"):
        fn = "ag_upsample1d"
        s, m = _sizes(scale_factor, fn, "scale_factor", 1), _mode(mode, fn)
        check(lib.pg_upsample2d_check(1, s, m, fn.encode()))
        self.scale_factor, self.mode = int(s[0]), mode
        self.training = True

    @property
    def name(self) -> str:
        return f"upsample1d({self.scale_factor}, {self.mode})"

    def forward(self, x: ArrayLike) -> Tensor:
        return _upsample(x, 1, self.scale_factor, self.mode, None, "ag_upsample1d")

    def to_config(self) -> Dict[str, Any]:
        return {"type": "upsample1d", "scale_factor": self.scale_factor, "mode": self.mode}
