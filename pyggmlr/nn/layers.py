"""The normalisation, embedding and attention layers (ggmlR's ag_batch_norm, ag_layer_norm,
ag_embedding, ag_multihead_attention), built on Module and the helpers in base.py; ag_linear,
ag_sequential, ag_dropout and the configs are in modules.py, which re-exports these. The layer ops
run in the C core (native/ops_layers.c)."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, Optional

import numpy as np

from .. import _core
from .._args import check_as_integer, check_flag, check_int, check_num, show
from .._core import NULL, ffi, lib
from ..errors import PyggmlrValueError, ShapeError
from ..ops import _class_ids, ag_add, ag_matmul
from ..tensor import ArrayLike, Tensor, _wrap, ag_param, ag_tensor
from .base import (
    Module,
    _as_tensor,
    _config,
    _glorot,
    _layer_memory,
    _uniform,
)

__all__ = ["ag_batch_norm", "ag_layer_norm", "ag_embedding", "ag_multihead_attention"]


def _is_true(v: Any) -> bool:
    """R's isTRUE: only True (numpy's too) is True; "no", 1 and None are False."""
    return v is True or (isinstance(v, np.bool_) and bool(v))


class ag_batch_norm(Module):
    """Batch normalisation over the batch (columns) per feature (row) of x [F, B].

    gamma = ones, beta = zeros (parameters [F, 1]); running_mean = zeros, running_var = ones
    (buffers). Training: batch mean and biased variance, running <- (1 - momentum) * running +
    momentum * batch on every training forward. Eval: running stats. The input gradient is the
    exact one (ggmlR uses a simplified g / sqrt(var + eps)).

    Args: num_features: F >= 1; eps: >= 0, added to the variance; momentum: in [0, 1].
    Raises: ArgumentError when num_features is not an integer, PyggmlrValueError when a value
    is out of range."""

    kind = "batch_norm"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        F = check_int(num_features, "ag_batch_norm", "num_features", 1)
        if F < 1:
            raise PyggmlrValueError(f"ag_batch_norm: num_features must be >= 1, got {F}")
        eps = check_num(eps, "ag_batch_norm", "eps", 0)
        momentum = check_num(momentum, "ag_batch_norm", "momentum", 0, 1)
        self.num_features, self.eps, self.momentum = F, eps, momentum
        what = f"allocating num_features = {F} ([{F}x1] gamma, beta, running_mean, running_var)"
        with _layer_memory("ag_batch_norm", what, 4.0 * F):
            self.gamma = ag_param(np.ones((F, 1)))
            self.beta = ag_param(np.zeros((F, 1)))
            self.running_mean = ag_tensor(np.zeros((F, 1)))
            self.running_var = ag_tensor(np.ones((F, 1)))
        self.training = True

    @property
    def name(self) -> str:
        return f"batch_norm({self.num_features})"

    def forward(self, x: ArrayLike) -> Tensor:
        """Normalise x [F, batch] per row -> a new tensor [F, batch] (updates the running
        statistics in training mode). Raises ShapeError when x does not have F rows."""
        x = _as_tensor(x, "ag_batch_norm", self.gamma)
        return _wrap(
            lib.pg_batch_norm(
                x._p,
                self.gamma._p,
                self.beta._p,
                self.running_mean._p,
                self.running_var._p,
                self.eps,
                self.momentum,
                int(bool(self.training)),
            )
        )

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``gamma`` and ``beta``, each [num_features, 1], the layer's own tensors."""
        return OrderedDict([("gamma", self.gamma), ("beta", self.beta)])

    def buffers(self) -> OrderedDict[str, Tensor]:
        """``running_mean`` and ``running_var``, each [num_features, 1]."""
        return OrderedDict([("running_mean", self.running_mean), ("running_var", self.running_var)])

    def to_config(self) -> Dict[str, Any]:
        return _config(self, "batch_norm", "num_features", "eps", "momentum")


class ag_layer_norm(Module):
    """Layer normalisation (ggmlR 0.8.3): each column (sample) of x [d, B] normalised over its
    d features (biased variance), then gamma * xhat + beta with gamma = ones, beta = zeros
    [d, 1] when elementwise_affine (no parameters otherwise). No running statistics: training
    and eval give the same numbers.

    Args: normalized_shape: d >= 1 (``num_features``, this package's older name, is accepted
    as a keyword); eps: >= 0, added to the variance; elementwise_affine: learn gamma and beta.
    Raises: PyggmlrValueError "normalized_shape must be a single positive integer" (ggmlR's
    text) or for eps < 0."""

    kind = "layer_norm"

    def __init__(
        self,
        normalized_shape: Any = None,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        num_features: Any = None,
    ) -> None:
        if normalized_shape is None:
            normalized_shape = num_features
        F = normalized_shape
        if isinstance(F, np.ndarray) and F.size == 1:  # a 0-d array too (len() raised TypeError)
            F = F.ravel()[0]
        elif isinstance(F, (list, tuple)) and len(F) == 1:
            F = F[0]
        # as.integer truncates, as in ggmlR (the core's rule and text, as R's); any kind: a value
        rule, shown = "a single positive integer", show(normalized_shape)
        F = check_as_integer(F, "ag_layer_norm", "normalized_shape", rule, 1, shown, False)
        eps = check_num(eps, "ag_layer_norm", "eps", 0)
        self.normalized_shape, self.eps = F, eps
        self.elementwise_affine = _is_true(elementwise_affine)  # isTRUE, as ggmlR (spec 5.1)
        aff = self.elementwise_affine
        what = f"allocating normalized_shape = {F} ([{F}x1] gamma and beta)"
        with _layer_memory("ag_layer_norm", what, 2.0 * F if aff else 0):
            self.gamma = ag_param(np.ones((F, 1))) if aff else None
            self.beta = ag_param(np.zeros((F, 1))) if aff else None
        self.training = True

    @property
    def num_features(self) -> int:
        """normalized_shape under this package's older name."""
        return self.normalized_shape

    @property
    def name(self) -> str:
        return f"layer_norm({self.normalized_shape})"

    def __repr__(self) -> str:
        return f"ag_layer_norm({self.normalized_shape}) | eps={self.eps:g} | affine={'TRUE' if self.elementwise_affine else 'FALSE'}"

    def forward(self, x: ArrayLike) -> Tensor:
        """Normalise each column of x [d, batch] -> a new tensor [d, batch]. Raises ShapeError
        "ag_layer_norm: expected d features, got n" when x does not have d rows."""
        x = _as_tensor(x, "ag_layer_norm", self.gamma)
        if x.shape[0] != self.normalized_shape:
            raise ShapeError(
                f"ag_layer_norm: expected {self.normalized_shape} features, got {x.shape[0]}"
            )
        g = self.gamma._p if self.gamma is not None else NULL
        b = self.beta._p if self.beta is not None else NULL
        return _wrap(lib.pg_layer_norm(x._p, g, b, self.eps))

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``gamma`` and ``beta``, each [d, 1], the layer's own tensors; empty without affine."""
        if self.gamma is None or self.beta is None:
            return OrderedDict()
        return OrderedDict([("gamma", self.gamma), ("beta", self.beta)])

    def to_config(self) -> Dict[str, Any]:
        return _config(self, "layer_norm", "normalized_shape", "eps", "elementwise_affine")


class ag_embedding(Module):
    """Lookup table weight [dim, vocab_size] ~ U(-sqrt(1/V), sqrt(1/V)).

    forward(idx): 0-based integer ids (tensor, array, list or int; matrices are flattened
    column-major) -> [dim, len(idx)]. Backward scatter-adds into the used columns.

    Args: vocab_size: V >= 1; dim: D >= 1.
    Raises: ArgumentError when a size is not an integer, PyggmlrValueError when it is < 1."""

    kind = "embedding"

    def __init__(self, vocab_size: int, dim: int) -> None:
        V = check_int(vocab_size, "ag_embedding", "vocab_size", 1)
        D = check_int(dim, "ag_embedding", "dim", 1)
        if V < 1 or D < 1:
            raise PyggmlrValueError(
                f"ag_embedding: vocab_size and dim must be >= 1, got {V} and {D}"
            )
        self.vocab_size, self.dim = V, D
        s = math.sqrt(1.0 / V)
        with _layer_memory("ag_embedding", f"for vocab_size = {V}, dim = {D} (a [{D}x{V}] weight)"):
            self.weight = ag_param(_uniform(s, D, V, "ag_embedding"))
        self.training = True

    @property
    def name(self) -> str:
        return f"embedding({self.vocab_size}, {self.dim})"

    def forward(self, idx: ArrayLike) -> Tensor:
        """Columns of weight for 0-based ids idx (n ids, flattened column-major) -> a new
        tensor [dim, n]. Raises PyggmlrValueError for ids out of [0, vocab_size) or not whole
        numbers, ArgumentError for a non-numeric dtype."""
        w = self.weight
        if isinstance(idx, Tensor):  # ids read in C on every run: a compiled graph refills them
            return _wrap(lib.pg_embedding_ids(w._p, idx._handle()))
        ids = _class_ids(idx, "ag_embedding", "ids", np.float64)  # the core names a huge id
        return _wrap(lib.pg_embedding(w._p, ffi.cast("double *", ids.ctypes.data), ids.size))

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``weight`` [dim, vocab_size], the layer's own tensor."""
        return OrderedDict([("weight", self.weight)])

    def to_config(self) -> Dict[str, Any]:
        return {"type": "embedding", "vocab_size": self.vocab_size, "dim": self.dim}


class ag_multihead_attention(Module):
    """Multi-head (scaled dot-product) attention on [d_model, seq] inputs (columns are tokens).

    W_q, W_k, W_v, W_o [d_model, d_model] ~ U(-a, a), a = sqrt(6 / (2 d_model)), drawn in that
    order; b_o zeros [d_model, 1] when bias. forward(q, k=None, v=None, causal_mask=False):
    k defaults to q and v to k. Per head h (rows h*d_k .. of Q = W_q q, K, V): scores =
    (q_h^T k_h) * scale, key j > query i masked when causal, softmax over keys, inverted
    dropout on the weights in training, head = v_h attn^T; heads stacked by rows,
    out = W_o concat + b_o. The heads run as one core op (the per-head slices, scores, mask,
    softmax, dropout and products in one tape node, bit for bit the composed ops' results).

    Args: d_model: >= 1; n_heads: >= 1, dividing d_model; dropout: 0 <= dropout < 1 on the
    attention weights; bias: whether b_o exists.
    Raises: ArgumentError when a size is not an integer, PyggmlrValueError when a value is out
    of range or n_heads does not divide d_model."""

    kind = "multihead_attention"

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        d = check_int(d_model, "ag_multihead_attention", "d_model", 1)
        h = check_int(n_heads, "ag_multihead_attention", "n_heads", 1)
        _core.check(lib.pg_mha_check_sizes(d, h))  # the core's rule and text, as R's
        dropout = check_num(dropout, "ag_multihead_attention", "dropout", 0, 1, hi_open=True)
        self.d_model, self.n_heads = d, h
        self.d_k = self.d_v = d // h
        self.scale = 1.0 / math.sqrt(self.d_k)
        self.dropout = dropout
        self.bias = _is_true(bias)  # isTRUE, as R
        a = math.sqrt(6.0 / (2 * d))
        op = "ag_multihead_attention"
        with _layer_memory(op, f"for d_model = {d} (4 [{d}x{d}] weights)"):
            self.W_q = ag_param(_glorot(d, d, a, op))
            self.W_k = ag_param(_glorot(d, d, a, op))
            self.W_v = ag_param(_glorot(d, d, a, op))
            self.W_o = ag_param(_glorot(d, d, a, op))
            self.b_o = ag_param(np.zeros((d, 1))) if self.bias else None
        self.training = True

    @property
    def name(self) -> str:
        return f"multihead_attention(d={self.d_model}, h={self.n_heads})"

    def forward(
        self,
        q: ArrayLike,
        k: Optional[ArrayLike] = None,
        v: Optional[ArrayLike] = None,
        causal_mask: bool = False,
    ) -> Tensor:
        """Attention of queries q [d_model, seq_q] over keys k and values v [d_model, seq_kv]
        (k defaults to q, v to k) -> a new tensor [d_model, seq_q]. causal_mask hides key j > i
        from query i. Raises ShapeError when an input does not have d_model rows or k and v
        have different column counts."""
        q = _as_tensor(q, "ag_multihead_attention", self.W_q)
        k = q if k is None else _as_tensor(k, "ag_multihead_attention", self.W_q)
        v = k if v is None else _as_tensor(v, "ag_multihead_attention", self.W_q)
        op = "ag_multihead_attention"  # the core's shape checks and texts (R's too)
        _core.check(
            lib.pg_mha_check_inputs(self.d_model, q._handle(op), k._handle(op), v._handle(op))
        )
        causal = int(check_flag(causal_mask, op, "causal_mask"))  # "no" is not True (R's too)
        Q = ag_matmul(self.W_q, q)
        K = ag_matmul(self.W_k, k)
        V = ag_matmul(self.W_v, v)
        # the heads, one core op (ops_mha.c): the composed per-head loop's bits, one tape node
        rate = self.dropout if self.training else 0.0
        concat = _wrap(
            lib.pg_mha_heads(Q._p, K._p, V._p, self.n_heads, self.scale, causal, float(rate))
        )
        out = ag_matmul(self.W_o, concat)
        if self.b_o is not None:
            out = ag_add(out, self.b_o)
        return out

    def parameters(self) -> OrderedDict[str, Tensor]:
        """``W_q``, ``W_k``, ``W_v``, ``W_o`` [d_model, d_model] and, when bias, ``b_o``
        [d_model, 1]; the layer's own tensors."""
        p = OrderedDict(
            [("W_q", self.W_q), ("W_k", self.W_k), ("W_v", self.W_v), ("W_o", self.W_o)]
        )
        if self.b_o is not None:
            p["b_o"] = self.b_o
        return p

    def to_config(self) -> Dict[str, Any]:
        return {
            "type": "multihead_attention",
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "dropout": self.dropout,
            "bias": self.bias,
        }
