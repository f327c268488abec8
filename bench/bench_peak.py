"""The arithmetic floor of a training step on this CPU: how fast one core can multiply-add, and so
the least time each bench model's GEMMs could take, whatever the kernel.

A register-only loop of independent fused multiply-adds (GCC vector extensions at the CPU's own
vector width, 12 accumulators; compiled once into a temporary folder through cffi, so it needs
gcc, as building the package does) gives one core's peak rate in f32 and f64, in GFLOP/s. The
models' GEMMs, the same products bench_train.py's and bench_transformer.py's "GEMMs alone"
columns time, give each step's floating-point operations; at the peak rate they take the
step's floor. When those scripts' results are in bench/results (run them first, on this
machine), each floor is also written as a ratio to that run's PyTorch step and to pyggmlr's
compiled step: no kernel brings a step's ratio to PyTorch below its floor's.

Run: python bench/bench_peak.py. Numbers are printed, never asserted."""

import json
import os
import pathlib
import sys
import tempfile
import time

from bench_common import cpu_name, write_results

_SRC = r"""
typedef float vs __attribute__((vector_size(64)));
typedef double vd __attribute__((vector_size(64)));
#define LOOP(T, S, NAME)                                                                           \
    double NAME(long n, double seed)                                                               \
    {                                                                                              \
        T a[12], b = (T){} + (S)(1.0 + 1e-9 * seed), c = (T){} + (S)(1e-7 * seed);                 \
        for (int i = 0; i < 12; i++) a[i] = (T){} + (S)i;                                          \
        for (long k = 0; k < n; k++) {                                                             \
            _Pragma("GCC unroll 12") for (int i = 0; i < 12; i++) a[i] = a[i] * b + c;             \
        }                                                                                          \
        double s = 0;                                                                              \
        for (int i = 0; i < 12; i++) s += a[i][0];                                                 \
        return s;                                                                                  \
    }
LOOP(vs, float, fma_f32)
LOOP(vd, double, fma_f64)
"""
_LANES = {"f32": 16, "f64": 8}  # per 64-byte vector


def _build():
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("double fma_f32(long n, double seed); double fma_f64(long n, double seed);")
    flags = ["-O3", "-march=native", "-ffp-contract=fast"]
    ffi.set_source("_bench_peak", _SRC, extra_compile_args=flags)
    tmp = tempfile.mkdtemp(prefix="bench_peak_")
    lib_path = ffi.compile(tmpdir=tmp, verbose=False)
    sys.path.insert(0, os.path.dirname(lib_path))
    import _bench_peak

    return _bench_peak.lib


def peak_gflops(fn, lanes, n=20_000_000, rounds=7):
    """The best of `rounds` timings of n iterations of 12 vector multiply-adds (2 flops a lane)."""
    best = float("inf")
    for r in range(rounds):
        t = time.perf_counter()
        fn(n, float(r + 1))
        best = min(best, time.perf_counter() - t)
    return n * 12 * lanes * 2 / best / 1e9


def mlp_flops(sizes, batch):
    """bench_train.gemm_floor's products: forward, dW per layer, dX but for the first layer."""
    fl = 0
    for k in range(len(sizes) - 1):
        mac = sizes[k + 1] * sizes[k] * batch
        fl += 2 * mac * (3 if k else 2)
    return fl


def transformer_flops(V, D, H, T):
    """bench_transformer.gemm_floor's products, each with its two backward products."""
    dh = D // H
    shapes = [(D, D, T)] * 4 + [(T, dh, T)] * H + [(dh, T, T)] * H
    shapes += [(4 * D, D, T), (D, 4 * D, T), (V, D, T)]
    return sum(2 * 3 * m * k * n for m, k, n in shapes)


def _results(name):
    p = pathlib.Path(__file__).resolve().parent / "results" / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def main():
    lib = _build()
    peak = {dt: peak_gflops(getattr(lib, f"fma_{dt}"), _LANES[dt]) for dt in _LANES}
    print(
        f"CPU: {cpu_name()}; one core's peak multiply-add rate: f32 {peak['f32']:.1f}, "
        f"f64 {peak['f64']:.1f} GFLOP/s"
    )
    train, tfm = _results("bench_train"), _results("bench_transformer")
    rows = []
    for model, batch in (("4-64-32-3", 32), ("784-256-128-10", 64), ("784-256-128-10", 256)):
        us = None
        for c in (train or {}).get("cases", []):
            if c["model"] == model and c["batch"] == batch:
                us = c["median_us"]
        sizes = [int(s) for s in model.split("-")]
        rows.append(
            (
                f"MLP {model} b{batch}",
                mlp_flops(sizes, batch),
                us and us.get("torch"),
                us and us.get("compiled"),
            )
        )
    for size, dims in (("large", (1000, 256, 4, 128)), ("small", (64, 32, 4, 16))):
        ms = (tfm or {}).get("sizes", {}).get(size)
        rows.append(
            (
                f"transformer {size}",
                transformer_flops(*dims),
                ms and ms.get("torch_ms") * 1e3,
                ms and ms.get("compiled_ms") * 1e3,
            )
        )
    print(
        f"{'step (f32)':<30}{'MFLOP':>9}{'floor us':>10}{'torch us':>10}{'floor/torch':>12}"
        f"{'compiled us':>12}{'compiled/floor':>15}"
    )
    out = []
    for name, fl, torch_us, comp_us in rows:
        floor = fl / peak["f32"] / 1e3
        ft = f"{floor / torch_us:.3f}" if torch_us else "-"
        cf = f"{comp_us / floor:.2f}" if comp_us else "-"
        print(
            f"{name:<30}{fl / 1e6:>9.1f}{floor:>10.1f}{torch_us or float('nan'):>10.1f}"
            f"{ft:>12}{comp_us or float('nan'):>12.1f}{cf:>15}"
        )
        out.append(
            {
                "step": name,
                "flops": fl,
                "floor_us": floor,
                "torch_us": torch_us,
                "compiled_us": comp_us,
            }
        )
    print("(torch / compiled: the last bench_train.py / bench_transformer.py results on file)")
    write_results("bench_peak", {"cpu": cpu_name(), "peak_gflops": peak, "steps": out})


if __name__ == "__main__":
    main()
