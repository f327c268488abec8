"""Convolution, pooling and recurrent layers against PyTorch: one Adam training step, f32, one
thread, one process, the issue-30 models:

  digits-cnn  8x8x1 images, conv3x3 16 + ReLU + max-pool 2 + dense 64 + 10, batch 32
  lenet5      28x28x1 images, conv5x5 6 (pad 2) + ReLU + pool, conv5x5 16 + ReLU + pool,
              dense 120 + 84 + 10, batch 64
  lstm / gru  8 features, sequence 32, hidden 64, many-to-one, dense 1 (MSE), batch 32

pyggmlr runs eagerly (with_grad_tape, backward, opt.step, zero_grad) and compiled (ag_compile,
one replay a step); PyTorch its idiomatic loop. Both start from the same weights (copied into
torch), and one step of each is compared first, so the two compute the same thing. Medians of
BENCH_ROUNDS rounds (default 9), ratio pyggmlr / PyTorch; the CPU is printed. Numbers are printed,
never asserted. A second table gives each step's memory: the core's measured peak of one eager
step (weights, batch and everything the step allocates), against what the step must hold (the
tape's activations + weights + gradients + Adam's two moments + the batch) and against
ag_estimate_training_memory. Run: python bench/bench_cnn.py [case ...]
"""

import os
import sys

from bench_common import pin_blas_env

pin_blas_env()  # before numpy and pyggmlr load OpenBLAS

import numpy as np  # noqa: E402
from bench_common import cpu_name, median_per_call  # noqa: E402

import pyggmlr as pg  # noqa: E402

try:
    import torch
except ImportError:  # the ratios need it; pyggmlr's times are printed alone
    torch = None

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 9))


def digits_cnn():
    model = pg.ag_sequential(
        pg.ag_conv2d(1, 16, 3, activation="relu", input_shape=(1, 8, 8)),
        pg.ag_max_pool2d(2),
        pg.ag_flatten(),
        pg.ag_linear(16 * 3 * 3, 64, "relu"),
        pg.ag_linear(64, 10),
    )
    tm = None
    if torch is not None:
        T = torch.nn
        tm = T.Sequential(
            T.Conv2d(1, 16, 3), T.ReLU(), T.MaxPool2d(2), T.Flatten(),
            T.Linear(144, 64), T.ReLU(), T.Linear(64, 10),
        )  # fmt: skip
    return model, tm, (1, 8, 8), 32, "class"


def lenet5():
    model = pg.ag_sequential(
        pg.ag_conv2d(1, 6, 5, padding=2, activation="relu", input_shape=(1, 28, 28)),
        pg.ag_max_pool2d(2),
        pg.ag_conv2d(6, 16, 5, activation="relu"),
        pg.ag_max_pool2d(2),
        pg.ag_flatten(),
        pg.ag_linear(400, 120, "relu"),
        pg.ag_linear(120, 84, "relu"),
        pg.ag_linear(84, 10),
    )
    tm = None
    if torch is not None:
        T = torch.nn
        tm = T.Sequential(
            T.Conv2d(1, 6, 5, padding=2), T.ReLU(), T.MaxPool2d(2),
            T.Conv2d(6, 16, 5), T.ReLU(), T.MaxPool2d(2), T.Flatten(),
            T.Linear(400, 120), T.ReLU(), T.Linear(120, 84), T.ReLU(), T.Linear(84, 10),
        )  # fmt: skip
    return model, tm, (1, 28, 28), 64, "class"


class _TorchRNN(object if torch is None else torch.nn.Module):
    """torch's recurrent layer (batch_first), its last step, a dense 1."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind.upper())(8, 64, batch_first=True)
        self.out = torch.nn.Linear(64, 1)

    def forward(self, x):
        return self.out(self.rnn(x)[0][:, -1, :])


def recurrent(kind):
    def make():
        layer = {"lstm": pg.ag_lstm, "gru": pg.ag_gru}[kind](8, 64)
        model = pg.ag_sequential(layer, pg.ag_linear(64, 1))
        return model, (_TorchRNN(kind) if torch is not None else None), (32, 8), 32, "mse"

    return make


CASES = {"digits-cnn": digits_cnn, "lenet5": lenet5, "lstm": recurrent("lstm"),
         "gru": recurrent("gru")}  # fmt: skip


def data(shape, batch, target, seed=0):
    """x [prod(shape), batch] (one sample a column, numpy's C order within it) and y."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(int(np.prod(shape)), batch)).astype(np.float32)
    y = rng.integers(0, 10, batch) if target == "class" else rng.normal(size=batch)
    return x, y.astype(np.float32)


def copy_into_torch(model, tm):
    """pyggmlr's start weights into torch's modules, in parameter order (same shapes, reshaped)."""
    ps = list(model.parameters().values())
    ts = list(tm.parameters())
    if len(ps) != len(ts):
        raise RuntimeError(f"{len(ps)} pyggmlr parameters against {len(ts)} of torch")
    with torch.no_grad():
        for p, t in zip(ps, ts):
            t.copy_(torch.from_numpy(np.asarray(p.data, dtype=np.float32).reshape(t.shape)))


def steps(make):
    model, tm, shape, batch, target = make()
    x, y = data(shape, batch, target)
    X = pg.ag_tensor(x)
    Y = pg.ag_tensor(y.reshape(1, -1))
    lossf = pg.ag_softmax_cross_entropy_loss if target == "class" else pg.ag_mse_loss
    opt = pg.optimizer_adam(model.parameters(), lr=1e-3)

    def fn(X, Y):
        return lossf(model.forward(X), Y)

    def eager():
        with pg.with_grad_tape():
            loss = fn(X, Y)
        opt.step(pg.backward(loss))
        opt.zero_grad()
        return loss

    out = {"eager": eager}
    if tm is not None:
        copy_into_torch(model, tm)
        topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
        tx = torch.from_numpy(np.ascontiguousarray(x.T)).reshape((batch,) + tuple(shape))
        ty = torch.from_numpy(y.astype(np.int64) if target == "class" else y.reshape(-1, 1))
        tl = torch.nn.CrossEntropyLoss() if target == "class" else torch.nn.MSELoss()

        def tstep():
            topt.zero_grad()
            loss = tl(tm(tx), ty)
            loss.backward()
            topt.step()
            return loss

        # the same first step: the losses agree to f32 rounding
        a, b = float(eager().item()), float(tstep().item())
        if abs(a - b) > 1e-4 * max(1.0, abs(b)):
            raise RuntimeError(f"first-step losses differ: pyggmlr {a} torch {b}")
        out["torch"] = tstep
    step = pg.ag_compile(fn, X, Y, optimizer=opt)
    out["compiled"] = lambda: step(X, Y)
    return out


def memory(make):
    """(measured peak, activations, weights, estimate) in bytes for one eager Adam step."""
    model, _, shape, batch, target = make()
    x, y = data(shape, batch, target)
    lossf = pg.ag_softmax_cross_entropy_loss if target == "class" else pg.ag_mse_loss
    opt = pg.optimizer_adam(model.parameters(), lr=1e-3)
    w = sum(p.size for p in model.parameters().values()) * 4
    est = pg.ag_estimate_training_memory(model=model, input_shape=(int(np.prod(shape)), batch),
                                         quiet=True).total  # fmt: skip
    base = pg.ag_memory_stats()["total"]["current"] - w
    pg.ag_memory_reset_peak()
    X, Y = pg.ag_tensor(x), pg.ag_tensor(y.reshape(1, -1))
    with pg.with_grad_tape():
        loss = lossf(model.forward(X), Y)
    grads = pg.backward(loss)
    act = pg.ag_tape_memory(quiet=True).bytes_snapshots
    opt.step(grads)
    peak = pg.ag_memory_peak() - base
    del grads, loss
    opt.zero_grad()
    return peak, act, w, est, x.nbytes + batch * 4


def main(names):
    pg.ag_set_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"CPU: {cpu_name()}; pyggmlr {pg.__version__}, GEMM {pg.ag_blas_name()}; f32, 1 thread")
    print(f"{'model':<12}{'eager us':>10}{'compiled us':>13}{'torch us':>10}"
          f"{'eager/torch':>13}{'compiled/torch':>16}")  # fmt: skip
    for name in names:
        fns = steps(CASES[name])
        reps = 20 if name == "lenet5" else 100
        med = {k: median_per_call(f, ROUNDS, reps) * 1e6 for k, f in fns.items()}
        t = med.get("torch", float("nan"))
        print(f"{name:<12}{med['eager']:>10.1f}{med['compiled']:>13.1f}{t:>10.1f}"
              f"{med['eager'] / t:>13.2f}{med['compiled'] / t:>16.2f}")  # fmt: skip
    print(f"\n{'model':<12}{'peak KB':>10}{'act KB':>9}{'weights KB':>12}{'need KB':>10}"
          f"{'peak/need':>11}{'est/peak':>10}")  # fmt: skip
    for name in names:
        peak, act, w, est, xy = memory(CASES[name])
        need = act + 4 * w + xy  # activations, weights + grads + 2 Adam moments, the batch
        print(f"{name:<12}{peak / 1024:>10.1f}{act / 1024:>9.1f}{w / 1024:>12.1f}"
              f"{need / 1024:>10.1f}{peak / need:>11.2f}{est / peak:>10.3f}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
