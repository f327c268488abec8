"""What the tape holds and what a training run needs (above compile.py: both reach a compiled step).

* :func:`ag_tape_memory` - what the current tape keeps alive, split as ggmlR does into operands
  (outlive the tape), activations (freed by clearing the tape: exactly, checked against the
  allocator) and the nodes' own bookkeeping, with a per-op table; or a compiled step's buffers.
* :func:`ag_estimate_training_memory` - weights + gradients + optimizer state + activations,
  from parameter shapes (activations guessed from ``activation_frac``, as ggmlR) or, given a
  model and an input, with activations measured from one real forward and backward pass.
"""

from __future__ import annotations

import gc
import math
import numbers
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np

from .. import _core, _walk
from .._args import check_flag, check_int, check_num, plain, show
from .._core import F32, NULL, ffi, lib
from ..errors import ArgumentError
from ..ops import ag_mse_loss
from ..optim.optimizer import Optimizer, optimizer_adam
from ..tape import backward, with_grad_tape
from ..tensor import Tensor, _as_tensor, _dtype_code, _wrap
from .compile import CompiledStep, ag_compile
from .memory import MemoryReport, _memory_report, _raw_stats

__all__ = ["ag_tape_memory", "ag_estimate_training_memory"]


def ag_tape_memory(top: int = 10, quiet: bool = False, compiled: Any = None) -> MemoryReport:
    """How many nodes the current tape holds and the memory they keep alive.

    Call it between backward() and the optimizer's zero_grad() (which empties the tape).
    Returns a :class:`MemoryReport` with ggmlR's fields: ``nodes``, ``bytes_total`` (=
    snapshots + fields + inputs), ``bytes_snapshots`` (activations only the tape keeps alive:
    ag_tape_clear() frees exactly these bytes), ``bytes_inputs`` (operands something else also
    holds: weights, data, tensors you kept a handle to; they outlive the tape),
    ``bytes_fields`` (the node structs themselves) and ``by_op``: a list of
    ``{"op", "nodes", "mb", "bytes"}`` rows, most expensive first (ties by name), also as text
    via ``.by_op_table()``. Prints ggmlR's report (``top`` op rows; 0 = totals only) unless
    quiet. Each storage is counted once, charged to the first node that meets it walking the
    tape in recording order (a node's inputs, then its saved tensors, then its output).
    compiled: a step from ag_compile: report its planned buffers instead (the same fields, plus
    ``bytes_gradients``; see CompiledStep.memory).
    """
    top = check_int(top, "ag_tape_memory", "top", 0)  # R's order: top, quiet, compiled
    quiet = check_flag(quiet, "ag_tape_memory", "quiet")
    if compiled is not None:
        if not isinstance(compiled, CompiledStep):
            raise ArgumentError(
                f"ag_tape_memory: compiled must be a step from ag_compile, got {type(compiled).__name__}"
            )
        return compiled.memory(top=top, quiet=quiet)
    gc.collect()  # unreachable cycles holding tensors go first: the count is what ag_tape_clear() frees
    fill = lib.pg_tape_memory  # (totals, labels, nodes, nbytes, cap) -> rows
    return _memory_report(fill, max(lib.pg_tape_nodes(), 1), top, quiet)


# ---------------------------------------------------------------------------------------------
# ag_estimate_training_memory

# the optimizer names, in the core's order (R's match.arg default is the whole vector)
_OPTIMIZERS = tuple(
    ffi.string(lib.pg_mem_optim_name(i)).decode() for i in range(lib.PG_MEM_OPTIM_COUNT)
)


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _dims(s):
    """One shape's dimensions as floats, or None when they are not numbers (the core says so)."""
    try:
        v = [s] if _is_number(s) else None if isinstance(s, (str, bytes)) else list(s)
    except TypeError:
        v = None
    if v is None or not all(_is_number(d) for d in v):
        return None
    return [_float(d) for d in v]


def _float(d):
    try:
        return float(d)
    except OverflowError:  # 10**400: Inf, which the core refuses by position
        return math.inf


def _shape_params(shapes):
    """ggmlR's shapes (a list of dimension vectors, one bare vector or one number) -> the
    parameter count, by the core's rule and texts (pg_estimate_params, R's too)."""
    if isinstance(shapes, dict):
        shapes = list(shapes.values())
    if isinstance(shapes, np.ndarray):
        shapes = [shapes] if shapes.ndim <= 1 else list(shapes)
    if _is_number(shapes):
        shapes = [shapes]  # one number, as R's shapes = 64
    if not isinstance(shapes, (list, tuple)):
        shapes = []  # not a list (None too): the core's "non-empty list" error
    elif shapes and all(_is_number(s) for s in shapes):
        shapes = [shapes]  # one bare vector, as R's c(64, 64)
    dims: List[float] = []
    lens = np.empty(max(len(shapes), 1), dtype=np.int64)
    for i, s in enumerate(shapes):
        v = _dims(s)
        lens[i] = -1 if v is None else len(v)
        dims.extend(v or [])
    d, out = np.asarray(dims + [0.0], dtype=np.float64), ffi.new("double *")
    dp, lp = ffi.cast("double *", d.ctypes.data), ffi.cast("int64_t *", lens.ctypes.data)
    _core.check(lib.pg_estimate_params(dp, lp, len(shapes), out))
    p = out[0]
    return int(p) if math.isfinite(p) and p == int(p) else p


def _optimizer_k(optimizer):
    """(enum pg_mem_optim, accumulates) from a name (the core's rule and text: ggmlR's
    match.arg) or an optimizer object (k + 1 with gradient accumulation)."""
    if isinstance(optimizer, Optimizer):
        code = (
            lib.PG_MEM_OPTIM_ADAM
            if isinstance(optimizer, optimizer_adam)
            else (lib.PG_MEM_OPTIM_SGD if optimizer.momentum > 0 else lib.PG_MEM_OPTIM_SGD_PLAIN)
        )
        return code, optimizer.accumulate_steps > 1
    if isinstance(optimizer, (list, tuple)) and tuple(optimizer) == _OPTIMIZERS:
        optimizer = "adam"  # R's match.arg default: the first choice
    name = optimizer.encode() if isinstance(optimizer, str) else NULL
    out = ffi.new("int *")
    _core.check(lib.pg_mem_optim_parse(name, repr(plain(optimizer)).encode(), out))
    return out[0], False


def _whole(v):
    """a count the core gives as a double: an int when whole (as the numbers summed here were)"""
    return int(v) if v == int(v) and abs(v) < 2**53 else v


def _text(est, what):
    """the core's note (what 0) or printed report (1)"""
    return _core.text(lib.pg_mem_estimate_text, ffi.addressof(est), what)


def _nbytes(p):
    """Storage bytes of a C tensor handle."""
    return lib.pg_tensor_numel(p) * (4 if lib.pg_tensor_dtype(p) == F32 else 8)


def _model_params(model):
    if not _walk.is_model(model):
        shown = type(model).__name__.encode()  # the core's text, as R's
        _core.check(lib.pg_fit_model_fail(b"ag_estimate_training_memory()", 1, shown))
    return _walk.tensors(model, "ag_estimate_training_memory(): model.parameters()")


def _measure_step(model, x, input_shape, y, loss_fn, batch_size, dtype_code, static=False):
    """One real forward + backward of model on a private tape. Returns (weights, gradients,
    activations, batch, params) in bytes: activations = the peak bytes the core held above the
    weights and the parameters' gradients (tape, intermediates' gradients, loss, input, target)."""
    fn = "ag_estimate_training_memory()"
    params = _model_params(model)
    weights = sum(_nbytes(t._p) for t in params)
    n_params = sum(lib.pg_tensor_numel(t._p) for t in params)
    forward = getattr(model, "forward", None)
    forward = forward if callable(forward) else model  # a forward that is no function: none
    if not callable(forward):
        _core.check(
            lib.pg_fit_model_fail(fn.encode(), 0, type(model).__name__.encode())
        )  # R's text
    mse = loss_fn is None  # the default loss: y must have the output's shape (the core's check)
    if mse:
        loss_fn = ag_mse_loss
    elif not callable(loss_fn):
        raise ArgumentError(
            f"{fn}: loss_fn must be a function(out, y) or None, got {type(loss_fn).__name__}"
        )
    extra = 0  # bytes of caller-owned input/target: live in training, allocated before we measure

    # layer state (batch-norm running statistics) is put back after the measurement
    buffers = model.buffers() if callable(getattr(model, "buffers", None)) else None
    buffers = list(buffers.values()) if isinstance(buffers, dict) else list(buffers or [])
    buffers = [(t, t.numpy()) for t in buffers if isinstance(t, Tensor)]
    # the parameters' .grad is set aside so the measurement neither sees nor changes it
    saved_grads = []
    for t in params:
        g = lib.pg_tensor_grad(t._p)
        if g != NULL:
            lib.pg_tensor_retain(g)
        saved_grads.append(g)
        _core.check(lib.pg_tensor_set_grad(t._p, NULL))
    stashed = lib.pg_tape_stash_depth()
    try:
        _core.check(lib.pg_tape_stash())
        gc.collect()
        base = _raw_stats().total
        lib.pg_memory_reset_peak()
        if x is not None:
            if isinstance(x, Tensor):
                xt = x
                extra += _nbytes(x._p)
            else:
                xt = _as_tensor(x, fn, code=dtype_code)
        else:
            shp = input_shape.tolist() if isinstance(input_shape, np.ndarray) else input_shape
            shp = shp if isinstance(shp, (list, tuple)) else [shp]  # c(1, 2) / one size
            # the rule and its text are the core's, as R's (int(inf) raised OverflowError)
            d = [_float(v) if _is_number(v) else math.nan for v in shp]
            nr, nc, shown = ffi.new("int64_t *"), ffi.new("int64_t *"), show(input_shape).encode()
            dp = ffi.new("double[]", d or [math.nan])
            _core.check(lib.pg_mem_input_shape(dp, len(d), batch_size, 0, shown, nr, nc))
            xt = _wrap_new(dtype_code, nr[0], nc[0])
        batch = xt.ncol
        if static:  # the compiled step: record a "grad" graph, run it once (plans its buffers)
            if isinstance(y, Tensor):
                yt = y
                extra += _nbytes(y._p)
            elif y is not None:
                yt = _as_tensor(
                    y, fn, code=lib.pg_tensor_dtype(params[0]._p) if params else dtype_code
                )

            def step_fn(xa, ya=None):
                out = forward(xa)
                if not isinstance(out, Tensor):
                    raise ArgumentError(
                        f"{fn}: model forward returned a {type(out).__name__}, not a tensor"
                    )
                if ya is None:  # zeros target, made while recording: a constant of the graph
                    ya = _wrap_new(lib.pg_tensor_dtype(out._p), out.nrow, out.ncol)
                elif mse:
                    _core.check(lib.pg_mem_target_shape(out.nrow, out.ncol, ya.nrow, ya.ncol))
                return loss_fn(out, ya)

            step = ag_compile(step_fn, xt, *([] if y is None else [yt]), build="grad")
            _core.check(max(lib.pg_graph_run(step._g), 0))
            peak = _raw_stats().peak - base
            m = lib.pg_graph_grads(step._g)
            gradients = 0
            for t in params:
                g = lib.pg_gradmap_get(m, t._p)
                if g != NULL:
                    gradients += _nbytes(g)
            del step, m
            if y is not None:
                del yt
            del xt
        else:
            with with_grad_tape():
                out = forward(xt)
                if not isinstance(out, Tensor):
                    raise ArgumentError(
                        f"{fn}: model forward returned a {type(out).__name__}, not a tensor"
                    )
                if y is None:
                    yt = _wrap_new(lib.pg_tensor_dtype(out._p), out.nrow, out.ncol)
                elif isinstance(y, Tensor):
                    yt = y
                    extra += _nbytes(y._p)
                else:
                    yt = _as_tensor(y, fn, code=lib.pg_tensor_dtype(out._p))
                if mse:  # else ag_mse_loss's words: the estimate's, with both shapes
                    _core.check(lib.pg_mem_target_shape(out.nrow, out.ncol, yt.nrow, yt.ncol))
                loss = loss_fn(out, yt)
            grads = backward(loss)
            peak = _raw_stats().peak - base
            gradients = 0
            for t in params:
                g = lib.pg_gradmap_get(grads._m, t._p)
                if g != NULL:
                    gradients += _nbytes(g)
            del grads, loss, out, yt, xt
    finally:
        lib.pg_tape_unstash_to(stashed)
        for t, values in buffers:
            t.data = values
        for t, g in zip(params, saved_grads):
            lib.pg_tensor_set_grad(t._p, g)
            if g != NULL:
                lib.pg_tensor_release(g)
    activations = peak - gradients + extra
    return weights, gradients, activations, batch, n_params


def _wrap_new(code, nrow, ncol):
    return _wrap(lib.pg_tensor_new(code, nrow, ncol, NULL, code, 1, nrow))


def ag_estimate_training_memory(
    shapes: Any = None,
    batch_size: float = 32,
    optimizer: Union[str, Sequence[str], Any] = ("adam", "sgd", "sgd_plain"),
    activation_frac: float = 0.01,
    quiet: bool = False,
    dtype: Optional[str] = None,
    model: Any = None,
    x: Any = None,
    input_shape: Optional[Sequence[int]] = None,
    y: Any = None,
    loss_fn: Optional[Callable[[Tensor, Any], Tensor]] = None,
    static: bool = False,
) -> MemoryReport:
    """Memory budget of training: weights + gradients + optimizer state + activations.

    From ``shapes`` alone (ggmlR): ``shapes`` is a list of dimension vectors (or one bare
    vector, or one number), ``params = sum(prod(shape))`` (the core's rule and texts, R's too:
    PyggmlrValueError naming the shape and the dimension that is not a positive number), weights = gradients = params x bytes per scalar,
    optimizer = weights x k (``"adam"`` 2: m and v; ``"sgd"`` 1: velocity; ``"sgd_plain"`` 0;
    a unique start of a name is that name, as R's match.arg; an optimizer object gives its own
    k, +1 with gradient accumulation) and activations =
    weights x ``activation_frac`` x ``batch_size`` (a guess). Unlike ggmlR (always 8 bytes:
    R doubles), bytes per scalar follow ``dtype`` (default the global one): 4 for f32, 8 for f64,
    the dtype the core really stores gradients and moments in.

    With ``model`` (an object with ``parameters()`` and ``forward(x)``) and ``x`` (a batch) or
    ``input_shape`` (``(features, batch)`` or ``(features,)`` with ``batch_size``): parameters
    come from the model and activations are not guessed but measured: one real forward, loss
    (``loss_fn(out, y)``, default ag_mse_loss against ``y`` or zeros) and backward run on a
    private tape (the caller's tape is set aside and restored), and activations = the peak bytes
    the core held above the weights and the parameters' gradients (tape, gradients of
    intermediates, loss, input batch and target). The parameters' ``.grad`` and the model's
    ``buffers()`` (batch-norm running statistics) are restored afterwards; the peak counter
    (ag_memory_peak) is reset and dropout layers draw from the random stream.
    ``static=True`` measures the compiled step instead (ag_compile / ag_fit(static=True)): the
    step is recorded and run once, so activations are the graph's planned buffers (node
    outputs, saved buffers and the gradient buffers of every intermediate, all kept for every
    replay, plus input and target); weights + gradients + optimizer + activations is then the
    peak a compiled training step reaches.

    Returns a :class:`MemoryReport`: ``params, weights, gradients, optimizer, activations,
    total, bytes_per_scalar, note`` (bytes); prints ggmlR's report unless quiet. The budget, the
    note and the report are the core's (native/memory_report.c): R's are the same.
    """
    fn = "ag_estimate_training_memory()"
    est = lib.pg_mem_estimate_default()
    est.optim, est.accumulate = _optimizer_k(optimizer)
    if model is not None:
        if x is None and input_shape is None:
            raise ArgumentError(f"{fn}: with model=, give x= (a batch) or input_shape=")
        if x is not None and input_shape is not None:  # input_shape was ignored
            raise ArgumentError(f"{fn}: with model=, give x= (a batch) or input_shape=, not both")
        if shapes is not None:  # shapes were ignored: the model's parameters are counted
            raise ArgumentError(
                f"{fn}: with model=, the parameters are the model's; leave shapes= out"
            )
        if dtype is None:
            params = _model_params(model)
            dcode = lib.pg_tensor_dtype(params[0]._p) if params else lib.pg_default_dtype()
        else:
            dcode = _dtype_code(dtype, fn)
    else:
        params = _shape_params(shapes)
        dcode = _dtype_code(dtype, fn)
    est.dtype = dcode
    if model is not None:  # dtype, and x / y tensors, are the model's (the core's rule and text)
        params = _model_params(model)
        _core.check(
            lib.pg_mem_model_dtypes(
                lib.pg_tensor_dtype(params[0]._p) if params else -1, dcode,
                lib.pg_tensor_dtype(x._p) if isinstance(x, Tensor) else -1,
                lib.pg_tensor_dtype(y._p) if isinstance(y, Tensor) else -1,
            )
        )  # fmt: skip
    est.batch = check_int(batch_size, fn, "batch_size", 0)
    est.activation_frac = check_num(activation_frac, fn, "activation_frac", 0)
    quiet = check_flag(quiet, fn, "quiet")
    static = check_flag(static, fn, "static")  # (as R's: TRUE or FALSE)
    if model is not None:
        est.weights, est.gradients, est.activations, est.batch, est.params = _measure_step(
            model, x, input_shape, y, loss_fn, int(est.batch), dcode, static=static
        )
        est.source = lib.PG_MEM_SOURCE_COMPILED if static else lib.PG_MEM_SOURCE_TAPE
    else:
        est.params = params
    # the budget, its note and the printed report are the core's (R prints the same)
    b = ffi.new("pg_mem_budget *")
    _core.check(lib.pg_mem_budget_of(ffi.addressof(est), b))
    rep = MemoryReport(
        params=_whole(b.params),
        weights=_whole(b.weights),
        gradients=_whole(b.gradients),
        optimizer=_whole(b.optimizer),
        activations=_whole(b.activations),
        total=_whole(b.total),
        bytes_per_scalar=int(b.bytes_per_scalar),
        note=_text(est, 0),
    )
    rep._text = _text(est, 1)
    if not quiet:
        print(rep._text)
    return rep
