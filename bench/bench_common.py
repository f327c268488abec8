"""What the bench scripts share: the BLAS environment, timing, the CPU name, the results file.
No numpy at import: pin_blas_env() must run before numpy loads OpenBLAS."""

import json
import os
import pathlib
import platform
import time


def pin_blas_env(force_one_thread=False):
    """Drop OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (some machines set them to force an older
    kernel; BENCH_KEEP_OPENBLAS_ENV=1 keeps them) and run BLAS on one thread."""
    if not os.environ.get("BENCH_KEEP_OPENBLAS_ENV"):
        for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            os.environ.pop(v, None)
    if force_one_thread:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def cpu_name():
    """The CPU model (machines of one kind differ: AVX-512 on some, AVX2 only on others)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def call_times(fn, n):
    """Seconds each of n calls of fn took."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def median_seconds(fn, n):
    """The median of n timed calls of fn, in seconds."""
    import numpy as np

    return float(np.median(call_times(fn, n)))


def median_us(fn, n=5):
    return median_seconds(fn, n) * 1e6


def median_per_call(fn, rounds, reps):
    """Seconds a call of fn, the middle (upper median) of `rounds` rounds of `reps` calls."""
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        per.append((time.perf_counter() - t) / reps)
    per.sort()
    return per[len(per) // 2]


def medians_interleaved(fns, rounds, reps, calls=None):
    """Seconds a step of each fn (upper medians), measured round-robin: each round times `reps`
    steps of every fn in turn, so a noisy spell on a shared machine hits them all alike. calls:
    per fn, how many calls make those steps (default reps: a call is a step; 1: one call runs
    all `reps`, as an R loop called once through rpy2)."""
    per = [[] for _ in fns]
    calls = calls or [reps] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            for _ in range(calls[i]):
                fn()
            per[i].append((time.perf_counter() - t) / reps)
    return [sorted(p)[len(p) // 2] for p in per]


def rscript_lines(rscript, code, args, flags=()):
    """Run R code (written to a temporary .R file) with Rscript: `rscript *flags file *args`,
    checked, 600 s at most. Returns its stdout split into lines."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as f:
        f.write(code)
    try:
        return subprocess.run(
            [rscript, *flags, f.name, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout.split("\n")
    finally:
        os.unlink(f.name)


def cell(v, width, fmt=".1f"):
    """v right-aligned in width, or "-" where there is no value (a peer that did not run)."""
    return f"{v:{width}{fmt}}" if v else f"{'-':>{width}s}"


def write_results(name, obj, indent=1):
    """bench/results/<name>.json, printed as written."""
    out = pathlib.Path(__file__).resolve().parent / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(obj, indent=indent) + "\n")
    print(f"wrote {out}")
    return out
