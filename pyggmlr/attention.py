"""ag_flash_attention (ggmlR 0.8.6 §3): multi-head scaled dot-product attention over every head in
one tape node, a thin call into native/ops_attention.c (forward and backward live there).

q is [d_model, seq_q], k and v are [d_model, seq_kv] (columns are tokens); head h is the row block
h*d_head .. (h+1)*d_head - 1, the layout of ag_multihead_attention. No projections, no bias, no
dropout. The mask is [seq_kv, seq_q]: keys index the ROWS, queries the columns."""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from . import _core
from ._args import as_float, check_flag, is_real, show
from ._core import ffi, lib
from .errors import ArgumentError
from .ops import _out, _scalar
from .tensor import ArrayLike, Tensor, _as_tensor

__all__ = ["ag_flash_attention"]


def _heads(n_heads: Any) -> int:
    """R's as.integer: a number truncated toward zero (NaN and out-of-range values fail the
    core's divisibility check with 0)."""
    bad = ArgumentError(  # R's text; True is no count (R refuses a logical)
        f"ag_flash_attention: n_heads must be a positive integer, got {show(n_heads)}"
    )
    if isinstance(n_heads, (str, bytes, bool, np.bool_)) or n_heads is None:
        raise bad
    try:
        f = as_float(n_heads)  # 10**400: Inf, refused (it raised OverflowError)
    except (TypeError, ValueError):
        raise bad from None
    return int(f) if math.isfinite(f) and abs(f) < 2**31 else 0


def _mask_tensor(mask: Any, like: Tensor) -> Tensor:
    """A [seq_kv, seq_q] tensor of q's dtype: a tensor's values (the tensor itself when its dtype
    is q's, so a compiled graph can refill it), logical data as 0 (attend) / -Inf (blocked),
    numbers as they are."""
    if isinstance(mask, Tensor):
        if mask.dtype == like.dtype:
            return mask
        return _out(lib.pg_tensor_cast(mask._handle(), lib.pg_tensor_dtype(like._handle())))
    a = np.asarray(mask)
    if a.dtype == np.bool_:
        a = np.where(a, 0.0, -np.inf)
    return _as_tensor(a, "ag_flash_attention", like)


def ag_flash_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    n_heads: Any,
    scale: Optional[float] = None,
    mask: Any = None,
    causal: bool = False,
) -> Tensor:
    """Multi-head attention softmax(scale q_h^T k_h + mask^T) per head, one tape node.

    Per head h: St = scale k_h^T q_h + mask ([seq_kv, seq_q]), P = softmax over the keys,
    out_h = v_h P; heads stacked by rows -> [d_model, seq_q]. The backward recomputes P from q, k,
    v (the node keeps the inputs, the mask and two numbers per query and head).

    Args: q [d_model, seq_q], k, v [d_model, seq_kv]: tensors or numeric data (data takes the
    dtype of the first tensor among them, else the default dtype); n_heads: dividing d_model
    (truncated to an integer as R's as.integer); scale: default 1 / sqrt(d_head); mask: None, a
    tensor (its values) or a 2-D array [seq_kv, seq_q], boolean (True attend, False blocked) or
    numeric (added to the scaled scores: 0 / -inf); causal: block key r > query j (queries past
    seq_kv see every key). A query whose keys are all blocked gives 0 and no gradient.
    Returns: a new tensor [d_model, seq_q]; gradients for q, k and v (never the mask).
    Raises: ggmlR's errors in its order: PyggmlrValueError when n_heads does not divide d_model,
    ShapeError when q, k, v do not share d_model or k, v a sequence length, PyggmlrValueError for
    both mask and causal, ShapeError when the mask is not a matrix or not [seq_kv, seq_q];
    DTypeError when q, k and v tensors have different dtypes; ArgumentError for a causal that is
    not True or False."""
    op = "ag_flash_attention"
    h = _heads(n_heads)  # R's order: n_heads, scale, causal, then the tensors
    if scale is not None and (isinstance(scale, (bool, np.bool_)) or not is_real(scale)):
        raise ArgumentError(f"{op}: scale must be a number (or None for 1/sqrt(d_head))")
    causal = check_flag(causal, op, "causal")  # "no" is not True (R's .arg_flag)
    like = next((t for t in (q, k, v) if isinstance(t, Tensor)), None)
    qt = _as_tensor(q, op, like)
    kt, vt = _as_tensor(k, op, qt), _as_tensor(v, op, qt)
    if mask is None:
        nd, mr, mc = 0, 0, 0
    elif isinstance(mask, Tensor):
        nd, (mr, mc) = 2, mask.shape
    else:
        try:
            shp = np.shape(mask)
        except ValueError:  # ragged nested lists: not a matrix
            shp = ()
        nd = len(shp) if len(shp) == 2 else 1
        mr, mc = shp if nd == 2 else (0, 0)
    _core.check(
        lib.pg_flash_attention_check(
            qt._handle(op), kt._handle(op), vt._handle(op), h, nd, mr, mc, causal
        )
    )
    mt = _mask_tensor(mask, qt) if mask is not None else None
    s = math.nan if scale is None else _scalar(scale, "ag_flash_attention", "scale")
    return _out(
        lib.pg_flash_attention(
            qt._handle(op),
            kt._handle(op),
            vt._handle(op),
            h,
            s,
            mt._handle(op) if mt is not None else ffi.NULL,
            causal,
        )
    )
