"""ag_conv2d / ag_conv1d: convolution layers (torch.nn.Conv2d / Conv1d) on image batches
[C*H*W, N] (pyggmlr.conv's layout). Weight [C_out, (C_in/groups)*kH*kW] and bias [C_out, 1]
drawn as torch does by default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from the current stream
(R draws the same bits)."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .._args import check_flag, check_int
from .._core import NULL, ffi, lib
from ..conv import _args
from ..errors import ArgumentError, PyggmlrValueError
from ..ops import _out
from ..tensor import ArrayLike, Tensor, _as_tensor, ag_param
from .base import _ACTIVATIONS, Module, _check_activation, _layer_memory, _uniform

__all__ = ["ag_conv1d", "ag_conv2d"]

Pair = Union[int, Sequence[int]]


def _ints(v: Any, fn: str, arg: str, dims: int, lo: int) -> List[int]:
    """A number or a pair (H, W) (1-D: a number, or a list of one) as [H, W] / [L] ints."""
    if isinstance(v, (list, tuple, np.ndarray)):
        vals = list(v)
        if len(vals) != dims:
            what = "a number or a pair (H, W)" if dims == 2 else "a number"
            raise ArgumentError(f"{fn}: {arg} must be {what}, got {v!r}"[:300])
    else:
        vals = [v] * dims
    return [check_int(e, fn, arg, lo) for e in vals]


class _ConvNd(Module):
    dims = 2
    kind = "conv2d"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Pair,
        stride: Pair = 1,
        padding: Union[Pair, str] = 0,
        dilation: Pair = 1,
        groups: int = 1,
        bias: bool = True,
        input_shape: Optional[Sequence[int]] = None,
        activation: Optional[str] = None,
    ) -> None:
        fn, d = "ag_" + self.kind, self.dims
        cin = check_int(in_channels, fn, "in_channels", 1)
        cout = check_int(out_channels, fn, "out_channels", 1)
        g = check_int(groups, fn, "groups", 1)
        if cin % g or cout % g:
            raise PyggmlrValueError(
                f"{fn}: in_channels ({cin}) and out_channels ({cout}) must be divisible by "
                f"groups ({g})"
            )
        k = _ints(kernel_size, fn, "kernel_size", d, 1)
        self.in_channels, self.out_channels, self.groups = cin, cout, g
        self._k = k
        self._stride = _ints(stride, fn, "stride", d, 1)
        self._dilation = _ints(dilation, fn, "dilation", d, 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise PyggmlrValueError(
                    f"{fn}: padding must be a number, {'a pair (H, W), ' if d == 2 else ''}"
                    f"'same' or 'valid', got {padding!r}"
                )
            if padding == "same" and any(s != 1 for s in self._stride):
                raise PyggmlrValueError(
                    f'{fn}: padding = "same" needs stride 1 (as torch), got stride {stride!r}'
                )
            self._padding: Any = padding
        else:
            self._padding = _ints(padding, fn, "padding", d, 0)
        self.bias_flag = check_flag(bias, fn, "bias")
        self.activation = _check_activation(activation, fn)  # keras' Conv2D(activation =)
        if input_shape is not None:
            want = 3 if d == 2 else 2
            if not isinstance(input_shape, (list, tuple)) or len(input_shape) != want:
                rule = "(C, H, W)" if d == 2 else "(C, L)"
                raise ArgumentError(f"{fn}: input_shape must be {rule}, got {input_shape!r}")
            input_shape = [check_int(v, fn, "input_shape", 1) for v in input_shape]
            if input_shape[0] != cin:
                raise PyggmlrValueError(
                    f"{fn}: input_shape {tuple(input_shape)} has {input_shape[0]} channels but "
                    f"in_channels = {cin}"
                )
        self.input_shape = None if input_shape is None else tuple(input_shape)
        fan_in = cin // g * math.prod(k)
        a = 1.0 / math.sqrt(fan_in)
        what = f"for a [{cout}x{fan_in}] weight"
        with _layer_memory(fn, what, float(cout) * (fan_in + 1)):
            self.weight = ag_param(_uniform(a, cout, fan_in, fn))
            self.bias = ag_param(_uniform(a, cout, 1, fn)) if self.bias_flag else None
        self.training = True

    # the config's values: pairs as [H, W] lists (1-D: numbers), padding a string or numbers
    def _cfg(self, v: Any) -> Any:
        if isinstance(v, str):
            return v
        return list(v) if self.dims == 2 else v[0]

    @property
    def kernel_size(self) -> Any:
        """The kernel size as the config writes it: [kH, kW] (1-D: a number)."""
        return self._cfg(self._k)

    @property
    def stride(self) -> Any:
        """The stride as the config writes it: [sH, sW] (1-D: a number)."""
        return self._cfg(self._stride)

    @property
    def padding(self) -> Any:
        """The padding: [pH, pW] (1-D: a number), or "same" / "valid"."""
        return self._cfg(self._padding)

    @property
    def dilation(self) -> Any:
        """The dilation as the config writes it: [dH, dW] (1-D: a number)."""
        return self._cfg(self._dilation)

    @property
    def name(self) -> str:
        """conv2d(C_in, C_out, kHxkW[, activation]), the layer's label in prints and summaries."""
        k = "x".join(str(v) for v in self._k)
        act = f", {self.activation}" if self.activation else ""  # as ag_linear's
        return f"{self.kind}({self.in_channels}, {self.out_channels}, {k}{act})"

    def __repr__(self) -> str:
        return f"ag_{self.name}"

    def forward(self, x: ArrayLike) -> Tensor:
        """The convolution of x [C*H*W, N] (its image shape, else input_shape) -> [C_out*OH*OW,
        N], tagged (C_out, OH, OW). Errors name the layer, the argument and the shapes."""
        xt = _as_tensor(x, "ag_" + self.kind, self.weight)
        p = xt._handle()
        c = self.__dict__.get("_ccache") or self._core_args()
        tagged = lib.pg_tensor_image_shape(p, c[2]) == 1
        a = c[0] if tagged or c[1] is None else c[1]
        b = NULL if self.bias is None else self.bias._p
        y = _out(lib.pg_conv(p, self.weight._p, b, a, self.dims, c[3]))
        return y if self.activation is None else _ACTIVATIONS[self.activation](y)

    def _core_args(self) -> Any:
        """The core's argument vectors, made once: without input_shape (the input's own image
        shape) and with it (data without one); kept out of copies and pickles (cffi memory)."""
        fn = "ag_" + self.kind
        a = (self._stride, self._padding, self._dilation, self.groups, self._k)
        shp = self.input_shape
        c = (
            _args(fn, self.dims, None, *a),
            None if shp is None else _args(fn, self.dims, shp, *a),
            ffi.new("int64_t[3]"),
            fn.encode(),
        )
        self._ccache = c
        return c

    def __getstate__(self) -> Dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_ccache"}

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``weight`` [C_out, (C_in/groups)*kH*kW] and ``bias`` [C_out, 1] (when bias)."""
        p = OrderedDict([("weight", self.weight)])
        if self.bias is not None:
            p["bias"] = self.bias
        return p

    def to_config(self) -> Dict[str, Any]:
        """The layer's arguments for ag_module_from_config and model files."""
        return {
            "type": self.kind,
            "in_channels": self.in_channels,
            "out_channels": self.out_channels,
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "padding": self.padding,
            "dilation": self.dilation,
            "groups": self.groups,
            "bias": self.bias_flag,
            "input_shape": None if self.input_shape is None else list(self.input_shape),
            "activation": self.activation,
        }


class ag_conv2d(_ConvNd):
    """2-D convolution layer, torch.nn.Conv2d's arguments: kernel_size, stride, padding,
    dilation a number or a pair (H, W); padding also "same" (stride 1) or "valid"; groups
    dividing both channel counts (groups = in_channels: depthwise); bias a flag. input_shape
    (C, H, W) is only needed when the input carries no image shape (raw data to a first layer).
    activation: None or "relu", "sigmoid", "tanh", "softmax", "gelu", applied to the output as
    ag_linear's (keras' Conv2D(activation=)); the result keeps the image shape. Raises ArgumentError / PyggmlrValueError for bad arguments (naming ag_conv2d and the
    argument), ShapeError in forward for inputs that do not fit."""

    dims = 2
    kind = "conv2d"


class ag_conv1d(_ConvNd):
    """1-D convolution layer (torch.nn.Conv1d) on signals [C*L, N] (numpy's (N, C, L) as
    x.reshape(N, -1).T; an image with H = 1): kernel_size, stride, padding ("same", "valid"
    too), dilation numbers; input_shape (C, L) when the input carries no image shape;
    activation as ag_conv2d's."""

    dims = 1
    kind = "conv1d"
