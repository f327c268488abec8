"""Training-step speed: pyggmlr's ggmlR-style loop against PyTorch and the GEMM floor.

For each model (4-64-32-3 at batch 32, 784-256-128-10 at batch 64 and 256; f32, Adam, one
thread) it times, in turns within this process:
  pyggmlr   with_grad_tape -> backward -> opt.step(grads) -> zero_grad  (f32, and f64)
  torch     PyTorch's idiomatic loop (zero_grad, forward, loss.backward(), Adam.step()) if importable
  gemm      the step's eight GEMMs alone (3 forward, 3 dW, the 2 dX past the first layer), by numpy's BLAS
  compiled  the same step recorded once by ag_compile and replayed in C (static graph)
and prints medians (µs) and ratios. Writes bench/results/bench_train.json.

  gemm f64  the same GEMMs in f64: f64 GEMMs / f32 GEMMs bounds the step's f64/f32 ratio
  builtin   the pyggmlr loop (f32 and f64) on the core's own blocked GEMM kernel instead of
            OpenBLAS (pg.ag_set_blas("builtin"); the R package's default where R's BLAS is the
            reference one)

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which some machines here set to force an older (Haswell)
OpenBLAS kernel, are removed before OpenBLAS loads so that it picks the CPU's own kernel; set
BENCH_KEEP_OPENBLAS_ENV=1 to keep them. Run: python bench/bench_train.py
"""

import os

from bench_common import pin_blas_env

pin_blas_env()  # before numpy and pyggmlr load OpenBLAS

import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
from bench_common import call_times  # noqa: E402

import pyggmlr as pg  # noqa: E402

CASES = [((4, 64, 32, 3), 32), ((784, 256, 128, 10), 64), ((784, 256, 128, 10), 256)]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))


def init(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    Ws = [rng.uniform(-1, 1, (o, i)) * np.sqrt(6 / (i + o)) for i, o in zip(sizes[:-1], sizes[1:])]
    x = rng.normal(size=(sizes[0], batch))
    y = rng.integers(0, sizes[-1], batch)
    return Ws, x, y


def pyggmlr_step(sizes, batch, dtype):
    Ws, x, y = init(sizes, batch)
    params = {}
    for i, W in enumerate(Ws):
        params[f"layer{i + 1}_W"] = pg.ag_param(W, dtype=dtype)
        params[f"layer{i + 1}_b"] = pg.ag_param(np.zeros(W.shape[0]), dtype=dtype)
    X = pg.ag_tensor(x, dtype=dtype)
    Y = pg.ag_tensor(y.reshape(1, -1), dtype=dtype)
    opt = pg.optimizer_adam(params, lr=1e-3)
    layers = [(params[f"layer{i + 1}_W"], params[f"layer{i + 1}_b"]) for i in range(len(Ws))]
    last = len(layers) - 1

    def step():
        with pg.with_grad_tape():
            h = X
            for k, (W, b) in enumerate(layers):
                h = pg.ag_add(pg.ag_matmul(W, h), b)
                if k < last:
                    h = pg.ag_relu(h)
            loss = pg.ag_softmax_cross_entropy_loss(h, Y)
        opt.step(pg.backward(loss))
        opt.zero_grad()

    return step


def compiled_step(sizes, batch, dtype):
    """The same step recorded once with ag_compile and replayed in C (static graph)."""
    Ws, x, y = init(sizes, batch)
    P = []
    for W in Ws:
        P += [pg.ag_param(W, dtype=dtype), pg.ag_param(np.zeros((W.shape[0], 1)), dtype=dtype)]
    opt = pg.optimizer_adam(P, lr=1e-3)
    last = len(Ws) - 1

    def fn(X, Y):
        h = X
        for k in range(len(Ws)):
            h = pg.ag_add(pg.ag_matmul(P[2 * k], h), P[2 * k + 1])
            if k < last:
                h = pg.ag_relu(h)
        return pg.ag_softmax_cross_entropy_loss(h, Y)

    X, Y = pg.ag_tensor(x, dtype=dtype), pg.ag_tensor(y.reshape(1, -1), dtype=dtype)
    step = pg.ag_compile(fn, X, Y, optimizer=opt)
    return lambda: step(X, Y)


def torch_step(sizes, batch):
    import torch

    torch.set_num_threads(1)
    Ws, x, y = init(sizes, batch)
    layers = []
    for W in Ws:
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W))
            lin.bias.zero_()
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.from_numpy(x.T.astype(np.float32)).contiguous()  # PyTorch is [batch, features]
    Y = torch.from_numpy(y)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = lossf(model(X), Y)
        loss.backward()
        opt.step()

    return step


def gemm_floor(sizes, batch, dtype=np.float32):
    """Forward W·h, backward dW = g·hᵀ and dh = Wᵀ·g per layer (no dh for the first layer)."""
    Ws, x, _ = init(sizes, batch)
    Ws = [np.asfortranarray(W, dtype=dtype) for W in Ws]
    hs = [
        np.asfortranarray(np.random.default_rng(1).normal(size=(n, batch)), dtype=dtype)
        for n in sizes
    ]

    def step():
        for k, W in enumerate(Ws):
            W @ hs[k]
        for k in range(len(Ws) - 1, -1, -1):
            g = hs[k + 1]
            g @ hs[k].T
            if k:
                Ws[k].T @ g

    return step


def gemm_for(k, default):
    """The builtin peers run on the core's kernel, the rest on `default` (the GEMM at start)."""
    want = "builtin" if k.startswith("builtin") or default == "builtin" else "openblas"
    if (pg.ag_blas_name() == "builtin") != (want == "builtin"):
        pg.ag_set_blas(want)


def main():
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    pg.ag_set_threads(1)
    results = []
    print(
        f"pyggmlr {pg.__version__}, GEMM: {pg.ag_blas_name()}, torch: {'yes' if have_torch else 'not installed'}"
    )
    print(
        f"{'model':<24}{'pyggmlr f32':>12}{'f64':>10}{'torch':>10}{'gemm':>10}"
        f"{'pg/torch':>10}{'pg/gemm':>9}{'f64/f32':>9}{'gemm64/32':>10}{'compiled':>10}{'cmp/torch':>10}"
        f"{'builtin':>9}{'bi f64':>9}"
    )
    for sizes, batch in CASES:
        peers = {
            "pyggmlr": pyggmlr_step(sizes, batch, "f32"),
            "pyggmlr_f64": pyggmlr_step(sizes, batch, "f64"),
            "builtin": pyggmlr_step(sizes, batch, "f32"),
            "builtin_f64": pyggmlr_step(sizes, batch, "f64"),
            "gemm": gemm_floor(sizes, batch),
            "gemm_f64": gemm_floor(sizes, batch, np.float64),
            "compiled": compiled_step(sizes, batch, "f32"),
        }
        if have_torch:
            peers["torch"] = torch_step(sizes, batch)
        n = 200 if batch < 100 and sizes[0] < 100 else 20
        default = pg.ag_blas_name()
        for k, f in peers.items():  # warm up
            gemm_for(k, default)
            for _ in range(5):
                f()
        times = {k: [] for k in peers}
        for _ in range(ROUNDS):  # in turns, so load drifts hit every peer alike
            for k, f in peers.items():
                gemm_for(k, default)
                times[k] += call_times(f, n)
        gemm_for("default", default)
        med = {k: float(np.median(v)) * 1e6 for k, v in times.items()}
        t = med.get("torch")
        row = {
            "model": "-".join(map(str, sizes)),
            "batch": batch,
            "median_us": med,
            "ratio_torch": med["pyggmlr"] / t if t else None,
            "ratio_gemm": med["pyggmlr"] / med["gemm"],
            "ratio_f64_f32": med["pyggmlr_f64"] / med["pyggmlr"],
            "ratio_gemm_f64_f32": med["gemm_f64"] / med["gemm"],
            "ratio_compiled_torch": med["compiled"] / t if t else None,
        }
        results.append(row)
        name = f"{row['model']} b{batch}"
        print(
            f"{name:<24}{med['pyggmlr']:>12.1f}{med['pyggmlr_f64']:>10.1f}{(t or float('nan')):>10.1f}"
            f"{med['gemm']:>10.1f}{(row['ratio_torch'] or float('nan')):>10.3f}{row['ratio_gemm']:>9.2f}"
            f"{row['ratio_f64_f32']:>9.2f}{row['ratio_gemm_f64_f32']:>10.2f}{med['compiled']:>10.1f}{(row['ratio_compiled_torch'] or float('nan')):>10.3f}"
            f"{med['builtin']:>9.1f}{med['builtin_f64']:>9.1f}"
        )
    out = pathlib.Path(__file__).resolve().parent / "results" / "bench_train.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "blas": pg.ag_blas_name(),
                "python": sys.version.split()[0],
                "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                "cases": results,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
