"""Hostile and careless arguments (issue 19, "Silent acceptance" and the argument items of
"Unclear errors"): each is refused with a typed error whose message names the function and the
argument, or is documented behaviour asserted here (docs/reliability.md, "## Arguments")."""

import numpy as np
import pytest
from _hostile import INF, NAN, X4, _model, _opt, _w

import pyggmlr as pg


def _register_42():
    pg.ag_register_layer("hostile_42", lambda cfg: 42)
    return pg.ag_module_from_config({"type": "hostile_42"})


V, A, S = pg.PyggmlrValueError, pg.ArgumentError, pg.ShapeError

# (label, call, exception type, function named, argument named)
CASES = [
    ("adam lr Inf", lambda: pg.optimizer_adam([_w()], lr=INF), V, "optimizer_adam", "lr"),
    ("adam lr NaN", lambda: pg.optimizer_adam([_w()], lr=NAN), V, "optimizer_adam", "lr"),
    ("adam lr < 0", lambda: pg.optimizer_adam([_w()], lr=-1), V, "optimizer_adam", "lr"),
    ("adam beta1 1", lambda: pg.optimizer_adam([_w()], beta1=1), V, "optimizer_adam", "beta1"),
    (
        "adam beta2 -0.1",
        lambda: pg.optimizer_adam([_w()], beta2=-0.1),
        V,
        "optimizer_adam",
        "beta2",
    ),
    ("adam eps 0", lambda: pg.optimizer_adam([_w()], eps=0), V, "optimizer_adam", "eps"),
    ("adam eps Inf", lambda: pg.optimizer_adam([_w()], eps=INF), V, "optimizer_adam", "eps"),
    (
        "adam weight_decay < 0",
        lambda: pg.optimizer_adam([_w()], weight_decay=-1),
        V,
        "optimizer_adam",
        "weight_decay",
    ),
    (
        "sgd momentum 2",
        lambda: pg.optimizer_sgd([_w()], momentum=2),
        V,
        "optimizer_sgd",
        "momentum",
    ),
    (
        "sgd momentum Inf",
        lambda: pg.optimizer_sgd([_w()], momentum=INF),
        V,
        "optimizer_sgd",
        "momentum",
    ),
    ("sgd lr True", lambda: pg.optimizer_sgd([_w()], lr=True), A, "optimizer_sgd", "lr"),
    ("opt.lr = Inf", lambda: setattr(_opt(), "lr", INF), V, "optimizer_sgd", "lr"),
    ("ag_clamp lo NaN", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), NAN, 1), V, "ag_clamp", "lo"),
    ("ag_clamp hi NaN", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), 0, NAN), V, "ag_clamp", "hi"),
    ("ag_clamp lo > hi", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), 2, 1), V, "ag_clamp", "lo"),
    ("dropout -1", lambda: pg.ag_dropout(-1), V, "ag_dropout", "rate"),
    (
        "mha dropout 1",
        lambda: pg.ag_multihead_attention(4, 2, dropout=1),
        V,
        "ag_multihead_attention",
        "dropout",
    ),
    (
        "mha dropout 'x'",
        lambda: pg.ag_multihead_attention(4, 2, dropout="x"),
        A,
        "ag_multihead_attention",
        "dropout",
    ),
    (
        "activation_frac -1",
        lambda: pg.ag_estimate_training_memory((4, 4), activation_frac=-1, quiet=True),
        V,
        "ag_estimate_training_memory",
        "activation_frac",
    ),
    (
        "estimate batch_size 2.5",
        lambda: pg.ag_estimate_training_memory((4, 4), batch_size=2.5, quiet=True),
        V,
        "ag_estimate_training_memory",
        "batch_size",
    ),
    (
        "patience 1e12",
        lambda: pg.ag_early_stopping(patience=1e12),
        V,
        "ag_early_stopping",
        "patience",
    ),
    ("patience -1", lambda: pg.ag_early_stopping(patience=-1), V, "ag_early_stopping", "patience"),
    (
        "patience 'a'",
        lambda: pg.ag_early_stopping(patience="a"),
        A,
        "ag_early_stopping",
        "patience",
    ),
    (
        "min_delta NaN",
        lambda: pg.ag_early_stopping(min_delta=NAN),
        V,
        "ag_early_stopping",
        "min_delta",
    ),
    (
        "min_delta < 0",
        lambda: pg.ag_early_stopping(min_delta=-1),
        V,
        "ag_early_stopping",
        "min_delta",
    ),
    ("monitor 3", lambda: pg.ag_early_stopping(monitor=3), A, "ag_early_stopping", "monitor"),
    (
        "checkpoint every 'a'",
        lambda: pg.ag_model_checkpoint("m.st", every="a"),
        A,
        "ag_model_checkpoint",
        "every",
    ),
    (
        "step_size 0",
        lambda: pg.lr_scheduler_step(_opt(), step_size=0),
        V,
        "lr_scheduler_step",
        "step_size",
    ),
    (
        "step gamma 0",
        lambda: pg.lr_scheduler_step(_opt(), 2, gamma=0),
        V,
        "lr_scheduler_step",
        "gamma",
    ),
    (
        "step gamma Inf",
        lambda: pg.lr_scheduler_step(_opt(), 2, gamma=INF),
        V,
        "lr_scheduler_step",
        "gamma",
    ),
    (
        "cosine T_max 0",
        lambda: pg.lr_scheduler_cosine(_opt(), T_max=0),
        V,
        "lr_scheduler_cosine",
        "T_max",
    ),
    (
        "cosine lr_min < 0",
        lambda: pg.lr_scheduler_cosine(_opt(), 4, lr_min=-1),
        V,
        "lr_scheduler_cosine",
        "lr_min",
    ),
    (
        "cosine restart 'yes'",
        lambda: pg.lr_scheduler_cosine(_opt(), 4, restart="yes"),
        pg.ArgumentError,
        "lr_scheduler_cosine",
        "restart",
    ),
    (
        "onecycle cycle_momentum None",
        lambda: pg.lr_scheduler_onecycle(_opt(), 0.1, 10, cycle_momentum=None),
        pg.ArgumentError,
        "lr_scheduler_onecycle",
        "cycle_momentum",
    ),
    (
        "cyclic base_lr < 0",
        lambda: pg.lr_scheduler_cyclic(_opt(), -1, 1),
        V,
        "lr_scheduler_cyclic",
        "base_lr",
    ),
    (
        "onecycle div_factor 0",
        lambda: pg.lr_scheduler_onecycle(_opt(), 0.1, 10, div_factor=0),
        V,
        "lr_scheduler_onecycle",
        "div_factor",
    ),
    (
        "onecycle max_momentum 1",
        lambda: pg.lr_scheduler_onecycle(_opt(), 0.1, 10, max_momentum=1),
        V,
        "lr_scheduler_onecycle",
        "max_momentum",
    ),
    (
        "warmup_cosine lr_min Inf",
        lambda: pg.lr_scheduler_warmup_cosine(_opt(), 1, 4, lr_min=INF),
        V,
        "lr_scheduler_warmup_cosine",
        "lr_min",
    ),
    (
        "scheduler on a tensor",
        lambda: pg.lr_scheduler_step(_w(), 2),
        A,  # the wrong kind, as R's (issue 29)
        "lr_scheduler_step",
        "optimizer",
    ),
    (
        "clip max_norm NaN",
        lambda: pg.clip_grad_norm([_w()], max_norm=NAN),
        V,
        "clip_grad_norm",
        "max_norm",
    ),
    (
        "gradcheck eps 0",
        lambda: pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": _w()}, eps=0, quiet=True),
        V,
        "ag_gradcheck",
        "eps",
    ),
    (
        "gradcheck eps < 0",
        lambda: pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": _w()}, eps=-1, quiet=True),
        V,
        "ag_gradcheck",
        "eps",
    ),
    ("linear gain NaN", lambda: pg.ag_linear(2, 3, gain=NAN), V, "ag_linear", "gain"),
    ("batch_norm eps Inf", lambda: pg.ag_batch_norm(3, eps=INF), V, "ag_batch_norm", "eps"),
    (
        "batch_norm momentum 2",
        lambda: pg.ag_batch_norm(3, momentum=2),
        V,
        "ag_batch_norm",
        "momentum",
    ),
    ("layer_norm eps NaN", lambda: pg.ag_layer_norm(3, eps=NAN), V, "ag_layer_norm", "eps"),
    (
        "predict batch_size 0",
        lambda: pg.ag_predict(_model(), X4, batch_size=0),
        V,
        "ag_predict",
        "batch_size",
    ),
    (
        "predict batch_size 2.7",
        lambda: pg.ag_predict(_model(), X4, batch_size=2.7),
        V,
        "ag_predict",
        "batch_size",
    ),
    (
        "fit batch_size 2.7",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", batch_size=2.7, silent=True),
        V,
        "ag_fit",
        "batch_size",
    ),
    (
        "fit nepoch 2.5",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", nepoch=2.5, silent=True),
        V,
        "ag_fit",
        "nepoch",
    ),
    (
        "fit val_split 'a'",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", val_split="a", silent=True),
        A,
        "ag_fit",
        "val_split",
    ),
    (
        "reshape 2.5",
        lambda: pg.ag_reshape(pg.ag_tensor(np.ones((2, 2))), 2.5, -1),
        V,
        "ag_reshape",
        "nrow",
    ),
    ("linear 2.5", lambda: pg.ag_linear(2.5, 3), V, "ag_linear", "in_features"),
    ("linear array size", lambda: pg.ag_linear(np.array([2, 3]), 3), A, "ag_linear", "in_features"),
    (
        "embedding ids 1.5",
        lambda: pg.ag_embedding(5, 3).forward(np.array([1.5])),
        V,
        "ag_embedding",
        "ids",
    ),
    ("embedding ids True", lambda: pg.ag_embedding(5, 3).forward(True), A, "ag_embedding", "ids"),
    ("embedding ids 0.9", lambda: pg.ag_embedding(5, 3).forward([0.9]), V, "ag_embedding", "ids"),
    (
        "CE boolean ids",
        lambda: pg.ag_softmax_cross_entropy_loss(
            pg.ag_tensor(np.ones((3, 2))), np.array([True, False])
        ),
        A,
        "ag_softmax_cross_entropy_loss",
        "class ids",
    ),
    (
        "CE negative ids",
        lambda: pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.ones((3, 2))), [-1, 0]),
        V,
        "ag_softmax_cross_entropy_loss",
        "class id",
    ),
    (
        "dataloader col_major 'no'",
        lambda: pg.ag_dataloader(X4, batch_size=2, col_major="no"),
        A,
        "ag_dataloader",
        "col_major",
    ),
    (
        "dataloader shuffle 'no'",
        lambda: pg.ag_dataloader(X4, batch_size=2, shuffle="no"),
        A,
        "ag_dataloader",
        "shuffle",
    ),
    (
        "dataloader 3-D",
        lambda: pg.ag_dataloader(np.ones((2, 4, 3)), batch_size=2),
        S,
        "ag_dataloader",
        "x",
    ),
    (
        "dataloader batch_size 2.7",
        lambda: pg.ag_dataloader(X4, batch_size=2.7),
        V,
        "ag_dataloader",
        "batch_size",
    ),
    (
        "dataloader batch_size 'a'",
        lambda: pg.ag_dataloader(X4, batch_size="a"),
        A,
        "ag_dataloader",
        "batch_size",
    ),
    (
        "dataloader ragged",
        lambda: pg.ag_dataloader([[1, 2], [3]], batch_size=1),
        A,
        "ag_dataloader",
        "x",
    ),
    (
        "fit ragged x",
        lambda: pg.ag_fit(_model(), [[1, 2], [3]], None, loss="mean", silent=True),
        A,
        "ag_fit",
        "x",
    ),
    (
        "mha 5 heads 2",
        lambda: pg.ag_multihead_attention(5, 2),
        V,
        "ag_multihead_attention",
        "n_heads",
    ),
    ("empty sequential", lambda: pg.ag_sequential(), A, "ag_sequential", "layer"),
    ("builder returns 42", _register_42, A, "ag_module_from_config", "builder"),
    (
        "accuracy id 7 of 3",
        lambda: pg.ag_accuracy(_model(), X4, [0, 1, 7, 2]),
        V,
        "ag_accuracy",
        "y",
    ),
    ("accuracy id -1", lambda: pg.ag_accuracy(_model(), X4, [0, 1, -1, 2]), V, "ag_accuracy", "y"),
    (
        "accuracy id 0.5",
        lambda: pg.ag_accuracy(_model(), X4, [0, 1, 0.5, 2]),
        V,
        "ag_accuracy",
        "y",
    ),
    (
        "accuracy boolean ids",
        lambda: pg.ag_accuracy(_model(), X4, np.array([True] * 4)),
        A,
        "ag_accuracy",
        "y",
    ),
    (
        "load_state not a state",
        lambda: pg.optimizer_adam([_w()]).load_state([1, 2]),
        V,
        "load_state",
        "state",
    ),
    # issue 29: the class R gives too (test-hostile-args.R; tests/parity/cases_errors.py)
    ("fit batch_size 'a'", lambda: _fit(batch_size="a"), A, "ag_fit", "batch_size"),
    ("fit model 3", lambda: _fit(model=3), A, "ag_fit", "model must have parameters()"),
    ("fit callbacks 3", lambda: _fit(callbacks=3), A, "ag_fit", "callbacks"),
    ("fit x 3-D", lambda: _fit(x=np.ones((2, 2, 4))), S, "ag_fit", "x must be"),
    ("fit y samples", lambda: _fit(y=np.ones((3, 3))), S, "ag_fit", "samples"),
    (
        "estimate shapes []",
        lambda: pg.ag_estimate_training_memory([], quiet=True),
        V,
        "ag_estimate_training_memory",
        "`shapes`",
    ),
    (
        "estimate dtype 'x'",
        lambda: pg.ag_estimate_training_memory([(4, 4)], dtype="x", quiet=True),
        pg.DTypeError,
        "ag_estimate_training_memory",
        "dtype",
    ),
    (
        "dataloader drop_last 1",
        lambda: pg.ag_dataloader(X4, drop_last=1),
        A,
        "ag_dataloader",
        "drop_last",
    ),
    ("dataloader exhausted", lambda: _exhausted(), pg.StateError, "ag_dataloader", "reset()"),
    (
        "estimate loss_fn 3",
        lambda: pg.ag_estimate_training_memory(model=_model(), x=X4, loss_fn=3, quiet=True),
        A,
        "ag_estimate_training_memory",
        "loss_fn must be a function",
    ),
    (
        "mha q rows",
        lambda: pg.ag_multihead_attention(4, 2)(np.zeros((3, 5))),
        S,
        "ag_multihead_attention",
        "d_model",
    ),
]


def _fit(model=None, x=X4, y=None, **k):
    y = np.ones((3, 4)) if y is None else y
    return pg.ag_fit(_model() if model is None else model, x, y, loss="mse", silent=True, **k)


def _exhausted():
    dl = pg.ag_dataloader(X4, batch_size=4)
    dl.next_batch()
    dl.next_batch()


@pytest.mark.parametrize("label,call,exc,fn,arg", CASES, ids=[c[0] for c in CASES])
def test_refused_with_function_and_argument(label, call, exc, fn, arg):
    with pytest.raises(exc) as ei:
        call()
    msg = str(ei.value)
    assert isinstance(ei.value, pg.PyggmlrError)
    assert fn in msg and arg in msg, msg
