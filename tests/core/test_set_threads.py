"""ag_set_threads(n) splits the core's large loops (products, optimizer updates, vectorised math,
layer norm columns, attention heads) over n threads with the same bits for every n: whole
training steps (a transformer block, an MLP; Adam; f32 and f64; eager and compiled) give the
bits of one thread. The pool's load adaptation is turned off here so that every loop that pays
is really split whatever the machine's load (it would only make more of them single-threaded)."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib


@pytest.fixture
def split_always():
    was = lib.pg_gemm_threads_adaptive(0)
    try:
        yield
    finally:
        pg.ag_set_threads(1)
        lib.pg_gemm_threads_adaptive(was)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _transformer(V=300, D=128, H=2, T=256):
    """One block as bench/bench_transformer.py, sized so that every split applies: products of
    >= 4 MFLOP, Adam over >= 32768 weights, layer norm over >= 32768 values, 2 heads of
    T * T * D / H >= 2^20, the GELU layer's 131072 values."""
    pg.ggml_set_seed(3)
    emb, att = pg.ag_embedding(V, D), pg.ag_multihead_attention(D, H)
    ln1, ln2 = pg.ag_layer_norm(D), pg.ag_layer_norm(D)
    f1, f2, head = pg.ag_linear(D, 4 * D, "gelu"), pg.ag_linear(4 * D, D), pg.ag_linear(D, V)
    params = {}
    for i, m in enumerate((emb, att, ln1, f1, f2, ln2, head)):
        for k, t in m.parameters().items():
            params[f"l{i}_{k}"] = t

    def loss(ids, tgt):
        h = emb(ids)
        h = ln1(pg.ag_add(h, att.forward(h, causal_mask=True)))
        h = ln2(pg.ag_add(h, pg.ag_tanh(f2(f1(h)))))  # tanh: vectorised math over 32768 values
        return pg.ag_softmax_cross_entropy_loss(head(h), tgt)

    ids = pg.ag_tensor((pg.random.sample_int(V, T, replace=True) - 1).reshape(1, T).astype(float))
    tgt = pg.ag_tensor((pg.random.sample_int(V, T, replace=True) - 1).reshape(1, T).astype(float))
    return params, loss, (ids, tgt)


def _mlp(sizes=(784, 256, 128, 10), batch=256):
    rng = np.random.default_rng(0)
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"W{i}"] = pg.ag_param(rng.uniform(-1, 1, (b, a)) * np.sqrt(6 / (a + b)))
        params[f"b{i}"] = pg.ag_param(np.zeros((b, 1)))
    n = len(sizes) - 1

    def loss(x, y):
        h = x
        for i in range(n):
            h = pg.ag_add(pg.ag_matmul(params[f"W{i}"], h), params[f"b{i}"])
            if i < n - 1:
                h = pg.ag_relu(h)
        return pg.ag_softmax_cross_entropy_loss(h, y)

    x = pg.ag_tensor(rng.normal(size=(sizes[0], batch)))
    y = pg.ag_tensor(rng.integers(0, sizes[-1], batch).reshape(1, -1).astype(float))
    return params, loss, (x, y)


def _train(make, threads, compiled, steps=3):
    """Losses and final weights of `steps` Adam steps on `threads` threads."""
    pg.ag_set_threads(1)
    params, loss, inputs = make()
    opt = pg.optimizer_adam(params, lr=1e-3)
    pg.ag_set_threads(threads)
    losses = []
    if compiled:
        step = pg.ag_compile(loss, *inputs, build="opt", optimizer=opt)
        for _ in range(steps):
            losses.append(np.asarray(step(*inputs)))
    else:
        for _ in range(steps):
            with pg.with_grad_tape():
                lv = loss(*inputs)
            opt.step(pg.backward(lv))
            opt.zero_grad()
            losses.append(lv.numpy())
    pg.ag_set_threads(1)
    return [_bits(v) for v in losses], {k: _bits(t.numpy()) for k, t in params.items()}


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("model", ["transformer", "mlp"])
def test_training_steps_have_the_bits_of_one_thread(split_always, dt, compiled, model):
    make = _transformer if model == "transformer" else _mlp
    pg.ag_dtype(dt)
    try:
        l1, w1 = _train(make, 1, compiled)
        for threads in (2, 3):
            lt, wt = _train(make, threads, compiled)
            for a, b in zip(l1, lt):
                np.testing.assert_array_equal(a, b, err_msg=f"loss, {threads} threads")
            for k in w1:
                np.testing.assert_array_equal(w1[k], wt[k], err_msg=f"{k}, {threads} threads")
    finally:
        pg.ag_dtype("f32")
    assert lib.pg_gemm_threads_live() == 0  # one thread again: the workers stopped


def test_adaptive_setting_reads_and_restores():
    was = lib.pg_gemm_threads_adaptive(-1)
    assert was == 1  # the default: adapt to load from other processes
    assert lib.pg_gemm_threads_adaptive(0) == 1
    assert lib.pg_gemm_threads_adaptive(-1) == 0
    assert lib.pg_gemm_threads_adaptive(was) == 0
    assert lib.pg_gemm_threads_adaptive(-1) == was


# ag_multihead_attention's heads (one core op, pg_mha_heads) split over threads: heads of
# seq_q * seq_kv * d_k >= 2^19 (here d_k 8 and 256 x 256 or more), 3 threads give the 4 heads
# as 1 + 1 + 2. (H, seq_q, seq_kv or None: self-attention, causal)
MHA_CASES = [
    (1, 256, None, True),
    (4, 256, None, False),
    (4, 256, None, True),
    (4, 256, 288, False),
    (4, 288, 256, True),
]


def _mha(dt, case, threads, compiled, D=32, rate=0.25):
    """Training with dropout on `threads` threads. Eager: the output and the gradients of
    sum(out * G) for the parameters and the inputs; compiled: 3 Adam steps' losses and
    weights. Both with the random stream's state after (the masks' draws)."""
    H, Sq, Skv, causal = case
    pg.ag_set_threads(1)
    pg.ggml_set_seed(5)
    m = pg.ag_multihead_attention(D, H, dropout=rate)
    rng = np.random.default_rng(H * 1000 + Sq)
    data = [rng.normal(size=(D, Sq))] + ([] if Skv is None else [rng.normal(size=(D, Skv))])
    pg.ggml_set_seed(11)
    pg.ag_set_threads(threads)
    try:
        if compiled:
            y = pg.ag_tensor(rng.normal(size=(D, Sq)), dtype=dt)
            xs = [pg.ag_tensor(a, dtype=dt) for a in data]
            opt = pg.optimizer_adam(m.parameters(), lr=0.01)

            def loss(*a):
                return pg.ag_mse_loss(m.forward(*a[:-1], causal_mask=causal), a[-1])

            step = pg.ag_compile(loss, *xs, y, optimizer=opt)
            res = [np.asarray(step(*xs, y)) for _ in range(3)]
            res += [p.numpy() for p in m.parameters().values()]
        else:
            xs = [pg.ag_param(a, dtype=dt) for a in data]
            with pg.with_grad_tape():
                out = m.forward(*xs, causal_mask=causal)
                G = pg.ag_tensor(np.cos(np.arange(D * Sq)).reshape(D, Sq), dtype=dt)
                lv = pg.ag_sum(pg.ag_mul(out, G))
            grads = pg.backward(lv)
            res = [out.numpy()] + [grads[p] for p in m.parameters().values()]
            res += [grads[x] for x in xs]
            pg.ag_tape_clear()
    finally:
        pg.ag_set_threads(1)
    return [_bits(np.asarray(r)) for r in res] + [np.asarray(pg.random.get_state())]


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("case", MHA_CASES, ids=lambda c: "H{}-{}x{}-{}".format(*c))
def test_multihead_attention_has_the_bits_of_one_thread(split_always, dt, compiled, case):
    pg.ag_dtype(dt)
    try:
        one = _mha(dt, case, 1, compiled)
        for threads in (2, 3):
            other = _mha(dt, case, threads, compiled)
            assert len(other) == len(one)
            for i, (a, b) in enumerate(zip(one, other)):
                assert a.tobytes() == b.tobytes(), f"result {i}, {threads} threads"
    finally:
        pg.ag_dtype("f32")
