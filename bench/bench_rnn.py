"""LSTM / GRU training step (issue 30's goal: at most 0.5x PyTorch's time): hidden 64, sequence
32, batch 32, 8 features, many-to-one + a linear head, MSE, one Adam step; f32, one thread.
Prints the median step times and the ratios to PyTorch (eager and ag_compile), the three steps
timed in turn call by call."""

import statistics
import sys

from bench_common import call_times, pin_blas_env

pin_blas_env(True)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import pyggmlr as pg  # noqa: E402

torch.set_num_threads(1)
F, H, T, N, REPS = 8, 64, 32, 32, int(sys.argv[1]) if len(sys.argv) > 1 else 50
rng = np.random.default_rng(0)
x = rng.normal(size=(N, T, F)).astype(np.float32)
y = rng.normal(size=(N, 1)).astype(np.float32)


def bench(kind):
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
    rnn, head = cls(F, H, batch_first=True), torch.nn.Linear(H, 1)
    opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()))
    tx, ty = torch.tensor(x), torch.tensor(y)

    def torch_step():
        opt.zero_grad()
        out, _ = rnn(tx)
        loss = torch.nn.functional.mse_loss(head(out[:, -1]), ty)
        loss.backward()
        opt.step()

    layer = {"lstm": pg.ag_lstm, "gru": pg.ag_gru}[kind](F, H)
    model = pg.ag_sequential(layer, pg.ag_linear(H, 1))
    popt = pg.optimizer_adam(model.parameters())
    px, py = pg.ag_tensor(x.reshape(N, -1).T.copy()), pg.ag_tensor(y.T.copy())

    def pg_step():
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(model(px), py)
        popt.step(pg.backward(loss))
        popt.zero_grad()

    step = pg.ag_compile(lambda a, b: pg.ag_mse_loss(model(a), b), px, py, optimizer=popt)
    fns = {"torch": torch_step, "eager": pg_step, "compiled": lambda: step(px, py)}
    for fn in fns.values():
        for _ in range(5):
            fn()
    # interleaved call by call: a shared, noisy CPU slows the three alike, the ratios hold
    ts = {name: [] for name in fns}
    for _ in range(REPS):
        for name, fn in fns.items():
            ts[name] += call_times(fn, 1)
    res = {}
    for name, v in ts.items():
        res[name], res[name + " min"] = statistics.median(v), min(v)
    for key in ("", " min"):  # the minimum: the step without other processes' noise
        t, e, c = res["torch" + key], res["eager" + key], res["compiled" + key]
        print(
            f"{kind}{key or ' median'}: torch {t * 1e3:.2f} ms, pyggmlr eager {e * 1e3:.2f} ms "
            f"({e / t:.2f}x), compiled {c * 1e3:.2f} ms ({c / t:.2f}x)"
        )


for kind in ("lstm", "gru"):
    bench(kind)
