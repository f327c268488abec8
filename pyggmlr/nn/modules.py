"""Layers and modules, mirroring ggmlR's ag_linear, ag_sequential, ag_dropout, ag_batch_norm,
ag_embedding and ag_multihead_attention (plus ag_layer_norm), and the architecture configs.

Forward and backward of the layer ops run in the C core (native/ops_layers.c). Module, the row
ops and the initialisers are in nn/base.py, the normalisation, embedding and attention layers
in nn/layers.py; the package (nn/__init__.py) re-exports them, so ``pyggmlr.nn`` names every
layer.
"""

from __future__ import annotations

import json
import math
import numbers
import reprlib
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

import numpy as np

from .. import _walk
from .._args import as_float, check_int, check_num, match_arg, show
from .._core import check, ffi, last_message, lib
from ..errors import ArgumentError, PyggmlrValueError
from ..ops import (
    _linear,
    ag_add,
    ag_matmul,
)
from ..random import keep_rng_on_error
from ..tensor import ArrayLike, Tensor, ag_param
from .base import (
    _ACTIVATIONS,
    _INITS,
    Module,
    _check_activation,
    _config,
    _dropout,
    _fmt_num,
    _glorot,
    _init_matrix,
    _layer_memory,
    _layer_name,
    _orthogonal,
    ag_concat_rows,
    ag_eval,
    ag_slice_rows,
    ag_train,
)
from .conv import ag_conv1d, ag_conv2d, ag_conv_transpose1d, ag_conv_transpose2d
from .layers import ag_batch_norm, ag_embedding, ag_layer_norm, ag_multihead_attention
from .pooling import (
    ag_avg_pool1d,
    ag_avg_pool1d_op,
    ag_avg_pool2d,
    ag_avg_pool2d_op,
    ag_flatten,
    ag_global_avg_pool,
    ag_global_avg_pool_op,
    ag_global_max_pool,
    ag_global_max_pool_op,
    ag_max_pool1d,
    ag_max_pool1d_op,
    ag_max_pool2d,
    ag_max_pool2d_op,
)
from .recurrent import ag_gru, ag_lstm, ag_rnn
from .resize import (
    ag_pad1d,
    ag_pad1d_op,
    ag_pad2d,
    ag_pad2d_op,
    ag_upsample1d,
    ag_upsample1d_op,
    ag_upsample2d,
    ag_upsample2d_op,
)
from .scaling import ag_normalization
from .summary import _target_lines

__all__ = [
    "Module",
    "ag_linear",
    "ag_sequential",
    "ag_dropout",
    "ag_batch_norm",
    "ag_layer_norm",
    "ag_normalization",
    "ag_conv1d",
    "ag_conv2d",
    "ag_conv_transpose1d",
    "ag_conv_transpose2d",
    "ag_embedding",
    "ag_multihead_attention",
    "ag_train",
    "ag_eval",
    "ag_slice_rows",
    "ag_concat_rows",
    "ag_module_from_config",
    "ag_to_config",
    "ag_register_layer",
    "ag_max_pool2d",
    "ag_avg_pool2d",
    "ag_max_pool1d",
    "ag_avg_pool1d",
    "ag_global_avg_pool",
    "ag_global_max_pool",
    "ag_flatten",
    "ag_max_pool2d_op",
    "ag_avg_pool2d_op",
    "ag_max_pool1d_op",
    "ag_avg_pool1d_op",
    "ag_global_avg_pool_op",
    "ag_global_max_pool_op",
    "ag_lstm",
    "ag_gru",
    "ag_rnn",
    "ag_pad2d",
    "ag_pad1d",
    "ag_upsample2d",
    "ag_upsample1d",
    "ag_pad2d_op",
    "ag_pad1d_op",
    "ag_upsample2d_op",
    "ag_upsample1d_op",
]


_FUSED = {
    None: -1,
    "relu": lib.PG_UNARY_OP_RELU,
    "sigmoid": lib.PG_UNARY_OP_SIGMOID,
    "tanh": lib.PG_UNARY_OP_TANH,
}


# ---------------------------------------------------------------------------------------------
# layers


class ag_linear(Module):
    """Fully connected layer ``act(W @ x + b)``: W [out, in], b [out, 1] zeros.

    init: "glorot_uniform" (U(-a, a), a = gain * sqrt(6 / (in + out)); ggmlR's default),
    "orthogonal" (QR of a Gaussian with the sign fix, times gain), a callable
    ``(out, in) -> array`` or an [out, in] array. activation: "relu", "sigmoid", "tanh",
    "softmax" (down each column), "gelu" or None (identity).

    Args: in_features, out_features: integers >= 1; activation, init as above; gain: a number
    scaling the initial weights. Weights are drawn from the current random stream (pyggmlr.random), as ggmlR draws them.
    Raises: ArgumentError when a size is not an integer, PyggmlrValueError for sizes < 1 or an
    unknown activation / init, ShapeError when an init array is not [out, in],
    PyggmlrMemoryError when the weight cannot be allocated."""

    kind = "linear"

    def __init__(
        self,
        in_features: int,
        out_features: int,
        activation: Optional[str] = None,
        init: Union[str, Callable[[int, int], Any], ArrayLike] = "glorot_uniform",
        gain: float = 1,
    ) -> None:
        n_in = check_int(in_features, "ag_linear", "in_features", 1)
        n_out = check_int(out_features, "ag_linear", "out_features", 1)
        if n_in < 1 or n_out < 1:
            raise PyggmlrValueError(
                f"ag_linear: in_features and out_features must be >= 1, got {n_in} and {n_out}"
            )
        _check_activation(activation, "ag_linear")
        # ggmlR 0.8.6's order: gain, then init (validated before any draw)
        kind = not isinstance(gain, (bool, np.bool_)) and isinstance(
            gain, (int, float, np.integer, np.floating)
        )
        gain = as_float(gain) if kind else math.nan  # 10**400: Inf (it raised OverflowError)
        check(lib.pg_arg_gain(b"ag_linear", gain, not kind))  # the core's rule, as R's
        if isinstance(init, str):
            # R's match.arg: a unique prefix ("orth") names an init; R's text
            init = match_arg(init, _INITS, "ag_linear", "init")
            w = (
                _glorot(n_out, n_in, math.sqrt(6.0 / (n_in + n_out)))
                if init == "glorot_uniform"
                else _orthogonal(n_out, n_in, 1.0)
            )
            if gain != 1:  # ggmlR scales after the draw: gain = 1 keeps the bits
                w = w * gain
            self.init = init
        else:
            if gain != 1:
                raise PyggmlrValueError(
                    "ag_linear: gain applies to string inits only; scale a function or matrix init yourself"
                )
            w = _init_matrix(init(n_out, n_in) if callable(init) else init, n_out, n_in)
            self.init = "glorot_uniform"  # for to_config: the weights themselves are saved
        self.in_features, self.out_features = n_in, n_out
        self.activation = activation
        self.gain = gain
        what = f"for in_features = {n_in}, out_features = {n_out} (a [{n_out}x{n_in}] weight)"
        with _layer_memory("ag_linear", what):  # MemoryErrors name the layer and its size
            self.W = ag_param(w)
            self.b = ag_param(np.zeros((n_out, 1)))
        self.training = True

    @property
    def name(self) -> str:
        act = f", {self.activation}" if self.activation else ""
        return f"linear({self.in_features}, {self.out_features}{act})"

    def forward(self, x: ArrayLike) -> Tensor:
        """act(W @ x + b) for x [in_features, batch] -> [out_features, batch] (a new tensor).
        Raises ShapeError when x does not have in_features rows (the core's text, as R's, with a
        hint when x looks row-major), DTypeError when x is a tensor of another dtype than the
        weights."""
        fused = _FUSED.get(self.activation)
        if fused is not None:  # one node, the same numbers as matmul -> add -> activation
            return _linear(self.W, x, self.b, fused)
        z = ag_add(ag_matmul(self.W, x), self.b)
        return _ACTIVATIONS[self.activation](z)  # type: ignore[index]  # None is fused above

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``W`` [out_features, in_features] and ``b`` [out_features, 1], the layer's own
        tensors (also reachable as params(), ggmlR's name)."""
        return OrderedDict([("W", self.W), ("b", self.b)])

    params = parameters  # ggmlR's ag_linear calls it params()

    def to_config(self) -> Dict[str, Any]:
        return _config(self, "linear", "in_features", "out_features", "activation", "init", "gain")


class ag_sequential(Module):
    """Layers applied in order. ``ag_sequential(l1, l2, ...)``, a single layer, or a single
    list of layers. parameters() names are ``layer<i>_<name>`` (1-based position; layers
    without parameters still take an index).

    Args: layers: Modules or custom objects with forward() (and optionally parameters()).
    Raises: ArgumentError when a layer has no forward() method. Supports len(), indexing and
    iteration over the layers."""

    kind = "sequential"

    def __init__(self, *layers: Any) -> None:
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)):
            layers = tuple(layers[0])
        if not layers:  # a model that returns its input and has no parameters is a mistake
            raise ArgumentError("ag_sequential: needs at least one layer, got none")
        for i, layer in enumerate(layers, 1):
            if not callable(getattr(layer, "forward", None)):  # R's text: a value shown, an
                plain_value = layer is None or isinstance(layer, (numbers.Number, str, bytes))
                got = show(layer) if plain_value else type(layer).__name__  # object its class
                raise ArgumentError(f"ag_sequential: layer {i} has no forward function (got {got})")
            if getattr(layer, "return_state", False) is True:  # a tuple feeds no next layer
                raise ArgumentError(
                    f"ag_sequential: layer {i} ({layer.name}) has return_state set: it returns "
                    f"(output, h_n[, c_n]), a sequential passes one tensor from layer to layer; "
                    f"call the layer directly"
                )
        self.layers = list(layers)
        self.training = True

    def forward(self, x: ArrayLike) -> Tensor:
        """Each layer's forward in order: x [in_features, batch] -> the last layer's output
        [out_features, batch]. Raises what the layers raise (ShapeError for a wrong input
        size, naming the layer)."""
        for layer in self.layers:
            x = layer.forward(x)
        return x  # type: ignore[return-value]  # x itself only for an empty sequential

    def children(self) -> List[Any]:
        return list(self.layers)

    def parameters(self) -> OrderedDict[str, Tensor]:
        """Every layer's parameters in order, named ``layer<i>_<name>`` (1-based position),
        e.g. layer1_W, layer1_b, layer3_W; the layers' own tensors."""
        out: OrderedDict[str, Tensor] = OrderedDict()
        for i, layer in enumerate(self.layers, 1):
            for n, t in _walk.items(layer, "parameters", alt="params", own=False):
                out[f"layer{i}_{n}"] = t
        return out

    def buffers(self) -> OrderedDict[str, Tensor]:
        """Every layer's buffers in order, named ``layer<i>_<name>`` as parameters()."""
        out: OrderedDict[str, Tensor] = OrderedDict()
        for i, layer in enumerate(self.layers, 1):
            for n, t in _walk.items(layer, "buffers", own=False):
                out[f"layer{i}_{n}"] = t
        return out

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, i: int) -> Any:
        return self.layers[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.layers)

    def __repr__(self):
        mode = "train" if self.training else "eval"
        lines = [f"ag_sequential ({len(self.layers)} layers, {mode} mode)"]
        lines += [f"  [{i}] {_layer_name(layer)}" for i, layer in enumerate(self.layers, 1)]
        lines += _target_lines(self)  # what ag_fit recorded (R's print shows the same lines)
        return "\n".join(lines)

    def to_config(self) -> Dict[str, Any]:
        """``{"type": "sequential", "layers": [each layer's to_config()]}``. Raises
        PyggmlrValueError naming the first layer without to_config()."""
        cfgs = []
        for i, layer in enumerate(self.layers, 1):
            fn = getattr(layer, "to_config", None)
            if not callable(fn):
                raise PyggmlrValueError(
                    f"ag_sequential.to_config: layer {i} ({_layer_name(layer)}, {type(layer).__name__}) has no "
                    "to_config(); give custom layers to_config() and register a builder with "
                    "ag_register_layer(), or rebuild the model yourself and load only the weights"
                )
            cfgs.append(fn())
        return {"type": "sequential", "layers": cfgs}


class ag_dropout(Module):
    """Inverted dropout: in training, x * mask with mask = (u > rate) / (1 - rate), u ~ U(0, 1)
    from the current random stream (pyggmlr.random); identity in eval mode or when rate == 0.

    Args: rate: the drop probability, 0 <= rate < 1.
    Raises: ArgumentError when rate is not a number, PyggmlrValueError when it is out of
    range."""

    kind = "dropout"

    def __init__(self, rate: float) -> None:
        self.rate = check_num(rate, "ag_dropout", "rate", 0, 1, hi_open=True)  # R's rule and text
        self.training = True

    @property
    def name(self) -> str:
        return f"dropout({_fmt_num(self.rate)})"

    def forward(self, x: ArrayLike) -> ArrayLike:  # type: ignore[override]
        """x [rows, cols] times a fresh mask in training mode (a new tensor of x's shape); x
        itself, unchanged (even when it is an array), in eval mode or when rate == 0."""
        if not self.training or self.rate == 0:
            return x
        return _dropout(x, self.rate)

    def to_config(self) -> Dict[str, Any]:
        return {"type": "dropout", "rate": self.rate}


# ---------------------------------------------------------------------------------------------
# architecture configs: the core's layer table (native/layer_config.c) checks each layer's
# arguments and fills the defaults; this maps the types to their classes


def _builtin_types() -> List[str]:
    """The core's built-in layer types ("sequential" first)."""
    out, i = [], 0
    while (name := lib.pg_layer_type_name(i)) != ffi.NULL:
        out.append(ffi.string(name).decode())
        i += 1
    return out


# each built-in type's class: ag_<type>, over the core's table (not a second hand-kept list)
_BUILDERS = {t: globals()[f"ag_{t}"] for t in _builtin_types()[1:]}


def ag_register_layer(
    type: str,  # noqa: A002 - R's name for the argument (one name in both languages)
    builder: Callable[[Dict[str, Any]], Any],
) -> Callable[[Dict[str, Any]], Any]:
    """Make ag_module_from_config() rebuild custom layers whose to_config() returns
    ``{"type": type, ...}``: builder(cfg) must return the layer (fresh weights).

    Args: type: a non-empty string, not a built-in layer type; builder: a callable
    cfg dict -> layer.
    Returns: builder (so it can be used as a decorator).
    Raises: ArgumentError when type is not a non-empty string or builder is not callable,
    PyggmlrValueError when type is a built-in type."""
    name = type.encode("utf-8", "surrogatepass") if isinstance(type, str) else ffi.NULL
    check(lib.pg_layer_register_check(name, callable(builder)))  # the core's rules and texts
    _CUSTOM[type] = builder
    return builder


_CUSTOM: Dict[str, Callable[[Dict[str, Any]], Any]] = {}


def _shown(v: Any) -> bytes:
    return type(v).__name__.encode()


def ag_to_config(model: Any) -> Dict[str, Any]:
    """The architecture dict of a model (R's ag_to_config): what model.to_config() returns.

    Raises: ArgumentError when the model has no to_config()."""
    fn = getattr(model, "to_config", None)
    if not callable(fn):  # pg_layer_arg_fail always refuses
        lib.pg_layer_arg_fail(lib.PG_LAYER_BAD_NO_CONFIG, ffi.NULL, _shown(model))
        raise ArgumentError(last_message())
    return fn()


def ag_module_from_config(cfg: Dict[str, Any]) -> Any:
    """Rebuild a module (fresh weights drawn from the current random stream, default dtype) from the dict its
    to_config() returned.

    Args: cfg: ``{"type": ..., ...}``; "sequential" configs hold a "layers" list.
    Returns: the new module (a built-in layer, ag_sequential, or what a registered builder
    returns).
    Raises: PyggmlrValueError for a malformed dict, an unknown type (register custom ones with
    ag_register_layer), arguments the layer does not take or values out of their range (the
    core's texts, as R's), plus what the layer's constructor raises (out of memory). A config
    refused part-way draws nothing: the stream is put back."""
    with keep_rng_on_error():
        return _from_config(cfg, 0)


def _json_value(v: Any) -> str:
    """One config value as JSON for the core: plain values as json writes them (numpy's too),
    anything else (NaN, objects, cycles, deep nests) as null or its short repr, which the
    core's table then refuses by name."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return json.dumps(float(v)) if math.isfinite(v) else "null"
    try:  # compact, as R's jsonlite writes it: the core quotes it in its messages
        return json.dumps(v, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return json.dumps(reprlib.repr(v))


def _from_config(cfg: Any, depth: int) -> Any:
    """ag_module_from_config at nesting depth (sequentials within sequentials, bounded by the
    core's PG_CONFIG_MAX_DEPTH: a config nested 5,000 levels is a PyggmlrValueError, not a
    RecursionError). A sequential goes to the core with its layers emptied; this walks them."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("type"), str):
        raise PyggmlrValueError(
            f"ag_module_from_config: expected a dict with a 'type' key, got {reprlib.repr(cfg):.200}"
        )
    kind = cfg["type"]
    layers = cfg.get("layers") if kind == "sequential" else None
    text = ", ".join(
        f"{json.dumps(str(k))}: {'[]' if k == 'layers' and isinstance(layers, list) else _json_value(v)}"
        for k, v in cfg.items()
    ).encode()
    buf = ffi.new("char[]", lib.PG_LAYER_CONFIG_MAX)
    n = lib.pg_layer_config(
        b"{" + text + b"}", len(text) + 2, depth, kind in _CUSTOM, buf, len(buf)
    )
    check(n if n < 0 else 0)
    if kind == "sequential":
        return ag_sequential([_from_config(c, depth + 1) for c in layers])  # type: ignore[union-attr]
    if n == 0:  # a registered custom type: the builder's
        layer = _CUSTOM[kind](cfg)
        if not callable(getattr(layer, "forward", None)):  # the core's text
            check(lib.pg_layer_arg_fail(lib.PG_LAYER_BAD_BUILT, kind.encode(), _shown(layer)))
        return layer
    return _BUILDERS[kind](**json.loads(ffi.string(buf)))
