"""Static graphs: record a step once, replay it in the C core (ggml-opt's static mode).

``step = ag_compile(fn, *inputs, build="opt", optimizer=opt)`` calls ``fn(*inputs)`` once on
a tape that records every op, and returns a callable. ``step(*new_inputs)`` writes the new
values into the recorded input tensors and replays the whole graph in one C call:

- build "forward": the forward rules only; returns the output (a Tensor, reused each call);
- build "grad": forward and backward into gradient buffers planned at the first call;
  returns ``(loss, grads)`` with grads a dict tensor id -> numpy array;
- build "opt": forward, backward and ``optimizer.step(grads, sum_grads=True)`` (its
  accumulate_steps summing one replay's gradients per call); returns the loss as a float.

Replays run the same kernels in the same order as the eager loop (with_grad_tape -> backward
-> ``if opt.step(): opt.zero_grad()``, ggmlR's .grad idiom), so losses, gradients and weights
are bit-identical. Inputs
keep their recorded shapes: another shape raises ShapeError naming both (compile again for
it).

Recording is one call of ``fn``: it applies no optimizer step and draws no random numbers
(the random stream is restored, so each replay draws new dropout masks in the eager order),
but a batch norm layer in training mode updates its running statistics once, exactly as one
eager training forward does; every replay then updates them once more, as every eager step
does. (ag_fit(static=True) puts the statistics back after recording, so its run equals the
eager one.) The layers' modes are read at record time: a graph recorded in training mode
keeps dropout and batch statistics; record a second ("forward") graph after ag_eval(model)
for evaluation with the running statistics.

Data: what changes per call is the inputs (refilled), the parameters' values (each replay
reads them as they are) and dropout masks (drawn anew). What does not: tensors or arrays that fn
builds or closes over are constants of the graph, their values at record time, e.g. class ids
given to ag_softmax_cross_entropy_loss or ids given to ag_embedding as an array; so are values fn
reads back into Python (x.numpy()) and the branches it takes on them. Give per-step data as
inputs (ag_embedding reads an input tensor's ids on every replay).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _core
from .._args import check_flag, check_int, plain
from .._core import NULL, ffi, lib
from ..errors import ArgumentError, PyggmlrValueError
from ..optim.optimizer import Optimizer
from ..random import Generator
from ..tensor import ArrayLike, Tensor, _as_matrix, _read, _src, ag_tensor
from .memory import MemoryReport, _memory_report

__all__ = ["ag_compile", "CompiledStep"]

_BUILDS = {
    "forward": lib.PG_GRAPH_BUILD_FORWARD,
    "grad": lib.PG_GRAPH_BUILD_GRAD,
    "opt": lib.PG_GRAPH_BUILD_OPT,
}


class CompiledStep:
    """A recorded step, made by ag_compile; call it with new input values (numpy arrays or
    tensors), one per recorded input and of the recorded shape [rows, cols].

    Calling returns, by ``build``: "forward" the output Tensor (the same object each call,
    refilled); "grad" ``(loss, grads)`` with loss a float and grads a dict tensor id -> numpy
    array of the parameter's shape; "opt" the loss as a float (after the optimizer step).
    A call raises ArgumentError for the wrong number of inputs, ShapeError for an input of
    another shape than recorded, DTypeError for non-numeric data. Calls are serialised (one
    at a time per step); attributes: ``build``, ``optimizer``, ``n_nodes``, ``ops``."""

    def __init__(
        self, g: Any, inputs: List[Tensor], out: Tensor, build: str, optimizer: Optional[Optimizer]
    ) -> None:
        self._g = g
        # one call at a time: a call refills the step's inputs, then replays (dropout nodes draw
        # their masks from the current stream as they run)
        self._lock = threading.Lock()
        self._inputs = inputs
        self._out = out
        self.build = build
        self.optimizer = optimizer

    def __del__(self, _free=lib.pg_graph_free):
        g = self.__dict__.get("_g")
        if g is not None:
            _free(g)

    def __repr__(self) -> str:
        """The graph's memory summary, the text R's print() of a compiled step shows (an object
        whose construction failed has no graph: the default repr, never an error)."""
        if self.__dict__.get("_g") is None:
            return object.__repr__(self)
        return str(self.memory(top=0))

    @property
    def n_nodes(self) -> int:
        """Number of nodes (recorded ops) in the graph."""
        return lib.pg_graph_nodes(self._g)

    @property
    def ops(self) -> List[str]:
        """The recorded ops' names (ag_* names), in execution order."""
        return [ffi.string(lib.pg_graph_node_op(self._g, i)).decode() for i in range(self.n_nodes)]

    def memory(self, top: int = 10, quiet: bool = True) -> MemoryReport:
        """The graph's memory as ag_tape_memory reports a tape (same fields, walk and text;
        printed unless quiet), for the buffers planned once and reused by every replay:
        ``nodes``, ``bytes_total``, ``bytes_snapshots`` (node outputs and saved buffers: the
        activations kept for every replay), ``bytes_inputs`` (operands no node produces:
        weights, data, constants), ``bytes_fields`` (node structs), ``by_op``; plus
        ``bytes_gradients`` (gradient buffers of build grad/opt, allocated at the first call),
        ``outputs`` and ``saved`` (the activations split by kind) and ``build``.

        Args: top: how many ops the text lists (>= 0); quiet: do not print.
        Returns: a pyggmlr.graph.memory.MemoryReport.
        Raises: ArgumentError when top is not a number or quiet not True / False,
        PyggmlrValueError when top is not an integer >= 0."""
        top = check_int(top, "memory()", "top", 0)
        quiet = check_flag(quiet, "memory()", "quiet")  # "no" is not True (ag_tape_memory's rule)

        def buffers():
            v = ffi.new("pg_graph_buffers *")
            _core.check(lib.pg_graph_memory(self._g, v))
            out, saved, grads = v.bytes_outputs, v.bytes_saved, v.bytes_gradients
            return {"outputs": out, "saved": saved, "gradients": grads, "build": self.build}

        def fill(*arrays):  # (totals, labels, nodes, nbytes, cap) -> rows
            return lib.pg_graph_memory_report(self._g, *arrays)

        ndropout = lib.pg_graph_dropout_masks(self._g)  # each replay redraws them
        return _memory_report(
            fill,
            max(self.n_nodes, 1),
            top,
            quiet,
            compiled=self.build,
            buffers=buffers,
            ndropout=ndropout,
        )

    def __call__(
        self, *values: Union[ArrayLike, Tensor]
    ) -> Union[Tensor, float, Tuple[float, Dict[int, np.ndarray]]]:
        with self._lock:
            return self._call(values)

    def _call(self, values):
        if len(values) != len(self._inputs):
            raise ArgumentError(
                f"compiled step: expected {len(self._inputs)} inputs, got {len(values)}"
            )
        g = self._g
        for i, (v, t) in enumerate(zip(values, self._inputs)):
            if v is t:
                continue
            if isinstance(v, Tensor):
                v = v.numpy()
            a = _as_matrix(v, f"compiled step: input {i + 1}: ")
            # the core refuses another shape (R's text: "compiled graph: input 1 was recorded as")
            _core.check(lib.pg_graph_set_input(g, i, *_src(a)))
        rc = lib.pg_graph_run(g)
        if rc < 0:
            _core.raise_last(-rc)
        if self.build == "forward":
            return self._out
        loss = float(_read(lib.pg_graph_output(g))[0, 0])
        if self.build == "opt":
            return loss
        m = lib.pg_graph_grads(g)
        return loss, {
            lib.pg_gradmap_key_id(m, i): _read(lib.pg_gradmap_value(m, i))
            for i in range(lib.pg_gradmap_size(m))
        }


def ag_compile(
    fn: Callable[..., Tensor],
    *inputs: ArrayLike,
    build: str = "opt",
    optimizer: Optional[Optimizer] = None,
) -> CompiledStep:
    """Record ``fn(*inputs)`` once and return a CompiledStep replaying it in C (see the module
    docstring).

    Args: fn: a function of the input tensors returning a Tensor (the loss [1, 1] for build
    "grad" / "opt"); inputs: tensors (kept and refilled by each call) or arrays (become
    tensors of the default dtype), each [features, batch]; build: "opt" (needs
    ``optimizer``), "grad" or "forward"; optimizer: optimizer_adam / optimizer_sgd on the
    parameters fn uses.
    Returns: a CompiledStep.
    Raises: ArgumentError when fn is not callable or does not return a tensor, or build "opt"
    has no optimizer; PyggmlrValueError for an unknown build or a graph that cannot be
    replayed (e.g. fn calls ag_checkpoint); whatever fn raises."""
    op = "ag_compile"
    if not callable(fn):
        raise ArgumentError(
            f"ag_compile(): fn must be a function, got {type(fn).__name__}"
        )  # R's words
    if not isinstance(build, str) or build not in _BUILDS:  # a list: unhashable
        raise PyggmlrValueError(
            f'ag_compile(): build must be "opt", "grad" or "forward", got {plain(build)!r}'  # R's quotes
        )
    if build == "opt" and not isinstance(optimizer, Optimizer):
        raise ArgumentError(
            "ag_compile(): build='opt' needs optimizer= (optimizer_adam / optimizer_sgd)"
        )
    ts = [x if isinstance(x, Tensor) else ag_tensor(x) for x in inputs]
    stream = Generator.current()
    state = stream.get_state()
    depth = lib.pg_tape_depth()
    try:
        _core.check(lib.pg_graph_record_begin())  # inside: an interrupt just after it is covered
        out = fn(*ts)
    except BaseException:
        if (
            lib.pg_tape_depth() > depth
        ):  # only a recording this call opened (begin may have refused)
            lib.pg_graph_record_abort()
        raise
    finally:
        stream.set_state(state)  # recording draws nothing the eager loop would
    if not isinstance(out, Tensor):
        lib.pg_graph_record_abort()
        raise ArgumentError(f"ag_compile(): fn must return an ag_tensor, got {type(out).__name__}")
    handles = ffi.new("pg_tensor *[]", [t._handle(op) for t in ts] or [NULL])
    # an "opt" build has an Optimizer (checked above); the others pass none
    opt = optimizer._o if build == "opt" and optimizer is not None else NULL
    g = lib.pg_graph_record_end(out._handle(op), handles, len(ts), _BUILDS[build], opt)
    if g == NULL:
        _core.raise_last()
    return CompiledStep(g, ts, out, build, optimizer if build == "opt" else None)
