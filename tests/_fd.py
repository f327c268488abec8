"""Finite differences shared by the gradcheck tests (not collected by pytest)."""
import numpy as np

EPS = 1e-6


def numeric_grad(loss_fn, x, eps=EPS):
    """Central differences of the scalar loss_fn() w.r.t. tensor x, writing .data element by
    element and restoring the exact original values afterwards."""
    base = x.numpy().astype(np.float64)
    g = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        a = base.copy()
        a[idx] = base[idx] + eps
        x.data = a
        up = loss_fn().item()
        a[idx] = base[idx] - eps
        x.data = a
        dn = loss_fn().item()
        g[idx] = (up - dn) / (2 * eps)
    x.data = base
    return g
