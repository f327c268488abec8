"""Finite differences and reference helpers shared by the op and layer tests (not collected by
pytest)."""

import numpy as np

import pyggmlr as pg
from pyggmlr.nn.base import _causal_mask, _matmul_t

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


def gradcheck(fn, *arrays, atol=1e-6, rtol=1e-5, const=()):
    """Build f64 params from arrays (indices in `const` become constants), compare backward's map
    and .grad with finite differences for every param. Returns the params and the map."""
    inputs = [
        pg.ag_tensor(a, dtype="f64") if i in const else pg.ag_param(a, dtype="f64")
        for i, a in enumerate(arrays)
    ]
    with pg.with_grad_tape():
        loss = fn(*inputs)
    assert loss.shape == (1, 1)
    grads = pg.backward(loss)
    for i, t in enumerate(inputs):
        if i in const:
            assert t not in grads
            continue
        num = numeric_grad(lambda: fn(*inputs), inputs[i])
        assert grads[t].shape == t.shape
        np.testing.assert_allclose(
            grads[t], num, atol=atol, rtol=rtol, err_msg=f"gradient of input {i}"
        )
        np.testing.assert_array_equal(t.grad, grads[t])  # .grad written once = the map
    return inputs, grads


def project(out, seed=7):
    """Scalar with a random weight per output element, so every gradient entry is exercised."""
    r = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape)
    return pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(r, dtype=out.dtype)))


def R(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def np_softmax(x):
    """Column-wise softmax in numpy (the reference for ag_softmax)."""
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def attention_composition(Q, K, V, H, causal):
    """ag_multihead_attention's core without the projections: slices, scores, mask, softmax."""
    dh = Q.nrow // H
    cat = None
    for h in range(H):
        qh, kh, vh = (pg.ag_slice_rows(t, h * dh, dh) for t in (Q, K, V))
        s = _matmul_t(kh, qh, ta=True, alpha=1 / np.sqrt(dh))
        if causal:
            s = _causal_mask(s)
        head = pg.ag_matmul(vh, pg.ag_softmax(s))
        cat = head if cat is None else pg.ag_concat_rows(cat, head)
    return cat
