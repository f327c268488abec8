"""Refusals in both languages (issue 29's drifts): the same wrong call written once against a
side gives the same error class in Python and in R, and the same text where the message is
the core's or spelled alike in both (R's ``0L`` / Python's ``0``, ``t(x)`` / ``x.T``,
``$reset()`` / ``reset()`` are idioms and compare by class only).

A record holds, per probe, [class code, CRC-32 of the message (0 when only the class is
compared)]; a call that does not fail records code -1, an error outside pyggmlr's classes
(a plain R ``stop()``, a bare Python TypeError) code 99."""

from __future__ import annotations

import zlib
from typing import Any, Callable, Dict

import numpy as np

from .core import CASES, Case, Record

_KINDS = ("shape", "dtype", "value", "memory", "state", "argument", "io", "modified")


def _py_kind(e: BaseException) -> str:
    from pyggmlr import errors as E

    order = (
        (E.ModifiedTensorError, "modified"),
        (E.ShapeError, "shape"),
        (E.DTypeError, "dtype"),
        (E.PyggmlrValueError, "value"),
        (E.PyggmlrMemoryError, "memory"),
        (E.StateError, "state"),
        (E.ArgumentError, "argument"),
    )
    return next((k for cls, k in order if isinstance(e, cls)), "")


def _r_kind(cls: tuple) -> str:
    first = cls[0] if cls else ""
    k = first[len("pyggmlr_") : -len("_error")] if first.startswith("pyggmlr_") else ""
    return k if k in _KINDS and first.endswith("_error") else ""


def refusal(P: Any, f: Callable[[], Any], text: bool = True) -> np.ndarray:
    """[class code, CRC-32 of the message or 0] of the error f() raises on side P."""
    from pyggmlr.r import RError

    try:
        f()
    except RError as e:
        kind, msg = _r_kind(e.r_class), e.r_message
    except Exception as e:  # a Python side's typed error (or a bare one: code 99)
        kind, msg = _py_kind(e), str(e)
    else:
        return np.array([-1.0, 0.0])
    code = _KINDS.index(kind) if kind else 99
    return np.array([float(code), float(zlib.crc32(msg.encode())) if text else 0.0])


def _add(name: str) -> Callable[[Callable[[Any, Dict[str, Any], int], Record]], Any]:
    def deco(fn):
        CASES.append(Case(name, "errors", lambda P, d, steps: [fn(P, d, steps)], ggmlr=False))
        return fn

    return deco


def _model(P: Any) -> Any:
    return P.ag_sequential(P.ag_linear(2, 3))


_X = np.ones((2, 4))  # 4 samples of 2 features
_Y3 = np.ones((3, 3))  # 3 samples: x and y disagree, and no layout hint applies


@_add("errors: ag_fit, ag_predict, ag_accuracy refusals")
def _fit_refusals(P, d, steps):
    def fit(*a, **k):
        return lambda: P.ag_fit(*a, **{"silent": True, "nepoch": 1, **k})

    m = _model(P)
    y = np.ones((3, 4))
    return {
        "x 3-D": refusal(P, fit(m, np.ones((2, 2, 4)), y, loss="mse"), text=False),
        "y samples": refusal(P, fit(m, _X, _Y3, loss="mse")),
        "model without parameters": refusal(P, fit(3, _X, y, loss="mse"), text=False),
        "callbacks 3": refusal(P, fit(m, _X, y, loss="mse", callbacks=3), text=False),
        "opt_params 3": refusal(P, fit(m, _X, y, loss="mse", opt_params=3), text=False),
        "batch_size 'a'": refusal(P, fit(m, _X, y, loss="mse", batch_size="a"), text=False),
        "nbatch_logical 3 of 2": refusal(
            P, fit(m, _X, y, loss="mse", batch_size=2, nbatch_logical=3)
        ),
        "predict x 3-D": refusal(P, lambda: P.ag_predict(m, np.ones((2, 2, 4))), text=False),
        # x's rows against the layers (pg_layer_shape_check): before training, and ag_predict's
        # and ag_accuracy's refusal in the same words
        "x rows for the first layer": refusal(P, fit(m, np.ones((3, 4)), y, loss="mse")),
        "predict x rows": refusal(P, lambda: P.ag_predict(m, np.ones((3, 4)))),
        "accuracy x rows": refusal(P, lambda: P.ag_accuracy(m, np.ones((3, 4)), np.zeros(4))),
        "accuracy y samples": refusal(P, lambda: P.ag_accuracy(m, _X, np.zeros((1, 3)))),
        "loss 'hinge'": refusal(P, fit(m, _X, y, loss="hinge")),  # the core's loss table
        # labels' classes must be the model's outputs (R's character y is a factor: the same
        # count and text); class_weight's ids must be classes of the run (the core's)
        "labels 2 classes, 3 outputs": refusal(P, fit(m, _X, np.array(["a", "b", "a", "b"]))),
        "class_weight 4 of 3 classes": refusal(
            P, fit(m, _X, np.array([0.0, 1, 2, 1]), class_weight=np.array([1.0, 1, 1, 2]))
        ),
        # ag_predict(type=): the core's texts (native/predict.c)
        "predict type 'probs'": refusal(P, lambda: P.ag_predict(m, _X, type="probs")),
        "predict class, no loss": refusal(P, lambda: P.ag_predict(m, _X, type="class")),
        "predict loss 'hinge'": refusal(P, lambda: P.ag_predict(m, _X, type="prob", loss="hinge")),
    }


@_add("errors: ag_dataloader refusals")
def _loader_refusals(P, d, steps):
    dl = P.ag_dataloader(_X, batch_size=4, shuffle=False)
    dl.next_batch()
    return {
        "x and y samples": refusal(P, lambda: P.ag_dataloader(_X, _Y3)),
        "drop_last 2": refusal(P, lambda: P.ag_dataloader(_X, drop_last=2), text=False),
        "batch_size 0.5": refusal(P, lambda: P.ag_dataloader(_X, batch_size=0.5), text=False),
        "exhausted": refusal(P, dl.next_batch, text=False),
    }


@_add("errors: ag_estimate_training_memory shapes")
def _estimate_refusals(P, d, steps):
    def est(**k):
        return lambda: P.ag_estimate_training_memory(quiet=True, **k)

    return {
        "shapes empty list": refusal(P, est(shapes=[])),
        "no shapes, no model": refusal(P, est()),
        # the core names shape and position from 0 in Python, from 1 in R
        "negative dimension": refusal(P, est(shapes=[np.array([2.0, -1.0])]), text=False),
        "not numeric": refusal(P, est(shapes=["a"]), text=False),
        "empty shape": refusal(P, est(shapes=[np.zeros(0)]), text=False),
        "dtype 'x'": refusal(P, est(shapes=[np.array([2.0, 2.0])], dtype="x"), text=False),
        "one number": np.array(
            [float(P.ag_estimate_training_memory(shapes=7, quiet=True)["params"])]
        ),
        # the optimizer's names are the core's (ggmlR's match.arg rule), one text in both
        "optimizer 'rmsprop'": refusal(P, est(shapes=7, optimizer="rmsprop")),
        "optimizer 's' (two names)": refusal(P, est(shapes=7, optimizer="s")),
        "optimizer 3": refusal(P, est(shapes=7, optimizer=3), text=False),
        "optimizer 'sgd_p'": np.array(
            [
                float(
                    P.ag_estimate_training_memory(shapes=7, optimizer="sgd_p", quiet=True)[
                        "optimizer"
                    ]
                )
            ]
        ),
        "static 'yes'": refusal(P, est(shapes=7, static="yes"), text=False),  # TRUE / True
    }


@_add("errors: ag_multihead_attention inputs")
def _mha_refusals(P, d, steps):
    a = P.ag_multihead_attention(4, 2)
    q = np.zeros((4, 5))
    return {
        "q rows": refusal(P, lambda: a.forward(np.zeros((3, 5)))),
        "k rows": refusal(P, lambda: a.forward(q, np.zeros((3, 5)))),
        "v rows": refusal(P, lambda: a.forward(q, q, np.zeros((2, 5)))),
        "k and v columns": refusal(P, lambda: a.forward(q, q, np.zeros((4, 6)))),
    }


@_add("errors: the one integer rule (issue 29)")
def _int_rule_refusals(P, d, steps):
    import os
    import tempfile

    x = P.ag_tensor(np.ones((2, 2)))
    path = os.path.join(tempfile.gettempdir(), "pg_parity_never_written.st")
    return {
        # a fraction prints alike in both languages: class and text
        "ag_set_threads 2.5": refusal(P, lambda: P.ag_set_threads(2.5)),
        "ag_set_threads 1e6": refusal(P, lambda: P.ag_set_threads(1e6), text=False),
        "ag_set_threads 'a'": refusal(P, lambda: P.ag_set_threads("a"), text=False),
        "ag_set_threads True": refusal(P, lambda: P.ag_set_threads(True), text=False),
        "ag_reshape 2.5": refusal(P, lambda: P.ag_reshape(x, 2.5, -1)),
        "ag_reshape 'a'": refusal(P, lambda: P.ag_reshape(x, "a", -1), text=False),
        "ag_linear 2.5": refusal(P, lambda: P.ag_linear(2.5, 3)),
        "ag_linear True": refusal(P, lambda: P.ag_linear(True, 3), text=False),
        "ag_embedding dim 1.5": refusal(P, lambda: P.ag_embedding(5, 1.5)),
        "ag_tape_memory top 1.5": refusal(P, lambda: P.ag_tape_memory(top=1.5, quiet=True)),
        "ag_save_model epoch 2.5": refusal(P, lambda: P.ag_save_model(_model(P), path, epoch=2.5)),
        "ag_save_model epoch True": refusal(
            P, lambda: P.ag_save_model(_model(P), path, epoch=True), text=False
        ),
        "scheduler of a non-optimizer": refusal(
            P, lambda: P.lr_scheduler_step(np.ones(2), 2), text=False
        ),
    }


@_add("errors: ag_set_threads returns the previous count")
def _threads_previous(P, d, steps):
    n0 = int(np.asarray(P.ag_get_threads()).ravel()[0])
    first = np.asarray(P.ag_set_threads(2)).ravel()  # the previous count, in both languages
    back = np.asarray(P.ag_set_threads(n0)).ravel()
    return {"set 2": first.astype(float) - n0, "set back": back.astype(float)}


def _edited_checkpoints() -> Dict[str, str]:
    """One Python run's checkpoint, then copies with one field of its training state spoiled
    (files in the temporary directory, the same paths for both sides)."""
    import json
    import os
    import tempfile

    from _files import edit_meta

    import pyggmlr as pg

    root = os.path.join(tempfile.gettempdir(), "pg_parity_resume")
    os.makedirs(root, exist_ok=True)
    base = os.path.join(root, "run.safetensors")
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    pg.ag_fit(m, _X, np.array([0, 1, 2, 0]), nepoch=1, batch_size=2, seed=1, silent=True,
              callbacks=[pg.ag_model_checkpoint(base)])  # fmt: skip

    def edit(name, fn):
        p = os.path.join(root, name + ".safetensors")
        edit_meta(base, fn, p)
        return p

    def fit_edit(f):
        def fn(meta):
            ex = json.loads(meta["extra"])
            f(ex["fit"])
            meta["extra"] = json.dumps(ex)

        return fn

    return {
        "no epoch": edit("noepoch", lambda meta: meta.pop("epoch")),
        "no training state": edit("nofit", lambda meta: meta.pop("extra")),
        "seed 2.5": edit("seed", fit_edit(lambda f: f["settings"].update(seed=2.5))),
        "history 'a'": edit("hist", fit_edit(lambda f: f["history"].update(loss=["a"]))),
        "rng_state short": edit("rng", fit_edit(lambda f: f.update(rng_state=[1, 2]))),
        "loss 'mse'": edit("loss", fit_edit(lambda f: f["settings"].update(loss="mse"))),
        "shuffle false": edit("shuf", fit_edit(lambda f: f["settings"].update(shuffle=False))),
    }


@_add("errors: ag_fit(resume_from) refusals")
def _resume_refusals(P, d, steps):
    files = _edited_checkpoints()
    y = np.array([0.0, 1.0, 2.0, 0.0])

    def fit(p):
        m = P.ag_sequential(P.ag_linear(2, 3))
        return lambda: P.ag_fit(m, _X, y, nepoch=2, batch_size=2, seed=1, silent=True,
                                resume_from=p)  # fmt: skip

    out = {k: refusal(P, fit(p)) for k, p in files.items()}
    out["batch_size 1"] = refusal(
        P,
        lambda: P.ag_fit(
            P.ag_sequential(P.ag_linear(2, 3)),
            _X,
            y,
            nepoch=2,
            batch_size=1,
            seed=1,
            silent=True,
            resume_from=files["seed 2.5"],
        ),  # fmt: skip
    )
    return out


def _nested(depth: int) -> Dict[str, Any]:
    cfg: Dict[str, Any] = {"type": "dropout", "rate": 0.1}
    for _ in range(depth):
        cfg = {"type": "sequential", "layers": [cfg]}
    return cfg


@_add("errors: ag_module_from_config refusals (issue 29)")
def _config_refusals(P, d, steps):
    """The core's layer table (native/layer_config.c) words them: one text in both languages."""
    lin = {"type": "linear", "in_features": 2, "out_features": 3}

    def build(**edit):
        return lambda: P.ag_module_from_config({**lin, **edit})

    def cfg(c):
        return lambda: P.ag_module_from_config(c)

    mha = {"type": "multihead_attention", "d_model": 6, "n_heads": 4}
    return {
        "type 'conv'": refusal(P, cfg({"type": "conv"})),
        "out_features missing": refusal(P, cfg({"type": "linear", "in_features": 2})),
        "in_features 2.5": refusal(P, build(in_features=2.5)),
        "in_features '4'": refusal(P, build(in_features="4")),
        "in_features true": refusal(P, build(in_features=True)),
        "activation 'swish'": refusal(P, build(activation="swish")),
        "init null": refusal(P, build(init=None)),
        "unknown bogus, x": refusal(P, build(bogus=1, x=[1, 2])),
        "gain [1, 2]": refusal(P, build(gain=[1, 2])),
        "rate 1": refusal(P, cfg({"type": "dropout", "rate": 1.0})),
        "rate missing": refusal(P, cfg({"type": "dropout"})),
        "eps -1": refusal(P, cfg({"type": "batch_norm", "num_features": 2, "eps": -1.0})),
        "elementwise_affine 1": refusal(
            P, cfg({"type": "layer_norm", "normalized_shape": 2, "elementwise_affine": 1})
        ),
        "d_model 6, n_heads 4": refusal(P, cfg(mha)),
        "sequential extra key": refusal(P, cfg({"type": "sequential", "layers": [], "x": 1})),
        "nested 70": refusal(P, cfg(_nested(70))),
        "inner layer's refusal": refusal(
            P, cfg({"type": "sequential", "layers": [lin, {"type": "dropout", "rate": 2}]})
        ),
        # a host value that is no config: the host's own words (dict / list), class only
        "not a config": refusal(P, cfg(3), text=False),
    }


@_add("errors: convolution refusals (issue 30)")
def _conv_refusals(P, d, steps):
    x, w = np.zeros((36, 2)), np.zeros((2, 9))
    shp = np.array([1.0, 6.0, 6.0])

    def conv(**k):
        return lambda: P.ag_conv2d_op(x, w, **k)

    return {
        "no image shape": refusal(P, conv()),
        "rows not C*H*W": refusal(P, conv(input_shape=np.array([1.0, 5.0, 6.0]))),
        "stride 0": refusal(P, conv(input_shape=shp, stride=0)),
        "dilation 1.5": refusal(P, conv(input_shape=shp, dilation=1.5)),
        "kernel larger than input": refusal(P, conv(input_shape=shp, dilation=3)),
        "groups 2 of 1 channel": refusal(P, conv(input_shape=shp, groups=2)),
        "same with stride 2": refusal(P, conv(input_shape=shp, padding="same", stride=2)),
        "layer groups": refusal(P, lambda: P.ag_conv2d(3, 4, 3, groups=2)),
        "layer kernel 0": refusal(P, lambda: P.ag_conv2d(1, 4, 0)),  # the core's text
        "layer without a tag": refusal(P, lambda: P.ag_conv2d(1, 2, 3).forward(x)),
    }


@_add("errors: transposed convolution refusals (issue 30)")
def _convt_refusals(P, d, steps):
    x, w, b = np.zeros((9, 2)), np.zeros((1, 18)), np.zeros((2, 1))
    shp = np.array([1.0, 3.0, 3.0])

    def convt(**k):
        return lambda: P.ag_conv_transpose2d_op(x, w, b, **k)

    return {
        "no image shape": refusal(P, convt()),
        "output_padding 1, stride 1": refusal(P, convt(input_shape=shp, output_padding=1)),
        "stride 0": refusal(P, convt(input_shape=shp, stride=0)),
        "padding 0.5": refusal(P, convt(input_shape=shp, padding=0.5)),
        "empty output": refusal(P, convt(input_shape=shp, padding=3)),
        "channels": refusal(
            P,
            lambda: P.ag_conv_transpose2d_op(
                np.zeros((27, 2)), w, b, input_shape=np.array([3.0, 3, 3])
            ),
        ),
        "layer output_padding": refusal(
            P, lambda: P.ag_conv_transpose2d(1, 2, 3, stride=2, output_padding=2)
        ),
        "layer groups": refusal(P, lambda: P.ag_conv_transpose2d(3, 4, 3, groups=2)),
        "layer kernel 2.5": refusal(P, lambda: P.ag_conv_transpose2d(1, 2, 2.5)),
        "layer in_channels 0": refusal(P, lambda: P.ag_conv1d(0, 2, 3)),
    }


@_add("errors: 1-d transposed convolution refusals")
def _convt1_refusals(P, d, steps):
    x, w, b = np.zeros((5, 2)), np.zeros((1, 6)), np.zeros((2, 1))
    shp = np.array([1.0, 5.0])

    def convt(**k):
        return lambda: P.ag_conv_transpose1d_op(x, w, b, **k)

    return {
        "no image shape": refusal(P, convt()),
        "output_padding 1, stride 1": refusal(P, convt(input_shape=shp, output_padding=1)),
        "kernel 4": refusal(P, convt(input_shape=shp, kernel_size=4)),
        "empty output": refusal(P, convt(input_shape=shp, padding=4)),
        "rows not C*L": refusal(P, convt(input_shape=np.array([1.0, 4.0]))),
        "layer output_padding": refusal(
            P, lambda: P.ag_conv_transpose1d(1, 2, 3, stride=2, output_padding=2)
        ),
        "layer same": refusal(P, lambda: P.ag_conv_transpose1d(1, 2, 3, padding="same")),
        "layer input_shape": refusal(P, lambda: P.ag_conv_transpose1d(1, 2, 3, input_shape=[2, 4])),
    }
