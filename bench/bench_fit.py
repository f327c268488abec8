"""ag_fit end to end: R's loop against Python's, in this process (R embedded through rpy2, on
Python's GEMM: pyggmlr.r.start() hands R the same OpenBLAS or the built-in kernel).

Models (f32, one thread, ReLU MLPs, AdamW lr 1e-3, cross-entropy on 0-based class ids):
4-64-32-3 (n = 2048, batch 32: 64 steps an epoch) and 784-256-128-10 (n = 1024, batch 64: 16
steps), EPOCHS epochs, silent, shuffled, seeded, static (compiled step replays) and eager
(tape). The data come from the core's generator (rnorm / sample_int, seed 1: the numbers R's
set.seed(1) would give). Each round times one whole ag_fit in Python, then the same in R (the
data already in R, the model built and the garbage collected before the clock starts; the clock
is this thread's CPU time, see CLOCK); medians over BENCH_ROUNDS rounds and the ratio
R / Python are printed and written to bench/results/bench_fit.json. Before timing, one run of
each is compared: both histories must be equal bit for bit. The goal: R within 1.1x of Python.
Run: python bench/bench_fit.py   (needs R, rpy2 and the R package; R_LIBS for a local library)
     BENCH_R=rscript python bench/bench_fit.py   (R in Rscript processes instead of embedded)
"""

import os

from bench_common import pin_blas_env

pin_blas_env()  # before numpy and pyggmlr load OpenBLAS

import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from bench_common import cpu_name, rscript_lines, write_results  # noqa: E402

import pyggmlr as pg  # noqa: E402

CASES = [((4, 64, 32, 3), 2048, 32), ((784, 256, 128, 10), 1024, 64)]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 7))
EPOCHS = int(os.environ.get("BENCH_EPOCHS", 3))
# CPU time of this thread (R runs embedded in it): the machines here are shared, and wall time
# mostly measured the neighbours; BENCH_CLOCK=wall for time.perf_counter
RSCRIPT = os.environ.get("BENCH_R") == "rscript"
CLOCK = time.perf_counter if os.environ.get("BENCH_CLOCK") == "wall" else time.thread_time

# R's side lives in one environment of globalenv (.bench_fit): the data are handed over once, the
# model is built and the garbage collected outside the timed call, which runs only ag_fit
_R_SETUP = r"""
ag_set_threads(1L)
ag_dtype("f32")
e <- new.env(parent = globalenv())
e$x <- x
e$y <- as.integer(y)
e$make <- function() {
  ggml_set_seed(3L)
  L <- length(sizes) - 1L
  do.call(ag_sequential, lapply(seq_len(L), function(i) ag_linear(sizes[i], sizes[i + 1L], if (i < L) "relu" else NULL)))
}
assign(".bench_fit", e, envir = globalenv())
invisible(NULL)
"""
_R_PREP = "e <- .bench_fit; e$m <- e$make(); invisible(gc(FALSE))"
_R_FIT = (
    "e <- .bench_fit; e$h <- ag_fit(e$m, e$x, e$y, nepoch = epochs, batch_size = batch, lr = 1e-3, seed = 1L, "
    "silent = TRUE, static = static); NULL"
)  # the history is fetched outside the clock
_R_HIST = "list(loss = .bench_fit$h$loss, accuracy = .bench_fit$h$accuracy)"
_R_NOOP = "e <- .bench_fit; e$h0 <- NULL; NULL"  # the bridge's own cost of such a call (parse, eval, return)


def _data(sizes, n):
    g = pg.random.Generator(1)
    x = np.asfortranarray(np.asarray(g.rnorm(sizes[0] * n)).reshape(sizes[0], n, order="F"))
    y = np.asarray(g.sample_int(sizes[-1], n, replace=True)) - 1  # 0-based class ids
    return x, y


def _py_make(sizes):
    pg.ggml_set_seed(3)
    L = len(sizes) - 1
    return pg.ag_sequential(
        *[pg.ag_linear(sizes[i], sizes[i + 1], "relu" if i < L - 1 else None) for i in range(L)]
    )


def _py_fit(sizes, x, y, batch, static):
    m = _py_make(sizes)
    gc.collect()
    t0 = CLOCK()
    h = pg.ag_fit(
        m, x, y, nepoch=EPOCHS, batch_size=batch, lr=1e-3, seed=1, silent=True, static=static
    )
    return CLOCK() - t0, h


def _r_fit(r, batch, static):
    r.run(_R_PREP)
    t0 = CLOCK()
    r.run(_R_FIT, epochs=EPOCHS, batch=batch, static=static)
    return CLOCK() - t0, r.run(_R_HIST)


# BENCH_R=rscript: R in a process of its own (no rpy2 in its interpreter loop), the same data
# (R's set.seed(1) draws are the core generator's), CPU time of INNER fits on prebuilt models per round
_RSCRIPT = r"""
suppressPackageStartupMessages(library(pyggmlr))
a <- commandArgs(TRUE)
sizes <- as.numeric(strsplit(a[1], "-")[[1]]); n <- as.integer(a[2]); batch <- as.integer(a[3])
static <- as.logical(a[4]); epochs <- as.integer(a[5]); rounds <- as.integer(a[6]); inner <- as.integer(a[7])
ag_set_threads(1L); ag_dtype("f32")
invisible(if (isTRUE(nzchar(a[8]))) ag_set_blas("openblas", a[8]) else ag_set_blas("builtin"))
set.seed(1); x <- matrix(rnorm(sizes[1] * n), sizes[1], n); y <- sample.int(sizes[length(sizes)], n, replace = TRUE) - 1L
make <- function() {
  ggml_set_seed(3L); L <- length(sizes) - 1L
  do.call(ag_sequential, lapply(seq_len(L), function(i) ag_linear(sizes[i], sizes[i + 1L], if (i < L) "relu" else NULL)))
}
fit <- function(m) ag_fit(m, x, y, nepoch = epochs, batch_size = batch, lr = 1e-3, seed = 1L, silent = TRUE, static = static)
h <- fit(make())
cpu <- function() sum(proc.time()[c("user.self", "sys.self")])
for (r in seq_len(rounds)) {
  ms <- lapply(seq_len(inner), function(i) make()); invisible(gc(FALSE))
  t0 <- cpu(); for (m in ms) fit(m); cat(sprintf("%.6f\n", (cpu() - t0) / inner))
}
cat("H", sprintf("%a", c(h$loss, h$accuracy)), "\n")
"""


def _rscript_times(sizes, n, batch, static, h):
    import shutil

    from pyggmlr import _core

    rs = shutil.which("Rscript")
    if rs is None:
        raise SystemExit("bench_fit: BENCH_R=rscript needs Rscript")
    inner = int(os.environ.get("BENCH_INNER", 10))
    blas = _core.blas_library_path() if pg.ag_blas_name() != "builtin" else ""
    args = ["-".join(map(str, sizes)), str(n), str(batch), "TRUE" if static else "FALSE"]
    args += [str(EPOCHS), str(ROUNDS), str(inner), blas or ""]
    out = rscript_lines(rs, _RSCRIPT, args)
    hist = [
        float.fromhex(v) for v in next(line for line in out if line.startswith("H ")).split()[1:]
    ]
    if hist != list(h.loss) + list(h.accuracy):
        raise SystemExit(
            f"bench_fit: R's and Python's histories differ: {hist} vs {h.loss + h.accuracy}"
        )
    return [float(v) for v in out if v and not v.startswith("H")]


def _bridge_cost(r, prep=False):
    """Median seconds of an rpy2 call like the timed one but running nothing (included in R's
    times, printed so that it can be taken off). prep: each call after _R_PREP, as a timed call
    runs: R's full gc there leaves the call cold (about 2.5x the back-to-back time)."""
    ts = []
    for _ in range(50):
        if prep:
            r.run(_R_PREP)
        t0 = CLOCK()
        r.run(_R_NOOP, epochs=EPOCHS, batch=32, static=True)
        ts.append(CLOCK() - t0)
    return float(np.median(ts))


def main():
    from pyggmlr import r

    if not r.available():
        raise SystemExit(f"bench_fit: R is not available: {r.unavailable_reason()}")
    pg.ag_set_threads(1)
    pg.ag_dtype("f32")
    r.start()
    print(
        f"pyggmlr {pg.__version__}: ag_fit, {EPOCHS} epochs, median of {ROUNDS} ({CLOCK.__name__}), one thread, "
        f"GEMM {pg.ag_blas_name()} (R: {r.call('ag_blas_name')}), CPU: {cpu_name()}"
    )
    print(
        f"{'model':>16s} {'mode':>7s} {'steps':>6s} {'Python ms':>10s} {'R ms':>9s} {'R/Python':>9s}"
        f" {'Py µs/step':>11s} {'R µs/step':>10s}"
    )
    results = []
    bridge = None
    for sizes, n, batch in CASES:
        x, y = _data(sizes, n)
        r.run(_R_SETUP, sizes=np.asarray(sizes, dtype=np.float64), x=x, y=y.astype(np.float64))
        if bridge is None:
            bridge, bridge_cold = _bridge_cost(r), _bridge_cost(r, prep=True)
        for static in (True, False):
            _, h = _py_fit(sizes, x, y, batch, static)  # warm up, and the bit-for-bit check
            _, rres = _r_fit(r, batch, static)
            if list(np.atleast_1d(rres["loss"])) != list(h.loss) or list(
                np.atleast_1d(rres["accuracy"])
            ) != list(h.accuracy):
                raise SystemExit(
                    f"bench_fit: R's and Python's histories differ: {rres['loss']} vs {h.loss}"
                )
            tp, tr = [], []
            if RSCRIPT:
                tr = _rscript_times(sizes, n, batch, static, h)
                tp = [_py_fit(sizes, x, y, batch, static)[0] for _ in range(ROUNDS)]
            for k in range(
                0 if RSCRIPT else ROUNDS
            ):  # interleaved, the order alternating, so drift and caches hit both
                if k % 2:
                    tr.append(_r_fit(r, batch, static)[0])
                tp.append(_py_fit(sizes, x, y, batch, static)[0])
                if not k % 2:
                    tr.append(_r_fit(r, batch, static)[0])
            mp, mr = float(np.median(tp)), float(np.median(tr))
            steps = EPOCHS * (n // batch)
            row = {
                "model": "-".join(map(str, sizes)),
                "n": n,
                "batch": batch,
                "static": static,
                "epochs": EPOCHS,
                "steps": steps,
                "median_s": {"python": mp, "r": mr},
                "ratio_r_over_python": mr / mp,
                # the cold call taken off (Rscript's times hold no call)
                "ratio_r_net_over_python": None if RSCRIPT else (mr - bridge_cold) / mp,
                "times_s": {"python": tp, "r": tr},
            }
            results.append(row)
            print(
                f"{row['model']:>16s} {'static' if static else 'eager':>7s} {steps:6d} {mp * 1e3:10.1f} "
                f"{mr * 1e3:9.1f} {mr / mp:9.2f} {mp / steps * 1e6:11.1f} {mr / steps * 1e6:10.1f}"
            )
    if RSCRIPT:
        print(
            "R ran in Rscript processes of its own (BENCH_R=rscript; CPU time, 1 ms clock over BENCH_INNER fits)"
        )
    else:
        print(
            f"R's times include the rpy2 call itself: {bridge * 1e3:.2f} ms a call (a call running nothing), "
            f"{bridge_cold * 1e3:.2f} ms after the model build and gc as timed; R/Python without it: "
            + ", ".join(
                f"{row['model']} {'static' if row['static'] else 'eager'} {row['ratio_r_net_over_python']:.2f}"
                for row in results
            )
        )
    out = {
        "benchmark": "bench_fit",
        "cpu": cpu_name(),
        "clock": CLOCK.__name__,
        "bridge_call_s": bridge,
        "bridge_call_after_prep_s": bridge_cold,
        "blas": pg.ag_blas_name(),
        "rounds": ROUNDS,
        "threads": 1,
        "results": results,
    }
    write_results("bench_fit", out, indent=2)


if __name__ == "__main__":
    main()
