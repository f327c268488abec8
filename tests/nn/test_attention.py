"""ag_flash_attention (ggmlR 0.8.6 spec §3): goldens, a numpy f64 reference for values and
gradients (mask, causal, seq_q != seq_kv, several query blocks), agreement with the
ag_multihead_attention composition, finite differences, f32, masks in every form, every error
text in ggmlR's order, one tape node, determinism and ag_compile replay."""

import numpy as np
import pytest
from _fd import attention_composition

import pyggmlr as pg

FA = pg.ag_flash_attention


def _ref(q, k, v, H, scale=None, mask=None, causal=False, G=None):
    """numpy f64 forward (and, with G, the backward of sum(out * G)) from the spec's formulas."""
    D, Sq = q.shape
    Skv = k.shape[1]
    dh = D // H
    sc = 1 / np.sqrt(dh) if scale is None else scale
    M = np.zeros((Skv, Sq)) if mask is None else np.asarray(mask, float)
    if causal:
        M = np.where(np.arange(Skv)[:, None] > np.arange(Sq)[None, :], -np.inf, 0.0)
    out, dq, dk, dv = (np.zeros_like(q), np.zeros_like(q), np.zeros_like(k), np.zeros_like(v))
    for h in range(H):
        r = slice(h * dh, (h + 1) * dh)
        S = sc * q[r].T @ k[r] + M.T  # [Sq, Skv]
        mx = S.max(axis=1, keepdims=True)
        blocked = ~np.isfinite(mx[:, 0])
        E = np.exp(S - np.where(np.isfinite(mx), mx, 0))
        P = E / np.where(blocked[:, None], 1, E.sum(axis=1, keepdims=True))
        P[blocked] = 0
        out[r] = v[r] @ P.T
        if G is not None:
            Gh = G[r]
            dv[r] = Gh @ P
            dP = Gh.T @ v[r]
            dS = P * (dP - (dP * P).sum(axis=1, keepdims=True))
            dq[r] = sc * k[r] @ dS.T
            dk[r] = sc * q[r] @ dS
    return out, dq, dk, dv


def _run(q, k, v, H, G, **kw):
    Q, K, V = pg.ag_param(q), pg.ag_param(k), pg.ag_param(v)
    with pg.with_grad_tape():
        out = FA(Q, K, V, H, **kw)
        loss = pg.ag_sum(pg.ag_mul(out, G))
    g = pg.backward(loss)
    return out.numpy(), g[Q], g[K], g[V]


def test_goldens(f64):
    q = np.array([[1.0, 0, 1], [0, 1, 1]])
    v = np.array([[1.0, 3, 5], [2, 4, 6]])
    np.testing.assert_allclose(
        FA(q, q, v, 1).numpy(),
        [[3, 3.4066725561, 3.5104695305], [4, 4.4066725561, 4.5104695305]],
        atol=1e-10,
    )
    np.testing.assert_allclose(
        FA(q, q, v, 1, causal=True).numpy(),
        [[1, 2.3395230987, 3.5104695305], [2, 3.3395230987, 4.5104695305]],
        atol=1e-10,
    )
    np.testing.assert_allclose(
        FA(q, q, v, 2).numpy(), [[3, 3, 3], [4, 4.5339127895, 4.5339127895]], atol=1e-10
    )
    assert FA(pg.ag_tensor(q), q, v, 1.9).shape == (2, 3)  # n_heads truncated as as.integer


CASES = [  # (D, Sq, Skv, H, kind)
    (8, 4, 4, 1, "plain"),
    (8, 4, 4, 2, "plain"),
    (16, 6, 6, 4, "causal"),
    (12, 3, 5, 3, "mask"),
    (8, 5, 3, 2, "causal"),
    (16, 150, 70, 4, "mask"),
    (8, 130, 130, 2, "causal"),
    (6, 7, 9, 3, "scale"),
    (8, 40, 100, 2, "causal"),
    (8, 100, 40, 4, "causal"),
]


def _qkvg(seed, D, Sq, Skv):
    """Normal q [D, Sq], k and v [D, Skv] and an upstream gradient G [D, Sq], drawn in order."""
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=(D, S)) for S in (Sq, Skv, Skv, Sq))


def _mask_for(kind, Skv, Sq, rng):
    if kind != "mask":
        return None
    m = rng.random((Skv, Sq)) < 0.7
    m[0, :] = True  # every query sees a key
    return m


@pytest.mark.parametrize("D,Sq,Skv,H,kind", CASES)
def test_matches_reference_f64(f64, D, Sq, Skv, H, kind):
    rng = np.random.default_rng(D * 1000 + Sq * 10 + Skv)
    q, k, v = rng.normal(size=(D, Sq)), rng.normal(size=(D, Skv)), rng.normal(size=(D, Skv))
    G = rng.normal(size=(D, Sq))
    mask = _mask_for(kind, Skv, Sq, rng)
    kw = {"causal": kind == "causal", "mask": mask, "scale": 0.37 if kind == "scale" else None}
    ref = _ref(
        q,
        k,
        v,
        H,
        kw["scale"],
        None if mask is None else np.where(mask, 0, -np.inf),
        kw["causal"],
        G,
    )
    got = _run(q, k, v, H, G, **kw)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_matches_multihead_composition(f64, causal):
    q, k, v, G = _qkvg(7, 16, 9, 11)
    res = []
    for f in (
        lambda Q, K, V: FA(Q, K, V, 4, causal=causal),
        lambda Q, K, V: attention_composition(Q, K, V, 4, causal),
    ):
        Q, K, V = pg.ag_param(q), pg.ag_param(k), pg.ag_param(v)
        with pg.with_grad_tape():
            out = f(Q, K, V)
            loss = pg.ag_sum(pg.ag_mul(out, G))
        g = pg.backward(loss)
        res.append((out.numpy(), g[Q], g[K], g[V]))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["plain", "causal", "mask"])
def test_finite_differences(f64, kind):
    D, Sq, Skv, H = 8, 4, 5, 2
    q, k, v, G = _qkvg(3, D, Sq, Skv)
    mask = (
        np.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 0], [1, 0, 1, 1]], bool)
        if kind == "mask"
        else None
    )
    kw = {"causal": kind == "causal", "mask": mask}
    _, *grads = _run(q, k, v, H, G, **kw)

    def f(a, b, c):
        return float((FA(a, b, c, H, **kw).numpy() * G).sum())

    args = [q, k, v]
    for i, gi in enumerate(grads):
        num = np.zeros_like(args[i])
        for idx in np.ndindex(*args[i].shape):
            hi = [a.copy() for a in args]
            lo = [a.copy() for a in args]
            hi[i][idx] += 1e-6
            lo[i][idx] -= 1e-6
            num[idx] = (f(*hi) - f(*lo)) / 2e-6
        np.testing.assert_allclose(gi, num, atol=1e-7)


def test_f32_within_tolerance():
    q, k, v, G = _qkvg(5, 16, 70, 66)
    ref = _ref(q, k, v, 4, causal=True, G=G)
    prev = pg.ag_dtype("f32")
    try:
        got = _run(q, k, v, 4, G, causal=True)
    finally:
        pg.ag_dtype(prev)
    assert got[0].dtype == np.float32
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4)


def test_masks_logical_numeric_tensor(f64):
    rng = np.random.default_rng(11)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    lm = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1], [0, 0, 1]], bool)
    nm = np.where(lm, 0.0, -np.inf)
    a = FA(q, k, v, 2, mask=lm).numpy()
    np.testing.assert_array_equal(a, FA(q, k, v, 2, mask=nm).numpy())
    np.testing.assert_array_equal(a, FA(q, k, v, 2, mask=pg.ag_tensor(nm)).numpy())
    np.testing.assert_array_equal(a, FA(q, k, v, 2, mask=pg.ag_tensor(nm, dtype="f32")).numpy())
    np.testing.assert_allclose(a, _ref(q, k, v, 2, mask=nm)[0], rtol=1e-12, atol=1e-12)
    # a finite additive mask is added as is (ggmlR would round it to f16)
    fm = rng.normal(size=(5, 3))
    np.testing.assert_allclose(
        FA(q, k, v, 2, mask=fm).numpy(), _ref(q, k, v, 2, mask=fm)[0], rtol=1e-12, atol=1e-12
    )
    # a mask tensor that requires grad gets none and does not make the output require grad
    out = FA(q, k, v, 2, mask=pg.ag_param(nm))
    assert not out.requires_grad


def test_all_blocked_query_is_zero(f64):
    q, k, v, G = _qkvg(2, 4, 3, 4)
    m = np.ones((4, 3), bool)
    m[:, 1] = False
    out, dq, dk, dv = _run(q, k, v, 2, G, mask=m)
    assert np.all(out[:, 1] == 0) and np.all(dq[:, 1] == 0)
    ref = _ref(q, k, v, 2, mask=np.where(m, 0, -np.inf), G=G)
    for a, b in zip((out, dq, dk, dv), ref):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # no keys at all: every query is blocked
    np.testing.assert_array_equal(
        FA(q, np.zeros((4, 0)), np.zeros((4, 0)), 2).numpy(), np.zeros((4, 3))
    )


def test_same_tensor_as_q_k_v(f64):
    rng = np.random.default_rng(4)
    x, G = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    X = pg.ag_param(x)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(FA(X, X, X, 3, causal=True), G))
    gx = pg.backward(loss)[X]
    _, dq, dk, dv = _ref(x, x, x, 3, causal=True, G=G)
    np.testing.assert_allclose(gx, dq + dk + dv, rtol=1e-12, atol=1e-12)


def test_error_texts_in_order(f64):
    q8, q6 = np.zeros((8, 3)), np.zeros((6, 3))
    k4, k5, k6 = np.zeros((8, 4)), np.zeros((8, 5)), np.zeros((8, 6))
    # each call fails at a different check; the first check that fails gives the text
    fa = r"^ggmlR: ag_flash_attention\(\) "
    for err, text, call in [
        (
            pg.PyggmlrValueError,
            r"needs n_heads to divide d_model \(8 %% 3 != 0\)\.$",
            lambda: FA(q8, q6, k6, 3, mask=np.zeros(3), causal=True),
        ),
        (
            pg.ShapeError,
            r"needs q, k and v to share d_model \(got 8, 6, 8\)\.$",
            lambda: FA(q8, q6, k4, 2),
        ),
        (
            pg.ShapeError,
            r"needs k and v to share a sequence length \(got 4 and 6\)\.$",
            lambda: FA(q8, k4, k6, 2, mask=np.zeros(3), causal=True),
        ),
        (
            pg.PyggmlrValueError,
            r"takes either `mask` or `causal`, not both\.$",
            lambda: FA(q8, k5, k5, 2, mask=np.zeros(3), causal=True),
        ),
        (
            pg.ShapeError,
            r"needs `mask` to be a matrix\.$",
            lambda: FA(q8, k5, k5, 2, mask=np.zeros(15)),
        ),
    ]:
        with pytest.raises(err, match=fa + text):
            call()
    msg = (
        r"^ggmlR: ag_flash_attention\(\) needs `mask` to be \[seq_kv, seq_q\] = \[5, 3\], got \[3, 5\]\. "
        r"Note the orientation: keys index the ROWS, queries the columns\.$"
    )
    with pytest.raises(pg.ShapeError, match=msg):
        FA(q8, k5, k5, 2, mask=np.zeros((3, 5)))
    with pytest.raises(pg.ShapeError, match=msg):
        FA(q8, k5, k5, 2, mask=pg.ag_tensor(np.zeros((3, 5))))
    with pytest.raises(pg.DTypeError, match="one dtype"):
        FA(pg.ag_tensor(q8, dtype="f32"), pg.ag_tensor(k5), k5, 2)
    with pytest.raises(pg.ArgumentError, match="n_heads must be a positive integer, got '2'$"):
        FA(q8, k5, k5, "2")
    # R's rule, text and order: a flag is no count and no scale, checked before the tensors
    with pytest.raises(pg.ArgumentError, match="n_heads must be a positive integer, got True$"):
        FA("a", k5, k5, True)
    with pytest.raises(pg.ArgumentError, match=r"scale must be a number \(or None for 1/sqrt"):
        FA(q8, np.ones((3, 5)), k5, 2, scale=True)


def test_one_tape_node_no_label(f64):
    rng = np.random.default_rng(1)
    Q = pg.ag_param(rng.normal(size=(8, 4)))
    with pg.with_grad_tape():
        out = FA(Q, Q, Q, 2)
        assert pg.ag_tape_memory(quiet=True)["nodes"] == 1
        assert out.op == ""  # ggmlR's CPU node has no label ("<closure only>" in ag_tape_memory)
        assert [r["op"] for r in pg.ag_tape_memory(quiet=True)["by_op"]] == ["<closure only>"]


def test_deterministic_bits():
    q, k, v, G = _qkvg(9, 32, 100, 90)
    a, b = _run(q, k, v, 4, G, causal=True), _run(q, k, v, 4, G, causal=True)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


@pytest.mark.parametrize("masked", [False, True])
def test_compile_replay_equals_eager(f64, masked):
    rng = np.random.default_rng(8)
    D, S = 8, 6
    Wq = pg.ag_param(rng.normal(size=(D, D)) * 0.3)
    m = np.tril(np.ones((S, S), bool)).T if masked else None  # key r <= query j

    def step(x):
        y = FA(pg.ag_matmul(Wq, x), x, x, 2, mask=m, causal=not masked)
        return pg.ag_sum(pg.ag_mul(y, y))

    xs = [rng.normal(size=(D, S)) for _ in range(3)]
    cs = pg.ag_compile(step, xs[0], build="grad")
    for x in xs:
        loss, grads = cs(x)
        with pg.with_grad_tape():
            el = step(pg.ag_tensor(x))
        g = pg.backward(el)
        assert loss == float(el.numpy()[0, 0])
        np.testing.assert_array_equal(grads[Wq.id], g[Wq])


def test_bad_inputs_raise_typed_errors(f64):
    q, k = np.zeros((8, 3)), np.zeros((8, 5))
    with pytest.raises(pg.ShapeError, match="to be a matrix"):
        FA(q, k, k, 2, mask=[[1, 2], [3]])
    with pytest.raises(pg.ShapeError, match="to be a matrix"):
        FA(q, k, k, 2, mask=np.zeros((5, 3, 1)))
    with pytest.raises(pg.DTypeError):
        FA(q, k, k, 2, mask=np.array([["a"] * 3] * 5))
    with pytest.raises(pg.ArgumentError, match="scale"):
        FA(q, k, k, 2, scale="a")
    with pytest.raises(pg.PyggmlrValueError, match=r"\(8 %% 0 != 0\)"):
        FA(q, k, k, 0)
    t = pg.ag_tensor(q)
    t.free()
    with pytest.raises(pg.ArgumentError):
        FA(t, k, k, 2)
    assert FA(np.zeros((8, 0)), k, k, 2).shape == (8, 0)


def test_no_leaks_and_memory_report(f64):
    import gc

    rng = np.random.default_rng(12)
    q, k, G = rng.normal(size=(8, 6)), rng.normal(size=(8, 7)), rng.normal(size=(8, 6))
    m = rng.random((7, 6)) < 0.8
    gc.collect()
    live = pg.ag_live_objects()
    for kw in ({}, {"causal": True}, {"mask": m}, {"mask": pg.ag_tensor(np.where(m, 0, -np.inf))}):
        _run(q, k, k, 2, G, **kw)
    del kw  # the last one holds a mask tensor
    pg.ag_tape_clear()
    gc.collect()
    assert pg.ag_live_objects() == live
    Q = pg.ag_param(q)
    with pg.with_grad_tape():
        FA(Q, k, k, 2, mask=m)
        rep = pg.ag_tape_memory(quiet=True)
    # the node holds q, k, v, the output [8, 6], the mask [7, 6] and 2 x 2 stats per query
    assert rep["nodes"] == 1
    assert rep["by_op"][0]["nodes"] == 1
