"""ag_fit: the high-level training loop (ggml's ggml_opt_fit contract on the ag_* path).

Per epoch: shuffle the training part (R's sample.int from the run's random stream, whose state
a checkpoint keeps, so a resumed run repeats the same shuffles), walk it in logical batches of
``nbatch_logical`` samples made of ``nbatch_logical / batch_size`` micro-batches whose gradients
the optimizer accumulates (its ``accumulate_steps``) and applies once per logical batch, then
evaluate the held-out part in eval mode. Loss/accuracy and their uncertainties follow
ggml_opt_result_loss / ggml_opt_result_accuracy."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np

from .._args import check_flag, check_int, check_real, plain
from .._core import NULL, check, ffi, lib
from ..errors import (
    NonFiniteLossWarning,
    PyggmlrError,
    StaticFallbackWarning,
)
from ..io.check import set_target
from ..optim.optimizer import Optimizer, optimizer_adam, optimizer_sgd
from ..parallel.sync import FitSync
from ..random import Generator, _seed_int
from ..tape import ag_no_grad, ag_tape_clear, backward, with_grad_tape
from ..tensor import Tensor
from .callbacks import batch_callbacks, hook
from .data import FitData, verbosity  # loaders, validation_data, verbose
from .evaluate import fit_metric_codes, fit_metrics_set
from .history import History
from .labels import check_labels
from .plan import FitPlan, FitSetup, Session, check_loss
from .progress import FitProgress, progress_mode
from .resume import Checkpoint, save_checkpoint
from .util import (
    _apply_hyper,
    _as_cols,
    _builtin_model,
    _check_optimizer,
    _check_targets,
    _forward,
    _loss_fn,
    _model_dtype,
    _params,
    _set_mode,
    _StaticSteps,
    kind_fail,
)
from .weights import attach, class_weights, sample_weights

__all__ = ["ag_fit"]


# ---------------------------------------------------------------------------------------------
# the loop


class _Fit:
    """Run state shared with callbacks."""

    def __init__(self, model, optimizer, history, nepoch, setup, stream, callbacks, plan):
        self.model, self.optimizer, self.history, self.nepoch = model, optimizer, history, nepoch
        # the run's settings (the core's) and random stream: their state goes into checkpoints
        self.setup, self.stream, self.callbacks, self.stop = setup, stream, callbacks, False
        # what the run measures (callbacks' monitors): has_accuracy is the core's mask (bit 0
        # accuracy, bit c metric code c)
        self.has_val, self.has_accuracy = plan.n_val > 0, plan.monitor_mask()

    save_checkpoint = save_checkpoint  # (fit, path, epoch): resume.py's


def _cb_value(cb: Any) -> int:
    """What ag_fit(callbacks=) sees in one value, as the core's pg_fit_cb_value (R's .cb_value
    the same): hooks (an object, or a dict as R's named list, whose on_epoch_end is callable:
    R's is.function), a callable, a list / tuple / dict (R's list), else other."""
    f = cb.get("on_epoch_end") if isinstance(cb, Mapping) else getattr(cb, "on_epoch_end", None)
    if callable(f):
        return lib.PG_FIT_CB_HOOKS
    if callable(cb):
        return lib.PG_FIT_CB_FUNCTION
    return lib.PG_FIT_CB_LIST if isinstance(cb, (list, tuple, Mapping)) else lib.PG_FIT_CB_OTHER


def _cb_plan(cb: Any, top: bool) -> int:
    """The core's action for one value (pg_fit_callback_plan), or its refusal."""
    out = ffi.new("int *")
    check(lib.pg_fit_callback_plan(_cb_value(cb), top, type(cb).__name__.encode(), 0, out))
    return out[0]


def _callbacks(callbacks: Any) -> List[Any]:
    """ag_fit(callbacks=) as a list of objects with hooks: the core's rule, R's too."""
    if _cb_plan(callbacks, True) == lib.PG_FIT_CB_ONE:
        callbacks = [callbacks]  # one callback, as R's ag_fit(callbacks = cb)
    elif isinstance(callbacks, Mapping):  # R's named list of callbacks: the names unused
        callbacks = list(callbacks.values())
    cbs: List[Any] = []
    for cb in callbacks:  # a hook is a callable attribute (R's is.function), else absent
        if _cb_plan(cb, False) == lib.PG_FIT_CB_WRAP:
            cbs.append(SimpleNamespace(on_epoch_end=cb))
        elif isinstance(cb, Mapping):  # R's named list of hooks
            cbs.append(SimpleNamespace(**{k: v for k, v in cb.items() if isinstance(k, str)}))
        else:
            cbs.append(cb)
    return cbs


def ag_fit(
    model: Any,
    x: Any,
    y: Any = None,
    loss: Union[str, Callable[[Tensor, Any], Tensor]] = "cross_entropy",
    optimizer: Union[str, Optimizer] = "adamw",
    opt_params: Optional[Callable[[int], dict]] = None,
    nepoch: int = 30,
    batch_size: int = 32,
    nbatch_logical: Optional[int] = None,
    val_split: float = 0.0,
    shuffle: bool = True,
    callbacks: Sequence[Any] = (),
    silent: bool = False,
    seed: Optional[int] = None,
    lr: float = 1e-3,
    resume_from: Optional[Union[str, os.PathLike]] = None,
    static: Optional[bool] = None,
    progress: str = "auto",
    distributed: bool = False,
    validation_data: Any = None,
    verbose: Optional[int] = None,
    class_weight: Any = None,
    sample_weight: Any = None,
    metrics: Any = None,
) -> History:
    """Train `model` on x [features, n] (samples are columns) and y; returns a History. Keras' forms
    (rules in pyggmlr.fit.data): x an ag_dataloader, validation_data=(x_val, y_val), verbose 0/1/2.

    loss: "cross_entropy" (fused softmax + CE on the model's logits; y are 0-based class ids, a
    vector of n, or a one-hot [classes, n] matrix; or labels: an array of strings or a pandas
    Categorical, whose labels ag_fit records as model.classes_ with the loss as model.loss_ for
    ag_predict(type="class") and model files: fit/labels.py), "mse" (y [outputs, n]), "mean" / "sum" (of the
    model's output; y unused), "binary_cross_entropy" (the output are probabilities: end the model
    in a sigmoid), "bce_with_logits", "huber" (delta 1), "mae" (ag_binary_cross_entropy_loss ...
    ag_mae_loss against y [outputs, n]) or a callable(output, y_batch_tensor) -> 1x1
    tensor (e.g. lambda out, y: ag_weighted_mse_loss(out, y, w) for a weighted MSE).
    The BCE losses take 0/1 labels (values in [0, 1], else an error naming the row and column)
    of the output's shape. History's accuracy: arg-max hits for cross_entropy; binary accuracy
    (keras' binary_accuracy: an output above 0.5 for binary_cross_entropy, above 0 for
    bce_with_logits, predicts 1; a target above 0.5 is 1) for the BCE losses, per element for a
    multi-output (multi-label) model; none (NaN) for the rest. Uncertainty sqrt(a(1-a)/(n-1)).
    cross_entropy class ids beyond the model's outputs (when its layers say them) are refused
    before training; fewer classes present than outputs is fine (as PyTorch). Labels' classes (a
    Categorical's categories, unused ones too, or the distinct strings) must be as many as the
    model's outputs when its layers say them, as R's factor levels (the same text). y's rows
    for the other built-in losses (and a one-hot y) and for the metrics mae / mse / rmse / r2
    must be those outputs too, and validation_data's class ids below them, refused before
    training. So are x's rows against the model's built-in layers (linear: in_features; the
    norms and attention: their size; recurrent layers: a multiple of input_size; a convolution
    with input_shape: its C * H * W; up to the first custom layer): a ShapeError naming the
    layer. A fit refused before training changes nothing, the random stream included.
    optimizer: "adamw" (optimizer_adam with decoupled weight decay, default 0 as in ggml),
    "sgd", or an optimizer object built on the model's parameters, or some of them (lr is then
    ignored; ag_fit sets its accumulate_steps to nbatch_logical / batch_size); one that updates
    none of them is refused before training.
    opt_params: callable(epoch) -> dict of hyper-parameters (lr/alpha, weight_decay/wd, beta1,
    momentum, ...) applied at the start of each epoch (1-based).
    batch_size: samples per forward/backward (physical batch). nbatch_logical: samples per
    optimizer step, a multiple of batch_size (default batch_size); the micro-batch gradients of
    one logical batch are averaged, so each step applies exactly that logical batch's gradient.
    Training data that do not fill a whole logical batch are left out of that epoch (as ggml).
    val_split: fraction held out at the end of the data (after one shuffle when shuffle) and
    evaluated in eval mode after every epoch (all of it, in batches of batch_size).
    shuffle: reshuffle the training part every epoch. seed: the run draws from a random stream
    of its own, seeded as set.seed(seed) would be (the process-wide stream is left alone, and
    fits in several threads are as reproducible as one after another); None: from the current
    stream (ggml_set_seed). The draws, the same in R: sample.int(n) once when shuffle (the
    training part is its first n - n_val entries, validation the rest), then per epoch
    sample.int(n_train) over the training part, and the dropout masks of the forward passes.
    callbacks: ag_early_stopping, ag_model_checkpoint, Callback objects or functions fn(epoch, logs)
    (returning False stops), a list, tuple or dict of them (R's list; a string or another
    iterable is refused), or one alone (a dict whose "on_epoch_end" is a function is one
    callback of those hooks, as R's list).
    silent: no progress display (the same as progress="none"; it wins).
    progress: "auto" (default) and "bar" (verbose=1): one bar for the whole run (tqdm when
    installed; epoch, running loss / accuracy, the last epoch's val_loss / val_acc, ETA) and a
    compact line per finished epoch above it, on stderr, where a bar can be redrawn (a terminal
    on stderr, IPython); elsewhere (scripts' logs, CI) the lines alone (verbose=2), as keras;
    "none": never (as R's ag_fit). resume_from: a checkpoint written by
    ag_model_checkpoint; training continues after its epoch exactly as the uninterrupted run would.
    distributed: data-parallel over MPI ranks (launch with mpirun; see docs/distributed.md):
    batch_size and nbatch_logical are per rank, rank 0's weights are broadcast first, every
    micro-batch's gradients are averaged over the global batch (an f64 all-reduce weighted by
    each rank's samples), the history covers all ranks' samples and only rank 0 prints.
    static: run each training step as one replay of a compiled graph (ag_compile, build
    "opt") and validation through compiled "forward" graphs (one per batch width: the last,
    partial validation batch gets its own), with exactly the eager results (same kernels, same
    order, same random draws, batch-norm statistics updated once per step). None (default):
    static unless distributed. A model of built-in layers with a built-in loss name is compiled
    at once; any other (custom layers, a callable loss) only when it is safe: ag_compile must
    record its step (no ag_checkpoint, every op replayable) and a forward graph recorded on the
    first training batch must replay another training batch to the loss the eager forward gives
    there, bit for bit (a forward that reads tensor values in host code, e.g. x.numpy(), or
    branches on them would replay the first batch's choice). Otherwise the run is eager and
    says why once (a StaticFallbackWarning with the core's reason). The probe cannot see host
    state that changes later (a step counter, a clock), nor a branch that two batches take
    alike (with one training batch it compares that batch): use False for such a forward; a
    forward that branches on the training flag is safe (training and validation graphs are
    recorded in their own modes). True: require it (raises when the step cannot be compiled
    or with distributed). False: the eager tape, no notice.
    The model is in train mode while training and in eval mode when ag_fit returns. x, y and
    validation_data must be finite: a NaN or infinite value is a PyggmlrValueError before
    training, naming how many there are and the first one's row and column. An epoch
    whose training or validation loss is NaN or infinite ends the run with a
    NonFiniteLossWarning naming it (the History keeps that epoch; stopped_epoch is set).
    sample_weight: one weight per sample of x (a vector of n; with validation_data, x's own
    samples), finite and >= 0, not all 0. class_weight: for class-id targets (loss
    "cross_entropy" with ids or one-hot y, "binary_cross_entropy" / "bce_with_logits" with 0/1
    targets in one row) a weight per class: a dict {class: weight} (a class not in it weighs
    1, as keras; with labels y, strings or a Categorical, the keys are the labels, unused
    categories included, never ids: {"a": 2.0}, as R's names; None keys are refused) or a
    sequence indexed by 0-based class id ({} or []: none); another loss is refused. Each id
    must be a class of the run (keras refuses other keys: "ag_fit: class_weight's class id 7 is
    not a class of this run (3 classes: ids 0 to 2)"): for "cross_entropy" the model's outputs
    when its layers say how many, else the labels' count (a Categorical's categories, the
    distinct strings), else one-hot y's rows or the largest id in y + 1; for the binary losses
    0 and 1. Both given:
    multiplied. keras' semantics: each sample's loss is multiplied by its weight and a batch's loss
    is the sum of the weighted per-sample losses divided by the batch size ("sum_over_batch_size";
    for mse / bce / huber / mae / mean each of the sample's terms is weighted, divided by numel as
    unweighted; "sum" is not divided). The History's loss is that weighted training loss; the
    validation loss and accuracy stay unweighted (keras without validation sample weights).
    Weights need a built-in loss name: a loss function is refused (weight its terms inside it).
    A checkpoint remembers whether the run was weighted and resumes only a run that is alike
    (the weights themselves are not compared).
    metrics: None or a list of metric names (docs/metrics.md: "accuracy", "auc", "f1", "mae",
    "r2", ...; not "confusion_matrix", which ag_evaluate returns): the History gets a column per
    name and val_<name> with validation data, each computed in the core over the whole epoch's
    outputs (the training batches as the model saw them in training mode, as keras). Checked
    against the loss before training; refused with distributed=True."""
    progress, silent = verbosity(verbose, progress, silent)
    flag = (bool, np.bool_)  # the core's texts: a truthy "a" must not start MPI
    ok = static is None or isinstance(static, flag)
    check(lib.pg_fit_flags_check(isinstance(distributed, flag), ok, 0))
    # R's order: the loader, then labels y as 0-based ids (fit/labels.py; checked against the
    # loss with the targets), then validation_data's x and y (coded with y's labels)
    data = FitData(x, y, validation_data, batch_size, shuffle, seed)
    x, y, classes = data.x, data.y, data.classes
    batch_size, shuffle, seed = data.batch_size, data.shuffle, data.seed
    pmode = progress_mode(progress, silent)
    lossfn, loss_name, loss_code = _loss_fn(loss)
    # R's .arg_int rule (a wrong kind an ArgumentError, a fraction or a value out of range a
    # PyggmlrValueError); the rest (a multiple of batch_size, val_split in [0, 1)) the core's
    nepoch = check_int(nepoch, "ag_fit", "nepoch", 1)
    batch_size = check_int(batch_size, "ag_fit", "batch_size", 1)
    shuffle = check_flag(shuffle, "ag_fit", "shuffle")
    nbl = batch_size if nbatch_logical is None else nbatch_logical
    nbatch_logical = check_int(nbl, "ag_fit", "nbatch_logical", 1)
    val_split = check_real(val_split, "ag_fit", "val_split")
    if opt_params is not None and not callable(opt_params):
        kind_fail(lib.PG_FIT_KIND_OPT_PARAMS_FN, "")

    X = _as_cols(x, "x")
    rules = ffi.new("int[2]")  # (classify: a PG_FIT_CLASSIFY_* code, per_datapoint), or a refusal
    check(lib.pg_fit_loss_rules(loss_code, int(y is not None), rules, rules + 1))
    classify = int(rules[0])  # per_datapoint: the setup's (the session reads it)
    mcodes = fit_metric_codes(metrics, classify, y is not None)  # before training
    SW, CW = sample_weights(sample_weight), class_weights(class_weight, classes)  # before y, as R
    if classes is not None:  # missing labels, then the loss (a callable refused as R's)
        check_labels(y, classes, loss_name)
    Y = None if y is None else _as_cols(y, "y")
    # the samples agree (else a row-major hint), x's rows fit the layers, the classes and y's
    # rows the outputs; nclass: class_weight's classes (the outputs, else the labels' count)
    nlabels = len(classes) if classes else -1
    nclass = _check_targets(X, Y, classify, model, nlabels, loss_code, mcodes, data.yv)
    n, val_split = data.join(X, Y, val_split)  # validation_data's columns last, in the plan

    params = _params(model)
    if not params:
        kind_fail(lib.PG_FIT_KIND_NO_PARAMS, "")
    dtype = _model_dtype(model)
    if isinstance(optimizer, Optimizer):
        opt = optimizer
        _check_optimizer(opt, params)  # another model's: refused before training (the core)
    else:  # the core's names and text (pg_fit_optim_parse)
        kind = ffi.new("int *")
        name = optimizer.encode() if isinstance(optimizer, str) else NULL
        check(lib.pg_fit_optim_parse(name, repr(plain(optimizer))[:60].encode(), kind))
        make = optimizer_adam if kind[0] == lib.PG_OPTIM_KIND_ADAM else optimizer_sgd
        opt = make(params, lr=lr)
    opt_before = (opt.accumulate_steps, opt.accum_count)  # put back when the setup fails
    gen = Generator.current()  # and the stream: the split and first shuffle are drawn before
    rng_before = gen.get_state()  # the weights and the resume are checked
    try:  # a setup that fails (bad ids, a refused resume, ...) leaves the optimizer as it was
        # checked in R's order: before distributed / static; functions wrapped
        cbs = _callbacks(callbacks)
        # static / distributed, the batch sizes over ranks and the run's settings (kept for the
        # resume check and the checkpoints) are the core's (native/fit_setup.c), R's too
        setup = FitSetup(static, loss_name, distributed=bool(distributed), n=n,
                         builtin=_builtin_model(model), batch_size=batch_size,
                         nbatch_logical=nbatch_logical, val_split=val_split, shuffle=bool(shuffle),
                         weighted=SW is not None or CW is not None)  # fmt: skip
        setup.metrics(mcodes)  # recorded: a checkpoint of other metrics is refused (the core's)
        opt.accumulate_steps, opt.accum_count = setup.info.accum, 0  # nbatch_logical / batch_size
        sync = None
        if distributed:  # the same collectives as R's ag_fit (parallel/sync.py)
            sync = FitSync(model, params)
            setup.world(sync.world)
            pmode = pmode if sync.rank == 0 else "none"  # only rank 0 prints
        if seed is not None:  # checked when resuming too, as R (the checkpoint's seed wins)
            setup.seed(_seed_int(seed, "ag_fit"))
        info = setup.info
        # the compiled steps (ag_compile of the forward and the loss); when to record, probe or
        # fall back is the session's (native/fit_session.c)
        static_steps = _StaticSteps(model, lossfn, opt, Y is not None)
        history, start_epoch, ck = History(), 1, None
        if resume_from is not None:
            if isinstance(resume_from, bytes) or not isinstance(resume_from, (str, os.PathLike)):
                shown = f"{type(plain(resume_from)).__name__} {plain(resume_from)!r}"[
                    :155
                ]  # 200 in all
                check(lib.pg_fit_resume_from_fail(shown.encode("utf-8", "replace")))
            ck = Checkpoint(resume_from, setup, cbs)  # checked; its seed and split state taken
            history, start_epoch = ck.history, ck.epoch + 1
        stream = Generator(info.seed) if info.has_seed else Generator.current()
        # the split, the shuffles and the batches live in the core (fit/plan.py, native/fit.c)
        # (a checkpoint's split state is checked by the resume check, before this loads it)
        plan = FitPlan(X, Y, dtype, classify, stream, setup, data.xv, data.yv)
        attach(plan, loss_code, SW, CW, nclass, classes)  # the core's checks and weight row
        fit_metrics_set(plan, mcodes, history)  # before shard: refused when distributed
        if sync is not None:
            plan.shard(sync.rank, sync.world)
        if ck is not None:  # the run is set up: now the weights, then the stream (all checked)
            cb_arrays = ck.load_weights(model, opt)
            opt.accumulate_steps = info.accum
            stream.set_state(ck.rng_state)
        fit = _Fit(model, opt, history, nepoch, setup, stream, cbs, plan)
        for f in [hook(cb, "on_train_begin") for cb in cbs]:
            if f is not None:
                f(fit)
        if ck is not None:
            ck.load_callbacks(cbs, cb_arrays)
    except BaseException:
        opt.accumulate_steps, opt.accum_count = opt_before
        gen.set_state(rng_before)
        raise

    # how the outputs are read, for ag_predict(type=) and model files (checkpoints included)
    set_target(model, loss_name if loss_code >= 0 else None, classes)
    # an optimizer whose step is the core's (not overridden) steps inside the core
    core_step = sync is None and type(opt).step is Optimizer.step and "step" not in vars(opt)
    batch_cbs = batch_callbacks(cbs)
    prog = FitProgress(pmode, plan.running, plan.total(nepoch, start_epoch), nepoch, start_epoch)
    # the loop is the core's (native/fit_session.c): this answers only what calls user code
    sess = Session(plan, setup, nepoch, start_epoch, prog.ticks or bool(batch_cbs))
    in_stream = stream.active()  # dropout and user code draw from the run's stream
    in_stream.__enter__()
    try:
        ev, at = sess.next()  # at: where the run is (epoch, batch, step, stopped_epoch, ...)
        while ev != lib.PG_SESSION_DONE:
            if ev == lib.PG_SESSION_TRAIN_BATCH:
                xb, yb, wb = sess.batch()  # wb: a weighted run's weight row
                with with_grad_tape():
                    out = _forward(model, xb)
                    lv = lossfn(out, yb) if wb is None else lossfn(out, yb, wb)
                check_loss(lv)
                if core_step:  # backward, step, zero grad, record, tape clear: one core call
                    plan.train_step(lv, out, opt)
                else:  # the gradients pass through the host: MPI's all-reduce, a user's step
                    grads = backward(lv)
                    if sync is not None:
                        sync.grads(grads, xb.shape[1])
                    opt.step(grads, sum_grads=True)  # one map per micro-batch: the opt. sums them
                    opt.zero_grad()
                    del grads
                    plan.record(False, lv.item(), out)
                    ag_tape_clear()
                del lv, out
            elif ev in (lib.PG_SESSION_PROBE, lib.PG_SESSION_RECORD, lib.PG_SESSION_RECORD_VAL):
                val = ev == lib.PG_SESSION_RECORD_VAL  # the session decides
                xb, yb, wb = sess.batch()
                try:
                    if ev == lib.PG_SESSION_PROBE:
                        sess.probe(*static_steps.probe(plan, at.other, xb, yb, wb))
                    else:
                        sess.set_static(val, xb.shape[1], *static_steps.record(val, xb, yb, wb))
                except PyggmlrError as e:
                    if sess.static_fail(str(e)):  # static=True: its error
                        raise
            elif ev == lib.PG_SESSION_NOTICE:  # static=None runs eagerly: the core's text, once
                warnings.warn(sess.notice(), StaticFallbackWarning, stacklevel=2)
            elif ev == lib.PG_SESSION_BATCH_END:
                prog.tick()
                for cb in batch_cbs:
                    cb.on_batch_end(
                        at.step, {"epoch": at.epoch, "batch": at.batch + 1, "loss": at.loss}
                    )
            elif ev == lib.PG_SESSION_EPOCH_BEGIN:
                epoch = at.epoch
                if opt_params is not None:
                    _apply_hyper(opt, opt_params(epoch), epoch)
                sess.set_lr(float(getattr(opt, "lr", math.nan)))
                _set_mode(model, True)
                prog.epoch_begin(epoch)
            elif ev == lib.PG_SESSION_TRAIN_END and sync is not None:
                sync.stats(plan)
            elif ev == lib.PG_SESSION_VAL_BEGIN or ev == lib.PG_SESSION_VAL_END:
                _set_mode(model, ev == lib.PG_SESSION_VAL_END)
            elif ev == lib.PG_SESSION_VAL_BATCH:
                xb, yb, _ = sess.batch()
                with ag_no_grad():
                    out = _forward(model, xb)
                    plan.record(True, lossfn(out, yb).item(), out)
                    del out
            elif ev == lib.PG_SESSION_EPOCH_END:
                logs, diverged = sess.logs(epoch)  # NaN / Inf loss: warn, and the run ends
                history._append(logs)
                prog.epoch_end(logs)
                stop = any([cb.on_epoch_end(epoch, dict(logs)) is False for cb in cbs])  # all
                if diverged is not None:
                    warnings.warn(diverged, NonFiniteLossWarning, stacklevel=2)
                if stop or fit.stop:
                    sess.stop()
            ev, at = sess.next()
        if at.stopped_epoch:
            history.stopped_epoch = int(at.stopped_epoch)
        for f in [hook(cb, "on_train_end") for cb in cbs]:
            if f is not None:
                f(fit)
    finally:
        prog.close()
        in_stream.__exit__(None, None, None)
        opt.zero_grad()
        ag_tape_clear()
        _set_mode(model, False)
    return history
