"""Parity cases for ag_flash_attention (ggmlR 0.8.6 §3): R against Python on the same inputs, values
and the gradients of q, k and v, 0 ULP: plain, several heads, causal, cross-attention, logical and
numeric masks, a blocked query, q = k = v, and shapes that span several query blocks."""
from __future__ import annotations

import numpy as np

from .parity import _op

_M = np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 0], [0, 1, 1, 1]], dtype=bool)  # [seq_kv 5, seq_q 4]
_B = _M.copy()
_B[:, 2] = False  # query 3 sees no key: 0

_op("flash_attention", [(8, 4), (8, 4), (8, 4)], lambda P, q, k, v: P.ag_flash_attention(q, k, v, 1))
_op("flash_attention heads 2", [(8, 4), (8, 4), (8, 4)], lambda P, q, k, v: P.ag_flash_attention(q, k, v, 2))
_op("flash_attention causal heads 4", [(16, 6), (16, 6), (16, 6)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 4, causal=True))
_op("flash_attention cross 4 vs 5 scale", [(6, 4), (6, 5), (6, 5)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 3, scale=0.7))
_op("flash_attention logical mask", [(8, 4), (8, 5), (8, 5)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 2, mask=_M))
_op("flash_attention numeric mask", [(8, 4), (8, 5), (8, 5)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 2, mask=np.where(_M, 0.0, -np.inf)))
_op("flash_attention blocked query", [(8, 4), (8, 5), (8, 5)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 2, mask=_B))
_op("flash_attention q = k = v causal", [(6, 5)], lambda P, x: P.ag_flash_attention(x, x, x, 3, causal=True))
_op("flash_attention blocks 70 vs 66 causal", [(16, 70), (16, 66), (16, 66)],
    lambda P, q, k, v: P.ag_flash_attention(q, k, v, 4, causal=True))
