"""Cross-language parity: the same work in Python and in R (through rpy2) must give the same
numbers, bit for bit. The harness lives with the tests (it is not part of the wheel); pytest runs
it as tests/parity/test_parity.py, ``python -m pyggmlr parity`` prints its table from a checkout.

Both languages run one C core (the cffi module and the R package's .so are two compiled
copies of ``native/``), with the same GEMM (:func:`pyggmlr.r.sync_blas` hands R Python's
OpenBLAS, or both use the built-in kernel). Most cases (:class:`Case`, cases_api.py and
friends) are one Python function ``fn(P, d, steps)`` written once against a small *side* object
``P``: ``P.ag_matmul(...)``, ``P.optimizer_adam(...)``, ``layer.forward(x)`` ... resolve to the
Python API on the Python side and to the R package's exported functions and objects (called
through rpy2) on the R side. Inputs, initial weights and hyper-parameters come from Python
(drawn from the core's R-compatible stream, seeded by the case name) and go to both sides; the
``seed:*`` cases instead seed both languages alone and let each draw its own weights, dropout
masks and shuffles. A case returns one record per step (losses, outputs, gradients, weights,
optimizer/scheduler values); records are compared value by value: max abs difference and max
ULP difference in the tensor's dtype (0 is required).

The other cases (:class:`ScriptCase`) are two programs: a Python function and an R function of
one of the .R files here (helpers.R, models.R, compile.R, seed.R, state.R, checkpoint.R,
optim.R, capture.R), sourced once into one R environment and called with the inputs.

Optional third column: when R has the reference package ``ggmlR`` installed, every Case also
runs through ggmlR's ag_* API in f64 and its max abs / rel difference from pyggmlr is reported
(informational; ggmlR 0.8.2's known differences, spec section 11, are listed under the table).

``python -m pyggmlr parity [--dtype f64|f32] [--case SUBSTR] [--blas openblas|builtin]`` (or
``main()``) prints the table and exits 1 on any mismatch (2 when R/rpy2/the R package is
unavailable).
"""

from __future__ import annotations

import argparse
import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

# the cases register themselves in CASES when imported: this order is the table's
# isort: off
from . import cases_api, cases_models, cases_io, cases_compile  # noqa: F401
from . import cases_086, cases_seed, cases_state, cases_loss, cases_attention  # noqa: F401
from . import cases_ckpt, cases_opt, cases_capture, cases_robj, cases_callbacks  # noqa: F401
from . import cases_errors  # noqa: F401
from . import cases_progress  # noqa: F401
from . import cases_weights  # noqa: F401
from . import cases_data  # noqa: F401
from . import cases_predict  # noqa: F401
from . import cases_scaling  # noqa: F401
from . import cases_pooling  # noqa: F401
from . import cases_metrics  # noqa: F401
from . import cases_recurrent  # noqa: F401
from . import cases_conv  # noqa: F401
from . import cases_resize  # noqa: F401
from . import cases_summary  # noqa: F401

# isort: on
from .cases_models import py_model as _py_model
from .core import (
    CASES,
    DTYPES,
    Case,
    PySide,
    Record,
    RSide,
    ScriptCase,
    _Draws,
    _seed,
    check_case,
    compare,
    max_ulp,
    run_case,
)

__all__ = [
    "CASES",
    "Case",
    "ScriptCase",
    "PySide",
    "RSide",
    "Record",
    "run_case",
    "check_case",
    "compare",
    "max_ulp",
    "main",
    "NOT_COVERED",
    "KNOWN_GGMLR_DIFFERENCES",
    "_Draws",
    "_seed",
    "_py_model",
]

# rows printed for features the R package does not have (listed, not hidden); none at present:
# ag_fit, dp_train, model files and ag_gradcheck have cases of their own
NOT_COVERED: List[Tuple[str, str]] = []

KNOWN_GGMLR_DIFFERENCES = [
    "s11.1  ggmlR's $grad is scaled by the number of consumers (the returned map is correct)",
    "s11.4  ggmlR's ag_add/ag_sub broadcast only B; ag_mul reduces only size-1 dims",
    "s11.5  ggmlR reads any integer target of ag_softmax_cross_entropy_loss as class ids",
    "s11.7  ggmlR's batch-norm input gradient ignores the batch statistics (pyggmlr: exact)",
    "s11.14 ggmlR computes in R doubles whatever the dtype (compare with pyggmlr f64 only)",
    "layers: ggmlR's attention uses selector matrices (same values, other rounding order)",
]


def _ggmlr_column(case, dtype, py, gside):
    if gside is None or dtype != "f64" or not case.ggmlr or isinstance(case, ScriptCase):
        return ""
    try:
        a = run_case(case, dtype, py)
        b = run_case(case, dtype, gside)
    except Exception as e:
        return f"error: {type(e).__name__}: {str(e)[:40]}"
    worst_abs, worst_rel = 0.0, 0.0
    for ra, rb in zip(a, b):
        for k in ra:
            if k not in rb or rb[k] is None or np.shape(ra[k]) != np.shape(rb[k]):
                return f"differs: {k}"
            x, y = np.asarray(ra[k], float), np.asarray(rb[k], float)
            d = np.abs(x - y)
            worst_abs = max(worst_abs, float(d.max()) if d.size else 0.0)
            rel = d / np.maximum(np.abs(x), 1e-12)
            worst_rel = max(worst_rel, float(rel.max()) if d.size else 0.0)
    return f"abs {worst_abs:.2e} rel {worst_rel:.2e}"


def _fmt(v):
    if v == math.inf:
        return "inf"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _args(argv):
    ap = argparse.ArgumentParser(
        prog="python -m pyggmlr parity",
        description="Run every parity case in Python and in R (rpy2) and compare them.",
    )
    ap.add_argument(
        "--dtype", choices=DTYPES, action="append", help="dtype(s) to run (default: both)"
    )
    ap.add_argument(
        "--case", action="append", default=[], help="only cases whose name contains this"
    )
    ap.add_argument(
        "--blas",
        choices=("openblas", "builtin"),
        default=None,
        help="GEMM both languages use (default: Python's current one)",
    )
    ap.add_argument(
        "--verbose", "-v", action="store_true", help="print the first differing value of each case"
    )
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command line of ``python -m pyggmlr parity``: run every case (or those matching --case)
    in Python and in R, print the comparison table and return 0 when all agree bit for bit,
    1 on any mismatch, 2 when R, rpy2 or the R package is missing."""
    args = _args(argv)
    from pyggmlr import r

    why = r.unavailable_reason()
    if why:
        print(f"parity: cannot run: {why}")
        return 2
    try:
        r.start()
    except RuntimeError as e:
        print(f"parity: cannot run: {e}")
        return 2
    import pyggmlr as pg

    if args.blas:
        pg.ag_set_blas(args.blas)
    r.sync_blas()
    py, rside = PySide(), RSide()
    gside = RSide("ggmlR") if r.package_installed("ggmlR") else None
    dtypes = args.dtype or list(DTYPES)
    cases = [c for c in CASES if not args.case or any(s in c.name for s in args.case)]
    print(
        f"pyggmlr parity: Python vs R (rpy2), GEMM: Python {pg.ag_blas_name()} / "
        f"R {r.call('ag_blas_name')}"
    )
    hdr = f"{'case':<52} {'dtype':<5} {'steps':>5} {'max abs diff':>12} {'max ULP':>8}  status"
    if gside is not None:
        hdr += "   ggmlR (f64)"
    print(hdr)
    print("-" * len(hdr))
    bad = 0
    for c in cases:
        for dt in dtypes:
            res = check_case(c, dt, py, rside)
            line = (
                f"{c.name:<52} {dt:<5} {c.steps:>5} {_fmt(res['max_abs']):>12} "
                f"{_fmt(res['max_ulp']):>8}  {res['status']}"
            )
            if gside is not None:
                line += "   " + _ggmlr_column(c, dt, py, gside)
            print(line)
            if res["status"] != "ok":
                bad += 1
                print(f"    {res['detail']}")
            elif args.verbose and res["detail"]:
                print(f"    {res['detail']}")
    for name, why in NOT_COVERED:
        print(f"{name:<52} {'-':<5} {'-':>5} {'-':>12} {'-':>8}  {why}")
    if gside is None:
        print("\nggmlR column: not shown (the R package ggmlR is not installed)")
    else:
        print("\nggmlR column (informational): known ggmlR 0.8.2 differences (spec section 11):")
        for line in KNOWN_GGMLR_DIFFERENCES:
            print(f"  {line}")
    n = len(cases) * len(dtypes)
    tail = f", {bad} MISMATCH" if bad else " (max ULP 0 everywhere)"
    print(f"\n{n - bad}/{n} case runs identical" + tail)
    return 1 if bad else 0
