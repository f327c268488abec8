"""Compiled (ag_compile) versus eager versus PyTorch: the 4-64-32-3 batch-32 Adam step, in one
process, and each one's overhead above the GEMM floor (the step's six GEMMs alone, numpy BLAS).

  eager     pyggmlr's ggmlR-style loop (with_grad_tape, backward, opt.step, zero_grad), f32
  compiled  the same step recorded once by ag_compile and replayed in C (one call per step)
  torch     PyTorch's idiomatic loop (if importable), 1 thread
  gemm      the arithmetic floor

Run: python bench/bench_compile.py  (BENCH_ROUNDS, default 15 rounds of 2000 steps; medians).
Numbers are printed, never asserted."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train as bt  # noqa: E402  (shares the model, the data and the peers)
from bench_common import median_per_call  # noqa: E402

import pyggmlr as pg  # noqa: E402

SIZES, BATCH = (4, 64, 32, 3), 32
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))
STEPS = 2000


def per_step_us(fn):
    return median_per_call(fn, ROUNDS, STEPS) * 1e6


def main():
    pg.ag_set_threads(1)
    peers = {
        "eager": bt.pyggmlr_step(SIZES, BATCH, "f32"),
        "compiled": bt.compiled_step(SIZES, BATCH, "f32"),
        "gemm": bt.gemm_floor(SIZES, BATCH),
    }
    try:
        peers["torch"] = bt.torch_step(SIZES, BATCH)
    except ImportError:
        pass
    med = {k: per_step_us(f) for k, f in peers.items()}
    floor = med["gemm"]
    print(
        f"pyggmlr {pg.__version__}, GEMM: {pg.ag_blas_name()}; model {'-'.join(map(str, SIZES))}, batch {BATCH}, Adam, f32"
    )
    print(f"{'step':<10}{'us/step':>10}{'above GEMM floor':>18}{'vs compiled':>13}")
    for k in ("compiled", "eager", "torch", "gemm"):
        if k in med:
            print(
                f"{k:<10}{med[k]:>10.1f}{med[k] - floor:>18.1f}{med[k] / med['compiled']:>12.2f}x"
            )


if __name__ == "__main__":
    main()
