"""The built-in GEMM kernel (native/gemm_kernel.c, micro-kernels in native/gemm_ukernel.c) versus
OpenBLAS (scipy-openblas32, through pg.ag_set_blas) versus numpy's `@`, single-threaded, f32 and f64, on the GEMM shapes of the
project's models (forward and backward of the MLP layers, the small demo network, a square).

Each row: op(A) [m x k] times op(B) [k x n]; "tn" means A is stored [k x m] and transposed (the
dX = W^T G of a layer's backward), "nt" that B is stored [n x k] and transposed (dW = G X^T).
pyggmlr is timed through ag_matmul / the internal matmul_t op (outside a tape), so a few
microseconds of call overhead (allocating the output) are included, as in numpy's `@`; on the
tiny shapes that overhead (about 0.6 us) is most of the time.

The built-in column is the kernel the CPU gets by default (AVX-512F, AVX2+FMA or portable, see
native/gemm_ukernel.c); where that is AVX-512, an "avx2" column times the AVX2 kernel as well (forced
through pg_gemm_kernel_select). The OpenBLAS core in use (e.g. SkylakeX = its AVX-512 kernels,
Haswell = AVX2) is printed first.

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which some machines here set to force OpenBLAS's older
(Haswell, AVX2) kernels, are removed before OpenBLAS loads, so that it runs the CPU's own kernels
(as bench/bench_train.py does); set BENCH_KEEP_OPENBLAS_ENV=1 to keep them.

Threads: on the shapes large enough to split (2 m n k >= 8 MFLOP), the built-in kernel and
OpenBLAS are timed with ag_set_threads(BENCH_THREADS, default 2) as well ("bi Nt us",
"ob Nt us", and each one's speedup over its own single thread, "bi x" / "ob x"). The built-in
kernel splits rows or columns of C over a persistent pool (same bits for every thread count);
products run back to back here, so its workers are still awake from the previous one.

`--shapes models` times instead every GEMM of the project's models as the core calls it
(forward, and backward's dX = W^T G "tn" and dW = G X^T "nt"): the MLP 784-256-128-10 at batch
64 and 256, the transformer block (vocabulary 1000, D 256, 4 heads, 128 tokens: projections,
FFN, LM head, the per-head attention products of native/ops_mha.c) and the LSTM / GRU of
bench/bench_rnn.py (hidden 64, 8 features, sequence 32, batch 32: native/ops_rnn*.c), single
thread, built-in (and AVX2) against OpenBLAS only, timed in alternating rounds (built-in,
OpenBLAS, AVX2, built-in, ...) so that the VM's drift hits every column alike, with each one's
spread (slowest / fastest round) and the shapes whose built-in / OpenBLAS ratio exceeds 1/0.9. Writes
bench/results/bench_gemm_models.json. For an AVX2 machine's pair on an AVX-512 one, read the
avx2/ob column of a run with BENCH_KEEP_OPENBLAS_ENV=1 OPENBLAS_CORETYPE=Haswell.

Run: python bench/bench_gemm.py [--shapes default|models]  (BENCH_SECONDS per measurement,
default 0.15; medians of 7). Writes bench/results/bench_gemm.json (or $BENCH_OUT). Numbers are
printed, never asserted."""

import os

from bench_common import pin_blas_env

pin_blas_env(force_one_thread=True)  # before numpy and pyggmlr load OpenBLAS

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_common import cpu_name  # noqa: E402
from pyggmlr._native import lib  # noqa: E402

import pyggmlr as pg  # noqa: E402
from pyggmlr import _core  # noqa: E402
from pyggmlr.nn.base import _matmul_t  # noqa: E402

KERNELS = {0: "portable", 1: "AVX2+FMA", 2: "AVX-512F"}

HERE = os.path.dirname(os.path.abspath(__file__))
SECONDS = float(os.environ.get("BENCH_SECONDS", 0.15))
THREADS = int(os.environ.get("BENCH_THREADS", 2))
THREADED_MIN_FLOPS = 8e6
REPEATS = 7

# (name, m, k, n, layout)
SHAPES = [
    ("mlp fwd 256x784 * 784x64", 256, 784, 64, "nn"),
    ("mlp fwd 256x784 * 784x256", 256, 784, 256, "nn"),
    ("hidden 128x256 * 256x256", 128, 256, 256, "nn"),
    ("demo 64x4 * 4x32", 64, 4, 32, "nn"),
    ("bwd dX 784x256^T * 256x64", 784, 256, 64, "tn"),
    ("bwd dW 256x64 * 784x64^T", 256, 64, 784, "nt"),
    ("square 512", 512, 512, 512, "nn"),
    # small and thin products of small MLPs (the built-in kernel's direct path): forward, and the
    # backward dW = G X^T ("nt") and dX = W^T G ("tn") of the 64x4 and 10x128 layers
    ("small 64x4 * 4x32", 64, 4, 32, "nn"),
    ("small dW 64x32 * 4x32^T", 64, 32, 4, "nt"),
    ("small dX 64x4^T * 64x32", 4, 64, 32, "tn"),
    ("small 32x64 * 64x32", 32, 64, 32, "nn"),
    ("thin 3x32 * 32x32", 3, 32, 32, "nn"),
    ("thin dW 3x32 * 32x32^T", 3, 32, 32, "nt"),
    ("small 64x32 * 32x32", 64, 32, 32, "nn"),
    ("out 10x128 * 128x64", 10, 128, 64, "nn"),
    ("out dW 10x64 * 128x64^T", 10, 64, 128, "nt"),
    ("out dX 10x128^T * 10x64", 128, 10, 64, "tn"),
    ("out 10x128 * 128x256", 10, 128, 256, "nn"),
    ("small 64x64 * 64x64", 64, 64, 64, "nn"),
    ("small 128x64 * 64x64", 128, 64, 64, "nn"),
]


def _linear(tag, o, i, b):
    """A linear layer's three products: Y = W X, dX = W^T G, dW = G X^T."""
    return [
        (f"{tag} fwd", o, i, b, "nn"),
        (f"{tag} dX", i, o, b, "tn"),
        (f"{tag} dW", o, b, i, "nt"),
    ]


def _recurrent(tag, gh, h=64, f=8, n=32, t=32):
    """native/ops_rnn*.c: the input projection over all steps, the per-step recurrent product,
    and backward's dh (W_h^T stored: nn), dX, dW_i and dW_h over all steps."""
    tn = t * n
    return [
        (f"{tag} x proj", gh, f, tn, "nn"),
        (f"{tag} step", gh, h, n, "nn"),
        (f"{tag} bw dh", h, gh, n, "nn"),
        (f"{tag} bw dX", f, gh, tn, "tn"),
        (f"{tag} bw dWi", gh, tn, f, "nt"),
        (f"{tag} bw dWh", gh, tn, h, "nt"),
    ]


MODEL_SHAPES = (
    [
        s
        for b in (64, 256)
        for d in ((784, 256), (256, 128), (128, 10))
        for s in _linear(f"mlp{b} {d[0]}->{d[1]}", d[1], d[0], b)
    ]
    + _linear("tfm qkv/out", 256, 256, 128)
    + _linear("tfm ffn up", 1024, 256, 128)
    + _linear("tfm ffn down", 256, 1024, 128)
    + _linear("tfm lm head", 1000, 256, 128)
    + [
        ("tfm attn S=K^T Q", 128, 64, 128, "tn"),
        ("tfm attn O=V P", 64, 128, 128, "nn"),
        ("tfm attn dV=G P^T", 64, 128, 128, "nt"),
    ]
    + _recurrent("lstm", 256)
    + _recurrent("gru", 192)
)


def timed_rounds(fn):
    """Seconds per call in each of REPEATS rounds (each about SECONDS long), sorted."""
    fn()
    t = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t, 1e-7)
    reps = max(1, int(SECONDS / one))
    per = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        per.append((time.perf_counter() - t) / reps)
    return sorted(per)


def median_seconds(fn, spread=None):
    per = timed_rounds(fn)
    if spread is not None:
        spread.append(per[-1] / per[0])
    return per[len(per) // 2]


def operands(m, k, n, layout, dtype, rng):
    a = rng.standard_normal((k, m) if layout == "tn" else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if layout == "nt" else (k, n)).astype(dtype)
    return a, b


def pyggmlr_fn(a, b, layout, dt):
    ta, tb = pg.ag_tensor(a, dtype=dt), pg.ag_tensor(b, dtype=dt)
    if layout == "nn":
        return lambda: pg.ag_matmul(ta, tb)
    return lambda: _matmul_t(ta, tb, ta=layout == "tn", tb=layout == "nt")


def numpy_fn(a, b, layout):
    a_op = a.T if layout == "tn" else a
    b_op = b.T if layout == "nt" else b
    return lambda: a_op @ b_op


def openblas_core():
    """OpenBLAS's name for the kernels it picked (SkylakeX, Haswell, Zen, ...), or None."""
    dll = getattr(_core, "_blas_dll", None)
    fn = getattr(dll, "scipy_openblas_get_corename", None) if dll is not None else None
    if fn is None:
        return None
    fn.restype = ctypes.c_char_p
    return fn().decode()


def builtin_time(fn, kernel, threads=1, spread=None):
    pg.ag_set_blas("builtin")
    lib.pg_gemm_kernel_select(kernel)
    pg.ag_set_threads(threads)
    try:
        return median_seconds(fn, spread)
    finally:
        pg.ag_set_threads(1)
        lib.pg_gemm_kernel_select(-1)


def openblas_time(fn, threads=1, spread=None):
    pg.ag_set_blas("openblas")
    pg.ag_set_threads(threads)
    try:
        return median_seconds(fn, spread)
    finally:
        pg.ag_set_threads(1)


def interleaved(fn, sets):
    """(median seconds a call, slowest / fastest round) for each (blas, kernel) in sets, timed
    round-robin (REPEATS rounds, each set about SECONDS a round): this VM's speed drifts up to 2x
    within minutes, which then hits every column of a row alike."""
    per = [[] for _ in sets]
    reps = 1
    for r in range(REPEATS + 1):  # round 0 warms each set and sizes reps
        for i, (blas, kernel) in enumerate(sets):
            pg.ag_set_blas(blas)
            lib.pg_gemm_kernel_select(kernel)
            fn()
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            dt = (time.perf_counter() - t) / reps
            if r:
                per[i].append(dt)
            elif i == 0:
                reps = max(1, int(SECONDS / max(dt, 1e-7)))
    lib.pg_gemm_kernel_select(-1)
    return [(sorted(p)[len(p) // 2], max(p) / min(p)) for p in per]


def main_models(best, core):
    """--shapes models: every GEMM of the models, built-in (and AVX2) / OpenBLAS, one thread."""
    rng = np.random.default_rng(0)
    rows, slow = [], []
    print(
        f"CPU: {cpu_name()}; one thread; medians of {REPEATS} interleaved rounds; spread = slowest / fastest round"
    )
    print(f"built-in kernel: {KERNELS[best]}; OpenBLAS core: {core or '-'}")
    head = (
        f"{'shape':<24} {'m':>5} {'k':>5} {'n':>5} {'op':<3} {'dt':<4} {'builtin ms':>10} {'sprd':>5} "
        f"{'avx2 ms':>8} {'openblas ms':>11} {'sprd':>5} {'bi/ob':>6} {'avx2/ob':>7}"
    )
    print(head)
    print("-" * len(head))
    for dt, npdt in (("f32", np.float32), ("f64", np.float64)):
        for name, m, k, n, layout in MODEL_SHAPES:
            a, b = operands(m, k, n, layout, npdt, rng)
            fn = pyggmlr_fn(a, b, layout, dt)
            sets = [("builtin", best), ("openblas", -1)] + ([("builtin", 1)] if best == 2 else [])
            (t_bi, sp_bi), (t_ob, sp_ob), *t2 = interleaved(fn, sets)
            t_avx2 = t2[0][0] if t2 else None
            r = t_bi / t_ob
            r2 = t_avx2 / t_ob if t_avx2 else None
            rows.append(
                {
                    "shape": name,
                    "m": m,
                    "k": k,
                    "n": n,
                    "layout": layout,
                    "dtype": dt,
                    "builtin_kernel": KERNELS[best],
                    "builtin_s": t_bi,
                    "builtin_spread": sp_bi,
                    "builtin_avx2_s": t_avx2,
                    "openblas_core": core,
                    "openblas_s": t_ob,
                    "openblas_spread": sp_ob,
                    "ratio_builtin_openblas": r,
                    "ratio_avx2_openblas": r2,
                }
            )
            # the AVX2 column stands for an AVX2 machine only against OpenBLAS's AVX2 kernels
            if r > 1 / 0.9 or (r2 and core == "Haswell" and r2 > 1 / 0.9):
                slow.append(f"{name} {dt} ({r:.2f}" + (f", avx2 {r2:.2f})" if r2 else ")"))
            avx2 = f"{t_avx2 * 1e3:8.4f}" if t_avx2 else f"{'-':>8}"
            r2s = f"{r2:7.2f}" if r2 else f"{'-':>7}"
            print(
                f"{name:<24} {m:5d} {k:5d} {n:5d} {layout:<3} {dt:<4} {t_bi * 1e3:10.4f} {sp_bi:5.2f} "
                f"{avx2} {t_ob * 1e3:11.4f} {sp_ob:5.2f} {r:6.2f} {r2s}",
                flush=True,
            )
    print("above 1/0.9 of OpenBLAS: " + ("; ".join(slow) if slow else "none"))
    pg.ag_set_blas("openblas")
    out = os.environ.get("BENCH_OUT", os.path.join(HERE, "results", "bench_gemm_models.json"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(
            {
                "cpu": cpu_name(),
                "threads": 1,
                "seconds_per_measurement": SECONDS,
                "repeats": REPEATS,
                "rows": rows,
            },
            f,
            indent=1,
        )
    print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", choices=("default", "models"), default="default")
    args = ap.parse_args()
    pg.ag_set_threads(1)
    have_openblas = True
    try:
        pg.ag_set_blas("openblas")
    except RuntimeError:
        have_openblas = False
    best = lib.pg_gemm_kernel_select(-1)
    rng = np.random.default_rng(0)
    rows = []
    core = openblas_core() if have_openblas else None
    if args.shapes == "models":
        if not have_openblas:
            raise SystemExit("--shapes models needs OpenBLAS (scipy-openblas32)")
        return main_models(best, core)
    print(
        f"single thread unless said ({THREADS} threads: shapes of >= {THREADED_MIN_FLOPS / 1e6:g} MFLOP); "
        f"medians of {REPEATS}; GFLOP/s = 2mnk / time; built-in kernel: {KERNELS[best]}; "
        f"OpenBLAS core: {core or '-'} (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})"
    )
    head = (
        f"{'shape':<30} {'dt':<4} {'builtin us':>11} {'GF/s':>6} {'avx2 us':>8} {'openblas us':>12} {'GF/s':>6} "
        f"{'numpy us':>9} {'GF/s':>6} {'bi/ob':>6} {f'bi {THREADS}t us':>10} {'bi x':>5} "
        f"{f'ob {THREADS}t us':>10} {'ob x':>5} {f'bi/ob {THREADS}t':>9}"
    )
    print(head)
    print("-" * len(head))
    for dt, npdt in (("f32", np.float32), ("f64", np.float64)):
        for name, m, k, n, layout in SHAPES:
            a, b = operands(m, k, n, layout, npdt, rng)
            flops = 2.0 * m * n * k
            fn = pyggmlr_fn(a, b, layout, dt)
            t_bi = builtin_time(fn, best)
            t_avx2 = builtin_time(fn, 1) if best == 2 else None
            t_ob = t_bi_n = t_ob_n = None
            if have_openblas:
                t_ob = openblas_time(pyggmlr_fn(a, b, layout, dt))
            if flops >= THREADED_MIN_FLOPS and THREADS > 1:
                t_bi_n = builtin_time(fn, best, THREADS)
                if have_openblas:
                    t_ob_n = openblas_time(pyggmlr_fn(a, b, layout, dt), THREADS)
            t_np = median_seconds(numpy_fn(a, b, layout))
            # same numbers from both backends (loose: f32 sums in different orders)
            pg.ag_set_blas("builtin")
            ref = numpy_fn(a.astype(np.float64), b.astype(np.float64), layout)()
            got = pyggmlr_fn(a, b, layout, dt)().numpy()
            np.testing.assert_allclose(
                got, ref, rtol=1e-3 if dt == "f32" else 1e-10, atol=1e-3 if dt == "f32" else 1e-10
            )
            row = {
                "shape": name,
                "m": m,
                "k": k,
                "n": n,
                "layout": layout,
                "dtype": dt,
                "builtin_kernel": KERNELS[best],
                "builtin_s": t_bi,
                "builtin_avx2_s": t_avx2,
                "openblas_core": core,
                "openblas_s": t_ob,
                "numpy_s": t_np,
                "builtin_gflops": flops / t_bi / 1e9,
                "openblas_gflops": flops / t_ob / 1e9 if t_ob else None,
                "numpy_gflops": flops / t_np / 1e9,
                "ratio_builtin_openblas": t_bi / t_ob if t_ob else None,
                "threads": THREADS,
                "builtin_threads_s": t_bi_n,
                "openblas_threads_s": t_ob_n,
                "builtin_threads_speedup": t_bi / t_bi_n if t_bi_n else None,
                "openblas_threads_speedup": t_ob / t_ob_n if t_ob_n else None,
            }
            rows.append(row)
            ob = (
                f"{t_ob * 1e6:12.1f} {row['openblas_gflops']:6.1f}"
                if t_ob
                else f"{'-':>12} {'-':>6}"
            )
            ratio = f"{row['ratio_builtin_openblas']:6.2f}" if t_ob else f"{'-':>6}"
            avx2 = f"{t_avx2 * 1e6:8.1f}" if t_avx2 else f"{'-':>8}"
            thr = f"{t_bi_n * 1e6:10.1f} {t_bi / t_bi_n:5.2f}" if t_bi_n else f"{'-':>10} {'-':>5}"
            thr += (
                f" {t_ob_n * 1e6:10.1f} {t_ob / t_ob_n:5.2f} {t_bi_n / t_ob_n:9.2f}"
                if t_ob_n and t_bi_n
                else f" {'-':>10} {'-':>5} {'-':>9}"
            )
            print(
                f"{name:<30} {dt:<4} {t_bi * 1e6:11.1f} {row['builtin_gflops']:6.1f} {avx2} {ob} "
                f"{t_np * 1e6:9.1f} {row['numpy_gflops']:6.1f} {ratio} {thr}"
            )
    if have_openblas:
        pg.ag_set_blas("openblas")
    out = os.environ.get("BENCH_OUT", os.path.join(HERE, "results", "bench_gemm.json"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(
            {
                "threads": 1,
                "threads_columns": THREADS,
                "seconds_per_measurement": SECONDS,
                "repeats": REPEATS,
                "rows": rows,
            },
            f,
            indent=1,
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
