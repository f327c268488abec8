"""Parity cases for R's operators on tensors (r/R/ops_generics.R: Ops / Math / Summary, mean, t,
%*%) against Python's operators on the same inputs: value, loss and every input's gradient, 0
ULP; and ag_estimate_training_memory(model =) measuring the same bytes in both. The R side calls the operators themselves (``+``, ``%*%``, ``exp`` ... dispatching on
ag_tensor), so a change in the R mapping shows here. No ggmlR column: ggmlR has no operators."""

from __future__ import annotations

import operator
import zlib
from typing import Any, Callable, Dict, List

import numpy as np

from .cases_api import _op
from .core import CASES, Case, Record, RSide


def _r_or_py(sym: str, py: Callable[..., Any]) -> Callable[..., Any]:
    """f(P, *args): R's function `sym` on the R side, py(P, *args) on the Python side."""

    def f(P: Any, *args: Any) -> Any:
        return getattr(P, sym)(*args) if isinstance(P, RSide) else py(P, *args)

    return f


_add = _r_or_py("+", lambda P, a, b: operator.add(a, b))
_sub = _r_or_py("-", lambda P, a, b: operator.sub(a, b))
_mul = _r_or_py("*", lambda P, a, b: operator.mul(a, b))
_div = _r_or_py("/", lambda P, a, b: operator.truediv(a, b))
_pow = _r_or_py("^", lambda P, a, p: operator.pow(a, p))
_neg = _r_or_py("-", lambda P, a: operator.neg(a))
_mm = _r_or_py("%*%", lambda P, a, b: operator.matmul(a, b))
_t = _r_or_py("t", lambda P, a: a.T)
_sum = _r_or_py("sum", lambda P, a: P.ag_sum(a))
_mean = _r_or_py("mean", lambda P, a: P.ag_mean(a))
_exp = _r_or_py("exp", lambda P, a: P.ag_exp(a))
_log = _r_or_py("log", lambda P, a: P.ag_log(a))
_sqrt = _r_or_py("sqrt", lambda P, a: P.ag_pow(a, 0.5))
_tanh = _r_or_py("tanh", lambda P, a: P.ag_tanh(a))
_abs = _r_or_py("abs", lambda P, a: P.ag_add(P.ag_relu(a), P.ag_relu(P.ag_neg(a))))


def _case(name: str, shapes: Any, f: Callable[..., Any], positive: Any = ()) -> None:
    _op(f"R operators: {name}", shapes, f, positive=positive)
    CASES[-1].ggmlr = False


_case("W %*% x + b", [(3, 4), (4, 5), (3, 1)], lambda P, w, x, b: _add(P, _mm(P, w, x), b))
_case(
    "a * b - a / b",
    [(3, 4), (3, 4)],
    lambda P, a, b: _sub(P, _mul(P, a, b), _div(P, a, b)),
    positive=(1,),
)
_case(
    "2 * a - a / 4 + 3 / a - (1 - a)",
    [(3, 4)],
    lambda P, a: _sub(
        P, _add(P, _sub(P, _mul(P, 2.0, a), _div(P, a, 4.0)), _div(P, 3.0, a)), _sub(P, 1.0, a)
    ),
    positive=(0,),
)
_case("-a ^ 3", [(3, 4)], lambda P, a: _neg(P, _pow(P, a, 3.0)))
_case("t(a) %*% b", [(4, 3), (4, 5)], lambda P, a, b: _mm(P, _t(P, a), b))
_case(
    "sum(a * b) + mean(a)",
    [(3, 4), (3, 4)],
    lambda P, a, b: _add(P, _sum(P, _mul(P, a, b)), _mean(P, a)),
)
_case(
    "exp log sqrt tanh abs",
    [(3, 4)],
    lambda P, a: _add(
        P, _add(P, _exp(P, a), _log(P, a)), _add(P, _sqrt(P, a), _mul(P, _tanh(P, a), _abs(P, a)))
    ),
    positive=(0,),
)


def _memory_model(P: Any, d: Dict[str, Any], steps: int) -> List[Record]:
    """The measured budget of one model in each language, on the tape and compiled (static):
    every figure in bytes, and the note (the core's text) as a CRC-32."""
    m = P.ag_sequential(
        P.ag_linear(20, 64, "relu"), P.ag_dropout(0.2), P.ag_batch_norm(64), P.ag_linear(64, 5)
    )
    keys = (
        "params",
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "total",
        "bytes_per_scalar",
    )
    rec: Record = {}
    for static in (False, True):
        e = P.ag_estimate_training_memory(
            model=m, input_shape=[20, 32], quiet=True, static=static, optimizer="sgd"
        )
        note = e["note"] if isinstance(e["note"], str) else str(np.asarray(e["note"]).ravel()[0])
        rec[f"budget static={static}"] = np.array([float(e[k]) for k in keys])
        rec[f"note static={static}"] = np.array([float(zlib.crc32(note.encode()))])
    return [rec]


CASES.append(
    Case("memory: ag_estimate_training_memory(model =)", "memory", _memory_model, 1, ggmlr=False)
)
