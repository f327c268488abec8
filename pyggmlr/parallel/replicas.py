"""Data parallelism in one process: ggmlR's dp_train (replicas of a model trained on slices of
each batch, their gradients averaged and their weights kept equal), with the fused-buffer
packing of pyggmlr.distributed (all arithmetic in native/dist.c)."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Sequence, Union

import numpy as np

from .. import _core, _walk
from .._args import INT_MAX, as_float, check_int, check_real, is_real, plain, r_sprintf, show
from .._core import NULL, ffi, lib
from ..errors import ArgumentError, PyggmlrValueError
from ..optim.optimizer import _grads_handle, clip_grad_norm, optimizer_adam
from ..tape import Gradients, ag_tape_clear, backward, with_grad_tape
from ..tensor import Tensor, ag_tensor
from .mpi import Params, _arr

_tensors = _walk.tensors

__all__ = ["dp_train", "ag_average_gradients", "ag_copy_parameters"]


def ag_average_gradients(
    replica_params: Sequence[Params], replica_grads: Sequence[Optional[Gradients]]
) -> None:
    """Average the gradients of several replicas into replica 0's (in C).

    replica_params: one parameter list (model, dict or list) per replica, matched by position
    (identity, never names). replica_grads: one gradient map (from backward()) or None (use
    .grad) per replica. Replica 0's gradient of each parameter becomes the mean over the
    replicas (a replica without that gradient counts as zeros); gradients keep their
    parameter's shape [rows, cols]. Returns None (works in place).

    Raises: PyggmlrValueError when there are no replicas, the numbers of lists and maps differ,
    or the replicas have different numbers of parameters; ShapeError / DTypeError from the core
    when matched parameters differ in shape or dtype; ArgumentError for a non-tensor entry."""
    lists = [_tensors(p, "ag_average_gradients") for p in replica_params]
    if not lists:
        raise PyggmlrValueError("ag_average_gradients: no replicas")
    if len(replica_grads) != len(lists):
        raise PyggmlrValueError(
            f"ag_average_gradients: {len(lists)} parameter lists but {len(replica_grads)} gradient maps"
        )
    n = len(lists[0])
    for r, lst in enumerate(lists):
        if len(lst) != n:
            raise PyggmlrValueError(
                f"ag_average_gradients: replica {r} has {len(lst)} parameters, replica 0 has {n}"
            )
    flat = [t for lst in lists for t in lst]
    arr = _arr(flat)
    gh = ffi.new(
        "pg_gradmap *[]", [_grads_handle(g, "ag_average_gradients") for g in replica_grads]
    )
    _core.check(lib.pg_dist_average_replicas(arr, n, len(lists), gh))


def ag_copy_parameters(dst: Params, src: Params) -> None:
    """Copy the values of src's parameters into dst's, in place (matched by position).

    Args: dst, src: models, dicts or lists of tensors with the same layout.
    Returns: None.
    Raises: PyggmlrValueError when the parameter counts differ, ShapeError / DTypeError when a
    matched pair differs in shape [rows, cols] or dtype."""
    d, s = _tensors(dst, "ag_copy_parameters"), _tensors(src, "ag_copy_parameters")
    if len(d) != len(s):
        raise PyggmlrValueError(
            f"ag_copy_parameters: destination has {len(d)} parameters, source has {len(s)}"
        )
    _core.check(lib.pg_dist_copy_values(_arr(d), _arr(s), len(d)))


def _verbose_every(verbose):
    verbose = plain(verbose)  # np.True_ is True, as R's TRUE
    if verbose is None or verbose is False:
        return 0
    if verbose is True:
        return 1
    # the wrong kind an ArgumentError, NaN or +/-Inf a bad value (int(inf) raised OverflowError);
    # past R's integers the largest: the core's rule and text (pg_arg_clamp, as R's .dp_every)
    kind, out = is_real(verbose), ffi.new("double *")
    f = as_float(verbose) if kind else math.nan
    shown = show(verbose).encode("utf-8", "replace")
    rule = b"TRUE/FALSE or an integer"
    _core.check(
        lib.pg_arg_clamp(b"dp_train", b"verbose", f, 0, INT_MAX, rule, shown, not kind, out)
    )
    return int(out[0])


def dp_train(
    make_model: Callable[[], Any],
    data: Sequence[Any],
    loss_fn: Optional[Callable[[Tensor, Any], Tensor]] = None,
    forward_fn: Optional[Callable[[Any, Any], Tensor]] = None,
    target_fn: Optional[Callable[[Any], Any]] = None,
    n_replicas: Optional[int] = None,
    n_iter: int = 10,
    lr: float = 1e-3,
    max_norm: float = float("inf"),
    verbose: Union[bool, int, None] = 10,
    n_gpu: Optional[int] = None,
) -> Dict[str, Any]:
    """Synchronous data-parallel training with replicas in one process (ggmlR's dp_train).

    make_model: called n_replicas times; each call must return a NEW model with ``forward`` and
    ``parameters()``. Replica 0's weights are copied into the others at the start and after
    every step. data: a sequence of samples; at iteration ``it`` (1-based) replica i (0-based)
    gets ``data[(base + i) % len(data)]`` with ``base = ((it - 1) * n_replicas) % len(data)``.
    Per replica, on a tape: ``out = forward_fn(model, s)`` or ``model.forward(s)`` (s made a
    tensor); ``loss = loss_fn(out, target_fn(s) if target_fn else s)`` or ``out`` itself when
    loss_fn is None (it must then be 1x1); ``backward(loss)``.
    The replicas' gradients are averaged into replica 0's (matched by position, not by name),
    clipped to max_norm when it is finite (clip_grad_norm), and one Adam step (lr) is applied to
    replica 0; then every replica's gradients are cleared (ggmlR 0.8.2 clears only replica 0's).
    n_replicas: None means 1 (the CPU build has no GPUs to spread over). n_gpu: ggmlR's name
    for the same count (0.8.6 spec s10.2): n_gpu=2 runs two replicas on the CPU; giving both
    with different values is an error.
    verbose: prints ``[dp_train] iter %4d / %d  loss = %.6f`` at iteration 1 and every
    ``verbose`` iterations (True: every iteration; False/0: silent).

    Returns a dict: ``params`` (replica 0's parameters()), ``loss_history`` (numpy array of
    n_iter values, each the mean of the replicas' losses ignoring NaN) and ``model`` (replica 0).

    Raises: ArgumentError when make_model / loss_fn / forward_fn / target_fn are not callable,
    data is not a sequence, a model lacks forward()/parameters() or the loss is not a tensor;
    PyggmlrValueError for empty data, bad n_replicas / n_iter / max_norm / verbose, a model
    without parameters, replicas of different sizes or sharing tensors; and whatever the
    forward pass raises (ShapeError for a wrong sample shape).
    """
    if not callable(make_model):
        raise ArgumentError(
            "dp_train: make_model must be a function returning a model, got "
            f"{type(plain(make_model)).__name__}"
        )
    if (
        isinstance(data, (str, bytes, dict))
        # an array is no list of samples (R refuses a matrix): its rows were read as samples
        # and failed later, in the forward pass
        or isinstance(data, np.ndarray)
        or not hasattr(data, "__len__")
        or not hasattr(data, "__getitem__")
    ):
        raise ArgumentError(
            f"dp_train: data must be a list of samples, got {type(data).__name__}"  # R's words
        )
    if len(data) == 0:
        raise PyggmlrValueError("dp_train: data is empty")
    if n_gpu is not None:  # ggmlR's name for the replica count
        n_gpu = check_int(n_gpu, "dp_train", "n_gpu", 1, lib.PG_DP_MAX_REPLICAS)
        if (
            n_replicas is not None
            and check_int(n_replicas, "dp_train", "n_replicas", 1, lib.PG_DP_MAX_REPLICAS) != n_gpu
        ):
            raise PyggmlrValueError(
                f"dp_train: n_gpu ({n_gpu}) and n_replicas ({n_replicas}) both give the number "
                "of replicas; pass one"
            )
        n_replicas = n_gpu
    # each replica is a whole model: 10**9 of them never end
    n_rep = (
        1
        if n_replicas is None
        else check_int(n_replicas, "dp_train", "n_replicas", 1, lib.PG_DP_MAX_REPLICAS)
    )
    n_iter = check_int(n_iter, "dp_train", "n_iter", 0)
    every = _verbose_every(verbose)
    given, max_norm = max_norm, check_real(max_norm, "dp_train", "max_norm")
    if math.isnan(max_norm) or max_norm < 0:  # the value as given (-1, not -1.0), as R's
        raise PyggmlrValueError(
            f"dp_train: max_norm must be >= 0 (Inf: no clipping), got {show(given)}"
        )
    for name, f in (("loss_fn", loss_fn), ("forward_fn", forward_fn), ("target_fn", target_fn)):
        if f is not None and not callable(f):
            raise ArgumentError(
                f"dp_train: {name} must be a function or None, got {type(f).__name__}"
            )

    replicas = [make_model() for _ in range(n_rep)]
    for r, m in enumerate(replicas):
        if forward_fn is None and not callable(getattr(m, "forward", None)):
            raise ArgumentError(
                f"dp_train: make_model() must return a model with forward() (replica {r} is a {type(m).__name__}); or give forward_fn"
            )
        if not callable(getattr(m, "parameters", None)):
            raise ArgumentError(
                f"dp_train: make_model() must return a model with parameters() (replica {r} is a {type(m).__name__})"
            )
    plists = [_tensors(m, "dp_train") for m in replicas]
    n_par = len(plists[0])
    if n_par == 0:
        raise PyggmlrValueError("dp_train: the model has no parameters")
    seen: Dict[int, int] = {}
    for r, lst in enumerate(plists):
        if len(lst) != n_par:
            raise PyggmlrValueError(
                f"dp_train: replica {r} has {len(lst)} parameters, replica 0 has {n_par}; make_model() must build the same architecture"
            )
        for t in lst:
            k = t.id
            if seen.setdefault(k, r) != r:
                raise PyggmlrValueError(
                    f"dp_train: replicas {seen[k]} and {r} share a parameter tensor; make_model() must return a new model each call"
                )
    flat = [t for lst in plists for t in lst]
    flat_arr = _arr(flat)
    rep0_arr = _arr(plists[0])
    others = [(_arr(lst), lst) for lst in plists[1:]]

    def sync():  # replica 0's weights into the others (C copy)
        for arr, _ in others:
            _core.check(lib.pg_dist_copy_values(arr, rep0_arr, n_par))

    sync()
    opt = optimizer_adam(plists[0], lr=lr)
    history = np.zeros(n_iter, dtype=np.float64)
    nd = len(data)
    gh = ffi.new("pg_gradmap *[]", n_rep)
    try:
        for it in range(1, n_iter + 1):
            base = ((it - 1) * n_rep) % nd
            grads, losses = [], []
            for i, model in enumerate(replicas):
                s = data[(base + i) % nd]
                with with_grad_tape():
                    if forward_fn is not None:
                        out = forward_fn(model, s)
                    else:
                        out = model.forward(s if isinstance(s, Tensor) else ag_tensor(s))
                    if loss_fn is not None:
                        loss = loss_fn(out, target_fn(s) if target_fn is not None else s)
                    else:
                        loss = out
                if not isinstance(loss, Tensor):
                    raise ArgumentError(
                        f"dp_train: the loss must be an ag_tensor, got {type(loss).__name__}"
                    )
                grads.append(backward(loss))
                losses.append(loss.item())
                del out, loss
            for i, g in enumerate(grads):
                gh[i] = g._m
            _core.check(lib.pg_dist_average_replicas(flat_arr, n_par, n_rep, gh))
            ok = np.ascontiguousarray([v for v in losses if not math.isnan(v)], dtype=np.float64)
            # R's mean() (long-double sum and a correction pass, in the core): np.mean's
            # pairwise sum differed in the last bit with 3+ replicas
            history[it - 1] = (
                lib.pg_mean_r(ffi.cast("const double *", ffi.from_buffer(ok)), len(ok))
                if len(ok)
                else math.nan
            )
            if math.isfinite(max_norm):
                clip_grad_norm(plists[0], grads[0], max_norm)
            opt.step(grads[0])
            for i in range(n_rep):
                gh[i] = NULL
            del grads
            _core.check(lib.pg_dist_zero_grad(flat_arr, len(flat)))  # every replica, not only 0
            ag_tape_clear()
            sync()
            if every and (it == 1 or it % every == 0):
                print(
                    f"[dp_train] iter {it:4d} / {n_iter}  loss = {r_sprintf(history[it - 1], '.6f')}"
                )
    finally:
        ag_tape_clear()
    model0 = replicas[0]
    return {"params": model0.parameters(), "loss_history": history, "model": model0}
