"""Random draws per second: the core's copy of R's generator (pyggmlr.random) against numpy's
default Generator (PCG64, in this process) and R's own runif / rnorm / sample (Rscript, one
process, timed inside R), medians over BENCH_ROUNDS rounds of N draws.

The core and R must give the same numbers (checked first when R is there); numpy's are other
numbers, shown only as the speed a Python user is used to. The goal: no slower than R.
Writes bench/results/bench_rng.json. Run: python bench/bench_rng.py
"""

import os
import shutil

import numpy as np
from bench_common import cell, cpu_name, median_seconds, rscript_lines, write_results

import pyggmlr as pg

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 9))
N = int(os.environ.get("BENCH_N", 1_000_000))

_R = r"""
n <- as.integer(commandArgs(TRUE)[1]); rounds <- as.integer(commandArgs(TRUE)[2])
med <- function(f) median(replicate(rounds, { t0 <- proc.time()[["elapsed"]]; f(); proc.time()[["elapsed"]] - t0 }))
set.seed(1)
cat(sprintf("%.9f %.9f %.9f\n", med(function() runif(n)), med(function() rnorm(n)), med(function() sample.int(n))))
set.seed(7); u <- runif(5); z <- rnorm(5); s <- sample.int(100, 5)
cat(sprintf("%a", c(u, z, s)), "\n")
"""


def _median(fn):
    return median_seconds(fn, ROUNDS)


def _r_times():
    rs = shutil.which("Rscript")
    if rs is None:
        return None, "R is not installed (Rscript not found)"
    out = rscript_lines(rs, _R, [str(N), str(ROUNDS)], flags=["--vanilla"])
    t = [float(v) for v in out[0].split()]
    ref = [float.fromhex(v) for v in out[1].split()]
    g = pg.random.Generator(7)
    mine = list(g.runif(5)) + list(g.rnorm(5)) + [float(v) for v in g.sample_int(100, 5)]
    if mine != ref:
        raise SystemExit("bench_rng: the core's draws differ from R's: " + repr((mine, ref)))
    return {"runif": t[0], "rnorm": t[1], "sample.int": t[2]}, None


def main():
    g = pg.random.Generator(1)
    npg = np.random.default_rng(1)
    core = {
        "runif": _median(lambda: g.runif(N)),
        "rnorm": _median(lambda: g.rnorm(N)),
        "sample.int": _median(lambda: g.sample_int(N)),
    }
    nump = {
        "runif": _median(lambda: npg.random(N)),
        "rnorm": _median(lambda: npg.standard_normal(N)),
        "sample.int": _median(lambda: npg.permutation(N)),
    }
    rt, why = _r_times()
    print(f"pyggmlr {pg.__version__}: {N:,} draws, median of {ROUNDS}, CPU: {cpu_name()}")
    if why:
        print(f"R column: skipped ({why})")
    print(
        f"{'draw':12s}{'core Mdraw/s':>14s}{'numpy':>10s}{'R':>10s}{'core/numpy time':>17s}{'core/R time':>13s}"
    )
    res = {
        "n": N,
        "rounds": ROUNDS,
        "cpu": cpu_name(),
        "seconds": {"core": core, "numpy": nump, "R": rt},
    }
    for k in core:
        r = cell(rt and N / rt[k] / 1e6, 10)
        rr = cell(rt and core[k] / rt[k], 13, ".2f")
        print(
            f"{k:12s}{N / core[k] / 1e6:14.1f}{N / nump[k] / 1e6:10.1f}{r}{core[k] / nump[k]:17.2f}{rr}"
        )
    write_results("bench_rng", res)


if __name__ == "__main__":
    main()
