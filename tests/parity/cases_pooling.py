"""Parity cases for pooling and flatten (native/ops_pool.c, issue 30): a small pooled model
(max pool op, average pool layer on the tag, flatten, two linears) plus global and 1-D pooling
terms, trained by Adam eagerly and as an ag_compile step, bit for bit. The R half is
pooling.R."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List

import numpy as np

from .cases_models import linear_shapes
from .core import CASES, Case, Record, ScriptCase, _u, call_r, r_values, train_steps, with_dtype

SHAPE = (2, 6, 6)


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def run():
        m = pg.ag_sequential(
            [
                pg.ag_avg_pool2d(3, 1, 1),
                pg.ag_flatten(),
                pg.ag_linear(18, 4, "relu"),
                pg.ag_linear(4, 3),
            ]
        )
        ps = m.parameters()
        for k, v in d["init"].items():
            ps[k].data = v
        opt = pg.optimizer_adam(ps, lr=0.05)

        def loss_fn(x, y):
            h = pg.ag_max_pool2d_op(x, 2, input_shape=SHAPE)
            extra = pg.ag_mean(pg.ag_global_max_pool_op(h)) + pg.ag_mean(
                pg.ag_avg_pool1d_op(x, 4, 2, 1, input_shape=(2, 36))
            )
            return pg.ag_mse_loss(m(h), y) + extra

        def record(loss):
            return {
                "loss": np.asarray([loss]),
                "W": ps["layer3_W"].numpy(),
                "b": ps["layer4_b"].numpy(),
            }

        x, y = pg.ag_tensor(d["x"]), pg.ag_tensor(d["y"])
        return train_steps(loss_fn, opt, x, y, steps, d["compiled"], record)

    return with_dtype(dtype, run)


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    res = call_r(
        "parity_pool_steps",
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


def _case(name: str, compiled: bool) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        init = {
            k: _u(rng, *s) for k, s in {**linear_shapes(3, 18, 4), **linear_shapes(4, 4, 3)}.items()
        }
        return {"init": init, "x": _u(rng, 72, 5), "y": _u(rng, 3, 5), "compiled": compiled}

    CASES.append(ScriptCase(f"pooling: {name}", _py, _r, 3, inputs, group="layers"))


_case("pooled model, Adam, eager", False)
_case("pooled model, Adam, ag_compile", True)


# ---- model files crossed: each side reads the other's file and runs it on tagged data ----


def _model(pg: Any, init: Dict[str, Any]) -> Any:
    m = pg.ag_sequential(
        [
            pg.ag_max_pool2d(2),
            pg.ag_avg_pool2d(3, 1, 1),
            pg.ag_flatten(),
            pg.ag_linear(18, 4, "relu"),
            pg.ag_linear(4, 3),
        ]
    )
    ps = m.parameters()
    for k, v in init.items():
        ps[k].data = v
    return m


def _file(side: str, dtype: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"pg-parity-pool-{os.getpid()}-{side}-{dtype}.gguf")


def _read_py(path: str, x: Any) -> Dict[str, Any]:
    import pyggmlr as pg
    from pyggmlr._core import ffi, lib

    m = pg.ag_load_model(path)
    xt = pg.ag_tensor(x)
    lib.pg_tensor_set_image_shape(xt._p, ffi.new("int64_t[3]", [6, 6, 2]), ffi.NULL)
    types = " ".join(c["type"] for c in pg.ag_to_config(m)["layers"])
    return {"forward of the other side's file": m(xt).numpy(), "types": types}


def _files_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    path = _file("py", dtype)
    with_dtype(dtype, lambda: pg.ag_save_model(_model(pg, d["init"]), path))
    res = call_r("parity_pool_read", dtype=dtype, path=path, x=d["x"])
    os.remove(path)
    return [
        {
            "forward of the other side's file": r_values(res["out"]),
            "types": np.asarray([len(str(res["types"]))], dtype=np.float64),
        }
    ]


def _files_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    path = _file("r", dtype)
    call_r("parity_pool_save", dtype=dtype, init=d["init"], path=path)
    rec = with_dtype(dtype, lambda: _read_py(path, d["x"]))
    os.remove(path)
    return [
        {
            "forward of the other side's file": np.asarray(rec["forward of the other side's file"]),
            "types": np.asarray([len(rec["types"])], dtype=np.float64),
        }
    ]


def _files_inputs(rng: Any) -> Dict[str, Any]:
    init = {
        k: _u(rng, *s) for k, s in {**linear_shapes(4, 18, 4), **linear_shapes(5, 4, 3)}.items()
    }
    return {"init": init, "x": _u(rng, 72, 5)}


CASES.append(
    ScriptCase("pooling: model files crossed", _files_py, _files_r, 1, _files_inputs, group="io")
)


# ---- refusals: the core's texts, the same class and text in both languages ----


def _pool_refusals(P: Any, d: Dict[str, Any], steps: int) -> Record:
    from .cases_errors import refusal

    x = np.ones((48, 2))
    return {
        "no shape, no tag": refusal(P, lambda: P.ag_max_pool2d_op(x, 2)),
        "kernel larger than input": refusal(
            P, lambda: P.ag_avg_pool2d_op(x, 5, input_shape=np.array([3.0, 4.0, 4.0]))
        ),
        "rows not C*H*W": refusal(
            P, lambda: P.ag_max_pool2d_op(x, 2, input_shape=np.array([3.0, 4.0, 5.0]))
        ),
        "kernel 2.5": refusal(P, lambda: P.ag_max_pool2d(2.5)),
        "stride 0": refusal(P, lambda: P.ag_avg_pool1d(2, stride=0)),
        "padding over half": refusal(P, lambda: P.ag_max_pool2d(3, padding=np.array([2.0, 1.0]))),
        "1-D kernel over length": refusal(
            P, lambda: P.ag_max_pool1d_op(x, 17, input_shape=np.array([3.0, 16.0]))
        ),
        "global, no tag": refusal(P, lambda: P.ag_global_avg_pool_op(x)),
    }


CASES.append(
    Case(
        "errors: pooling refusals",
        "errors",
        lambda P, d, steps: [_pool_refusals(P, d, steps)],
        ggmlr=False,
    )
)
