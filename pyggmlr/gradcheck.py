"""Finite-difference gradient check (ggmlR's ag_gradcheck, returning the details too)."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional

import numpy as np

from . import _core
from ._args import _is_bool, as_float, is_real, plain, r_sprintf, show
from ._core import NULL, ffi, lib
from .errors import ArgumentError
from .tape import ag_no_grad, backward, with_grad_tape
from .tensor import Tensor

__all__ = ["ag_gradcheck", "GradcheckResult"]


class GradcheckResult:
    """Outcome of ag_gradcheck: truthy iff every checked input passed.

    passed: bool; errors: dict input name -> max |analytical - numerical| (inf when the
    analytical gradient is missing); max_err: the largest of them; analytical / numerical:
    dict name -> numpy gradient (analytical is None when missing)."""

    def __init__(
        self,
        passed: bool,
        errors: Dict[str, float],
        analytical: Dict[str, Optional[np.ndarray]],
        numerical: Dict[str, np.ndarray],
        per_input: Dict[str, bool],
    ) -> None:
        self.passed = passed
        self.errors = errors
        self.analytical = analytical
        self.numerical = numerical
        self.per_input = per_input  # name -> bool
        self.max_err = max(errors.values()) if errors else 0.0

    def __bool__(self):
        return self.passed

    def __repr__(self):
        parts = ", ".join(f"{k}: {v:.2e}" for k, v in self.errors.items())
        return f"<gradcheck {'PASS' if self.passed else 'FAIL'} | max_err = {self.max_err:.2e} | {parts}>"


def _value(fn, inputs):
    with ag_no_grad():
        out = fn(inputs)
    if not isinstance(out, Tensor):
        raise ArgumentError(
            f"ag_gradcheck(): fn must return a 1x1 ag_tensor, got {type(out).__name__}"
        )
    return float(out.item())


def _defaults(checked, eps, atol, rtol):
    """The C core's dtype-aware defaults for what the caller left None (the least precise
    checked dtype decides: any f32 input gives the f32 defaults)."""
    codes = [lib.pg_tensor_dtype(t._handle()) for t in checked.values()]
    code = lib.PG_DTYPE_F32 if lib.PG_DTYPE_F32 in codes else lib.PG_DTYPE_F64
    d = ffi.new("double[3]")
    _core.check(lib.pg_gradcheck_defaults(code, d, d + 1, d + 2))
    vals = []
    for v, dv, nm in ((eps, d[0], "eps"), (atol, d[1], "atol"), (rtol, d[2], "rtol")):
        if v is None:
            vals.append(dv)
            continue
        if not is_real(v):  # np.True_ was 1.0; 10**400 raised OverflowError (now Inf)
            raise ArgumentError(  # R's words
                f"ag_gradcheck(): {nm} must be a single number or None, got {type(plain(v)).__name__}"
            )
        vals.append(as_float(v))
    return code, vals[0], vals[1], vals[2]


def ag_gradcheck(
    fn: Callable[[Any], Tensor],
    inputs: Any,
    eps: Optional[float] = None,
    atol: Optional[float] = None,
    verbose: bool = False,
    quiet: bool = False,
    rtol: Optional[float] = None,
) -> GradcheckResult:
    """Compare backward()'s gradients with central differences.

    fn(inputs) -> 1x1 loss tensor; inputs: dict name -> tensor. Every tensor input with
    requires_grad is checked element by element: (f(x+) - f(x-)) / (x+ - x-), x+- = x +- eps
    as the tensor stores them, writing the perturbed value into the tensor and writing the
    saved original back afterwards (inputs end bit-for-bit unchanged; their .grad is also left
    as it was). An element passes iff |a - n| <= atol + rtol * |n| + the rounding noise of the
    two loss values; a missing analytical gradient fails.

    eps, atol, rtol: None takes the defaults of the checked dtype (the C core's): f64 gets
    ggmlR's eps = 1e-5, atol = 1e-4, rtol = 0; f32 gets eps = 5e-3, atol = 1e-3, rtol = 1e-2,
    so f32 models check with the defaults too.

    Prints "[gradcheck] '<name>': max_err = ...  PASS|FAIL" per input and an overall line unless
    quiet (verbose adds both gradients). Returns a GradcheckResult (truthy iff all passed)."""
    if not callable(fn):  # fn first, as the signature (and R) order them
        raise ArgumentError(f"ag_gradcheck(): fn must be a function, got {type(fn).__name__}")
    if not isinstance(inputs, dict):
        raise ArgumentError(  # R's words (a dict is Python's named list)
            f"ag_gradcheck(): inputs must be a named list, got {type(inputs).__name__}"
        )
    for nm, flag in (
        ("verbose", verbose),
        ("quiet", quiet),
    ):  # R's `if (!quiet)`: a flag or a number
        if not (_is_bool(flag) or (is_real(flag) and not math.isnan(as_float(flag)))):
            raise ArgumentError(  # (an array raised numpy's "truth value is ambiguous": issue 29)
                f"ag_gradcheck(): {nm} must be True or False, got {show(flag, False)}"
            )
    checked = {k: v for k, v in inputs.items() if isinstance(v, Tensor) and v.requires_grad}
    code, eps, atol, rtol = _defaults(checked, eps, atol, rtol)
    saved_grad = {k: v.grad for k, v in checked.items()}

    with with_grad_tape():
        loss = fn(inputs)
    if not isinstance(loss, Tensor):
        raise ArgumentError(
            f"ag_gradcheck(): fn must return a 1x1 ag_tensor, got {type(loss).__name__}"
        )
    grads = backward(loss)
    analytical = {
        k: (np.array(grads[v], dtype=np.float64) if v in grads else None)
        for k, v in checked.items()
    }
    for k, v in checked.items():  # backward() added into .grad: put back what was there
        v.grad = saved_grad[k]

    errors: Dict[str, float] = {}
    numerical: Dict[str, np.ndarray] = {}
    per_input: Dict[str, bool] = {}
    originals = {name: t.data for name, t in checked.items()}  # exact copies in each tensor's dtype
    pts = ffi.new("double[2]")
    try:
        for name, t in checked.items():
            orig = originals[name]
            dt = lib.pg_tensor_dtype(t._handle("ag_gradcheck"))
            fp, fm, xp, xm = (np.zeros(orig.size) for _ in range(4))
            work = orig.copy(order="F")
            for j in range(orig.shape[1]):
                for i in range(orig.shape[0]):
                    k = i + j * orig.shape[0]
                    _core.check(lib.pg_gradcheck_points(dt, float(orig[i, j]), eps, pts, pts + 1))
                    xp[k], xm[k] = pts[0], pts[1]
                    work[i, j] = xp[k]
                    t.data = work
                    fp[k] = _value(fn, inputs)
                    work[i, j] = xm[k]
                    t.data = work
                    fm[k] = _value(fn, inputs)
                    work[i, j] = orig[i, j]
            t.data = orig
            a = analytical[name]
            if a is not None and a.shape != orig.shape:
                a = None
            num = np.zeros(orig.size)
            err = ffi.new("double *")
            a_flat = None if a is None else np.ascontiguousarray(a.ravel(order="F"))
            rc = lib.pg_gradcheck_judge(
                dt,
                NULL if a_flat is None else ffi.from_buffer("double[]", a_flat),
                *(ffi.from_buffer("double[]", v) for v in (fp, fm, xp, xm)),
                orig.size,
                atol,
                rtol,
                ffi.from_buffer("double[]", num),
                err,
            )
            if rc < 0:
                _core.raise_last(-rc)
            numerical[name] = num.reshape(orig.shape, order="F")
            errors[name], per_input[name] = err[0], rc == 1
    finally:
        for name, t in checked.items():  # write the saved values back, whatever happened
            t.data = originals[name]

    passed = all(per_input.values()) if per_input else True
    if not quiet:
        for name in checked:
            print(
                f"[gradcheck] '{name}': max_err = {r_sprintf(errors[name], '.2e')}  {'PASS' if per_input[name] else 'FAIL'}"
            )
            if verbose:
                print("  analytical:")
                a_name = analytical[name]
                print(np.round(a_name, 6) if a_name is not None else "  (none)")
                print("  numerical:")
                print(np.round(numerical[name], 6))
        print(f"[gradcheck] Overall: {'PASS' if passed else 'FAIL'}")
    return GradcheckResult(passed, errors, analytical, numerical, per_input)
