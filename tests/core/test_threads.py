"""Threads. The tape is per thread in the C core and cffi releases the GIL during C calls, so
two Python threads really run the core concurrently. Each thread training its own model gets
exactly the single-threaded result; shared tensors used read-only (inputs, a frozen weight)
give correct results; backward through a shared parameter from two threads at once is
serialised by the core's gradient lock (no corruption: the accumulated .grad is the exact sum);
a thread that ends with nodes on its tape frees them; live objects return to the start."""

import gc
import threading
import time

import numpy as np

import pyggmlr as pg
from pyggmlr._core import lib


def live():
    for _ in range(2):
        gc.collect()
    pg.ag_tape_clear()
    return lib.pg_live_objects()


def wait_live(target, timeout=5.0):
    """join() returns before the OS thread has run its exit handlers (the tape cleanup)."""
    t0 = time.monotonic()
    while live() != target and time.monotonic() - t0 < timeout:
        time.sleep(0.01)
    return live()


def run_threads(fns):
    errors, results = [], [None] * len(fns)

    def wrap(i, fn):
        try:
            results[i] = fn()
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return results


def train(seed, x, y, steps=150, dtype="f64"):
    """Own model, own optimizer, own tape; x and y are shared, read-only."""
    rng = np.random.default_rng(seed)
    w1 = pg.ag_param(rng.normal(size=(8, 4)) * 0.5, dtype=dtype)
    b1 = pg.ag_param(np.zeros((8, 1)), dtype=dtype)
    w2 = pg.ag_param(rng.normal(size=(3, 8)) * 0.5, dtype=dtype)
    opt = pg.optimizer_adam([w1, b1, w2], lr=0.01)
    losses = []
    for _ in range(steps):
        with pg.with_grad_tape():
            h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(w1, x), b1))
            loss = pg.ag_softmax_cross_entropy_loss(pg.ag_matmul(w2, h), y)
        g = pg.backward(loss)
        opt.step(g)
        opt.zero_grad()
        losses.append(loss.item())
    return losses, w1.numpy(), w2.numpy()


def _data():
    rng = np.random.default_rng(42)
    x = pg.ag_tensor(rng.normal(size=(4, 64)), dtype="f64")
    y = rng.integers(0, 3, size=64)
    return x, y


def test_two_threads_training_match_single_threaded():
    start = live()
    x, y = _data()
    ref = [train(s, x, y) for s in (1, 2)]
    got = run_threads([lambda: train(1, x, y), lambda: train(2, x, y)])
    for (losses_ref, a_ref, b_ref), (losses, a, b) in zip(ref, got):
        assert (
            losses == losses_ref
        )  # bit for bit: same ops in the same order on each thread's own tape
        np.testing.assert_array_equal(a, a_ref)
        np.testing.assert_array_equal(b, b_ref)
    x = ref = got = None
    assert wait_live(start) == start


def test_many_threads_and_f32():
    start = live()
    x, y = _data()
    x32 = pg.ag_tensor(x, dtype="f32")
    ref = train(3, x32, y, steps=40, dtype="f32")
    got = run_threads([lambda: train(3, x32, y, steps=40, dtype="f32") for _ in range(6)])
    for losses, a, b in got:
        assert losses == ref[0]
        np.testing.assert_array_equal(a, ref[1])
        np.testing.assert_array_equal(b, ref[2])
    x = x32 = None
    assert wait_live(start) == start


def test_shared_tensors_read_only_from_two_threads():
    start = live()
    rng = np.random.default_rng(0)
    W = pg.ag_tensor(rng.normal(size=(32, 32)), dtype="f64")  # frozen, shared
    X = pg.ag_tensor(rng.normal(size=(32, 16)), dtype="f64")
    want = np.tanh(W.numpy() @ X.numpy()).sum(axis=0)

    def use():
        outs = []
        for _ in range(200):
            outs.append(pg.ag_sum(pg.ag_tanh(pg.ag_matmul(W, X)), dim=2).numpy()[0])
        return outs

    for outs in run_threads([use, use, use]):
        for o in outs:
            np.testing.assert_allclose(o, want, rtol=1e-12, atol=1e-12)
    W = X = None
    assert wait_live(start) == start


def test_backward_through_a_shared_parameter_from_two_threads():
    """Both threads record their own tape over the same parameter and call backward at the
    same time: the core runs the backward passes one at a time, so the shared .grad ends as the
    exact sum of every thread's gradients (without the lock this crashed: both passes wrote the
    parameter's scratch gradient)."""
    start = live()
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    p = pg.ag_param(x, dtype="f64")
    n_iter = 100

    def work(scale):
        maps = []
        for _ in range(n_iter):
            with pg.with_grad_tape():
                loss = pg.ag_sum(pg.ag_scale(pg.ag_mul(p, p), scale))
            maps.append(pg.backward(loss)[p])
        return maps

    a, b = run_threads([lambda: work(1.0), lambda: work(3.0)])
    for g in a:
        np.testing.assert_array_equal(g, 2 * x)
    for g in b:
        np.testing.assert_allclose(g, 6 * x, rtol=1e-15)
    np.testing.assert_allclose(p.grad, n_iter * (2 * x + 6 * x), rtol=1e-12)
    p = None
    assert wait_live(start) == start


def test_thread_exit_frees_its_tape_and_scopes():
    start = live()
    shared = pg.ag_param(np.ones((50, 50)))

    def leave_nodes():
        scope = pg.with_grad_tape()
        scope.__enter__()  # never closed
        for _ in range(20):
            pg.ag_relu(pg.ag_matmul(shared, shared))
        assert lib.pg_tape_nodes() == 40

    run_threads([leave_nodes, leave_nodes])
    assert lib.pg_tape_nodes() == 0  # the main thread's tape is its own
    shared = None
    assert wait_live(start) == start


def test_optimizer_steps_on_shared_parameters_from_two_threads():
    """Hogwild-style: both threads step one optimizer each on the same parameter. The values
    are a race by design, but nothing is corrupted: finite, right shape, counters restored; a
    step of the other thread between a forward and its backward is detected (the saved
    parameter's version moved: ModifiedTensorError), never used silently."""
    start = live()
    p = pg.ag_param(np.ones((4, 4)))
    x = pg.ag_tensor(np.eye(4))

    def work():
        opt = pg.optimizer_sgd([p], lr=0.001)
        steps = refused = 0
        for _ in range(200):
            with pg.with_grad_tape():
                loss = pg.ag_mse_loss(pg.ag_matmul(p, x), x)
            try:
                g = pg.backward(loss)
            except pg.ModifiedTensorError:
                refused += 1
                continue
            opt.step(g)
            opt.zero_grad()
            steps += 1
        pg.ag_tape_clear()
        return steps + refused == 200 and steps > 0

    assert run_threads([work, work]) == [True, True]
    v = p.numpy()
    assert v.shape == (4, 4) and np.all(np.isfinite(v))
    p = x = None
    assert wait_live(start) == start


def test_compiled_steps_from_two_threads(f64):
    """Replays take the core's gradient lock and each compiled step serialises its own calls:
    two threads replaying "grad" steps over shared parameters get the single-threaded gradients,
    and one step called from two threads at once corrupts nothing."""
    rng = np.random.default_rng(5)
    model = pg.ag_sequential(pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, 2))
    xs = [rng.normal(size=(4, 6)) for _ in range(2)]
    ys = [rng.normal(size=(2, 6)) for _ in range(2)]

    def make(k):
        return pg.ag_compile(lambda x, y: pg.ag_mse_loss(model(x), y), xs[k], ys[k], build="grad")

    steps = [make(0), make(1)]
    want = [steps[k](xs[k], ys[k]) for k in range(2)]

    def worker(k):
        for _ in range(200):
            loss, grads = steps[k](xs[k], ys[k])
            assert loss == want[k][0]
            for key, g in grads.items():
                assert np.array_equal(g, want[k][1][key])
        return True

    assert run_threads([lambda: worker(0), lambda: worker(1)]) == [True, True]
    # the same step from two threads: every call sees its own inputs through
    assert run_threads([lambda: worker(0), lambda: worker(0)]) == [True, True]
