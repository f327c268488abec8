"""Parity cases for padding and upsampling (native/ops_resize.c, issue 30): a small model
(replicate padding op, reflect padding and bilinear upsampling layers on the tag, max pool,
constant padding with a value, nearest upsampling, flatten, linear) plus 1-D padding, nearest
upsampling and 1-D linear upsampling terms, trained by Adam eagerly and as an ag_compile step, bit for bit; model
files crossed; the refusals. The R half is resize.R."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List

import numpy as np

from .cases_models import linear_shapes
from .core import CASES, Case, Record, ScriptCase, _u, call_r, r_values, train_steps, with_dtype

SHAPE = (2, 4, 4)


def _layers(pg: Any) -> List[Any]:
    return [
        pg.ag_pad2d(1, mode="reflect"),
        pg.ag_upsample2d(2, "bilinear"),
        pg.ag_max_pool2d(2),
        pg.ag_pad2d((0, 1, 1, 0), value=0.5),
        pg.ag_upsample2d((1, 2)),
        pg.ag_flatten(),
        pg.ag_linear(2 * 9 * 22, 3),
    ]


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def run():
        m = pg.ag_sequential(_layers(pg))
        ps = m.parameters()
        for k, v in d["init"].items():
            ps[k].data = v
        opt = pg.optimizer_adam(ps, lr=0.05)

        def loss_fn(x, y):
            h = pg.ag_pad2d_op(x, (1, 2), mode="replicate", input_shape=SHAPE)
            e1 = pg.ag_pad1d_op(x, (2, 1), mode="reflect", input_shape=(2, 16))
            e2 = pg.ag_upsample2d_op(x, (2, 1), input_shape=SHAPE)
            e3 = pg.ag_upsample1d_op(x, 3, "linear", input_shape=(2, 16))
            return (
                pg.ag_mse_loss(m(h), y)
                + pg.ag_mean(e1 * e1)
                + pg.ag_mean(e2 * e2)
                + pg.ag_mean(e3 * e3)
            )

        def record(loss):
            return {
                "loss": np.asarray([loss]),
                "W": ps["layer7_W"].numpy(),
                "b": ps["layer7_b"].numpy(),
            }

        x, y = pg.ag_tensor(d["x"]), pg.ag_tensor(d["y"])
        return train_steps(loss_fn, opt, x, y, steps, d["compiled"], record)

    return with_dtype(dtype, run)


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    res = call_r(
        "parity_resize_steps",
        dtype=dtype,
        init=d["init"],
        x=d["x"],
        y=d["y"],
        steps=steps,
        compiled=d["compiled"],
    )
    return [
        {"loss": r_values(r["loss"]), "W": r_values(r["W"]), "b": r_values(r["b"])} for r in res
    ]


def _inputs(compiled: bool) -> Any:
    def inputs(rng: Any) -> Dict[str, Any]:
        init = {k: _u(rng, *s) for k, s in linear_shapes(7, 2 * 9 * 22, 3).items()}
        return {"init": init, "x": _u(rng, 32, 5), "y": _u(rng, 3, 5), "compiled": compiled}

    return inputs


CASES.append(ScriptCase("resize: padded model, Adam, eager", _py, _r, 3, _inputs(False),
                        group="layers"))  # fmt: skip
CASES.append(ScriptCase("resize: padded model, Adam, ag_compile", _py, _r, 3, _inputs(True),
                        group="layers"))  # fmt: skip


# ---- model files crossed: each side reads the other's file and runs it on tagged data ----


def _file(side: str, dtype: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"pg-parity-rsz-{os.getpid()}-{side}-{dtype}.gguf")


def _files_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def save():
        m = pg.ag_sequential(_layers(pg))
        ps = m.parameters()
        for k, v in d["init"].items():
            ps[k].data = v
        pg.ag_save_model(m, _file("py", dtype))

    with_dtype(dtype, save)
    res = call_r("parity_resize_read", dtype=dtype, path=_file("py", dtype), x=d["x"])
    os.remove(_file("py", dtype))
    return [{"forward of the other side's file": r_values(res)}]


def _files_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    path = _file("r", dtype)
    call_r("parity_resize_save", dtype=dtype, init=d["init"], path=path)

    def read():
        m = pg.ag_load_model(path)
        return m(pg.ag_pad2d_op(d["x"], (1, 2), mode="replicate", input_shape=SHAPE)).numpy()

    out = with_dtype(dtype, read)
    os.remove(path)
    return [{"forward of the other side's file": np.asarray(out)}]


CASES.append(
    ScriptCase("resize: model files crossed", _files_py, _files_r, 1, _inputs(False), group="io")
)


# ---- refusals: the core's texts, the same class and text in both languages ----


def _refusals(P: Any, d: Dict[str, Any], steps: int) -> Record:
    from .cases_errors import refusal

    x = np.ones((48, 2))
    sh = np.array([3.0, 4.0, 4.0])
    return {
        "no shape, no tag": refusal(P, lambda: P.ag_pad2d_op(x, 1)),
        "reflect too large": refusal(
            P, lambda: P.ag_pad2d_op(x, np.array([1.0, 4.0]), mode="reflect", input_shape=sh)
        ),
        "three paddings": refusal(P, lambda: P.ag_pad2d(np.array([1.0, 1.0, 1.0]))),
        "value with replicate": refusal(P, lambda: P.ag_pad2d(1, value=2, mode="replicate")),
        "unknown mode": refusal(P, lambda: P.ag_upsample2d(2, mode="bicubic")),
        "scale 1.5": refusal(P, lambda: P.ag_upsample2d(1.5)),
        "rows not C*H*W": refusal(
            P, lambda: P.ag_upsample2d_op(x, 2, input_shape=np.array([3.0, 4.0, 5.0]))
        ),
    }


CASES.append(
    Case(
        "errors: padding and upsampling refusals",
        "errors",
        lambda P, d, steps: [_refusals(P, d, steps)],
        ggmlr=False,
    )
)


# ---- negative padding (crops, torch's F.pad): forward and gradient of each mode, both dims ----

_CROPS = [  # (dims, padding, mode, input_shape)
    (2, [-1.0, 2.0, 1.0, -2.0], "constant", [2.0, 4.0, 4.0]),
    (2, [2.0, -3.0, -1.0, 1.0], "reflect", [2.0, 4.0, 4.0]),
    (2, [-3.0, 1.0, 0.0, -1.0], "replicate", [2.0, 4.0, 4.0]),
    (1, [-7.0, 4.0], "reflect", [2.0, 16.0]),
    (1, [3.0, -5.0], "replicate", [2.0, 16.0]),
    (1, [-2.0, -1.0], "constant", [2.0, 16.0]),
]


def _crops(P: Any, d: Dict[str, Any], steps: int) -> List[Record]:
    from .cases_errors import refusal

    rec: Record = {}
    for i, (dims, pad, mode, shape) in enumerate(_CROPS):
        x = P.ag_param(d["x"])
        op = P.ag_pad2d_op if dims == 2 else P.ag_pad1d_op
        box: Dict[str, Any] = {}

        def fwd(x=x, op=op, pad=pad, mode=mode, shape=shape, box=box):
            y = op(x, np.array(pad), value=0.5 if mode == "constant" else 0, mode=mode,
                   input_shape=np.array(shape))  # fmt: skip
            box["y"] = y
            w = d["w"][: P.np(y).size].reshape(P.np(y).shape, order="F")
            return P.ag_sum(P.ag_mul(y, w))

        g = P.backward(P.tape(fwd))
        rec[f"{i} {mode} y"] = P.np(box["y"])
        rec[f"{i} {mode} grad x"] = P.grad(g, x)
    layer = P.ag_pad1d(np.array([-1.0, 2.0]), mode="reflect")
    rec["layer forward"] = P.np(
        layer.forward(P.ag_pad1d_op(d["x"], 0, input_shape=np.array([2.0, 16.0])))
    )
    rec["crops more than the input"] = refusal(
        P, lambda: P.ag_pad1d_op(d["x"], np.array([-17.0, 2.0]), input_shape=np.array([2.0, 16.0]))
    )
    return [rec]


def _crop_inputs(rng: Any) -> Dict[str, Any]:
    return {"x": _u(rng, 32, 3, lo=-2, hi=2), "w": _u(rng, 64 * 3)}


CASES.append(Case("resize: negative padding crops (every mode)", "layers", _crops, 1, _crop_inputs))
