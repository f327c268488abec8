"""ag_set_threads(n) against one thread on whole training steps (issue 32): the compiled
transformer block of bench_transformer.py (large: V1000 D256 4 heads T128) and the 784-256-128-10
MLP of bench_train.py at batch 256, f32, Adam. Rounds alternate 1 and n threads so that load
drifts hit both alike; medians of BENCH_ROUNDS rounds. BENCH_THREADS sets n (default 2);
BENCH_HOG=1 runs a busy loop in another process meanwhile (one core taken: the pool should fall
back to one thread, never run slower than it); BENCH_ADAPTIVE=0 turns that fall-back off (the
split's own speed under load). Run: python bench/bench_threads.py. Numbers are printed, never
asserted."""

import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from bench_common import cpu_name  # noqa: E402
from bench_train import compiled_step  # noqa: E402
from bench_transformer import pyggmlr_steps  # noqa: E402

import pyggmlr as pg  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 9))
THREADS = int(os.environ.get("BENCH_THREADS", 2))


def main():
    steps = {
        "transformer (compiled)": (pyggmlr_steps(1000, 256, 4, 128)[1], 10),
        "mlp b256 (compiled)": (compiled_step((784, 256, 128, 10), 256, "f32"), 40),
    }
    if os.environ.get("BENCH_ADAPTIVE") == "0":
        from pyggmlr._core import lib

        lib.pg_gemm_threads_adaptive(0)
    hog = None
    if os.environ.get("BENCH_HOG"):
        hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        times = {k: {1: [], THREADS: []} for k in steps}
        for f, _ in steps.values():
            f()
        for _ in range(ROUNDS):
            for th in (1, THREADS):
                pg.ag_set_threads(th)
                for k, (f, n) in steps.items():
                    f()
                    t0 = time.perf_counter()
                    for _ in range(n):
                        f()
                    times[k][th].append((time.perf_counter() - t0) / n * 1e3)
    finally:
        pg.ag_set_threads(1)
        if hog:
            hog.kill()
    print(
        f"pyggmlr {pg.__version__}, CPU: {cpu_name()}, {os.cpu_count()} CPUs, f32, medians of "
        f"{ROUNDS}{', a busy loop beside' if hog else ''}"
        f"{', not adaptive' if os.environ.get('BENCH_ADAPTIVE') == '0' else ''}"
    )
    print(f"{'step':<26}{'1 thread ms':>12}{f'{THREADS} threads':>12}{'speed-up':>10}")
    for k, t in times.items():
        a, b = float(np.median(t[1])), float(np.median(t[THREADS]))
        print(f"{k:<26}{a:>12.2f}{b:>12.2f}{a / b:>10.2f}")


if __name__ == "__main__":
    main()
