"""Single ops (forward, outside a tape) on a 1024 x 512 tensor: pyggmlr against numpy and, when
importable, PyTorch, all in this process, one thread.

Each op is timed in turns with its peers over BENCH_ROUNDS rounds; medians (µs) and the ratios
pyggmlr / numpy and pyggmlr / PyTorch are printed and written to bench/results/bench_ops.json.
The peers compute the same thing in the same dtype on the same memory layout: numpy on
Fortran-ordered arrays (pyggmlr is column-major), PyTorch on the transposed contiguous tensor
(its rows are pyggmlr's columns). Softmax and "sum dim 2" work per column (R's dim = 2). Before
timing, each pyggmlr result is checked against numpy's.

As the other scripts: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are dropped before OpenBLAS loads
(BENCH_KEEP_OPENBLAS_ENV=1 keeps them). Run: python bench/bench_ops.py
"""

import os

from bench_common import pin_blas_env

pin_blas_env()

import numpy as np  # noqa: E402
from bench_common import cell, median_us, write_results  # noqa: E402

import pyggmlr as pg  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # the numpy columns still run
    torch = None

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))
SHAPE = (1024, 512)


def np_softmax(z):
    e = np.exp(z - z.max(0))
    return e / e.sum(0)


def cases(a, b, col):
    """(name, pyggmlr fn of tensors, numpy fn of arrays, torch fn of tensors or None)"""
    return [
        ("add", lambda A, B, C: pg.ag_add(A, B), lambda a, b, c: a + b, lambda a, b, c: a + b),
        (
            "add column (bias)",
            lambda A, B, C: pg.ag_add(A, C),
            lambda a, b, c: a + c,
            lambda a, b, c: a + c,
        ),  # c: [1, rows] in torch
        ("mul", lambda A, B, C: pg.ag_mul(A, B), lambda a, b, c: a * b, lambda a, b, c: a * b),
        ("div", lambda A, B, C: pg.ag_div(A, B), lambda a, b, c: a / b, lambda a, b, c: a / b),
        (
            "relu",
            lambda A, B, C: pg.ag_relu(A),
            lambda a, b, c: np.maximum(a, 0),
            lambda a, b, c: torch.relu(a),
        ),
        (
            "sigmoid",
            lambda A, B, C: pg.ag_sigmoid(A),
            lambda a, b, c: 1 / (1 + np.exp(-a)),
            lambda a, b, c: torch.sigmoid(a),
        ),
        (
            "tanh",
            lambda A, B, C: pg.ag_tanh(A),
            lambda a, b, c: np.tanh(a),
            lambda a, b, c: torch.tanh(a),
        ),
        (
            "exp",
            lambda A, B, C: pg.ag_exp(A),
            lambda a, b, c: np.exp(a),
            lambda a, b, c: torch.exp(a),
        ),
        (
            "log",
            lambda A, B, C: pg.ag_log(A),
            lambda a, b, c: np.log(a),
            lambda a, b, c: torch.log(a),
        ),
        ("pow 2", lambda A, B, C: pg.ag_pow(A, 2), lambda a, b, c: a**2, lambda a, b, c: a**2),
        ("sum", lambda A, B, C: pg.ag_sum(A), lambda a, b, c: a.sum(), lambda a, b, c: a.sum()),
        (
            "sum dim 2",
            lambda A, B, C: pg.ag_sum(A, 2),
            lambda a, b, c: a.sum(0),
            lambda a, b, c: a.sum(1),
        ),
        (
            "softmax",
            lambda A, B, C: pg.ag_softmax(A),
            lambda a, b, c: np_softmax(a),
            lambda a, b, c: torch.softmax(a, 1),
        ),
        (
            "transpose",
            lambda A, B, C: pg.ag_transpose(A),
            lambda a, b, c: np.asfortranarray(a.T),
            lambda a, b, c: a.t().contiguous(),
        ),
    ]


def main():
    rng = np.random.default_rng(0)
    res = {
        "shape": list(SHAPE),
        "rounds": ROUNDS,
        "torch": torch.__version__ if torch else None,
        "cases": {},
    }
    print(
        f"pyggmlr {pg.__version__}, {SHAPE[0]}x{SHAPE[1]}, one thread, torch: {'yes' if torch else 'no'}"
    )
    print(
        f"{'op':22s}{'dtype':>6s}{'pyggmlr':>10s}{'numpy':>10s}{'torch':>10s}{'pg/np':>8s}{'pg/torch':>9s}"
    )
    for dt, npdt in (("f32", np.float32), ("f64", np.float64)):
        a = np.asfortranarray(rng.random(SHAPE) + 0.5, dtype=npdt)  # positive, for log and div
        b = np.asfortranarray(rng.random(SHAPE) + 0.5, dtype=npdt)
        col = np.asfortranarray(rng.random((SHAPE[0], 1)), dtype=npdt)
        T = [pg.ag_tensor(v, dtype=dt) for v in (a, b, col)]
        tt = [torch.from_numpy(np.ascontiguousarray(v.T)) for v in (a, b, col)] if torch else None
        for name, fpg, fnp, fto in cases(a, b, col):
            got, ref = fpg(*T).numpy(), fnp(a, b, col)
            np.testing.assert_allclose(
                np.asarray(got).reshape(np.shape(ref)), ref, rtol=1e-5 if dt == "f32" else 1e-12
            )
            t = {"pyggmlr": [], "numpy": [], "torch": []}
            for _ in range(ROUNDS):  # in turns, so drifts in load hit all alike
                t["pyggmlr"].append(median_us(lambda fpg=fpg, T=T: fpg(*T)))
                t["numpy"].append(median_us(lambda fnp=fnp, a=a, b=b, col=col: fnp(a, b, col)))
                if torch:
                    t["torch"].append(median_us(lambda fto=fto, tt=tt: fto(*tt)))
            m = {k: float(np.median(v)) if v else None for k, v in t.items()}
            res["cases"][f"{name} {dt}"] = m
            tor = cell(m["torch"], 10)
            rto = cell(m["torch"] and m["pyggmlr"] / m["torch"], 9, ".2f")
            print(
                f"{name:22s}{dt:>6s}{m['pyggmlr']:10.1f}{m['numpy']:10.1f}{tor}{m['pyggmlr'] / m['numpy']:8.2f}{rto}"
            )
    write_results("bench_ops", res)


if __name__ == "__main__":
    main()
