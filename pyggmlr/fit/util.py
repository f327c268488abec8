"""ag_fit's helpers: the model walk (parameters, buffers, mode, snapshots), the data and loss
arguments, the optimizer set-up and the compiled steps (loop.py runs the loop)."""

from __future__ import annotations

import contextlib
from typing import Any, List

import numpy as np

from .. import _walk
from .._args import as_numeric, plain
from .._core import NULL, check, ffi, lib
from .._host import HostValues, dims
from ..errors import ArgumentError
from ..graph.compile import ag_compile
from ..nn import modules as nn
from ..nn.summary import _config_json, _layer_state  # the core's shape rules (R's)
from ..random import Generator
from ..tape import ag_no_grad, with_grad_tape
from ..tensor import Tensor, _wrap, ag_default_dtype

__all__: List[str] = []

# ---------------------------------------------------------------------------------------------
# model helpers (work with nn modules and with any object with forward/parameters)


def _return_state(model, fn):
    """A model with return_state set: refused, the core's text, as R's (.fit_forward_fn)."""
    if getattr(model, "return_state", False) is True:
        check(lib.pg_fit_return_state(fn.encode(), str(model.name).encode("utf-8", "replace")))


def _forward(model, x, fn="ag_fit"):
    _return_state(model, fn)
    f = getattr(model, "forward", None)
    if callable(f):  # a forward that is no function is none (R's is.function rule)
        out = f(x)
    elif callable(model):
        out = model(x)
    else:
        _forward_fail(model, fn)
    if not isinstance(out, Tensor):  # a number would reach the loss as a constant
        raise ArgumentError(f"{fn}: model forward returned a {type(out).__name__}, not a tensor")
    return out


def _forward_fail(model, fn):
    """A model with no forward(x) that is not callable: the core's text naming fn, as R's."""
    check(lib.pg_fit_model_fail(fn.encode(), 0, type(model).__name__.encode()))


def _params(model):
    if not _walk.is_model(model):
        kind_fail(lib.PG_FIT_KIND_MODEL, type(model).__name__)
    return dict(_walk.items(model, alt="params"))


def _buffers(model):
    return dict(_walk.items(model, "buffers", own=False))


def _set_mode(model, training):
    fn = getattr(nn, "ag_train" if training else "ag_eval", None)
    if fn is not None:
        fn(model)
    elif hasattr(model, "training"):
        model.training = training


def _model_dtype(model):
    """The first parameter's dtype; the default one for a model without parameters (a plain
    function given to ag_predict, as R's)."""
    if _walk.is_model(model):
        for t in _params(model).values():
            return t.dtype
    return ag_default_dtype()


def _snapshot(model):
    """Exact copies of the parameters and buffers (numpy, own dtype)."""
    return (
        {k: t.data for k, t in _params(model).items()},
        {k: (t.data if isinstance(t, Tensor) else np.array(t)) for k, t in _buffers(model).items()},
    )


def _restore(model, snap):
    ps, bs = snap
    for k, t in _params(model).items():
        t.data = ps[k]
    for k, t in _buffers(model).items():
        if isinstance(t, Tensor):
            t.data = bs[k]


# ---------------------------------------------------------------------------------------------
# data


def _as_cols(v, name, fn="ag_fit", samples=False):
    """v as a [features, n] array (a vector: one row), else the core's text (pg_fit_cols;
    samples: n 0 refused)."""
    a = v.numpy() if isinstance(v, Tensor) else as_numeric(v, fn, name)
    rn = ffi.new("int64_t[2]")
    check(lib.pg_fit_cols(fn.encode(), name.encode(), *dims(a), samples, rn, rn + 1))
    return np.asfortranarray(a.reshape(rn[0], rn[1]))


def kind_fail(what: int, shown: str, epoch: int = 0) -> None:
    """ag_fit's refusal of an argument of the wrong kind: the core's text (pg_fit_kind_fail)."""
    check(lib.pg_fit_kind_fail(what, shown.encode("utf-8", "replace"), epoch, 0))


def _loss_fn(loss):
    """(loss function, name, the core's code or -1): a callable as given, else the core's loss of
    that name."""
    if callable(loss):
        return loss, "callable", -1
    if not isinstance(loss, str):
        kind_fail(lib.PG_FIT_KIND_LOSS, repr(plain(loss)))
    code = ffi.new("int *")
    check(lib.pg_fit_loss_parse(loss.encode("utf-8", "replace"), code))
    k = code[0]

    def fn(out, y=None, w=None):  # w: the batch's weight row (sample_weight / class_weight)
        yp = NULL if y is None else y._p
        if w is None:
            return _wrap(lib.pg_fit_loss(k, out._handle("ag_fit"), yp))
        return _wrap(lib.pg_fit_loss_weighted(k, out._handle("ag_fit"), yp, w._p))

    return fn, loss, k


def _apply_hyper(opt, hp, epoch):
    """opt_params(epoch)'s dict set on opt by the core (pg_fit_opt_params: ggmlR's aliases, the
    optimizer's names, the values and their ranges; all or nothing)."""
    if hp is None:
        return
    if not isinstance(hp, dict):
        kind_fail(lib.PG_FIT_KIND_OPT_PARAMS, type(hp).__name__, epoch)
    h = HostValues()
    vals = ffi.new("pg_host_value[]", max(len(hp), 1))
    for dst, v in zip(vals, hp.values()):
        h.value(dst, v, show=True)
    names = h.strings([str(k) for k in hp])
    check(lib.pg_fit_opt_params(opt._o, len(hp), names, vals, epoch))


def _builtin_model(model):
    """True when every layer is a built-in pyggmlr layer (the core's layer table, whose forwards
    run wholly in C ops a compiled graph replays), so ag_fit can compile its step by default."""
    if isinstance(model, nn.ag_sequential):  # an empty one (layers emptied) is not: R's rule
        return bool(model.layers) and all(_builtin_model(m) for m in model.layers)
    return type(model) in _BUILTIN_CLASSES


_BUILTIN_CLASSES = frozenset(nn._BUILDERS.values())  # exactly these classes, not subclasses


class _StaticSteps:
    """ag_fit's compiled graphs: one "opt" graph for the training batches (all of batch_size
    columns: a partial last batch is never trained on) recorded in training mode, and
    "forward" graphs for validation recorded in eval mode, one per batch width (the full one
    and the last partial batch). Recording leaves the model as it was: no optimizer step, no
    random draws and the buffers (batch-norm running statistics) put back, so the run equals
    the eager one bit for bit."""

    def __init__(self, model, lossfn, opt, has_y):
        self.model, self.lossfn, self.opt, self.has_y = model, lossfn, opt, has_y

    def _fn(self, holder, weighted):
        def fn(x, *yw):  # (x, y), (x, y, w), (x, w): the inputs below, in their order
            out = _forward(self.model, x)
            holder["out"] = out
            y = yw[0] if self.has_y else None
            if not weighted:
                return self.lossfn(out, y)
            return self.lossfn(out, y, yw[-1])

        return fn

    def _ins(self, xv, yv, wv):
        # the plan's batch tensors: each gather refills the graph's inputs; the training batch's
        # weight row is one more input (pg_fit_run_static)
        return [xv] + ([yv] if self.has_y else []) + ([wv] if wv is not None else [])

    def _compile(self, build, ins, fn):
        """ag_compile(fn, *ins), the model's buffers put back afterwards."""
        bufs = {k: t.data for k, t in _buffers(self.model).items() if isinstance(t, Tensor)}
        try:
            return ag_compile(fn, *ins, build=build, optimizer=self.opt if build == "opt" else None)
        finally:
            self._put_back(bufs)

    def _put_back(self, bufs):
        for k, t in _buffers(self.model).items():
            if k in bufs:
                t.data = bufs[k]

    def record(self, val, xv, yv, wv=None):
        """The step for this batch's width, recorded on the plan's batch tensors (the training
        step in training mode, build "opt"; validation in eval mode, build "forward"):
        (step, model output tensor) for the session, which runs them from then on."""
        holder: dict = {}
        fn = self._fn(holder, wv is not None)
        with ag_no_grad() if val else contextlib.nullcontext():
            step = self._compile("forward" if val else "opt", self._ins(xv, yv, wv), fn)
        return step, holder["out"]

    def probe(self, plan, other, xv, yv, wv):
        """static=None's check that replaying is safe for this model (the session's PROBE): a
        forward graph recorded on the training batch the tensors hold, then (eager, replay): the
        losses the eager forward and that graph's replay give on training batch `other`, for the
        session's verdict (a forward that reads values in host code or branches on them was
        recorded once and would replay wrongly). The buffers and the random stream end as they
        were."""
        ins = self._ins(xv, yv, wv)
        fn = self._fn({}, wv is not None)
        fwd = self._compile("forward", ins, fn)
        plan.batch(False, other)  # refills the same tensors (and the weight row)
        bufs = {k: t.data for k, t in _buffers(self.model).items() if isinstance(t, Tensor)}
        stream = Generator.current()
        state = stream.get_state()
        try:
            with with_grad_tape():
                eager = fn(*ins).item()
            self._put_back(bufs)
            stream.set_state(state)
            replay = fwd(*ins).item()
        finally:
            self._put_back(bufs)
            stream.set_state(state)
        return eager, replay


def _input_rows(model: Any, rows: int, fn: str = "ag_fit", cols: int = -1) -> Any:
    """x's rows against the model's built-in layers, before training: the first layer whose
    forward would refuse the rows it gets is a ShapeError now, not in the first batch's forward
    after batch norm and dropout have run (the core's rule and text, pg_layer_shape_check, as
    R's .fit_input_rows). The walk stops checking at the first layer that is not built-in (a
    custom layer, a sequential with its own forward); cols: x's samples, for the row-major
    hint. Returns the model's output rows per sample (None: unknown), the summary's."""
    st = ffi.new("int64_t[4]", [rows, -1, -1, -1])
    walk = {"i": 0, "checked": True}

    def visit(layer):
        own = getattr(type(layer), "forward", None) is nn.ag_sequential.forward
        if own and "forward" not in vars(layer):
            for sub in layer.layers:
                visit(sub)
            return
        walk["i"] += 1
        leaf = type(layer) in _BUILTIN_CLASSES and not own  # (a sequential with its own forward)
        text = _config_json(layer) if walk["checked"] and leaf else None
        if text is None:
            walk["checked"] = False
            _layer_state(layer, st)
            return
        args = (fn.encode(), walk["i"], rows, cols, b"x.T", text, len(text), st)
        check(lib.pg_layer_shape_check(*args))

    visit(model)
    return None if st[0] < 0 else int(st[0])


def _check_targets(
    X: Any,
    Y: Any,
    classify: int,
    model: Any,
    nlabels: int = -1,
    loss: int = -1,
    metrics=(),
    yv=None,
) -> int:
    """y's samples against x's (Y None: no targets), then x's rows against the model's built-in
    layers (_input_rows), then cross_entropy ids [1, n] against the model's outputs when its
    structure says them, and labels' classes (nlabels: a Categorical's categories, unused ones
    too, or the distinct strings; -1: not labels) equal to them, as R's factor levels; then y's
    rows, the metrics and validation_data's ids yv against those outputs for the built-in loss
    `loss` (the core's code, -1: a function): the core's rules and texts (pg_fit_targets,
    pg_fit_outputs_check, as R's .fit_targets), all before the first forward. Returns
    class_weight's classes (the core's: the outputs when known, else nlabels, else -1)."""
    if Y is not None:  # the samples first: a row-major x gets its hint, not a layer's refusal
        check(lib.pg_fit_check_samples(*X.shape, *Y.shape, b"x.T", b"y.T"))
    k = _input_rows(model, X.shape[0], cols=X.shape[1])
    if Y is None:
        return -1
    v = np.asfortranarray(Y, dtype=np.float64)
    nclass = ffi.new("int64_t *")
    argmax = -1 if k is None or classify != lib.PG_FIT_CLASSIFY_ARGMAX else k
    check(lib.pg_fit_targets(*X.shape, *Y.shape, ffi.cast("double *", v.ctypes.data), classify,
                             argmax, nlabels, 0, b"x.T", b"y.T", nclass))  # fmt: skip
    codes = ffi.new("int[]", list(metrics) or [0])
    ids = argmax > 0 and yv is not None and yv.shape[0] == 1  # validation_data's class ids
    iv = np.ascontiguousarray(yv, dtype=np.float64).reshape(-1) if ids else np.zeros(0)
    check(lib.pg_fit_outputs_check(loss, codes, len(metrics), Y.shape[0],
                                   ffi.cast("double *", iv.ctypes.data), iv.size,
                                   -1 if k is None else k))  # fmt: skip
    return int(nclass[0])


def _check_optimizer(opt: Any, params: Any) -> None:
    """An optimizer object that updates none of the model's parameters (another model's, whose
    first step would find no gradient) is refused before training: the core's rule and text
    (pg_fit_optim_check, as R's)."""
    ptrs = ffi.new("pg_tensor *[]", [t._p for t in params.values()] or [NULL])
    check(lib.pg_fit_optim_check(opt._o, ptrs, len(params)))
