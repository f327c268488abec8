"""Layers and modules, mirroring ggmlR's ag_linear, ag_sequential, ag_dropout, ag_batch_norm,
ag_embedding and ag_multihead_attention (plus ag_layer_norm).

Forward and backward of the layer ops run in the C core (native/ops_layers.c); this module
holds the parameters, the initialisers (drawn from the core's R-compatible stream, pyggmlr.random) and the module
plumbing: parameters() with ggmlR's names, buffers(), train/eval, repr, to_config().
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

import numpy as np

from . import _core, _walk
from . import nn_module as _reg
from . import tensor as _tensor
from ._args import check_r_int
from ._core import ffi, lib
from .errors import ArgumentError, PyggmlrMemoryError, PyggmlrValueError, ShapeError
from .ops import (
    _linear,
    ag_add,
    ag_gelu,
    ag_matmul,
    ag_relu,
    ag_sigmoid,
    ag_softmax,
    ag_tanh,
)
from .random import runif
from .tensor import ArrayLike, Tensor, _wrap, ag_param

__all__ = [
    "Module",
    "ag_linear",
    "ag_sequential",
    "ag_dropout",
    "ag_batch_norm",
    "ag_layer_norm",
    "ag_embedding",
    "ag_multihead_attention",
    "ag_train",
    "ag_eval",
    "ag_slice_rows",
    "ag_concat_rows",
    "ag_module_from_config",
    "ag_to_config",
    "ag_register_layer",
]


# ---------------------------------------------------------------------------------------------
# functional layer ops (thin calls into the C core)


def _as_tensor(x: Any, name: str, like: Optional[Tensor] = None) -> Tensor:
    """x as a Tensor; numpy data becomes a constant of like's dtype (default dtype if None)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, list, tuple, int, float)):
        return _tensor._as_tensor(x, name, like, prefix=False)
    raise ArgumentError(f"{name}: expected a tensor (or numeric array), got {type(x).__name__}")


def ag_slice_rows(x: ArrayLike, from_: int, n: int) -> Tensor:
    """Rows ``from_ .. from_ + n - 1`` (0-based, as ggmlR's ag_slice_rows) of x [rows, cols].

    Args: x: a tensor or numeric data; from_: first row (0-based); n: number of rows.
    Returns: a new tensor [n, cols]; the gradient flows back into those rows of x.
    Raises: ArgumentError when from_ or n is not an integer (or x not a tensor / array),
    PyggmlrValueError when the rows are out of range."""
    x = _as_tensor(x, "ag_slice_rows")
    return _wrap(
        lib.pg_slice_rows(
            x._p, check_r_int(from_, "ag_slice_rows", "from"), check_r_int(n, "ag_slice_rows", "n")
        )
    )


def ag_concat_rows(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Stack a [Ra, C] on top of b [Rb, C] -> [Ra + Rb, C]; gradients split back by rows.

    Args: a, b: tensors or numeric data with the same number of columns C.
    Returns: a new tensor [Ra + Rb, C].
    Raises: ShapeError when the column counts differ, DTypeError on mixed dtypes, ArgumentError
    when an operand is not a tensor or numeric array."""
    a = _as_tensor(a, "ag_concat_rows", b if isinstance(b, Tensor) else None)
    b = _as_tensor(b, "ag_concat_rows", a)
    return _wrap(lib.pg_concat_rows(a._p, b._p))


def _matmul_t(a, b, ta=False, tb=False, alpha=1.0):
    """alpha * op(a) @ op(b) with the transposes done by the GEMM call."""
    return _wrap(lib.pg_matmul_t(a._p, b._p, int(bool(ta)), int(bool(tb)), float(alpha)))


def _causal_mask(scores_t):
    """scores laid out [n_keys, n_queries]: -inf where key index > query index."""
    return _wrap(lib.pg_causal_mask(scores_t._p))


# ---------------------------------------------------------------------------------------------
# module plumbing


def _fmt_num(v):
    """Numbers as R prints them in layer names: 0.5, 0, 0.1, 1e-05."""
    return f"{float(v):.15g}"


def _layer_name(layer):
    name = getattr(layer, "name", None)
    if isinstance(name, str) and name:
        return name
    return type(layer).__name__


def _set_mode(obj, training):
    if isinstance(obj, Module):
        obj.train(training)
    elif callable(getattr(obj, "train", None)) and callable(getattr(obj, "eval", None)):
        obj.train() if training else obj.eval()  # torch-style custom layer
    elif hasattr(obj, "training"):
        try:
            obj.training = training
        except AttributeError:
            pass


class Module(_reg.StateMethods):
    """Base class of the built-in layers; custom layers need not derive from it (any object
    with ``forward`` and ``parameters`` works inside ag_sequential).

    A subclass registers, as torch.nn.Module does, the layers, parameter tensors (ag_param)
    and lists / tuples / dicts of them it holds as attributes: parameters() walks them in
    assignment order (names ``fc1.W``, ``blocks.0.b``), train()/eval() reach the layers, repr
    lists them, state_dict() / load_state_dict() save and load them (pyggmlr.nn_module).

    ``training`` starts True; ``train()`` / ``eval()`` (or ag_train / ag_eval) set it on the
    module and, recursively, on its sub-layers."""

    kind = "module"
    training = True

    def forward(self, x: ArrayLike) -> Tensor:
        """Apply the layer to x [features, batch] (one column per sample).

        Returns: a tensor with one column per sample ([out_features, batch] for most layers).
        Raises: NotImplementedError here (subclasses implement it); ShapeError in layers when x
        has the wrong number of rows."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        return self.forward(*args, **kwargs)

    def parameters(self) -> OrderedDict[str, Tensor]:
        """The trainable tensors as an ordered dict name -> parameter tensor, with ggmlR's
        names (``W``, ``b``; ``layer<i>_<name>`` in ag_sequential); empty for a layer without
        parameters. The tensors are the layer's own (not copies). For a subclass: its
        registered attributes in assignment order (see the class docstring)."""
        return _reg.collect(self, "parameters")

    def buffers(self) -> OrderedDict[str, Tensor]:
        """Non-trainable state as an ordered dict name -> tensor (batch norm's running_mean and
        running_var [F, 1]); empty for most layers. The tensors are the layer's own. For a
        subclass: its registered layers' buffers, named as parameters()."""
        return _reg.collect(self, "buffers")

    def children(self) -> List[Any]:
        """The direct sub-layers, as a list (used by the train/eval recursion); [] for a plain
        layer. Sub-layers may be any objects with forward(). For a subclass: the layers held
        as attributes (or in lists / dicts), in assignment order."""
        return _reg.children(self)

    def train(self, mode: bool = True) -> Module:
        """Set training mode (mode=True) or eval mode (False) on this module and, recursively,
        its sub-layers; returns self. Never raises."""
        self.training = bool(mode)
        for c in self.children():
            _set_mode(c, self.training)
        return self

    def eval(self) -> Module:
        """Evaluation mode (dropout off, batch norm uses running statistics): train(False);
        returns self. Never raises."""
        return self.train(False)

    @property
    def name(self) -> str:
        """Short description (a str) used by print(model), e.g. 'linear(4, 16, relu)'."""
        return self.kind

    def to_config(self) -> Dict[str, Any]:
        """The architecture as a JSON-able dict ``{"type": kind, ...constructor arguments}``
        (rebuilt, with fresh weights, by ag_module_from_config and ag_load_model).

        Raises: PyggmlrValueError for modules that cannot be described (custom layers without
        to_config())."""
        raise PyggmlrValueError(
            f"{type(self).__name__} has no to_config(); it cannot be saved as an architecture"
        )

    def _n_params(self):
        return sum(t.size for t in self.parameters().values())

    def __repr__(self):
        mode = "train" if self.training else "eval"
        if type(self).kind != "module":  # a built-in layer
            return _reg.describe(
                self, f"ag_{self.kind}: {self.name} ({self._n_params()} parameters, {mode} mode)"
            )
        return _reg.describe(
            self, f"{type(self).__name__} ({self._n_params()} parameters, {mode} mode)"
        )


def ag_train(model: Any) -> Any:
    """Put model (and, recursively, its sub-layers) in training mode.

    Args: model: a Module, or a custom layer with train()/eval() or a ``training`` attribute.
    Returns: model itself. Never raises (objects without a mode are left alone)."""
    _set_mode(model, True)
    return model


def ag_eval(model: Any) -> Any:
    """Put model (and, recursively, its sub-layers) in evaluation mode (dropout off, batch norm
    on running statistics).

    Args: model: a Module, or a custom layer with train()/eval() or a ``training`` attribute.
    Returns: model itself. Never raises (objects without a mode are left alone)."""
    _set_mode(model, False)
    return model


# ---------------------------------------------------------------------------------------------
# initialisers


def _uniform(a, rows, cols, op):
    """U(-a, a) [rows, cols]: one runif(rows * cols, -a, a) filled column-major (ggmlR's draw)."""
    try:
        return runif(rows * cols, -a, a).reshape((rows, cols), order="F")
    except MemoryError as e:  # the same text as R's
        raise PyggmlrMemoryError(
            f"{op}: out of memory drawing a [{rows}x{cols}] weight ({e})"
        ) from None


def _glorot(rows, cols, a, op="ag_linear"):
    return _uniform(a, rows, cols, op)


def _orthogonal(rows, cols, gain):
    """The core's orthogonal init: one rnorm(n * k), sign-fixed Householder QR (pg_api_rng.h)."""
    _core.check(lib.pg_rng_check_size(float(rows) * cols, 8, b"ag_linear (orthogonal init)"))
    w = np.empty((rows, cols), dtype=np.float64, order="F")
    _core.check(
        lib.pg_rng_orthogonal(
            ffi.NULL, rows, cols, float(gain), ffi.cast("double *", w.ctypes.data)
        )
    )
    return w


_INITS = ("glorot_uniform", "orthogonal")


def _init_matrix(w, n_out, n_in):
    """A function's or caller's init as ggmlR checks it: a numeric [out, in] matrix, finite."""
    if isinstance(w, Tensor):
        w = w.numpy()
    try:  # a ragged list: the spec's text, not numpy's "inhomogeneous shape"
        a = np.asarray(w) if isinstance(w, (np.ndarray, list, tuple)) else None
    except (ValueError, TypeError, OverflowError):
        a = None
    if a is None or a.ndim != 2 or a.dtype.kind not in "iuf":
        raise PyggmlrValueError(
            'ag_linear: init must be "glorot_uniform", "orthogonal", a function(out, in) or a numeric matrix'
        )
    if a.shape != (n_out, n_in):
        raise ShapeError(
            f"ag_linear: init matrix is {a.shape[0]}x{a.shape[1]}, expected {n_out}x{n_in} (out x in)"
        )
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise PyggmlrValueError("ag_linear: init matrix contains NA, NaN or Inf")
    return a


_FUSED = {
    None: -1,
    "relu": lib.PG_UNARY_OP_RELU,
    "sigmoid": lib.PG_UNARY_OP_SIGMOID,
    "tanh": lib.PG_UNARY_OP_TANH,
}
_ACTIVATIONS = {
    "relu": ag_relu,
    "sigmoid": ag_sigmoid,
    "tanh": ag_tanh,
    "softmax": ag_softmax,
    "gelu": ag_gelu,
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
        n_in = check_r_int(in_features, "ag_linear", "in_features")
        n_out = check_r_int(out_features, "ag_linear", "out_features")
        if n_in < 1 or n_out < 1:
            raise PyggmlrValueError(
                f"ag_linear: in_features and out_features must be >= 1, got {n_in} and {n_out}"
            )
        if activation is not None and (
            not isinstance(activation, str) or activation not in _ACTIVATIONS
        ):
            raise PyggmlrValueError(
                f"ag_linear: activation must be one of {sorted(_ACTIVATIONS)} or None, got {activation!r}"
            )
        # ggmlR 0.8.6's order: gain, then init (validated before any draw)
        if (
            isinstance(gain, (bool, np.bool_))
            or not isinstance(gain, (int, float, np.integer, np.floating))
            or not math.isfinite(gain)
        ):
            raise PyggmlrValueError(f"ag_linear: gain must be a single finite number, got {gain!r}")
        gain = float(gain)
        if isinstance(init, str):
            # R's match.arg: a unique prefix ("orth") names an init
            hits = [k for k in _INITS if k.startswith(init)] if init else []
            if init not in _INITS and len(hits) != 1:
                raise PyggmlrValueError(
                    f"ag_linear: init must be one of 'glorot_uniform', 'orthogonal', a callable (out, in) -> array "
                    f"or a numeric array, got {init!r}"
                )
            init = init if init in _INITS else hits[0]
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
        self.W = ag_param(w)
        self.b = ag_param(np.zeros((n_out, 1)))
        self.training = True

    @property
    def name(self) -> str:
        act = f", {self.activation}" if self.activation else ""
        return f"linear({self.in_features}, {self.out_features}{act})"

    def forward(self, x: ArrayLike) -> Tensor:
        """act(W @ x + b) for x [in_features, batch] -> [out_features, batch] (a new tensor).
        Raises ShapeError when x does not have in_features rows (with a hint when x looks
        row-major), DTypeError when x is a tensor of another dtype than the weights."""
        shape = getattr(x, "shape", None)
        if shape is not None and len(shape) == 2 and shape[0] != self.in_features:
            hint = ""
            if shape[1] == self.in_features:
                hint = (
                    f"; it looks row-major [batch, features] = [{shape[0]}, {shape[1]}]: pass its transpose "
                    f"(x.T or ag_transpose(x)), samples are columns"
                )
            raise ShapeError(
                f"ag_linear: {self.name} expects x as [in_features={self.in_features}, batch] "
                f"(one column per sample), got x [{shape[0]}x{shape[1]}]{hint}"
            )
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
        return {
            "type": "linear",
            "in_features": self.in_features,
            "out_features": self.out_features,
            "activation": self.activation,
            "init": self.init,
            "gain": self.gain,
        }


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
            if not callable(getattr(layer, "forward", None)):
                raise ArgumentError(
                    f"ag_sequential: layer {i} ({type(layer).__name__}) has no forward() method"
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
        try:
            rate = float(rate)
        except (TypeError, ValueError):
            raise ArgumentError(f"ag_dropout: rate must be a number, got {rate!r}") from None
        if not (0.0 <= rate < 1.0):
            raise PyggmlrValueError(f"ag_dropout: rate must satisfy 0 <= rate < 1, got {rate}")
        self.rate = rate
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


def _dropout(x, rate, transpose=False):
    """x times an inverted-dropout mask, one core op: the mask is drawn from the current random
    stream when the op runs (one runif(length(x))), eagerly or at each replay of a compiled graph;
    transpose: drawn as ggmlR draws attention weights, [queries, keys]."""
    x = _as_tensor(x, "ag_dropout")
    return _wrap(lib.pg_dropout(x._handle(), float(rate), int(transpose)))


# the normalisation, embedding and attention layers live in nn_layers.py (they need Module above)
from .nn_layers import ag_batch_norm, ag_embedding, ag_layer_norm, ag_multihead_attention  # noqa: E402

# ---------------------------------------------------------------------------------------------
# architecture configs

_BUILDERS = {
    "linear": ag_linear,
    "dropout": ag_dropout,
    "batch_norm": ag_batch_norm,
    "layer_norm": ag_layer_norm,
    "embedding": ag_embedding,
    "multihead_attention": ag_multihead_attention,
}


def ag_register_layer(
    type_name: str, builder: Callable[[Dict[str, Any]], Any]
) -> Callable[[Dict[str, Any]], Any]:
    """Make ag_module_from_config() rebuild custom layers whose to_config() returns
    ``{"type": type_name, ...}``: builder(cfg) must return the layer (fresh weights).

    Args: type_name: a non-empty string, not a built-in layer type; builder: a callable
    cfg dict -> layer.
    Returns: builder (so it can be used as a decorator).
    Raises: ArgumentError when type_name is not a non-empty string or builder is not callable,
    PyggmlrValueError when type_name is a built-in type."""
    if not isinstance(type_name, str) or not type_name:
        raise ArgumentError("ag_register_layer: type_name must be a non-empty string")
    if type_name == "sequential" or type_name in _BUILDERS:
        raise PyggmlrValueError(f"ag_register_layer: {type_name!r} is a built-in layer type")
    if not callable(builder):
        raise ArgumentError("ag_register_layer: builder must be callable (cfg -> layer)")
    _CUSTOM[type_name] = builder
    return builder


_CUSTOM: Dict[str, Callable[[Dict[str, Any]], Any]] = {}


def ag_to_config(model: Any) -> Dict[str, Any]:
    """The architecture dict of a model (R's ag_to_config): what model.to_config() returns.

    Raises: ArgumentError when the model has no to_config()."""
    fn = getattr(model, "to_config", None)
    if not callable(fn):
        raise ArgumentError(
            f"ag_to_config: the model has no to_config() (got {type(model).__name__})"
        )
    return fn()


def ag_module_from_config(cfg: Dict[str, Any]) -> Any:
    """Rebuild a module (fresh weights drawn from the current random stream, default dtype) from the dict its
    to_config() returned.

    Args: cfg: ``{"type": ..., ...}``; "sequential" configs hold a "layers" list.
    Returns: the new module (a built-in layer, ag_sequential, or what a registered builder
    returns).
    Raises: PyggmlrValueError for a malformed dict, an unknown type (register custom ones with
    ag_register_layer) or arguments the layer does not take, plus what the layer's constructor
    raises for bad values."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("type"), str):
        raise PyggmlrValueError(
            f"ag_module_from_config: expected a dict with a 'type' key, got {cfg!r:.200}"
        )
    kind = cfg["type"]
    args = {k: v for k, v in cfg.items() if k != "type"}
    if kind == "sequential":
        layers = args.pop("layers", None)
        if not isinstance(layers, list) or args:
            raise PyggmlrValueError(
                "ag_module_from_config: a sequential config is {'type': 'sequential', 'layers': [...]}"
            )
        return ag_sequential([ag_module_from_config(c) for c in layers])
    if kind in _CUSTOM:
        layer = _CUSTOM[kind](cfg)
        if not callable(getattr(layer, "forward", None)):
            raise ArgumentError(
                f"ag_module_from_config: the builder registered for {kind!r} returned a "
                f"{type(layer).__name__}, not a layer with forward()"
            )
        return layer
    cls = _BUILDERS.get(kind)
    if cls is None:
        raise PyggmlrValueError(
            f"ag_module_from_config: unknown layer type {kind!r} (built-in: "
            f"{', '.join(['sequential'] + sorted(_BUILDERS))}; register custom ones with ag_register_layer)"
        )
    try:
        return cls(**args)
    except TypeError as e:
        raise PyggmlrValueError(
            f"ag_module_from_config: bad arguments for a {kind!r} layer {args}: {e}"
        ) from None
