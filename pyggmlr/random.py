"""The package's random stream (initialisers, dropout masks, shuffles).

R's package draws from R's RNG (set.seed); Python draws from one numpy Generator, reseeded
with ggml_set_seed(k). Results are reproducible within a language, not across languages:
parity tests pass the same weights and masks to both sides explicitly."""
from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["ggml_set_seed", "ag_rng"]

_rng = np.random.default_rng()


def ggml_set_seed(seed: Optional[int]) -> None:
    """Reseed the stream used by initialisers, dropout and shuffling (None: no-op, as ggmlR)."""
    global _rng
    if seed is not None:
        _rng = np.random.default_rng(int(seed))


def ag_rng() -> np.random.Generator:
    """The current numpy Generator (draw from it to stay reproducible under ggml_set_seed)."""
    return _rng
