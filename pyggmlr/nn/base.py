"""What every layer module builds on: the Module base class and ag_train / ag_eval, the
functional row ops (ag_slice_rows, ag_concat_rows, the transposed GEMM and the causal mask),
the weight initialisers (drawn from the core's R-compatible stream, pyggmlr.random) and the
dropout op. pyggmlr.nn re-exports the public names; modules.py and layers.py hold the layers."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from .. import _core
from .. import tensor as _tensor
from .._args import INT_MAX, check_flag, check_int, plain
from .._core import ffi, lib
from ..errors import DTypeError, PyggmlrMemoryError, PyggmlrValueError, ShapeError
from ..ops import ag_gelu, ag_relu, ag_sigmoid, ag_softmax, ag_tanh
from ..random import runif
from ..tensor import ArrayLike, Tensor, _wrap
from . import module as _reg
from .module import _layer_name as _layer_name  # (nn/modules.py names layers with it)
from .summary import Summary, _print_text
from .summary import summary as _summary

__all__ = ["Module", "ag_train", "ag_eval", "ag_slice_rows", "ag_concat_rows"]


# ---------------------------------------------------------------------------------------------
# functional layer ops (thin calls into the C core)


def _as_tensor(x: Any, name: str, like: Optional[Tensor] = None) -> Tensor:
    """x as a Tensor; numpy data becomes a constant of like's dtype (default dtype if None)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, list, tuple, int, float)):
        return _tensor._as_tensor(x, name, like)  # errors name the layer, as R's .need_tensor
    raise DTypeError(  # R's class and text
        f"{name}: expected a numeric matrix, vector or ag_tensor, got {type(x).__name__}"
    )


def ag_slice_rows(x: ArrayLike, from_: int, n: int) -> Tensor:
    """Rows ``from_ .. from_ + n - 1`` (0-based, as ggmlR's ag_slice_rows) of x [rows, cols].

    Args: x: a tensor or numeric data; from_: first row (0-based); n: number of rows.
    Returns: a new tensor [n, cols]; the gradient flows back into those rows of x.
    Raises: ArgumentError when from_ or n is not an integer, DTypeError when x is not a tensor
    or numeric data, PyggmlrValueError when the rows are out of range."""
    x = _as_tensor(x, "ag_slice_rows")
    # R's integer range at both ends (unbounded below, -2**70 raised OverflowError and R's
    # (int64_t) cast of -1e300 was undefined: issue 29)
    lo = -INT_MAX
    return _wrap(
        lib.pg_slice_rows(
            x._p,
            check_int(from_, "ag_slice_rows", "from", lo),
            check_int(n, "ag_slice_rows", "n", lo),
        )
    )


def ag_concat_rows(a: ArrayLike, b: ArrayLike) -> Tensor:
    """Stack a [Ra, C] on top of b [Rb, C] -> [Ra + Rb, C]; gradients split back by rows.

    Args: a, b: tensors or numeric data with the same number of columns C.
    Returns: a new tensor [Ra + Rb, C].
    Raises: ShapeError when the column counts differ, DTypeError on mixed dtypes or when an
    operand is not a tensor or numeric array."""
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


def _config(layer: Any, kind: str, *fields: str) -> Dict[str, Any]:
    """A layer's to_config(): its type, then the named attributes in order (the JSON's order)."""
    return {"type": kind, **{f: getattr(layer, f) for f in fields}}


def _fmt_num(v):
    """Numbers as R prints them in layer names: 0.5, 0, 0.1, 1e-05."""
    return f"{float(v):.15g}"


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
    lists them, state_dict() / load_state_dict() save and load them (pyggmlr.nn.module).

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
        its sub-layers; returns self. ArgumentError unless mode is True or False (numpy's too):
        "no" or an array is not a mode."""
        self.training = check_flag(mode, f"{type(self).__name__}.train", "mode")
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

    def summary(self) -> Summary:
        """R's summary(model): the table of layers (an ag_sequential's, else this one), their
        output shapes, parameter counts and totals; print() prints it as R does. See
        pyggmlr.summary. Never raises."""
        return _summary(self)

    def _n_params(self):
        return sum(t.size for t in self.parameters().values())

    def __repr__(self):
        mode = "train" if self.training else "eval"
        if type(self).kind != "module":  # a built-in layer: the core's text, as R prints it
            return _reg.describe(self, _print_text(self))
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


@contextlib.contextmanager
def _layer_memory(op: str, what: str, n_values: float = 0) -> Iterator[None]:
    """A layer's allocations: n_values (the host's float64 copy and the tensor, 16 bytes each)
    checked against the memory available before the first (the core's pg_check_alloc), and any
    MemoryError inside (numpy's, the core's) re-raised as PyggmlrMemoryError naming the layer
    and its size, as R does."""
    if n_values:
        _core.check(lib.pg_check_alloc(op.encode(), what.encode(), float(n_values), 16))
    try:
        yield
    except MemoryError as e:
        if isinstance(e, PyggmlrMemoryError) and str(e).startswith(op + ":"):
            raise
        raise PyggmlrMemoryError(f"{op}: out of memory {what} ({e})") from None


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


def _dropout(x, rate, transpose=False):
    """x times an inverted-dropout mask, one core op: the mask is drawn from the current random
    stream when the op runs (one runif(length(x))), eagerly or at each replay of a compiled graph;
    transpose: drawn as ggmlR draws attention weights, [queries, keys]."""
    x = _as_tensor(x, "ag_dropout")
    return _wrap(lib.pg_dropout(x._handle(), float(rate), int(transpose)))


# a layer's activation by name (ag_linear, ag_conv1d, ag_conv2d): None or one of these
_ACTIVATIONS = {
    "relu": ag_relu,
    "sigmoid": ag_sigmoid,
    "tanh": ag_tanh,
    "softmax": ag_softmax,
    "gelu": ag_gelu,
}


def _check_activation(activation: Any, fn: str) -> Optional[str]:
    """activation as given (None or a name of _ACTIVATIONS), else PyggmlrValueError naming fn."""
    if activation is not None and (
        not isinstance(activation, str) or activation not in _ACTIVATIONS
    ):
        raise PyggmlrValueError(
            f"{fn}: activation must be one of {', '.join(map(repr, sorted(_ACTIVATIONS)))} or None, "
            f"got {plain(activation)!r}"
        )
    return activation
