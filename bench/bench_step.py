"""One training step of an MLP: pyggmlr against a hand-written numpy version of the same step.

Models (f32, one thread, ReLU hidden layers, fused softmax cross-entropy on integer targets,
Adam lr 1e-3): 4-64-32-3 at batch 32 and 784-256-128-10 at batch 64. A step is
  pyggmlr  with_grad_tape(forward) -> backward -> opt.step(grads) -> opt.zero_grad()
  numpy    the same forward, hand-derived backward and Adam update, in float32 arrays
Both run in this process, interleaved in rounds; medians (µs) and the ratio pyggmlr / numpy are
printed and written to bench/results/bench_step.json. Before timing, one step of each is
compared (same start weights, same batch) so the two really compute the same thing.

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set in some shells here to force an older OpenBLAS kernel)
are removed before OpenBLAS loads, as in bench_train.py; BENCH_KEEP_OPENBLAS_ENV=1 keeps them.
Run: python bench/bench_step.py
"""

import os

from bench_common import pin_blas_env

pin_blas_env()  # before numpy and pyggmlr load OpenBLAS

import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_common import write_results  # noqa: E402

import pyggmlr as pg  # noqa: E402

CASES = [((4, 64, 32, 3), 32), ((784, 256, 128, 10), 64)]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 20))
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def init(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    Ws = [
        (rng.uniform(-1, 1, (o, i)) * np.sqrt(6 / (i + o))).astype(np.float32)
        for i, o in zip(sizes[:-1], sizes[1:])
    ]
    bs = [np.zeros((o, 1), np.float32) for o in sizes[1:]]
    x = rng.normal(size=(sizes[0], batch)).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    return Ws, bs, x, y


class PyggmlrStep:
    def __init__(self, Ws, bs, x, y):
        self.Ws = [pg.ag_param(W, dtype="f32") for W in Ws]
        self.bs = [pg.ag_param(b, dtype="f32") for b in bs]
        self.x = pg.ag_tensor(x, dtype="f32")
        self.y = y
        self.opt = pg.optimizer_adam([p for wb in zip(self.Ws, self.bs) for p in wb], lr=LR)

    def __call__(self):
        with pg.with_grad_tape():
            h = self.x
            for k, (W, b) in enumerate(zip(self.Ws, self.bs)):
                h = pg.ag_add(pg.ag_matmul(W, h), b)
                if k < len(self.Ws) - 1:
                    h = pg.ag_relu(h)
            loss = pg.ag_softmax_cross_entropy_loss(h, self.y)
        grads = pg.backward(loss)
        self.opt.step(grads)
        self.opt.zero_grad()
        return loss


class NumpyStep:
    """Forward, backward and Adam written out by hand in float32 (column-major maths)."""

    def __init__(self, Ws, bs, x, y):
        self.params = [a.copy() for wb in zip(Ws, bs) for a in wb]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        self.x = x
        self.onehot = np.zeros((Ws[-1].shape[0], x.shape[1]), np.float32)
        self.onehot[y, np.arange(x.shape[1])] = 1

    def __call__(self):
        P = self.params
        n = len(P) // 2
        B = self.x.shape[1]
        acts, h = [self.x], self.x
        for k in range(n):
            z = P[2 * k] @ h + P[2 * k + 1]
            h = np.maximum(z, 0) if k < n - 1 else z
            acts.append(h)
        z = acts[-1]
        e = np.exp(z - z.max(axis=0, keepdims=True))
        p = e / e.sum(axis=0, keepdims=True)
        loss = -np.sum(self.onehot * np.log(np.maximum(p, 1e-7))) / B
        g = (p - self.onehot) / np.float32(B)
        grads = [None] * len(P)
        for k in range(n - 1, -1, -1):
            grads[2 * k] = g @ acts[k].T
            grads[2 * k + 1] = g.sum(axis=1, keepdims=True)
            if k > 0:
                g = (P[2 * k].T @ g) * (acts[k] > 0)
        self.t += 1
        c1, c2 = 1 - B1**self.t, 1 - B2**self.t
        for p_, g_, m_, v_ in zip(P, grads, self.m, self.v):
            m_ *= B1
            m_ += (1 - B1) * g_
            v_ *= B2
            v_ += (1 - B2) * g_ * g_
            p_ -= LR * (m_ / c1) / (np.sqrt(v_ / c2) + EPS)
        return loss


def check_same(sizes, batch):
    Ws, bs, x, y = init(sizes, batch, seed=1)
    a, b = PyggmlrStep(Ws, bs, x, y), NumpyStep(Ws, bs, x, y)
    for _ in range(3):
        la, lb = a(), b()
    assert abs(la.item() - lb) < 1e-4 * max(1, abs(lb)), (la.item(), lb)
    for pa, pb in zip([q for wb in zip(a.Ws, a.bs) for q in wb], b.params):
        np.testing.assert_allclose(pa.numpy(), pb, atol=1e-5)


def time_case(sizes, batch):
    Ws, bs, x, y = init(sizes, batch)
    steps = {"pyggmlr": PyggmlrStep(Ws, bs, x, y), "numpy": NumpyStep(Ws, bs, x, y)}
    inner = max(
        1, int(2e5 // (sum(i * o for i, o in zip(sizes[:-1], sizes[1:])) * batch / 1e3 + 1))
    )
    inner = min(inner, 200)
    for f in steps.values():  # warm up
        for _ in range(5):
            f()
    times = {k: [] for k in steps}
    for _ in range(ROUNDS):
        for k, f in steps.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            times[k].append((time.perf_counter() - t0) / inner * 1e6)
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {
        "model": "-".join(map(str, sizes)),
        "batch": batch,
        "dtype": "f32",
        "inner_steps": inner,
        "rounds": ROUNDS,
        "median_us": med,
        "ratio_pyggmlr_over_numpy": med["pyggmlr"] / med["numpy"],
    }


def main():
    pg.ag_set_threads(1)
    pg.ag_dtype("f32")
    results = []
    for sizes, batch in CASES:
        check_same(sizes, batch)
        r = time_case(sizes, batch)
        results.append(r)
        m = r["median_us"]
        print(
            f"{r['model']:>16} batch {batch:>3}:  pyggmlr {m['pyggmlr']:9.1f} µs   numpy {m['numpy']:9.1f} µs   "
            f"ratio {r['ratio_pyggmlr_over_numpy']:.2f}"
        )
    out = {
        "benchmark": "bench_step",
        "blas": pg.ag_blas_name(),
        "numpy": np.__version__,
        "threads": 1,
        "env": {
            k: os.environ.get(k)
            for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")
        },
        "results": results,
    }
    write_results("bench_step", out, indent=2)


if __name__ == "__main__":
    main()
