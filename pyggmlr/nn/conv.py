"""ag_conv2d / ag_conv1d: convolution layers (torch.nn.Conv2d / Conv1d) on image batches
[C*H*W, N] (pyggmlr.conv's layout). Weight [C_out, (C_in/groups)*kH*kW] and bias [C_out, 1]
drawn as torch does by default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from the current stream
(R draws the same bits); init = "glorot_uniform" / "he_uniform" draw keras' kernels, bias zeros."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .._args import as_float, check_flag, is_real, plain, show
from .._core import NULL, check, ffi, lib
from ..conv import _args, _pair
from ..errors import ArgumentError, PyggmlrValueError
from ..ops import _out
from ..tensor import ArrayLike, Tensor, _as_tensor, ag_param
from .base import _ACTIVATIONS, Module, _check_activation, _layer_memory, _uniform

__all__ = ["ag_conv1d", "ag_conv2d", "ag_conv_transpose1d", "ag_conv_transpose2d"]

Pair = Union[int, Sequence[int]]


def _whole(v: Any, fn: str, arg: str) -> float:
    """A channel count's kind (the core checks the value: pg_conv_check)."""
    if not is_real(v):
        raise ArgumentError(f"{fn}: {arg} must be an integer >= 1, got {show(v, False)}")
    return as_float(v)  # 10**400: Inf, refused by the core (it raised OverflowError)


def _check(
    fn: str, dims: int, transpose: int, cin: Any, cout: Any, shape: Any, *a: Any
) -> Tuple[Any, int, int]:
    """The constructor's arguments checked once by the core (pg_conv_check, the texts R raises
    too); returns the argument vector and the channel counts."""
    if a[4] is None:  # the op's kernel_size comes from its weight; a layer needs one (as R's)
        _pair(None, fn, "kernel_size", dims, 1.0)
    v = _args(fn, dims, shape, *a, groups_rule="an integer >= 1")  # pg_conv_check's words
    ci, co = _whole(cin, fn, "in_channels"), _whole(cout, fn, "out_channels")
    check(lib.pg_conv_check(ci, co, v, dims, transpose, fn.encode()))
    return v, int(ci), int(co)


# init: torch's default (weight and bias U(+-1/sqrt(fan_in))), keras' glorot_uniform and
# he_uniform (torch's xavier_uniform_ / kaiming_uniform_(nonlinearity="relu") on the torch-shaped
# weight; bias zeros); a unique prefix names one, as R's match.arg
_CONV_INITS = ("torch", "glorot_uniform", "he_uniform")


def _conv_init(init: Any, fn: str) -> str:
    """init checked (before any draw): one of _CONV_INITS or a unique prefix of one."""
    hits = [k for k in _CONV_INITS if k.startswith(init)] if isinstance(init, str) and init else []
    if isinstance(init, str) and (init in _CONV_INITS or len(hits) == 1):
        return init if init in _CONV_INITS else hits[0]
    err = PyggmlrValueError if isinstance(init, str) else ArgumentError
    raise err(
        f"{fn}: init must be one of 'torch', 'glorot_uniform', 'he_uniform', got {plain(init)!r}"[
            :300
        ]
    )


def _conv_draw(
    init: str, fn: str, rows: int, cols: int, nbias: int, fans: Tuple[int, int]
) -> Tuple[Any, Any]:
    """The weight [rows, cols] (one runif) then the bias [nbias, 1] (torch: a second runif;
    keras' inits: zeros, no draw; nbias 0: none). fans: torch's (fan_in, fan_out)."""
    fan_in, fan_out = fans
    if init == "torch":
        a = 1.0 / math.sqrt(fan_in)
    elif init == "glorot_uniform":
        a = math.sqrt(6.0 / (fan_in + fan_out))
    else:
        a = math.sqrt(6.0 / fan_in)
    w = ag_param(_uniform(a, rows, cols, fn))
    if not nbias:
        return w, None
    return w, ag_param(_uniform(a, nbias, 1, fn) if init == "torch" else np.zeros((nbias, 1)))


def _pair_of(v: Any, ih: int, iw: int, dims: int) -> List[int]:
    return [int(v[ih]), int(v[iw])] if dims == 2 else [int(v[iw])]


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
        init: str = "torch",
    ) -> None:
        fn, d = "ag_" + self.kind, self.dims
        if isinstance(input_shape, np.ndarray):  # a numpy vector, as the functional ops take
            input_shape = input_shape.tolist()
        if input_shape is not None and not isinstance(input_shape, (list, tuple)):
            raise ArgumentError(
                f"{fn}: input_shape must be {'(C, H, W)' if d == 2 else '(C, L)'}, "
                f"got {plain(input_shape)!r}"
            )
        v, cin, cout = _check(
            fn,
            d,
            0,
            in_channels,
            out_channels,
            input_shape,
            stride,
            padding,
            dilation,
            groups,
            kernel_size,
        )
        g = int(v[lib.PG_CONV_GROUPS])
        k = _pair_of(v, lib.PG_CONV_KH, lib.PG_CONV_KW, d)
        self.in_channels, self.out_channels, self.groups = cin, cout, g
        self._k = k
        self._stride = _pair_of(v, lib.PG_CONV_SH, lib.PG_CONV_SW, d)
        self._dilation = _pair_of(v, lib.PG_CONV_DH, lib.PG_CONV_DW, d)
        pad_str = isinstance(padding, str)
        self._padding: Any = padding if pad_str else _pair_of(v, lib.PG_CONV_PH, lib.PG_CONV_PW, d)
        self.use_bias = check_flag(bias, fn, "bias")
        self.activation = _check_activation(activation, fn)  # keras' Conv2D(activation =)
        self.init = _conv_init(init, fn)
        if input_shape is not None:
            input_shape = [int(e) for e in input_shape]
        self.input_shape = None if input_shape is None else tuple(input_shape)
        fan_in = cin // g * math.prod(k)
        fans = (fan_in, cout * math.prod(k))  # torch's, from the weight (C_out, C_in/g, kH, kW)
        what = f"for a [{cout}x{fan_in:.0f}] weight"  # as R's (a double)
        with _layer_memory(fn, what, float(cout) * (fan_in + 1)):
            nb = cout if self.use_bias else 0
            self.weight, self.bias = _conv_draw(self.init, fn, cout, fan_in, nb, fans)
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
            "bias": self.use_bias,
            "input_shape": None if self.input_shape is None else list(self.input_shape),
            "activation": self.activation,
            "init": self.init,
        }


class ag_conv2d(_ConvNd):
    """2-D convolution layer, torch.nn.Conv2d's arguments: kernel_size, stride, padding,
    dilation a number or a pair (H, W); padding also "same" (stride 1) or "valid"; groups
    dividing both channel counts (groups = in_channels: depthwise); bias a flag. input_shape
    (C, H, W) is only needed when the input carries no image shape (raw data to a first layer).
    activation: None or "relu", "sigmoid", "tanh", "softmax", "gelu", applied to the output as
    ag_linear's (keras' Conv2D(activation=)); the result keeps the image shape. init: "torch"
    (torch's default: weight and bias U(+-1/sqrt(fan_in)), fan_in = (C_in/groups)*kH*kW),
    "glorot_uniform" (keras' default: U(+-sqrt(6/(fan_in+fan_out))), fan_out = C_out*kH*kW)
    or "he_uniform" (U(+-sqrt(6/fan_in))), those two with bias zeros; a unique prefix too.
    Raises ArgumentError / PyggmlrValueError for bad arguments (naming ag_conv2d and the
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


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions (ag_conv_transpose2d, ag_conv_transpose1d): torch's
    ConvTranspose2d / ConvTranspose1d arguments in its order, one core op (pg_conv_transpose)."""

    dims = 2
    kind = "conv_transpose2d"

    def __init__(  # pylint: disable=super-init-not-called
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Pair,
        stride: Pair = 1,
        padding: Pair = 0,
        output_padding: Pair = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Pair = 1,
        input_shape: Optional[Sequence[int]] = None,
        activation: Optional[str] = None,
        init: str = "torch",
    ) -> None:
        fn, d = "ag_" + self.kind, self.dims
        if input_shape is not None and not isinstance(input_shape, (list, tuple)):
            raise ArgumentError(
                f"{fn}: input_shape must be {'(C, H, W)' if d == 2 else '(C, L)'}, "
                f"got {plain(input_shape)!r}"
            )
        v, cin, cout = _check(
            fn,
            d,
            1,
            in_channels,
            out_channels,
            input_shape,
            stride,
            padding,
            dilation,
            groups,
            kernel_size,
            output_padding,
        )
        g = int(v[lib.PG_CONV_GROUPS])
        self.in_channels, self.out_channels, self.groups = cin, cout, g
        self._k = _pair_of(v, lib.PG_CONV_KH, lib.PG_CONV_KW, d)
        self._stride = _pair_of(v, lib.PG_CONV_SH, lib.PG_CONV_SW, d)
        self._padding = _pair_of(v, lib.PG_CONV_PH, lib.PG_CONV_PW, d)
        self._output_padding = _pair_of(v, lib.PG_CONV_OPH, lib.PG_CONV_OPW, d)
        self._dilation = _pair_of(v, lib.PG_CONV_DH, lib.PG_CONV_DW, d)
        self.use_bias = check_flag(bias, fn, "bias")
        self.activation = _check_activation(activation, fn)
        self.init = _conv_init(init, fn)
        self.input_shape = None if input_shape is None else tuple(int(e) for e in input_shape)
        fan_in = cout // g * math.prod(self._k)  # torch: weight.size(1) * kH * kW
        fans = (fan_in, cin * math.prod(self._k))  # and weight.size(0) * kH * kW
        with _layer_memory(fn, f"for a [{cin}x{fan_in:.0f}] weight", float(cin) * fan_in + cout):
            nb = cout if self.use_bias else 0
            self.weight, self.bias = _conv_draw(self.init, fn, cin, fan_in, nb, fans)
        self.training = True

    @property
    def output_padding(self) -> Any:
        """The output padding as the config writes it: [opH, opW] (1-D: a number)."""
        return self._cfg(self._output_padding)

    def forward(self, x: ArrayLike) -> Tensor:
        """The transposed convolution of x [C_in*H*W, N] (its image shape, else input_shape)
        -> [C_out*OH*OW, N], tagged (C_out, OH, OW) (1-D: H = 1)."""
        fn = "ag_" + self.kind
        xt = _as_tensor(x, fn, self.weight)
        p = xt._handle()
        c = self.__dict__.get("_ccache") or self._core_args()
        tagged = lib.pg_tensor_image_shape(p, c[2]) == 1
        a = c[0] if tagged or c[1] is None else c[1]
        b = NULL if self.bias is None else self.bias._p
        y = _out(lib.pg_conv_transpose(p, self.weight._p, b, a, self.dims, c[3]))
        return y if self.activation is None else _ACTIVATIONS[self.activation](y)

    def _core_args(self) -> Any:
        fn = "ag_" + self.kind
        a = (self._stride, self._padding, self._dilation, self.groups, self._k)
        op, shp = self._output_padding, self.input_shape
        c = (
            _args(fn, self.dims, None, *a, op),
            None if shp is None else _args(fn, self.dims, shp, *a, op),
            ffi.new("int64_t[3]"),
            fn.encode(),
        )
        self._ccache = c
        return c

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``weight`` [C_in, (C_out/groups)*kH*kW] and ``bias`` [C_out, 1] (when bias)."""
        return super().parameters()

    def to_config(self) -> Dict[str, Any]:
        """The layer's arguments (torch's order) for ag_module_from_config and model files."""
        return {
            "type": self.kind,
            "in_channels": self.in_channels,
            "out_channels": self.out_channels,
            "kernel_size": self.kernel_size,
            "stride": self.stride,
            "padding": self.padding,
            "output_padding": self.output_padding,
            "groups": self.groups,
            "bias": self.use_bias,
            "dilation": self.dilation,
            "input_shape": None if self.input_shape is None else list(self.input_shape),
            "activation": self.activation,
            "init": self.init,
        }


class ag_conv_transpose2d(_ConvTransposeNd):
    """Transposed 2-D convolution layer, torch.nn.ConvTranspose2d's arguments in its order:
    kernel_size, stride, padding, output_padding (smaller than the stride or the dilation),
    dilation a number or a pair (H, W); groups dividing both channel counts; bias a flag.
    Weight [C_in, (C_out/groups)*kH*kW] (torch's (C_in, C_out/groups, kH, kW) reshaped
    (C_in, -1)) and bias [C_out, 1] drawn as torch does, U(+-1/sqrt(fan_in)) with fan_in =
    (C_out/groups)*kH*kW. input_shape (C_in, H, W), activation and init as ag_conv2d's (torch's
    fans of that weight: fan_out = C_in*kH*kW). The output is
    [C_out*OH*OW, N], OH = (H - 1) * stride - 2 * padding + dilation * (kH - 1) +
    output_padding + 1, tagged (C_out, OH, OW)."""

    dims = 2
    kind = "conv_transpose2d"


class ag_conv_transpose1d(_ConvTransposeNd):
    """Transposed 1-D convolution layer (torch.nn.ConvTranspose1d) on signals [C_in*L, N]
    (numpy's (N, C_in, L) as x.reshape(N, -1).T; an image with H = 1), its arguments in its
    order: kernel_size, stride, padding, output_padding (smaller than the stride or the
    dilation), dilation numbers; groups, bias, activation, init as ag_conv_transpose2d's.
    Weight [C_in, (C_out/groups)*k] (torch's (C_in, C_out/groups, k) reshaped (C_in, -1)),
    bias [C_out, 1]; input_shape (C_in, L) when the input carries no image shape. The output is
    [C_out*OL, N], OL = (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1,
    tagged (C_out, 1, OL)."""

    dims = 1
    kind = "conv_transpose1d"
