"""The elementwise loops (native/vew.c: the binary ops in every broadcast form, their gradients'
copies and bias sums, ReLU in the op and the fused linear layer) against PyTorch in f64, on
shapes long enough for every SIMD width's main body and tail (37 rows), with edge values:
signed zeros, exact zeros at ReLU's kink, tiny and huge magnitudes."""

import numpy as np
import pytest

import pyggmlr as pg

torch = pytest.importorskip(
    "torch",
    reason="torch is not installed: the PyTorch comparisons are skipped (tests/core/test_ops.py "
    "checks the same ops against numpy and finite differences)",
)

R_, C_ = 37, 19
SHAPES = [(R_, C_), (R_, 1), (1, C_), (1, 1)]


def _vals(rng, r, c, denom=False):
    v = rng.normal(size=(r, c)) * 10.0 ** rng.integers(-150, 150, size=(r, c))
    if denom:  # no zero denominators: the quotient's gradient would be Inf on both sides
        return np.where(np.abs(v) < 1e-100, 1.5, v)
    v.flat[::5] = 0.0
    v.flat[1::7] = -0.0
    return v


# every pair whose broadcast is the full shape (each loop form: whole, one value, a column, a row)
PAIRS = [(sa, sb) for sa in SHAPES for sb in SHAPES if np.broadcast_shapes(sa, sb) == (R_, C_)]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("k", range(len(PAIRS)), ids=[f"{a}-{b}" for a, b in PAIRS])
def test_binary_ops_match_torch(op, k):
    sa, sb = PAIRS[k]
    rng = np.random.default_rng(100 * k + ["add", "sub", "mul", "div"].index(op))
    A, B = _vals(rng, *sa), _vals(rng, *sb, denom=op == "div")
    W = rng.normal(size=np.broadcast_shapes(sa, sb))  # a non-uniform upstream gradient
    a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
    with pg.with_grad_tape():
        out = getattr(pg, f"ag_{op}")(a, b)
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(W, dtype="f64")))
    g = pg.backward(loss)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A, B))
    tout = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op](ta, tb)
    (tout * torch.tensor(W)).sum().backward()
    # elementwise results are one IEEE operation each: equal to the bit
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    for mine, ref in ((g[a], ta.grad), (g[b], tb.grad)):  # a broadcast side sums: its order
        np.testing.assert_allclose(np.asarray(mine), ref.numpy(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("shape", [(R_, C_), (1, 1), (64, 3)])
def test_relu_matches_torch(shape):
    rng = np.random.default_rng(7)
    X = _vals(rng, *shape)
    W = rng.normal(size=shape)
    x = pg.ag_param(X, dtype="f64")
    with pg.with_grad_tape():
        out = pg.ag_relu(x)
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(W, dtype="f64")))
    g = pg.backward(loss)
    tx = torch.tensor(X, requires_grad=True)
    tout = torch.relu(tx)
    (tout * torch.tensor(W)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
    np.testing.assert_array_equal(np.asarray(g[x]), tx.grad.numpy())  # 0 at the kink, as torch


@pytest.mark.parametrize("act", [None, "relu"])
def test_fused_linear_matches_torch(act):
    rng = np.random.default_rng(11)
    pg.ggml_set_seed(5)
    prev = pg.ag_dtype("f64")
    try:
        lin = pg.ag_linear(13, R_, act)
    finally:
        pg.ag_dtype(prev)
    X, W = rng.normal(size=(13, C_)), rng.normal(size=(R_, C_))
    x = pg.ag_param(X, dtype="f64")
    with pg.with_grad_tape():
        out = lin(x)
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(W, dtype="f64")))
    g = pg.backward(loss)
    tw, tb, tx = (
        torch.tensor(np.asarray(v), requires_grad=True) for v in (lin.W.numpy(), lin.b.numpy(), X)
    )
    tout = tw @ tx + tb
    tout = torch.relu(tout) if act == "relu" else tout
    (tout * torch.tensor(W)).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12)
    for mine, ref in ((g[lin.W], tw.grad), (g[lin.b], tb.grad), (g[x], tx.grad)):
        np.testing.assert_allclose(np.asarray(mine), ref.numpy(), rtol=1e-10, atol=1e-12)
