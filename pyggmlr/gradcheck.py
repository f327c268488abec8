"""Finite-difference gradient check (ggmlR's ag_gradcheck, returning the details too)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import math

import numpy as np

from .errors import ArgumentError
from .tape import ag_no_grad, backward, with_grad_tape
from .tensor import Tensor

__all__ = ["ag_gradcheck", "GradcheckResult"]


class GradcheckResult:
    """Outcome of ag_gradcheck: truthy iff every checked input passed.

    passed: bool; errors: dict input name -> max |analytical - numerical| (inf when the
    analytical gradient is missing); max_err: the largest of them; analytical / numerical:
    dict name -> numpy gradient (analytical is None when missing)."""

    def __init__(self, passed: bool, errors: Dict[str, float], analytical: Dict[str, Optional[np.ndarray]],
                 numerical: Dict[str, np.ndarray], per_input: Dict[str, bool]) -> None:
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
        raise ArgumentError(f"ag_gradcheck(): fn must return a 1x1 tensor, got {type(out).__name__}")
    return float(out.item())


def ag_gradcheck(fn: Callable[[Any], Tensor], inputs: Any, eps: float = 1e-5, atol: float = 1e-4, rtol: float = 0.0,
                 verbose: bool = False, quiet: bool = False) -> GradcheckResult:
    """Compare backward()'s gradients with central differences.

    fn(inputs) -> 1x1 loss tensor; inputs: dict name -> tensor. Every tensor input with
    requires_grad is checked element by element: (f(x + eps) - f(x - eps)) / (2 eps), writing
    the perturbed value into the tensor and writing the saved original back afterwards (inputs
    end bit-for-bit unchanged; their .grad is also left as it was). An input passes iff
    |a - n| <= atol + rtol * |n| for every element; a missing analytical gradient fails.
    Use f64 tensors: f32 rounding swamps eps-sized differences.

    Prints "[gradcheck] '<name>': max_err = ...  PASS|FAIL" per input and an overall line unless
    quiet (verbose adds both gradients). Returns a GradcheckResult (truthy iff all passed)."""
    if not isinstance(inputs, dict):
        raise ArgumentError(f"ag_gradcheck(): inputs must be a dict name -> tensor, got {type(inputs).__name__}")
    if not callable(fn):
        raise ArgumentError("ag_gradcheck(): fn must be callable")
    eps, atol, rtol = float(eps), float(atol), float(rtol)
    checked = {k: v for k, v in inputs.items() if isinstance(v, Tensor) and v.requires_grad}
    saved_grad = {k: v.grad for k, v in checked.items()}

    with with_grad_tape():
        loss = fn(inputs)
    if not isinstance(loss, Tensor):
        raise ArgumentError(f"ag_gradcheck(): fn must return a 1x1 tensor, got {type(loss).__name__}")
    grads = backward(loss)
    analytical = {k: (np.array(grads[v], dtype=np.float64) if v in grads else None) for k, v in checked.items()}
    for k, v in checked.items():  # backward() added into .grad: put back what was there
        v.grad = saved_grad[k]

    errors: Dict[str, float] = {}
    numerical: Dict[str, np.ndarray] = {}
    per_input: Dict[str, bool] = {}
    originals = {name: t.data for name, t in checked.items()}  # exact copies in each tensor's dtype
    try:
        for name, t in checked.items():
            orig = originals[name]
            num = np.zeros(orig.shape, dtype=np.float64)
            work = orig.copy(order="F")
            for j in range(orig.shape[1]):
                for i in range(orig.shape[0]):
                    x0 = float(orig[i, j])
                    work[i, j] = x0 + eps
                    t.data = work
                    fp = _value(fn, inputs)
                    work[i, j] = x0 - eps
                    t.data = work
                    fm = _value(fn, inputs)
                    work[i, j] = orig[i, j]
                    num[i, j] = (fp - fm) / (2 * eps)
            t.data = orig
            numerical[name] = num
            a = analytical[name]
            if a is None or a.shape != num.shape:
                errors[name], per_input[name] = math.inf, False
            else:
                diff = np.abs(a - num)
                errors[name] = float(diff.max()) if diff.size else 0.0
                per_input[name] = bool(np.all(diff <= atol + rtol * np.abs(num)))
    finally:
        for name, t in checked.items():  # write the saved values back, whatever happened
            t.data = originals[name]

    passed = all(per_input.values()) if per_input else True
    if not quiet:
        for name in checked:
            print(f"[gradcheck] '{name}': max_err = {errors[name]:.2e}  {'PASS' if per_input[name] else 'FAIL'}")
            if verbose:
                print("  analytical:")
                a_name = analytical[name]
                print(np.round(a_name, 6) if a_name is not None else "  (none)")
                print("  numerical:")
                print(np.round(numerical[name], 6))
        print(f"[gradcheck] Overall: {'PASS' if passed else 'FAIL'}")
    return GradcheckResult(passed, errors, analytical, numerical, per_input)
